"""--served-by: the X-Served-By header that shows which cluster node answered (docs/cluster.md).

Off by default (no header at all); `on` announces the bound HOST:PORT; any other value is the
HOST:PORT to announce. Every kind of response carries it exactly once: answered at once, deferred
on the store (a write-through PUT), pipelined, an error, and the 503 of a refused connection.
"""
import subprocess

import pytest

from rawhttp import Reader, exchange, request_bytes


def served_by(resp):
    """Every X-Served-By value of the response, in order (the header must appear once)."""
    lines = resp.raw_head.decode().split("\r\n")[1:]
    pairs = (line.split(": ", 1) for line in lines if line)
    return [value for name, value in pairs if name.lower() == "x-served-by"]


def test_off_by_default_sends_no_header(server):
    for method, path, body in [("PUT", "/key/a", b"v"), ("GET", "/key/a", b""),
                               ("GET", "/key/absent", b""), ("GET", "/stats", b""),
                               ("HEAD", "/key/a", b"")]:
        r = exchange(server, method, path, body=body)
        assert served_by(r) == [], r


def test_on_announces_the_bound_address_on_every_response(start_server):
    srv = start_server("--served-by", "on")
    me = f"127.0.0.1:{srv.port}"
    cases = [("PUT", "/key/a", b"v", 201), ("GET", "/key/a", b"", 200),
             ("GET", "/key/absent", b"", 404), ("HEAD", "/key/a", b"", 200),
             ("DELETE", "/key/a", b"", 204), ("GET", "/stats", b"", 200),
             ("PUT", "/board/b/member/m?op=set", b"5", 201), ("GET", "/board/b/top", b"", 200),
             ("PATCH", "/key/a", b"", 405), ("GET", "/key/%zz", b"", 400)]
    for method, path, body, status in cases:
        r = exchange(srv, method, path, body=body)
        assert r.status == status, (method, path, r)
        assert served_by(r) == [me], (method, path, r)


def test_pipelined_responses_each_carry_it(start_server):
    srv = start_server("--served-by", "on", "-t", "2")
    me = f"127.0.0.1:{srv.port}"
    with srv.connect() as s:
        s.sendall(b"".join(request_bytes("GET", f"/key/k{i}") for i in range(20)))
        reader = Reader(s)
        for _ in range(20):
            r = reader.read()
            assert r.status == 404 and served_by(r) == [me]


def test_explicit_address_is_announced_verbatim(start_server):
    srv = start_server("--served-by", "10.77.0.3:8080")
    r = exchange(srv, "GET", "/key/x")
    assert served_by(r) == ["10.77.0.3:8080"]
    assert any(b"served_by=10.77.0.3:8080" in line for line in srv.stdout_lines)


def test_deferred_store_responses_carry_it(start_server, tmp_path):
    srv = start_server("--store", f"rocksdb:{tmp_path / 'db'}", "--served-by", "on",
                       "--allow-reset")
    me = f"127.0.0.1:{srv.port}"
    r = exchange(srv, "PUT", "/key/durable", body=b"x" * 100)  # answered after the commit
    assert r.status == 201 and served_by(r) == [me]
    assert exchange(srv, "POST", "/reset").status == 204
    r = exchange(srv, "PUT", "/key/k2", body=b"y")
    assert r.status == 201 and served_by(r) == [me]


def test_refused_connection_503_carries_it(start_server):
    srv = start_server("--served-by", "on", "--max-connections", "1")
    me = f"127.0.0.1:{srv.port}"
    with srv.connect() as first:
        first.sendall(request_bytes("GET", "/key/x"))
        assert Reader(first).read().status == 404  # the first connection is admitted
        with srv.connect() as second:
            r = Reader(second).read()
            assert r.status == 503 and served_by(r) == [me]


@pytest.mark.parametrize("value", ["yes", "", "a b:1", "nocolon", "x" * 300 + ":1"])
def test_bad_values_are_refused(server_bin, value):
    p = subprocess.run([server_bin, "-p", "0", "--served-by", value], capture_output=True,
                       timeout=10)
    assert p.returncode != 0
    assert b"--served-by" in p.stderr, p.stderr
