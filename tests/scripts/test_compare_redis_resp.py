"""scripts/compare_redis_resp.py end to end in --quick mode (two rounds, 2,000 requests per run,
a 2,000-member set), its usage errors, and the preload files it writes.

Ours is our RESP front when the build's cache_server has --resp-port; until then (or with
RESP_TARGET=redis in the environment) the script runs a redis-server in our place, Redis against
Redis, which still proves the script: both tables with every row, the ratios computed from the
table's own numbers, resp.json, the points interleaved (both servers per row and round, the first
alternating by row and round),
every ratio the median of its per-round ratios with the interval and verdict of
scripts/harness/rounds.py against issue 46's targets (resp.json's "headline" and the verdict
table), the pinning in commands.txt, every process stopped and the scratch directory removed.
Performance is not checked. Redis, wrk or a second CPU missing is a skip, as is the build
(EXPERIMENT_TEST_BUILD, default build/release).
"""
import json
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from bench_checks import SERVER, BUILD, help_text, run_module, servers_gone, usage_error
from md_tables import number, table
from scripts import compare_redis_resp as script
from scripts.harness import rounds

SCRIPT = "compare_redis_resp"
ROUNDS = 2
COMMANDS = ["GET", "SET", "GET", "SET", "ZADD b0 __rand_int__ m__rand_int__",
            "ZREVRANK b0 m__rand_int__", "ZREVRANGE b0 0 99 WITHSCORES",
            "SET (rocksdb write-through ÷ appendfsync always)"]
LOADS = ["-c 50 -P 1", "-c 50 -P 1", "-c 50 -P 16", "-c 50 -P 16", "-c 50, 2,000 members",
         "-c 50, 2,000 members", "-c 50, 2,000 members", "-c 50 -P 1"]
# Issue 46's targets, in the rows' order: ours ÷ Redis per row, then RESP ÷ HTTP (redis-benchmark
# and wrk), then per depth of the one-client table RESP ÷ HTTP and ours ÷ Redis.
TARGETS = [1.3, 1.3, 2.0, 2.0, 1.5, 1.5, 5.0, 0.9, 1.1, 1.1, 1.3, 1.1, 2.0]


def per_round(xs, ys):
    """The median of the per-round ratios xs[i] ÷ ys[i]: the ratio every table prints."""
    return statistics.median(x / y for x, y in zip(xs, ys))


def missing():
    for tool in ("redis-server", "redis-benchmark", "redis-cli", "wrk", "taskset"):
        if not shutil.which(tool):
            return f"{tool} not installed (apt-get install redis-server redis-tools wrk util-linux)"
    if not SERVER.exists():
        return f"no {SERVER} (build it; EXPERIMENT_TEST_BUILD names another build directory)"
    if len(os.sched_getaffinity(0)) < 2:
        return "needs 2 CPUs (servers and clients are pinned to CPUs 0 and 1)"
    return None


def target() -> str:
    """RESP_TARGET, else ours once the build has the RESP front, else redis."""
    if os.environ.get("RESP_TARGET"):
        return os.environ["RESP_TARGET"]
    helptext = subprocess.run([str(SERVER), "--help"], capture_output=True, text=True,
                              timeout=10).stdout
    return "ours" if "--resp-port" in helptext else "redis"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    why = missing()
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp(SCRIPT) / "out"
    env = {**os.environ, "RESP_TARGET": target()}
    p = run_module(SCRIPT, ["--quick", "--rounds", ROUNDS, "--build", BUILD, "--out", out],
                   timeout=240, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return out, p, env["RESP_TARGET"]


def test_the_table_of_ours_and_redis(run):
    out, p, _ = run
    md = (out / "resp.md").read_text()
    assert p.stdout == md
    header, rows = table(md, "| command | load |")
    assert header == ["command", "load", "ours req/s", "Redis req/s", "ours ÷ Redis",
                      "server CPU µs/req, ours", "Redis", "Redis ÷ ours (CPU)", "client CPU %",
                      "client's reach"]
    assert [r[0] for r in rows] == COMMANDS
    assert [r[1] for r in rows] == LOADS
    s = json.loads((out / "resp.json").read_text())
    for i, (r, j) in enumerate(zip(rows, s["rows"])):
        ours, redis, ratio = number(r[2]), number(r[3]), number(r[4])
        assert ours > 0 and redis > 0
        assert ours == pytest.approx(j["ours_median"], rel=0.01)
        assert ratio == pytest.approx(per_round(j["ours_rps"], j["redis_rps"]), abs=0.01)
        cpu_ours, cpu_redis, cpu_ratio = number(r[5]), number(r[6]), number(r[7])
        assert cpu_ours > 0 and cpu_redis > 0
        assert cpu_ratio == pytest.approx(cpu_redis / cpu_ours, abs=0.02, rel=0.02)
        assert 0 < number(r[8]) <= 200
        # The reach: per round, ours scaled to 100% of the client's CPU over Redis; the median.
        assert len(j["ours_client_cpu_pct"]) == len(j["redis_client_cpu_pct"]) == ROUNDS
        reach = statistics.median(o * 100 / c / d for o, c, d in
                                  zip(j["ours_rps"], j["ours_client_cpu_pct"], j["redis_rps"]))
        assert j["client_reach"] == pytest.approx(reach)
        assert number(r[9]) == pytest.approx(reach, abs=0.01)
        assert j["within_client_reach"] == (reach >= TARGETS[i])
    # Every row out of reach is named, with its reach and target, below the table.
    out_of_reach = [j for j in s["rows"] if not j["within_client_reach"]]
    line = next(x for x in md.splitlines() if "this client's reach" in x and "|" not in x)
    if out_of_reach:
        assert line.startswith("Out of this client's reach")
        for j in out_of_reach:
            assert f"{j['command']} ({j['load']}: reach {j['client_reach']:.2f}×" in line
    else:
        assert line == "Every target is within this client's reach."


def test_the_table_of_resp_and_http(run):
    out, _, _ = run
    header, rows = table((out / "resp.md").read_text(), "| load | RESP GET")
    assert header == ["load", "RESP GET req/s", "HTTP GET req/s", "RESP ÷ HTTP",
                      "server CPU µs/req, RESP", "HTTP", "HTTP ÷ RESP (CPU)"]
    assert len(rows) == 1 and rows[0][0] == "-c 50, depth 1, one 100-byte key"
    resp, http, ratio = map(number, rows[0][1:4])
    cpu_resp, cpu_http, cpu_ratio = map(number, rows[0][4:7])
    assert cpu_resp > 0 and cpu_http > 0
    assert cpu_ratio == pytest.approx(cpu_http / cpu_resp, abs=0.02, rel=0.02)
    h = json.loads((out / "resp.json").read_text())["http_get"]
    assert resp > 0 and http > 0
    assert ratio == pytest.approx(per_round(h["resp_rps"], h["http_rps"]), abs=0.01)


def test_the_crank_study_shows_both_tables(run):
    """The crank study's section (scripts/studies/crank.py) gains this script's tables."""
    from scripts.studies import crank
    out, _, _ = run
    text = "\n".join(crank.render_resp(out.parent, {"status": "ok", "dir": out.name}))
    assert text.startswith("### The RESP front beside Redis")
    assert "# RESP front beside Redis" not in text  # the script's own title is dropped
    header, rows = table(text, "| command | load |")
    assert [r[0] for r in rows] == COMMANDS
    assert table(text, "| load | RESP GET")[1]
    skipped = "\n".join(crank.render_resp(out.parent, {"status": "skipped (--no-resp)"}))
    assert "Not measured: skipped (--no-resp)." in skipped


def test_the_table_of_one_client_for_both(run):
    out, _, _ = run
    s = json.loads((out / "resp.json").read_text())
    header, rows = table((out / "resp.md").read_text(), "| load | RESP GET req/s, ours")
    assert header == ["load", "RESP GET req/s, ours", "HTTP GET req/s, ours", "RESP ÷ HTTP",
                      "RESP GET req/s, Redis", "ours ÷ Redis", "server CPU µs/req, RESP", "HTTP",
                      "Redis", "client CPU %"]
    assert [r[0] for r in rows] == ["50 connections, depth 1", "50 connections, depth 16"]
    for r, j in zip(rows, s["same_client"]):
        resp, http, resp_http, redis, ours_redis = map(number, r[1:6])
        assert min(resp, http, redis) > 0
        assert resp_http == pytest.approx(per_round(j["resp_rps"], j["http_rps"]), abs=0.01)
        assert ours_redis == pytest.approx(per_round(j["resp_rps"], j["redis_rps"]), abs=0.01)
        assert all(number(x) > 0 for x in r[6:9]) and 0 < number(r[9]) <= 200
        assert len(j["resp_rps"]) == len(j["http_rps"]) == len(j["redis_rps"]) == ROUNDS
    commands = (out / "commands.txt").read_text()
    for depth in (1, 16):
        for proto in ("resp", "http"):
            assert re.search(r"taskset -c 1 bench_client --protocol " + proto + r" .*--pipeline "
                             + str(depth) + r" .*--workload get-popular", commands)


def test_resp_json_has_every_round_and_the_medians(run):
    out, _, tgt = run
    s = json.loads((out / "resp.json").read_text())
    assert s["target"] == tgt and s["rounds"] == ROUNDS and s["members"] == 2000
    assert [r["command"] for r in s["rows"]] == COMMANDS
    for r in s["rows"]:
        assert len(r["ours_rps"]) == len(r["redis_rps"]) == ROUNDS
        assert r["ours_median"] == pytest.approx(sorted(r["ours_rps"])[0] / 2
                                                 + sorted(r["ours_rps"])[1] / 2)
        assert r["ratios"] == pytest.approx([o / d for o, d in zip(r["ours_rps"], r["redis_rps"])])
        assert r["ratio"] == pytest.approx(statistics.median(r["ratios"]))
    h = s["http_get"]
    assert len(h["resp_rps"]) == len(h["http_rps"]) == ROUNDS
    assert h["ratio"] == pytest.approx(per_round(h["resp_rps"], h["http_rps"]))


def test_every_ratio_has_an_interval_and_a_verdict(run):
    """resp.json's "headline" (run.json's shape plus the per-round ratios) and the verdict table:
    one line per ratio of the tables, in their order, each the median of its per-round ratios
    with rounds.ratio_interval's interval and rounds.verdict against issue 46's target."""
    out, _, _ = run
    s = json.loads((out / "resp.json").read_text())
    sides = [(r["ours_rps"], r["redis_rps"]) for r in s["rows"]]
    sides.append((s["http_get"]["resp_rps"], s["http_get"]["http_rps"]))
    for j in s["same_client"]:
        sides += [(j["resp_rps"], j["http_rps"]), (j["resp_rps"], j["redis_rps"])]
    hl = s["headline"]
    assert [e["target"] for e in hl] == TARGETS and len(hl) == len(sides)
    assert [e["name"] for e in hl[:len(COMMANDS)]] == [
        f"{c} ({l}): ours ÷ Redis" for c, l in zip(COMMANDS, LOADS)]
    for e, (xs, ys) in zip(hl, sides):
        assert set(e) == set(rounds.HEADLINE_KEYS) | {"ratios"}
        med, low, high = rounds.ratio_interval([x / y for x, y in zip(xs, ys)])
        assert e["rounds"] == ROUNDS and e["ratio"] == pytest.approx(med)
        assert e["ci"] == pytest.approx([low, high]) and low <= med <= high
        assert e["verdict"] == rounds.verdict(e["ci"], e["target"])
    header, rows = table((out / "resp.md").read_text(), "| compared | ratio |")
    assert header == ["compared", "ratio", "95% CI", "rounds", "per-round ratios", "target",
                      "verdict"]
    assert [r[0] for r in rows] == [e["name"] for e in hl]
    for r, e in zip(rows, hl):
        assert number(r[1].rstrip("×")) == pytest.approx(e["ratio"], abs=0.005)
        assert r[2] == rounds.fci(e["ci"]) and r[3] == str(ROUNDS)
        assert [float(x) for x in r[4].split(", ")] == pytest.approx(e["ratios"], abs=0.0005)
        assert r[5] == f"≥ {e['target']:g}×"
        assert r[6] == rounds.verdict_text(e["ci"], e["target"])


def test_points_are_interleaved_the_first_alternating(run):
    out, _, _ = run
    points = [json.loads(l) for l in (out / "points.jsonl").read_text().splitlines()]
    same = len(script.SAME_CLIENT_DEPTHS) * len(script.SAME_CLIENT_RUNS)
    per_round = 2 * len(script.ROWS) + 2 + same
    assert len(points) == ROUNDS * per_round
    for rnd in range(ROUNDS):
        mine = points[rnd * per_round:(rnd + 1) * per_round]
        assert {p["round"] for p in mine} == {rnd + 1}
        for i, (row, _, _, ours, redis, _) in enumerate(script.ROWS):
            first, second = (ours, redis) if (rnd + i) % 2 == 0 else (redis, ours)
            assert (mine[2 * i]["row"], mine[2 * i]["server"]) == (row, first)
            assert (mine[2 * i + 1]["row"], mine[2 * i + 1]["server"]) == (row, second)
        assert [p["row"] for p in mine[-2 - same:-same]] == ["resp-get", "http-get"]
        # One client for both: per depth, resp, http, redis (reversed in even rounds).
        keys = [k for k, _, _ in script.SAME_CLIENT_RUNS]
        keys = keys if rnd % 2 == 0 else keys[::-1]
        assert [p["row"] for p in mine[-same:]] == [
            f"client-{k}-d{d}" for d in script.SAME_CLIENT_DEPTHS for k in keys]
    for pt in points:
        assert pt["rps"] > 0 and (out / pt["raw"]).exists()


def test_commands_pin_the_servers_and_the_clients(run):
    out, _, tgt = run
    commands = (out / "commands.txt").read_text()
    servers = [l for l in commands.splitlines() if " server: " in l]
    assert servers and all(": taskset -c 0 " in l for l in servers)
    clients = [l for l in commands.splitlines() if "redis-benchmark" in l or " wrk " in l]
    assert clients and all(": taskset -c 1 " in l for l in clients)
    assert "--appendonly yes --appendfsync always" in commands
    if tgt == "ours":
        assert re.search(r"cache_server .*--resp-port 0 .*--store rocksdb:", commands)
    for cmd in ("ZADD b0 __rand_int__ m__rand_int__", "ZREVRANK b0 m__rand_int__",
                "ZREVRANGE b0 0 99 WITHSCORES", "-t get -d 100 -r 1000 -P 16", "GET hot"):
        assert re.search(r"taskset -c 1 redis-benchmark .*-c 50 .*" + re.escape(cmd), commands)


def test_every_process_is_gone_and_the_scratch_removed(run):
    _, p, tgt = run
    assert servers_gone(p.stderr, (b"cache_server", b"redis-server")) == (5 if tgt == "redis" else 4)
    tmp = re.search(r"temporary files in (\S+)", p.stderr)[1]
    assert not Path(tmp).exists()


# --- usage and the preload files -------------------------------------------------------------------

def test_help():
    h = help_text(SCRIPT)
    for flag in ("--rounds N", "--requests N", "--seconds S", "--members N", "--keys N", "--conns N",
                 "--out DIR",
                 "--quick", "--build DIR", "RESP_TARGET", "Exit status"):
        assert flag in h, flag


@pytest.mark.parametrize("args, msg", [
    (["--frobnicate"], "unknown argument"), (["--rounds", "0"], "--rounds"),
    (["--requests", "5"], "--requests"), (["--members", "12x"], "--members"),
    (["--keys", "0"], "--keys"), (["--conns", "0"], "--conns"), (["--out"], "needs a value"),
    (["--seconds", "0.1"], "--seconds '0.1' must be"), (["--seconds", "nan"], "--seconds 'nan'"),
    (["--seconds", "2x"], "--seconds '2x'"),
])
def test_bad_usage_exits_2_with_one_line(args, msg):
    assert msg in usage_error(SCRIPT, args)


def test_preload_files(tmp_path):
    keys, board = tmp_path / "k.resp", tmp_path / "b.resp"
    script.write_keys(keys, 3)
    data = keys.read_bytes()
    assert data.count(b"*3\r\n$3\r\nSET\r\n") == 4
    assert b"$16\r\nkey:000000000002\r\n$100\r\n" + b"v" * 100 + b"\r\n" in data
    assert data.endswith(b"$3\r\nhot\r\n$100\r\n" + b"v" * 100 + b"\r\n")
    script.write_board(board, 3)
    text = board.read_bytes().decode()
    assert text.count("ZADD") == 3 and "$13\r\nm000000000002\r\n" in text
