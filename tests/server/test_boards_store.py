"""Leaderboards durable through the store (docs/api.md "Boards", docs/server.md "Leaderboards"):
every change is a store row, boards are rebuilt from the rows before the server listens, and
with PostgreSQL `--board-source store` answers the reads with SQL.

Each test that takes `with_store` runs on both backends (`[rocksdb]`, `[postgres]`; conftest.py).
A board's state is compared whole: every entry of every board (rank, member, score) plus its
info, and the arrival order is checked through ties, which only the stored sequence numbers can
rebuild.
"""
import random
import signal
import subprocess
import threading
import time

import pytest

from rawhttp import Reader, exchange, request_bytes


def member_path(board, member, query=""):
    return f"/board/{board}/member/{member}" + (f"?{query}" if query else "")


def put(srv, board, member, score, op=None):
    return exchange(srv, "PUT", member_path(board, member, f"op={op}" if op else ""),
                    body=str(score).encode())


def get(srv, path):
    return exchange(srv, "GET", path)


def stats(srv):
    r = get(srv, "/stats")
    assert r.status == 200
    return r.json()


def snapshot(srv, boards):
    """{board: (info, [(rank, member, score)...])} for every board that exists."""
    out = {}
    for b in boards:
        info = get(srv, f"/board/{b}")
        if info.status == 404:
            continue
        assert info.status == 200, info
        entries = []
        offset = 0
        while True:
            page = get(srv, f"/board/{b}/top?n=1000&offset={offset}")
            assert page.status == 200, page
            doc = page.json()
            entries += [(e["rank"], e["member"], e["score"]) for e in doc["entries"]]
            if len(doc["entries"]) < 1000:
                break
            offset += 1000
        out[b] = (info.json(), entries)
    return out


@pytest.fixture
def with_store(start_server, store_flags):
    """with_store(*flags) starts a server on the test's store (the same one every time)."""
    return lambda *flags: start_server(*store_flags, *flags)


def restart(srv, with_store, *flags):
    code, _, err = srv.stop()
    assert code == 0, err
    return with_store(*flags)


def random_history(srv, boards, rng, n_ops):
    """Random updates with many ties (scores from a small set), best/incr, member and board
    deletes; every answer checked for its status."""
    members = [f"m{i}" for i in range(40)] + ["%00z", "%FFq", "sp%20ace"]
    for _ in range(n_ops):
        b = rng.choice(boards)
        r = rng.random()
        if r < 0.70:
            op = rng.choice([None, None, "best", "incr"])
            score = rng.choice([0, 1, 2, 3, -1, 2.5, 1e300])
            if op == "incr":
                score = rng.choice([0, 1, -1])
            resp = put(srv, b, rng.choice(members), score, op)
            assert resp.status in (200, 201), resp
        elif r < 0.97:
            resp = exchange(srv, "DELETE", member_path(b, rng.choice(members)))
            assert resp.status in (204, 404), resp
        else:
            resp = exchange(srv, "DELETE", f"/board/{b}")
            assert resp.status in (204, 404), resp


BOARDS = ["alpha", "beta", "%00nul", "%FF%FE", "a", "ab"]


# --- restart -------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["through", "behind"])
def test_boards_identical_after_restart(with_store, mode):
    srv = with_store("--write-mode", mode, "-t", "2")
    rng = random.Random(12)
    random_history(srv, BOARDS, rng, 600)
    before = snapshot(srv, BOARDS)
    assert before, "the history left no board: the test would prove nothing"
    srv2 = restart(srv, with_store, "--write-mode", mode)
    assert snapshot(srv2, BOARDS) == before
    line = [x for x in srv2.stdout_lines if x.startswith(b"boards rebuilt from the store: ")]
    members = sum(len(entries) for _, entries in before.values())
    assert line and line[0].startswith(
        f"boards rebuilt from the store: {members} members in {len(before)} boards".encode()), \
        srv2.stdout_lines


def test_arrival_order_continues_after_restart(with_store):
    srv = with_store()
    assert put(srv, "t", "first", 5).status == 201
    assert put(srv, "t", "second", 5).status == 201
    srv2 = restart(srv, with_store)
    # A member reaching the tied score after the restart ranks behind both: the rebuilt board's
    # next arrival number is above every stored one.
    assert put(srv2, "t", "third", 5).json()["rank"] == 3
    assert put(srv2, "t", "first", 5).json()["rank"] == 1  # unchanged: keeps its place
    assert put(srv2, "t", "second", 6).json()["rank"] == 1
    srv3 = restart(srv2, with_store)
    doc = get(srv3, "/board/t/top").json()
    assert [e["member"] for e in doc["entries"]] == ["second", "first", "third"]


def test_deletes_are_durable(with_store):
    srv = with_store()
    for m in ("a", "b", "c"):
        assert put(srv, "keep", m, 1).status == 201
        assert put(srv, "gone", m, 1).status == 201
    assert exchange(srv, "DELETE", member_path("keep", "b")).status == 204
    assert exchange(srv, "DELETE", "/board/gone").status == 204
    assert put(srv, "gone", "z", 9).status == 201  # a new board of the same name, after the drop
    srv2 = restart(srv, with_store)
    assert [e["member"] for e in get(srv2, "/board/keep/top").json()["entries"]] == ["a", "c"]
    assert [e["member"] for e in get(srv2, "/board/gone/top").json()["entries"]] == ["z"]


def test_boards_and_keys_do_not_collide(with_store):
    srv = with_store()
    assert exchange(srv, "PUT", "/key/x", body=b"value").status == 201
    assert put(srv, "x", "m", 1).status == 201
    assert exchange(srv, "DELETE", "/board/x").status == 204
    srv2 = restart(srv, with_store)
    assert get(srv2, "/key/x").body == b"value"
    assert get(srv2, "/board/x").status == 404


def test_reset_empties_the_stored_boards_and_scope_cache_keeps_them(with_store):
    srv = with_store()
    assert put(srv, "b", "m", 1).status == 201
    assert exchange(srv, "POST", "/reset?scope=cache").status == 204
    assert get(srv, "/board/b").status == 200
    srv2 = restart(srv, with_store, "--allow-reset")
    assert get(srv2, "/board/b").status == 200
    assert exchange(srv2, "POST", "/reset").status == 204
    assert get(srv2, "/board/b").status == 404
    assert put(srv2, "after", "m", 1).status == 201  # written after the reset: kept
    srv3 = restart(srv2, with_store)
    assert get(srv3, "/board/b").status == 404
    assert get(srv3, "/board/after").status == 200


def test_write_through_counts_board_rows_as_store_writes(with_store):
    srv = with_store()
    before = stats(srv)["store_writes"]
    for i in range(5):
        assert put(srv, "b", f"m{i}", i).status == 201
    assert stats(srv)["store_writes"] - before == 5


def test_rebuild_beyond_board_maxmem_is_a_clear_startup_error(with_store, server_bin,
                                                              store_flags):
    srv = with_store()
    for i in range(60):
        assert put(srv, "b", f"member-{i:03d}", i).status == 201
    code, _, err = srv.stop()
    assert code == 0, err
    p = subprocess.run([server_bin, "-s", "127.0.0.1", "-p", "0", *store_flags,
                        "--board-maxmem", "2K"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert "raise --board-maxmem" in p.stderr and "listening" not in p.stdout, p


@pytest.mark.rocksdb_only(reason="a failed fsync is RocksDB's fault injection")
def test_failed_commit_answers_503_and_is_not_acknowledged(with_store):
    srv = with_store("--store-faults", "sync-error-after=1")
    assert put(srv, "b", "ok", 1).status == 201
    resp = put(srv, "b", "lost", 2)
    assert resp.status == 503 and "store" in resp.json()["error"], resp
    srv2 = restart(srv, with_store)
    assert [e["member"] for e in get(srv2, "/board/b/top").json()["entries"]] == ["ok"]


def test_write_behind_board_rows_count_against_max_dirty(with_store):
    """Board rows wait in the dirty buffer like keys, under --max-dirty: a change whose row has
    no room is refused with 503 before the board moves, so the buffer never outgrows its bound
    while flushes cannot run (here: not due for a minute)."""
    srv = with_store("--write-mode", "behind", "--flush-interval", "60s", "--max-value", "1K",
                     "--max-dirty", "4K")
    refused = None
    for i in range(400):  # ~45 bytes a row: the bound is passed well before the end
        member = f"member-{i:04d}"
        resp = put(srv, "b", member, i)
        if resp.status == 503:
            refused = member
            break
        assert resp.status == 201, resp
        assert exchange(srv, "DELETE", member_path("b", member)).status == 204
        assert stats(srv)["dirty_bytes"] <= 4096
    assert refused is not None, "400 new rows never filled a 4K dirty buffer"
    assert "dirty buffer full" in resp.json()["error"], resp
    assert stats(srv)["dirty_bytes"] <= 4096
    # Nothing changed: the refused member is not on the board (which then does not exist).
    assert get(srv, member_path("b", refused)).status == 404
    # The flush at SIGTERM makes the acknowledged rows durable; the refused one never was.
    srv = restart(srv, with_store)
    assert get(srv, member_path("b", refused)).status == 404
    assert get(srv, "/board/b").status == 404


@pytest.mark.rocksdb_only(reason="a failed fsync is RocksDB's fault injection")
def test_write_behind_refuses_board_changes_once_the_store_failed(with_store):
    """As key writes: from a failed flush on, a board change answers 503 and the board is left
    as it was (docs/api.md, "Failures of the store")."""
    srv = with_store("--write-mode", "behind", "--flush-interval", "100ms", "--store-faults",
                     "sync-error-after=0")
    assert put(srv, "b", "first", 1).status == 201  # taken; its flush fails
    deadline = time.monotonic() + 10
    while not stats(srv)["store_failed"]:
        assert time.monotonic() < deadline, "store_failed never became true"
        time.sleep(0.02)
    for resp in (put(srv, "b", "second", 2), put(srv, "b", "first", 5),
                 exchange(srv, "DELETE", member_path("b", "first")),
                 exchange(srv, "DELETE", "/board/b")):
        assert resp.status == 503 and "store is failing" in resp.json()["error"], resp
    entries = get(srv, "/board/b/top").json()["entries"]
    assert [(e["member"], e["score"]) for e in entries] == [("first", 1)]
    code, _, err = srv.stop()
    assert code == 1 and "could not be made durable" in err, (code, err)


def test_acknowledged_updates_survive_kill9(with_store):
    """Writers raise their members' scores (each member's scores only grow, one request
    outstanding per writer); kill -9 mid-stream; after the restart every member holds at least
    its last acknowledged score: an acknowledged update was committed."""
    srv = with_store("-t", "2")
    acked = {}  # member -> last acknowledged score
    lock = threading.Lock()
    stop = threading.Event()

    def writer(tid):
        try:
            sock = srv.connect(timeout=10)
        except OSError:
            return
        reader = Reader(sock)
        score = 0
        try:
            while not stop.is_set():
                score += 1
                member = f"w{tid}-{score % 30}"
                sock.sendall(request_bytes("PUT", member_path("crash", member), body=b"%d" % score))
                resp = reader.read()
                assert resp.status in (200, 201), resp
                with lock:
                    acked[member] = score
        except (OSError, ConnectionError, EOFError):
            pass  # the server died under us
        finally:
            sock.close()

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(3)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=10)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    srv.stop()  # reaps the pipes; the exit code is -9
    assert len(acked) >= 30, f"too few acknowledged updates to prove anything: {acked}"
    srv2 = with_store()
    stored = {m: score for _, m, score in snapshot(srv2, ["crash"])["crash"][1]}
    lost = {m: (s, stored.get(m)) for m, s in acked.items() if stored.get(m, -1) < s}
    assert not lost, f"acknowledged but lost (member: acked, stored): {lost}"


# --- --board-source store (PostgreSQL) -----------------------------------------------------------

def test_board_source_store_answers_like_memory(start_server, pg_flags):
    mem = start_server(*pg_flags)
    rng = random.Random(5)
    random_history(mem, BOARDS, rng, 500)
    expected = snapshot(mem, BOARDS)
    assert expected
    paths = ["/board/nope", "/board/nope/top", "/board/nope/member/x", "/board/nope/around/x"]
    for b, (_, entries) in expected.items():
        paths += [f"/board/{b}", f"/board/{b}/top?n=3", f"/board/{b}/top?n=5&offset=2",
                  f"/board/{b}/top?offset=100000", f"/board/{b}/member/absent",
                  f"/board/{b}/around/absent"]
        for _, m, _ in entries[:3] + entries[-2:]:
            quoted = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in m)
            paths += [f"/board/{b}/member/{quoted}", f"/board/{b}/around/{quoted}?n=2",
                      f"/board/{b}/around/{quoted}?n=0"]
    answers = {p: get(mem, p) for p in paths}
    code, _, err = mem.stop()
    assert code == 0, err
    sql = start_server(*pg_flags, "--board-source", "store")
    assert b"board_source=store" in sql.stdout_lines[0]
    for p, want in answers.items():
        got = get(sql, p)
        assert (got.status, got.body) == (want.status, want.body), p
    # Writes go through memory and the store; reads then see them from the database.
    assert put(sql, "alpha", "newcomer", 1e301).status in (200, 201)
    assert get(sql, "/board/alpha/member/newcomer").json()["rank"] == 1


def test_board_source_flag_errors(server_bin, tmp_path, pg_flags):
    cases = [
        (["--board-source", "store"], "--board-source store needs --store postgres"),
        (["--store", f"rocksdb:{tmp_path / 'db'}", "--board-source", "store"],
         "--board-source store needs --store postgres"),
        ([*pg_flags, "--board-source", "store", "--write-mode", "behind"],
         "--board-source store needs --write-mode through"),
        (["--board-source", "disk"], "unknown --board-source 'disk' (want memory or store)"),
        (["--store-board-table", "lb"], "need --store postgres:CONNINFO"),
        ([*pg_flags, "--store-board-table", pg_flags[3]], "must name different tables"),
    ]
    for flags, message in cases:
        p = subprocess.run([server_bin, "-p", "0", *flags], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 1 and message in p.stderr, (flags, p.stderr)


def test_postgres_board_table_has_the_documented_shape(start_server, pg_flags, psql):
    srv = start_server(*pg_flags)
    assert put(srv, "b", "m", 2.5).status == 201
    table = pg_flags[-1]
    cols = psql("SELECT column_name, data_type FROM information_schema.columns "
                f"WHERE table_name = '{table}' ORDER BY ordinal_position")
    assert cols == [["board", "bytea"], ["member", "bytea"], ["score", "double precision"],
                    ["seq", "bigint"]]
    pk = psql(f"SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
              f"AND a.attnum = ANY(i.indkey) WHERE i.indrelid = '\"{table}\"'::regclass "
              "AND i.indisprimary ORDER BY a.attnum")
    assert pk == [["board"], ["member"]]
    rows = psql(f'SELECT encode(board, \'escape\'), encode(member, \'escape\'), score, seq '
                f'FROM "{table}"')
    assert rows == [["b", "m", "2.5", "1"]]


def test_board_source_store_reads_count_in_board_reads(start_server, pg_flags):
    # Every read that found its board counts in board_reads, in /stats and /metrics, whether
    # memory or the database answered it: the same reads make the same count either way.
    reads = ["/board/b/top?n=2", "/board/b/top?offset=50", "/board/b/member/m1",
             "/board/b/member/absent", "/board/b/around/m2?n=1", "/board/b",
             "/board/nope", "/board/nope/top", "/board/nope/member/x", "/board/nope/around/x"]
    counted = {}
    for source in ("memory", "store"):
        srv = start_server(*pg_flags, "--board-source", source)
        if source == "memory":
            for i in range(5):
                assert put(srv, "b", f"m{i}", 10 * i).status in (200, 201)
        before = stats(srv)["board_reads"]
        statuses = [get(srv, p).status for p in reads]
        assert statuses == [200, 200, 200, 404, 200, 200, 404, 404, 404, 404], source
        counted[source] = stats(srv)["board_reads"] - before
        metrics = exchange(srv, "GET", "/metrics").body.decode()
        line = next(l for l in metrics.splitlines()
                    if l.startswith("cache_server_board_reads_total "))
        assert int(float(line.split()[1])) == stats(srv)["board_reads"]
        code, _, err = srv.stop()
        assert code == 0, err
    # Six reads found board b (the absent member's too); the four of "nope" did not.
    assert counted == {"memory": 6, "store": 6}
