"""The studies' shared measurement library (docs/studies.md).

Each study (kv_db.py, leaderboard.py, threadpool.py, crank.py in this folder) starts its servers
pinned, drives them with bench_client, samples the resources around each point and names the
bottleneck from those figures. What they share lives here:

- Server: a process (cache_server, nginx, ...) pinned with taskset, ready once it prints
  "listening on HOST:PORT", stopped (SIGTERM, then SIGKILL after a bound) on exit and on failure;
- pg_cluster(): a throwaway PostgreSQL cluster (tests/support/pg_cluster.py) with its postmaster
  pinned to the server CPU;
- run_bench(): one bench_client run, pinned and bounded in time, its JSON returned;
- Resources: the CPU of the server's processes, of PostgreSQL (the postmaster and its children,
  exited backends included through cutime/cstime) and the disk's %util as iostat computes it
  (/proc/diskstats io_ticks), over a with-block;
- verdict(): the saturated resource, from those figures and the client's own CPU;
  measured_the_client(): whether such a verdict names the client while the server had more than
  15% of its CPU left (the row measured bench_client, not the server: flagged in the report);
- slo_figures(), fnum(), md_table(), write_section(): reading bench_client --slo and writing a
  study's section.md + summary.json.

The arithmetic (diskstats deltas, /proc/PID/stat ticks, the verdict) is pure and unit-tested
(tests/scripts/test_studies_common.py).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOUND_PCT = 85.0  # a resource this busy (% of its cores, % of the disk's time) is saturated
HEADROOM_PCT = 15.0  # a server with more CPU left than this was not measured by a client-bound row
MEASURED_CLIENT = "measured the client"
LISTENING = re.compile(r"listening on ([0-9.]+):(\d+)")
READY_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
CLK_TCK = os.sysconf("SC_CLK_TCK")


class StudyError(RuntimeError):
    """A study cannot go on (a server did not start, bench_client failed): the message says why."""


def log(study: str, msg: str) -> None:
    print(f"[{study} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="the study's output directory")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--quick", dest="full", action="store_false",
                      help="the quick form (default): fewer levels, shorter points")
    form.add_argument("--full", dest="full", action="store_true",
                      help="the long form: the published grid, longer points")
    p.set_defaults(full=False)
    p.add_argument("--build", type=Path, default=ROOT / "build" / "release",
                   help="build tree holding server/cache_server and client/bench_client "
                        "(default build/release)")
    p.add_argument("--server-cpu", type=int, default=0, help="CPU of the servers (default 0)")
    p.add_argument("--client-cpu", type=int, default=1, help="CPU of bench_client (default 1)")
    p.add_argument("--slo", help="the SLO of the capacity search, bench_client --slo syntax")
    p.add_argument("--duration", help="seconds per point (bench_client -d); the form's default")
    p.add_argument("--slo-precision", type=float, default=None,
                   help="bench_client --slo-precision of the capacity searches (default: the form's)")


def int_list(text: str | None, quick: list[int], full: list[int], full_form: bool) -> list[int]:
    """A comma list of counts from the command line, else the form's default."""
    return [int(x) for x in text.split(",")] if text else (full if full_form else quick)


def binaries(build: Path) -> tuple[Path, Path]:
    server, client = build / "server" / "cache_server", build / "client" / "bench_client"
    for b in (server, client):
        if not b.exists():
            raise StudyError(f"{b} not found: build first (bash scripts/setup.sh --build release)")
    return server, client


def taskset(cpu: int | None) -> list[str]:
    """A taskset prefix for `cpu` (none when cpu is None or the machine has fewer CPUs)."""
    if cpu is None or (os.cpu_count() or 1) <= cpu or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(cpu)]


class Server:
    """A server process pinned to `cpu`; usable as a context manager (stopped on exit)."""

    def __init__(self, argv: list[str], cpu: int | None = 0, name: str = "cache_server",
                 log_dir: Path | None = None, env: dict | None = None):
        self.argv, self.cpu, self.name, self.log_dir, self.env = argv, cpu, name, log_dir, env
        self.proc: subprocess.Popen | None = None
        self.host, self.port = "", 0
        self._log = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "Server":
        log_path = (self.log_dir / f"{self.name}.log") if self.log_dir else None
        if log_path:
            log_path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(taskset(self.cpu) + self.argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=True)
        self._log = open(log_path, "wb") if log_path else None
        deadline = time.monotonic() + READY_TIMEOUT_S
        seen = b""
        os.set_blocking(self.proc.stdout.fileno(), False)
        while time.monotonic() < deadline:
            chunk = self.proc.stdout.read() or b""
            seen += chunk
            m = LISTENING.search(seen.decode(errors="replace"))
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        if not self.port:
            self.stop()
            raise StudyError(f"{self.name} did not start: {' '.join(self.argv)}\n"
                             f"{seen.decode(errors='replace')[-2000:]}")
        if self._log:
            self._log.write(seen)
        return self

    def drain(self) -> None:
        """Reads what the server printed since (so its pipe never fills)."""
        if self.proc and self.proc.stdout:
            with contextlib.suppress(Exception):
                data = self.proc.stdout.read() or b""
                if self._log:
                    self._log.write(data)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.drain()
        if self._log:
            self._log.close()
            self._log = None

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_bench(client: Path, args: list[str], json_path: Path, cpu: int | None = 1,
              timeout_s: float = 600) -> dict:
    """One bench_client run pinned to `cpu`; its JSON. StudyError with stderr's tail on failure."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    argv = taskset(cpu) + [str(client)] + args + ["--json", str(json_path)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise StudyError(f"bench_client did not finish in {timeout_s:.0f} s: {' '.join(argv)}") from e
    (json_path.with_suffix(".txt")).write_text(r.stdout + r.stderr)
    if r.returncode != 0 or not json_path.exists():
        raise StudyError(f"bench_client failed (exit {r.returncode}): {' '.join(argv)}\n"
                         f"{r.stderr[-2000:]}")
    return json.loads(json_path.read_text())


def measure_point(client: Path, bench_args: list[str], json_path: Path, cpu: int | None,
                  server_pids: list[int], db_postmaster_pid: int | None = None,
                  disk_path: Path | None = None, cores: dict | None = None) -> dict:
    """One load level: bench_client with `bench_args` (one point), the resources sampled around
    it, and its verdict. The dict: throughput_rps, requests, errors, mean_us, p99_us,
    client_cpu_pct, the Resources figures, verdict and verdict_why."""
    with Resources(server_pids, db_postmaster_pid, disk_path) as res:
        doc = run_bench(client, bench_args, json_path, cpu=cpu)
    (pt,) = doc["points"]
    fig = res.figures()
    fig["client_cpu_pct"] = pt["client_cpu_pct"]
    cores = cores or {"server": 1, "client": 1}
    who, why = verdict(fig, cores)
    return {"throughput_rps": pt["throughput_rps"], "requests": pt["requests"],
            "errors": pt["errors"], "mean_us": pt["mean_us"], "p99_us": pt["p99_us"], **fig,
            "verdict": who, "verdict_why": why,
            "measured_client": measured_the_client(fig, cores, who)}


# --- /proc arithmetic (pure, unit-tested) ----------------------------------------------------

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
    out = {"device": a[2], "util_pct": min(100.0, 100.0 * (a[12] - b[12]) / (elapsed_s * 1000.0)),
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


def tree_ticks(root_pid: int, proc: str = "/proc") -> int | None:
    """CPU ticks of `root_pid` and every process whose parent it is, exited children included
    (the root's cutime/cstime): PostgreSQL's postmaster and its backends."""
    children = 0
    for name in os.listdir(proc):
        if not name.isdigit() or int(name) == root_pid:
            continue
        try:
            text = Path(proc, name, "stat").read_text()
            if stat_ppid(text) == root_pid:
                children += stat_ticks(text, children=True)
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
    try:
        root = stat_ticks(Path(proc, str(root_pid), "stat").read_text(), children=True)
    except (OSError, ValueError, IndexError):
        return None
    return root + children


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
        srv = [pid_ticks(p) for p in self.server_pids]
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
            server = pct(sum(b - a for a, b in zip(srv0, srv1)))
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


def verdict(fig: dict, cores: dict) -> tuple[str, str]:
    """The saturated resource of a point, from its figures: ("disk", ...) when the disk is at
    least 85% busy; otherwise the CPU consumer nearest its cores' limit among the server
    (server_cpu_pct, of cores["server"]), the database (db_cpu_pct, of cores["db"]; it shares the
    server's CPU when pinned there, so their sum is held against that CPU too) and the client
    (client_cpu_pct, of cores["client"]), when at least 85% of its cores; else none."""
    def share(pct, n):
        return None if pct is None or not n else pct / n
    disk = fig.get("disk_util_pct")
    if disk is not None and disk >= BOUND_PCT:
        return "disk", f"disk {disk:.0f}% busy"
    srv, db, cl = fig.get("server_cpu_pct"), fig.get("db_cpu_pct"), fig.get("client_cpu_pct")
    candidates = []
    if srv is not None or db is not None:
        both = (srv or 0.0) + (db or 0.0)
        if db is not None and cores.get("db_shares_server_cpu", True):
            s = share(both, cores.get("server", 1))
            who = "server CPU" if (srv or 0) >= (db or 0) else "database CPU"
            candidates.append((s, who, f"server CPU {srv or 0:.0f}% + database {db:.0f}% "
                                       f"of {cores.get('server', 1)} core(s)"))
        else:
            if srv is not None:
                candidates.append((share(srv, cores.get("server", 1)), "server CPU",
                                   f"server CPU {srv:.0f}% of {cores.get('server', 1)} core(s)"))
            if db is not None:
                candidates.append((share(db, cores.get("db", 1)), "database CPU",
                                   f"database CPU {db:.0f}% of {cores.get('db', 1)} core(s)"))
    if cl is not None:
        candidates.append((share(cl, cores.get("client", 1)), "client CPU",
                           f"client CPU {cl:.0f}% of {cores.get('client', 1)} core(s)"))
    candidates = sorted((c for c in candidates if c[0] is not None and c[0] >= BOUND_PCT),
                        key=lambda c: -c[0])
    if candidates:  # several may be at their limit at once: all are named, the busiest first
        return " + ".join(c[1] for c in candidates), "; ".join(c[2] for c in candidates)
    parts = [f"server CPU {srv:.0f}%" if srv is not None else None,
             f"database {db:.0f}%" if db is not None else None,
             f"client {cl:.0f}%" if cl is not None else None,
             f"disk {disk:.0f}%" if disk is not None else None]
    return "none saturated", "latency-bound: " + ", ".join(p for p in parts if p) + \
        f" (all below {BOUND_PCT:.0f}%)"


def server_cpu_left_pct(fig: dict, cores: dict) -> float | None:
    """The share of the server's cores its CPU left idle at a point (100 - busy %): the server's
    CPU, plus the database's when PostgreSQL shares the server's CPU (as verdict() counts them).
    None when the server's CPU was not sampled (a --target server without a PID)."""
    srv, db = fig.get("server_cpu_pct"), fig.get("db_cpu_pct")
    if srv is None:
        return None
    busy = srv + ((db or 0.0) if cores.get("db_shares_server_cpu", True) else 0.0)
    return 100.0 - busy / (cores.get("server", 1) or 1)


def measured_the_client(fig: dict, cores: dict, who: str | None = None) -> bool:
    """True when a point's verdict (`who`, else verdict(fig, cores)) names the client CPU while the
    server had more than HEADROOM_PCT (15%) of its CPU left: the row measured bench_client, not
    the server, and the report flags it "measured the client". A server whose CPU was not
    sampled is never flagged (nothing says it had CPU left)."""
    if who is None:
        who = verdict(fig, cores)[0]
    left = server_cpu_left_pct(fig, cores)
    return "client CPU" in who.split(" + ") and left is not None and left > HEADROOM_PCT


def bottleneck_cell(who: str, flagged: bool) -> str:
    """A table's bottleneck cell: the verdict, and the flag when the row measured the client."""
    return f"{who} — **{MEASURED_CLIENT}**" if flagged else who


def saturation(points: list[dict], key: str = "throughput_rps", share: float = 0.95) -> dict:
    """The saturation point of a sweep: the first point reaching `share` of the peak throughput
    (beyond it, more load adds latency, not throughput)."""
    peak = max(p[key] for p in points)
    for p in points:
        if p[key] >= share * peak:
            return p
    return points[-1]


def slo_figures(doc: dict) -> dict:
    """From a bench_client --slo JSON: spec, saturation_rps, capacity_rps (None: not met),
    capacity_percentile_us, steps (count), conclusion."""
    s = doc.get("slo") or {}
    return {"spec": s.get("spec"), "saturation_rps": s.get("saturation_rps"),
            "capacity_rps": s.get("capacity_rps"),
            "capacity_percentile_us": s.get("capacity_percentile_us"),
            "steps": len(s.get("steps") or []), "conclusion": s.get("conclusion")}


def fnum(x, digits: int = 0) -> str:
    """A number as the sections print it ("12,345", "0.118"); "–" for None."""
    if x is None:
        return "–"
    return f"{x:,.{digits}f}"


def md_table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def write_section(out: Path, markdown: str, summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "section.md").write_text(markdown)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def pg_cluster(cpu: int | None, max_connections: int = 100, settings: dict | None = None):
    """A throwaway PostgreSQL cluster (tests/support/pg_cluster.py), its postmaster pinned to
    `cpu` (its backends inherit the affinity), with extra server `settings`. Context manager:
    .conninfo, .postmaster_pid, .log (the server's log file)."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import pg_cluster as pgc  # noqa: E402

    cluster = pgc.PgCluster(settings={"max_connections": max_connections,
                                      "shared_buffers": "256MB", **(settings or {})})

    @contextlib.contextmanager
    def managed():
        try:
            cluster.start()
            pids = cluster.pids()  # the postmaster first, then its children
            if not pids:
                raise StudyError("PostgreSQL started but its postmaster.pid cannot be read")
            if taskset(cpu):
                for p in pids:  # backends started later inherit the postmaster's affinity
                    subprocess.run(["taskset", "-pc", str(cpu), str(p)], capture_output=True)
            cluster.postmaster_pid = pids[0]
            yield cluster
        finally:
            cluster.cleanup()
    return managed()


def psql(conninfo: str, sql: str, timeout_s: float = 120) -> str:
    """Runs SQL with psql against `conninfo`; its output (unaligned, tuples only)."""
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo,
                        "-c", sql], capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise StudyError(f"psql failed: {sql}\n{r.stderr[-1000:]}")
    return r.stdout


def child_pids(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if stat_ppid(Path("/proc", name, "stat").read_text()) == pid:
                    out.append(int(name))
    return out
