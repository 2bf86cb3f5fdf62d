"""What the end-to-end tests of the benchmark scripts share: where the build is
(EXPERIMENT_TEST_BUILD, default build/release), whether the build (and the machine, and
PostgreSQL) can run them, running one (`python3 -m scripts.NAME` from the repository root), in
--quick mode too, checking that every server it started is gone afterwards, the table of one
row per connection count, and the GET-hit line of the store reports. The scripts log each
server they start as "... PID N on 127.0.0.1:PORT ..." on stderr."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from md_tables import table
from scripts.harness import postgres
from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]
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


def run_module(module: str, args: list, timeout: float = 30, **kw) -> subprocess.CompletedProcess:
    """`python3 -m scripts.MODULE ARGS` from the repository root (where the package is found),
    its output captured as text."""
    return subprocess.run(python_module(module, *args), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, **kw)


def run_script(module: str, args: list, timeout: float) -> subprocess.CompletedProcess:
    """Runs a benchmark script (run_module); it must succeed."""
    p = run_module(module, args, timeout)
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
    try:
        postgres.find_bindir()
    except postgres.PgClusterError as e:
        if os.environ.get("PG_OPTIONAL") == "1":
            return f"PostgreSQL is not installed and PG_OPTIONAL=1: {e}"
        pytest.fail(f"PostgreSQL is not installed: {e} (set PG_OPTIONAL=1 to skip the "
                    "PostgreSQL tests instead)")
    return None


def quick_run(name: str, args: list, timeout: float, missing):
    """A module-scoped fixture: `python3 -m scripts.NAME ARGS --build BUILD` run once into a
    fresh NAME/out directory, (out, CompletedProcess); a skip when missing() says why it cannot
    run here.

        run = quick_run("bench_store", ["--quick"], 120, missing)"""
    @pytest.fixture(scope="module")
    def run(tmp_path_factory):
        why = missing()
        if why:
            pytest.skip(why)
        out = tmp_path_factory.mktemp(name) / "out"
        return out, run_script(name, [*args, "--build", BUILD, "--out", out], timeout)
    return run


def quick_conns_run(name: str, conns: tuple, timeout: float, missing):
    """quick_run of the store benchmarks: NAME --quick, 0.5 s points at each of `conns`."""
    return quick_run(name, ["--quick", "--duration", "0.5", "--conns", " ".join(map(str, conns))],
                     timeout, missing)


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


def conns_rows(run, header: list[str], conns: tuple) -> list[dict]:
    """The printed summary's table with exactly `header` (found by its first two cells), one row
    per connection count of `conns` in order, each row {column: cell}."""
    _, found, rows = summary_table(run, f"| {header[0]} | {header[1]}")
    assert found == header
    assert [int(r[0]) for r in rows] == list(conns)
    return [dict(zip(header, r)) for r in rows]


def targets_block(md: str) -> list[str]:
    """The lines of the report's "## Targets" code block (blank lines skipped)."""
    block = md.split("## Targets", 1)[1].split("```")[1]
    return [l for l in block.splitlines() if l.strip()]


def target_results(md: str) -> tuple[dict, str]:
    """The targets block as {target: its result (PASS, FAIL, MISS, SKIP)} and its last line,
    the counts ("targets: 3 PASS, 1 FAIL, 2 SKIP")."""
    lines = targets_block(md)
    return {re.sub(r":.*", "", l.split(" ", 1)[1]): l.split(" ", 1)[0] for l in lines[:-1]}, \
        lines[-1]


def help_text(module: str) -> str:
    """python3 -m scripts.MODULE --help: it exits 0; what it printed."""
    h = run_module(module, ["--help"])
    assert h.returncode == 0, h.stderr
    return h.stdout


def usage_error(module: str, args: list) -> str:
    """python3 -m scripts.MODULE ARGS, a usage error: exit 2, nothing on stdout, one line on
    stderr, "NAME: what (see --help)"; that line."""
    p = run_module(module, args)
    assert p.returncode == 2 and p.stdout == "", (args, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{module}: "), (args, p.stderr)
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
