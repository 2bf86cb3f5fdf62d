"""The baseline variants (docs/server.md, "Variants"): the server started with --variant baseline
answers the API exactly as the optimized one does, and /stats names the active variant."""
import pytest

from rawhttp import Reader, exchange, request_bytes


@pytest.fixture(scope="module")
def baseline_server(server_bin):
    from conftest import ServerProcess

    srv = ServerProcess(server_bin, ["-t", "2", "--variant", "baseline"])
    yield srv
    code, _, err = srv.stop()
    assert code == 0, f"server exited {code}: {err[-4000:]}"


@pytest.fixture
def server(baseline_server):
    r = exchange(baseline_server, "POST", "/reset")
    assert r.status == 204
    return baseline_server


def put(server, key, value, **kw):
    return exchange(server, "PUT", "/key/" + key, body=value, **kw)


def test_baseline_get_hit_and_miss(server):
    assert put(server, "k1", b"hello" * 40).status == 201
    r = exchange(server, "GET", "/key/k1")
    assert r.status == 200 and r.body == b"hello" * 40
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-length"] == "200"
    miss = exchange(server, "GET", "/key/absent")
    assert miss.status == 404 and set(miss.json()) == {"error"}


def test_baseline_put_created_then_replaced(server):
    assert put(server, "p", b"1").status == 201
    assert put(server, "p", b"22").status == 204
    assert exchange(server, "GET", "/key/p").body == b"22"
    assert exchange(server, "PUT", "/key/q/v%20x").status == 201
    assert exchange(server, "GET", "/key/q").body == b"v x"


def test_baseline_delete(server):
    put(server, "d", b"x")
    assert exchange(server, "DELETE", "/key/d").status == 204
    assert exchange(server, "DELETE", "/key/d").status == 404
    assert exchange(server, "GET", "/key/d").status == 404


def test_baseline_head_carries_space_used(server):
    put(server, "hk", b"12345")
    r = exchange(server, "HEAD", "/key/hk")
    assert r.status == 200 and r.headers["content-length"] == "5"
    assert r.headers["space-used"] == "7" and r.body == b""
    miss = exchange(server, "HEAD", "/key/none")
    assert miss.status == 404 and miss.headers["space-used"] == "7"
    assert exchange(server, "HEAD", "/").headers["space-used"] == "7"


def test_baseline_json_accept(server):
    put(server, "jk", b'say "hi"\n')
    r = exchange(server, "GET", "/key/jk", headers={"Accept": "application/json"})
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"key": "jk", "value": 'say "hi"\n'}


def test_baseline_errors_route_the_same(server):
    assert exchange(server, "GET", "/nowhere").status == 404
    r = exchange(server, "POST", "/key/a")
    assert r.status == 405 and r.headers["allow"] == "GET, PUT, DELETE, HEAD"
    assert exchange(server, "BREW", "/key/a").status == 501
    assert exchange(server, "GET", "/key/").status == 400


def test_baseline_stats_names_the_variant(server):
    put(server, "s", b"abc")
    exchange(server, "GET", "/key/s")
    doc = exchange(server, "GET", "/stats").json()
    assert doc["variant"] == "baseline"
    assert (doc["lock"], doc["value_path"], doc["dispatch"]) == ("exclusive", "string", "naive")
    assert doc["write_batching"] == "off"
    assert doc["hits"] >= 1 and doc["sets"] >= 1


def test_baseline_startup_line_names_the_variant(baseline_server):
    config = baseline_server.stdout_lines[0].decode()
    for part in ("variant=baseline", "lock=exclusive", "value_path=string", "dispatch=naive",
                 "write_batching=off"):
        assert part in config


def test_default_is_optimized(start_server):
    srv = start_server()
    doc = exchange(srv, "GET", "/stats").json()
    assert doc["variant"] == "optimized"
    assert (doc["lock"], doc["value_path"], doc["dispatch"]) == ("shared", "cstring", "ordered")
    assert doc["write_batching"] == "on"


@pytest.mark.parametrize("args", [["--lock", "shared", "--variant", "baseline"],
                                  ["--variant", "baseline", "--lock", "shared"]])
def test_individual_switch_wins_over_variant(start_server, args):
    srv = start_server(*args)
    assert put(srv, "c", b"x" * 100).status == 201
    assert exchange(srv, "GET", "/key/c").body == b"x" * 100
    doc = exchange(srv, "GET", "/stats").json()
    assert doc["variant"] == "custom"
    assert (doc["lock"], doc["value_path"], doc["dispatch"]) == ("shared", "string", "naive")
    assert "variant=custom" in srv.stdout_lines[0].decode()


PIPELINED = 16


def pipelined_gets(srv):
    """Sends PIPELINED GETs in one send() on one connection and reads every response; returns
    the responses and how many reads and writes the server counted for that connection (the
    /stats read between the two snapshots adds one read and one write, subtracted here)."""
    for i in range(PIPELINED):
        assert put(srv, f"p{i}", f"value-{i}".encode() * 10).status in (201, 204)
    before = exchange(srv, "GET", "/stats").json()
    with srv.connect() as s:
        s.sendall(b"".join(request_bytes("GET", f"/key/p{i}") for i in range(PIPELINED)))
        reader = Reader(s)
        responses = [reader.read() for _ in range(PIPELINED)]
    after = exchange(srv, "GET", "/stats").json()
    return responses, after["reads"] - before["reads"] - 1, after["writes"] - before["writes"] - 1


@pytest.mark.parametrize("flags, batched", [([], True),
                                            (["--variant", "baseline"], False),
                                            (["--write-batching", "off"], False),
                                            (["--variant", "baseline", "--write-batching", "on"],
                                             True)])
def test_write_batching_answers_pipelined_requests_in_order(start_server, flags, batched):
    srv = start_server("-t", "1", *flags)
    responses, reads, writes = pipelined_gets(srv)
    assert [r.status for r in responses] == [200] * PIPELINED
    assert [r.body for r in responses] == [f"value-{i}".encode() * 10 for i in range(PIPELINED)]
    assert reads >= 1
    if batched:
        # Every response to the requests one read brought in goes out in one write.
        assert writes <= reads < PIPELINED, (reads, writes)
    else:
        assert writes == PIPELINED, (reads, writes)
