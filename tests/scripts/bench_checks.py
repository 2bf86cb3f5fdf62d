"""What the end-to-end tests of the benchmark scripts share: where the scripts and the build are
(EXPERIMENT_TEST_BUILD, default build/release), whether the build (and the machine, and
PostgreSQL) can run them, running one in --quick mode, checking that every server it started is
gone afterwards, and the GET-hit line of the store reports. The scripts log each server they
start as "... PID N on 127.0.0.1:PORT ..." on stderr."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from md_tables import table

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build" / "release"))
SERVER = BUILD / "server" / "cache_server"
CLIENT = BUILD / "client" / "bench_client"


def build_missing(server: Path, client: Path, flags: tuple, lacks: str):
    """Why the built cache_server/bench_client cannot run a benchmark (None: they can): missing,
    a cache_server whose --help lacks one of `flags` (then: "SERVER has `lacks`"), or a machine
    with fewer than the two CPUs the servers and clients are pinned to."""
    for binary in (server, client):
        if not binary.exists():
            return f"no {binary} (build it; EXPERIMENT_TEST_BUILD names another build directory)"
    helptext = subprocess.run([str(server), "--help"], capture_output=True, text=True,
                              timeout=10).stdout
    if any(f not in helptext for f in flags):
        return f"{server} has {lacks} (an older build)"
    if len(os.sched_getaffinity(0)) < 2:
        return "needs 2 CPUs (servers and clients are pinned to CPUs 0 and 1)"
    return None


def run_script(script: Path, args: list, timeout: float) -> subprocess.CompletedProcess:
    """Runs a benchmark script (bash for .sh, this Python for .py); it must succeed."""
    interpreter = "bash" if script.suffix == ".sh" else sys.executable
    p = subprocess.run([interpreter, str(script), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def servers_gone(stderr: str, names: tuple) -> int:
    """Asserts that no server the run logged ("PID N on 127.0.0.1") still runs as one of
    `names` (bytes found in its command line; a zombie counts as gone); returns how many it
    logged."""
    pids = [int(x) for x in re.findall(r"PID (\d+) on 127\.0\.0\.1", stderr)]
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        assert state == "Z" or not any(n in cmdline for n in names), (pid, cmdline)
    return len(pids)


def postgres_missing():
    """None when PostgreSQL can run here; else why not, as a skip reason when PG_OPTIONAL=1, or
    the calling test fails."""
    sys.path.insert(0, str(SCRIPTS))
    from harness import postgres
    try:
        postgres.find_bindir()
    except postgres.PgClusterError as e:
        if os.environ.get("PG_OPTIONAL") == "1":
            return f"PostgreSQL is not installed and PG_OPTIONAL=1: {e}"
        pytest.fail(f"PostgreSQL is not installed: {e} (set PG_OPTIONAL=1 to skip the "
                    "PostgreSQL tests instead)")
    return None


def quick_run(name: str, args: list, timeout: float, missing):
    """A module-scoped fixture: scripts/NAME.py ARGS --build BUILD run once into a fresh
    NAME/out directory, (out, CompletedProcess); a skip when missing() says why it cannot run
    here.

        run = quick_run("bench_store", ["--quick"], 120, missing)"""
    @pytest.fixture(scope="module")
    def run(tmp_path_factory):
        why = missing()
        if why:
            pytest.skip(why)
        out = tmp_path_factory.mktemp(name) / "out"
        return out, run_script(SCRIPTS / f"{name}.py", [*args, "--build", BUILD, "--out", out],
                               timeout)
    return run


def printed_summary(run) -> str:
    """The run's summary.md, which must be what the script printed."""
    out, p = run
    md = (out / "summary.md").read_text()
    assert p.stdout == md  # the summary is what was printed
    return md


def summary_table(run, first: str):
    """The run's printed summary.md (printed_summary) and its table whose header line starts
    with `first`: (the summary, the header's cells, the rows' cells)."""
    md = printed_summary(run)
    return (md, *table(md, first))


def help_text(script: Path) -> str:
    """SCRIPT --help: it exits 0; what it printed."""
    h = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                       timeout=30)
    assert h.returncode == 0, h.stderr
    return h.stdout


def usage_error(script: Path, args: list) -> str:
    """SCRIPT ARGS, a usage error: exit 2, nothing on stdout, one line on stderr, "NAME: what
    (see --help)"; that line."""
    p = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and p.stdout == "", (args, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{script.stem}: "), (args, p.stderr)
    assert lines[0].endswith(" (see --help)"), (args, p.stderr)
    return lines[0]


def check_get_hit_line(md: str, ratio: str, store: str) -> None:
    """The store reports' GET-hit line, "GET-hit ratio (medians of 3, 8 conns, get-popular):
    RATIO = **R** (STORE A req/s [a1, a2, a3] vs none B req/s [b1, b2, b3])": A and B the
    medians of their three runs, R their ratio."""
    m = re.search(r"GET-hit ratio \(medians of 3, 8 conns, get-popular\): " + re.escape(ratio) +
                  r" = \*\*([\d.]+)\*\* \(" + store + r" ([\d,]+) req/s \[([\d, ]+)\] vs none "
                  r"([\d,]+) req/s \[([\d, ]+)\]", md)
    assert m, "no GET-hit line"
    number = lambda x: float(x.replace(",", ""))  # noqa: E731
    found, with_store, without = float(m[1]), number(m[2]), number(m[4])
    runs_with = [number(x) for x in m[3].split(", ")]
    runs_without = [number(x) for x in m[5].split(", ")]
    assert len(runs_with) == len(runs_without) == 3
    assert with_store == sorted(runs_with)[1] and without == sorted(runs_without)[1]
    assert found == pytest.approx(with_store / without, abs=0.01, rel=0.01)


def load_script(path: Path):
    """A script (a report) imported as a module, for its functions."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
