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
from scripts import report as report_py
from scripts.harness import rounds
from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]  # the scripts run from here: python3 -m scripts.NAME
REPORT = python_module("report")


def measurement(depth, conns, server, rps, cpu, errors=0, failed=False, rnd=0):
    return {"pipeline": depth, "connections": conns, "server": server, "rps": rps, "errors": errors,
            "failed": failed, "server_cpu_pct": cpu, "wrk_cpu_pct": 88.8, "p50": "41.00us",
            "p99": "1.07ms", "p50_us": 41.0, "p99_us": 1070.0, "wall_s": 2.01, "round": rnd}


# Round 0 (ONE_ROUND): depth 1: cache_server peaks at 90,000.4 (8 conns), nginx at 100,000.6
# (16 conns) -> 0.90x; the 32-connection cache_server point had socket errors: shown, but not the
# peak. depth 16: 330,000 / 220,000 = 1.5x. NGINX: three rounds, cache_server's req/s scaled by
# CS_SCALE per round (nginx's the same every round).
ONE_ROUND = {
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
CS_SCALE = (1.0, 1.02, 0.96)
NGINX = {**ONE_ROUND, "rounds": 3, "measurements": [
    {**m, "round": r, "rps": m["rps"] * (CS_SCALE[r] if m["server"] == "cache_server" else 1.0)}
    for r in range(3) for m in ONE_ROUND["measurements"]]}


# The -t 1 configurations (the headline pairs) ran 3 interleaved rounds, req/s scaled per round.
ROUND_SCALE = {"baseline": (1.0, 1.05, 0.97), "optimized": (1.0, 0.99, 1.04)}


def series_doc(label, flags, variant, rps_by_threads, pipeline=None, scale=(1.0,)):
    doc = {"meta": {"label": label, "server_flags": flags, "server_stats": {"variant": variant},
                    "server_cpus": "0", "client_cpus": "1"},
           "points": [{"threads": t, "throughput_rps": rps * k, "p50_us": 10, "p95_us": 20,
                       "p99_us": 30 + r, "requests": rps * k * 2, "gets": rps * k * 2 * 0.9,
                       "duration_s": 2.0, "round": r}
                      for r, k in enumerate(scale) for t, rps in rps_by_threads]}
    if pipeline:
        doc["pipeline"] = pipeline
    return doc


def write_run(d, nginx=NGINX, run_extra=None):
    docs = {
        "baseline-t-1.json": series_doc("baseline -t 1", "-t 1 --variant baseline", "baseline",
                                        [(1, 10000), (4, 50000)], scale=ROUND_SCALE["baseline"]),
        "baseline-t-2.json": series_doc("baseline -t 2", "-t 2 --variant baseline", "baseline",
                                        [(1, 10000), (4, 60000)]),
        "baseline-t-1-P-16.json": series_doc("baseline -t 1 -P 16", "-t 1 --variant baseline", "baseline",
                                             [(1, 40000), (4, 150000)], pipeline=16,
                                             scale=ROUND_SCALE["baseline"]),
        "optimized-t-1.json": series_doc("optimized -t 1", "-t 1 --variant optimized", "optimized",
                                         [(1, 11000), (4, 55000)], scale=ROUND_SCALE["optimized"]),
        "optimized-t-2.json": series_doc("optimized -t 2", "-t 2 --variant optimized", "optimized",
                                         [(1, 11000), (4, 54000)]),
        "optimized-t-1-P-16.json": series_doc("optimized -t 1 -P 16", "-t 1 --variant optimized", "optimized",
                                              [(1, 45000), (4, 180000)], pipeline=16,
                                              scale=ROUND_SCALE["optimized"]),
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
    by_key = {}
    for m in NGINX["measurements"]:
        by_key.setdefault((m["pipeline"], m["connections"], m["server"]), []).append(m)
    for depth in (1, 16):
        table = rows(nginx.split(f"### Pipeline depth {depth}\n", 1)[1].split("###", 1)[0])
        conns = sorted({m["connections"] for m in NGINX["measurements"] if m["pipeline"] == depth})
        assert [int(r[0]) for r in table] == conns
        for r in table:
            cs, ng = by_key[(depth, int(r[0]), "cache_server")], by_key[(depth, int(r[0]), "nginx")]
            cs_rps = sorted(m["rps"] for m in cs)
            ng_rps = ng[0]["rps"]  # the same every round
            assert r[2] == f"{ng_rps:,.0f} ({ng_rps:,.0f}–{ng_rps:,.0f})"
            if cs[0]["errors"]:
                assert r[1] == f"{cs_rps[1]:,.0f} ({sum(m['errors'] for m in cs)} errors)" and r[3] == "–"
            else:
                assert r[1] == f"{cs_rps[1]:,.0f} ({cs_rps[0]:,.0f}–{cs_rps[2]:,.0f})"
                assert r[3] == f"{cs_rps[1] / ng_rps:.2f}×"
            assert r[4] == f"{cs[0]['server_cpu_pct']:,.1f}" and r[5] == f"{ng[0]['server_cpu_pct']:,.1f}"
            assert r[6] == "41us / 1,070 (1,070–1,070)us"
    ratios = sorted(90000.4 * k / 100000.6 for k in CS_SCALE)
    med, lo, hi = rounds.ratio_interval(ratios)
    assert "Peak ratio at depth 1: cache_server 90,000 req/s (8 connections) ÷ nginx 100,001 req/s " \
           f"(16 connections) (peaks of the per-connection medians); the median of the per-round " \
           f"peak ratios = **{med:.2f}×** (95% CI {lo:.2f}–{hi:.2f}, 3 rounds)" in nginx
    assert hi < 1.0
    assert "Target ≥ 1.0×: **missed**. Stretch ≥ 1.3×: **missed**" in nginx
    assert "= **1.50×** (95% CI" in nginx and "Target ≥ 1.0×: **met**. Stretch ≥ 1.3×: **met**" in nginx
    assert "variant optimized" in nginx
    headline = section(md, "## Headline")
    line = [l for l in headline.splitlines() if l.startswith("| cache_server ÷ nginx, pipeline depth 1 |")][0]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells == ["cache_server ÷ nginx, pipeline depth 1", f"{med:.2f}×", f"{lo:.2f}–{hi:.2f}", "3",
                     ", ".join(f"{90000.4 * k / 100000.6:.3f}" for k in CS_SCALE), "≥ 1.0×", "**missed**"]
    assert "| cache_server ÷ nginx, pipeline depth 16 | 1.50× |" in headline


def test_one_round_nginx_has_no_interval_and_so_no_verdict(tmp_path):
    write_run(tmp_path, nginx=ONE_ROUND)
    md = report(tmp_path)
    assert "= **0.90×** (95% CI no interval, 1 round). Target ≥ 1.0×: **within noise (no interval" \
        in section(md, "## cache_server vs nginx")


def nginx_row(conns, cs, ng):
    return results.NginxRow(conns, {"cache_server": cs[0], "nginx": ng[0]},
                            {"cache_server": cs, "nginx": ng})


def test_peak_ratio_is_peak_over_peak_not_best_row():
    cmp = results.NginxComparison(Path("x"), NGINX, [])
    d = results.NginxDepth(1, [nginx_row(1, [measurement(1, 1, "cache_server", 10, 1)],
                                         [measurement(1, 1, "nginx", 5, 1)]),
                               nginx_row(2, [measurement(1, 2, "cache_server", 12, 1)],
                                         [measurement(1, 2, "nginx", 20, 1)])])
    assert cmp.complete
    assert d.peak("cache_server") == (12, 2) and d.peak("nginx") == (20, 2)
    assert d.peak_ratio() == pytest.approx(0.6)


def test_round_ratios_pair_peaks_of_the_same_round():
    # Round 0: cache_server peaks 12 (2 conns), nginx 20 -> 0.6; round 1: 30 (1 conn) / 25 -> 1.2.
    m = measurement
    d = results.NginxDepth(1, [
        nginx_row(1, [m(1, 1, "cache_server", 10, 1, rnd=0), m(1, 1, "cache_server", 30, 1, rnd=1)],
                  [m(1, 1, "nginx", 5, 1, rnd=0), m(1, 1, "nginx", 25, 1, rnd=1)]),
        nginx_row(2, [m(1, 2, "cache_server", 12, 1, rnd=0), m(1, 2, "cache_server", 11, 1, rnd=1)],
                  [m(1, 2, "nginx", 20, 1, rnd=0), m(1, 2, "nginx", 2, 1, rnd=1, errors=3)])])
    assert d.round_peak_ratios() == pytest.approx([0.6, 1.2])
    assert d.peak_ratio() == pytest.approx(0.9)


def headline_cells(md, name):
    line = [l for l in section(md, "## Headline").splitlines() if l.startswith(f"| {name} |")]
    assert len(line) == 1, name
    return [c.strip() for c in line[0].strip("|").split("|")]


def test_headline_is_optimized_over_baseline_per_depth(tmp_path):
    write_run(tmp_path)
    md = report(tmp_path)
    for depth, b, o in ((1, 50000, 55000), (16, 150000, 180000)):
        ratios = [o * ko / (b * kb) for kb, ko in zip(ROUND_SCALE["baseline"], ROUND_SCALE["optimized"])]
        med, lo, hi = rounds.ratio_interval(ratios)
        want = rounds.verdict_text((lo, hi), 1.0)
        assert headline_cells(md, f"optimized ÷ baseline, -t 1, pipeline depth {depth}") == [
            f"optimized ÷ baseline, -t 1, pipeline depth {depth}", f"{med:.2f}×", f"{lo:.2f}–{hi:.2f}",
            "3", ", ".join(f"{r:.3f}" for r in ratios), "≥ 1.0×", f"**{want}**"]


def test_headline_entries_are_run_jsons_shape(tmp_path):
    write_run(tmp_path)
    run = json.loads((tmp_path / "run.json").read_text())
    series = report_py.load_run_series(tmp_path, run)
    entries = report_py.headline_entries(series, results.load_nginx_in(tmp_path))
    assert [e["name"] for e in entries] == [
        "optimized ÷ baseline, -t 1, pipeline depth 1", "optimized ÷ baseline, -t 1, pipeline depth 16",
        "cache_server ÷ nginx, pipeline depth 1", "cache_server ÷ nginx, pipeline depth 1 (stretch)",
        "cache_server ÷ nginx, pipeline depth 16", "cache_server ÷ nginx, pipeline depth 16 (stretch)"]
    for e in entries:
        assert tuple(e) == ("name", "ratio", "ci", "rounds", "target", "verdict")
        assert e["verdict"] in ("met", "missed", "within noise") and e["rounds"] == 3
        assert e["ci"][0] <= e["ratio"] <= e["ci"][1]
    assert [e["target"] for e in entries] == [1.0, 1.0, 1.0, 1.3, 1.0, 1.3]


def test_point_tables_show_the_spread_over_rounds(tmp_path):
    write_run(tmp_path)
    md = report(tmp_path)
    table = rows(section(md, "## optimized -t 1"))
    k = ROUND_SCALE["optimized"]
    r4 = [r for r in table if r[0] == "4"][0]
    assert r4[1] == f"{55000 * sorted(k)[1]:,.0f} ({55000 * min(k):,.0f}–{55000 * max(k):,.0f})"
    assert r4[4] == "31 (30–32)"  # p99: median (min–max) over the rounds


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
    # 2 servers x depths 1, 16 x 6 connection counts x 3 rounds
    assert skip is None and len(costs) == 2 * 2 * 6 * 3
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
