"""The master's HTTP endpoints that engines and operators probe, in Mooncake's formats
(daemon/metrics_http.h): SGLang's MOONCAKE_CHECK_SERVER waits for /get_all_segments to be
non-empty. Against real mooncaked masters and embedded nodes."""
import urllib.error
import urllib.request

from conftest import Master, make_store, wait_listening


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
        assert http_get(m.metrics_port, "/health") == (200, "OK")
        # SGLang's check_server waits while the body is empty.
        assert http_get(m.metrics_port, "/get_all_segments") == (200, "")
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
        assert http_get(m.metrics_port, "/get_all_segments") == (200, "")
    finally:
        m.stop()
