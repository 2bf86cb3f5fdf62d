"""scripts/bench_store.py (and scripts/bench_store_report.py) end to end, in --quick mode.

A tiny run (0.5 s points at 1 and 8 connections, about 20 s) against a real redis-server and the
built cache_server/bench_client must leave summary.md with every row, numbers that parse, the
ratios computed from them, the GET-hit line and the target lines, and must stop every process it
started. Performance is not checked. Needs redis-server/redis-benchmark (Redis 7) and the
release build (scripts/test.sh builds it; EXPERIMENT_TEST_BUILD overrides the build directory);
skips without them. The usage tests need nothing.
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from bench_checks import (BUILD, CLIENT, SERVER, build_missing, check_get_hit_line, conns_rows,
                          help_text, quick_conns_run, run_module, servers_gone, summary_table,
                          target_results, usage_error)
from md_tables import number, table
from scripts.harness.tables import NONE

SCRIPT = "bench_store"
CONNS = (1, 8)
HEADER = ["conns", "Redis always SET/s", "Redis everysec SET/s", "ours through PUT/s",
          "through÷Redis-always", "commits/s", "writes/commit", "ours behind PUT/s",
          "behind÷none", "none PUT/s", "server CPU% thr/beh/none", "client CPU% thr/beh/none",
          "disk util% thr/beh/none"]


def missing():
    for tool in ("redis-server", "redis-benchmark", "taskset"):
        if not shutil.which(tool):
            return f"{tool} not installed (apt-get install redis-server util-linux)"
    return build_missing(SERVER, CLIENT, ("--store",), "no --store flag")


run = quick_conns_run(SCRIPT, CONNS, 120, missing)


def test_summary_has_every_row_and_the_ratios(run):
    for v in conns_rows(run, HEADER, CONNS):
        for col in HEADER[1:10]:
            assert number(v[col]) > 0, col
        assert number(v["through÷Redis-always"]) == pytest.approx(
            number(v["ours through PUT/s"]) / number(v["Redis always SET/s"]), abs=0.01, rel=0.01)
        assert number(v["behind÷none"]) == pytest.approx(
            number(v["ours behind PUT/s"]) / number(v["none PUT/s"]), abs=0.01, rel=0.01)
        assert number(v["writes/commit"]) >= 1.0  # a group commit carries at least one write
        for col in HEADER[10:12]:
            cpu = [number(x) for x in v[col].split("/")]
            assert len(cpu) == 3 and all(0 <= x <= 250 for x in cpu), col
        util = v["disk util% thr/beh/none"].split("/")
        assert len(util) == 3 and all(x == NONE or number(x) >= 0 for x in util)


def test_get_hit_line_and_targets(run):
    out, _ = run
    md = (out / "summary.md").read_text()
    check_get_hit_line(md, "with store ÷ without", "rocksdb")

    results, counts = target_results(md)
    assert set(results.values()) <= {"PASS", "FAIL", "SKIP"}
    assert results["through >= 1.0x Redis always at 8 conns"] in ("PASS", "FAIL")
    assert results["through >= 1.0x Redis always at 50 conns"] == "SKIP"  # not in --conns
    assert results["through >= 1.0x Redis always at 200 conns"] == "SKIP"
    for c in CONNS:
        assert results[f"behind >= 0.9x none at {c} conns"] in ("PASS", "FAIL")
    assert any(k.startswith("GET hit with store >= 0.97x without") for k in results)
    assert any(k.startswith("through >= 55,900 PUT/s at its best point") for k in results)
    assert re.fullmatch(r"targets: \d+ PASS, \d+ FAIL, 2 SKIP", counts)


def test_detail_table_raw_files_and_cleanup(run):
    md, header, rows = summary_table(run, "| conns | system |")
    out, p = run
    systems = [(int(r[0]), r[1]) for r in rows]
    expected = [(c, s) for c in CONNS for s in ("Redis always", "ours through", "Redis everysec",
                                                  "ours behind", "ours none")]
    expected += [(8, s) for _ in range(3) for s in ("GET none", "GET rocksdb")]
    assert systems == expected
    col = dict((h, i) for i, h in enumerate(header))
    for r in rows:
        assert number(r[col["ops/s"]]) > 0 and number(r[col["errors"]]) == 0
        assert number(r[col["server CPU%"]]) >= 0 and number(r[col["client CPU%"]]) >= 0
    # the raw files behind it, and the measured commands
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["rows"]) == len(CONNS) and len(summary["detail"]) == len(expected)
    assert all(h == 1.0 for h in summary["get"]["hit_rates"])  # get-popular: every GET hits
    points = [json.loads(l) for l in (out / "points.jsonl").read_text().splitlines()]
    assert len(points) == len(expected)
    for pt in points:
        assert (out / pt["raw"]).exists()
    commands = (out / "commands.txt").read_text()
    assert "--appendfsync always" in commands and "--appendfsync everysec" in commands
    assert "--write-mode through" in commands and "--write-mode behind" in commands
    assert "--workload put-all" in commands and "--workload get-popular" in commands
    assert "## How it was measured" in md and "redis-benchmark -h 127.0.0.1" in md
    # every server the script started is gone, and so is its data directory
    # 2 Redis + 3 cache_server for PUT, 2 cache_server for GET
    assert servers_gone(p.stderr, (b"cache_server", b"redis-server")) == 7
    data = re.search(r"data in (\S+) ", p.stderr)[1]
    assert not Path(data).exists()


def test_help_and_bad_usage():
    h = help_text(SCRIPT)
    assert "--duration S" in h and "--quick" in h
    for args, msg in ((["--conns", "1 x"], "--conns"), (["--duration", "abc"], "--duration"),
                      (["--frobnicate"], "unknown argument"), (["--out"], "needs a value"),
                      (["--server-threads", "0"], "--server-threads")):
        assert msg in usage_error(SCRIPT, args)


def write_synthetic_run(d):
    """A bench_store output directory made by hand: one PUT point per configuration at 50
    connections, perf shares for through and behind, no GET points."""
    raw = d / "raw"
    raw.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"conns": [50], "duration_s": 1, "perf": True}))
    (raw / "always.csv").write_text('"test","rps","avg_latency_ms","min_latency_ms",'
                                    '"p50_latency_ms","p95_latency_ms","p99_latency_ms",'
                                    '"max_latency_ms"\n"SET","50000.00","1","0.1","1","2","3","4"\n')
    (raw / "always.time").write_text("1.0 0.2 0.3\n")
    points = [{"part": "put", "system": "redis", "config": "always", "conns": 50, "rep": 1,
               "raw": "raw/always.csv", "wall_s": 1.0, "server_cpu_s": 0.5,
               "client_times": "raw/always.time", "n": 50000}]
    # ours: (config, PUT/s, server CPU%, WriteImpl %, MemTable::Add %)
    for config, ops, cpu, wp, mp in (("through", 40000, 80.0, 25.0, 15.0),
                                     ("behind", 80000, 100.0, 20.0, 16.0),
                                     ("none", 125000, 100.0, None, None)):
        (raw / f"{config}.json").write_text(json.dumps({"points": [{
            "throughput_rps": ops, "server_cpu_pct": cpu, "client_cpu_pct": 50.0, "errors": 0,
            "p50_us": 100, "p99_us": 200, "requests": ops, "duration_s": 1.0}]}))
        rec = {"part": "put", "system": "ours", "config": config, "conns": 50, "threads": 5,
               "per_thread": 10, "rep": 1, "raw": f"raw/{config}.json", "wall_s": 1.0}
        if wp is not None:
            (raw / f"{config}.perf.json").write_text(
                json.dumps({"write_pct": wp, "memtable_pct": mp}))
            rec["perf"] = f"raw/{config}.perf.json"
        points.append(rec)
    (d / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))


def test_perf_cost_table_arithmetic(tmp_path):
    """The --perf section's figures from known inputs (no processes started)."""
    write_synthetic_run(tmp_path)
    p = run_module("bench_store_report", [tmp_path, "--quiet"])
    assert p.returncode == 0, p.stderr
    cost = json.loads((tmp_path / "summary.json").read_text())["cost"]
    assert len(cost) == 1
    c = cost[0]
    none_us = 1.0 / 125000 * 1e6                  # 8.0 µs: 100% of a core / 125k PUT/s
    thr_us, beh_us = 0.8 / 40000 * 1e6, 1.0 / 80000 * 1e6  # 20.0, 12.5
    assert c["none_us"] == pytest.approx(none_us)
    assert c["through"]["us"] == pytest.approx(thr_us)
    assert c["through"]["rocksdb_us"] == pytest.approx(thr_us * 0.25)      # 5.0
    assert c["through"]["memtable_us"] == pytest.approx(thr_us * 0.15)     # 3.0
    assert c["through"]["rest_us"] == pytest.approx(thr_us - none_us - thr_us * 0.25)  # 7.0
    assert c["through_ceiling_ops"] == pytest.approx(1e6 / (none_us + thr_us * 0.25))  # 76,923
    assert c["through_ceiling_vs_redis"] == pytest.approx(1e6 / 13.0 / 50000)
    assert c["behind"]["rocksdb_us"] == pytest.approx(beh_us * 0.20)       # 2.5
    assert c["behind_ceiling"] == pytest.approx(none_us / (none_us + beh_us * 0.20))  # 0.762
    md = (tmp_path / "summary.md").read_text()
    header, rows = table(md, "| conns | none µs/PUT")
    assert rows == [["50", "8.0", "20.0", "5.0", "3.0", "7.0", "76,923", "1.54", "12.5", "2.5",
                     "2.0", "2.0", "0.76"]]


def test_no_perf_section_without_perf(tmp_path):
    write_synthetic_run(tmp_path)
    for f in (tmp_path / "raw").glob("*.perf.json"):
        f.unlink()
    lines = [json.loads(l) for l in (tmp_path / "points.jsonl").read_text().splitlines()]
    for rec in lines:
        rec.pop("perf", None)
    (tmp_path / "points.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    p = run_module("bench_store_report", [tmp_path, "--quiet"])
    assert p.returncode == 0, p.stderr
    assert "Where a PUT's server CPU goes" not in (tmp_path / "summary.md").read_text()
    assert json.loads((tmp_path / "summary.json").read_text())["cost"] == []


def test_perf_run_end_to_end(tmp_path):
    """--perf against the real servers: the cost table is there, its numbers parse, and perf's
    recordings are gone (only their shares are kept)."""
    why = missing()
    if why:
        pytest.skip(why)
    if not shutil.which("perf"):
        pytest.skip("perf not installed (apt-get install linux-perf)")
    out = tmp_path / "out"
    p = run_module(SCRIPT, ["--quick", "--duration", "0.5", "--conns", "8", "--perf",
                            "--build", BUILD, "--out", out], timeout=120)
    if p.returncode == 1 and "perf record -e cpu-clock does not work here" in p.stderr:
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr[-3000:]
    md = (out / "summary.md").read_text()
    header, rows = table(md, "| conns | none µs/PUT")
    assert len(rows) == 1 and rows[0][0] == "8"
    for cell in rows[0]:
        number(cell)
    for config in ("through", "behind"):
        shares = json.loads((out / "raw" / f"{config}-c8.perf.json").read_text())
        assert 0 < shares["memtable_pct"] <= shares["write_pct"] < 100, shares
    assert not list(out.rglob("*.perf.data"))
