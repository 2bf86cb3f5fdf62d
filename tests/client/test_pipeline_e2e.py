"""End-to-end tests of bench_client --pipeline N (requests outstanding per connection).

Against the real cache_server (CACHE_SERVER, set by CMake when the target exists) and the Python
stand-in (fake_cache_server.py). Every run is bounded in requests (-n) or seconds (-d) and by a
subprocess timeout. The server-side request counter (GET /stats "requests") checks that exactly
the requested number went over the wire, and strace (when installed) checks that a pipelined
connection writes its requests in batches rather than one system call per request.
"""
import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from test_bench_client_e2e import BENCH, CACHE_SERVER, fake_server, real_server, run_bench

pytestmark = pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set")
needs_real = pytest.mark.skipif(not CACHE_SERVER, reason="CACHE_SERVER not set")


def server_requests(port):
    """The server's count of answered requests (this GET /stats may or may not count itself)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as r:
        return json.loads(r.read())["requests"]


def requests_sent_by(port, out, *args):
    """Runs bench_client and returns (its result document, requests the server answered for it).
    The /stats requests of the measurement itself are calibrated out with an idle pair."""
    first = server_requests(port)
    idle = server_requests(port) - first
    before = server_requests(port)
    r = run_bench("-p", port, "--json", out, *args)
    assert r.returncode == 0, r.stderr
    after = server_requests(port)
    return json.loads(out.read_text()), after - before - idle


@needs_real
@pytest.mark.parametrize("conns", [1, 3])
def test_pipeline_count_mode_is_exact_clean_and_verified(tmp_path, conns):
    """--pipeline 8 -n N: exactly N requests per thread are answered (no overshoot by the last
    batch: N is not a multiple of 8), none fails, every GET hits and is byte-verified (a mismatch
    would be an error), and every request is in the latency histogram once (the per-second
    series, built from the same recording, sums to the request count)."""
    srv = real_server()
    try:
        threads, n, warmup, keys = 2, 2003, 101, 300
        doc, answered = requests_sent_by(
            srv.port, tmp_path / "r.json", "--threads", threads, "--connections-per-thread", conns, "--pipeline", 8,
            "-n", n, "--warmup", warmup, "--workload", "uniform", "--keys", keys, "--no-reset",
            "--verify", "all")
        point = doc["points"][0]
        assert doc["meta"]["mode"]["pipeline"] == 8
        assert point["requests"] == threads * n
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["gets"] > 0 and point["get_hits"] == point["gets"]  # all verified hits
        assert point["verified"] == point["get_hits"]
        assert point["gets"] + point["sets"] + point["deletes"] == point["requests"]
        assert sum(s["requests"] for s in point["series"]) == point["requests"]
        # The server saw the probe, the preload, the warm-up and the measured requests: no more.
        assert answered == 1 + keys + threads * warmup + threads * n
    finally:
        srv.stop()


@needs_real
def test_pipeline_duration_mode_drains_and_counts_honestly(tmp_path):
    srv = real_server()
    try:
        doc, answered = requests_sent_by(srv.port, tmp_path / "r.json", "--threads", 2, "--pipeline", 16, "-d", 1.5,
                                         "--warmup", "0", "--workload", "get-popular", "--no-reset")
        point = doc["points"][0]
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["hit_rate"] == 1.0
        # The window ends at the last (drained) response; nothing outstanding is left behind.
        assert 1.5 <= point["duration_s"] < 2.5
        assert point["throughput_rps"] == pytest.approx(point["requests"] / point["duration_s"], rel=0.01)
        assert sum(s["requests"] for s in point["series"]) == point["requests"]
        hot_keys = doc["meta"]["workload"]["hot_keys"]
        assert answered == 1 + hot_keys + point["requests"]
    finally:
        srv.stop()


@needs_real
def test_pipeline_large_values_do_not_deadlock(tmp_path):
    """Batches of large PUTs and GETs: the server stops reading while its responses are unread,
    so a client that only wrote would block until the send timeout. The client must keep
    reading while it writes."""
    srv = real_server()
    try:
        doc, _ = requests_sent_by(srv.port, tmp_path / "r.json", "--threads", 1, "--pipeline", 64, "-n", 256, "--warmup", 0,
                                  "--workload", "mixed", "--ratio", "1:1:0", "--keys", 24,
                                  "--value-size", 262144, "--timeout", 3000, "--no-reset")
        point = doc["points"][0]
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["requests"] == 256
        assert point["max_us"] < 2_000_000, point["max_us"]
    finally:
        srv.stop()


def test_server_closing_with_requests_outstanding_is_counted_not_hung(tmp_path):
    """The stand-in closes every connection after 50 answers, with up to 7 more requests already
    sent: those are lost, counted as connection errors, and the connection is re-opened."""
    srv = fake_server("--close-after", "50")
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--threads", 1, "--pipeline", 8, "-n", 400, "--warmup", 0,
                      "--workload", "get-popular", "--no-preload", "--timeout", 2000, "--json", out,
                      timeout=60)
        assert r.returncode == 0, r.stderr
        point = json.loads(out.read_text())["points"][0]
        codes = point["errors_by_code"]
        assert point["errors"] > 0 and set(codes) <= {"closed", "io_error"}, codes
        assert point["requests"] < 400
        # Every request issued either completed or was counted as lost, once; a batch whose write
        # failed is issued all the same (not sent again), so exactly -n requests are accounted for.
        assert point["requests"] + point["errors"] == 400
    finally:
        srv.stop()


# Large PUTs against a stand-in with a small receive buffer: a batch of them cannot be written
# while the server is not reading, so the client's write blocks and it reads responses meanwhile.
BIG_PUTS = ("--threads", 1, "--warmup", 0, "--workload", "put-all", "--value-size", 8 << 20, "--no-preload",
            "--no-reset")


def test_answer_read_while_a_write_is_blocked_counts_when_the_server_then_closes(tmp_path):
    """The stand-in reads the first 8 MB PUT of a batch of 4, answers it and closes the connection
    while the client is still writing the batch. The answer, read while the write was blocked, is
    a completed request (with its latency); only the 3 requests behind it are lost. The failed
    batch is not sent again (-n 4 was issued): the server saw one PUT, not a retry of the batch."""
    srv = fake_server("--close-after", "1", "--rcvbuf", "65536")
    try:
        doc, answered = requests_sent_by(srv.port, tmp_path / "r.json", "--pipeline", 4, "-n", 4, "--timeout", 3000,
                                         *BIG_PUTS)
        point = doc["points"][0]
        codes = point["errors_by_code"]
        assert point["requests"] == 1, codes
        assert point["errors"] == 3 and set(codes) <= {"closed", "io_error"}, codes
        assert point["sets"] == 1
        assert answered == 1 + 1  # the /stats probe and the one PUT
    finally:
        srv.stop()


def test_answer_read_while_a_write_times_out_counts_and_the_batch_is_recorded(tmp_path):
    """The stand-in answers the first PUT of a batch of 4, then stops reading for 4 s: the client's
    write times out (--timeout 1000). The answer is a completed request; the 3 others are
    `timeout` errors, each recorded in the histogram at the time it waited (>= the timeout), as
    every timed-out request is: so the median of the 4 recorded latencies is at least 1 s."""
    srv = fake_server("--stall-after", "1", "--stall-ms", "4000", "--rcvbuf", "65536")
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--pipeline", 4, "-n", 4, "--timeout", 1000, "--json", out, *BIG_PUTS,
                      timeout=60)
        assert r.returncode == 0, r.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["requests"] == 1, point["errors_by_code"]
        assert point["errors_by_code"] == {"timeout": 3}
        assert point["p50_us"] >= 1_000_000, point
        assert point["min_us"] < 1_000_000, point
    finally:
        srv.stop()


def test_responses_read_during_a_blocked_write_are_parsed_when_it_returns(tmp_path):
    """Two connections, 2 large PUTs each. On each, the stand-in answers the first PUT at once,
    stops reading for 0.3 s (the client's write blocks; it reads that answer meanwhile), then
    answers the second PUT 2 s after reading it. The first answers must be parsed when the write
    returns (latency about 0.3 s), not when the socket next becomes readable with the second
    answer (about 2.3 s later): latency ends at the parsed response."""
    srv = fake_server("--stall-after", "1", "--stall-ms", "300", "--delay-ms", "2000", "--rcvbuf", "65536")
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--connections-per-thread", 2, "--pipeline", 2, "-n", 4, "--timeout", 5000,
                      "--json", out, *BIG_PUTS, timeout=60)
        assert r.returncode == 0, r.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["requests"] == 4 and point["errors"] == 0, point["errors_by_code"]
        assert point["min_us"] < 1_200_000, point
        assert point["max_us"] >= 2_000_000, point  # the second answers did wait 2 s
    finally:
        srv.stop()


def test_pipeline_still_verifies_every_get_hit(tmp_path):
    """The stand-in flips a byte in every 10th GET hit: pipelined responses are still checked
    (--verify all); a wrong answer makes the point invalid and the exit status 6."""
    srv = fake_server("--corrupt", "10")
    try:
        out = tmp_path / "r.json"
        r = run_bench("-p", srv.port, "--threads", 1, "--pipeline", 8, "-n", 1000, "--warmup", 0,
                      "--keys", 300, "--workload", "uniform", "--verify", "all", "--json", out)
        assert r.returncode == 6, r.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["requests"] == 1000
        assert point["verified"] == point["get_hits"] and point["valid"] is False
        assert point["errors_by_code"].get("mismatch", 0) > 50
        assert point["errors"] == point["errors_by_code"]["mismatch"]
    finally:
        srv.stop()


def test_pipeline_flag_is_documented_and_validated():
    assert "--pipeline N" in run_bench("--help").stdout
    for bad in ("0", "1025", "x", "-1", "8.5", ""):
        r = run_bench("--pipeline", bad, "-p", "1")
        assert r.returncode == 1, (bad, r.stderr)
        assert "--pipeline" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run_bench("--pipeline")
    assert r.returncode == 1 and "--pipeline needs" in r.stderr


@needs_real
def test_open_loop_at_depth_8_keeps_its_rate_and_counts_exactly(tmp_path):
    """--rate with --pipeline 8 against the real server: the planned rate is achieved (a valid
    point), every request is answered, counted once and timed from its planned send."""
    srv = real_server()
    try:
        doc, answered = requests_sent_by(srv.port, tmp_path / "r.json", "--threads", 1,
                                         "--pipeline", 8, "--rate", 4000, "-d", 1, "--warmup", 0,
                                         "--workload", "get-popular", "--no-reset")
        point = doc["points"][0]
        assert doc["meta"]["mode"]["pipeline"] == 8 and point["open_loop"] is True
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["valid"] is True, point["invalid_reason"]
        assert point["throughput_rps"] == pytest.approx(4000, rel=0.01)
        assert sum(s["requests"] for s in point["series"]) == point["requests"]
        # corrected latency (from the planned time) is never below the uncorrected one
        assert point["p99_us"] >= point["uncorrected"]["p99_us"]
        assert answered >= point["requests"]
    finally:
        srv.stop()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
@pytest.mark.parametrize("depth", [1, 8])
def test_open_loop_sends_what_is_due_in_one_write_up_to_the_depth(tmp_path, depth):
    """Open loop (--rate 2000, -n 600) against the stand-in, which stops reading for 0.4 s after
    its first answer: the sends due meanwhile pile up. At depth 1 each goes out alone (600
    writes); at depth 8 the backlog goes out 8 per write (far fewer writes), and the stall shows
    in the latency measured from the planned times."""
    srv = fake_server("--stall-after", "1", "--stall-ms", "400")
    try:
        log, out = tmp_path / "strace.log", tmp_path / "r.json"
        n = 600
        sends = sends_traced(log, "-p", str(srv.port), "--threads", "1", "--pipeline", str(depth),
                             "--rate", "2000", "-n", str(n), "--warmup", "0", "--path", "/missing",
                             "--json", str(out))
        point = json.loads(out.read_text())["points"][0]
        assert point["requests"] == n  # each answered (a 404: /missing)
        assert point["max_us"] >= 300_000, point  # the stall, seen from the planned times
        assert sends == n if depth == 1 else sends <= n // 3, sends
    finally:
        srv.stop()


def sends_traced(strace_log, *args):
    """Runs bench_client with args under strace, logging its sendto calls to strace_log, and
    returns how many it made besides the /stats probe (skips the test where ptrace is not
    allowed)."""
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=sendto", "-o", str(strace_log), BENCH,
                        *args],
                       capture_output=True, text=True, timeout=120,
                       # LeakSanitizer cannot run under ptrace; the rest of ASan can.
                       env={**os.environ,
                            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"})
    if r.returncode != 0 and "ptrace" in r.stderr:
        pytest.skip(f"strace cannot trace here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    return count_sendto(strace_log) - 1  # the /stats probe


def count_sendto(strace_log):
    return sum(1 for line in Path(strace_log).read_text().splitlines() if re.match(r"\d+\s+sendto\(", line))


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
@pytest.mark.parametrize("depth", [1, 8])
def test_pipeline_writes_batches_not_one_syscall_per_request(tmp_path, depth):
    """Counts bench_client's send system calls with strace against the stand-in server, which
    answers a batch of pipelined requests with one write: at depth 8 the 800 measured requests
    must take far fewer than 800 writes (one per batch: about 100). Depth 1 is the control.
    fixed-get: no reset and no preload, so the only other send is the /stats probe."""
    srv = fake_server()
    try:
        log = tmp_path / "strace.log"
        n = 800
        sends = sends_traced(log, "-p", str(srv.port), "--threads", "1", "--pipeline", str(depth),
                             "-n", str(n), "--warmup", "0", "--path", "/missing")
        assert sends == n if depth == 1 else sends <= n // 4, sends
    finally:
        srv.stop()
