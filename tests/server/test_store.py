"""The durable tier against the real binary and a real store (docs/api.md, "With a store").

Every point of the store semantics: read-through and single-flight, write-through and
write-behind, DELETE's 404, reset (all and cache only), store failures, restarts, /stats, and
the request path that waits (ordering on one connection, other connections unaffected).

Each test that takes `with_store` runs on both backends, `[rocksdb]` (a RocksDB directory) and
`[postgres]` (a table of a throwaway PostgreSQL, see conftest.py), except the ones marked
`rocksdb_only`: RocksDB's fault injection (write/sync errors, a full disk) and its directory.
PostgreSQL-only behaviour (losing the database, reconnection, its flags) is in
test_store_postgres.py.
"""
import json
import signal
import socket
import statistics
import threading
import time

import pytest

from rawhttp import Reader, exchange, get, put, request_bytes, reset, stats


@pytest.fixture
def store_dir(tmp_path):
    return tmp_path / "db"


@pytest.fixture
def with_store(start_server, store_flags):
    """with_store(*flags) starts a server on the test's store (its RocksDB directory or its
    PostgreSQL table; the same one for every server the test starts)."""

    def start(*flags):
        return start_server(*store_flags, *flags)

    return start


def restart(srv, with_store, *flags):
    code, _, err = srv.stop()
    assert code == 0, err
    return with_store(*flags)


# --- write-through --------------------------------------------------------------------------

def test_startup_line_and_stats_name_the_store(with_store, store_backend, store_dir, request):
    srv = with_store()
    line = b" ".join(srv.stdout_lines).decode()
    assert f"store={store_backend}" in line and "write_mode=through" in line, line
    s = stats(srv)
    assert s["store"] == store_backend and s["write_mode"] == "through"
    for field in ("store_reads", "store_writes", "store_commits", "store_errors", "dirty_bytes",
                  "dirty_items", "readthrough_fills", "store_reconnects"):
        assert s[field] == 0, field
    assert s["store_failed"] is False and s["store_error"] == ""
    assert s["store_connected"] is True
    if store_backend == "rocksdb":
        assert store_dir.is_dir()  # created if missing
    else:  # the table is created if missing
        table = request.getfixturevalue("store_table")
        rows = request.getfixturevalue("psql")(f"SELECT to_regclass('\"{table}\"') IS NOT NULL")
        assert rows == [["t"]], rows


def test_stats_without_store(start_server):
    s = stats(start_server())
    assert s["store"] == "none" and s["write_mode"] == "through" and s["store_writes"] == 0
    assert s["store_connected"] is True and s["store_reconnects"] == 0


def test_write_through_survives_restart_with_cold_cache(with_store):
    srv = with_store()
    assert put(srv, "a", b"one").status == 201
    assert put(srv, "a", b"two").status == 204
    assert put(srv, "b", b"bee").status == 201
    assert exchange(srv, "DELETE", "/key/b").status == 204
    s = stats(srv)
    assert s["store_writes"] == 4 and 1 <= s["store_commits"] <= 4
    srv = restart(srv, with_store)
    assert stats(srv)["items"] == 0
    r = get(srv, "a")
    assert r.status == 200 and r.body == b"two"
    assert get(srv, "b").status == 404
    s = stats(srv)
    assert s["readthrough_fills"] == 1 and s["items"] == 1 and s["store_reads"] == 2
    assert get(srv, "a").body == b"two"  # now a hit
    assert stats(srv)["store_reads"] == 2


def test_put_status_and_delete_404_consult_the_store(with_store):
    srv = with_store()
    assert put(srv, "k", b"v").status == 201
    assert reset(srv, "cache").status == 204
    assert put(srv, "k", b"v2").status == 204  # replaced: it existed in the store
    assert reset(srv, "cache").status == 204
    assert exchange(srv, "DELETE", "/key/k").status == 204  # absent from the cache only
    r = exchange(srv, "DELETE", "/key/k")
    assert r.status == 404 and r.json() == {"error": "key not found"}
    assert get(srv, "k").status == 404


def test_head_and_json_get_read_through(with_store):
    srv = with_store()
    put(srv, "h%41", b'say "hi"')
    reset(srv, "cache")
    r = exchange(srv, "HEAD", "/key/hA")
    assert r.status == 200 and r.headers["content-length"] == "8" and r.body == b""
    reset(srv, "cache")
    r = get(srv, "hA", headers={"Accept": "application/json"})
    assert r.status == 200 and r.json() == {"key": "hA", "value": 'say "hi"'}
    assert exchange(srv, "HEAD", "/key/nope").status == 404


def test_reset_empties_cache_and_store_durably(with_store):
    srv = with_store("--allow-reset")
    assert " reset=open " in srv.config_line
    for i in range(20):
        put(srv, f"k{i}", b"x" * 10)
    assert reset(srv).status == 204
    assert stats(srv)["items"] == 0
    assert get(srv, "k3").status == 404
    srv = restart(srv, with_store)
    assert get(srv, "k7").status == 404
    assert put(srv, "k7", b"y").status == 201


RESET_REFUSED = "reset is disabled with a store: start with --admin-token-file or --allow-reset"


def test_full_reset_is_refused_with_a_store_and_no_token(with_store):
    """The admin route (docs/server.md, "Security model"): with a store, neither a token nor
    --allow-reset, POST /reset answers 403 and changes nothing; ?scope=cache stays open."""
    srv = with_store()
    assert " reset=refused " in srv.config_line
    assert put(srv, "k", b"durable").status == 201
    for scope in (None, "all"):
        r = reset(srv, scope)
        assert r.status == 403 and r.json() == {"error": RESET_REFUSED}, r
    assert stats(srv)["items"] == 1 and get(srv, "k").body == b"durable"
    # The cache only: emptied, the store keeps the key, and a GET reads it from the store again.
    reads = stats(srv)["store_reads"]
    assert reset(srv, "cache").status == 204
    assert stats(srv)["items"] == 0
    assert get(srv, "k").body == b"durable"
    s = stats(srv)
    assert s["store_reads"] == reads + 1 and s["readthrough_fills"] == 1 and s["items"] == 1


def test_a_token_guards_the_full_reset_with_a_store(with_store, tmp_path):
    token = "store-admin-token-0123456789"
    (tmp_path / "admin.token").write_text(token + "\n")
    srv = with_store("--admin-token-file", tmp_path / "admin.token")
    assert " reset=token " in srv.config_line
    assert put(srv, "k", b"v").status == 201
    r = reset(srv)
    assert r.status == 401 and r.headers["www-authenticate"] == "Bearer", r
    r = exchange(srv, "POST", "/reset", headers={"Authorization": "Bearer " + token[::-1]})
    assert r.status == 403 and r.json() == {"error": "wrong admin token"}, r
    assert reset(srv, "cache").status == 204  # neither refusal touched the store:
    assert get(srv, "k").body == b"v"          # the key comes back from it
    r = exchange(srv, "POST", "/reset", headers={"Authorization": "Bearer " + token})
    assert r.status == 204, r
    assert reset(srv, "cache").status == 204
    assert get(srv, "k").status == 404  # gone from the store too


def test_reset_scope_cache_keeps_the_store(with_store):
    srv = with_store()
    put(srv, "c", b"cold")
    assert reset(srv, "cache").status == 204
    assert stats(srv)["items"] == 0
    assert get(srv, "c").body == b"cold"
    assert stats(srv)["readthrough_fills"] == 1
    r = reset(srv, "everything")
    assert r.status == 400 and "scope" in r.json()["error"]


def test_large_and_binary_values_round_trip(with_store):
    srv = with_store("--max-value", "2M", "-m", "64M")
    value = bytes(range(256)) * 4096  # 1 MiB, every byte value
    assert put(srv, "big%00key", value).status == 201
    srv = restart(srv, with_store, "--max-value", "2M", "-m", "64M")
    r = get(srv, "big%00key")
    assert r.status == 200 and r.body == value


# --- single-flight and a request path that waits ------------------------------------------

def test_concurrent_misses_make_one_store_read_and_hits_do_not_wait(with_store):
    srv = with_store("-t", "1", "--store-faults", "read-delay=500ms")
    put(srv, "hot", b"h" * 100)
    put(srv, "slow", b"s" * 100)
    reset(srv, "cache")
    put(srv, "hot", b"h" * 100)  # back in the cache: a hit
    n = 100
    conns = [srv.connect() for _ in range(n)]
    t0 = time.monotonic()
    for c in conns:
        c.sendall(request_bytes("GET", "/key/slow"))
    # While the one store read is pending, a hit on another connection is answered at once.
    probe = srv.connect()
    reader = Reader(probe)
    hit_ms = []
    for _ in range(7):
        t = time.monotonic()
        probe.sendall(request_bytes("GET", "/key/hot"))
        r = reader.read()
        hit_ms.append((time.monotonic() - t) * 1000)
        assert r.status == 200
    probed_at = time.monotonic() - t0
    for c in conns:
        r = Reader(c).read()
        assert r.status == 200 and r.body == b"s" * 100
        c.close()
    elapsed = time.monotonic() - t0
    probe.close()
    assert probed_at < 0.5, "probes did not run inside the store delay; timing unusable"
    assert statistics.median(hit_ms) < 5.0, hit_ms
    assert elapsed < 2.0, f"100 misses took {elapsed:.2f}s with a 0.5s store delay"
    s = stats(srv)
    assert s["store_reads"] == 1 and s["readthrough_fills"] == 1


def test_pipelined_requests_answer_in_order_and_take_effect_in_order(with_store):
    srv = with_store("-t", "1", "--store-faults", "read-delay=100ms")
    put(srv, "m1", b"first")
    reset(srv, "cache")
    put(srv, "hit", b"cached")
    batch = (request_bytes("GET", "/key/m1")            # miss: waits on the store
             + request_bytes("GET", "/key/hit")         # hit, answered behind it
             + request_bytes("PUT", "/key/m1", body=b"second")  # a write waits for the read
             + request_bytes("GET", "/key/m1")          # sees the write
             + request_bytes("DELETE", "/key/m1")
             + request_bytes("GET", "/key/m1"))
    with srv.connect() as s:
        s.sendall(batch)
        rd = Reader(s)
        got = [rd.read() for _ in range(6)]
    assert [r.status for r in got] == [200, 200, 204, 200, 204, 404]
    assert got[0].body == b"first" and got[1].body == b"cached" and got[3].body == b"second"


def test_many_pipelined_misses_back_pressure_without_errors(with_store):
    srv = with_store("-t", "1", "--store-faults", "read-delay=20ms")
    n = 300  # more than the 64 responses a connection may have outstanding
    with srv.connect() as s:
        for i in range(n):
            s.sendall(request_bytes("PUT", f"/key/p{i}", body=f"v{i}".encode()))
        rd = Reader(s)
        assert all(rd.read().status == 201 for _ in range(n))
    reset(srv, "cache")
    with srv.connect() as s:
        s.sendall(b"".join(request_bytes("GET", f"/key/p{i}") for i in range(n)))
        rd = Reader(s)
        for i in range(n):
            r = rd.read()
            assert r.status == 200 and r.body == f"v{i}".encode()
    assert stats(srv)["readthrough_fills"] == n


def test_connection_close_after_pending_response(with_store):
    srv = with_store("--store-faults", "read-delay=50ms")
    put(srv, "k", b"v")
    reset(srv, "cache")
    with srv.connect() as s:
        s.sendall(request_bytes("GET", "/key/k", headers={"Connection": "close"}))
        rd = Reader(s)
        r = rd.read()
        assert r.status == 200 and r.body == b"v" and r.headers["connection"] == "close"
        assert rd.at_eof()


# Both ways an answer the store finished reaches its connection: the worker's completion inbox
# (per-thread, one post per group) and one post per answer to the connection's strand (shared).
@pytest.mark.parametrize("io_model", ["per-thread", "shared"])
def test_concurrent_writers_group_commit(with_store, io_model):
    srv = with_store("-t", "2", "--io-model", io_model)
    n_threads, per_thread = 16, 40
    errors = []

    def writer(t):
        try:
            with srv.connect() as s:
                rd = Reader(s)
                for i in range(per_thread):
                    s.sendall(request_bytes("PUT", f"/key/w{t}-{i}", body=b"x" * 100))
                    assert rd.read().status == 201
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    s = stats(srv)
    assert s["store_writes"] == n_threads * per_thread
    assert 1 <= s["store_commits"] <= s["store_writes"]
    srv = restart(srv, with_store)
    for t in range(n_threads):
        assert get(srv, f"w{t}-{per_thread - 1}").status == 200


# --- store failures -----------------------------------------------------------------------

ROCKSDB_FAULTS = ("RocksDB's fault injection (write/sync errors, no space); PostgreSQL's failure "
                  "is losing the server: test_store_postgres.py")


@pytest.mark.rocksdb_only(reason=ROCKSDB_FAULTS)
@pytest.mark.parametrize("fault", ["sync-error-after=3", "write-error-after=3"])
def test_store_failure_refuses_writes_keeps_reads(with_store, fault):
    srv = with_store("--store-faults", fault)
    for i in range(3):
        assert put(srv, f"ok{i}", b"v").status == 201
    r = put(srv, "lost", b"v")
    assert r.status == 503 and r.headers["content-type"] == "application/json"
    assert r.json()["error"]
    r = exchange(srv, "DELETE", "/key/ok0")
    assert r.status == 503
    assert get(srv, "lost").status == 404  # not acknowledged, not cached
    assert get(srv, "ok0").body == b"v"    # still served from the cache
    reset(srv, "cache")
    assert get(srv, "ok1").body == b"v"    # and from the store
    s = stats(srv)
    assert s["store_failed"] is True and s["store_error"] and s["store_errors"] >= 2
    code, _, err = srv.stop()
    assert code == 0
    assert "store" in err.lower()  # the log says why
    srv = with_store()  # no faults: every acknowledged write is there, the refused one is not
    assert [get(srv, f"ok{i}").status for i in range(3)] == [200, 200, 200]
    assert get(srv, "lost").status == 404


@pytest.mark.rocksdb_only(reason=ROCKSDB_FAULTS)
def test_disk_full_answers_503(with_store):
    srv = with_store("--store-faults", "no-space-after=2")
    assert put(srv, "a", b"1").status == 201
    assert put(srv, "b", b"2").status == 201
    r = put(srv, "c", b"3")
    assert r.status == 503 and "space" in r.json()["error"].lower()
    assert get(srv, "a").status == 200


def test_bad_store_flags_are_clear_errors(server_bin, tmp_path):
    import subprocess
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for args, needle in [
        (["--store", "redis:x"], "--store"),
        (["--store", f"rocksdb:{blocker}/db"], "store"),
        (["--store", f"rocksdb:{tmp_path}/d", "--store-faults", "read-delay=abc"], "faults"),
        (["--write-mode", "sideways"], "--write-mode"),
        (["--flush-interval", "0ms"], "--flush-interval"),
    ]:
        p = subprocess.run([server_bin, "-p", "0", *args], capture_output=True, timeout=30)
        assert p.returncode == 1, (args, p)
        assert needle in p.stderr.decode(), (args, p.stderr)
        assert len(p.stderr.decode().strip().splitlines()) == 1, p.stderr


# --- write-behind -------------------------------------------------------------------------

def test_write_behind_answers_from_cache_and_flushes_within_interval(with_store):
    srv = with_store("--write-mode", "behind", "--flush-interval", "200ms")
    assert put(srv, "wb", b"v1").status == 201
    assert put(srv, "wb", b"v2").status == 204
    assert get(srv, "wb").body == b"v2"
    deadline = time.monotonic() + 5
    while stats(srv)["dirty_items"] and time.monotonic() < deadline:
        time.sleep(0.05)
    s = stats(srv)
    assert s["dirty_items"] == 0 and s["dirty_bytes"] == 0
    assert 1 <= s["store_writes"] <= 2  # coalesced: one key, one or two flushes
    srv = restart(srv, with_store)
    assert get(srv, "wb").body == b"v2"


def test_write_behind_sigterm_flushes_everything(with_store):
    srv = with_store("--write-mode", "behind", "--flush-interval", "60s")
    for i in range(200):
        put(srv, f"t{i}", f"val{i}".encode())
    exchange(srv, "DELETE", "/key/t0")
    s = stats(srv)
    assert s["dirty_items"] == 200 and s["store_writes"] == 0
    srv = restart(srv, with_store)
    assert get(srv, "t0").status == 404
    assert all(get(srv, f"t{i}").body == f"val{i}".encode() for i in range(1, 200))


def test_write_behind_kill9_loses_at_most_the_flush_interval(with_store):
    srv = with_store("--write-mode", "behind", "--flush-interval", "100ms")
    for i in range(50):
        assert put(srv, f"k{i}", b"x").status == 201
    time.sleep(0.5)  # > the flush interval: everything above must be durable
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.stop()
    srv = with_store()
    assert all(get(srv, f"k{i}").status == 200 for i in range(50))


def test_write_behind_dirty_entries_survive_eviction(with_store):
    flags = ("--write-mode", "behind", "--flush-interval", "60s", "-m", "16K",
             "--max-value", "1K")
    srv = with_store(*flags)
    for i in range(100):
        assert put(srv, f"e{i}", bytes([i]) * 500).status == 201
    s = stats(srv)
    assert s["evictions"] > 0 and s["dirty_items"] == 100
    for i in range(100):
        r = get(srv, f"e{i}")
        assert r.status == 200 and r.body == bytes([i]) * 500, i
    srv = restart(srv, with_store, *flags)
    assert all(get(srv, f"e{i}").body == bytes([i]) * 500 for i in range(100))


def test_write_behind_delete_consults_store(with_store):
    srv = with_store("--write-mode", "behind", "--flush-interval", "50ms")
    put(srv, "d", b"v")
    time.sleep(0.3)
    reset(srv, "cache")
    assert exchange(srv, "DELETE", "/key/d").status == 204  # known only to the store
    assert exchange(srv, "DELETE", "/key/d").status == 404
    assert exchange(srv, "DELETE", "/key/never").status == 404
    srv = restart(srv, with_store)
    assert get(srv, "d").status == 404


def test_write_behind_max_dirty_makes_writers_wait_not_drop(with_store):
    flags = ("--write-mode", "behind", "--flush-interval", "200ms", "--max-value", "1K",
             "--max-dirty", "1300")
    srv = with_store(*flags)
    with srv.connect() as s:
        rd = Reader(s)
        for i in range(20):
            s.sendall(request_bytes("PUT", f"/key/md{i}", body=bytes([65 + i]) * 1000))
        assert [rd.read().status for _ in range(20)] == [201] * 20
    assert stats(srv)["dirty_bytes"] <= 1300
    srv = restart(srv, with_store)
    assert all(get(srv, f"md{i}").body == bytes([65 + i]) * 1000 for i in range(20))


@pytest.mark.rocksdb_only(reason=ROCKSDB_FAULTS)
def test_write_behind_failed_store_sigterm_reports_loss(with_store):
    srv = with_store("--write-mode", "behind", "--flush-interval", "60s", "--store-faults",
                     "sync-error-after=0")
    assert put(srv, "doomed", b"v").status == 201
    code, _, err = srv.stop()
    assert code == 1 and "could not be made durable" in err


@pytest.mark.rocksdb_only(reason=ROCKSDB_FAULTS)
def test_write_behind_refuses_writes_once_the_store_failed(with_store):
    """From a failed flush on, write-behind answers 503 to every write (none of it could ever
    become durable) and says the store failed; the writes it took before stay served and are
    reported lost at SIGTERM (docs/api.md, "Failures of the store")."""
    flags = ("--write-mode", "behind", "--flush-interval", "100ms")
    srv = with_store(*flags, "--store-faults", "sync-error-after=2")
    for key in ("a", "b"):  # two flushes, two good syncs
        assert put(srv, key, b"v").status == 201
        deadline = time.monotonic() + 10
        while stats(srv)["dirty_items"] != 0:
            assert time.monotonic() < deadline, "not flushed"
            time.sleep(0.02)
    assert put(srv, "c", b"v").status == 201  # taken; its flush fails
    deadline = time.monotonic() + 10
    while not stats(srv)["store_failed"]:
        assert time.monotonic() < deadline, "store_failed never became true"
        time.sleep(0.02)
    for method, key in (("PUT", "d"), ("DELETE", "a"), ("PUT", "c")):
        r = exchange(srv, method, "/key/" + key, body=b"w" if method == "PUT" else b"")
        assert r.status == 503 and r.json()["error"], (method, key, r)
    assert get(srv, "c").body == b"v"  # kept, served from the dirty buffer
    assert get(srv, "a").body == b"v"  # the refused DELETE changed nothing
    code, _, err = srv.stop()
    assert code == 1 and "could not be made durable" in err, (code, err)
    srv = with_store(*flags)  # no faults: the acknowledged, flushed writes are there
    assert [get(srv, k).status for k in ("a", "b", "d")] == [200, 200, 404]
