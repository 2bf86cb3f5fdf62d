"""scripts/profile_server.py against the real cache_server, and its embedding in REPORT.md.

The profile run needs wrk, perf (tracepoints) and valgrind and skips without them; it checks
what the profile is for: the baseline (one write per response) makes about one write per
request under pipelining, the optimized server far fewer, and every figure in PROFILE.md
equals profile.json. The embedding test needs nothing and always runs."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scripts.harness.procs import python_module
from test_report_nginx import report, write_run

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build" / "release"))
SERVER = BUILD / "server" / "cache_server"


def tracepoints_work():
    if not shutil.which("perf"):
        return False
    r = subprocess.run(["perf", "stat", "-e", "raw_syscalls:sys_enter", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    return r.returncode == 0


@pytest.mark.skipif(not (shutil.which("wrk") and shutil.which("valgrind") and tracepoints_work()),
                    reason="needs wrk, valgrind and perf tracepoints (scripts/setup.sh --peers)")
def test_profile_counts_writes_syscalls_and_instructions(tmp_path):
    if not SERVER.exists():
        pytest.skip(f"no {SERVER}")
    env = dict(os.environ, CACHE_SERVER=str(SERVER), PIPELINES="16", DURATION="1",
               CALLGRIND_DURATION="1", NO_RECORD="1")
    out = tmp_path / "profile"
    subprocess.run(python_module("profile_server", out), env=env, cwd=ROOT, check=True,
                   timeout=240, capture_output=True)
    rows = {r["variant"]: r for r in json.loads((out / "profile.json").read_text())}
    assert set(rows) == {"baseline", "optimized"}
    for r in rows.values():
        assert r["pipeline"] == 16 and r["requests"] > 1000
        assert 0 < r["syscalls_per_req"] < 5 and r["instr_per_req"] > 100
        assert 0.9 / 16 < r["reads_per_req"] < 0.5  # 16 requests arrive per wrk write
    assert rows["baseline"]["writes_per_req"] == pytest.approx(1.0, abs=0.02)
    assert rows["optimized"]["writes_per_req"] < 0.5
    md = (out / "PROFILE.md").read_text()
    for r in rows.values():
        line = next(l for l in md.splitlines() if l.startswith(f"| {r['variant']} | 16 |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2] == f"{r['req_per_s']:,.0f}"
        assert cells[6] == f"{r['syscalls_per_req']:.2f}"
        assert cells[8] == f"{r['writes_per_req']:.3f}"
        assert cells[9] == f"{r['instr_per_req']:,.0f}"


def test_report_embeds_the_profile(tmp_path):
    write_run(tmp_path)
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "PROFILE.md").write_text(
        "# Server profile: cost per GET hit\n\nintro\n\n## Sub\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    md = report(tmp_path)
    head = md.index("## Server profile: syscalls, CPU and instructions per request")
    assert md.index("### Sub", head) > head
    assert "| 1 | 2 |" in md[head:]
    assert "# Server profile: cost per GET hit" not in md


def test_report_without_a_profile_has_no_profile_section(tmp_path):
    write_run(tmp_path)
    assert not re.search(r"^## Server profile", report(tmp_path), re.M)
