"""The PostgreSQL store behind the real binary (docs/api.md, "With a store"): what only a
database server can do to the cache, and the flags that pick and bound it.

- losing PostgreSQL (stopped, crashed, restarted, hung by SIGSTOP) under the server's feet:
  write-through writes answer 503 within --store-timeout and never a success that cannot be
  proven, cache hits are still served, misses answer 503, write-behind keeps its dirty data and
  flushes it once the database is back, the server reconnects by itself (`store_connected`,
  `store_reconnects`), no acknowledged write is lost, the cache never disagrees with the table
  afterwards, and SIGTERM still ends the server in bounded time;
- --store-timeout against a slow read and a commit blocked on a row lock;
- `kill -9` of cache_server under write-through load: every acknowledged write is in the table
  (checked through a restarted server and with psql);
- the flags: --store postgres:CONNINFO, --store-connections, --store-table, --store-timeout, and
  their errors (one line on stderr, exit 1, never the password).

The semantics shared with RocksDB run on both stores in test_store.py and test_store_crash.py.
PostgreSQL is the process's throwaway cluster (conftest.py, tests/support/pg_cluster.py); each
test has its own table. A test that stops PostgreSQL gets it started again by the `pg` fixture.
Every wait is bounded.
"""
import os
import random
import signal
import subprocess
import threading
import time

import pytest

import pg_cluster
from procstat import rss_bytes
from rawhttp import Reader, delete, exchange, get, put, request_bytes, reset, stats

STORE_TIMEOUT = "500ms"
ANSWER_WITHIN_S = 3.0      # a 503 for an unreachable store: well under this, with 500ms
RECONNECT_WITHIN_S = 20.0  # the store's backoff tops out at 2 s


def timed(fn, *args, **kw):
    t0 = time.monotonic()
    r = fn(*args, **kw)
    return r, time.monotonic() - t0


def wait_for(srv, pred, within_s, what):
    """Polls /stats until pred(stats) holds; fails after within_s saying what was awaited."""
    deadline = time.monotonic() + within_s
    while True:
        s = stats(srv)
        if pred(s):
            return s
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within_s}s: {what}; /stats: {s}")
        time.sleep(0.05)


def assert_503(r, elapsed, what):
    assert r.status == 503, f"{what}: expected 503, got {r}"
    assert r.headers["content-type"] == "application/json", r
    assert r.json()["error"], r
    assert elapsed < ANSWER_WITHIN_S, (
        f"{what}: 503 took {elapsed:.2f}s with --store-timeout {STORE_TIMEOUT}")


def qident(name):
    """A table name as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def table_keys(psql, table):
    """Every key in the table (as text) -> its value (as text), read with psql."""
    rows = psql(f"SELECT convert_from(key, 'UTF8'), convert_from(value, 'UTF8') "
                f"FROM {qident(table)}")
    return {k: v for k, v in rows}


def table_exists(psql, table):
    return psql(f"SELECT to_regclass('{qident(table)}') IS NOT NULL") == [["t"]]


def read_all(srv, keys, batch=200):
    """Pipelined GETs of keys on one connection, in batches: key -> value or None (404)."""
    out = {}
    keys = list(keys)
    with srv.connect(timeout=30) as s:
        rd = Reader(s)
        for at in range(0, len(keys), batch):
            part = keys[at:at + batch]
            s.sendall(b"".join(request_bytes("GET", "/key/" + k) for k in part))
            for k in part:
                r = rd.read()
                assert r.status in (200, 404), (k, r)
                out[k] = r.body.decode() if r.status == 200 else None
    return out


@pytest.fixture
def pg_flags(pg, psql, store_table):
    """--store flags for the test's own (empty) table."""
    psql(f"DROP TABLE IF EXISTS {qident(store_table)}")
    return ["--store", f"postgres:{pg.conninfo}", "--store-table", store_table]


# --- flags --------------------------------------------------------------------------------

def test_config_line_names_postgres_and_never_the_password(start_server, pg, store_table):
    secret = "hunter2-Secret"  # trust authentication: the password is sent and ignored
    srv = start_server("--store", f"postgres:{pg.conninfo} password={secret}",
                       "--store-table", store_table)
    out = b"\n".join(srv.stdout_lines).decode()
    assert "store=postgres" in out, out
    assert secret not in out, out
    s = stats(srv)
    assert s["store"] == "postgres" and s["store_connected"] is True
    assert s["store_reconnects"] == 0 and s["store_failed"] is False
    assert put(srv, "k", b"v").status == 201
    body = exchange(srv, "GET", "/metrics").body.decode()
    assert secret not in body
    code, _, err = srv.stop()
    assert code == 0, err
    assert secret not in err
    # The other spellings libpq takes: a URI with a password, spaces around '=', quotes.
    for conninfo in (f"postgresql://postgres:{secret}@127.0.0.1:{pg.port}/postgres",
                     f"{pg.conninfo} password = {secret}",
                     f"{pg.conninfo} password='{secret} x'"):
        srv = start_server("--store", f"postgres:{conninfo}", "--store-table", store_table)
        out = b"\n".join(srv.stdout_lines).decode()
        assert "store=postgres" in out and secret not in out, out
        assert put(srv, "k", b"v").status == 204
        code, _, err = srv.stop()
        assert code == 0 and secret not in err, err


def test_bad_postgres_flags_are_clear_errors(server_bin, pg, psql, store_table):
    secret = "s3cret-Pw"
    closed = pg_cluster.free_port()  # nothing listens there
    good = f"postgres:{pg.conninfo}"
    cases = [
        (["--store", good, "--store-connections", "1"], "--store-connections"),
        (["--store", good, "--store-connections", "0"], "--store-connections"),
        (["--store", good, "--store-connections", "two"], "--store-connections"),
        (["--store", good, "--store-connections", "-3"], "--store-connections"),
        (["--store", good, "--store-connections", "65"], "--store-connections"),
        # More connections than the cluster allows (max_connections=40): cannot open the store.
        (["--store", good, "--store-table", store_table + "_c", "--store-connections", "64"],
         "store"),
        (["--store", good, "--store-timeout", "0"], "--store-timeout"),
        (["--store", good, "--store-timeout", "0ms"], "--store-timeout"),
        (["--store", good, "--store-timeout", "soon"], "--store-timeout"),
        (["--store", good, "--store-timeout", "-1s"], "--store-timeout"),
        (["--store", good, "--store-table="], "--store-table"),
        (["--store", good, "--store-table", "t" * 64], "--store-table"),  # PostgreSQL's limit: 63
        # Reachable, but the login is refused (no such role): cannot open the store.
        (["--store", f"{good} user=no_such_role password={secret}", "--store-table",
          store_table], "store"),
        (["--store", "postgres:"], "--store"),
        (["--store", good, "--store-table", store_table, "--store-faults",
          "sync-error-after=3"], "fault"),
        (["--store", good, "--store-table", store_table, "--store-faults",
          "no-space-after=1"], "fault"),
        # Cannot open the store: nothing listens on the port. The password is never echoed.
        (["--store", f"postgres:host=127.0.0.1 port={closed} dbname=postgres user=postgres "
          f"password={secret} connect_timeout=5"], "store"),
        (["--store", f"postgres:postgresql://postgres:{secret}@127.0.0.1:{closed}/postgres"],
         "store"),
        (["--store", f"postgresql://postgres:{secret}@127.0.0.1:{closed}/postgres"], "--store"),
    ]
    for args, needle in cases:
        t0 = time.monotonic()
        p = subprocess.run([server_bin, "-s", "127.0.0.1", "-p", "0", *args],
                           capture_output=True, timeout=30)
        elapsed = time.monotonic() - t0
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 1, (args, p.returncode, err, p.stdout)
        assert needle in err, (args, err)
        assert len(err.strip().splitlines()) == 1, (args, err)
        assert err.startswith("cache_server: "), (args, err)
        assert p.stdout == b"", (args, p.stdout)
        assert secret not in err, (args, err)
        assert elapsed < 15, (args, f"took {elapsed:.1f}s")
    # The flags and the fault spec are refused before the table is created.
    assert not table_exists(psql, store_table)
    psql(f"DROP TABLE IF EXISTS {qident(store_table + '_c')}")


def test_store_table_picks_the_table(start_server, pg, psql, store_table):
    a = store_table + "_a"
    b = 'Odd "Name"; DROP TABLE x; --'  # quoted as an identifier, not pasted into SQL
    for t in (a, b):
        psql(f"DROP TABLE IF EXISTS {qident(t)}")
    conn = f"postgres:{pg.conninfo}"
    srv_a = start_server("--store", conn, "--store-table", a)
    srv_b = start_server("--store", conn, "--store-table", b, "--allow-reset")
    assert put(srv_a, "only-a", b"in a").status == 201
    assert put(srv_b, "only-b", b"in b").status == 201
    assert put(srv_a, "both", b"a's").status == 201
    assert put(srv_b, "both", b"b's").status == 201  # new in b's table: 201, not 204
    assert get(srv_b, "only-a").status == 404
    assert get(srv_a, "only-b").status == 404
    assert get(srv_a, "both").body == b"a's" and get(srv_b, "both").body == b"b's"
    assert table_keys(psql, a) == {"only-a": "in a", "both": "a's"}
    assert table_keys(psql, b) == {"only-b": "in b", "both": "b's"}
    # POST /reset empties its own table only.
    assert reset(srv_b).status == 204
    assert table_keys(psql, b) == {}
    assert table_keys(psql, a) == {"only-a": "in a", "both": "a's"}
    for srv in (srv_a, srv_b):
        code, _, err = srv.stop()
        assert code == 0, err
    for t in (a, b):
        psql(f"DROP TABLE {qident(t)}")


def test_default_table_is_kv_and_connections_are_as_many_as_asked(start_server, pg, psql):
    psql("DROP TABLE IF EXISTS kv")

    def client_backends():
        return int(psql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                        "'client backend' AND pid <> pg_backend_pid()")[0][0])

    def wait_backends(n):
        deadline = time.monotonic() + 10
        while client_backends() != n:
            if time.monotonic() > deadline:
                rows = psql("SELECT pid, state, query FROM pg_stat_activity WHERE "
                            "backend_type = 'client backend'")
                pytest.fail(f"expected {n} client connections, have {rows}")
            time.sleep(0.1)

    wait_backends(0)  # servers of earlier tests are gone
    srv = start_server("--store", f"postgres:{pg.conninfo}", "-t", "2")
    assert table_exists(psql, "kv")
    wait_backends(4)  # the default
    assert put(srv, "k", b"v").status == 201
    assert table_keys(psql, "kv") == {"k": "v"}
    code, _, err = srv.stop()
    assert code == 0, err
    wait_backends(0)
    srv = start_server("--store", f"postgres:{pg.conninfo}", "--store-connections", "2")
    wait_backends(2)  # one writer, one reader: still every semantic point works
    reset(srv, "cache")
    conns = [srv.connect() for _ in range(20)]
    for i, c in enumerate(conns):  # 20 concurrent misses through the one reader
        c.sendall(request_bytes("GET", "/key/k" if i % 2 else f"/key/absent{i}"))
    for i, c in enumerate(conns):
        r = Reader(c).read()
        assert r.status == (200 if i % 2 else 404), (i, r)
        c.close()
    assert put(srv, "k2", b"v2").status == 201
    code, _, err = srv.stop()
    assert code == 0, err
    psql("DROP TABLE kv")


# --- the store's timeout ------------------------------------------------------------------

def test_store_timeout_bounds_a_slow_read(start_server, pg_flags):
    srv = start_server(*pg_flags, "--store-timeout", "300ms", "--store-faults", "read-delay=4s")
    assert put(srv, "slow", b"s").status == 201
    assert put(srv, "hot", b"h").status == 201
    reset(srv, "cache")
    assert put(srv, "hot", b"h").status == 204  # a hit again
    r, elapsed = timed(get, srv, "slow")
    assert r.status == 503 and r.json()["error"], r
    assert elapsed < 2.0, f"a 4s store read with --store-timeout 300ms answered in {elapsed:.2f}s"
    r, elapsed = timed(get, srv, "hot")
    assert r.status == 200 and r.body == b"h" and elapsed < 1.0
    r, elapsed = timed(put, srv, "w", b"x")  # writes are not delayed
    assert r.status == 201 and elapsed < 2.0
    assert stats(srv)["store_connected"] is True
    # Stopping with the late read still pending is clean (the fixture checks exit 0).


def test_store_timeout_on_a_blocked_commit_keeps_cache_and_table_agreeing(
        start_server, pg, psql, pg_flags, store_table):
    """A commit held up by a row lock outlives --store-timeout: the PUT answers 503 (its outcome
    is unknown then), and the commit may still land later. Whatever the table ends up holding,
    the server must answer the same, from its cache as from the table."""
    srv = start_server(*pg_flags, "--store-timeout", STORE_TIMEOUT)
    assert put(srv, "locked", b"old").status == 201
    assert put(srv, "other", b"o").status == 201
    assert get(srv, "locked").body == b"old"  # cached
    hold_s = 3
    locker = subprocess.Popen(
        ["psql", "-X", "-q", "-d", pg.conninfo, "-c",
         f"BEGIN; SELECT 1 FROM {qident(store_table)} WHERE key = 'locked'::bytea FOR UPDATE; "
         f"SELECT pg_sleep({hold_s}); COMMIT;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not psql(f"SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE "
                       f"'%pg_sleep({hold_s})%' AND pid <> pg_backend_pid()"):
            assert time.monotonic() < deadline, "the locking session never started"
            assert locker.poll() is None, locker.stderr.read()
            time.sleep(0.05)
        time.sleep(0.3)  # the row lock is taken first thing
        r, elapsed = timed(put, srv, "locked", b"new")
        assert_503(r, elapsed, "PUT whose commit waits on a row lock longer than the timeout")
        r, elapsed = timed(get, srv, "other")
        assert r.status == 200 and r.body == b"o" and elapsed < 1.0, (r, elapsed)
    finally:
        locker.wait(timeout=hold_s + 20)
    assert locker.returncode == 0, locker.stderr.read()
    # The held-up commit either landed or was given up: wait until the writer is idle again (a
    # write after it commits after it), then compare.
    deadline = time.monotonic() + 10
    while True:
        r = put(srv, "marker", b"m")
        if r.status in (201, 204):
            break
        assert time.monotonic() < deadline, f"writes still refused after the lock: {r}"
        time.sleep(0.2)
    in_table = table_keys(psql, store_table)["locked"]
    served = get(srv, "locked")
    assert served.status == 200 and served.body.decode() == in_table, (
        f"the table holds {in_table!r} but the server answers {served.body!r} (stale cache "
        f"after a commit that timed out)")
    reset(srv, "cache")
    assert get(srv, "locked").body.decode() == in_table
    print(f"\nblocked commit past --store-timeout: 503, the table then held {in_table!r}")


# --- outcomes the server cannot know, and resets (issue 27) ------------------------------------

def hold_row_lock(pg, psql, table, key):
    """A psql session holding the row lock of `key` until its stdin gets COMMIT; returns the
    process once the lock is held."""
    locker = subprocess.Popen(["psql", "-X", "-q", "-d", pg.conninfo], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    locker.stdin.write(f"BEGIN; SELECT 1 FROM {qident(table)} WHERE key = '{key}'::bytea "
                       f"FOR UPDATE; SELECT 'locked-{key}';\n")
    locker.stdin.flush()
    deadline = time.monotonic() + 10
    while not psql("SELECT 1 FROM pg_stat_activity WHERE state = 'idle in transaction' AND "
                   f"query LIKE '%locked-{key}%'"):
        assert time.monotonic() < deadline, "the locking session never took the lock"
        assert locker.poll() is None, locker.stderr.read()
        time.sleep(0.05)
    return locker


def release(locker):
    locker.stdin.write("COMMIT;\n")
    locker.stdin.close()
    locker.wait(timeout=20)


def in_thread(fn, *args):
    """Runs fn(*args) in a thread; returns a function that joins it (bounded) and gives the
    result."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn(*args)), daemon=True)
    t.start()

    def join(timeout=30):
        t.join(timeout)
        assert not t.is_alive(), f"{fn.__name__}{args} did not return within {timeout}s"
        return out["r"]
    return join


def test_commit_of_unknown_outcome_leaves_the_cache(start_server, pg, psql, pg_flags,
                                                    store_table):
    """A commit flushed by PostgreSQL but never acknowledged (it waits for a synchronous standby
    that never connects), then a restart: the client got 503, the table holds the new value,
    and the server must serve it (from the store), not the old one it had cached."""
    srv = start_server(*pg_flags, "--store-timeout", "1s")
    assert put(srv, "k", b"V0").status == 201
    assert put(srv, "d", b"D0").status == 201
    assert put(srv, "other", b"O").status == 201
    assert get(srv, "k").body == b"V0" and get(srv, "d").body == b"D0"  # cached
    psql("ALTER SYSTEM SET synchronous_standby_names = 'never_connects'")
    psql("SELECT pg_reload_conf()")
    try:
        time.sleep(0.3)  # the writer's backend sees the new setting
        r = put(srv, "k", b"V1")  # committed locally, waits for the standby: 503 at the timeout
        assert r.status == 503, r
        r = delete(srv, "d")  # the next group, behind it
        assert r.status == 503, r
    finally:
        psql("ALTER SYSTEM RESET synchronous_standby_names")
    pg.restart()  # the waiting backend ends; its transaction stays committed
    wait_for(srv, lambda s: s["store_connected"] is True and s["store_reconnects"] >= 1,
             RECONNECT_WITHIN_S, "reconnected after the restart")
    # No writer runs now: every key must answer what its row holds.
    rows = table_keys(psql, store_table)
    assert rows.get("k") == "V1", rows  # the unacknowledged commit landed
    for key in ("k", "d", "other"):
        r = get(srv, key)
        served = r.body.decode() if r.status == 200 else None
        assert r.status in (200, 404), r
        assert served == rows.get(key), (
            f"{key}: the table holds {rows.get(key)!r}, the server serves {served!r}")


def test_reset_is_a_barrier_for_reads(start_server, pg, psql, pg_flags, store_table):
    """A miss that arrives while a reset waits behind a stalled commit must not read (and
    cache) the row the reset is about to remove: after the 204, nothing from before is served."""
    srv = start_server(*pg_flags, "--store-board-table", store_table + "_b", "--store-timeout", "20s",
                       "--allow-reset")
    assert put(srv, "a", b"A").status == 201
    assert put(srv, "b", b"B").status == 201
    assert exchange(srv, "PUT", "/board/lb/member/alice", body=b"10").status == 201
    assert reset(srv, "cache").status == 204  # "b" is in the table only
    locker = hold_row_lock(pg, psql, store_table, "a")
    try:
        stalled_put = in_thread(put, srv, "a", b"A2")  # the writer waits on the row lock
        time.sleep(0.3)
        pending_reset = in_thread(reset, srv)  # queued behind the stalled commit
        time.sleep(0.3)
        racing_get = in_thread(get, srv, "b")  # a miss while the reset is pending
        time.sleep(0.5)
        # Boards refuse changes while the reset is pending (all or nothing, then the 204).
        r = exchange(srv, "PUT", "/board/lb/member/bob", body=b"5")
        assert r.status == 503 and "reset is pending" in r.json()["error"], r
    finally:
        release(locker)
    assert stalled_put().status in (201, 204)
    assert pending_reset().status == 204
    r = racing_get()
    assert r.status == 404, f"a GET racing the reset was answered {r} after the clear"
    r = get(srv, "b")
    assert r.status == 404, f"after a 204 reset the server serves {r.body!r} from before it"
    assert table_keys(psql, store_table) == {}
    assert exchange(srv, "GET", "/board/lb").status == 404  # the boards went with the reset


def test_failed_reset_changes_nothing(start_server, pg, psql, pg_flags, store_table):
    """PostgreSQL down: the reset answers 503 and every key (and dirty write) and board stays,
    in memory and, once PostgreSQL is back, in the tables."""
    flags = [*pg_flags, "--store-board-table", store_table + "_b", "--write-mode", "behind",
             "--flush-interval", "60s", "--store-timeout", "3s", "--allow-reset"]
    srv = start_server(*flags)
    assert put(srv, "v", b"V1").status == 201
    code, _, err = srv.stop()  # V1 durable
    assert code == 0, err
    srv = start_server(*flags)
    assert put(srv, "v", b"V2").status in (201, 204)  # acknowledged, dirty
    assert exchange(srv, "PUT", "/board/lb/member/alice", body=b"10").status == 201
    pg.stop(mode="fast")
    r = reset(srv)
    assert r.status == 503 and "reset" in r.json()["error"], r
    assert get(srv, "v").body == b"V2"  # not emptied, not reverted to V1
    r = exchange(srv, "GET", "/board/lb/member/alice")
    assert r.status == 200 and r.json()["score"] == 10, r  # the board stays too
    assert exchange(srv, "PUT", "/board/lb/member/bob", body=b"7").status == 201  # not frozen
    pg.start()
    code, _, err = srv.stop()  # the last flush waits for the writer to reconnect
    assert code == 0, err
    assert table_keys(psql, store_table) == {"v": "V2"}
    srv = start_server(*pg_flags, "--store-board-table", store_table + "_b")  # boards come back
    r = exchange(srv, "GET", "/board/lb/top?n=10")
    assert r.status == 200 and [e["member"] for e in r.json()["entries"]] == ["alice", "bob"], r


# --- losing PostgreSQL --------------------------------------------------------------------

def test_postgres_down_write_through_refuses_writes_and_serves_hits(start_server, pg, pg_flags):
    srv = start_server(*pg_flags, "--store-timeout", STORE_TIMEOUT, "--allow-reset")
    for i in range(5):
        assert put(srv, f"h{i}", f"val{i}".encode()).status == 201
    assert get(srv, "h0").body == b"val0"
    before = stats(srv)
    pg.stop(mode="immediate")  # a crash: connections reset, nothing listens

    r, elapsed = timed(put, srv, "new1", b"n")  # at once, before the store has noticed
    assert_503(r, elapsed, "PUT right after PostgreSQL died")
    s = wait_for(srv, lambda s: s["store_connected"] is False, 10,
                 "store_connected false after PostgreSQL stopped")
    assert s["store_failed"] is False  # losing the connection is not a sticky failure
    r, elapsed = timed(put, srv, "new2", b"n")
    assert_503(r, elapsed, "PUT of a new key while PostgreSQL is down")
    r, elapsed = timed(put, srv, "h2", b"changed")
    assert_503(r, elapsed, "PUT over a cached key while PostgreSQL is down")
    r, elapsed = timed(delete, srv, "h1")
    assert_503(r, elapsed, "DELETE of a cached key while PostgreSQL is down")
    for i in range(5):  # hits: served from the cache, unchanged by the refused writes
        r, elapsed = timed(get, srv, f"h{i}")
        assert r.status == 200 and r.body == f"val{i}".encode(), (i, r)
        assert elapsed < 1.0, f"a cache hit took {elapsed:.2f}s while PostgreSQL is down"
    r, elapsed = timed(get, srv, "never-written")
    assert_503(r, elapsed, "GET miss while PostgreSQL is down")
    r, elapsed = timed(exchange, srv, "HEAD", "/key/never-written")
    assert r.status == 503 and elapsed < ANSWER_WITHIN_S, r
    conns = [srv.connect() for _ in range(20)]  # concurrent misses of one key: all answered
    t0 = time.monotonic()
    for c in conns:
        c.sendall(request_bytes("GET", "/key/never-written"))
    for c in conns:
        r = Reader(c).read()
        assert r.status == 503, r
        c.close()
    assert time.monotonic() - t0 < ANSWER_WITHIN_S
    s = stats(srv)
    assert s["store_errors"] > before["store_errors"], s
    assert s["store_connected"] is False and s["store_error"], s
    r, elapsed = timed(reset, srv)  # must empty the table durably: cannot
    assert_503(r, elapsed, "POST /reset while PostgreSQL is down")
    r, elapsed = timed(reset, srv, "cache")  # the cache only: no store involved
    assert r.status == 204 and elapsed < 1.0, (r, elapsed)
    r, elapsed = timed(get, srv, "h0")  # now a miss
    assert_503(r, elapsed, "GET of an evicted key while PostgreSQL is down")

    pg.start()
    t_up = time.monotonic()
    s = wait_for(srv, lambda s: s["store_connected"] is True, RECONNECT_WITHIN_S,
                 "store_connected true after PostgreSQL came back")
    reconnect_s = time.monotonic() - t_up
    assert reconnect_s < 8, f"reconnected {reconnect_s:.1f}s after PostgreSQL was back " \
                            "(the backoff tops out at 2 s)"
    assert s["store_reconnects"] >= 1, s
    assert put(srv, "new3", b"n3").status == 201
    assert get(srv, "new1").status == 404  # refused writes did not happen
    assert get(srv, "new2").status == 404
    assert get(srv, "h2").body == b"val2"
    reset(srv, "cache")  # and from the database, not only the cache
    got = read_all(srv, [f"h{i}" for i in range(5)] + ["new1", "new2", "new3", "never-written"])
    assert got == {"h0": "val0", "h1": "val1", "h2": "val2", "h3": "val3", "h4": "val4",
                   "new1": None, "new2": None, "new3": "n3", "never-written": None}


def test_postgres_down_write_behind_keeps_dirty_writes_and_flushes_after(
        start_server, pg, psql, pg_flags, store_table):
    flags = [*pg_flags, "--write-mode", "behind", "--flush-interval", "100ms",
             "--store-timeout", STORE_TIMEOUT]
    srv = start_server(*flags)
    assert put(srv, "pre", b"p").status == 201
    wait_for(srv, lambda s: s["dirty_items"] == 0, 5, "the first write flushed")
    assert table_keys(psql, store_table) == {"pre": "p"}
    pg.stop(mode="fast")

    # Nothing is dirty, so nothing has failed yet: the first write is taken (into the dirty
    # buffer, fast). Its flush fails, and from then on every write answers 503 until a flush
    # succeeds (docs/api.md, "Failures of the store").
    r, elapsed = timed(put, srv, "b0", b"bv0")
    assert r.status == 201 and elapsed < 1.0, (r, elapsed)
    s = wait_for(srv, lambda s: s["store_failed"] is True and s["store_connected"] is False, 10,
                 "store_failed after a flush failed while PostgreSQL is down")
    assert s["store_errors"] >= 1 and s["dirty_items"] == 1, s
    r, elapsed = timed(put, srv, "b1", b"bv1")
    assert_503(r, elapsed, "PUT after a failed flush")
    assert "failing" in r.json()["error"], r
    r, elapsed = timed(delete, srv, "pre")
    assert_503(r, elapsed, "DELETE after a failed flush")
    assert get(srv, "b0").body == b"bv0"  # the dirty write is served
    assert get(srv, "pre").body == b"p"   # the refused DELETE changed nothing
    time.sleep(0.5)  # several more flush attempts fail; nothing is dropped
    assert stats(srv)["dirty_items"] == 1

    pg.start()
    s = wait_for(srv, lambda s: s["dirty_items"] == 0 and s["store_failed"] is False,
                 RECONNECT_WITHIN_S, "the dirty write flushed after PostgreSQL came back")
    # Every connection (the readers too, idle all along) is back by itself.
    s = wait_for(srv, lambda s: s["store_connected"] is True, RECONNECT_WITHIN_S,
                 "store_connected true after PostgreSQL came back")
    assert s["store_reconnects"] >= 1, s
    assert put(srv, "b2", b"bv2").status == 201  # taken again
    wait_for(srv, lambda s: s["dirty_items"] == 0, 10, "the last write flushed")
    want = {"pre": "p", "b0": "bv0", "b2": "bv2"}
    assert table_keys(psql, store_table) == want
    reset(srv, "cache")
    got = read_all(srv, [*want, "b1"])
    assert got == {**want, "b1": None}
    code, _, err = srv.stop()
    assert code == 0, err
    srv = start_server(*flags)  # cold cache
    assert read_all(srv, [*want, "b1"]) == {**want, "b1": None}


def test_postgres_down_write_behind_serves_evicted_dirty_entries(start_server, pg, psql,
                                                                 pg_flags, store_table):
    """A dirty entry the cache evicted is read from the dirty buffer, not the store: served
    while PostgreSQL is down, and flushed once it is back (here by SIGTERM's last flush: the
    long interval keeps every write dirty, and no flush fails while PostgreSQL is down)."""
    flags = [*pg_flags, "--write-mode", "behind", "--flush-interval", "60s", "-m", "16K",
             "--max-value", "1K", "--max-dirty", "1M", "--store-timeout", STORE_TIMEOUT]
    srv = start_server(*flags)
    for i in range(100):
        assert put(srv, f"e{i}", bytes([65 + i % 26]) * 500).status == 201
    s = stats(srv)
    assert s["evictions"] > 0 and s["dirty_items"] == 100, s
    pg.stop(mode="fast")
    for i in range(100):
        r, elapsed = timed(get, srv, f"e{i}")
        assert r.status == 200 and r.body == bytes([65 + i % 26]) * 500, (i, r)
        assert elapsed < 1.0, (i, elapsed)
    pg.start()
    code, _, err = srv.stop()
    assert code == 0, err
    rows = table_keys(psql, store_table)
    assert rows == {f"e{i}": chr(65 + i % 26) * 500 for i in range(100)}


def test_postgres_down_write_behind_misses_answer_503(start_server, pg, pg_flags):
    srv = start_server(*pg_flags, "--write-mode", "behind", "--flush-interval", "100ms",
                       "--store-timeout", STORE_TIMEOUT)
    assert put(srv, "known", b"k").status == 201
    pg.stop(mode="fast")
    wait_for(srv, lambda s: s["store_connected"] is False, 10, "store_connected false")
    # A DELETE of a key neither the cache nor the dirty buffer holds must ask the store
    # (204 or 404): it cannot, so neither answer can be proven.
    r, elapsed = timed(delete, srv, "unknown")
    assert_503(r, elapsed, "write-behind DELETE of an unknown key while PostgreSQL is down")
    r, elapsed = timed(get, srv, "unknown")
    assert_503(r, elapsed, "write-behind GET miss while PostgreSQL is down")
    assert get(srv, "known").body == b"k"
    pg.start()
    wait_for(srv, lambda s: s["store_connected"] and s["dirty_items"] == 0, RECONNECT_WITHIN_S,
             "reconnected and flushed")
    assert delete(srv, "unknown").status == 404
    assert get(srv, "known").body == b"k"


def test_postgres_down_write_behind_full_dirty_buffer_answers_503(start_server, pg, psql,
                                                                  pg_flags, store_table):
    """Past --max-dirty, a write waits for a flush to make room; with PostgreSQL down none
    comes, so it answers 503 within --store-timeout rather than hanging or being dropped."""
    srv = start_server(*pg_flags, "--write-mode", "behind", "--flush-interval", "100ms",
                       "--max-value", "1K", "--max-dirty", "1300", "--store-timeout",
                       STORE_TIMEOUT)
    pg.stop(mode="fast")
    wait_for(srv, lambda s: s["store_connected"] is False, 10, "store_connected false")
    assert put(srv, "d0", b"0" * 1000).status == 201  # fits in the dirty buffer
    r, elapsed = timed(put, srv, "d1", b"1" * 1000)
    assert_503(r, elapsed, "write-behind PUT waiting for dirty room while PostgreSQL is down")
    assert get(srv, "d0").body == b"0" * 1000
    r = get(srv, "d1")  # refused: not in the cache, so a miss, and the store is down
    assert r.status == 503, r
    s = stats(srv)
    assert s["dirty_items"] == 1 and s["dirty_bytes"] <= 1300, s
    pg.start()
    wait_for(srv, lambda s: s["store_connected"] and s["dirty_items"] == 0, RECONNECT_WITHIN_S,
             "reconnected and flushed")
    time.sleep(0.3)  # a few more flush intervals: anything still queued would land now
    # The 503 was the answer: the refused write does not take effect later behind the client's
    # back (nor is it kept in memory meanwhile).
    assert table_keys(psql, store_table) == {"d0": "0" * 1000}, \
        "a write-behind PUT answered 503 reached the table after PostgreSQL came back"
    assert get(srv, "d1").status == 404
    assert put(srv, "d1", b"1" * 1000).status == 201
    wait_for(srv, lambda s: s["dirty_items"] == 0, 10, "flushed")
    assert table_keys(psql, store_table) == {"d0": "0" * 1000, "d1": "1" * 1000}


def test_postgres_down_sigterm_with_dirty_writes_reports_loss(start_server, pg, pg_flags):
    srv = start_server(*pg_flags, "--write-mode", "behind", "--flush-interval", "60s",
                       "--store-timeout", STORE_TIMEOUT)
    assert put(srv, "doomed", b"v").status == 201
    pg.stop(mode="fast")
    code, elapsed, err = srv.stop()
    assert elapsed < 8, f"SIGTERM with PostgreSQL down took {elapsed:.1f}s"
    assert code == 1 and "could not be made durable" in err, (code, err)


def test_postgres_hung_answers_within_store_timeout(start_server, pg, psql, pg_flags,
                                                    store_table):
    """PostgreSQL stops answering without closing anything (every process SIGSTOPped: a hung
    server or a partition). Requests that need it answer 503 within --store-timeout, hits are
    served; once it answers again, writes succeed, and the server and the table agree on every
    key (a write answered 503 may have taken effect: its outcome was unknown)."""
    srv = start_server(*pg_flags, "--store-timeout", STORE_TIMEOUT)
    assert put(srv, "a", b"1").status == 201
    with pg.hung():
        r, elapsed = timed(put, srv, "b", b"2")
        assert_503(r, elapsed, "PUT while PostgreSQL hangs")
        r, elapsed = timed(get, srv, "a")
        assert r.status == 200 and r.body == b"1" and elapsed < 1.0, (r, elapsed)
        r, elapsed = timed(get, srv, "missing")
        assert_503(r, elapsed, "GET miss while PostgreSQL hangs")
        r, elapsed = timed(delete, srv, "a")
        assert_503(r, elapsed, "DELETE while PostgreSQL hangs")
    deadline = time.monotonic() + RECONNECT_WITHIN_S
    while (r := put(srv, "c", b"3")).status not in (201, 204):
        assert time.monotonic() < deadline, f"writes still refused after SIGCONT: {r}"
        time.sleep(0.2)
    in_table = table_keys(psql, store_table)
    assert in_table.get("c") == "3"
    keys = ["a", "b", "c", "missing"]
    served = read_all(srv, keys)
    assert served == {k: in_table.get(k) for k in keys}, (served, in_table)
    reset(srv, "cache")
    assert read_all(srv, keys) == served


def hammer_puts(srv, conns, body, seconds):
    """conns keep-alive connections PUT body to distinct keys for `seconds` (bounded); returns
    the status counts."""
    import http.client
    counts = {}
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def writer(n):
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        i = 0
        while time.monotonic() < stop_at:
            try:
                c.request("PUT", f"/key/w{n}-{i}", body=body)
                r = c.getresponse()
                r.read()
                st = r.status
            except (OSError, http.client.HTTPException):
                st = "error"
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            with lock:
                counts[st] = counts.get(st, 0) + 1
            i += 1
        c.close()
    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
        assert not t.is_alive(), "a writer hung"
    return counts


@pytest.mark.parametrize("mode", ["through", "behind"])
def test_postgres_hung_memory_stays_bounded(start_server, pg, pg_flags, mode):
    """PostgreSQL stopped by SIGSTOP, 64 connections PUTting 256 KiB bodies for 12 s: what waits
    on the store is bounded by --max-dirty and --max-inflight, and a write answered 503 is let
    go, so the server's RSS grows by less than max-dirty + max-inflight + 64 MiB."""
    srv = start_server(*pg_flags, "--write-mode", mode, "--flush-interval", "100ms",
                       "--max-dirty", "8M", "--max-inflight", "32M", "--max-value", "1M",
                       "--store-timeout", "500ms", "-t", "2")
    assert put(srv, "warm", b"w").status == 201
    # A sanitized tree's RSS is not the server's own (CMakeLists.txt says why): it checks the
    # answers, over 4 s of the load instead of 12.
    sanitized = bool(os.environ.get("STORE_TEST_SANITIZED"))
    before = rss_bytes(srv.proc.pid) // 1024
    with pg.hung():
        counts = hammer_puts(srv, 64, b"x" * (256 << 10), 4 if sanitized else 12)
        grown_mib = (rss_bytes(srv.proc.pid) // 1024 - before) / 1024
    print(f"\nPostgreSQL hung, {mode}: answers {counts}, RSS grew {grown_mib:.0f} MiB")
    if not sanitized:
        assert grown_mib < 8 + 32 + 64, (counts, grown_mib)
    assert counts.get(503, 0) > 0, counts
    assert set(counts) <= {201, 204, 503}, counts


@pytest.mark.parametrize("mode", ["through", "behind"])
def test_postgres_hung_sigterm_exits_in_bounded_time(start_server, pg, pg_flags, mode):
    """SIGTERM while PostgreSQL hangs (SIGSTOPped) with a write pending on it: the server still
    exits in bounded time (docs/api.md: within 2 s); write-behind says the dirty writes could
    not be made durable and exits 1, write-through (nothing acknowledged is pending) exits 0."""
    srv = start_server(*pg_flags, "--store-timeout", STORE_TIMEOUT, "--write-mode", mode,
                       "--flush-interval", "100ms")
    assert put(srv, "a", b"1").status == 201
    with pg.hung():
        r = put(srv, "b", b"2")  # through: 503 at the timeout; behind: 201, dirty
        assert r.status == (503 if mode == "through" else 201), r
        time.sleep(0.3)  # behind: a flush is now stuck on the hung database
        code, elapsed, err = srv.stop()  # SIGTERM; SIGKILL after 10 s
    assert elapsed < 8, (f"SIGTERM with PostgreSQL hung: no exit within {elapsed:.1f}s "
                         f"(exit code {code}), stderr: {err[-500:]}")
    if mode == "behind":
        assert code == 1 and "could not be made durable" in err, (code, err)
    else:
        assert code == 0, (code, err)


def test_hung_postgres_at_startup_is_a_clear_error(server_bin, pg, store_table):
    """Starting against a PostgreSQL that accepts TCP connections but never answers: the
    store's connect timeout (5 s) ends it with one line on stderr and exit 1, not a hang."""
    with pg.hung():
        t0 = time.monotonic()
        p = subprocess.run([server_bin, "-s", "127.0.0.1", "-p", "0", "--store",
                            f"postgres:{pg.conninfo}", "--store-table", store_table],
                           capture_output=True, timeout=30)
        elapsed = time.monotonic() - t0
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1 and p.stdout == b"", (p.returncode, err, p.stdout)
    assert len(err.strip().splitlines()) == 1 and "store" in err, err
    assert elapsed < 20, f"took {elapsed:.1f}s"


RESTART_KEYS = 30  # per writer thread: keys are overwritten, so stale states would show


def restart_writer(srv, tid, stop, res):
    """One writer of the restart test: overwrites its own keys, one request outstanding, until
    `stop` (at most 5000 writes or 30 s), recording into `res` each key's writes in order with
    their outcome ("acked" or "refused": a 503), the other answers ("bad") and the slowest
    answer."""
    deadline = time.monotonic() + 30
    try:
        with srv.connect() as s:
            rd = Reader(s)
            for i in range(5000):
                if stop.is_set() or time.monotonic() > deadline:
                    break
                key = f"r{tid}-{i % RESTART_KEYS}"
                value = f"{key}:{i}"
                t0 = time.monotonic()
                s.sendall(request_bytes("PUT", "/key/" + key, body=value.encode()))
                r = rd.read()
                res["slowest"] = max(res["slowest"], time.monotonic() - t0)
                if r.status in (201, 204):
                    res["history"].setdefault(key, []).append((value, "acked"))
                elif r.status == 503:
                    res["history"].setdefault(key, []).append((value, "refused"))
                else:
                    res["bad"].append((key, r.status))
                time.sleep(0.02 if r.status == 503 else 0.001)  # no hot loop
    except Exception as e:  # noqa: BLE001 - reported by the test
        res["bad"].append(repr(e))


def restart_outcome(history, in_table):
    """Each key's state in the table against its writes: (the keys whose value is none its last
    acknowledged write or a later one allowed, with their last 3 writes; how many keys hold a
    write answered 503, committed anyway)."""
    lost, unknown_committed = [], 0
    for key, ops in history.items():
        last = max((i for i, (_, st) in enumerate(ops) if st == "acked"), default=None)
        allowed = [v for v, _ in ops[last:]] if last is not None else [None, *(v for v, _ in ops)]
        got = in_table.get(key)
        if got not in allowed:
            lost.append((key, got, ops[-3:]))
        elif last is None or got != ops[last][0]:
            unknown_committed += 1
    return lost, unknown_committed


@pytest.mark.parametrize("stop_mode", ["fast", "immediate"])
@pytest.mark.parametrize("mode", ["through", "behind"])
def test_postgres_restart_under_load_recovers_without_server_restart(
        start_server, pg, psql, pg_flags, store_table, mode, stop_mode):
    """Writers overwrite their own keys (one request outstanding each) while PostgreSQL is
    restarted: `fast` (every session terminated, a clean shutdown) or `immediate` (a crash: no
    shutdown, recovery from the WAL at the next start). Afterwards, without restarting cache_server:
    it reconnected, new writes succeed, every key's state in the table is its last acknowledged
    write's (or a later write answered 503, whose outcome was unknown), and the server answers
    what the table holds, from its cache as from the table (no stale cache entry)."""
    srv = start_server(*pg_flags, "-t", "2", "--store-timeout", "1s", "--write-mode", mode,
                       "--flush-interval", "100ms")
    stop = threading.Event()
    # per writer: key -> [(value, status)] in order, the other answers, the slowest answer
    results = [{"history": {}, "bad": [], "slowest": 0.0} for _ in range(3)]
    threads = [threading.Thread(target=restart_writer, args=(srv, t, stop, res), daemon=True)
               for t, res in enumerate(results)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    t_restart = time.monotonic()
    pg.stop(mode=stop_mode)
    pg.start()  # same port, same data
    restart_s = time.monotonic() - t_restart
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(40)
        assert not t.is_alive(), "writer hung"

    bad = [b for r in results for b in r["bad"]]
    slowest = max(r["slowest"] for r in results)
    s = wait_for(srv, lambda s: s["store_connected"] is True and s["dirty_items"] == 0,
                 RECONNECT_WITHIN_S, "store_connected true (and nothing dirty) after PostgreSQL "
                 "restarted")
    assert s["store_reconnects"] >= 1, s
    r = put(srv, "after", b"a")  # new writes succeed
    assert r.status == 201, r
    wait_for(srv, lambda s: s["dirty_items"] == 0, 10, "the last write flushed")
    in_table = table_keys(psql, store_table)
    history = {k: ops for r in results for k, ops in r["history"].items()}
    acked = sum(1 for ops in history.values() for _, st in ops if st == "acked")
    refused = sum(1 for ops in history.values() for _, st in ops if st == "refused")
    lost, unknown_committed = restart_outcome(history, in_table)
    served = read_all(srv, list(history))  # cache hits where the cache holds the key
    stale = [(k, served[k], in_table.get(k)) for k in history if served[k] != in_table.get(k)]
    reset(srv, "cache")
    cold = read_all(srv, list(history))
    cold_wrong = [(k, cold[k], in_table.get(k)) for k in history if cold[k] != in_table.get(k)]
    report = (f"PostgreSQL {stop_mode} restart under load ({mode}, {restart_s:.1f}s): {acked} "
              f"acknowledged, acknowledged but lost: {len(lost)}, answered 503: {refused} "
              f"(committed anyway: {unknown_committed}), other answers: {len(bad)}, stale cache "
              f"entries: {len(stale)}, slowest answer {slowest:.2f}s, "
              f"store_reconnects {s['store_reconnects']}")
    print("\n" + report)
    assert not bad, (report, bad[:5])
    assert acked > 0, report
    assert not lost, (report, "key, in the table, its last 3 writes:", lost[:5])
    if mode == "behind":
        # Write-behind answers 503 from a failed flush until one succeeds (docs/api.md, "Failures
        # of the store"); a write so refused was never applied.
        assert unknown_committed == 0, report
    assert slowest < 5.0, report  # --store-timeout 1s: nobody waits for the restart
    assert not stale, (report, "key, served, in the table:", stale[:5])
    assert not cold_wrong, (report, "key, read through, in the table:", cold_wrong[:5])
    assert in_table.get("after") == "a"


# --- kill -9 of the server ----------------------------------------------------------------

CRASH_CYCLES = int(os.environ.get("PG_CRASH_CYCLES", "5"))
CRASH_THREADS = 4


def test_kill9_under_write_through_load_loses_no_acknowledged_write(start_server, pg, psql,
                                                                    pg_flags, store_table):
    """Each thread PUTs fresh keys, one request outstanding; at a random moment cache_server is
    killed with SIGKILL. Then every acknowledged key must be in the table (psql) and readable
    through a restarted server (cold cache); a key present but never acknowledged must be a
    thread's write in flight at the kill."""
    rng = random.Random(int(os.environ.get("CRASH_SEED", "20261123")))
    totals = {"acked": 0, "lost": 0, "unacked_present": 0, "never_sent_present": 0}
    for cycle in range(CRASH_CYCLES):
        srv = start_server(*pg_flags, "-t", "2")
        acked, in_flight, sent, bad = [], [], set(), []
        lock = threading.Lock()

        def writer(tid):
            try:
                with srv.connect() as s:
                    rd = Reader(s)
                    for i in range(20000):
                        key = f"k{cycle}-{tid}-{i}"
                        with lock:
                            sent.add(key)
                            in_flight.append(key)
                        s.sendall(request_bytes("PUT", "/key/" + key, body=key.encode()))
                        r = rd.read()
                        with lock:
                            in_flight.remove(key)
                            if r.status == 201:
                                acked.append(key)
                            else:  # PostgreSQL is up all along: nothing else is right
                                bad.append((key, r.status))
            except (OSError, ConnectionError, ValueError, AssertionError):
                pass  # killed: what was sent and unanswered stays in_flight

        threads = [threading.Thread(target=writer, args=(t,), daemon=True)
                   for t in range(CRASH_THREADS)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.2, 0.8))
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(timeout=10)
        for t in threads:
            t.join(20)
            assert not t.is_alive(), "writer hung after the kill"
        srv.stop()
        assert not bad, f"cycle {cycle}: answers other than 201: {bad[:5]}"

        srv = start_server(*pg_flags, "-t", "2")
        rows = table_keys(psql, store_table)
        present = {k for k in rows if k.startswith(f"k{cycle}-")}
        observed = read_all(srv, acked)
        code, _, err = srv.stop()
        assert code == 0, err
        lost = [k for k in acked if k not in present or rows[k] != k or observed[k] != k]
        unacked_present = present - set(acked)
        assert unacked_present <= set(in_flight), (
            f"cycle {cycle}: present, never acknowledged and not in flight: "
            f"{sorted(unacked_present - set(in_flight))[:5]}")
        totals["acked"] += len(acked)
        totals["lost"] += len(lost)
        totals["unacked_present"] += len(unacked_present)
        totals["never_sent_present"] += len(present - sent)
        assert not lost, (f"cycle {cycle}: acknowledged but lost {len(lost)}: {lost[:5]}", totals)
    report = (f"crash test (postgres, through, psql-checked): {CRASH_CYCLES} cycles, "
              f"{totals['acked']} acknowledged writes, acknowledged but lost: {totals['lost']}, "
              f"present but never acknowledged: {totals['unacked_present']}")
    print("\n" + report)
    assert totals["acked"] > 0, report
    assert totals["lost"] == 0 and totals["never_sent_present"] == 0, (report, totals)


# --- libpq's error text -------------------------------------------------------------------

def texts_until(srv, reason, within_s=10):
    """The 503 bodies and /stats store_error that clients see while the store is down, until
    one of them says `reason` (a reconnect attempt failed and was reported) or within_s pass."""
    texts = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for r in (put(srv, "new", b"n"), delete(srv, "cached"), get(srv, "never-written"),
                  reset(srv)):
            assert r.status == 503, r
            texts.append(r.json()["error"])
        texts.append(stats(srv)["store_error"])
        if any(reason in t for t in texts):
            break
        time.sleep(0.1)
    assert any(reason in t for t in texts), (reason, texts)  # the reason stays
    return texts


def test_libpq_error_text_never_reaches_clients(start_server, pg, psql, store_table):
    """Issue 44: libpq's messages name the host, the address, the port, the user and the
    database ('connection to server at "127.0.0.1", port N failed: Connection refused',
    'FATAL: role "u" is not permitted to log in'); none of that may reach a client (503 bodies,
    /stats store_error): the store scrubs them and keeps the reason. The full text goes to
    stderr, for the operator, once. A role and a database of their own, so that their names
    cannot be mistaken for "postgres" in the messages."""
    user, db = "u44_probe_role", "d44_probe_db"
    for sql in (f"DROP DATABASE IF EXISTS {db}", f"DROP ROLE IF EXISTS {user}",
                f"CREATE ROLE {user} LOGIN", f"CREATE DATABASE {db} OWNER {user}"):
        psql(sql)
    conninfo = f"host=127.0.0.1 port={pg.port} dbname={db} user={user}"
    srv = start_server("--store", f"postgres:{conninfo}", "--store-table", store_table,
                       "--store-timeout", STORE_TIMEOUT, "--allow-reset")
    assert put(srv, "cached", b"v").status == 201
    secrets = [str(pg.port), "127.0.0.1", user, db]

    # Stopped: nothing listens.
    pg.stop(mode="immediate")
    wait_for(srv, lambda s: s["store_connected"] is False, 10, "store_connected false")
    texts = texts_until(srv, "Connection refused")
    assert any("connection to the database failed: Connection refused" in t for t in texts), \
        texts
    pg.start()
    wait_for(srv, lambda s: s["store_connected"] is True, RECONNECT_WITHIN_S, "reconnected")

    # Up, but the login is refused: the server's message names the role.
    psql(f"ALTER ROLE {user} NOLOGIN")
    psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{user}'")
    wait_for(srv, lambda s: s["store_connected"] is False, 10, "store_connected false")
    texts += texts_until(srv, "is not permitted to log in")
    psql(f"ALTER ROLE {user} LOGIN")
    wait_for(srv, lambda s: s["store_connected"] is True, RECONNECT_WITHIN_S, "reconnected")

    leaks = [(t, s) for t in texts for s in secrets if s in t]
    assert not leaks, leaks
    code, _, err = srv.stop()
    assert code == 0, err
    # The operator's copy: the full texts, each once (a restart may add one: "the database
    # system is starting up").
    for needle in (f"port {pg.port} failed", f'role "{user}" is not permitted'):
        full = [line for line in err.splitlines() if needle in line]
        assert full and len(full) == len(set(full)), (needle, full, err)
    psql(f"DROP DATABASE IF EXISTS {db}")
    psql(f"DROP ROLE IF EXISTS {user}")
