"""scripts/compare_wrk.py end to end at a tiny size: nginx (harness) serves, wrk and bench_client
each run once, the medians and the RESULT line print, the exit status is the verdict's (0 or 1;
performance is not checked) and nginx is gone afterwards. Needs nginx, wrk and the release build;
skips without them."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compare_wrk.py"
BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build" / "release"))
CLIENT = BUILD / "client" / "bench_client"


def test_one_run_each_and_the_verdict():
    for tool in ("nginx", "wrk", "taskset"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not installed (bash scripts/setup.sh --peers)")
    if not CLIENT.exists():
        pytest.skip(f"no {CLIENT} (build it)")
    p = subprocess.run([sys.executable, str(SCRIPT), "--duration", "1", "--runs", "1", "--port", "0",
                        "--bench", str(CLIENT)], capture_output=True, text=True, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    rows = re.findall(r"^1\s+(wrk|bench)\s+([\d.]+)\s+([\d.]+)$", p.stdout, re.M)
    assert sorted(r[0] for r in rows) == ["bench", "wrk"] and all(float(r[1]) > 0 for r in rows)
    assert "median bench_client" in p.stdout
    assert re.search(r"^RESULT: (PASS|FAIL)$", p.stdout, re.M)
    assert ("RESULT: PASS" in p.stdout) == (p.returncode == 0)
    left = subprocess.run(["pgrep", "-af", "compare_wrk\\."], capture_output=True, text=True).stdout
    assert "nginx" not in left, left


def test_bad_usage_and_missing_client(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "--runs", "0"], capture_output=True, text=True)
    assert p.returncode == 2 and "--runs" in p.stderr
    p = subprocess.run([sys.executable, str(SCRIPT), "--bench", str(tmp_path / "none")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "bench_client not found" in p.stderr
