"""scripts/compare_redis_boards.py (and scripts/compare_redis_boards_report.py) end to end in
--quick mode, its usage errors, and the report's arithmetic from known inputs.

The end-to-end run (2,000 members, 0.5 s points, one round, about 10 s) starts real redis-server
instances and the built cache_server/bench_client, and must leave summary.md with the throughput
table (a row per operation, the ratios computed from the table's own numbers), the memory table,
a Targets block with a PASS/MISS line for each of the four targets, summary.json with the
expected keys, commands.txt, and must stop every process it started. Performance is not checked.
Redis (redis-server, redis-benchmark, redis-cli) missing is a skip, as is the build
(EXPERIMENT_TEST_BUILD, default build/release) without boards or a second CPU. The usage and
unit tests need nothing.
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from bench_checks import (CLIENT, SERVER, build_missing, help_text, quick_run, run_module,
                          servers_gone, summary_table, targets_block, usage_error)
from md_tables import number, table
from scripts import compare_redis_boards_report as report

SCRIPT = "compare_redis_boards"
HELPER = "compare_redis_boards_report"
MEMBERS = 2000
TARGET_NAMES = ("update >= 1.0x ZADD at 50 conns", "rank >= 1.0x ZREVRANK at 50 conns",
                "top-100 >= 2.0x ZREVRANGE 0 99 WITHSCORES at 50 conns",
                "resident memory per member <= Redis's")



def missing():
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if not shutil.which(tool):
            return (f"{tool} not installed: Redis 7 is needed (apt-get install redis-server "
                    "redis-tools; scripts/setup.sh installs them)")
    for tool in ("curl", "taskset"):
        if not shutil.which(tool):
            return f"{tool} not installed (apt-get install curl util-linux)"
    return build_missing(SERVER, CLIENT, ("--board-maxmem",), "no boards")


# --- end to end ----------------------------------------------------------------------------------

run = quick_run("compare_redis_boards", ["--quick", "--members", MEMBERS, "--duration", "0.5"],
                50, missing)


def test_throughput_table_and_ratios(run):
    md, header, rows = summary_table(run, "| operation | Redis req/s")
    assert header[:6] == ["operation", "Redis req/s", "ours req/s", "ours÷Redis", "target",
                          "result"]
    labels = [r[0] for r in rows]
    assert labels[:3] == ["update (ZADD)", "rank (ZREVRANK)", "top 100 (ZREVRANGE 0 99)"]
    for r in rows[:3]:
        v = dict(zip(header, r))
        assert number(v["Redis req/s"]) > 0 and number(v["ours req/s"]) > 0
        assert number(v["ours÷Redis"]) == pytest.approx(
            number(v["ours req/s"]) / number(v["Redis req/s"]), abs=0.01, rel=0.01)
        assert v["result"] in ("PASS", "MISS")
        for side in v["srv/client CPU% Redis"], v["srv/client CPU% ours"]:
            assert all(number(x) >= 0 for x in side.split("/"))
        assert all(b in ("server", "client", "both", "neither")
                   for b in v["bound Redis / ours"].split(" / "))
    assert "Bound by" in md and "## How it was measured" in md


def test_targets_block_has_the_four_targets(run):
    out, _ = run
    lines = targets_block((out / "summary.md").read_text())
    results = {}
    for l in lines[:-1]:
        verdict, rest = l.split(" ", 1)
        assert verdict in ("PASS", "MISS"), l
        results[rest.split(":", 1)[0]] = verdict
    assert set(results) == set(TARGET_NAMES)
    n_pass = sum(v == "PASS" for v in results.values())
    assert lines[-1] == f"targets: {n_pass} PASS, {4 - n_pass} MISS"


def test_summary_json_memory_and_raw_files(run):
    out, p = run
    s = json.loads((out / "summary.json").read_text())
    assert {"meta", "ops", "memory", "targets", "points", "errors"} <= set(s)
    assert set(s["ops"]) == {"update", "rank", "top"}
    for op in s["ops"].values():
        assert op["redis"]["rps"] > 0 and op["ours"]["rps"] > 0
        assert op["ratio"] == pytest.approx(op["ours"]["rps"] / op["redis"]["rps"])
    assert [t["name"] for t in s["targets"]] == list(TARGET_NAMES)
    assert all(t["result"] in ("PASS", "MISS") for t in s["targets"])
    assert s["meta"]["members"] == MEMBERS and s["meta"]["conns"] == 50
    assert s["errors"] == 0 and s["misses"] == 0
    mem = s["memory"]
    assert set(mem) == {"redis_same", "redis_load", "ours"}
    for side in mem.values():
        assert side["members"] == MEMBERS
        assert side["rss_after_kb"] >= side["rss_before_kb"] > 0
        assert side["preload_s"] > 0
    assert mem["ours"]["board_members"] == MEMBERS and mem["ours"]["board_bytes"] > 0
    # the memory table
    header, rows = table((out / "summary.md").read_text(), "| server | names |")
    assert [r[0] for r in rows] == ["Redis (memory)", "Redis (load)", "ours"]
    # one Redis and one ours point per operation, plus wrk's when installed
    points = [json.loads(l) for l in (out / "points.jsonl").read_text().splitlines()]
    got = sorted((pt["op"], pt["system"]) for pt in points)
    want = sorted([(op, sys_) for op in ("update", "rank", "top") for sys_ in ("redis", "ours")]
                  + ([("top", "ours-wrk")] if shutil.which("wrk") else []))
    assert got == want
    for pt in points:
        assert (out / pt["raw"]).exists() and (out / pt["client_times"]).exists()
    commands = (out / "commands.txt").read_text()
    assert "redis-server --bind 127.0.0.1" in commands and "--save '' --appendonly no" in commands
    assert "--board-maxmem 512M" in commands
    for cmd in ("ZADD b0 __rand_int__ m__rand_int__", "ZREVRANK b0 m__rand_int__",
                "ZREVRANGE b0 0 99 WITHSCORES"):
        assert re.search(r"taskset -c 1 redis-benchmark .*-c 50 -r %d .*%s" % (MEMBERS, cmd),
                         commands), cmd
    for w in ("board-update", "board-score", "board-top"):
        assert re.search(rf"taskset -c 1 bench_client .*--workload {w} .*--no-preload", commands)
    # every process the script started is gone, and so is its temporary directory
    assert servers_gone(p.stderr, (b"cache_server", b"redis")) == 3  # 2 redis-servers, 1 cache_server
    tmp = re.search(r"temporary files in (\S+)", p.stderr)[1]
    assert not Path(tmp).exists()


# --- usage ----------------------------------------------------------------------------------------

def test_help():
    h = help_text(SCRIPT)
    for flag in ("--members N", "--conns N", "--duration S", "--repeat N", "--out DIR", "--quick",
                 "--no-wrk", "--board-maxmem SIZE", "--build DIR", "Exit status"):
        assert flag in h, flag


@pytest.mark.parametrize("args, msg", [
    (["--frobnicate"], "unknown argument"),
    (["--members", "0"], "--members"),
    (["--members=12x"], "--members"),
    (["--conns", "abc"], "--conns"),
    (["--conns", "0"], "--conns"),
    (["--duration", "abc"], "--duration"),
    (["--repeat", "0"], "--repeat"),
    (["--out"], "needs a value"),
    (["--board-maxmem", "lots"], "--board-maxmem"),
])
def test_bad_usage_exits_2_with_one_line(args, msg):
    assert msg in usage_error(SCRIPT, args)


# --- unit: the helper ---------------------------------------------------------------------------

def test_preload_scores_are_bench_clients():
    # tenths in [0, 1e9), deterministic, and the RESP text of one ZADD
    s = [report.preload_score(0, i) for i in range(1000)]
    assert all(0 <= x < 1e9 and round(x * 10) == x * 10 for x in s)
    assert len(set(s)) > 990
    assert report.score_text(1234.0) == "1234" and report.score_text(12.5) == "12.5"
    assert report.resp_zadd("12.5", "m7") == \
        "*4\r\n$4\r\nZADD\r\n$2\r\nb0\r\n$4\r\n12.5\r\n$2\r\nm7\r\n"


def test_resp_files(tmp_path):
    same, padded = tmp_path / "a.resp", tmp_path / "b.resp"
    assert run_module(HELPER, ["resp", "3", same, padded]).returncode == 0
    a, b = same.read_bytes().decode(), padded.read_bytes().decode()  # CR LF kept
    assert a.count("ZADD") == b.count("ZADD") == 3
    assert "$2\r\nm2\r\n" in a and "$13\r\nm000000000002\r\n" in b
    score = report.score_text(report.preload_score(0, 2))
    assert f"${len(score)}\r\n{score}\r\n$2\r\nm2\r\n" in a


def test_parsers_and_bound(tmp_path):
    (tmp_path / "r.csv").write_text(
        '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",'
        '"p99_latency_ms","max_latency_ms"\n'
        '"ZREVRANK b0 m__rand_int__","82531.00","0.5","0.1","0.327","0.6","0.679","3.0"\n')
    rps, p50, p99 = report.redis_csv(tmp_path / "r.csv")
    assert rps == 82531.0 and p50 == pytest.approx(327) and p99 == pytest.approx(679)
    (tmp_path / "w.txt").write_text(
        "  Latency Distribution\n     50%  428.00us\n     75%  500.00us\n     90%  700.00us\n"
        "     99%    0.96ms\n  1074550 requests in 10.00s, 1.2GB read\n"
        "  Non-2xx or 3xx responses: 3\nRequests/sec: 107455.12\n")
    rps, p50, p99, errors = report.wrk_text(tmp_path / "w.txt")
    assert rps == pytest.approx(107455.12) and p50 == pytest.approx(428)
    assert p99 == pytest.approx(960) and errors == 3
    (tmp_path / "t").write_text("10.000 8.500 1.400\n")
    assert report.time_cpu(tmp_path / "t") == (10.0, pytest.approx(9.9))
    assert report.cpu_pct(500, 100, 5.0) == pytest.approx(100.0)
    assert report.bound_by(99, 50) == "server" and report.bound_by(50, 95) == "client"
    assert report.bound_by(95, 95) == "both" and report.bound_by(80, 80) == "neither"


def write_run(d, redis_rps, ours_rps, rss):
    """A compare_redis_boards output directory made by hand: one round; redis_rps and ours_rps
    map op -> req/s; rss maps memory key -> (before, settled) kB."""
    raw = d / "raw"
    raw.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"members": 1_000_000, "conns": 50, "repeat": 1,
                                             "duration_s": 10, "clk_tck": 100}))
    (d / "memory.json").write_text(json.dumps(
        {k: {"rss_before_kb": b, "rss_after_kb": s + 1000, "rss_settled_kb": s,
             "members": 1_000_000, "preload_s": 2.0} for k, (b, s) in rss.items()}))
    points = []
    for op in ("update", "rank", "top"):
        (raw / f"{op}-r.csv").write_text(f'"test","rps","a","b","p50","c","p99","d"\n'
                                         f'"{op}","{redis_rps[op]}","1","0.1","0.5","1","2","3"\n')
        (raw / f"{op}-o.json").write_text(json.dumps({"points": [{
            "throughput_rps": ours_rps[op], "p50_us": 400, "p99_us": 900, "errors": 0,
            "requests": 1000, "hit_rate": 1.0}]}))
        for name in (f"{op}-r", f"{op}-o"):
            (raw / f"{name}.time").write_text("10.000 5.000 0.000\n")  # client 50% of a core
        points.append({"op": op, "system": "redis", "rep": 1, "order": 1,
                       "raw": f"raw/{op}-r.csv", "client_times": f"raw/{op}-r.time",
                       "wall_s": 10.0, "server_ticks": [0, 1000]})  # 100% of a core
        points.append({"op": op, "system": "ours", "rep": 1, "order": 2,
                       "raw": f"raw/{op}-o.json", "client_times": f"raw/{op}-o.time",
                       "wall_s": 10.0, "server_ticks": [0, 500]})   # 50%
    (d / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))


def test_report_ratios_targets_and_memory(tmp_path):
    write_run(tmp_path, {"update": 60000, "rank": 80000, "top": 20000},
              {"update": 66000, "rank": 70000, "top": 39000},
              {"redis_same": (12000, 125000), "redis_load": (12000, 126000),
               "ours": (17000, 124000)})
    p = run_module(HELPER, [tmp_path, "--quiet"])
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["ops"]["update"]["ratio"] == pytest.approx(1.1)
    assert s["ops"]["update"]["redis"]["bound"] == "server"
    assert s["ops"]["update"]["ours"]["server_cpu"] == pytest.approx(50.0)
    assert s["ops"]["update"]["ours"]["client_cpu"] == pytest.approx(50.0)
    assert s["ops"]["update"]["ours"]["bound"] == "neither"
    t = {x["name"]: x for x in s["targets"]}
    assert t["update >= 1.0x ZADD at 50 conns"]["result"] == "PASS"
    assert t["rank >= 1.0x ZREVRANK at 50 conns"]["result"] == "MISS"      # 0.875
    assert t["top-100 >= 2.0x ZREVRANGE 0 99 WITHSCORES at 50 conns"]["result"] == "MISS"  # 1.95
    # memory: settled deltas, Redis 113,000 kB vs ours 107,000 kB for 1M members
    assert s["memory"]["ours"]["rss_per_member"] == pytest.approx(107000 * 1024 / 1e6)
    assert s["memory"]["redis_same"]["rss_per_member"] == pytest.approx(113000 * 1024 / 1e6)
    m = t["resident memory per member <= Redis's"]
    assert m["result"] == "PASS" and m["value"] == pytest.approx(113000 / 107000)
    md = (tmp_path / "summary.md").read_text()
    assert "targets: 2 PASS, 2 MISS" in md
