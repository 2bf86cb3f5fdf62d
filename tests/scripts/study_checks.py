"""Shared checks of the studies' tests (test_study_*.py): run a study at a reduced size, then hold
every number its section prints against its summary.json, and summary.json against the raw
bench_client JSON it came from; check each verdict follows from its figures and that no server
or database is left running."""
import json
import re
import subprocess
from pathlib import Path

import pytest

from scripts.harness import postgres
from scripts.harness.procs import python_module
from scripts.studies import common

ROOT = Path(__file__).resolve().parents[2]


def need_postgres() -> None:
    """Skips the test, naming the package, when PostgreSQL's server binaries are missing."""
    try:
        postgres.find_bindir()
    except postgres.PgClusterError as e:
        pytest.skip(str(e))


def run_study(name: str, out: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """python3 -m scripts.studies.NAME --out OUT ARGS, from the repository root; it must succeed."""
    r = subprocess.run(python_module(f"studies.{name}", "--out", out, *args), cwd=ROOT,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def load(out: Path) -> tuple[str, dict]:
    return (out / "section.md").read_text(), json.loads((out / "summary.json").read_text())


def cell(x, digits=0) -> str:
    return common.fnum(x, digits)


def check_slo_against_raw(slo: dict, raw_path: Path) -> None:
    """The summary's capacity figures are the raw bench_client --slo JSON's."""
    raw = json.loads(raw_path.read_text())["slo"]
    assert slo["spec"] == raw["spec"]
    assert slo["capacity_rps"] == raw["capacity_rps"]
    assert slo["saturation_rps"] == raw["saturation_rps"]
    assert slo["steps"] == len(raw["steps"])
    if raw["capacity_rps"] is not None:  # the capacity is the highest step that met the bound
        met = [s for s in raw["steps"] if s["meets"]]
        assert all(s["valid"] for s in met)
        assert max(s["rate_rps"] for s in met) == raw["capacity_rps"]


def check_verdict(point: dict, cores=None) -> None:
    who, why = common.verdict(point, cores or {"server": 1, "client": 1})
    assert point["verdict"] == who and point["verdict_why"] == why
    assert point["measured_client"] == common.measured_the_client(point, cores or {"server": 1,
                                                                                   "client": 1})
    busy = [v for v in (point.get("server_cpu_pct"), point.get("client_cpu_pct"),
                        point.get("disk_util_pct")) if v is not None]
    if who == "none saturated":
        assert all(v < common.BOUND_PCT for v in busy)
        both = (point.get("server_cpu_pct") or 0) + (point.get("db_cpu_pct") or 0)
        assert both < common.BOUND_PCT


def check_point_against_raw(point: dict, raw_path: Path) -> None:
    (raw,) = json.loads(raw_path.read_text())["points"]
    assert point["throughput_rps"] == raw["throughput_rps"]
    assert point["client_cpu_pct"] == raw["client_cpu_pct"]
    assert point["errors"] == raw["errors"] == 0, raw["errors_by_code"]


def leaked_cluster(line: str) -> bool:
    """A PostgreSQL cluster of the harness whose creating process has exited (the harness names
    its directory pg_cluster_<creator PID>_...): nobody will remove it. Clusters whose creator
    still runs belong to tests running meanwhile on this machine, and are not this study's."""
    m = re.search(r"/pg_cluster_(\d+)_", line)
    return bool(m) and not Path(f"/proc/{m.group(1)}").exists()


def no_process_left(out: Path) -> None:
    """No cache_server started for this study, no PostgreSQL cluster left behind, still runs."""
    r = subprocess.run(["pgrep", "-af", "cache_server|postgres -D /tmp/pg_cluster_"],
                       capture_output=True, text=True)
    mine = [l for l in r.stdout.splitlines() if str(out) in l or leaked_cluster(l)]
    assert not mine, mine


def figures_exist(out: Path, summary: dict, md: str, study: str) -> None:
    for f in summary["figures"]:
        assert (out / f).stat().st_size > 1000
        assert f"]({study}/{f})" in md
