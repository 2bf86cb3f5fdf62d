"""bench_client --verify all|N|off against a board server whose answers are wrong (issue 29).

wrong_board_server.py answers GET /board/<b>/top?n=N with a well-framed top-N, except the answers
its --fault picks: a top-N out of order, a wrong rank, or a truncated body (its Content-Length
matching the cut). At the default --verify (the first answer of every connection, then one in 64)
each kind is caught: the point's "mismatch" count equals its "verified" count, the point is
invalid and the exit status is 6. The same run against --fault none passes (exit 0), so the
checks can fail only because of the fault. --verify all checks every answer, off none in full.

BENCH_CLIENT names the client. Each run is bounded: 2 connections, a few hundred requests.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_bench_client_e2e import counts, stand_in  # noqa: E402

BENCH = os.environ.get("BENCH_CLIENT", "")
CONNS, PER_CONN, TOP_N = 2, 150, 10

pytestmark = pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set")


def wrong_board_server(*extra):
    return stand_in("wrong_board_server.py", *extra)


def run_top(server, tmp_path, *extra):
    """board-top against `server`: CONNS connections on one thread, PER_CONN answers each, no
    warm-up (so each connection's first answer is measured). Returns (exit status, point)."""
    out = tmp_path / "r.json"
    r = subprocess.run([BENCH, "-p", str(server.port), "--threads", "1", "--connections-per-thread",
                        str(CONNS), "-n", str(CONNS * PER_CONN), "--warmup", "0", "--workload",
                        "board-top", "--members", "500", "--top-n", str(TOP_N), "--no-preload",
                        "--json", str(out), *map(str, extra)],
                       capture_output=True, text=True, timeout=60)
    assert out.exists(), r.stderr
    return r, json.loads(out.read_text())["points"][0]


def sampled(server, every):
    """Answers checked in full, from the server's count of each connection's answers: on each
    connection the first, then one in `every`."""
    return sum(math.ceil(n / every) for n in counts(server)["per_connection"])


def test_correct_answers_pass_at_the_default_verify(tmp_path):
    srv = wrong_board_server("--fault", "none")
    try:
        r, point = run_top(srv, tmp_path)
        assert r.returncode == 0, r.stderr
        assert point["requests"] == CONNS * PER_CONN and point["errors"] == 0, point
        assert point["verified"] == sampled(srv, 64)
        assert point["valid"] is True and point["invalid_reason"] is None
    finally:
        srv.stop()


@pytest.mark.parametrize("fault", ["order", "rank", "truncated"])
def test_a_wrong_answer_is_caught_at_the_default_verify(tmp_path, fault):
    srv = wrong_board_server("--fault", fault)
    try:
        r, point = run_top(srv, tmp_path)
        assert r.returncode == 6, (r.returncode, r.stderr)
        assert "wrong answers" in r.stderr
        verified = sampled(srv, 64)
        assert point["verified"] == verified
        assert point["errors_by_code"] == {"mismatch": verified}, point["errors_by_code"]
        assert point["valid"] is False and "mismatch" in point["invalid_reason"]
        assert "mismatch=" in r.stdout and "invalid:" in r.stdout
        assert counts(srv)["wrong"] == CONNS * PER_CONN
    finally:
        srv.stop()


def test_the_first_answer_of_every_connection_is_checked(tmp_path):
    """Only each connection's first answer is wrong: the default sampling still catches it, once
    per connection."""
    srv = wrong_board_server("--fault", "rank", "--first-only")
    try:
        r, point = run_top(srv, tmp_path)
        assert r.returncode == 6, r.stderr
        assert counts(srv)["wrong"] == CONNS
        assert point["errors_by_code"] == {"mismatch": CONNS}, point["errors_by_code"]
    finally:
        srv.stop()


def test_verify_all_checks_every_answer_and_n_one_in_n(tmp_path):
    """One answer in 4 of each connection is wrong (its 1st, 5th, ...). --verify all sees all of
    them; --verify 4 checks exactly those; --verify 3 checks the 1st, 4th, 7th, ..., of which the
    1st, 13th, 25th, ... are wrong."""
    for verify, checked_every, wrong_every in (("all", 1, 4), ("4", 4, 4), ("3", 3, 12)):
        srv = wrong_board_server("--fault", "order", "--every", "4")
        try:
            r, point = run_top(srv, tmp_path, "--verify", verify)
            assert r.returncode == 6, r.stderr
            assert point["verified"] == sampled(srv, checked_every), verify
            assert point["errors_by_code"] == {"mismatch": sampled(srv, wrong_every)}, verify
        finally:
            srv.stop()


def test_verify_off_checks_no_body_but_every_status(tmp_path):
    """--verify off: no answer is checked in full, so a well-framed wrong body passes; the status
    and framing of every answer are still checked (the server's 404s for an unknown route would
    count). The meta records the setting."""
    srv = wrong_board_server("--fault", "truncated")
    try:
        r, point = run_top(srv, tmp_path, "--verify", "off")
        assert r.returncode == 0, r.stderr
        assert point["verified"] == 0 and point["errors"] == 0
        doc = json.loads((tmp_path / "r.json").read_text())
        assert doc["meta"]["mode"]["verify"] == "off"
    finally:
        srv.stop()


def test_bad_verify_values_are_refused():
    for bad in ("0", "abc", "-1", "", "1000000001", "ALL"):
        r = subprocess.run([BENCH, "--verify", bad, "-p", "1"], capture_output=True, text=True,
                           timeout=10)
        assert r.returncode == 1, (bad, r.stderr)
        assert "--verify" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    help_text = subprocess.run([BENCH, "--help"], capture_output=True, text=True, timeout=10).stdout
    assert "--verify all|N|off" in help_text and '"verified"' in help_text
