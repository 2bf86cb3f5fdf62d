"""procs — child processes the harness starts: pinned with taskset, their output drained by
threads (so a pipe never fills) into lines and an optional log file, and stopped on every exit
path (context manager; stop_all_at_exit() for scripts killed by a signal).

It owns the one reading of cache_server's start-up line "listening on HOST:PORT", with
", resp on HOST:RESPPORT" after it when --resp-port is given (LISTENING, parse_listening,
parse_resp_port): every script and test that starts cache_server goes through CacheServer.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

# cache_server prints this line, alone, once its listeners are bound (server/main.cc): the HTTP
# one, then the RESP one when --resp-port is given.
LISTENING = re.compile(r"^listening on (\S+):(\d+)(?:, resp on (\S+):(\d+))?$")
READY_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10


class HarnessError(RuntimeError):
    """Something the harness runs failed; the message says what and why (a script's main catches
    it, prints it and exits 1)."""


class ServerError(HarnessError):
    """A process did not start or did not become ready: the message says why (its output's tail)."""


def parse_listening(line: str | bytes) -> tuple[str, int] | None:
    """(host, port) of a "listening on HOST:PORT" line, else None."""
    if isinstance(line, bytes):
        line = line.decode(errors="replace")
    m = LISTENING.match(line.strip())
    return (m.group(1), int(m.group(2))) if m else None


def parse_resp_port(line: str | bytes) -> int | None:
    """The RESP port of a "listening on HOST:PORT, resp on HOST:RESPPORT" line; None for a line
    without the resp part, or another line."""
    if isinstance(line, bytes):
        line = line.decode(errors="replace")
    m = LISTENING.match(line.strip())
    return int(m.group(4)) if m and m.group(4) else None


def taskset(cpu: int | str | None) -> list[str]:
    """The taskset prefix pinning to `cpu` (a CPU number or a taskset list such as "0,2"); none
    when cpu is None, when a single CPU is beyond this machine's or when taskset is missing."""
    if cpu is None or shutil.which("taskset") is None:
        return []
    if isinstance(cpu, int) and (os.cpu_count() or 1) <= cpu:
        return []
    return ["taskset", "-c", str(cpu)]


def python_module(module: str, *args) -> list[str]:
    """The command line that runs the script scripts.MODULE ("report", "studies.crank") with
    ARGS in this interpreter: `python3 -m scripts.MODULE ARGS`. The child finds the package as
    its parent did, both inheriting the working directory (the repository root) or the root on
    PYTHONPATH."""
    return [sys.executable, "-m", f"scripts.{module}", *map(str, args)]


def pin_running(pid: int, cpus: set[int]) -> None:
    """Pins every thread of a running process to `cpus` (taskset -a -p): for processes the
    harness did not start itself, such as the nodes and the front scripts/cluster.sh starts."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that has just exited
            os.sched_setaffinity(int(tid), cpus)


def listening_in_log(log: Path, pid: int | None = None, timeout_s: float = READY_TIMEOUT_S):
    """(host, port) of the first listening line in the log file of a process started elsewhere
    (scripts/cluster.sh starts its nodes in the background): waits up to `timeout_s` while the
    process `pid` runs; None when it exits or the time is up without the line."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError):
            for line in Path(log).read_bytes().splitlines():
                found = parse_listening(line)
                if found:
                    return found
        if time.monotonic() >= deadline or (pid is not None and not _running(pid)):
            return None
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:][:1] != "Z"


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now (the caller binds it soon; a race is possible, retry on failure)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout_s: float, alive=lambda: True) -> bool:
    """True once a TCP connect to host:port succeeds within `timeout_s` (while alive())."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and alive():
        with contextlib.suppress(OSError):
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        time.sleep(0.05)
    return False


_RUNNING: set["Process"] = set()


def stop_all() -> None:
    """Stops every Process still running (atexit and signal handlers call it)."""
    for p in list(_RUNNING):
        with contextlib.suppress(Exception):
            p.stop()


atexit.register(stop_all)


def stop_all_at_exit() -> None:
    """SIGTERM and SIGHUP stop what the harness started, then exit 128+N (Ctrl-C already
    unwinds the with-blocks through KeyboardInterrupt). For scripts run in the background."""
    def handler(signum, _frame):
        stop_all()
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


class Process:
    """One child: argv pinned to `cpu`, stdout (and stderr, unless stderr_apart) drained into
    `stdout_lines` (bytes, newline stripped) and `log_path`. start() returns once ready()
    holds (the base class: at once); stop() signals it, waits `stop_timeout_s`, then kills.
    A context manager: stopped when the block ends, however it ends."""

    ready_timeout_s = READY_TIMEOUT_S

    def __init__(self, argv: list, *, cpu: int | str | None = None, name: str | None = None,
                 log_path: Path | None = None, env: dict | None = None, cwd: Path | None = None,
                 stderr_apart: bool = False, stop_timeout_s: float = STOP_TIMEOUT_S,
                 new_session: bool = True):
        self.argv = [str(a) for a in argv]
        self.cpu, self.env, self.cwd = cpu, env, cwd
        self.name = name or Path(self.argv[0]).name
        self.log_path = Path(log_path) if log_path else None
        self.stderr_apart, self.stop_timeout_s, self.new_session = stderr_apart, stop_timeout_s, new_session
        self.proc: subprocess.Popen | None = None
        self.stdout_lines: list[bytes] = []
        self.stderr_lines: list[bytes] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._log = None

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> "Process":
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            taskset(self.cpu) + self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if self.stderr_apart else subprocess.STDOUT, env=self.env,
            cwd=self.cwd, start_new_session=self.new_session)
        _RUNNING.add(self)
        self._drain(self.proc.stdout, self.stdout_lines)
        if self.stderr_apart:
            self._drain(self.proc.stderr, self.stderr_lines)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self) -> None:
        """Returns once the process is ready; raises ServerError if it exits or times out."""
        if not self._wait(self.ready, self.ready_timeout_s):
            why = "exited" if not self.alive else f"was not ready within {self.ready_timeout_s:g} s"
            raise ServerError(f"{self.name} {why}: {' '.join(self.argv)}\n{self.output()[-2000:]}")

    def ready(self) -> bool:
        return True

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int | None, float, str]:
        """Signals the process, waits up to stop_timeout_s, then kills it; a second Ctrl-C
        kills at once. Returns (exit code, seconds it took, stderr when kept apart)."""
        if self.proc is None:
            return None, 0.0, ""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)
        while self.proc.poll() is None:
            try:
                self.proc.wait(self.stop_timeout_s)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                self.proc.kill()
        elapsed = time.monotonic() - t0
        for t in self._threads:
            t.join(timeout=2)
        _RUNNING.discard(self)
        if self._log:
            self._log.close()
            self._log = None
        return self.proc.returncode, elapsed, b"\n".join(self.stderr_lines).decode(errors="replace")

    def __enter__(self) -> "Process":
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- reading it ---------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        """What it printed so far (stdout, with stderr when not kept apart)."""
        with self._cond:
            return b"\n".join(self.stdout_lines).decode(errors="replace")

    def drain(self) -> None:
        """Kept for callers of the old studies API: the output is drained by threads anyway."""

    def _drain(self, pipe, lines: list[bytes]) -> None:
        def run():
            for raw in iter(pipe.readline, b""):
                with self._cond:
                    lines.append(raw.rstrip(b"\n"))
                    if self._log:
                        self._log.write(raw)
                        self._log.flush()
                    self._cond.notify_all()
            with self._cond:
                self._cond.notify_all()
        t = threading.Thread(target=run, daemon=True, name=f"drain-{self.name}")
        t.start()
        self._threads.append(t)

    def _wait(self, predicate, timeout_s: float) -> bool:
        """Waits until predicate() (called under the lock), while the process runs."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if self.proc.poll() is not None:
                    # Exited: its last lines may still be in the pipe.
                    self._cond.release()
                    try:
                        for t in self._threads:
                            t.join(timeout=2)
                    finally:
                        self._cond.acquire()
                    return predicate()
                self._cond.wait(min(left, 0.1))
            return True


class ListeningServer(Process):
    """A process ready once it prints "listening on HOST:PORT" (cache_server, and the test doubles
    that mimic it): .host, .port, .address; .resp_port when the line names a RESP listener too
    (cache_server --resp-port), else None."""

    def __init__(self, argv: list, **kw):
        super().__init__(argv, **kw)
        self.host, self.port = "", 0
        self.resp_port: int | None = None

    def ready(self) -> bool:
        for line in self.stdout_lines:
            found = parse_listening(line)
            if found:
                self.host, self.port = found
                self.resp_port = parse_resp_port(line)
                return True
        return False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def config_line(self) -> str:
        """cache_server's start-up "config ..." line ("" when it printed none)."""
        for line in self.stdout_lines:
            if line.startswith(b"config "):
                return line.decode(errors="replace").strip()
        return ""

    def connect(self, timeout: float = 10) -> socket.socket:
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s


class CacheServer(ListeningServer):
    """cache_server on `host` and a free port (-p 0; it prints the one it bound), pinned to `cpu`,
    with `flags` after -s/-p (a later -p in flags wins, as in its CLI)."""

    def __init__(self, binary, flags: list | tuple = (), *, host: str = "127.0.0.1", **kw):
        kw.setdefault("name", "cache_server")
        super().__init__([binary, "-s", host, "-p", "0", *flags], **kw)
