#!/usr/bin/env python3
"""compare_redis_boards.py — our boards (bench_client) beside Redis 7 sorted sets
(redis-benchmark), one board preloaded with --members members, at --conns connections, same
machine.

Operations, each measured on both sides, alternated (Redis first in odd rounds, ours first in
even ones), --repeat rounds, medians:
  update  ZADD b0 __rand_int__ m__rand_int__     vs  bench_client --workload board-update
  rank    ZREVRANK b0 m__rand_int__               vs  bench_client --workload board-score
  top     ZREVRANGE b0 0 99 WITHSCORES            vs  bench_client --workload board-top --top-n 100
plus, for context, our top 100 by wrk (no answer check: bench_client's check of 100 entries
saturates its own core first). Targets (the issue's): update >= 1.0x ZADD, rank >= 1.0x
ZREVRANK, top-100 >= 2.0x ZREVRANGE, resident memory per member <= Redis's.
Preloads: Redis by `redis-cli --pipe` of one ZADD per member (members m%012d: the names
redis-benchmark's m__rand_int__ gives with -r MEMBERS, so ZADD updates and ZREVRANK finds
them), ours by bench_client's own preload (members m<i>); both the same scores, both timed.
Memory: VmRSS of each server before the preloads, right after its own, and settled (12 s after
the last preload, all idle: both allocate with jemalloc, whose background thread returns freed
pages after 10 s); per member = settled delta / members, on a second, memory-only Redis
preloaded with our names m<i> (the target), and on the load's Redis; Redis's used_memory and
our /stats board_bytes for context. Servers (no persistence:
redis-server --save '' --appendonly no; cache_server -t 1, memory-only boards) run on CPU
$SERVER_CPU (0), load generators on CPU $CLIENT_CPU (1). Per point: req/s, p50/p99, the
server's CPU (/proc/PID/stat) and the load generator's (its user+sys over its real time), so
the bound is named. Prints summary.md (tables and the targets as PASS/MISS lines;
scripts/compare_redis_boards_report.py) and writes it, summary.json, commands.txt and the raw
files to --out.

env: SERVER_CPU (0), CLIENT_CPU (1); CACHE_SERVER / BENCH_CLIENT name the binaries themselves;
START_WAIT_S, seconds cache_server may take to start (15); TMPDIR, the parent of the temporary
directory.
Needs redis-server, redis-cli and redis-benchmark (Redis 7; Debian: redis-server, redis-tools),
taskset; wrk for the context point. Runs about --repeat x (7 x (duration + 1.5 s)) plus the
preloads (about 30 s at 1M members): about 5 minutes with the defaults.
Exit status: 0 measured (whatever the targets say), 1 a failure (a message says which),
2 bad usage, 130 interrupted (Ctrl-C; SIGTERM: 143). Everything listens on 127.0.0.1 only, on
free ports; every process started is stopped on exit, and the temporary directory is removed.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scripts import compare_redis_boards_report as boards_report
from scripts.harness import bench, cli, metadata, peers, procs, resources
from scripts.harness.bench import Failure, Run, log, split_conns, tail

ROOT = Path(__file__).resolve().parents[1]

NAME = "compare_redis_boards"
REDIS_CMD = {"update": "ZADD b0 __rand_int__ m__rand_int__", "rank": "ZREVRANK b0 m__rand_int__",
             "top": "ZREVRANGE b0 0 99 WITHSCORES"}
OUR_WORKLOAD = {"update": "board-update", "rank": "board-score", "top": "board-top"}


# --- the command line --------------------------------------------------------------------------

def options() -> cli.Parser:
    p = cli.Parser(NAME, __doc__)
    add = p.add_argument
    add("--members", metavar="N",
        help="members of the board, 100..10000000 (default 1000000; --quick: 20000)")
    add("--conns", metavar="N", default="50", help="connections of every point, 1..1000 "
        "(default 50)")
    add("--duration", metavar="S", help="seconds per point, decimals allowed (default 10; "
        "--quick: 1); wrk runs ceil(S)")
    add("--repeat", metavar="N", help="rounds, 1..20 (default 3; --quick: 1); medians reported")
    add("--out", metavar="DIR", help="results directory (default results/redis-boards-<stamp>/)")
    add("--quick", action="store_true", help="smoke test: few members, short points, one round")
    add("--no-wrk", dest="wrk", action="store_false", help="skip the wrk top-100 context point")
    add("--build", metavar="DIR", help="where cache_server and bench_client are (default "
        "build/release; env CACHE_SERVER / BENCH_CLIENT name the binaries)")
    add("--board-maxmem", metavar="SIZE", help="cache_server --board-maxmem (default 512M, or "
        "320 bytes per member if more)")
    add("--server-threads", metavar="N", default="1",
        help="cache_server -t N (default 1; Redis has one main thread)")
    add("--client-threads", metavar="N", default="2",
        help="most bench_client threads: C connections = T threads x C/T each, T the largest "
        "divisor of C up to N (default 2: 50 = 2 x 25)")
    return p


def parse_args(argv: list[str]):
    p = options()
    a = p.parse_args(argv)
    q = a.quick
    a.members = p.whole("--members", a.members or ("20000" if q else "1000000"), 100,
                        10_000_000, "a whole number 100..10000000")
    a.conns = p.whole("--conns", a.conns, 1, 1000, "a connection count 1..1000")
    a.duration = p.duration(a.duration or ("1" if q else "10"))
    a.repeat = p.whole("--repeat", a.repeat or ("1" if q else "3"), 1, 20, "1..20")
    for flag in ("--server-threads", "--client-threads"):
        dest = flag[2:].replace("-", "_")
        setattr(a, dest, p.whole(flag, getattr(a, dest), 1, 256, "1..256"))
    a.board_maxmem = a.board_maxmem or f"{max(a.members * 320 // 1048576 + 1, 512)}M"
    if not re.fullmatch(r"[0-9]+[KMG]?", a.board_maxmem):
        p.error(f"--board-maxmem '{a.board_maxmem}' is not a size (bytes, or with K/M/G)")
    a.server_cpu, a.client_cpu = p.cpus()
    a.warmup, a.probe_n, a.settle = (0.1, 2000, 1) if q else (1.0, 20000, 12)
    a.wrk_d = max(math.ceil(a.duration), 1)
    # Each point must end: warm-up + duration + a drain bounded by bench_client's 5 s socket
    # timeout; a Redis point is sized to about DURATION s from its probe.
    a.point_timeout = int(3 * a.duration + a.warmup + 30)
    a.preload_timeout = a.members // 2000 + 120
    a.ct, a.ck = split_conns(a.conns, a.client_threads)
    return a


# --- the run ---------------------------------------------------------------------------------

def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def round_or_none(x, digits):
    return None if x is None else round(x, digits)


class Boards(Run):
    """The three servers (redis-mem, redis, ours), the memory readings and the points."""

    def __init__(self, a, *args):
        super().__init__(*args, server_cpu=a.server_cpu, client_cpu=a.client_cpu,
                         server_threads=a.server_threads)
        self.a, self.memory = a, {}

    def start_redis(self, name: str) -> None:
        """No persistence: our boards are memory-only too."""
        flags = ["--appendonly", "no"]
        self.start(name, peers.Redis(self.work / name, flags, cpu=self.server_cpu,
                                     stop_timeout_s=15), " ".join(flags))

    def rcli(self, name: str, *args: str) -> str:
        r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(self.servers[name].port),
                            *args], capture_output=True, text=True, timeout=60)
        if r.returncode:
            raise Failure(f"redis-cli {' '.join(args)} against {name} failed: {r.stderr[-500:]}")
        return r.stdout.replace("\r", "").strip()

    def used_memory(self, name: str) -> int | None:
        m = re.search(r"^used_memory:(\d+)$", self.rcli(name, "info", "memory"), re.M)
        return int(m.group(1)) if m else None

    def redis_preload(self, name: str, resp: Path, key: str) -> None:
        """The ZADDs of `resp` through redis-cli --pipe; memory before and after under KEY."""
        a, pid, out = self.a, self.alive(name).pid, self.raw / f"{name}-preload.txt"
        r0, u0 = rss_kb(pid), self.used_memory(name)
        cmd = ["redis-cli", "-h", "127.0.0.1", "-p", self.servers[name].port, "--pipe"]
        self.record_cmd(f"{name} preload", f"{self.pinned(a.client_cpu, cmd)} < {resp.name}   "
                        f"({a.members} x ZADD b0 SCORE NAME, "
                        "python3 -m scripts.compare_redis_boards_report resp)")
        rc, secs, _, _ = self.client(cmd, out, timeout_s=a.preload_timeout, stdin=resp)
        if rc:
            raise Failure(f"redis-cli --pipe into {name} failed (exit {rc}): {tail(out)}")
        if f"errors: 0, replies: {a.members}" not in out.read_text(errors="replace"):
            raise Failure(f"redis-cli --pipe into {name}: {tail(out, 1)}")
        n = int(self.rcli(name, "zcard", "b0") or 0)
        if n != a.members:
            raise Failure(f"{name} holds {n} members after the preload, not {a.members}")
        r1, u1 = rss_kb(pid), self.used_memory(name)
        self.memory[key] = {"rss_before_kb": r0, "rss_after_kb": r1, "used_memory_before": u0,
                            "used_memory_after": u1, "members": n, "preload_s": round(secs, 3)}
        log(f"{name}: {a.members} members in {secs:.2f} s; RSS {r0} -> {r1} kB "
            f"({(r1 - r0) * 1024 / a.members:.1f} B/member), used_memory "
            f"{((u1 or 0) - (u0 or 0)) / a.members:.1f} B/member")

    def ours_preload(self) -> None:
        a, pid = self.a, self.alive("ours").pid
        r0, t0 = rss_kb(pid), time.monotonic()
        d = self.board_preload("ours", a.members, 1, a.preload_timeout, "   (POST /reset, then "
                               "every member PUT once; one measured request)")
        wall = time.monotonic() - t0
        st = self.stats("ours", self.raw / "ours-preload-stats.json")
        n, size = st["board_members"], st["board_bytes"]
        if n != a.members:
            raise Failure(f"our board holds {n} members after the preload, not {a.members}")
        r1, secs = rss_kb(pid), d["meta"]["preload"]["seconds"]
        self.memory["ours"] = {"rss_before_kb": r0, "rss_after_kb": r1, "board_members": n,
                               "board_bytes": size, "members": n, "preload_s": secs,
                               "preload_wall_s": round(wall, 3)}
        log(f"ours: {a.members} members in {secs:.2f} s; RSS {r0} -> {r1} kB "
            f"({(r1 - r0) * 1024 / a.members:.1f} B/member), board_bytes "
            f"{size / a.members:.1f} B/member")

    def settle(self) -> None:
        """RSS once more when every server has been idle SETTLE s."""
        time.sleep(self.a.settle)
        for name, key in (("redis-mem", "redis_same"), ("redis", "redis_load"), ("ours", "ours")):
            self.memory[key]["rss_settled_kb"] = rss_kb(self.alive(name).pid)
            self.memory[key]["settle_s"] = float(self.a.settle)
        log(f"RSS {self.a.settle}s after the preloads: " + " ".join(
            f"{k} {m['rss_settled_kb']}" for k, m in self.memory.items()) + " (kB)")

    # --- points -----------------------------------------------------------------------------

    def measured(self, name: str, tag: str, argv: list, out: Path, err: Path | None = None):
        """One measured load against the server NAME: (exit code, the point's readings: the
        server's CPU ticks, both cores' busy %, the steal, the client's times in raw/TAG.time)."""
        pid = self.alive(name).pid
        k0, s0 = resources.pid_ticks(pid) or 0, resources.cpu_stat()
        rc, real, _, _ = self.client(argv, out, err, timeout_s=self.a.point_timeout,
                                     times=self.raw / f"{tag}.time")
        k1, s1 = resources.pid_ticks(pid) or 0, resources.cpu_stat()
        self.alive(name)
        return rc, {
            "client_times": f"raw/{tag}.time", "wall_s": round(real, 6), "server_ticks": [k0, k1],
            "server_core_busy_pct": round_or_none(
                resources.core_busy_pct(s0, s1, self.server_cpu), 1),
            "client_core_busy_pct": round_or_none(
                resources.core_busy_pct(s0, s1, self.client_cpu), 1),
            "steal_pct": round_or_none(resources.steal_pct(s0, s1), 2)}

    def redis_point(self, op: str, rep: int, order: int) -> None:
        """A probe sizes -n to about DURATION s, then the measured run."""
        a, tag = self.a, f"{op}-redis-r{rep}"
        base = ["redis-benchmark", "-h", "127.0.0.1", "-p", self.alive("redis").port,
                "-c", a.conns, "-r", a.members, "-P", 1, "--csv"]
        words = REDIS_CMD[op].split()
        probe = self.raw / f"{tag}-probe.csv"
        if self.client(base + ["-n", a.probe_n, *words], probe, timeout_s=a.point_timeout)[0]:
            raise Failure(f"redis-benchmark probe ({op}) failed: {tail(probe)}")
        rate = boards_report.redis_csv(probe)[0]
        if not rate:
            raise Failure(f"redis-benchmark probe ({op}) printed no rate: {tail(probe)}")
        n = max(int(rate * a.duration + 0.5), 20 * a.conns, 1000)
        if rep == 1:
            self.record_cmd(f"{op} redis", f"{self.pinned(a.client_cpu, base)} -n N "
                            f"{REDIS_CMD[op]}   (N = probe rate x {a.duration:g} s; probe: "
                            f"-n {a.probe_n})")
        rc, fig = self.measured("redis", tag, base + ["-n", n, *words], self.raw / f"{tag}.csv",
                                self.raw / f"{tag}.err")
        if rc:
            raise Failure(f"redis-benchmark ({op}) failed (exit {rc}): "
                          f"{tail(self.raw / f'{tag}.err')}")
        zc = int(self.rcli("redis", "zcard", "b0") or 0)
        if zc != a.members:
            raise Failure(f"after {op} Redis's b0 holds {zc} members, not {a.members} (member "
                          "names do not match?)")
        self.emit({"op": op, "system": "redis", "rep": rep, "order": order,
                   "raw": f"raw/{tag}.csv", "stderr": f"raw/{tag}.err", "n": n,
                   "probe_n": a.probe_n, "probe_rps": rate, "zcard_after": zc, **fig})
        log(f"{tag}: {boards_report.redis_csv(self.raw / f'{tag}.csv')[0] or 0:.0f} req/s "
            f"(n={n}, probe {rate:g} req/s)")

    def ours_point(self, op: str, rep: int, order: int) -> None:
        a, tag, srv = self.a, f"{op}-ours-r{rep}", self.alive("ours")
        cmd = [self.client_bin, "-s", "127.0.0.1", "-p", srv.port, "--workload",
               OUR_WORKLOAD[op], "--boards", 1, "--members", a.members, "--threads", a.ct,
               "--connections-per-thread", a.ck, "-d", f"{a.duration:g}s", "--warmup",
               f"{a.warmup:g}s", "--no-preload", "--seed", rep, "--server-pid", srv.pid,
               "--json", self.raw / f"{tag}.json", "-q"] + (["--top-n", 100] if op == "top" else [])
        if rep == 1:
            self.record_cmd(f"{op} ours",
                            self.pinned(a.client_cpu, cmd).replace("--seed 1", "--seed REP"))
        rc, fig = self.measured("ours", tag, cmd, self.raw / f"{tag}.txt")
        if rc:
            raise Failure(f"bench_client ({op}) failed (exit {rc}): "
                          f"{tail(self.raw / f'{tag}.txt')}")
        self.emit({"op": op, "system": "ours", "rep": rep, "order": order,
                   "raw": f"raw/{tag}.json", **fig})
        p = json.loads((self.raw / f"{tag}.json").read_text())["points"][0]
        log(f"{tag}: {p['throughput_rps']:.0f} req/s, {p['errors']} errors, hit rate "
            f"{p.get('hit_rate')}, server CPU {p.get('server_cpu_pct')}%, client CPU "
            f"{p.get('client_cpu_pct')}%")

    def wrk_point(self, rep: int, order: int) -> None:
        """Our top 100 by wrk (answers not checked)."""
        a, tag = self.a, f"top-wrk-r{rep}"
        cmd = ["wrk", "-t", 1, "-c", a.conns, "-d", f"{a.wrk_d}s", "--timeout", "10s",
               "--latency", f"http://127.0.0.1:{self.alive('ours').port}/board/b0/top?n=100"]
        if rep == 1:
            self.record_cmd("top wrk", self.pinned(a.client_cpu, cmd))
        rc, fig = self.measured("ours", tag, cmd, self.raw / f"{tag}.txt")
        if rc:
            raise Failure(f"wrk failed (exit {rc}): {tail(self.raw / f'{tag}.txt')}")
        self.emit({"op": "top", "system": "ours-wrk", "rep": rep, "order": order,
                   "raw": f"raw/{tag}.txt", **fig})
        log(f"{tag}: {boards_report.wrk_text(self.raw / f'{tag}.txt')[0] or 0:.0f} req/s")


def preloads(a, b: Boards) -> None:
    """Steps 1 to 3: the three servers (a Redis for the memory target only, with our names; the
    load's Redis; ours), Redis's preload files (the same scores, our names and the load's), the
    preloads, the settled RSS."""
    b.start_redis("redis-mem")
    b.start_redis("redis")
    b.start_ours("ours", ["--board-maxmem", a.board_maxmem])
    t0 = time.monotonic()
    same, padded = b.work / "same.resp", b.work / "padded.resp"
    boards_report.write_resp(a.members, same, padded)
    log(f"RESP preload files ({a.members} members x 2) in {time.monotonic() - t0:.1f} s")
    b.redis_preload("redis-mem", same, "redis_same")
    b.redis_preload("redis", padded, "redis_load")
    same.unlink()
    padded.unlink()
    b.ours_preload()
    b.settle()
    b.stop("redis-mem")


def rounds(a, b: Boards) -> None:
    """Step 4: each round runs the three operations, Redis first in odd rounds."""
    for rep in range(1, a.repeat + 1):
        for op in ("update", "rank", "top"):
            wrk = op == "top" and a.wrk
            if rep % 2:
                b.redis_point(op, rep, 1)
                b.ours_point(op, rep, 2)
                if wrk:
                    b.wrk_point(rep, 3)
            else:
                b.ours_point(op, rep, 1)
                if wrk:
                    b.wrk_point(rep, 2)
                b.redis_point(op, rep, 3)


def finish(b: Boards) -> None:
    """Step 5: both boards still hold every member; RSS at the end; memory.json."""
    n = b.stats("ours", b.raw / "ours-final-stats.json")["board_members"]
    if n != b.a.members:
        raise Failure(f"after the load our board holds {n} members, not {b.a.members}")
    b.memory["redis_load"]["rss_end_kb"] = rss_kb(b.alive("redis").pid)
    b.memory["ours"]["rss_end_kb"] = rss_kb(b.alive("ours").pid)
    with contextlib.suppress(Failure):
        (b.raw / "redis-info-memory.txt").write_text(b.rcli("redis", "info", "memory") + "\n")
    (b.out / "memory.json").write_text(json.dumps(b.memory, indent=1))
    b.stop("redis", "ours")


# --- main ----------------------------------------------------------------------------------------

def prepare(a) -> tuple[Path, Path, str]:
    """The checks before anything starts; (cache_server, bench_client, Redis's version)."""
    bench.require_tools(("redis-server", "redis-benchmark", "redis-cli", "taskset"),
                        "redis-server redis-tools util-linux")
    if a.wrk and shutil.which("wrk") is None:
        print(f"{NAME}: wrk not found: no wrk top-100 point (apt-get install wrk)",
              file=sys.stderr)
        a.wrk = False
    bench.require_cpus(a.server_cpu, a.client_cpu)
    version = peers.redis7_version()
    server_bin, client_bin = bench.binaries(a.build)
    bench.require_help(server_bin, ("--board-maxmem",), "an older build, without boards?")
    bench.require_help(client_bin, ("board-score",), "an older build, without boards?")
    return server_bin, client_bin, version


def write_meta(a, b: Boards, redis_version: str) -> None:
    try:
        mem_total = next(" ".join(line.split()[1:3]) for line in
                         Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemTotal"))
    except (OSError, StopIteration):
        mem_total = ""
    metadata.write(
        b.out, "scripts/compare_redis_boards.py", mem_total=mem_total, members=a.members,
        conns=a.conns, duration_s=a.duration, warmup_s=a.warmup, repeat=a.repeat,
        quick=a.quick, wrk=a.wrk, probe_n=a.probe_n, client_threads=a.ct, per_thread=a.ck,
        server_threads=a.server_threads, board_maxmem=a.board_maxmem, server_cpu=a.server_cpu,
        client_cpu=a.client_cpu, clk_tck=resources.CLK_TCK,
        loadavg_start=metadata.machine()["loadavg"], redis_version=redis_version,
        redis_benchmark=metadata.version(["redis-benchmark", "--version"]),
        cache_server=str(b.server_bin), bench_client=str(b.client_bin))


def measure(a, out: Path, server_bin: Path, client_bin: Path, redis_version: str) -> None:
    est = (a.repeat * ((6 + a.wrk) * (a.duration + 0.5) + 3 * a.warmup + 3)
           + a.members / 40000 + a.settle + 5)
    with bench.scratch_dir(NAME) as work:
        log(f"{NAME}: {a.members} members, {a.conns} conns, {a.duration:g}s per point, "
            f"{a.repeat} round(s); about {est:.0f}s; results in {out}")
        log(f"servers on CPU {a.server_cpu}, load generators on CPU {a.client_cpu}; temporary "
            f"files in {work}")
        b = Boards(a, out, work, server_bin, client_bin)
        (out / "commands.txt").write_text("")
        write_meta(a, b, redis_version)
        try:
            preloads(a, b)
            rounds(a, b)
            finish(b)
        finally:
            procs.stop_all()


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    t0, out = time.monotonic(), []

    def run() -> Path:
        server_bin, client_bin, redis_version = prepare(a)
        out.append(bench.results_dir(a.out, f"redis-boards-{bench.stamp()}"))
        measure(a, out[0], server_bin, client_bin, redis_version)
        return out[0]

    rc = bench.run_main(NAME, run, "compare_redis_boards_report")
    if rc == 0:
        log(f"done in {time.monotonic() - t0:.0f} s; summary: {out[0]}/summary.md")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
