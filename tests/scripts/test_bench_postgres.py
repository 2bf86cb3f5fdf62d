"""scripts/bench_postgres.py (and scripts/bench_postgres_report.py) end to end in --quick mode,
and the report's arithmetic from known inputs.

The end-to-end run (0.5 s points at 1 and 4 connections, 2,000 keys, about 30 s) starts a
throwaway PostgreSQL (scripts/harness/postgres.py) and the built cache_server/bench_client, and
must leave summary.md with every row, numbers that parse and are positive, the ratios computed
from the table's own numbers, the GET-hit line, the cold read of every key, the targets, the disk
named, and must stop every process it started. Performance is not checked. PostgreSQL missing is
a failure unless PG_OPTIONAL=1 (then a skip); the build (EXPERIMENT_TEST_BUILD, default
build/release) without the PostgreSQL store, wrk or a second CPU is a skip. The unit tests (the
%util and CPU arithmetic, the report from a hand-made run) need nothing.
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from bench_checks import (CLIENT, SERVER, build_missing, check_get_hit_line, conns_rows,
                          help_text, postgres_missing, quick_conns_run, run_module, servers_gone,
                          summary_table, target_results, usage_error)
from md_tables import number, table
from scripts import bench_postgres_report as report
from scripts.harness import resources  # the /proc and diskstats arithmetic the report uses

SCRIPT = "bench_postgres"
CONNS = (1, 4)
KEYS = 2000  # --quick's default
HEADER = ["conns", "ours postgres PUT/s", "pgbench tps", "ours÷pgbench", "ours rocksdb PUT/s",
          "p50/p99 postgres", "p50/p99 pgbench", "p50/p99 rocksdb", "PG CPU% ours/pgbench",
          "srv CPU% postgres/rocksdb", "client CPU% pg/pgbench/rocks",
          "disk util% pg/pgbench/rocks", "server-core µs/req pg/pgbench/rocks", "commits/s",
          "writes/commit"]


def missing():
    """Why the end-to-end run cannot happen here (a skip), or None; PostgreSQL itself missing
    fails unless PG_OPTIONAL=1."""
    why = postgres_missing()
    if why:
        return why
    for tool in ("wrk", "curl", "taskset"):
        if not shutil.which(tool):
            return f"{tool} not installed (apt-get install wrk curl util-linux)"
    return build_missing(SERVER, CLIENT, ("--store-timeout", "postgres:"), "no PostgreSQL store")


# --- end to end ----------------------------------------------------------------------------------

run = quick_conns_run(SCRIPT, CONNS, 240, missing)


def test_put_table_rows_and_ratios(run):
    rows = conns_rows(run, HEADER, CONNS)
    for v in rows:
        for col in ("ours postgres PUT/s", "pgbench tps", "ours rocksdb PUT/s", "commits/s"):
            assert number(v[col]) > 0, col
        # the ratio of the unrounded figures: within what the shown (whole) numbers allow
        ours, tps = number(v["ours postgres PUT/s"]), number(v["pgbench tps"])
        assert (ours - 0.5) / (tps + 0.5) - 0.01 <= number(v["ours÷pgbench"]) \
            <= (ours + 0.5) / max(tps - 0.5, 1e-9) + 0.01
        for col in ("p50/p99 postgres", "p50/p99 pgbench", "p50/p99 rocksdb"):
            p50, p99 = (number(x) for x in v[col].split("/"))
            assert 0 < p50 <= p99, col
        pg_ours, pg_pgbench = (number(x) for x in v["PG CPU% ours/pgbench"].split("/"))
        assert pg_ours > 0 and pg_pgbench > 0  # PostgreSQL worked in both
        for col in ("PG CPU% ours/pgbench", "srv CPU% postgres/rocksdb",
                    "client CPU% pg/pgbench/rocks"):
            assert all(0 <= number(x) <= 250 for x in v[col].split("/")), col
        # server-core CPU per request = (PG CPU% + srv CPU%) / 100 / ops/s, from the table
        us = [number(x) for x in v["server-core µs/req pg/pgbench/rocks"].split("/")]
        pg_cpu = [number(x) for x in v["PG CPU% ours/pgbench"].split("/")]
        srv_cpu = [number(x) for x in v["srv CPU% postgres/rocksdb"].split("/")]
        # The CPU% cells are rounded to whole percents: at a low rate (a loaded machine) half a
        # percent is many µs per request, so the tolerance is what that rounding allows.
        def rounding(ops, terms):
            return terms * 0.5 / 100 / ops * 1e6 + 0.5
        tps, puts = number(v["pgbench tps"]), number(v["ours postgres PUT/s"])
        assert us[1] == pytest.approx(pg_cpu[1] / 100 / tps * 1e6, rel=0.05,
                                      abs=rounding(tps, 1))
        assert us[0] == pytest.approx((pg_cpu[0] + srv_cpu[0]) / 100 / puts * 1e6, rel=0.05,
                                      abs=rounding(puts, 2))
        util = [number(x) for x in v["disk util% pg/pgbench/rocks"].split("/")]
        assert len(util) == 3 and all(0 <= x <= 100 for x in util)
        assert number(v["writes/commit"]) >= 1.0  # a commit carries at least one write
    assert rows[0]["conns"] == "1" and number(rows[0]["writes/commit"]) == \
        pytest.approx(1.0, abs=0.05)  # one connection: nothing to group


def test_summary_json_matches_the_table(run):
    out, _ = run
    s = json.loads((out / "summary.json").read_text())
    assert [r["conns"] for r in s["rows"]] == list(CONNS)
    for r in s["rows"]:
        assert r["postgres_vs_pgbench"] == pytest.approx(r["postgres"] / r["pgbench"])
        for k in ("postgres", "pgbench", "rocksdb"):
            assert r[k] > 0 and r["runs"][k] == [r[k]]  # one repeat: the median is the run
    assert s["meta"]["disk"] and re.search(rf"device \*\*{re.escape(s['meta']['disk'])}\*\*",
                                           (out / "summary.md").read_text())
    assert s["meta"]["pg_settings"]["fsync"] == "on"
    assert s["meta"]["pg_settings"]["synchronous_commit"] == "on"
    assert int(s["meta"]["pg_settings"]["max_connections"]) >= max(CONNS)
    # PostgreSQL's CPU is only PostgreSQL's: the RocksDB points leave it near idle
    rocks = [f for f in s["detail"] if f["part"] == "put" and f["config"] == "rocksdb"]
    ours_pg = [f for f in s["detail"] if f["part"] == "put" and f["config"] == "postgres"]
    assert len(rocks) == len(ours_pg) == len(CONNS)
    assert sum(f["pg_cpu"] for f in rocks) < sum(f["pg_cpu"] for f in ours_pg)


def test_get_hit_line(run):
    out, _ = run
    md = (out / "summary.md").read_text()
    check_get_hit_line(md, "postgres ÷ none", "postgres")
    s = json.loads((out / "summary.json").read_text())
    assert all(h == 1.0 for h in s["get"]["hit_rates"])  # get-popular: every GET hits
    assert s["get"]["store_reads"] == 0                   # ... so PostgreSQL is never read


def test_cold_read_of_every_key(run):
    out, _ = run
    md = (out / "summary.md").read_text()
    header, rows = table(md, "| phase | conns | keys/s")
    assert [r[0] for r in rows] == ["load (PUT)", "cold read (GET)"]
    col = {h: i for i, h in enumerate(header)}
    for r in rows:
        assert number(r[col["keys/s"]]) > 0
        assert number(r[col["keys ok"]]) == KEYS and number(r[col["errors"]]) == 0
        assert number(r[col["p50 µs"]]) <= number(r[col["p99 µs"]])
    read = rows[1]
    # every key missed the cache and came from PostgreSQL (a few extra requests of key 0 at the
    # end may hit)
    assert number(read[col["store reads"]]) >= KEYS
    assert number(read[col["read-through fills"]]) == KEYS
    assert number(read[col["cache hits"]]) < number(read[col["conns"]])
    s = json.loads((out / "summary.json").read_text())
    r = s["cold"]["read"]
    assert r["ops"] == pytest.approx(KEYS / r["span_s"])


def test_targets(run):
    out, _ = run
    md = (out / "summary.md").read_text()
    results, counts = target_results(md)
    assert results["write-through >= 4x pgbench per-request-commit tps at 64 conns"] == "SKIP"
    best = next(k for k in results if k.startswith("write-through >= 28,000 PUT/s"))
    assert results[best] in ("PASS", "MISS")
    assert any(k.startswith("GET hit with postgres behind >= 0.97x") for k in results)
    assert re.fullmatch(r"targets: \d+ PASS, \d+ MISS, 1 SKIP", counts)


def test_detail_raw_files_commands_and_cleanup(run):
    md, header, rows = summary_table(run, "| part | conns | system |")
    out, p = run
    got = [(r[0], int(r[1]), r[2]) for r in rows]
    expected = [("put", c, s) for c in CONNS for s in ("ours postgres", "pgbench", "ours rocksdb")]
    expected += [("get", 8, s) for s in ("ours none", "ours postgres", "ours postgres",
                                         "ours none", "ours none", "ours postgres")]
    expected += [("cold-load", max(CONNS), "ours postgres"), ("cold-read", 16, "ours postgres")]
    assert got == expected
    col = {h: i for i, h in enumerate(header)}
    for r in rows:
        assert number(r[col["ops/s"]]) > 0 and number(r[col["errors"]]) == 0
        assert 0 <= number(r[col["disk util%"]]) <= 100
        assert number(r[col["PG CPU%"]]) >= 0 and number(r[col["client CPU%"]]) >= 0
    points = [json.loads(l) for l in (out / "points.jsonl").read_text().splitlines()]
    assert len(points) == len(expected)
    for pt in points:
        assert (out / pt["raw"]).exists()
        assert pt["disk"] and pt["diskstats_before"].split()[2] == pt["disk"]
    commands = (out / "commands.txt").read_text()
    assert "harness.postgres.pinned_cluster(cpu=0, max_connections=" in commands
    assert '--store postgres:"$PG"' in commands and "--write-mode through" in commands
    assert "--store rocksdb:$DATA/rocksdb/db" in commands
    assert re.search(r"taskset -c 1 pgbench .* -c 4 -j 4 -T 1 -M prepared", commands)
    assert "--workload put-all" in commands and "--workload get-popular" in commands
    assert "reset?scope=cache" in commands
    assert "## How it was measured" in md
    # every process the script started is gone, and so is its data directory (the cluster's too)
    # postmaster, 2 preloads, 2 PUT, 2 GET, 1 cold
    assert servers_gone(p.stderr, (b"cache_server", b"postgres")) == 1 + 2 + 2 + 2 + 1
    data = re.search(r"data in (\S+) ", p.stderr)[1]
    assert not Path(data).exists()


def test_help_and_bad_usage():
    h = help_text(SCRIPT)
    for flag in ("--duration S", "--conns", "--repeat N", "--out DIR", "--quick", "--keys N"):
        assert flag in h, flag
    for args, msg in ((["--conns", "1 x"], "--conns"), (["--duration", "abc"], "--duration"),
                      (["--repeat", "0"], "--repeat"), (["--conns", "4 4"], "repeats"),
                      (["--frobnicate"], "unknown argument"), (["--out"], "needs a value"),
                      (["--keys=5"], "--keys")):
        assert msg in usage_error(SCRIPT, args)


# --- unit: %util and CPU arithmetic ------------------------------------------------------------

# /proc/diskstats lines of one device 1.5 s apart: io_ticks (column 13) 3000 -> 3750 ms, writes
# completed (column 8) 2000 -> 2600, flush requests (column 19) 100 -> 250.
DISK_BEFORE = " 254       0 vda 1000 10 8000 500 2000 20 16000 900 0 3000 1400 5 0 40 3 100 60"
DISK_AFTER = " 254       0 vda 1010 10 8080 505 2600 25 20800 1300 1 3750 1900 5 0 40 3 250 90"


def test_disk_util_is_iostat_util():
    d = resources.disk_delta(DISK_BEFORE, DISK_AFTER, 1.5)
    assert d["device"] == "vda"
    assert d["io_ms"] == 750
    assert d["util_pct"] == pytest.approx(50.0)      # 750 ms busy of 1500 ms
    assert d["writes_per_s"] == pytest.approx(400.0)  # 600 writes / 1.5 s
    assert d["flushes_per_s"] == pytest.approx(100.0)  # 150 flushes / 1.5 s


def test_disk_util_caps_at_100_and_old_kernels():
    # io_ticks can run slightly past the wall clock between two reads: iostat caps at 100
    assert resources.disk_delta(DISK_BEFORE, DISK_AFTER, 0.5)["util_pct"] == 100.0
    # a kernel before 4.18 prints 14 columns: no flush counts
    old0 = " 8 0 sda 1 0 8 1 100 0 800 50 0 1000 60"
    old1 = " 8 0 sda 1 0 8 1 180 0 900 70 0 1250 90"
    d = resources.disk_delta(old0, old1, 1.0)
    assert d["util_pct"] == pytest.approx(25.0) and d["flushes_per_s"] is None
    assert d["writes_per_s"] == pytest.approx(80.0)
    with pytest.raises(ValueError):
        resources.disk_delta(DISK_BEFORE, old1, 1.0)  # two devices
    with pytest.raises(ValueError):
        resources.disk_delta(DISK_BEFORE, DISK_AFTER, 0)


def proc_stat(pid, comm, ppid, utime, stime, cutime=0, cstime=0):
    # fields 3.. after "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime ...
    return (f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 {utime} {stime} "
            f"{cutime} {cstime} 20 0 1 0 12345 1000000 200 18446744073709551615\n")


def test_proc_stat_ticks_with_an_awkward_name():
    text = proc_stat(7, "post gres) (x", 1, 120, 30, 5, 6)
    assert resources.stat_ticks(text) == 150
    assert resources.stat_ticks(text, children=True) == 161
    assert resources.stat_ppid(text) == 1


def test_pg_ticks_counts_postmaster_children_and_reaped(tmp_path):
    """A fake /proc: the postmaster (its cutime/cstime hold the backends it reaped), two live
    children, and an unrelated process."""
    procs = {100: proc_stat(100, "postgres", 1, 10, 5, 300, 200),   # 15 own + 500 reaped
             101: proc_stat(101, "postgres", 100, 40, 20),         # a backend: 60
             102: proc_stat(102, "postgres", 100, 7, 3, 1, 1),     # checkpointer: 12
             200: proc_stat(200, "cache_server", 1, 999, 999)}     # not PostgreSQL's
    for pid, text in procs.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(text)
    (tmp_path / "self").mkdir()  # non-numeric entries are ignored
    assert report.pg_ticks(100, proc=str(tmp_path)) == (15 + 500 + 60 + 12, 3)


def test_cpu_pct_and_percentiles(tmp_path):
    assert report.cpu_pct(250, 100, 2.5) == pytest.approx(100.0)  # 2.5 s of CPU in 2.5 s
    assert report.cpu_pct(50, 100, 2.0) == pytest.approx(25.0)
    assert report.cpu_pct(10, 100, 0) is None
    assert report.percentile(list(range(1, 101)), 50) == 50
    assert report.percentile(list(range(1, 101)), 99) == 99
    assert report.percentile([7], 99) == 7 and report.percentile([], 50) is None
    # pgbench -l lines: client_id transaction_no latency_us script_no epoch epoch_us
    (tmp_path / "log.1").write_text("".join(f"0 {i} {i * 10} 0 1700000000 {i}\n"
                                            for i in range(1, 51)))
    (tmp_path / "log.1.1").write_text("".join(f"1 {i} {i * 10} 0 1700000000 {i}\n"
                                              for i in range(51, 101)))
    lat = report.pgbench_latency([tmp_path / "log.1", tmp_path / "log.1.1"])
    assert lat == {"transactions": 100, "p50_us": 500, "p99_us": 990, "mean_us": 505.0}


# --- unit: the report from a hand-made run -----------------------------------------------------

def write_synthetic_run(d, ours_runs, pgbench_runs, rocks_runs, conns=64):
    """A bench_postgres output directory made by hand: --repeat len(ours_runs) PUT points per
    configuration at `conns`, no GET or cold points. Every point 2 s; PostgreSQL used 1.0 s of
    CPU (100 ticks/s) in ours' points, 1.5 s in pgbench's."""
    raw = d / "raw"
    raw.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"conns": [conns], "duration_s": 2, "repeat":
                                             len(ours_runs), "keys": 1000, "clk_tck": 100,
                                             "server_cpu": 0, "client_cpu": 1, "get_conns": 8}))
    points = []
    base = {"wall_s": 2.0, "threads": 8, "per_thread": conns // 8, "conns": conns, "rc": 0,
            "disk": "vda", "diskstats_before": DISK_BEFORE, "diskstats_after": DISK_AFTER}
    for rep, (o, g, r) in enumerate(zip(ours_runs, pgbench_runs, rocks_runs), start=1):
        for config, ops in (("postgres", o), ("rocksdb", r)):
            name = f"{config}-{rep}"
            (raw / f"{name}.json").write_text(json.dumps({"points": [{
                "throughput_rps": ops, "errors": 0, "p50_us": 100 * rep, "p99_us": 900 * rep}]}))
            (raw / f"{name}.s0.json").write_text(json.dumps({"sets": 0, "store_commits": 0,
                                                             "store_writes": 0}))
            (raw / f"{name}.s1.json").write_text(json.dumps({"sets": 2 * ops, "store_commits":
                                                             ops // 5, "store_writes": 2 * ops}))
            points.append(dict(base, part="put", system="ours", config=config, rep=rep,
                               raw=f"raw/{name}.json", stats_before=f"raw/{name}.s0.json",
                               stats_after=f"raw/{name}.s1.json",
                               pg_ticks=[1000, 1100 if config == "postgres" else 1000],
                               server_ticks=[0, 80]))
        (raw / f"pgbench-{rep}.txt").write_text(f"tps = {g:.6f} (without initial connection "
                                                "time)\nnumber of failed transactions: 0 "
                                                "(0.000%)\n")
        (raw / f"pgbench-{rep}.lat.json").write_text(json.dumps({"p50_us": 700, "p99_us": 5000}))
        points.append(dict(base, part="put", system="pgbench", config="pgbench", rep=rep,
                           raw=f"raw/pgbench-{rep}.txt", latency=f"raw/pgbench-{rep}.lat.json",
                           pg_ticks=[0, 150]))
    (d / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))


def run_report(d):
    p = run_module("bench_postgres_report", [d, "--quiet"])
    assert p.returncode == 0, p.stderr
    return json.loads((d / "summary.json").read_text()), (d / "summary.md").read_text()


def test_report_medians_ratio_and_targets(tmp_path):
    # three repeats: medians 30,000 (ours), 8,000 (pgbench), 50,000 (rocksdb)
    write_synthetic_run(tmp_path, [30000, 20000, 40000], [8000, 7000, 9000],
                        [50000, 60000, 10000])
    s, md = run_report(tmp_path)
    (r,) = s["rows"]
    assert (r["postgres"], r["pgbench"], r["rocksdb"]) == (30000, 8000, 50000)
    assert r["postgres_vs_pgbench"] == pytest.approx(30000 / 8000)  # 3.75 < 4
    assert r["runs"]["postgres"] == [30000, 20000, 40000]
    assert r["p50_us"]["postgres"] == 100 and r["p99_us"]["postgres"] == 900  # rep 1's
    assert r["pg_cpu"]["postgres"] == pytest.approx(50.0)   # 100 ticks = 1 s in 2 s
    assert r["pg_cpu"]["pgbench"] == pytest.approx(75.0)    # 150 ticks = 1.5 s in 2 s
    assert r["server_cpu"]["postgres"] == pytest.approx(40.0)
    assert r["disk_util"]["pgbench"] == pytest.approx(37.5)  # 750 ms of 2000 ms
    assert r["writes_per_commit"] == pytest.approx(10.0)     # 60,000 writes / 6,000 commits
    assert r["commits_per_s"] == pytest.approx(30000 / 10)   # commits per PUT x PUT/s
    # server core: (50% PG + 40% cache_server) of a core for 30,000 PUT/s = 30 µs per PUT;
    # pgbench 75% for 8,000 tps = 93.75 µs per transaction
    assert r["core_us"]["postgres"] == pytest.approx(0.9 / 30000 * 1e6)
    assert r["core_us"]["pgbench"] == pytest.approx(0.75 / 8000 * 1e6)
    t = {x["name"].split(" (")[0]: x for x in s["targets"]}
    assert t["write-through >= 4x pgbench per-request-commit tps at 64 conns"]["result"] == "MISS"
    assert t["write-through >= 28,000 PUT/s at its best point"]["result"] == "PASS"
    assert t["GET hit with postgres behind >= 0.97x --store none"]["result"] == "MISS"  # none
    header, rows = table(md, "| conns | ours postgres PUT/s")
    assert rows[0][:5] == ["64", "30,000", "8,000", "3.75", "50,000"]
    assert "targets: 1 PASS, 2 MISS, 0 SKIP" in md


def test_report_passes_the_4x_target(tmp_path):
    write_synthetic_run(tmp_path, [40000], [9000], [50000])
    s, md = run_report(tmp_path)
    t = {x["name"].split(" (")[0]: x for x in s["targets"]}
    assert t["write-through >= 4x pgbench per-request-commit tps at 64 conns"]["result"] == "PASS"
    assert t["write-through >= 4x pgbench per-request-commit tps at 64 conns"]["value"] == \
        pytest.approx(40000 / 9000)
    assert "PASS write-through >= 4x pgbench per-request-commit tps at 64 conns: 4.44" in md
