"""bench — what the benchmark scripts on the harness (bench_store.py, bench_postgres.py) share
around their measurements: usage errors in one line (exit 2), the checks of --duration, --conns
and SERVER_CPU/CLIENT_CPU, log lines on stderr, the pinning check, connections split over client
threads, the results directory, the scratch directory on a real disk, and the end of a run (its
exit status, the load average at the end, the report).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import procs
from .procs import HarnessError

DURATION = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")


class Failure(HarnessError):
    """The run cannot go on: exit 1 with this message."""


def log(msg: str) -> None:
    """A progress line on stderr, with the time (stdout is the report's)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- the command line --------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, "NAME: what (see --help)", and exit 2, as the
    shell scripts' were: a missing value "needs a value", an unknown option is an "unknown
    argument 'X'"."""

    def __init__(self, name: str, **kw):
        super().__init__(**kw)
        self.name = name

    def error(self, message):
        message = message.replace("expected one argument", "needs a value")
        message = re.sub(r"unrecognized arguments: (.*)", r"unknown argument '\1'", message)
        print(f"{self.name}: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def check_duration(p: argparse.ArgumentParser, text: str) -> float:
    """--duration as seconds: a decimal number from 0.1 to 600, else a usage error."""
    if not DURATION.fullmatch(text):
        p.error(f"--duration '{text}' is not a number of seconds")
    if not 0.1 <= float(text) <= 600:
        p.error("--duration must be 0.1..600 s")
    return float(text)


def check_conns(p: argparse.ArgumentParser, text: str, most: int) -> list[int]:
    """--conns "LIST": distinct connection counts from 1 to `most`, else a usage error."""
    words = text.split()
    if not words:
        p.error("--conns is empty")
    for c in words:
        if not c.isdigit() or not 1 <= int(c) <= most:
            p.error(f"--conns: '{c}' is not a connection count 1..{most}")
    if len(set(map(int, words))) != len(words):
        p.error("--conns repeats a count")
    return [int(c) for c in words]


def check_cpus(p: argparse.ArgumentParser) -> tuple[int, int]:
    """(server CPU, client CPU) from SERVER_CPU (default 0) and CLIENT_CPU (default 1): two
    different CPU numbers, else a usage error."""
    cpus = (os.environ.get("SERVER_CPU", "0"), os.environ.get("CLIENT_CPU", "1"))
    if not all(c.isdigit() for c in cpus):
        p.error("SERVER_CPU and CLIENT_CPU must be CPU numbers")
    if int(cpus[0]) == int(cpus[1]):
        p.error("SERVER_CPU and CLIENT_CPU must differ")
    return int(cpus[0]), int(cpus[1])


# --- before the run ------------------------------------------------------------------------------

def require_cpus(*cpus: int) -> None:
    """Failure unless taskset can pin to each of `cpus` on this machine."""
    for cpu in cpus:
        if subprocess.run(["taskset", "-c", str(cpu), "true"], capture_output=True).returncode:
            online = Path("/sys/devices/system/cpu/online").read_text().strip()
            raise Failure(f"cannot pin to CPU {cpu} (online: {online}); set SERVER_CPU/CLIENT_CPU")


def split_conns(c: int, most: int) -> tuple[int, int]:
    """C connections as T threads x K each: T the largest divisor of C up to `most`."""
    t = min(most, c)
    while c % t:
        t -= 1
    return t, c // t


def filesystem(path: Path) -> str:
    """The type of the filesystem holding `path` (findmnt's, else stat -f's)."""
    for argv in (["findmnt", "-n", "-o", "FSTYPE", "--target"], ["stat", "-f", "-c", "%T"]):
        with contextlib.suppress(OSError):
            found = subprocess.run(argv + [str(path)], capture_output=True, text=True).stdout
            if found.strip():
                return found.splitlines()[0].strip()
    return "unknown"


def results_dir(out: str | None, default: Path) -> Path:
    """--out (else `default`) with its raw/ created; Failure when it already holds a run."""
    path = Path(out or default)
    try:
        (path / "raw").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"cannot create {path}: {e}") from e
    path = path.resolve()
    if (path / "points.jsonl").exists():
        raise Failure(f"{path} already holds a run (points.jsonl); pick another --out")
    return path


@contextlib.contextmanager
def scratch_dir(parent: str, prefix: str):
    """A fresh directory under --data-dir `parent`, removed when the block ends; yields (its
    path, its filesystem). Failure when `parent` is not a writable directory, or is on tmpfs or
    ramfs (fsync costs nothing there: the run would measure nothing of the disk)."""
    base = Path(parent)
    if not (base.is_dir() and os.access(base, os.W_OK)):
        raise Failure(f"--data-dir {base} is not a writable directory")
    with tempfile.TemporaryDirectory(prefix=prefix, dir=base) as work:
        fs = filesystem(Path(work))
        if fs in ("tmpfs", "ramfs"):
            raise Failure(f"--data-dir {base} is on {fs}: fsync costs nothing there; use a "
                          "directory on a disk")
        yield Path(work), fs


# --- the servers of a run -----------------------------------------------------------------------

class Servers(dict):
    """A run's servers (procs.Process) by name: alive(name) is one, or a Failure with the tail of
    its output when it died; stop(*names) stops and forgets them."""

    def start_cache_server(self, name: str, binary: Path, flags: list, cpu: int,
                           log_dir: Path) -> procs.CacheServer:
        """cache_server FLAGS as `name`, pinned to `cpu`, its output in LOG_DIR/server-NAME.log;
        START_WAIT_S (default 15) seconds to print its listening line, 15 s to stop on TERM (a
        write-behind server flushes then)."""
        srv = procs.CacheServer(binary, flags, cpu=cpu, name=f"cache_server ({name})",
                                log_path=Path(log_dir) / f"server-{name}.log", stop_timeout_s=15)
        srv.ready_timeout_s = float(os.environ.get("START_WAIT_S", 15))
        self[name] = srv.start()
        return srv

    def alive(self, name: str) -> procs.Process:
        srv = self[name]
        if not srv.alive:
            raise Failure(f"the {name} server (PID {srv.pid}) died:\n{srv.output()[-2000:]}")
        return srv

    def stop(self, *names: str) -> None:
        for name in names:
            self.pop(name).stop()


# --- the end -------------------------------------------------------------------------------------

def finish(name: str, body: Callable[[], Path], report: Path) -> int:
    """Runs a benchmark's `body` (it returns its results directory) and then its `report`
    (`python3 REPORT DIR`, which prints summary.md); the exit status: 0, 1 when the run or the
    report failed (a HarnessError's message is printed as "NAME: message"), 130 on Ctrl-C.
    SIGTERM/SIGHUP stop every harness process first (procs.stop_all_at_exit)."""
    procs.stop_all_at_exit()
    try:
        out = body()
        shutil.copy("/proc/loadavg", out / "loadavg_end.txt")
    except HarnessError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    if subprocess.run([sys.executable, str(report), str(out)]).returncode:
        print(f"{name}: the report failed (raw files are in {out})", file=sys.stderr)
        return 1
    log(f"summary: {out}/summary.md")
    return 0
