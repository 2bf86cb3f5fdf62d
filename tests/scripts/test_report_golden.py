"""The three benchmark reports (scripts/bench_store_report.py, bench_postgres_report.py,
compare_redis_boards_report.py, on scripts/harness/report.py) write byte for byte the summary.md
and summary.json they wrote before they shared that module: golden/NAME/run is a real --quick
run of the benchmark (only the files the report reads), golden/NAME/summary.{md,json} what the
report wrote from it. A report change that means to change its output regenerates these files
(run the report on a copy of run/ and copy its two outputs here) and says why in its commit.
(Issue 45 regenerated summary.md of bench_store, bench_postgres and compare_redis_boards: a
figure not measured shows as "–", harness.tables.NONE, where these reports wrote "n/a".)"""
import shutil
import subprocess
from pathlib import Path

import pytest

from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]  # the reports run from here: python3 -m scripts.NAME
GOLDEN = Path(__file__).resolve().parent / "golden"
REPORTS = {"bench_store": "bench_store_report", "bench_postgres": "bench_postgres_report",
           "compare_redis_boards": "compare_redis_boards_report"}


def run_report(module: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run(python_module(module, *args), cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_output_is_unchanged(name, tmp_path):
    golden = GOLDEN / name
    if not golden.exists():
        pytest.fail(f"no golden run in {golden}")
    run = tmp_path / "run"
    shutil.copytree(golden / "run", run)
    p = run_report(REPORTS[name], run)
    assert p.returncode == 0, p.stderr
    for f in ("summary.md", "summary.json"):
        assert (run / f).read_bytes() == (golden / f).read_bytes(), f"{name}: {f} changed"
    assert p.stdout == (golden / "summary.md").read_text()  # printed without --quiet


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_usage(name, tmp_path):
    h = run_report(REPORTS[name], "--help")
    assert h.returncode == 0 and "Usage:" in h.stdout
    bad = run_report(REPORTS[name])
    assert bad.returncode == 2 and "Usage:" in bad.stderr
    empty = run_report(REPORTS[name], tmp_path)
    assert empty.returncode == 1 and f"no points.jsonl in {tmp_path}" in empty.stderr


def test_bench_cluster_report_output_is_unchanged(tmp_path):
    """bench_cluster.sh's report (its embedded Python until it moved to
    scripts/bench_cluster_report.py) on a real --quick run: 1 s points, 1 round."""
    golden = GOLDEN / "bench_cluster"
    run = tmp_path / "run"
    shutil.copytree(golden / "run", run)
    p = run_report("bench_cluster_report", run, "100", "1", "1")
    assert p.returncode == 0, p.stderr
    for f in ("summary.md", "summary.json"):
        assert (run / f).read_bytes() == (golden / f).read_bytes(), f"bench_cluster: {f} changed"
    assert p.stdout == (golden / "summary.md").read_text() + "\n"
