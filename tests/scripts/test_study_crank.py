"""scripts/studies/crank.py on a tiny experiment (scripts/experiment.py, seconds), then
scripts/studies/assemble.py: the published numbers sit beside ours, every number of the crank
section is the experiment's JSON's (and the --slo runs'), each verdict follows from its figures,
and REPORT.md holds each section once however often it is assembled."""
import json
import subprocess

import pytest

import md_tables
import study_checks as sc
from scripts.harness import rounds
from scripts.harness.procs import python_module


def sc_published():
    from scripts.studies import crank
    return crank.PUBLISHED

pytestmark = pytest.mark.skipif(not (sc.ROOT / "build/release/client/bench_client").exists(),
                                reason="build/release is not built (bash scripts/setup.sh)")


def test_crank_section_and_the_assembled_report(tmp_path):
    r = subprocess.run(python_module("experiment", "--out", tmp_path, "--server-threads", "1",
                                     "--client-threads", "1,2", "--duration", "0.5", "--warmup",
                                     "100", "--no-nginx", "--no-plots"),
                       cwd=sc.ROOT, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    run_dir = (tmp_path / "latest").resolve()
    out = run_dir / "crank"
    # --no-resp: the RESP comparison's own test runs it (tests/scripts/test_compare_redis_resp.py).
    sc.run_study("crank", out, "--run", str(run_dir), "--duration", "0.5", "--slo-precision", "0.25",
                 "--no-resp")
    md, summary = sc.load(out)
    assert "### The RESP front beside Redis\n\nNot measured: skipped (--no-resp)." in md
    assert summary["resp"] == {"status": "skipped (--no-resp)"}
    configs = summary["configurations"]
    run = json.loads((run_dir / "run.json").read_text())
    _, rows = md_tables.table(md, "| configuration | peak req/s")
    assert [r[0] for r in rows] == [json.loads((run_dir / n).read_text())["meta"]["label"]
                                    for n in run["order"]]
    for row in rows:
        a = configs[row[0]]
        doc = json.loads((run_dir / next(n for n in run["order"] if json.loads(
            (run_dir / n).read_text())["meta"]["label"] == row[0])).read_text())
        # One point per thread count: the sample of the median req/s over the rounds.
        by = {}
        for p in doc["points"]:
            by.setdefault(p["threads"], []).append(p)
        points = [sorted(by[t], key=lambda p: p["throughput_rps"])[(len(by[t]) - 1) // 2]
                  for t in sorted(by)]
        assert len(by[1]) == (3 if row[0].endswith("-t 1") or "-t 1 -P" in row[0] else 1)
        peak = max(p["throughput_rps"] for p in points)
        sat = next(p for p in points if p["throughput_rps"] >= 0.95 * peak)
        assert row[1] == sc.cell(peak) and row[2] == str(sat["threads"])
        assert row[3] == sc.cell(sat["throughput_rps"]) and row[4] == sc.cell(sat["p95_us"])
        assert row[7] == sc.cell(sat["server_cpu_pct"], 1)
        assert row[8] == sc.cell(sat["client_cpu_pct"], 1)
        assert row[9] == sc.common.bottleneck_cell(a["verdict"], a["measured_client"])
        assert a["measured_client"] == sc.common.measured_the_client(sat, {"server": 1, "client": 1})
        # Every configuration is searched, a pipelined one (-P N) at its depth.
        raw = out / "raw" / (next(n for n in run["order"] if json.loads(
            (run_dir / n).read_text())["meta"]["label"] == row[0])[:-5] + "-slo.json")
        sc.check_slo_against_raw(a["slo"], raw)
        assert row[5] == a["slo"]["spec"] == "p99=1ms"
        assert row[6] == sc.cell(a["slo"]["capacity_rps"])
        slo_doc = json.loads(raw.read_text())
        assert slo_doc["meta"]["mode"]["pipeline"] == doc["meta"]["mode"]["pipeline"]
        assert slo_doc["meta"]["mode"]["pipeline"] == (16 if "-P 16" in row[0] else 1)
        assert "--pipeline 16" in slo_doc["meta"]["command_line"] or "-P 16" not in row[0]
    # Published beside ours: the three published configurations, ours where this run has them.
    _, pub = md_tables.table(md, "| published configuration")
    assert [p[2] for p in pub] == ["22,835 req/s at p95 136 µs, saturating at 2 client threads",
                                   "21,042 req/s at p95 147 µs", "17,178 req/s"]
    # ... with the one verdict rule on the per-round peaks ÷ the published req/s.
    for p, (label, _, rps, _, _) in zip(pub, sc_published()):
        if label not in configs:
            assert p[4:] == ["–", "–"]
            continue
        ratios = [x / rps for x in configs[label]["round_peaks_rps"]]
        med, lo, hi = rounds.ratio_interval(ratios)
        assert len(ratios) == 3
        assert p[4] == f"{med:.2f}× (95% CI {lo:.2f}–{hi:.2f}, 3 rounds)"
        assert p[5] == rounds.verdict_text((lo, hi), 1.0)
    # The report: crank's own part, then the studies once, however often assembled.
    for _ in range(2):
        subprocess.run(python_module("studies.assemble", run_dir), cwd=sc.ROOT, check=True,
                       capture_output=True, timeout=60)
    report = (run_dir / "REPORT.md").read_text()
    assert report.startswith("# Load-test report")
    assert report.count("## Study: crank") == 1 and report.count("# Studies") == 1
    sc.no_process_left(out)


def test_experiment_sh_refuses_an_unknown_study():
    r = subprocess.run(["bash", str(sc.ROOT / "scripts/experiment.sh"), "--study", "nope"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "unknown study 'nope' (expected crank kv-db leaderboard threadpool or all)" in r.stderr
