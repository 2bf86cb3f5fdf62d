"""The RESP front's failure paths and limits, driven for real (docs/api.md, "Failures of the
store", its RESP column; docs/resp.md, "Limits and failures"): a failing and a hung store
answer -TRYAGAIN with HTTP's reason, in order with the replies after them; the cache's 507 is
-OOM; --max-value closes a connection whose bulk string is longer, as Redis does past
proto-max-bulk-len; --max-connections counts both fronts; the idle timeout closes an idle RESP
connection. Every server here is ours (cache_server --resp-port 0), started by the test."""
import json
import socket
import time

import pytest

from resp_target import Wire


def resp(start_server, *flags):
    srv = start_server("--resp-port", "0", *flags)
    assert srv.resp_port, "no 'resp on HOST:PORT' in the start-up line"
    return srv


def test_a_failing_commit_is_tryagain_with_the_stores_reason(start_server, tmp_path):
    srv = resp(start_server, "--store", f"rocksdb:{tmp_path}/db", "--store-faults",
               "sync-error-after=1")
    with Wire(srv.resp_port) as w:
        assert w.call("SET", "first", "v") == ("+", b"OK")
        kind, text = w.call("SET", "second", "v")
        assert kind == "-" and text.startswith(b"TRYAGAIN ") and b"store" in text, text
        kind, text = w.call("ZADD", "board", "1", "m")
        assert kind == "-" and text.startswith(b"TRYAGAIN "), text
        assert w.call("GET", "first") == ("$", b"v")  # what was acknowledged is served
        assert w.call("PING") == ("+", b"PONG")


def test_a_hung_store_answers_at_the_timeout_and_later_replies_follow(start_server, tmp_path):
    srv = resp(start_server, "--store", f"rocksdb:{tmp_path}/db", "--store-timeout", "300ms",
               "--store-faults", "sync-hang-after=1")
    with Wire(srv.resp_port) as w:
        assert w.call("SET", "a", "1") == ("+", b"OK")
        started = time.monotonic()
        w.send_many([("SET", "b", "2"), ("PING",), ("GET", "a")])
        kind, text = w.read()
        assert kind == "-" and text.startswith(b"TRYAGAIN store timeout"), text
        assert b"may still take effect" in text, text
        assert w.read() == ("+", b"PONG")
        assert w.read() == ("$", b"1")
        assert time.monotonic() - started < 5, "the timeout did not bound the wait"
    # A sync that never returns keeps the store from closing: exit 1, saying so (docs/api.md).
    code, _, err = srv.stop()
    assert code == 1 and "a sync never returned" in err, (code, err)


def test_a_slow_store_read_is_tryagain_and_a_hit_is_not_held(start_server, tmp_path):
    srv = resp(start_server, "--store", f"rocksdb:{tmp_path}/db", "--store-timeout", "300ms",
               "--store-faults", "read-delay=4s")
    with Wire(srv.resp_port) as w:
        assert w.call("SET", "slow", "s") == ("+", b"OK")
        assert w.call("SET", "hot", "h") == ("+", b"OK")
    # Empty the cache only (the store keeps both), then warm "hot" again.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"POST /reset?scope=cache HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                  b"Connection: close\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 204"), "the cache reset failed"
    with Wire(srv.resp_port) as w:
        assert w.call("SET", "hot", "h") == ("+", b"OK")
        started = time.monotonic()
        kind, text = w.call("GET", "slow")
        assert kind == "-" and text.startswith(b"TRYAGAIN store timeout"), text
        assert time.monotonic() - started < 2.5
        assert w.call("GET", "hot") == ("$", b"h")


def test_a_full_cache_without_eviction_is_oom(start_server):
    srv = resp(start_server, "--evictor", "none", "--maxmem", "64K", "--max-value", "16K")
    with Wire(srv.resp_port) as w:
        replies = [w.call("SET", f"k{i}", "x" * 8000) for i in range(20)]
        assert ("+", b"OK") in replies
        refused = [r for r in replies if r != ("+", b"OK")]
        assert refused and refused[0] == ("-", b"OOM cache full and evictor is none"), replies


def test_a_bulk_over_max_value_is_an_error_then_close(start_server):
    srv = resp(start_server, "--max-value", "1K")
    with Wire(srv.resp_port) as w:
        assert w.call("SET", "ok", "x" * 1024) == ("+", b"OK")
        w.send("SET", "big", "x" * 1025)
        assert w.read() == ("-", b"ERR Protocol error: invalid bulk length")
        with pytest.raises(ConnectionError):
            w.read()
    with Wire(srv.resp_port) as w:
        assert w.call("GET", "big") == ("$", None)


def test_max_connections_counts_both_fronts(start_server):
    srv = resp(start_server, "--max-connections", "2")
    http = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        with Wire(srv.resp_port) as first:
            assert first.call("PING") == ("+", b"PONG")
            with Wire(srv.resp_port) as refused:  # the third connection, across the fronts
                assert refused.read() == ("-", b"ERR max number of clients reached")
            assert first.call("PING") == ("+", b"PONG")
    finally:
        http.close()


def test_an_idle_resp_connection_is_closed_at_the_idle_timeout(start_server):
    srv = resp(start_server, "--idle-timeout", "1s")
    with Wire(srv.resp_port) as w:
        assert w.call("PING") == ("+", b"PONG")
        started = time.monotonic()
        with pytest.raises(ConnectionError):
            w.read()
        assert 0.5 < time.monotonic() - started < 5


def test_stats_count_commands_and_connections_per_front(start_server):
    srv = resp(start_server)
    with Wire(srv.resp_port) as w:
        for _ in range(3):
            assert w.call("SET", "k", "v") == ("+", b"OK")
        assert w.call("GET", "k") == ("$", b"v")
        assert w.call("NOSUCH")[0] == "-"
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
            s.sendall(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            raw = b""
            while chunk := s.recv(65536):
                raw += chunk
        stats = json.loads(raw.split(b"\r\n\r\n", 1)[1])
        assert stats["resp_commands"]["set"] == 3 and stats["resp_commands"]["get"] == 1
        assert stats["resp_unknown_commands"] == 1
        assert stats["resp_connections"] == 1 and stats["http_connections"] == 1
        assert stats["resp_total_connections"] == 1


def test_a_bad_or_busy_resp_port_is_a_clear_start_up_error(server_bin):
    import subprocess
    r = subprocess.run([server_bin, "-p", "0", "--resp-port", "x"], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 1 and "invalid --resp-port 'x' (want 0..65535)" in r.stderr, r.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run([server_bin, "-p", "0", "--resp-port", str(port)],
                           capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and r.stderr.startswith("cache_server: --resp-port: "), r.stderr
    assert str(port) in r.stderr, r.stderr


def test_a_command_of_many_empty_arguments_is_charged_to_max_inflight(start_server):
    """Each argument costs the parser about 24 bytes beside its own: a command of 200,000
    empty arguments holds ~4.8 MB, which a 256 KiB --max-inflight refuses (-OOM, then close)."""
    srv = resp(start_server, "--max-value", "64K", "--max-inflight", "256K")
    with Wire(srv.resp_port) as w:
        assert w.call("PING") == ("+", b"PONG")
        w.sock.sendall(b"*200000\r\n" + b"$0\r\n\r\n" * 200000)
        kind, text = w.read()
        assert (kind, text) == ("-", b"OOM command not allowed when used memory > "
                                     b"'--max-inflight'"), (kind, text)
        with pytest.raises(ConnectionError):
            w.read()
    with Wire(srv.resp_port) as w:  # the budget was given back
        assert w.call("PING") == ("+", b"PONG")
