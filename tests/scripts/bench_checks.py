"""What the end-to-end tests of the benchmark scripts share: whether the build (and the machine)
can run them, running one, and checking that every server it started is gone afterwards. The
scripts log each server they start as "... PID N on 127.0.0.1:PORT ..." on stderr."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path


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


def quick_run(tmp_path_factory, name: str, script: Path, args: list, timeout: float):
    """A benchmark script's run into a fresh NAME/out directory: (out, CompletedProcess)."""
    out = tmp_path_factory.mktemp(name) / "out"
    return out, run_script(script, [*args, "--out", out], timeout)


def printed_summary(run) -> str:
    """The run's summary.md, which must be what the script printed."""
    out, p = run
    md = (out / "summary.md").read_text()
    assert p.stdout == md  # the summary is what was printed
    return md


def load_script(path: Path):
    """A script (a report) imported as a module, for its functions."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
