"""bench/engine/engine_load.py still runs end to end: a few trace requests through two engine
processes against a real standalone mooncaked, both store arms, every page read back right
and the JSON fields the results and the plot are made from present."""
import json
import os
import subprocess
import sys

import mooncake_tier

from conftest import MOONCAKED

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "engine", "engine_load.py")


def write_trace(path):
    """A small trace in Mooncake's format with shared prefixes, so gets happen without the
    shared trace file (which lives outside the repository)."""
    with open(path, "w") as f:
        for i in range(50):
            ids = [0, 1, 2] + [100 + (i % 7) * 10 + j for j in range(i % 5 + 1)] + [1000 + i]
            f.write(json.dumps({"timestamp": i, "input_length": 512 * len(ids),
                                "output_length": 8, "hash_ids": ids}) + "\n")


def test_engine_load_runs_and_reads_back_right(tmp_path):
    trace = tmp_path / "trace.jsonl"
    write_trace(trace)
    out = tmp_path / "engine.json"
    pythonpath = os.path.dirname(os.path.dirname(os.path.abspath(mooncake_tier.__file__)))
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--mooncaked", MOONCAKED, "--pythonpath", pythonpath,
         "--trace", str(trace), "--requests", "50", "--clients", "2", "--no-raw",
         "--warmup", "0.2", "--dram", "16", "--disk", "64", "--json", str(out),
         "--plot", str(tmp_path / "engine.svg")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    arms = {a["arm"]: a for a in result["arms"]}
    assert set(arms) == {"promotion", "no-promotion"}
    for a in arms.values():
        for field in ("requests_per_s", "bytes_per_s", "raw_ratio", "put_success_ratio",
                      "wrong_bytes", "memory_share", "disk_share", "miss_share"):
            assert field in a, field
        for call in ("is_exist", "get_into", "put_from"):
            assert a["p50_ms"][call] is not None and a["p99_ms"][call] is not None
        assert a["wrong_bytes"] == 0
        assert a["requests"] == 50
        assert a["blocks_found"] > 0  # the shared prefixes were read back
        # The tier counters account for every block the clients read.
        assert round((a["memory_share"] + a["disk_share"]) * a["blocks"]) == \
            a["blocks_found"] - a["gets_failed"]
    assert "--promotion_on_hit=false" in arms["no-promotion"]["daemon"]["flags"]
    assert (tmp_path / "engine.svg").read_text().startswith("<svg")
