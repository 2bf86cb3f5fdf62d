"""bench — a benchmark script's run once its options are parsed (harness.cli parses them): the
checks before anything starts (tools, the CPUs it pins to, the binaries and the flags they must
have), its scratch directory (removed on every exit path; on a real disk when asked) and its
results directory, the run itself (`Run`: commands.txt, cache_server and peers started by name
with their logs in raw/, pinned load generators with their CPU time, /stats, a board preload),
and its end (`run_main`: the exit status, the load average, the report).

    a = parse_args(argv)                                  # harness.cli.Parser
    def measure() -> Path:
        server_bin, client_bin = bench.binaries(a.build)
        out = bench.results_dir(a.out, "x-<stamp>")
        with bench.scratch_dir("bench_x") as work:
            run = bench.Run(out, work, server_bin, client_bin, server_cpu=0, client_cpu=1)
            srv = run.start_ours("memory", ["--board-maxmem", "64M"])
            rc, real, user, sys_ = run.client([...], out / "raw" / "x.txt")
        return out
    return bench.run_main("bench_x", measure, "bench_x_report")
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from . import ROOT, procs
from .procs import CacheServer, HarnessError, Process, taskset


class Failure(HarnessError):
    """The run cannot go on: the script exits 1 (run_main's `failed`) with this message."""


def log(msg: str) -> None:
    """A progress line on stderr, with the time (stdout is the report's)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def tail(path: Path, lines: int = 3) -> str:
    """The last `lines` lines of a file ("" when it cannot be read)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --- the end -------------------------------------------------------------------------------------

def run_main(name: str, measure: Callable[[], Path | None], report: str | None = None,
             failed: int = 1) -> int:
    """A script's main once its options are parsed: measure() runs (SIGTERM and SIGHUP stop what
    it started, see procs.stop_all_at_exit) and returns its results directory, or None; the
    load average at the end goes into it (loadavg_end.txt), then the report, when given
    (`python3 -m scripts.REPORT DIR`), writes and prints summary.md; the last line on stderr
    names the directory (or the summary). Exit status: 0, `failed` (1) when something failed
    ("NAME: why" on stderr), 130 interrupted."""
    procs.stop_all_at_exit()
    try:
        out = measure()
        if out is not None:
            shutil.copy("/proc/loadavg", out / "loadavg_end.txt")
    except HarnessError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return failed
    except KeyboardInterrupt:
        return 130
    if report:
        if subprocess.run(procs.python_module(report, out)).returncode:
            print(f"{name}: the report failed (raw files are in {out})", file=sys.stderr)
            return failed
        log(f"summary: {out}/summary.md")
    elif out is not None:
        log(f"results in {out}")
    return 0


# --- before anything starts ----------------------------------------------------------------------

def require_cpus(*cpus: int | str) -> None:
    """Failure unless taskset can pin to each of `cpus` (numbers or lists) on this machine."""
    for cpu in cpus:
        if subprocess.run(["taskset", "-c", str(cpu), "true"], capture_output=True).returncode:
            online = ""
            with contextlib.suppress(OSError):
                online = Path("/sys/devices/system/cpu/online").read_text().strip()
            raise Failure(f"cannot pin to CPU {cpu} (online: {online or '?'}); "
                          "set SERVER_CPU/CLIENT_CPU")


def require_tools(tools: tuple, packages: str) -> None:
    """Failure naming the first of `tools` not on PATH, and the Debian `packages` to install."""
    for tool in tools:
        if shutil.which(tool) is None:
            raise Failure(f"{tool} not found (Debian: apt-get install {packages})")


def help_has(binary: Path, text: str) -> bool:
    """Whether `binary --help` mentions `text`."""
    r = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30)
    return text in r.stdout + r.stderr


def require_help(binary: Path, texts: tuple, why: str = "an older build?") -> None:
    """Failure "BINARY has no TEXT (WHY)" unless `binary --help` mentions each of `texts`."""
    for text in texts:
        if not help_has(binary, text):
            raise Failure(f"{binary} has no {text} ({why})")


def binaries(build: str | Path | None) -> tuple[Path, Path]:
    """cache_server and bench_client of `build` (default build/release, or build/bench-release
    when only that one has both); the environment's CACHE_SERVER / BENCH_CLIENT name the
    binaries themselves. Failure when one is not an executable."""
    def both(b: Path) -> bool:
        return all(os.access(b / x, os.X_OK)
                   for x in ("server/cache_server", "client/bench_client"))
    default = ROOT / "build" / "release"
    build = Path(build) if build else next(
        (b for b in (default, ROOT / "build" / "bench-release") if both(b)), default)
    server = Path(os.environ.get("CACHE_SERVER") or build / "server" / "cache_server")
    client = Path(os.environ.get("BENCH_CLIENT") or build / "client" / "bench_client")
    for b, what in ((server, "cache_server"), (client, "bench_client")):
        if not os.access(b, os.X_OK):
            raise Failure(f"no {what} at {b} (build it, or pass --build DIR)")
    return server, client


def split_conns(c: int, most: int) -> tuple[int, int]:
    """C connections as T threads x K each: T the largest divisor of C up to `most`."""
    t = min(most, c)
    while c % t:
        t -= 1
    return t, c // t


def stamp() -> str:
    """The local time as a results directory's suffix: 20261127-061500."""
    return time.strftime("%Y%m%d-%H%M%S")


# --- directories ---------------------------------------------------------------------------------

def results_dir(out: str | None, default: str) -> Path:
    """--out (default results/DEFAULT), with raw/ in it; one that holds a run (points.jsonl) is
    refused."""
    path = Path(out or ROOT / "results" / default).resolve()
    try:
        (path / "raw").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"cannot create {path}: {e}") from e
    if (path / "points.jsonl").exists():
        raise Failure(f"{path} already holds a run (points.jsonl); pick another --out")
    return path


def filesystem(path: Path) -> str:
    """The type of the filesystem holding `path` (findmnt's, else stat -f's)."""
    for argv in (["findmnt", "-n", "-o", "FSTYPE", "--target"], ["stat", "-f", "-c", "%T"]):
        with contextlib.suppress(OSError):
            found = subprocess.run(argv + [str(path)], capture_output=True, text=True).stdout
            if found.strip():
                return found.splitlines()[0].strip()
    return "unknown"


@contextlib.contextmanager
def scratch_dir(name: str, parent: str | None = None, disk: bool = False):
    """A fresh directory PARENT/NAME.XXXXXXXX (PARENT: $TMPDIR or /tmp), removed when the block
    ends, however it ends. With `disk` (PARENT is then --data-dir): Failure when PARENT is not
    a writable directory, or is on tmpfs or ramfs (fsync costs nothing there: the run would
    measure nothing of the disk)."""
    base = Path(parent or os.environ.get("TMPDIR") or "/tmp")
    if disk and not (base.is_dir() and os.access(base, os.W_OK)):
        raise Failure(f"--data-dir {base} is not a writable directory")
    try:
        path = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=base))
    except OSError as e:
        raise Failure(f"cannot create a temporary directory in {base}: {e}") from e
    try:
        if disk and filesystem(path) in ("tmpfs", "ramfs"):
            raise Failure(f"--data-dir {base} is on {filesystem(path)}: fsync costs nothing "
                          "there; use a directory on a disk")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- the run ---------------------------------------------------------------------------------

class Run:
    """The servers (by name), the results directory `out` (raw/, commands.txt) and the scratch
    directory `work` of one benchmark run; its servers are pinned to server_cpu, its load
    generators to client_cpu. commands.txt shows `work` as SCRATCH."""
    SCRATCH = "$TMP"

    def __init__(self, out: Path, work: Path, server_bin: Path, client_bin: Path,
                 server_cpu: int, client_cpu: int, server_threads: int = 1):
        self.out, self.raw, self.work = out, out / "raw", work
        self.server_bin, self.client_bin = server_bin, client_bin
        self.server_cpu, self.client_cpu = server_cpu, client_cpu
        self.server_threads = server_threads
        self.servers: dict[str, Process] = {}

    # --- records ----------------------------------------------------------------------------

    def record_cmd(self, name: str, text: str) -> None:
        """A line of commands.txt: the scratch directory as SCRATCH, results paths relative,
        the binaries by their names."""
        text = text.replace(str(self.work), self.SCRATCH).replace(f"{self.out}/", "")
        text = text.replace(str(self.client_bin), "bench_client")
        text = text.replace(str(self.server_bin), "cache_server")
        with open(self.out / "commands.txt", "a") as f:
            f.write(f"{name}: {text}\n")

    def shown(self, argv: list) -> str:
        """A command as a shell would take it."""
        return shlex.join(str(x) for x in argv)

    def pinned(self, cpu: int, argv: list) -> str:
        return f"taskset -c {cpu} " + self.shown(argv)

    def emit(self, rec: dict) -> None:
        """One point into points.jsonl (the report computes everything from it and raw/)."""
        with open(self.out / "points.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")

    # --- servers ----------------------------------------------------------------------------

    def start(self, name: str, proc: Process, shown: str) -> Process:
        """Starts a server (a procs.Process pinned to server_cpu), records and logs it."""
        self.servers[name] = proc.start()
        self.record_cmd(f"{name} server", self.pinned(self.server_cpu, proc.argv))
        log(f"{name}: {proc.name.split()[0]} PID {proc.pid} on 127.0.0.1:{proc.port} ({shown}), "
            f"CPU {self.server_cpu}")
        return proc

    def start_ours(self, name: str, flags: list,
                   ready_timeout_s: float | None = None) -> CacheServer:
        """cache_server -t SERVER_THREADS FLAGS, its output in raw/server-NAME.log; it has
        ready_timeout_s (default: the environment's START_WAIT_S, else 15) seconds to print its
        listening line, 15 s to stop on TERM (a write-behind server flushes then)."""
        srv = CacheServer(self.server_bin, ["-t", self.server_threads, *flags],
                          cpu=self.server_cpu, name=f"cache_server ({name})",
                          log_path=self.raw / f"server-{name}.log", stop_timeout_s=15)
        srv.ready_timeout_s = ready_timeout_s or float(os.environ.get("START_WAIT_S") or 15)
        return self.start(name, srv, " ".join(map(str, flags)))

    def stop(self, *names: str) -> None:
        for name in names:
            self.servers.pop(name).stop()

    def alive(self, name: str) -> Process:
        """The server NAME; a Failure with the tail of its output when it died."""
        srv = self.servers[name]
        if not srv.alive:
            said = srv.output()[-2000:] or tail(Path(getattr(srv, "dir", "/-")) / "redis.log", 20)
            raise Failure(f"the {name} server (PID {srv.pid}) died:\n{said}")
        return srv

    def http(self, name: str, path: str, method: str = "GET") -> tuple[int, bytes]:
        """A request to the server NAME: (status, body)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.servers[name].port}{path}",
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError as e:
            raise Failure(f"{method} {path} of {name} failed: {e}") from e

    def stats(self, name: str, path: Path | None = None) -> dict:
        """GET /stats of our server NAME (kept in `path` when given)."""
        status, body = self.http(name, "/stats")
        if status != 200:
            raise Failure(f"GET /stats of {name} answered {status}")
        if path:
            path.write_bytes(body)
        try:
            return json.loads(body)
        except ValueError as e:
            raise Failure(f"GET /stats of {name} is not JSON: {e}") from e

    # --- load generators --------------------------------------------------------------------

    def client(self, argv: list, out_path: Path, err_path: Path | None = None,
               timeout_s: float | None = None, stdin: Path | None = None,
               times: Path | None = None):
        """Runs a load generator pinned to client_cpu, its output into out_path (stderr into
        err_path when given); (exit code, real, user, sys seconds), the three times also into
        `times` when given ("real user sys", as bash's `time` prints them); 124 when timed
        out."""
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        with open(out_path, "wb") as out, open(err_path or out_path, "ab") as err, \
                open(stdin or os.devnull, "rb") as inp:
            try:
                rc = subprocess.run(taskset(self.client_cpu) + [str(x) for x in argv], stdin=inp,
                                    stdout=out, stderr=err if err_path else subprocess.STDOUT,
                                    timeout=timeout_s).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        real, r1 = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
        user, sys_ = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
        if times:
            times.write_text(f"{real:.3f} {user:.3f} {sys_:.3f}\n")
        return rc, real, user, sys_

    def board_preload(self, name: str, members: int, per_thread: int, timeout_s: float,
                      note: str = "") -> dict:
        """bench_client's preload of one board of `members` members into our server NAME (every
        member PUT once), raw/NAME-preload.{json,txt}; its JSON, checked for errors."""
        cmd = [self.client_bin, "-s", "127.0.0.1", "-p", self.alive(name).port, "--workload",
               "board-score", "--boards", 1, "--members", members, "--threads", 1,
               "--connections-per-thread", per_thread, "-n", 1, "--warmup", 0, "-q", "--json",
               self.raw / f"{name}-preload.json"]
        self.record_cmd(f"{name} preload", self.pinned(self.client_cpu, cmd) + note)
        rc = self.client(cmd, self.raw / f"{name}-preload.txt", timeout_s=timeout_s)[0]
        if rc:
            raise Failure(f"the preload into {name} failed (exit {rc}): "
                          f"{tail(self.raw / f'{name}-preload.txt')}")
        d = json.loads((self.raw / f"{name}-preload.json").read_text())
        if d["meta"]["preload"]["errors"]:
            raise Failure(f"the preload into {name} had errors (raw/{name}-preload.json)")
        return d
