"""The engine-style example (python/examples/kv_cache_engine.py) runs against a real master."""
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "python" / "examples" / "kv_cache_engine.py"


def test_example_runs(master):
    out = subprocess.run([sys.executable, str(EXAMPLE), master.address], capture_output=True,
                         text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "reused 4 of 8 blocks" in out.stdout
