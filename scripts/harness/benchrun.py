"""benchrun — what a benchmark script's run shares, on procs and resources: its command line
(argparse whose errors are one line and exit status 2), the checks before anything starts (the
CPUs it pins to, the binaries and the flags they must have), its scratch directory (removed on
every exit path), the commands it records (commands.txt), cache_server and peers started by name
with their logs in raw/, and load generators run pinned with their CPU time.

    a = Parser("bench_x", __doc__).parse_args(argv)      # errors: "bench_x: ... (see --help)"
    with scratch_dir("bench_x") as work:
        run = Run(out, work, server_bin, client_bin, server_cpu=0, client_cpu=1)
        srv = run.start_ours("memory", ["--board-maxmem", "64M"])
        rc, real, user, sys_ = run.client([...], out / "raw" / "x.txt")
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import resource
import shlex
import shutil
import string
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

from . import ROOT, procs
from .procs import CacheServer, HarnessError, Process, taskset


class Failure(HarnessError):
    """The run cannot go on: the script exits 1 with this message."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- the command line --------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    """The script's options; the first paragraph of `doc` is the description, the rest the
    epilog. A usage error is one line on stderr, "NAME: message (see --help)", and exit 2."""

    def __init__(self, name: str, doc: str):
        head, _, rest = doc.partition("\n\n")
        super().__init__(prog=f"scripts/{name}.py", description=head, epilog=rest,
                         formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
        self.name = name

    def error(self, message):
        message = message.replace("expected one argument", "needs a value")
        message = re.sub(r"unrecognized arguments: (.*)", r"unknown argument '\1'", message)
        print(f"{self.name}: {message} (see --help)", file=sys.stderr)
        sys.exit(2)

    def whole(self, flag: str, value: str, lo: int, hi: int, what: str) -> int:
        """`value` as a whole number in lo..hi, else the usage error "FLAG 'VALUE' must be WHAT"."""
        if not (value.isdigit() and len(value) <= 9 and lo <= int(value) <= hi):
            self.error(f"{flag} '{value}' must be {what}")
        return int(value)

    def cpus(self, differ: str) -> tuple[int, int]:
        """SERVER_CPU (default 0) and CLIENT_CPU (1) from the environment; `differ` is the
        message when they are not two different CPU numbers."""
        server, client = os.environ.get("SERVER_CPU", "0"), os.environ.get("CLIENT_CPU", "1")
        if not (server.isdigit() and client.isdigit()):
            self.error("SERVER_CPU and CLIENT_CPU must be CPU numbers")
        if server == client:
            self.error(differ)
        return int(server), int(client)


# --- main ----------------------------------------------------------------------------------------

def run_main(name: str, measure: Callable[[], Path], report: str | None = None) -> int:
    """A benchmark script's main once its options are parsed: measure() runs (SIGTERM and SIGHUP
    stop what it started, see procs.stop_all_at_exit) and returns the results directory; then
    scripts/REPORT DIR, when given, writes and prints summary.md. Exit status: 0, 1 when
    something failed ("NAME: why" on stderr), 130 interrupted."""
    procs.stop_all_at_exit()
    try:
        out = measure()
    except HarnessError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    if report and subprocess.run([sys.executable, str(ROOT / "scripts" / report),
                                  str(out)]).returncode:
        print(f"{name}: the report failed (raw files are in {out})", file=sys.stderr)
        return 1
    return 0


# --- before anything starts ----------------------------------------------------------------------

def check_pinning(*cpus: int) -> None:
    for cpu in cpus:
        if subprocess.run(["taskset", "-c", str(cpu), "true"], capture_output=True).returncode:
            online = ""
            with contextlib.suppress(OSError):
                online = Path("/sys/devices/system/cpu/online").read_text().strip()
            raise Failure(f"cannot pin to CPU {cpu} (online: {online or '?'}); "
                          "set SERVER_CPU/CLIENT_CPU")


def require_tools(tools: tuple, packages: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            raise Failure(f"{tool} not found (Debian: apt-get install {packages})")


def help_has(binary: Path, text: str) -> bool:
    """Whether `binary --help` mentions `text`."""
    r = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30)
    return text in r.stdout + r.stderr


def binaries(build: str | None) -> tuple[Path, Path]:
    """cache_server and bench_client of `build` (default build/release); the environment's
    CACHE_SERVER / BENCH_CLIENT name the binaries themselves."""
    build = Path(build) if build else ROOT / "build" / "release"
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


def results_dir(out: str | None, default: str) -> Path:
    """--out (default results/DEFAULT), with raw/ in it; one that holds a run is refused."""
    path = Path(out or ROOT / "results" / default).resolve()
    try:
        (path / "raw").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"cannot create {path}: {e}") from e
    if (path / "points.jsonl").exists():
        raise Failure(f"{path} already holds a run (points.jsonl); pick another --out")
    return path


@contextlib.contextmanager
def scratch_dir(name: str, parent: str | None = None):
    """A fresh directory PARENT/NAME.XXXXXX (PARENT: $TMPDIR or /tmp), removed when the block
    ends, however it ends."""
    parent = Path(parent or os.environ.get("TMPDIR") or "/tmp")
    chars = string.ascii_letters + string.digits
    for _ in range(100):
        path = parent / f"{name}.{''.join(random.choices(chars, k=6))}"
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
            break
    else:
        raise Failure(f"cannot create a temporary directory in {parent}")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- the run ---------------------------------------------------------------------------------

class Run:
    """The servers (by name), the results directory `out` (raw/, commands.txt) and the scratch
    directory `work` of one benchmark run; its servers are pinned to server_cpu, its load
    generators to client_cpu."""

    def __init__(self, out: Path, work: Path, server_bin: Path, client_bin: Path,
                 server_cpu: int, client_cpu: int, server_threads: int = 1):
        self.out, self.raw, self.work = out, out / "raw", work
        self.server_bin, self.client_bin = server_bin, client_bin
        self.server_cpu, self.client_cpu = server_cpu, client_cpu
        self.server_threads = server_threads
        self.servers: dict[str, Process] = {}

    def record_cmd(self, name: str, text: str) -> None:
        """A line of commands.txt: the scratch directory as $TMP, results paths relative, the
        binaries by their names."""
        text = text.replace(str(self.work), "$TMP").replace(f"{self.out}/", "")
        text = text.replace(str(self.client_bin), "bench_client")
        text = text.replace(str(self.server_bin), "cache_server")
        with open(self.out / "commands.txt", "a") as f:
            f.write(f"{name}: {text}\n")

    @staticmethod
    def pinned(cpu: int, argv: list) -> str:
        return f"taskset -c {cpu} " + shlex.join(str(x) for x in argv)

    def start(self, name: str, proc: Process, shown: str) -> Process:
        """Starts a server (a procs.Process pinned to server_cpu), records and logs it."""
        self.servers[name] = proc.start()
        self.record_cmd(f"{name} server", self.pinned(self.server_cpu, proc.argv))
        log(f"{name}: {proc.name.split()[0]} PID {proc.pid} on 127.0.0.1:{proc.port} ({shown}), "
            f"CPU {self.server_cpu}")
        return proc

    def start_ours(self, name: str, flags: list, ready_timeout_s: float = 15) -> CacheServer:
        """cache_server -t SERVER_THREADS FLAGS, its output in raw/server-NAME.log."""
        srv = CacheServer(self.server_bin, ["-t", self.server_threads, *flags],
                          cpu=self.server_cpu, name=f"cache_server ({name})",
                          log_path=self.raw / f"server-{name}.log", stop_timeout_s=15)
        srv.ready_timeout_s = ready_timeout_s
        return self.start(name, srv, " ".join(map(str, flags)))

    def stop(self, *names: str) -> None:
        for name in names:
            self.servers.pop(name).stop()

    def alive(self, name: str) -> Process:
        srv = self.servers[name]
        if not srv.alive:
            said = srv.output()[-2000:] or tail(Path(getattr(srv, "dir", "/-")) / "redis.log", 20)
            raise Failure(f"the {name} server (PID {srv.pid}) died:\n{said}")
        return srv

    def client(self, argv: list, out_path: Path, err_path: Path | None = None,
               timeout_s: float | None = None, stdin: Path | None = None):
        """Runs a load generator pinned to client_cpu, its output into out_path (stderr into
        err_path when given); (exit code, real, user, sys seconds); 124 when timed out."""
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
        return rc, real, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime

    def stats(self, name: str, path: Path) -> dict:
        """GET /stats of our server NAME, kept in `path`."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.servers[name].port}/stats",
                                        timeout=10) as r:
                path.write_bytes(r.read())
            return json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise Failure(f"GET /stats of {name} failed: {e}") from e

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


def tail(path: Path, lines: int = 3) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
