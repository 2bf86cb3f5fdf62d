"""scripts/bench_board_source.py end to end in --quick mode, and its usage errors.

The end-to-end run (2,000 members, 1 s points, one round, about 20 s) starts a real PostgreSQL
(scripts/harness/postgres.py) and the built cache_server/bench_client, and must leave summary.md
with a row per read, connection count and --board-source (8), the ratios computed from the
table's own numbers, the rebuild times (the server's own "boards rebuilt" lines), summary.json,
commands.txt, and must stop every process it started. Performance is not checked. PostgreSQL
missing is a skip, as is the build (EXPERIMENT_TEST_BUILD, default build/release) without
--board-source or a second CPU. The usage tests need nothing.
"""
import json
import re
from pathlib import Path

import pytest

from bench_checks import (CLIENT, SERVER, build_missing, help_text, postgres_missing, quick_run,
                          summary_table, usage_error)
from md_tables import number, table
from scripts.harness.procs import parse_listening

SCRIPT = "bench_board_source"
MEMBERS = 2000


def missing():
    """Why the end-to-end run cannot happen here (a skip), or None; PostgreSQL itself missing
    fails unless PG_OPTIONAL=1."""
    return postgres_missing() or build_missing(SERVER, CLIENT, ("--board-source",),
                                               "no --board-source")


def our_processes(out):
    """PIDs of processes still running that the run started (their command lines name its
    temporary directory or its ports)."""
    ports = set()
    for f in (out / "raw").glob("server-*.log"):
        ports |= {str(found[1]).encode() for found in map(parse_listening, f.read_bytes().splitlines())
                  if found}
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        # The temporary directory is bench_board_source.XXXXXXXX (harness.bench.scratch_dir).
        if (re.search(rb"/bench_board_source\.[A-Za-z0-9_]{8}", cmd)
                or any(b"-p " + p + b" " in cmd for p in ports)):
            pids.append(int(d.name))
    return pids


run = quick_run("bench_board_source", ["--quick", "--members", MEMBERS, "--duration", "1"], 300,
                missing)


def test_table_rows_and_ratios(run):
    md, header, rows = summary_table(run, "| read | conns |")
    assert header == ["read", "conns", "--board-source", "req/s", "p50 µs", "p99 µs",
                      "cache_server CPU%", "PostgreSQL CPU%", "cache_server CPU µs/req",
                      "PostgreSQL CPU µs/req", "errors"]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (read, c, src) for read in ("top-100", "rank") for c in ("50", "1")
        for src in ("memory", "store")]
    cells = {(r[0], r[1], r[2]): dict(zip(header, r)) for r in rows}
    for v in cells.values():
        assert number(v["req/s"]) > 0 and number(v["p50 µs"]) > 0
        assert number(v["p99 µs"]) >= number(v["p50 µs"])
        assert number(v["errors"]) == 0
        for col in ("cache_server CPU%", "PostgreSQL CPU%", "cache_server CPU µs/req",
                    "PostgreSQL CPU µs/req"):
            assert number(v[col]) >= 0, col
        assert number(v["PostgreSQL CPU%"]) <= 110  # pinned to one CPU (a little slack)
    # The database does the work of the store reads: its CPU per request is far above memory's.
    for read in ("top-100", "rank"):
        assert (number(cells[(read, "50", "store")]["PostgreSQL CPU µs/req"])
                > number(cells[(read, "50", "memory")]["PostgreSQL CPU µs/req"]))
    m = re.search(r"memory / store: top-100 ([\d,]+)x, rank ([\d,]+)x", md)
    assert m, md
    for read, got in (("top-100", m.group(1)), ("rank", m.group(2))):
        want = (number(cells[(read, "50", "memory")]["req/s"])
                / number(cells[(read, "50", "store")]["req/s"]))
        assert number(got) == pytest.approx(want, rel=0.02, abs=1)


def test_rebuild_times_are_the_servers_lines(run):
    out, _ = run
    md = (out / "summary.md").read_text()
    _, rows = table(md, "| rebuild on restart |")
    assert [r[0] for r in rows] == ["PostgreSQL (two restarts)", "RocksDB"]
    summary = json.loads((out / "summary.json").read_text())
    for name in ("memory", "store", "rocks"):
        line = [l for l in (out / "raw" / f"server-{name}.log").read_text().splitlines()
                if l.startswith("boards rebuilt from the store: ")]
        assert line and line[0].startswith(
            f"boards rebuilt from the store: {MEMBERS} members in 1 boards"), line
    assert len(summary["rebuild_ms"]["postgres"]) == 2 and summary["rebuild_ms"]["rocksdb"] > 0
    assert set(summary["points"]) == {f"{op}-{src}-c{c}" for op in ("top", "rank")
                                      for src in ("memory", "store") for c in (50, 1)}


def test_commands_and_processes(run):
    out, _ = run
    cmds = (out / "commands.txt").read_text()
    for what in ("postgres:", "memory server:", "store server:", "--board-source store",
                 "top store 50 conns:", "rank memory 1 conns:", "rocks server:"):
        assert what in cmds, what
    assert "password" not in cmds
    assert our_processes(out) == []


def test_help():
    h = help_text(SCRIPT)
    for flag in ("--members N", "--conns N", "--duration S", "--repeat N", "--out DIR", "--quick",
                 "--build DIR", "Exit status"):
        assert flag in h, flag


@pytest.mark.parametrize("args, msg", [
    (["--frobnicate"], "unknown argument"),
    (["--members", "0"], "--members"),
    (["--members", "12x"], "--members"),
    (["--conns", "abc"], "--conns"),
    (["--duration", "0.5"], "--duration"),
    (["--repeat", "0"], "--repeat"),
    (["--out"], "needs a value"),
])
def test_bad_usage_exits_2_with_one_line(args, msg):
    assert msg in usage_error(SCRIPT, args)
