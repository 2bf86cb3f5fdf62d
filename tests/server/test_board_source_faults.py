"""Board reads from the store (`--board-source store`) when PostgreSQL hangs (docs/api.md,
"Failures of the store"): a board read answers `503 "store timeout: ..."` after
--store-timeout, as a key read does, so the connection's later (pipelined) requests are
answered; board reads waiting on the store past --max-inflight answer `503 "store read backlog
full"` at once; once PostgreSQL answers again, board reads are served again.

PostgreSQL "hangs" by SIGSTOP of the postmaster and every backend (PgCluster.hung(): a server
that accepts connections and answers nothing, as a hung one or a partition would), always
continued by SIGCONT when the block ends. Every socket has a timeout, so a read that never
answers fails the test instead of hanging it.
"""
import time

import pytest

from rawhttp import Reader, exchange, request_bytes

STORE_TIMEOUT = "500ms"
ANSWER_WITHIN_S = 3.0     # a 503 at a 500ms --store-timeout: well under this
RECOVER_WITHIN_S = 20.0   # after SIGCONT (the store's reconnect backoff tops out at 2 s)
SOCKET_TIMEOUT_S = 10.0   # no answer within this: the read hangs (the defect)
MEMBERS = 5


def board_server(start_server, pg_flags, *flags):
    """A write-through server reading its boards from PostgreSQL, with board b (members m0..m4,
    m4 ranked first) and a cached key `hit`."""
    srv = start_server(*pg_flags, "--board-source", "store", *flags)
    for i in range(MEMBERS):
        r = exchange(srv, "PUT", f"/board/b/member/m{i}", body=str(10 * i).encode())
        assert r.status == 201, r
    assert exchange(srv, "PUT", "/key/hit", body=b"v").status == 201
    assert exchange(srv, "GET", "/key/hit").status == 200
    return srv


def pipelined(srv, paths, timeout=SOCKET_TIMEOUT_S):
    """GETs of paths sent at once on one connection; their responses in order, and the seconds
    until the last one arrived."""
    with srv.connect(timeout=timeout) as s:
        t0 = time.monotonic()
        s.sendall(b"".join(request_bytes("GET", p) for p in paths))
        rd = Reader(s)
        out = [rd.read() for _ in paths]
        return out, time.monotonic() - t0


def error_of(r):
    assert r.headers["content-type"] == "application/json", r
    return r.json()["error"]


def wait_board_reads_served(srv, want_top):
    """Polls the top page until the store answers it again (after SIGCONT)."""
    deadline = time.monotonic() + RECOVER_WITHIN_S
    while True:
        r = exchange(srv, "GET", "/board/b/top?n=10")
        if r.status == 200:
            assert r.json() == want_top, r
            return
        assert r.status == 503, r
        assert time.monotonic() < deadline, f"board reads still refused after SIGCONT: {r}"
        time.sleep(0.2)


def test_board_read_from_hung_store_answers_503_within_store_timeout(start_server, pg,
                                                                     pg_flags):
    srv = board_server(start_server, pg_flags, "--store-timeout", STORE_TIMEOUT)
    top = exchange(srv, "GET", "/board/b/top?n=10")
    assert top.status == 200, top
    want_top = top.json()
    paths = ["/board/b/top?n=10", "/board/b/member/m1", "/key/hit", "/board/b/around/m2?n=1",
             "/board/b", "/stats"]
    with pg.hung():
        answers, elapsed = pipelined(srv, paths)
        statuses = [r.status for r in answers]
        assert statuses == [503, 503, 200, 503, 503, 200], (statuses, answers)
        for r in (answers[0], answers[1], answers[3], answers[4]):
            assert error_of(r).startswith("store timeout: "), r
            assert STORE_TIMEOUT in error_of(r), r
        assert answers[2].body == b"v", answers[2]
        assert elapsed < ANSWER_WITHIN_S, (
            f"board reads took {elapsed:.2f}s to answer with --store-timeout {STORE_TIMEOUT}")
        # A read on a fresh connection while it still hangs: the same 503, in bounded time.
        (r,), elapsed = pipelined(srv, ["/board/b/member/m3"])
        assert r.status == 503 and error_of(r).startswith("store timeout: "), r
        assert elapsed < ANSWER_WITHIN_S, elapsed
    wait_board_reads_served(srv, want_top)
    r = exchange(srv, "GET", "/board/b/member/m4")
    assert r.status == 200 and r.json() == {"member": "m4", "score": 40, "rank": 1}, r


def test_board_reads_waiting_on_hung_store_are_bounded_by_max_inflight(start_server, pg,
                                                                        pg_flags):
    # A long timeout, so the reads that fill the backlog are still waiting when the probe comes;
    # a small --max-inflight (it must hold --max-value), so a few connections fill it.
    timeout_s = 5
    srv = board_server(start_server, pg_flags, "--store-timeout", f"{timeout_s}s",
                       "--max-value", "1K", "--max-inflight", "8K")
    want_top = exchange(srv, "GET", "/board/b/top?n=10").json()
    # 3 connections x 60 pipelined reads (a connection queues at most 64 responses that wait):
    # more than 8K of reads at any plausible cost per read (each counts its names and more).
    fill_paths = [f"/board/b/member/m{i % MEMBERS}" for i in range(60)]
    with pg.hung():
        fills = [srv.connect(timeout=timeout_s + SOCKET_TIMEOUT_S) for _ in range(3)]
        try:
            for s in fills:
                s.sendall(b"".join(request_bytes("GET", p) for p in fill_paths))
            time.sleep(0.5)  # the server has read them (it reads a connection as bytes arrive)
            # A read past the bound answers at once, long before the timeout could have.
            (r,), elapsed = pipelined(srv, ["/board/b/top"])
            assert r.status == 503, r
            assert error_of(r).startswith("store read backlog full: "), r
            assert "--max-inflight 8192" in error_of(r), r
            assert elapsed < timeout_s / 2, f"the backlog's 503 took {elapsed:.2f}s"
            # The filling reads: every one a 503, the first ones at the timeout, those past the
            # bound as the backlog's (answered in request order behind them).
            kinds = {"store timeout: ": 0, "store read backlog full: ": 0}
            for s in fills:
                rd = Reader(s)
                for _ in fill_paths:
                    r = rd.read()
                    assert r.status == 503, r
                    kind = next((k for k in kinds if error_of(r).startswith(k)), None)
                    assert kind is not None, r
                    kinds[kind] += 1
            assert all(kinds.values()), kinds
        finally:
            for s in fills:
                s.close()
    wait_board_reads_served(srv, want_top)
