"""scripts/compare_wrk.py: end to end at a tiny size (1 s runs, one round, a 1,000-member board):
the three rows (cache_server's board and 100 KiB value, nginx's 100 bytes) each run wrk and
bench_client once, the median table (a row per answer with its ratio computed from its own
medians, the target, PASS/FAIL, the CPU per response of each client), the nginx p50 line and the
RESULT line print, the exit status is the verdict's (0 or 1; performance is not checked) and every
server is gone afterwards; --rows and --old-bench (A/B) shape the run; --realtime runs SCHED_FIFO
or, where that is not allowed, fails cleanly; a missing tool or binary
and a bad option fail cleanly (exit 2, one line naming it); the verdict's arithmetic from known
runs. Needs nginx, wrk and the release build for the end-to-end runs; skips without them."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from bench_checks import (CLIENT, SERVER, build_missing, help_text, run_module, servers_gone,
                          usage_error)
from md_tables import number, table
from scripts import compare_wrk

SCRIPT = "compare_wrk"
LABELS = {"board": "board top-100 (1,000 members), 50 conns", "big": "100 KiB GET, 16 conns",
          "nginx": "100-byte GET, nginx, 1 conn"}
TARGETS = {"board": ">= 0.9", "big": ">= 0.9", "nginx": ">= 0.95"}
RUN_LINE = re.compile(r"^1\s+(board|big|nginx)\s+(wrk|bench|old)\s+([\d.]+)\s+([\d.]+)\s+"
                      r"([\d.]+|–)\s+([\d.]+)$", re.M)


def needs_tools():
    for tool in ("nginx", "wrk", "taskset"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed (bash scripts/setup.sh --peers)")
    why = build_missing(SERVER, CLIENT, (), "")
    if why:
        pytest.skip(why)


def tiny(args, tmp_path):
    p = run_module(SCRIPT, ["--duration", "1", "--runs", "1", "--members", "1000", "--port", "0",
                            "--bench", CLIENT, "--cache-server", SERVER,
                            "--json", tmp_path / "runs.json", *args], timeout=180)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    assert re.search(r"^RESULT: (PASS|FAIL)$", p.stdout, re.M)
    assert ("RESULT: PASS" in p.stdout) == (p.returncode == 0)
    assert servers_gone(p.stderr, (b"cache_server", b"nginx")) >= 1
    return p, json.loads((tmp_path / "runs.json").read_text())


def check_rows(stdout, rows, clients):
    """Every row ran every client once (req/s > 0), and the median table says so."""
    runs = RUN_LINE.findall(stdout)
    assert sorted((r[0], r[1]) for r in runs) == sorted((r, c) for r in rows for c in clients)
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in runs)
    rps = {(r[0], r[1]): float(r[2]) for r in runs}
    header, cells = table(stdout, "| answer |")
    assert [c[0] for c in cells] == [LABELS[r] for r in rows]
    col = {h: i for i, h in enumerate(header)}
    for row, line in zip(rows, cells):
        wrk, ours = number(line[col["wrk req/s"]]), number(line[col["bench_client req/s"]])
        assert wrk == pytest.approx(rps[row, "wrk"], abs=1)
        assert ours == pytest.approx(rps[row, "bench"], abs=1)
        ratio = float(line[col["÷ wrk"]])
        assert ratio == pytest.approx(ours / wrk, abs=0.001)
        assert line[col["target"]] == TARGETS[row]
        assert line[col["verdict"]] == ("PASS" if ratio >= float(TARGETS[row][3:]) else "FAIL")
        cpu = re.fullmatch(r"([\d.]+) / ([\d.]+)", line[col["CPU µs/response wrk / bench_client"]])
        assert cpu and float(cpu[1]) > 0 and float(cpu[2]) > 0
        assert line[col["bench_client CPU ≤ wrk"]] == ("yes" if float(cpu[2]) <= float(cpu[1])
                                                       else "no")
    return col, cells


def test_all_rows_once(tmp_path):
    needs_tools()
    p, runs = tiny([], tmp_path)
    check_rows(p.stdout, ("board", "big", "nginx"), ("wrk", "bench"))
    assert re.search(r"^nginx p50: wrk [\d.]+ us, bench_client [\d.]+ us, difference [-+][\d.]+% "
                     r"\(target within \+-10%\): (PASS|FAIL)$", p.stdout, re.M)
    assert set(runs) == {"board", "big", "nginx"}
    assert all(len(runs[r]["wrk"]) == len(runs[r]["bench"]) == 1 for r in runs)
    assert all(runs[r]["bench"][0]["verified"] >= 1 for r in ("board", "big"))


def test_one_row_with_an_old_bench_client(tmp_path):
    needs_tools()
    p, runs = tiny(["--rows", "big", "--old-bench", str(CLIENT)], tmp_path)
    col, cells = check_rows(p.stdout, ("big",), ("wrk", "bench", "old"))
    assert number(cells[0][col["old req/s"]]) > 0 and float(cells[0][col["new ÷ old"]]) > 0
    assert "nginx p50" not in p.stdout and set(runs) == {"big"}


def test_realtime_runs_sched_fifo_or_says_why_not(tmp_path):
    needs_tools()
    p = run_module(SCRIPT, ["--duration", "1", "--runs", "1", "--rows", "nginx", "--port", "0",
                            "--bench", CLIENT, "--realtime"], timeout=60)
    allowed = subprocess.run([sys.executable, "-c", "import os; os.sched_setscheduler(0, "
                              "os.SCHED_FIFO, os.sched_param(1))"], capture_output=True)
    if allowed.returncode:  # not allowed here: the script must fail cleanly
        assert p.returncode == 2 and p.stdout == "", p.stderr
        assert "--realtime: cannot use SCHED_FIFO" in p.stderr
        return
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert p.stdout.startswith("# server on CPU") and "SCHED_FIFO (--realtime)" in p.stdout


def test_help_and_usage_errors(tmp_path):
    h = help_text(SCRIPT)
    for flag in ("--rows", "--runs", "--rounds", "--duration", "--members", "--old-bench",
                 "--port", "--bench", "--cache-server", "--server-cpu", "--client-cpu",
                 "--realtime"):
        assert flag in h
    assert "--runs" in usage_error(SCRIPT, ["--runs", "0"])
    assert "--rows" in usage_error(SCRIPT, ["--rows", "board,redis"])
    assert "--duration" in usage_error(SCRIPT, ["--duration", "0.5"])


def missing(args, path=None):
    env = dict(os.environ, PATH=path) if path else None
    p = run_module(SCRIPT, ["--duration", "1", "--runs", "1", *args], timeout=60, env=env)
    assert p.returncode == 2 and p.stdout == "", (args, p.stdout, p.stderr)
    return p.stderr.strip().splitlines()[-1]


def test_a_missing_tool_or_binary_fails_cleanly(tmp_path):
    bench = ["--bench", str(CLIENT)] if CLIENT.exists() else []
    assert "bench_client not found" in missing(["--bench", str(tmp_path / "none")])
    if not bench or not shutil.which("taskset"):
        pytest.skip("needs the release bench_client and taskset")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "taskset").symlink_to(shutil.which("taskset"))
    assert missing(bench, str(bin_dir)).startswith("compare_wrk: wrk not found")
    if shutil.which("wrk"):
        (bin_dir / "wrk").symlink_to(shutil.which("wrk"))
        assert missing(bench, str(bin_dir)).startswith("compare_wrk: nginx not found")
        # The cache_server rows alone do not need nginx.
        line = missing([*bench, "--rows", "board,big", "--cache-server", str(tmp_path / "no")],
                       str(bin_dir))
        assert line.startswith("compare_wrk: cache_server not found"), line


def run_of(rps, cpu=5.0, p50=100.0):
    return {"rps": rps, "cpu_us": cpu, "p50_us": p50, "server_cpu_pct": 50.0}


def test_the_verdict_from_known_runs(capsys):
    mod = compare_wrk
    a = mod.parse_args(["--rows", "board,nginx", "--members", "10"])
    board, nginx = mod.make_rows(a)
    board.runs = {"wrk": [run_of(100), run_of(300), run_of(200)],
                  "bench": [run_of(179, 4), run_of(181, 6), run_of(500, 4)]}
    nginx.runs = {"wrk": [run_of(100)], "bench": [run_of(95, p50=109.0)]}
    assert mod.verdict([board, nginx], False)  # 181 / 200 = 0.905; 0.95; p50 +9%
    out = capsys.readouterr().out
    _, cells = table(out, "| answer |")
    assert cells[0][3:8] == ["0.905", ">= 0.9", "PASS", "5.00 / 4.00", "yes"]
    assert "RESULT: PASS" in out
    board.runs["bench"][1] = run_of(179)  # median 179 / 200 = 0.895
    assert not mod.verdict([board, nginx], False)
    assert "| FAIL |" in capsys.readouterr().out
    board.runs["bench"][1] = run_of(181)
    nginx.runs["bench"] = [run_of(95, p50=89.0)]  # p50 -11%: outside +-10%
    assert not mod.verdict([board, nginx], False)
    assert "difference -11.0% (target within +-10%): FAIL" in capsys.readouterr().out
    nginx.runs["bench"] = [run_of(94, p50=100.0)]  # 0.94 < 0.95
    assert not mod.verdict([board, nginx], False)
