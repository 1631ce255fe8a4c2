"""The master's HTTP endpoints that engines and operators probe, in Mooncake's formats
(daemon/metrics_http.h): SGLang's MOONCAKE_CHECK_SERVER waits for /get_all_segments to be
non-empty. Against real mooncaked masters and embedded nodes."""
import json
import urllib.error
import urllib.request

from conftest import Master, Standalone, make_store, wait_for, wait_listening


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_master_http_probes(tmp_path):
    m = Master(tmp_path)
    try:
        wait_listening(m.metrics_port, m.proc)  # served once the RPC port is
        status, body = http_get(m.metrics_port, "/health")  # Mooncake's newest master's JSON
        assert status == 200 and json.loads(body) == {
            "status": "ok", "role": "master", "ha_state": "serving", "service_ready": True}
        # SGLang's check_server waits while the body is empty.
        assert http_get(m.metrics_port, "/get_all_segments") == (200, "")
        assert http_get(m.metrics_port, "/ha_status") == (200, "serving\n")
        assert json.loads(http_get(m.metrics_port, "/get_segments_detail")[1]) == {
            "total_segments": 0, "segments": []}
        client = make_store(m.address, segment=0)  # a pure client mounts no segment
        assert http_get(m.metrics_port, "/get_all_segments") == (200, "")
        s = make_store(m.address, segment="16MB")
        try:
            status, body = http_get(m.metrics_port, "/get_all_segments")
            assert status == 200 and body.splitlines() == [s.get_hostname()]
            assert s.put("http-key", b"v" * 4096) == 0
            status, body = http_get(m.metrics_port, f"/query_segment?segment={s.get_hostname()}")
            lines = body.splitlines()
            assert status == 200 and lines[0] == s.get_hostname()
            assert lines[2] == f"Capacity(bytes) : {16 << 20}"
            assert lines[1].startswith("Used(bytes): ") and int(lines[1].split(": ")[1]) >= 4096
            assert http_get(m.metrics_port, "/query_segment?segment=nope:1")[0] == 500
            status, body = http_get(m.metrics_port, "/get_all_keys")
            assert status == 200 and "http-key" in body.splitlines()
            status, body = http_get(m.metrics_port, "/query_key?key=http-key")
            assert status == 200 and '"tier":"MEMORY"' in body
            assert http_get(m.metrics_port, "/query_key?key=nope")[0] == 404
            status, body = http_get(m.metrics_port, "/get_segments_detail")
            detail = json.loads(body)
            assert status == 200 and detail["total_segments"] == 1, body
            seg = detail["segments"][0]
            assert seg["segment_name"] == s.get_hostname()
            assert seg["size_bytes"] == seg["allocator_capacity_bytes"] == 16 << 20
            assert seg["allocator_used_bytes"] >= 4096 and seg["protocol"] == "tcp"
            assert 0 < seg["allocator_usage_percent"] < 100 and seg["memory_objects"] == 1
            # A malformed key is a bad request, answered with the reason; the master serves on.
            for bad in ("/query_key", "/query_key?key=", "/query_key?key=a%00b"):
                status, body = http_get(m.metrics_port, bad)
                assert status == 400 and "InvalidArgument" in body, (bad, status, body)
            assert http_get(m.metrics_port, "/get_all_segments")[0] == 200
        finally:
            s.close()
            client.close()
        # The node left: no segment any more.
        assert http_get(m.metrics_port, "/get_all_segments") == (200, "")
        assert http_get(m.metrics_port, "/no_such_endpoint")[0] == 404
    finally:
        m.stop()


def test_keys_are_not_listed_over_http_when_the_cluster_has_a_token(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    m = Master(tmp_path, "--auth_token_file", str(token))
    try:
        wait_listening(m.metrics_port, m.proc)
        assert http_get(m.metrics_port, "/get_all_keys")[0] == 403
        assert http_get(m.metrics_port, "/batch_query_keys?keys=a")[0] == 403
        assert http_get(m.metrics_port, "/get_all_segments") == (200, "")
    finally:
        m.stop()


def test_batch_query_keys_names_each_keys_replicas_or_why_not(tmp_path):
    """Mooncake's /batch_query_keys shape: per key ok and its MEMORY replicas, or the error."""
    m = Master(tmp_path)
    s = None
    try:
        wait_listening(m.metrics_port, m.proc)
        s = make_store(m.address, segment="16MB")
        assert s.put("bq-a", b"a" * 4096) == 0 and s.put("bq,b", b"b" * 100) == 0
        status, body = http_get(m.metrics_port, "/batch_query_keys?keys=bq-a,nope,bq-a")
        assert status == 200, body
        answer = json.loads(body)
        assert answer["success"] is True
        assert answer["data"]["nope"] == {"ok": False, "error": "OBJECT_NOT_FOUND"}
        a = answer["data"]["bq-a"]
        assert a["ok"] is True and a["local_disk_values"] == []
        assert a["values"] == [{"tier": "MEMORY", "node": s.get_hostname(), "size": 4096}]
        # A key with a comma cannot be named here (as in Mooncake): its halves are asked.
        answer = json.loads(http_get(m.metrics_port, "/batch_query_keys?keys=bq%2Cb")[1])
        assert set(answer["data"]) == {"bq", "b"}
        # No keys is the asker's error, said in JSON; a request line past 8 KiB is refused.
        status, body = http_get(m.metrics_port, "/batch_query_keys")
        assert status == 400 and json.loads(body)["success"] is False
        assert http_get(m.metrics_port, "/batch_query_keys?keys=" + ",".join(["k"] * 5000))[0] == 414
        status, body = http_get(m.metrics_port, "/batch_query_keys?keys=a%00b")
        assert json.loads(body)["data"]["a\u0000b"]["error"] == "INVALID_KEY"
    finally:
        if s is not None:
            s.close()
        m.stop()


def test_batch_query_keys_names_local_disk_replicas(tmp_path):
    """A key DRAM pressure moved to LOCAL_DISK is listed under local_disk_values, not values."""
    d = Standalone(tmp_path, dram="4MiB", disk="64MiB", metrics=True)
    s = None
    try:
        s = make_store(d.address, segment=0)
        keys = [f"bq-disk-{i}" for i in range(12)]
        for k in keys:
            assert s.put(k, bytes([len(k)]) * (1 << 20)) == 0

        def on_disk():
            data = json.loads(http_get(d.metrics_port, "/batch_query_keys?keys=" + ",".join(keys))[1])["data"]
            return [k for k in keys if data[k]["ok"] and data[k]["local_disk_values"]
                    and not data[k]["values"]]
        moved = wait_for(on_disk, 10)
        assert moved, "no key reached LOCAL_DISK"
        entry = json.loads(http_get(d.metrics_port, "/batch_query_keys?keys=" + moved[0])[1])
        entry = entry["data"][moved[0]]
        assert entry["local_disk_values"][0]["tier"] == "LOCAL_DISK"
        assert entry["local_disk_values"][0]["size"] == 1 << 20
    finally:
        if s is not None:
            s.close()
        d.stop()
