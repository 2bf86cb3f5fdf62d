"""resources — what a measured process and the disk did over a with-block: a server's CPU from its
process CPU clock (nanoseconds, exited threads included), CPU ticks of processes (/proc/PID/stat
utime+stime, a PostgreSQL postmaster's tree with its exited backends through cutime/cstime) and
the disk's %util as iostat computes it (/proc/diskstats io_ticks).
The arithmetic is pure and unit-tested (tests/scripts/test_studies_common.py, test_harness.py).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def diskstats_fields(line: str) -> list:
    """A /proc/diskstats line as a list of ints (the name, column 3, kept as a str)."""
    cols = line.split()
    if len(cols) < 14:
        raise ValueError(f"not a /proc/diskstats line: {line!r}")
    return [int(cols[0]), int(cols[1]), cols[2]] + [int(c) for c in cols[3:]]


def disk_delta(before: str, after: str, elapsed_s: float) -> dict:
    """iostat's %util and rates between two /proc/diskstats lines of one device: %util = Δ io_ticks
    (column 13, ms with I/O in flight) ÷ elapsed ms × 100, capped at 100 as iostat does; writes/s
    from column 8; flushes/s from column 19 (None on kernels without it)."""
    b, a = diskstats_fields(before), diskstats_fields(after)
    if b[2] != a[2]:
        raise ValueError(f"two devices: {b[2]} and {a[2]}")
    if elapsed_s <= 0:
        raise ValueError("elapsed time must be positive")
    out = {"device": a[2], "io_ms": a[12] - b[12],
           "util_pct": min(100.0, 100.0 * (a[12] - b[12]) / (elapsed_s * 1000.0)),
           "writes_per_s": (a[7] - b[7]) / elapsed_s, "flushes_per_s": None}
    if len(a) >= 19 and len(b) >= 19:
        out["flushes_per_s"] = (a[18] - b[18]) / elapsed_s
    return out


def stat_ticks(text: str, children: bool = False) -> int:
    """utime+stime (+cutime+cstime) of a /proc/PID/stat text, in clock ticks. The command (field
    2) may hold spaces and parentheses: fields are counted after the last ')'."""
    rest = text[text.rindex(")") + 2:].split()
    ticks = int(rest[11]) + int(rest[12])
    if children:
        ticks += int(rest[13]) + int(rest[14])
    return ticks


def stat_ppid(text: str) -> int:
    return int(text[text.rindex(")") + 2:].split()[1])


def pid_ticks(pid: int, proc: str = "/proc") -> int | None:
    try:
        return stat_ticks(Path(proc, str(pid), "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def process_cpu_clock(pid: int) -> int:
    """The clock id of a process's CPU clock, as glibc's clock_getcpuclockid() makes it (the
    kernel's CPUCLOCK_SCHED of a whole process: ~pid << 3 | 2)."""
    return (~pid << 3) | 2


def pid_cpu_seconds(pid: int, proc: str = "/proc") -> float | None:
    """A process's CPU seconds, all threads (exited ones included), from its CPU clock in
    nanoseconds; /proc/PID/stat's ticks (10 ms each) when the clock cannot be read. None when the
    process is gone. Ticks are too coarse for a short window: ±10 ms on a 0.13 s window is ±8% of
    a core, and a study's verdict reads a 15% margin."""
    try:
        return time.clock_gettime(process_cpu_clock(pid))
    except OSError:
        ticks = pid_ticks(pid, proc)
        return None if ticks is None else ticks / CLK_TCK


def tree_ticks_count(root_pid: int, proc: str = "/proc") -> tuple[int, int] | None:
    """(CPU ticks, processes) of `root_pid` and every process whose parent it is, exited children
    included (the root's cutime/cstime): PostgreSQL's postmaster and its backends. None when the
    root cannot be read. The root is read last: a child reaped between the two reads counts twice
    rather than not at all."""
    children = []
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) == root_pid:
            continue
        try:
            text = Path(proc, name, "stat").read_text()
            if stat_ppid(text) == root_pid:
                children.append(stat_ticks(text, children=True))
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
    try:
        root = stat_ticks(Path(proc, str(root_pid), "stat").read_text(), children=True)
    except (OSError, ValueError, IndexError):
        return None
    return root + sum(children), 1 + len(children)


def tree_ticks(root_pid: int, proc: str = "/proc") -> int | None:
    """The CPU ticks of tree_ticks_count()."""
    found = tree_ticks_count(root_pid, proc)
    return found[0] if found else None


def cpu_stat(text: str | None = None) -> dict[str, tuple[int, int, int]]:
    """/proc/stat's cpu lines: {"cpu": (total, idle, steal), "cpu0": ...} in jiffies, idle
    counting iowait, total the first eight columns (user .. steal)."""
    if text is None:
        text = Path("/proc/stat").read_text()
    out = {}
    for line in text.splitlines():
        cols = line.split()
        if cols and cols[0].startswith("cpu"):
            v = [int(c) for c in cols[1:9]]
            out[cols[0]] = (sum(v), v[3] + v[4], v[7])
    return out


def steal_pct(before: dict, after: dict) -> float | None:
    """The share of all CPUs' time the hypervisor took between two cpu_stat() snapshots."""
    total = after["cpu"][0] - before["cpu"][0]
    return 100.0 * (after["cpu"][2] - before["cpu"][2]) / total if total > 0 else None


def core_busy_pct(before: dict, after: dict, cpu: int) -> float | None:
    """How busy CPU `cpu` was between two cpu_stat() snapshots, whoever ran on it."""
    name = f"cpu{cpu}"
    if name not in before or name not in after:
        return None
    total = after[name][0] - before[name][0]
    return 100.0 - 100.0 * (after[name][1] - before[name][1]) / total if total > 0 else None


def find_disk(path: Path) -> tuple[str | None, str]:
    """The /proc/diskstats name of the block device holding `path`, and how it was found (or
    None and why not)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return None, f"cannot stat {path}: {e}"
    mm = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    names = {l.split()[2] for l in Path("/proc/diskstats").read_text().splitlines() if l.strip()}
    link = Path("/sys/dev/block", mm)
    if link.exists():
        name = link.resolve().name
        if name in names:
            return name, f"{path} is on {mm} = {name}"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "--target", str(path)],
                             capture_output=True, text=True, timeout=5).stdout.split("\n")[0]
        name = os.path.basename(src.split("[")[0])
        if name in names:
            return name, f"findmnt: {path} is on {src}"
    return None, f"no block device in /proc/diskstats holds {path} (device {mm}: overlay or tmpfs?)"


def diskstats_line(device: str) -> str | None:
    for line in Path("/proc/diskstats").read_text().splitlines():
        cols = line.split()
        if len(cols) >= 14 and cols[2] == device:
            return line
    return None


class Resources:
    """Samples, over its with-block, the CPU of `server_pids` (summed), of PostgreSQL (the tree
    under `db_postmaster_pid`) and the %util of the disk holding `disk_path`. figures() gives
    server_cpu_pct, db_cpu_pct (% of one core), disk_util_pct, disk_device, disk_writes_per_s,
    disk_note and wall_s (None where not measured)."""

    def __init__(self, server_pids: list[int], db_postmaster_pid: int | None = None,
                 disk_path: Path | None = None):
        self.server_pids, self.db_pid = server_pids, db_postmaster_pid
        self.device, self.disk_note = (find_disk(disk_path) if disk_path else (None, "no store"))
        self._fig: dict = {}

    def _snap(self):
        srv = [pid_cpu_seconds(p) for p in self.server_pids]
        db = tree_ticks(self.db_pid) if self.db_pid else None
        disk = diskstats_line(self.device) if self.device else None
        return time.monotonic(), srv, db, disk

    def __enter__(self) -> "Resources":
        self._start = self._snap()
        return self

    def __exit__(self, *exc) -> None:
        t1, srv1, db1, disk1 = self._snap()
        t0, srv0, db0, disk0 = self._start
        wall = max(t1 - t0, 1e-9)
        pct = lambda ticks: 100.0 * ticks / CLK_TCK / wall  # noqa: E731
        server = None
        if self.server_pids and all(a is not None and b is not None for a, b in zip(srv0, srv1)):
            server = 100.0 * sum(b - a for a, b in zip(srv0, srv1)) / wall
        fig = {"wall_s": wall, "server_cpu_pct": server,
               "db_cpu_pct": pct(db1 - db0) if db0 is not None and db1 is not None else None,
               "disk_device": self.device, "disk_util_pct": None, "disk_writes_per_s": None,
               "disk_note": self.disk_note}
        if disk0 and disk1:
            d = disk_delta(disk0, disk1, wall)
            fig["disk_util_pct"], fig["disk_writes_per_s"] = d["util_pct"], d["writes_per_s"]
        self._fig = fig

    def figures(self) -> dict:
        return dict(self._fig)


def child_pids(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if stat_ppid(Path("/proc", name, "stat").read_text()) == pid:
                    out.append(int(name))
    return out
