"""scripts/experiment.py and scripts/report.py end to end, against the real release binaries.

A tiny sweep (seconds) must leave REPORT.md, the figures and one JSON per configuration, and
every number REPORT.md prints must be the JSON's. Ctrl-C must stop the server and keep what
finished. Needs build/release (scripts/test.sh builds it before running pytest). The nginx
comparison's tests need nginx and wrk (scripts/setup.sh --peers) and skip without them; the
report's nginx logic is tested without them in test_report_nginx.py.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]  # the scripts run from here: python3 -m scripts.NAME
EXPERIMENT = python_module("experiment")
REPORT = python_module("report")
BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build/release"))  # a local override
SERVER = BUILD / "server/cache_server"
CLIENT = BUILD / "client/bench_client"
FIGURES = ("throughput_vs_threads", "p95_vs_threads", "throughput_vs_p95", "latency_spectrum",
           "cpu_vs_threads")
needs_nginx = pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("wrk")),
                                 reason="nginx and wrk not installed (scripts/setup.sh --peers)")


def client_has_pipeline(client=CLIENT):
    r = subprocess.run([str(client), "--help"], capture_output=True, text=True, timeout=10)
    return "--pipeline" in r.stdout + r.stderr


@pytest.fixture
def binaries(tmp_path):
    """Private copies, so a leftover server is findable by its path."""
    for b in (SERVER, CLIENT):
        assert b.exists(), f"{b} is not built: run bash scripts/setup.sh"
    server = tmp_path / "cache_server_under_test"
    shutil.copy(SERVER, server)
    return server, CLIENT


def experiment(out, server, client, *extra, nginx=False, **kw):
    cmd = [*EXPERIMENT, "--server-bin", str(server), "--client-bin", str(client),
           "--out", str(out), "--duration", "0.5", "--sweep-duration", "0.5", "--warmup", "100",
           "--rounds", "2", *extra,
           *([] if nginx else ["--no-nginx"])]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT, **kw)


def servers_running(path):
    r = subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def report_rows(md, label):
    """The data rows of the table under '## label'."""
    section = md.split(f"## {label}\n", 1)[1].split("\n## ", 1)[0]
    return [l for l in section.splitlines() if re.match(r"\| \d+ \|", l)]


def test_tiny_sweep_leaves_report_figures_and_matching_numbers(tmp_path, binaries):
    server, client = binaries
    r = experiment(tmp_path, server, client, "--server-threads", "1,2", "--client-threads", "1,2",
                   "--variants", "auto")
    assert r.returncode == 0, r.stderr
    run_dir = (tmp_path / "latest").resolve()
    assert run_dir.parent == tmp_path
    md = (run_dir / "REPORT.md").read_text()
    for name in FIGURES:
        assert (run_dir / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert f"]({name}.png)" in md
    run = json.loads((run_dir / "run.json").read_text())
    assert run["order"], "no configuration recorded"
    pipelined = [n for n in run["order"] if "-P-16" in n]
    if client_has_pipeline(client):
        assert len(pipelined) == 2, run["order"]  # one per variant, at -t 1
        for name in pipelined:
            doc = json.loads((run_dir / name).read_text())
            assert doc.get("pipeline", doc["meta"].get("pipeline")) == 16
            assert doc["meta"]["label"].endswith("-t 1 -P 16") and doc["meta"]["server_flags"].startswith("-t 1 ")
        assert "## Headline" in md
        assert "| optimized ÷ baseline, -t 1, pipeline depth 16 |" in md
    else:
        assert not pipelined
        assert "pipelined configurations (-P 16) skipped" in md
    assert "cache_server vs nginx: skipped (--no-nginx)" in md
    # The headline pairs ran 2 interleaved rounds; the others (-t 2) one sweep; run.json's
    # "headline" is the report's, in the contract's shape.
    assert run["rounds"] == 2
    assert {"baseline-t-1.json", "optimized-t-1.json"} <= set(run["headline_configurations"])
    names = [e["name"] for e in run["headline"]]
    assert names[0] == "optimized ÷ baseline, -t 1, pipeline depth 1"
    for e in run["headline"]:
        assert list(e) == ["name", "ratio", "ci", "rounds", "target", "verdict"]
        assert e["rounds"] == 2 and e["verdict"] in ("met", "missed", "within noise")
        assert e["ci"][0] <= e["ratio"] <= e["ci"][1]
        assert f"| {e['name']} | {e['ratio']:.2f}× | {e['ci'][0]:.2f}–{e['ci'][1]:.2f} | 2 |" in md
    assert [r["when"] for r in run["noise"]["readings"]] == ["start", "end"]
    assert "Noise meter (" in md
    rounds_of = {}
    for name in run["headline_configurations"]:
        doc = json.loads((run_dir / name).read_text())
        rounds_of[name] = sorted(p["round"] for p in doc["points"])
        assert rounds_of[name] == [0, 0, 1, 1]  # 2 client thread counts x 2 rounds
    doc = json.loads((run_dir / "optimized-t-2.json").read_text())
    assert [p["round"] for p in doc["points"]] == [0, 0]
    for name in run["order"]:
        doc = json.loads((run_dir / name).read_text())
        label = doc["meta"]["label"]
        rows = report_rows(md, label)
        by_threads = {}
        for p in doc["points"]:
            by_threads.setdefault(p["threads"], []).append(p)
        assert len(rows) == len(by_threads) == 2
        for row, (t, ps) in zip(rows, sorted(by_threads.items())):
            cells = [c.strip() for c in row.strip("|").split("|")]
            assert int(cells[0]) == t

            def cell(key):
                vals = sorted(p[key] for p in ps)
                med = (vals[0] + vals[1]) / 2 if len(vals) == 2 else vals[0]
                return f"{med:,.0f}" + (f" ({vals[0]:,.0f}–{vals[-1]:,.0f})" if len(vals) > 1 else "")
            assert cells[1] == cell("throughput_rps")
            assert cells[3] == cell("p95_us")
            assert cells[4] == cell("p99_us")
            assert all(p["errors"] == 0 for p in ps) and cells[8] == "0"
            assert all(p["server_cpu_pct"] is not None for p in ps)  # --server-pid was passed
    assert "Saturation point = " in md
    assert "CPU: " in md and "Pinning: server on CPU 0, client on CPU 1" in md
    assert not servers_running(server)


def test_ctrl_c_stops_the_server_and_keeps_finished_configurations(tmp_path, binaries):
    server, client = binaries
    cmd = [*EXPERIMENT, "--server-bin", str(server), "--client-bin", str(client),
           "--out", str(tmp_path), "--server-threads", "1,2", "--client-threads", "1",
           "--duration", "0.5", "--warmup", "100", "--variants", "auto", "--no-nginx"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    deadline = time.monotonic() + 60
    first = None
    while time.monotonic() < deadline and first is None:
        found = [p for p in tmp_path.glob("*/*.json") if p.name != "run.json"]
        first = found[0] if found else None
        time.sleep(0.05)
    assert first is not None, "the first configuration never finished"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 130), err  # 0 if the last configuration had already finished
    run_dir = first.parent
    assert (run_dir / "REPORT.md").exists()
    assert first.name in json.loads((run_dir / "run.json").read_text())["order"]
    time.sleep(0.2)
    assert not servers_running(server), "a cache_server was left running"


def test_unknown_flag_and_missing_binary_are_clear_errors(tmp_path):
    r = subprocess.run([*EXPERIMENT, "--no-such-flag"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "unknown argument" in r.stderr
    r = subprocess.run([*EXPERIMENT, "--client-bin", str(tmp_path / "nope"),
                        "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "is not built" in r.stderr


def test_report_names_the_bottleneck(tmp_path):
    def doc(server_cpu, client_cpu):
        return {"meta": {"label": f"s{server_cpu}c{client_cpu}", "server_cpus": "0", "client_cpus": "1"},
                "points": [{"threads": 1, "throughput_rps": 1000, "p50_us": 10, "p95_us": 20, "p99_us": 30,
                            "server_cpu_pct": server_cpu, "client_cpu_pct": client_cpu}]}
    (tmp_path / "a.json").write_text(json.dumps(doc(97, 40)))
    (tmp_path / "b.json").write_text(json.dumps(doc(40, 99)))
    (tmp_path / "c.json").write_text(json.dumps(doc(40, 40)))
    (tmp_path / "d.json").write_text(json.dumps(doc(95, 96)))
    (tmp_path / "e.json").write_text(json.dumps(doc(84, 99)))
    (tmp_path / "f.json").write_text(json.dumps(doc(86, 99)))
    r = subprocess.run([*REPORT, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "REPORT.md").read_text()
    line = {l.split("|")[1].strip(): l for l in md.splitlines() if l.startswith("| s")}
    assert "CPU-bound server" in line["s97c40"]
    assert "the client, not the server, is the limit" in line["s40c99"]
    # The client-bound row whose server had more than 15% of its CPU left is flagged; one whose
    # server had less left is not.
    assert "measured the client" in line["s40c99"]
    assert "measured the client" in line["s84c99"]
    assert "measured the client" not in line["s86c99"]
    assert "the client, not the server, is the limit" in line["s86c99"]
    assert "neither side's CPU is saturated" in line["s40c40"]
    assert "both sides saturated" in line["s95c96"] and "CPU-bound server" not in line["s95c96"]
    assert "the client, not the server" not in line["s97c40"]


def test_report_shows_median_and_spread_of_repetitions(tmp_path):
    pts = [{"threads": 1, "throughput_rps": rps, "p50_us": 10, "p95_us": p95, "p99_us": 30}
           for rps, p95 in ((900, 21), (1000, 20), (1200, 25))]
    (tmp_path / "a.json").write_text(json.dumps({"meta": {"label": "rep"}, "points": pts}))
    (tmp_path / "run.json").write_text(json.dumps({"repetitions": 3}))
    r = subprocess.run([*REPORT, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "REPORT.md").read_text()
    row = report_rows(md, "rep")[0]
    assert "| 1,000 (900–1,200) |" in row and "| 21 (20–25) |" in row
    assert "min–max range over repetitions" in md


def test_repetitions_are_merged_into_one_file_per_configuration(tmp_path, binaries):
    server, client = binaries
    r = experiment(tmp_path, server, client, "--server-threads", "1", "--client-threads", "1",
                   "--repetitions", "2", "--variants", "optimized", "--no-plots", "--pipeline-depth", "0")
    assert r.returncode == 0, r.stderr
    run_dir = (tmp_path / "latest").resolve()
    assert not list(run_dir.glob("*.rep*")), "repetition parts left behind"
    (name,) = json.loads((run_dir / "run.json").read_text())["order"][:1]
    doc = json.loads((run_dir / name).read_text())
    assert [p["threads"] for p in doc["points"]] == [1, 1]
    assert "min–max range over rounds or repetitions" in (run_dir / "REPORT.md").read_text()


def cmdline(pid) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def nginx_rows(md, depth):
    part = md.split("## cache_server vs nginx\n", 1)[1].split("\n## ", 1)[0]
    part = part.split(f"### Pipeline depth {depth}\n", 1)[1].split("###", 1)[0]
    return [[c.strip() for c in l.strip().strip("|").split("|")] for l in part.splitlines()
            if re.match(r"\| \d+ \|", l)]


@needs_nginx
def test_nginx_comparison_runs_and_its_numbers_reach_the_report(tmp_path, binaries):
    server, client = binaries
    r = experiment(tmp_path, server, client, "--server-threads", "1", "--client-threads", "1",
                   "--variants", "optimized", "--pipeline-depth", "4", "--nginx-connections", "1,2",
                   "--nginx-duration", "1", nginx=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    run_dir = (tmp_path / "latest").resolve()
    doc = json.loads((run_dir / "nginx.json").read_text())
    assert doc["complete"] and doc["pipeline_depths"] == [1, 4] and doc["connections"] == [1, 2]
    assert doc["cache_server"]["stats"].get("variant", "optimized") == "optimized"
    assert doc["rounds"] == 2
    ms = {}
    for m in doc["measurements"]:
        ms.setdefault((m["pipeline"], m["connections"], m["server"]), []).append(m)
    assert len(ms) == 2 * 2 * 2 and all(sorted(x["round"] for x in v) == [0, 1] for v in ms.values())
    for m in (x for v in ms.values() for x in v):
        assert m["rps"] > 0 and m["errors"] == 0 and not m["failed"], m
        assert m["server_cpu_pct"] is not None and m["wrk_cpu_pct"] is not None, m

    def med(vals):
        return sum(vals) / len(vals)  # two rounds: the median is the mean

    def cell(ms_, key, digits=0):
        vals = sorted(m[key] for m in ms_)
        return f"{med(vals):,.{digits}f} ({vals[0]:,.{digits}f}–{vals[-1]:,.{digits}f})"
    md = (run_dir / "REPORT.md").read_text()
    run = json.loads((run_dir / "run.json").read_text())
    for depth in (1, 4):
        rows = nginx_rows(md, depth)
        assert [int(r[0]) for r in rows] == [1, 2]
        for row in rows:
            cs, ng = ms[(depth, int(row[0]), "cache_server")], ms[(depth, int(row[0]), "nginx")]
            assert row[1] == cell(cs, "rps") and row[2] == cell(ng, "rps")
            assert row[3] == f"{med([m['rps'] for m in cs]) / med([m['rps'] for m in ng]):.2f}×"
            assert row[4] == f"{med([m['server_cpu_pct'] for m in cs]):,.1f}"
        per_round = [max(m["rps"] for c in (1, 2) for m in ms[(depth, c, "cache_server")] if m["round"] == r) /
                     max(m["rps"] for c in (1, 2) for m in ms[(depth, c, "nginx")] if m["round"] == r)
                     for r in (0, 1)]
        (entry,) = [e for e in run["headline"] if e["name"] == f"cache_server ÷ nginx, pipeline depth {depth}"]
        assert entry["ratio"] == pytest.approx(med(per_round)) and entry["rounds"] == 2
        assert f"Peak ratio at depth {depth}:" in md and f"= **{med(per_round):.2f}×** (95% CI" in md
    assert (run_dir / "nginx_vs_connections.png").read_bytes().startswith(b"\x89PNG")
    assert not servers_running(server) and not servers_running(tmp_path)


@needs_nginx
def test_ctrl_c_during_the_nginx_comparison_stops_everything(tmp_path, binaries):
    server, client = binaries
    cmd = [*EXPERIMENT, "--server-bin", str(server), "--client-bin", str(client),
           "--out", str(tmp_path), "--server-threads", "1", "--client-threads", "1", "--duration", "0.5",
           "--warmup", "100", "--variants", "optimized", "--pipeline-depth", "0",
           "--nginx-connections", "1,2,4,8", "--nginx-duration", "3"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)}, cwd=ROOT)
    deadline = time.monotonic() + 90
    masters = []
    while time.monotonic() < deadline and not masters:
        assert proc.poll() is None, proc.communicate()[1]
        masters = [p for p in servers_running(tmp_path) if b"master process" in cmdline(p)]
        time.sleep(0.05)
    assert masters, "the nginx comparison never started"
    time.sleep(1.5)  # into the first wrk points
    started = set(servers_running(tmp_path)) | set(servers_running(server))
    for m in masters:  # the nginx worker's command line does not name tmp_path
        started |= {int(p) for p in subprocess.run(["pgrep", "-P", str(m)], capture_output=True,
                                                   text=True).stdout.split()}
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    time.sleep(0.3)
    left = [p for p in started if cmdline(p)]
    assert not left, f"left running: {[cmdline(p) for p in left]}"
    run_dir = (tmp_path / "latest").resolve()
    assert (run_dir / "REPORT.md").exists()
    assert json.loads((run_dir / "run.json").read_text())["nginx"]["status"] == "interrupted"


def test_client_without_pipeline_skips_pipelined_configurations_with_a_note(tmp_path, binaries):
    server, client = binaries
    old = tmp_path / "old_bench_client"  # the real client, minus --pipeline in its --help
    old.write_text(f"#!/bin/sh\nif [ \"$1\" = --help ]; then \"{client}\" --help | grep -v -- --pipeline; "
                   f"exit 0; fi\nexec \"{client}\" \"$@\"\n")
    old.chmod(0o755)
    r = experiment(tmp_path, server, old, "--server-threads", "1", "--client-threads", "1",
                   "--variants", "optimized", "--no-plots")
    assert r.returncode == 0, r.stderr
    assert "pipelined configurations (-P 16) skipped" in r.stderr
    run_dir = (tmp_path / "latest").resolve()
    assert json.loads((run_dir / "run.json").read_text())["order"] == ["optimized-t-1.json"]
    assert "> Note: pipelined configurations (-P 16) skipped" in (run_dir / "REPORT.md").read_text()
