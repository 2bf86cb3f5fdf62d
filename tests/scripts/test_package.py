"""scripts/ as one package (issue 45): no script edits the import path, and every script runs
as `python3 -m scripts.NAME` from the repository root (its --help, or its usage, without an
import error). No binaries needed."""
import subprocess
from pathlib import Path

import pytest

from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
# The scripts with a __main__ block, as modules of the package ("studies.kv_db").
MAINS = sorted(".".join(p.relative_to(SCRIPTS).with_suffix("").parts)
               for p in SCRIPTS.rglob("*.py") if 'if __name__ == "__main__":' in p.read_text())


def test_no_script_edits_the_import_path():
    edits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted(SCRIPTS.rglob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if "sys.path" in line]
    assert edits == []


def test_the_scripts_are_found():
    assert {"bench_store", "experiment", "report", "studies.kv_db", "harness.postgres"} <= set(MAINS)


@pytest.mark.parametrize("module", MAINS)
def test_each_script_runs_as_a_module(module):
    p = subprocess.run(python_module(module, "--help"), cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode in (0, 2), p.stderr  # --help, or a usage error for a subcommand script
    assert (p.stdout + p.stderr).strip()
