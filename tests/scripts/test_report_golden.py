"""The three benchmark reports (scripts/bench_store_report.py, bench_postgres_report.py,
compare_redis_boards_report.py, on scripts/harness/report.py) write byte for byte the summary.md
and summary.json they wrote before they shared that module: golden/NAME/run is a real --quick
run of the benchmark (only the files the report reads), golden/NAME/summary.{md,json} what the
report wrote from it. A report change that means to change its output regenerates these files
(run the report on a copy of run/ and copy its two outputs here) and says why in its commit."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
REPORTS = {"bench_store": "bench_store_report.py", "bench_postgres": "bench_postgres_report.py",
           "compare_redis_boards": "compare_redis_boards_report.py"}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_output_is_unchanged(name, tmp_path):
    golden = GOLDEN / name
    if not golden.exists():
        pytest.fail(f"no golden run in {golden}")
    run = tmp_path / "run"
    shutil.copytree(golden / "run", run)
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / REPORTS[name]), str(run)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for f in ("summary.md", "summary.json"):
        assert (run / f).read_bytes() == (golden / f).read_bytes(), f"{name}: {f} changed"
    assert p.stdout == (golden / "summary.md").read_text()  # printed without --quiet


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_usage(name, tmp_path):
    script = str(ROOT / "scripts" / REPORTS[name])
    h = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and "Usage:" in h.stdout
    bad = subprocess.run([sys.executable, script], capture_output=True, text=True)
    assert bad.returncode == 2 and "Usage:" in bad.stderr
    empty = subprocess.run([sys.executable, script, str(tmp_path)], capture_output=True, text=True)
    assert empty.returncode == 1 and f"no points.jsonl in {tmp_path}" in empty.stderr


def test_bench_cluster_report_output_is_unchanged(tmp_path):
    """bench_cluster.sh's report (its embedded Python until it moved to
    scripts/bench_cluster_report.py) on a real --quick run: 1 s points, 1 round."""
    golden = GOLDEN / "bench_cluster"
    run = tmp_path / "run"
    shutil.copytree(golden / "run", run)
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_cluster_report.py"), str(run),
                        "100", "1", "1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for f in ("summary.md", "summary.json"):
        assert (run / f).read_bytes() == (golden / f).read_bytes(), f"bench_cluster: {f} changed"
    assert p.stdout == (golden / "summary.md").read_text() + "\n"
