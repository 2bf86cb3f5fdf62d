"""scripts/report.py on synthetic input: the "cache_server vs nginx" section, the headline
(optimized / baseline per pipeline depth) and the pipelined configurations. Needs no binaries,
no nginx and no wrk, so it always runs; every number asserted is recomputed from the JSON."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphs import results
from scripts import experiment
from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]  # the scripts run from here: python3 -m scripts.NAME
REPORT = python_module("report")


def measurement(depth, conns, server, rps, cpu, errors=0, failed=False):
    return {"pipeline": depth, "connections": conns, "server": server, "rps": rps, "errors": errors,
            "failed": failed, "server_cpu_pct": cpu, "wrk_cpu_pct": 88.8, "p50": "41.00us",
            "p99": "1.07ms", "p50_us": 41.0, "p99_us": 1070.0, "wall_s": 2.01}


# depth 1: cache_server peaks at 90,000.4 (8 conns), nginx at 100,000.6 (16 conns) -> 0.90x;
# the 32-connection cache_server point had socket errors: shown, but not the peak.
# depth 16: 330,000 / 220,000 = 1.5x.
NGINX = {
    "description": "synthetic", "complete": True, "duration_s": 2, "warmup_s": 1,
    "connections": [1, 8, 16, 32], "pipeline_depths": [1, 16], "wrk": "wrk 4", "nginx": "nginx/1",
    "cache_server": {"binary": "x", "extra_flags": "", "stats": {"variant": "optimized", "threads": 1}},
    "measurements": [
        measurement(1, 1, "cache_server", 20000.2, 40.1), measurement(1, 1, "nginx", 21000.7, 41.3),
        measurement(1, 8, "cache_server", 90000.4, 97.5), measurement(1, 8, "nginx", 95000.0, 99.0),
        measurement(1, 16, "cache_server", 85000.0, 98.2), measurement(1, 16, "nginx", 100000.6, 99.9),
        measurement(1, 32, "cache_server", 190000.0, 99.0, errors=12), measurement(1, 32, "nginx", 99000.0, 99.1),
        measurement(16, 1, "cache_server", 200000.0, 90.0), measurement(16, 1, "nginx", 150000.0, 95.5),
        measurement(16, 8, "cache_server", 330000.0, 99.5), measurement(16, 8, "nginx", 220000.0, 99.6),
    ]}


def series_doc(label, flags, variant, rps_by_threads, pipeline=None):
    doc = {"meta": {"label": label, "server_flags": flags, "server_stats": {"variant": variant},
                    "server_cpus": "0", "client_cpus": "1"},
           "points": [{"threads": t, "throughput_rps": rps, "p50_us": 10, "p95_us": 20, "p99_us": 30,
                       "requests": rps * 2, "gets": rps * 2 * 0.9, "duration_s": 2.0}
                      for t, rps in rps_by_threads]}
    if pipeline:
        doc["pipeline"] = pipeline
    return doc


def write_run(d, nginx=NGINX, run_extra=None):
    docs = {
        "baseline-t-1.json": series_doc("baseline -t 1", "-t 1 --variant baseline", "baseline",
                                        [(1, 10000), (4, 50000)]),
        "baseline-t-2.json": series_doc("baseline -t 2", "-t 2 --variant baseline", "baseline",
                                        [(1, 10000), (4, 60000)]),
        "baseline-t-1-P-16.json": series_doc("baseline -t 1 -P 16", "-t 1 --variant baseline", "baseline",
                                             [(1, 40000), (4, 150000)], pipeline=16),
        "optimized-t-1.json": series_doc("optimized -t 1", "-t 1 --variant optimized", "optimized",
                                         [(1, 11000), (4, 55000)]),
        "optimized-t-2.json": series_doc("optimized -t 2", "-t 2 --variant optimized", "optimized",
                                         [(1, 11000), (4, 54000)]),
        "optimized-t-1-P-16.json": series_doc("optimized -t 1 -P 16", "-t 1 --variant optimized", "optimized",
                                              [(1, 45000), (4, 180000)], pipeline=16),
    }
    for name, doc in docs.items():
        (d / name).write_text(json.dumps(doc))
    run = {"order": list(docs), "repetitions": 1, "pipeline_depth": 16, **(run_extra or {})}
    if nginx is not None:
        (d / "nginx.json").write_text(json.dumps(nginx))
        run["nginx"] = {"status": "ok", "file": "nginx.json"}
    (d / "run.json").write_text(json.dumps(run))
    return docs


def report(d):
    r = subprocess.run([*REPORT, str(d)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return (d / "REPORT.md").read_text()


def section(md, heading):
    return md.split(f"{heading}\n", 1)[1].split("\n## ", 1)[0]


def rows(text):
    return [[c.strip() for c in l.strip().strip("|").split("|")] for l in text.splitlines()
            if re.match(r"\| \d+ \|", l)]


def test_nginx_tables_equal_the_json(tmp_path):
    write_run(tmp_path)
    md = report(tmp_path)
    nginx = section(md, "## cache_server vs nginx")
    by_key = {(m["pipeline"], m["connections"], m["server"]): m for m in NGINX["measurements"]}
    for depth in (1, 16):
        table = rows(nginx.split(f"### Pipeline depth {depth}\n", 1)[1].split("###", 1)[0])
        conns = sorted({m["connections"] for m in NGINX["measurements"] if m["pipeline"] == depth})
        assert [int(r[0]) for r in table] == conns
        for r in table:
            cs, ng = by_key[(depth, int(r[0]), "cache_server")], by_key[(depth, int(r[0]), "nginx")]
            assert r[2] == f"{ng['rps']:,.0f}"
            if cs["errors"]:
                assert r[1] == f"{cs['rps']:,.0f} ({cs['errors']} errors)" and r[3] == "–"
            else:
                assert r[1] == f"{cs['rps']:,.0f}"
                assert r[3] == f"{cs['rps'] / ng['rps']:.2f}×"
            assert r[4] == f"{cs['server_cpu_pct']:,.1f}" and r[5] == f"{ng['server_cpu_pct']:,.1f}"
            assert r[6] == f"{cs['p50']} / {cs['p99']}"
    assert "Peak ratio at depth 1: cache_server 90,000 req/s (8 connections) ÷ nginx 100,001 req/s " \
           "(16 connections) = **0.90×**" in nginx
    ratio1 = 90000.4 / 100000.6
    assert f"Target ≥ 1.0×: **missed by {(1 - ratio1) * 100:.1f}%**" in nginx
    assert f"Stretch ≥ 1.3×: **missed by {(1 - ratio1 / 1.3) * 100:.1f}%**" in nginx
    assert "= **1.50×**. Target ≥ 1.0×: **met** (1.50× ≥ 1.0×). Stretch ≥ 1.3×: **met**" in nginx
    assert "variant optimized" in nginx
    headline = section(md, "## Headline")
    assert "pipeline depth 1 (wrk): 0.90×; target ≥ 1.0×: **missed by 10.0%**" in headline
    assert "pipeline depth 16 (wrk): 1.50×; target ≥ 1.0×: **met**" in headline


def test_peak_ratio_is_peak_over_peak_not_best_row():
    cmp = results.NginxComparison(Path("x"), NGINX, [])
    d = results.NginxDepth(1, [results.NginxRow(1, {"cache_server": measurement(1, 1, "cache_server", 10, 1),
                                                    "nginx": measurement(1, 1, "nginx", 5, 1)}),
                               results.NginxRow(2, {"cache_server": measurement(1, 2, "cache_server", 12, 1),
                                                    "nginx": measurement(1, 2, "nginx", 20, 1)})])
    assert cmp.complete
    assert d.peak("cache_server") == (12, 2) and d.peak("nginx") == (20, 2)
    assert d.peak_ratio() == pytest.approx(0.6)


def test_headline_is_optimized_over_baseline_per_depth(tmp_path):
    write_run(tmp_path)
    md = report(tmp_path)
    headline = section(md, "## Headline")
    table = [r for r in rows(headline)]
    # (depth, scope) -> row; GET req/s = gets / duration_s = rps * 2 * 0.9 / 2
    got = {(r[0], r[1]): r for r in table}
    all1 = got[("1", "all")]
    assert all1[2] == f"{60000 * 0.9:,.0f} (baseline -t 2, 4 threads)"
    assert all1[3] == f"{55000 * 0.9:,.0f} (optimized -t 1, 4 threads)"
    assert all1[4] == f"{55000 / 60000:.2f}×"
    t1 = got[("1", "-t 1 only")]
    assert t1[4] == f"{55000 / 50000:.2f}×"
    p16 = got[("16", "-t 1 only")]
    assert p16[2].startswith(f"{150000 * 0.9:,.0f} (baseline -t 1 -P 16,")
    assert p16[4] == f"{180000 / 150000:.2f}×"


def test_pipelined_configurations_are_marked(tmp_path):
    write_run(tmp_path)
    md = report(tmp_path)
    assert "Pipelined configurations (label `-P N`)" in md
    assert "bench_client `--pipeline 16`" in section(md, "## optimized -t 1 -P 16")
    assert "--pipeline" not in section(md, "## optimized -t 1")
    sat = [l for l in md.splitlines() if l.startswith("| optimized -t 1 -P 16 |")][0]
    assert sat.split("|")[3].strip() == "16"  # the pipeline depth column


def test_missing_nginx_is_a_note_not_an_error(tmp_path):
    note = "skipped: nginx not installed (bash scripts/setup.sh --peers installs them)"
    write_run(tmp_path, nginx=None, run_extra={"nginx": {"status": "skipped", "note": note},
                                               "notes": [f"cache_server vs nginx: {note}"]})
    md = report(tmp_path)
    assert section(md, "## cache_server vs nginx").strip() == note
    assert f"> Note: cache_server vs nginx: {note}" in md


def test_incomplete_nginx_json_is_flagged(tmp_path):
    write_run(tmp_path, nginx={**NGINX, "complete": False})
    assert "> Incomplete: the comparison stopped early" in report(tmp_path)


def test_malformed_nginx_json_is_a_clear_error(tmp_path):
    write_run(tmp_path, nginx={"measurements": [{"pipeline": 1}]})
    r = subprocess.run([*REPORT, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "nginx.json: measurement 0: missing connections, server, rps" in r.stderr


def test_nginx_plan_notes_what_is_missing(monkeypatch):
    args = experiment.parse_args(["--client-bin", sys.executable, "--server-bin", sys.executable])
    monkeypatch.setattr(experiment.shutil, "which", lambda t: None if t == "wrk" else "/usr/bin/" + t)
    skip, costs = experiment.nginx_plan(args)
    assert skip.startswith("skipped: wrk not installed") and costs == []
    monkeypatch.setattr(experiment.shutil, "which", lambda t: "/usr/bin/" + t)
    skip, costs = experiment.nginx_plan(args)
    assert skip is None and len(costs) == 2 * 2 * 6  # 2 servers x depths 1, 16 x 6 connection counts
    skip, costs = experiment.nginx_plan(experiment.parse_args(
        ["--client-bin", sys.executable, "--server-bin", sys.executable, "--no-nginx"]))
    assert skip == "skipped (--no-nginx)" and costs == []
    skip, _ = experiment.nginx_plan(experiment.parse_args(
        ["--client-bin", sys.executable, "--target", "127.0.0.1:1"]))
    assert "--target" in skip
    args = experiment.parse_args(["--client-bin", sys.executable, "--server-bin", sys.executable,
                                  "--pipeline-depth", "0"])
    assert experiment.nginx_depths(args) == [1]


def test_client_without_pipeline_option_is_detected(tmp_path):
    fake = tmp_path / "bench_client"
    fake.write_text("#!/bin/sh\necho 'usage: bench_client [--threads LIST] [--json FILE]'\n")
    fake.chmod(0o755)
    assert not experiment.client_supports_pipeline(str(fake))
    fake.write_text("#!/bin/sh\necho '      --pipeline N   requests outstanding per connection'\n")
    assert experiment.client_supports_pipeline(str(fake))
