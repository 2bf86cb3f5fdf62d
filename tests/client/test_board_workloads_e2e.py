"""End-to-end tests of bench_client's leaderboard workloads against the real cache_server.

board-update, board-top, board-mixed and board-score run short sweeps on 127.0.0.1 (ephemeral
port) and must finish without errors or verification failures; the server must hold what the
client stored; a full board memory budget (507) and a lost preload must show up as errors.
BENCH_CLIENT and CACHE_SERVER name the binaries (CMake sets both).
"""
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from test_bench_client_e2e import Server, run_bench

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")

pytestmark = [
    pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set"),
    pytest.mark.skipif(not CACHE_SERVER or not Path(CACHE_SERVER).exists(),
                       reason="CACHE_SERVER not set (the cache_server target is not built)"),
]

BOARDS, MEMBERS = 3, 4000


def start_server(*extra):
    return Server([CACHE_SERVER, "-p", "0", *extra])


@pytest.fixture
def server():
    srv = start_server()
    yield srv
    srv.stop()


def http(port, method, path, body=None):
    """(status, parsed JSON body or None)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=body.encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, text = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, None


def run_board(port, tmp_path, workload, *extra, threads="1,2", requests=2000):
    out = tmp_path / f"{workload}.json"
    r = run_bench("-p", port, "--threads", threads, "-n", requests, "--warmup", "100",
                  "--workload", workload, "--boards", BOARDS, "--members", MEMBERS, *extra,
                  "--json", out)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r


@pytest.mark.parametrize("workload", ["board-update", "board-top", "board-mixed", "board-score"])
def test_board_workload_runs_clean(server, tmp_path, workload):
    doc, r = run_board(server.port, tmp_path, workload)
    meta = doc["meta"]
    wl = meta["workload"]
    assert wl["name"] == workload
    assert wl["boards"] == BOARDS and wl["members"] == MEMBERS
    assert wl["keys"] == BOARDS * MEMBERS
    assert ("top_n" in wl) == (workload in ("board-top", "board-mixed"))
    if "top_n" in wl:
        assert wl["top_n"] == 100
    assert f"workload \"{workload}\"  boards {BOARDS}  members {MEMBERS}" in r.stdout
    # Reads need every member of every board stored first; updates do not.
    preloaded = workload != "board-update"
    assert meta["preload"]["keys"] == (BOARDS * MEMBERS if preloaded else 0)
    assert meta["preload"]["errors"] == 0
    if preloaded:
        assert f"preload: {BOARDS * MEMBERS} board members ({BOARDS} boards x {MEMBERS})" in r.stderr
    assert [p["threads"] for p in doc["points"]] == [1, 2]
    for point in doc["points"]:
        assert point["errors"] == 0, point["errors_by_code"]
        assert point["errors_by_code"] == {}
        assert point["requests"] == 2000 * point["threads"]
        assert point["deletes"] == 0
        if workload == "board-update":
            assert point["sets"] == point["requests"] and point["gets"] == 0
        elif workload == "board-mixed":
            # Default 90:10:0 = top-N reads : updates.
            assert point["gets"] + point["sets"] == point["requests"]
            assert 0.05 <= point["sets"] / point["requests"] <= 0.15, point
            assert point["hit_rate"] == 1.0
        else:
            assert point["gets"] == point["requests"] and point["sets"] == 0
            assert point["hit_rate"] == 1.0


def test_board_update_stores_members(server, tmp_path):
    run_board(server.port, tmp_path, "board-update", threads="2", requests=3000)
    status, board = http(server.port, "GET", "/board/b0")
    assert status == 200, board
    # 6000 uniform updates over 3 boards x 4000 members: b0 got about 2000, at least hundreds
    # of them distinct.
    assert board["members"] >= 500, board
    status, top = http(server.port, "GET", "/board/b0/top?n=10")
    assert status == 200 and len(top["entries"]) == 10
    assert all(e["member"].startswith("m") and 0 <= int(e["member"][1:]) < MEMBERS
               for e in top["entries"])
    assert all(0 <= e["score"] < 1e9 for e in top["entries"])
    # Only the boards asked for.
    assert http(server.port, "GET", f"/board/b{BOARDS}")[0] == 404


def test_preload_stores_every_member_and_reset_clears_other_boards(server, tmp_path):
    assert http(server.port, "PUT", "/board/other/member/x", "5")[0] == 201
    doc, _ = run_board(server.port, tmp_path, "board-score", threads="1", requests=500)
    assert doc["meta"]["mode"]["reset"] is True
    assert http(server.port, "GET", "/board/other")[0] == 404  # POST /reset removed it
    for b in range(BOARDS):
        status, board = http(server.port, "GET", f"/board/b{b}")
        assert status == 200 and board["members"] == MEMBERS, board
    status, member = http(server.port, "GET", f"/board/b1/member/m{MEMBERS - 1}")
    assert status == 200 and member["member"] == f"m{MEMBERS - 1}"
    # --no-reset keeps other boards.
    assert http(server.port, "PUT", "/board/other/member/x", "5")[0] == 201
    run_board(server.port, tmp_path, "board-top", "--no-reset", threads="1", requests=200)
    assert http(server.port, "GET", "/board/other")[0] == 200


def test_board_mixed_ratio_and_top_n(server, tmp_path):
    doc, _ = run_board(server.port, tmp_path, "board-mixed", "--ratio", "1:3:0", "--top-n", "7",
                       threads="1", requests=4000)
    assert doc["meta"]["workload"]["top_n"] == 7
    assert doc["meta"]["workload"]["ratio"] == {"get": 1, "set": 3, "delete": 0}
    point = doc["points"][0]
    assert point["errors"] == 0, point["errors_by_code"]
    assert 0.70 <= point["sets"] / point["requests"] <= 0.80, point


def test_top_n_larger_than_the_board(server, tmp_path):
    # 5 members per board, 1000 asked: every answer must hold all 5.
    out = tmp_path / "small.json"
    r = run_bench("-p", server.port, "--threads", "1", "-n", "500", "--warmup", "0",
                  "--workload", "board-top", "--boards", "2", "--members", "5", "--top-n", "1000",
                  "--json", out)
    assert r.returncode == 0, r.stderr
    point = json.loads(out.read_text())["points"][0]
    assert point["errors"] == 0 and point["hit_rate"] == 1.0, point["errors_by_code"]


def test_reads_without_preload_are_misses_not_errors(server, tmp_path):
    doc, _ = run_board(server.port, tmp_path, "board-score", "--no-preload", threads="1",
                       requests=300)
    point = doc["points"][0]
    assert doc["meta"]["preload"]["keys"] == 0
    assert point["errors"] == 0 and point["gets"] == 300 and point["hit_rate"] == 0.0


def test_a_full_board_budget_is_counted(tmp_path):
    """--board-maxmem at its minimum: updates answered 507 count as http_507 errors; the
    preload's 507s are preload errors, and top-N reads of the boards it could not fill are
    verification failures (mismatch; --verify all, so each read of a partly filled board is
    checked in full), which make the point invalid (exit 6)."""
    srv = start_server("--board-maxmem", "4096")
    try:
        out = tmp_path / "budget.json"
        r = run_bench("-p", srv.port, "--threads", "1", "-n", "2000", "--warmup", "0",
                      "--workload", "board-update", "--boards", "2", "--members", "20000",
                      "--json", out)
        assert r.returncode == 0, r.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["errors_by_code"].get("http_507", 0) > 1000, point["errors_by_code"]
        assert point["errors"] == point["errors_by_code"]["http_507"]

        r = run_bench("-p", srv.port, "--threads", "1", "-n", "500", "--warmup", "0",
                      "--workload", "board-top", "--boards", "2", "--members", "20000",
                      "--verify", "all", "--json", out)
        assert r.returncode == 6, r.stderr  # wrong answers: the point is invalid
        doc = json.loads(out.read_text())
        assert doc["meta"]["preload"]["errors"] > 0
        point = doc["points"][0]
        assert point["errors_by_code"].get("mismatch", 0) == 500, point["errors_by_code"]
        assert "mismatch=500" in r.stdout
    finally:
        srv.stop()


def test_board_flags_are_refused_where_they_do_not_apply():
    for args, says in ((["--workload", "board-top", "--top-n", "0"], "--top-n"),
                       (["--workload", "board-top", "--boards", "0"], "--boards"),
                       (["--workload", "etc", "--members", "10"], "board workloads only"),
                       (["--workload", "board-mixed", "--ratio", "1:1:1"], "READS:UPDATES:0")):
        r = run_bench(*args)
        assert r.returncode == 1, args
        assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
