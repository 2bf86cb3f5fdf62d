"""bench_client against hostile servers and hostile conditions (issue 13, client part).

- misbehaving_server.py speaks broken HTTP (chunk sizes near 2^64, repeated Content-Length,
  garbage status lines, a connection closed mid-body, "Connection: closed"/"xclose" that are not
  "close", a stall past --timeout): every broken response is counted by kind, the rest complete,
  the connection is re-opened exactly when it must be, and the run exits 0.
- a server that only ever sends garbage: the run stops with exit 3 and says why.
- the per-second series holds timed-out requests and unsent planned sends, as the headline does.
- Ctrl-C (SIGINT) mid-sweep against the real cache_server: the finished points are written,
  "interrupted": true, exit 3.
- an epoll_pwait2 or recv failure of the client itself (injected with strace) fails the point (exit 3)
  instead of ending it early as a shorter successful run.
- the JSON's git_revision is the revision of the source tree when the program runs.

BENCH_CLIENT names the client; CACHE_SERVER the real server (tests that need it skip without).
Every run is bounded (subprocess timeouts).
"""
import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import misbehaving_server  # noqa: E402  (CYCLE: what each response must turn into)
from test_bench_client_e2e import counts, real_server, run_bench, stand_in  # noqa: E402

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
REPO = HERE.parent.parent

pytestmark = pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set")


def misbehaving(*extra):
    return stand_in("misbehaving_server.py", *extra)


@contextlib.contextmanager
def hostile(tmp_path, mode, *args):
    """bench_client -p PORT --path /x --threads 1 ARGS --json r.json against misbehaving_server.py
    --mode MODE (None: its default), which is stopped when the block ends: (the server, the
    completed process, the JSON)."""
    srv = misbehaving(*(["--mode", mode] if mode else []))
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--path", "/x", "--threads", 1, *args, "--json", out,
                      timeout=60)
        yield srv, r, json.loads(out.read_text()) if out.exists() else None
    finally:
        srv.stop()


def test_broken_http_is_counted_as_parse_errors_and_the_run_exits_normally(tmp_path):
    cycles = 3
    n = cycles * len(misbehaving_server.CYCLE)
    outcome = {k: sum(1 for e in misbehaving_server.CYCLE if e[2] == k) * cycles
               for k in ("ok", "parse", "closed", "timeout")}
    # Every response after which the client must open a new connection.
    reopen = sum(1 for e in misbehaving_server.CYCLE if e[2] != "ok" or e[3]) * cycles
    start = time.monotonic()
    with hostile(tmp_path, None, "-n", n, "--warmup", 0, "--timeout", "300ms") as (srv, r, doc):
        elapsed = time.monotonic() - start
        assert r.returncode == 0, r.stderr
        assert elapsed < 30
        point, meta = doc["points"][0], doc["meta"]
        assert meta["interrupted"] is False and meta["aborted"] is False
        assert point["errors_by_code"] == {"parse": outcome["parse"], "closed": outcome["closed"],
                                           "timeout": outcome["timeout"]}
        assert point["requests"] == outcome["ok"]
        assert point["errors"] == outcome["parse"] + outcome["closed"] + outcome["timeout"]
        assert "parse=" in r.stdout  # the table's "errors by code" note
        time.sleep(0.3)  # let the server's accept loop count the last connection
        c = counts(srv)
        assert c["requests"] == n
        # The probe's connection, the worker's first, one per failure or real "close", and this
        # /_counts query: "Connection: closed" and "Connection: xclose" must not have closed anything.
        assert c["connections"] == 2 + reopen + 1
        # Timed-out requests are in the series as in the headline (recorded at >= --timeout).
        series = point["series"]
        assert sum(s["timed_out"] for s in series) == outcome["timeout"]
        assert sum(s["requests"] for s in series) == point["requests"]
        assert point["max_us"] >= 300_000


def test_a_server_that_only_sends_garbage_aborts_the_run_with_the_reason(tmp_path):
    with hostile(tmp_path, "garbage", "-n", 1000, "--warmup", 0) as (_, r, doc):
        assert r.returncode == 3, r.stderr
        assert "parse" in r.stderr
        assert doc["meta"]["aborted"] is True
        assert doc["points"][0]["aborted"] is True
        assert "parse" in doc["points"][0]["abort_reason"]


def test_series_holds_unsent_planned_sends_and_timeouts_like_the_headline(tmp_path):
    # Open loop at 100 req/s for 2 s; the server answers 50 requests, then never again. The 51st
    # request times out after the window (3 s); the ~149 planned sends behind it never go out.
    with hostile(tmp_path, "stall-after:50", "--rate", 100, "-d", 2, "--warmup", 0, "--timeout",
                 "3000ms") as (_, r, doc):
        assert r.returncode == 0, r.stderr
        point = doc["points"][0]
        assert point["requests"] == 50
        assert point["errors_by_code"] == {"timeout": 1}
        assert point["unsent_planned"] > 100
        series = point["series"]
        assert sum(s["unsent"] for s in series) == point["unsent_planned"]
        assert sum(s["timed_out"] for s in series) == 1
        assert sum(s["requests"] for s in series) == 50
        # The unsent sends sit in the window's last second at their lower bound (up to ~1.5 s),
        # so that second's p99 shows the stall as the headline p99 does.
        last = next(s for s in series if s["unsent"] > 0)
        assert last["t_s"] == 1
        assert last["p99_us"] >= 1_000_000
        assert point["p99_us"] >= 1_000_000
        assert point["latency_above_range"] == 0


def test_sigint_mid_sweep_writes_the_finished_points_and_exits_3(tmp_path):
    if not CACHE_SERVER:
        pytest.skip("CACHE_SERVER not set")
    srv = real_server()
    try:
        out, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
        proc = subprocess.Popen([BENCH, "-p", str(srv.port), "--threads", "1,2,1", "-d", "1.5",
                                 "--warmup", "0", "--keys", "1000", "--json", str(out),
                                 "--csv", str(out_csv)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Wait for the first point's table row, then interrupt the second point.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                assert line, "bench_client ended before its first point"
                if line.split() and line.split()[0] == "1":
                    break
            time.sleep(0.5)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
            stopped_in = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 3, err
        assert stopped_in < 5  # the point in progress stops at once, it does not run out
        assert "interrupted by SIGINT" in err
        doc = json.loads(out.read_text())
        assert doc["meta"]["interrupted"] is True
        assert doc["meta"]["aborted"] is True
        assert "SIGINT" in doc["meta"]["abort_reason"]
        # Exactly the finished point; the interrupted one is not passed off as a result.
        assert [p["threads"] for p in doc["points"]] == [1]
        assert doc["points"][0]["requests"] > 0 and doc["points"][0]["aborted"] is False
        rows = list(csv.DictReader(out_csv.open()))
        assert [r["threads"] for r in rows] == ["1"]
    finally:
        srv.stop()


def _strace_works():
    if not shutil.which("strace"):
        return False
    r = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True, timeout=10)
    return r.returncode == 0


@pytest.mark.parametrize("syscall,errno_name,extra,reason", [
    # Several connections per thread: the thread waits in epoll_pwait2; its 30th call fails.
    ("epoll_pwait2", "ENOMEM", ["--connections-per-thread", "2"], "epoll_wait failed"),
    # One connection: the thread blocks in recv (recvfrom); its 30th call fails.
    ("recvfrom", "ENOBUFS", [], "socket call failed"),
])
def test_a_failing_epoll_wait_or_socket_call_fails_the_point(tmp_path, syscall, errno_name, extra, reason):
    if not CACHE_SERVER:
        pytest.skip("CACHE_SERVER not set")
    if not _strace_works():
        pytest.skip("strace missing or ptrace not permitted")
    srv = real_server()
    try:
        out, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
        # LeakSanitizer cannot run under ptrace (the ASan build); leaks are checked elsewhere.
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
        start = time.monotonic()
        r = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}",
                            "-e", f"inject={syscall}:error={errno_name}:when=30",
                            BENCH, "-p", str(srv.port), "--threads", "1", "-d", "10", "--warmup", "0",
                            "--no-preload", "--workload", "get-popular", *extra,
                            "--json", str(out), "--csv", str(out_csv)],
                           capture_output=True, text=True, timeout=60, env=env)
        elapsed = time.monotonic() - start
        assert r.returncode == 3, r.stderr
        assert elapsed < 8, "the point ran to its end (10 s) instead of failing"
        doc = json.loads(out.read_text())
        point = doc["points"][0]
        assert point["aborted"] is True
        assert reason in point["abort_reason"]
        assert doc["meta"]["aborted"] is True and doc["meta"]["interrupted"] is False
        assert list(csv.DictReader(out_csv.open()))[0]["aborted"] == "1"
    finally:
        srv.stop()


def test_git_revision_is_read_when_the_program_runs(tmp_path):
    with hostile(tmp_path, "stall-after:1000000", "-n", 10, "--warmup", 0) as (_, r, doc):
        assert r.returncode == 0, r.stderr
        revision = doc["meta"]["git_revision"]
        git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        if git.returncode != 0:
            assert revision == "unknown"
        else:
            assert revision == git.stdout.strip()
