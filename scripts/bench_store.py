#!/usr/bin/env python3
"""bench_store.py — cache_server's durable tier beside Redis AOF, in one run, same machine.

PUT/SET throughput, 100-byte values, 100,000 keys, one request outstanding per connection, at
each connection count (--conns), the configurations measured back to back per count:
  redis always    redis-server --appendonly yes --appendfsync always  (redis-benchmark -t set)
  ours through    cache_server --store rocksdb:DIR --write-mode through (bench_client put-all)
  redis everysec  redis-server --appendonly yes --appendfsync everysec
  ours behind     cache_server --store rocksdb:DIR --write-mode behind
  ours none       cache_server --store none (memory only: the baseline of write-behind)
then GET-hit throughput at 8 connections (bench_client get-popular, preloaded, all hits) with
and without a store, interleaved none, rocksdb, none, rocksdb, none, rocksdb: medians of 3.
Every server runs pinned to CPU $SERVER_CPU (0), every load generator to $CLIENT_CPU (1); each
configuration gets a fresh data directory. Per point: throughput, both sides' CPU, the store's
commits/s and writes per commit (from /stats before and after), the disk's utilization (as
iostat's %util: delta of "ms doing I/O" in /proc/diskstats for the device holding the data
directory / elapsed ms), writes/s and flushes/s. Prints summary.md (a Markdown table, the
GET-hit ratio and the targets as PASS/FAIL lines; scripts/bench_store_report.py) and writes it
with the raw files to --out.

Processes and measurements come from the harness (scripts/harness/): every server is stopped
and the data directories removed on every exit path. env: SERVER_CPU (0), CLIENT_CPU (1).
Needs redis-server, redis-benchmark and redis-cli (Redis 7), taskset. About 6 x (duration + 1 s) per
connection count + 6 x (duration + 1 s) for GET, plus start-ups: about 3 minutes by default.
Exit status: 0 measured (whatever the targets say), 1 a failure (a message says which), 2 bad
usage, 130 interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness import bench, cli, metadata, peers, procs, resources
from scripts.harness.bench import Failure, log, split_conns

ROOT = Path(__file__).resolve().parents[1]

NAME = "bench_store"
GET_CONNS = 8
PUT_FLAGS = ["--workload", "put-all", "--value-size", "100", "--key-size", "16", "--keys",
             "100000", "--no-reset"]
GET_FLAGS = ["--workload", "get-popular", "--value-size", "100", "--key-size", "16"]


# --- the command line --------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = cli.Parser(NAME, __doc__)
    p.add_argument("--duration", metavar="S", help="seconds per point, decimals allowed (default 5; --quick: 1)")
    p.add_argument("--conns", metavar='"LIST"', default="1 8 50 200", help='connection counts (default "1 8 50 200")')
    p.add_argument("--out", metavar="DIR", help="results directory (default results/store-<stamp>/)")
    p.add_argument("--quick", action="store_true", help="smoke test: short points and warm-ups (default --duration 1)")
    p.add_argument("--build", metavar="DIR", help="where cache_server and bench_client are (default build/release, "
                   "or build/bench-release when only that one has both; env CACHE_SERVER / BENCH_CLIENT name "
                   "the binaries themselves)")
    p.add_argument("--data-dir", metavar="DIR", default=os.environ.get("TMPDIR", "/tmp"),
                   help="parent of the data directories of Redis and RocksDB (default $TMPDIR or /tmp; must be "
                        "a real disk, both systems use the same one)")
    p.add_argument("--server-threads", metavar="N", default="1", help="cache_server -t N (default 1; Redis has one main thread)")
    p.add_argument("--client-threads", metavar="N", default="8",
                   help="most bench_client threads: C connections = T threads x C/T each, T the largest divisor "
                        "of C up to N (default 8: 200 = 8 x 25, 50 = 5 x 10)")
    p.add_argument("--perf", action="store_true",
                   help="also sample our server during every through/behind PUT point (perf record -e cpu-clock "
                        "-g) and report how much of a PUT's server CPU went to RocksDB's Write() and to its "
                        "memtable insert, and the ceilings that implies (needs perf: Debian linux-perf). perf "
                        "shares the client's CPU and slows the server a little: take the targets from a run "
                        "without it")
    a = p.parse_args(argv)
    a.duration = p.duration(a.duration or ("1" if a.quick else "5"))
    a.conn_list = p.conns(a.conns, 4096)
    for flag in ("--server-threads", "--client-threads"):
        dest = flag[2:].replace("-", "_")
        setattr(a, dest, p.whole(flag, getattr(a, dest), 1, None, "a positive integer"))
    a.server_cpu, a.client_cpu = p.cpus()
    if a.quick:
        a.warmup, a.probe_min, a.probe_per_conn = 0.1, 200, 10
    else:
        a.warmup, a.probe_min, a.probe_per_conn = 1.0, 2000, 50
    # Each point must end: warm-up + duration + a drain bounded by bench_client's 5 s timeout.
    a.point_timeout = int(3 * a.duration + a.warmup + 30)
    return a


# --- checks before anything starts ---------------------------------------------------------------

def check_tools(a) -> str:
    """The tools the run needs, the CPUs it pins to, perf when asked; Redis's version."""
    bench.require_tools(("redis-server", "redis-benchmark", "redis-cli", "taskset"),
                        "redis-server redis-tools util-linux")
    bench.require_cpus(a.server_cpu, a.client_cpu)
    if a.perf:
        if shutil.which("perf") is None:
            raise Failure("--perf needs perf (Debian: apt-get install linux-perf)")
        if subprocess.run(["perf", "record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
                          capture_output=True).returncode:
            paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
            raise Failure("--perf: perf record -e cpu-clock does not work here "
                          f"(kernel.perf_event_paranoid? {paranoid})")
    return peers.redis7_version()


# --- one run ---------------------------------------------------------------------------------

class Run(bench.Run):
    """The servers, the output directory and the points of one run."""
    SCRATCH = "$DATA"

    def __init__(self, a, server_bin: Path, client_bin: Path, out: Path, work: Path):
        super().__init__(out, work, server_bin, client_bin, a.server_cpu, a.client_cpu,
                         a.server_threads)
        self.a = a
        self.disk, how = resources.find_disk(work)
        if self.disk is None:
            log(f"warning: {how}; disk utilization is not reported")

    def snapshot(self):
        line = resources.diskstats_line(self.disk) if self.disk else None
        return time.monotonic(), line, resources.cpu_stat()

    def emit_point(self, rec: dict, before, after, extra: dict | None = None) -> None:
        """Appends one point to points.jsonl, with the disk and CPU figures between `before`
        and `after` (snapshots)."""
        (t0, d0, s0), (t1, d1, s1) = before, after
        rec["wall_s"] = round(t1 - t0, 6)
        rec["disk"] = self.disk
        rec["disk_io_ms"] = rec["disk_writes"] = rec["disk_flushes"] = None
        if d0 and d1:
            b, e = resources.diskstats_fields(d0), resources.diskstats_fields(d1)
            rec["disk_io_ms"], rec["disk_writes"] = e[12] - b[12], e[7] - b[7]
            rec["disk_flushes"] = e[18] - b[18] if len(b) >= 19 and len(e) >= 19 else None
        steal = resources.steal_pct(s0, s1)
        rec["steal_pct"] = round(steal, 2) if steal is not None else None
        for side, cpu in (("server", self.a.server_cpu), ("client", self.a.client_cpu)):
            busy = resources.core_busy_pct(s0, s1, cpu)
            rec[f"{side}_core_busy_pct"] = round(busy, 1) if busy is not None else None
        rec.update(extra or {})
        self.emit(rec)

    def start_redis(self, name: str, fsync: str) -> None:
        flags = ["--appendonly", "yes", "--appendfsync", fsync]
        self.start(name, peers.Redis(self.work / name, flags, cpu=self.server_cpu,
                                     stop_timeout_s=15), " ".join(flags))

    # --- points -----------------------------------------------------------------------------

    def redis_point(self, name: str, c: int) -> None:
        """A probe sizes -n to about the point's duration, then the measured run."""
        srv, raw, tag, a = self.alive(name), self.raw, f"{name}-c{c}", self.a
        base = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(srv.port), "-t", "set", "-d", "100",
                "-r", "100000", "-c", str(c), "-P", "1"]
        probe = max(a.probe_per_conn * c, a.probe_min)
        rc, real, _, _ = self.client(base + ["-n", str(probe), "--csv"], raw / f"{tag}-probe.csv",
                                     timeout_s=a.point_timeout)
        if rc:
            raise Failure(f"redis-benchmark probe against {name} (c={c}) failed: "
                          f"{(raw / f'{tag}-probe.csv').read_text()[-500:]}")
        rate = redis_set_rps(raw / f"{tag}-probe.csv") or round(probe / real)
        n = max(int(rate * a.duration + 0.5), 20 * c, 100)
        self.record_cmd(tag, f"taskset -c {a.client_cpu} {shlex.join(base)} -n {n} --csv   "
                             f"(probe: -n {probe}, {rate:g} SET/s)")
        k0, before = resources.pid_ticks(srv.pid), self.snapshot()
        rc = self.client(base + ["-n", str(n), "--csv"], raw / f"{tag}.csv", raw / f"{tag}.err",
                         timeout_s=a.point_timeout, times=raw / f"{tag}.time")[0]
        k1, after = resources.pid_ticks(srv.pid), self.snapshot()
        self.alive(name)
        if rc:
            raise Failure(f"redis-benchmark against {name} (c={c}) failed (exit {rc}): "
                          f"{(raw / f'{tag}.err').read_text()[-500:]}")
        rec = {"part": "put", "system": "redis", "config": name.removeprefix("redis-"), "conns": c,
               "threads": None, "per_thread": None, "rep": 1, "raw": f"raw/{tag}.csv",
               "stats_before": None, "stats_after": None, "rc": rc}
        self.emit_point(rec, before, after, {
            "server_cpu_s": round((k1 - k0) / resources.CLK_TCK, 3) if None not in (k0, k1) else None,
            "client_times": f"raw/{tag}.time", "n": n, "probe_n": probe, "probe_rps": rate})
        log(f"{tag}: {redis_set_rps(raw / f'{tag}.csv')} SET/s (n={n})")

    def ours_point(self, part: str, name: str, config: str, c: int, rep: int, flags: list[str]) -> None:
        srv, raw, a = self.alive(name), self.raw, self.a
        t, k = split_conns(c, a.client_threads)
        tag = f"{name}-c{c}" + (f"-r{rep}" if part == "get" else "")
        cmd = [self.client_bin, "-s", "127.0.0.1", "-p", srv.port, "--threads", t,
               "--connections-per-thread", k, "-d", f"{a.duration:g}s", "--warmup",
               f"{a.warmup:g}s", *flags, "--server-pid", srv.pid, "--json", raw / f"{tag}.json", "-q"]
        self.record_cmd(tag, self.pinned(a.client_cpu, cmd))
        self.stats(name, raw / f"{tag}.stats0.json")
        perf = Perf(self, srv.pid, tag) if a.perf and part == "put" and config != "none" else None
        before = self.snapshot()
        rc = self.client(cmd, raw / f"{tag}.txt", timeout_s=a.point_timeout)[0]
        after = self.snapshot()
        extra = {"perf": perf.finish()} if perf else {}
        self.alive(name)
        self.stats(name, raw / f"{tag}.stats1.json")
        if rc:
            raise Failure(f"bench_client against {name} (c={c}) failed (exit {rc}): "
                          f"{(raw / f'{tag}.txt').read_text()[-500:]}")
        rec = {"part": part, "system": "ours", "config": config, "conns": c, "threads": t,
               "per_thread": k, "rep": rep, "raw": f"raw/{tag}.json",
               "stats_before": f"raw/{tag}.stats0.json", "stats_after": f"raw/{tag}.stats1.json", "rc": rc}
        self.emit_point(rec, before, after, extra)
        p = json.loads((raw / f"{tag}.json").read_text())["points"][0]
        log(f"{tag}: {p['throughput_rps']:.0f} req/s, {p['errors']} errors, server CPU "
            f"{p['server_cpu_pct']}%, client CPU {p['client_cpu_pct']}%")


def redis_set_rps(csv: Path) -> float | None:
    for line in csv.read_text().splitlines():
        cells = [x.strip('"') for x in line.split(",")]
        if cells and cells[0] == "SET" and len(cells) > 1:
            with contextlib.suppress(ValueError):
                return float(cells[1])
    return None


class Perf:
    """perf record of the server during one point, on the client's CPU. It starts disabled and
    the point waits for its answer to "enable" (--control): a perf still attaching when a short
    point ended recorded nothing of it. finish() keeps only the shares of RocksDB's write path
    and of its memtable insert (raw/TAG.perf.json)."""

    def __init__(self, run: Run, pid: int, tag: str):
        self.run, self.tag = run, tag
        self.data, ctl, ack = (run.work / f"{tag}.{x}" for x in ("perf.data", "ctl", "ack"))
        os.mkfifo(ctl)
        os.mkfifo(ack)
        self.ctl = os.open(ctl, os.O_RDWR)  # read-write: opening never blocks
        self.ack = os.open(ack, os.O_RDWR)
        self.log = run.out / "raw" / f"{tag}.perf.log"
        self.proc = procs.Process(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-p", pid, "-D", "-1",
                                   "--control", f"fifo:{ctl},{ack}", "-o", self.data],
                                  cpu=run.a.client_cpu, log_path=self.log).start()
        os.write(self.ctl, b"enable\n")
        ready, _, _ = select.select([self.ack], [], [], 20)
        reply = os.read(self.ack, 64) if ready else b""
        os.close(self.ctl)
        os.close(self.ack)
        if not reply.startswith(b"ack"):
            self.proc.stop(signal.SIGINT)
            raise Failure(f"perf did not start sampling within 20 s (see {self.log})")

    def finish(self) -> str:
        self.proc.stop(signal.SIGINT)
        r = subprocess.run(["perf", "report", "-i", str(self.data), "--children", "--sort", "sym", "-g", "none",
                            "--stdio"], capture_output=True, text=True)
        if r.returncode:
            raise Failure(f"perf report of {self.tag} failed (see {self.log})")
        shares = {"write_pct": 0.0, "memtable_pct": 0.0}
        for line in r.stdout.splitlines():
            cols = line.split()
            if line.startswith("#") or len(cols) < 3:
                continue
            for key, sym in (("write_pct", "rocksdb::DBImpl::WriteImpl"), ("memtable_pct", "rocksdb::MemTable::Add")):
                if cols[-1] == sym and not shares[key]:
                    shares[key] = float(cols[0].rstrip("%"))
        self.data.unlink(missing_ok=True)
        out = self.run.out / "raw" / f"{self.tag}.perf.json"
        out.write_text(json.dumps(shares) + "\n")
        return f"raw/{self.tag}.perf.json"


# --- main ----------------------------------------------------------------------------------------

def write_meta(a, run: Run, fs: str, redis_version: str) -> None:
    metadata.write(
        run.out, "scripts/bench_store.py", duration_s=a.duration, warmup_s=a.warmup, quick=a.quick,
        conns=a.conn_list, get_conns=GET_CONNS, server_cpu=a.server_cpu, client_cpu=a.client_cpu,
        server_threads=a.server_threads, client_threads_max=a.client_threads, clk_tck=resources.CLK_TCK,
        perf=a.perf, loadavg_start=metadata.machine()["loadavg"], data_dir=str(run.work), filesystem=fs,
        disk=run.disk, redis_version=redis_version, cache_server=str(run.server_bin),
        bench_client=str(run.client_bin))


def measure(a, run: Run) -> None:
    # 1. PUT/SET: all five servers up at once (idle ones cost nothing), each count measured back
    #    to back, so that each ratio compares figures taken within seconds of each other.
    run.start_redis("redis-always", "always")
    run.start_redis("redis-everysec", "everysec")
    run.start_ours("through", ["--store", f"rocksdb:{run.work}/through/db", "--write-mode",
                              "through"])
    run.start_ours("behind", ["--store", f"rocksdb:{run.work}/behind/db", "--write-mode", "behind"])
    run.start_ours("none", ["--store", "none"])
    for c in a.conn_list:
        run.redis_point("redis-always", c)
        run.ours_point("put", "through", "through", c, 1, PUT_FLAGS)
        run.redis_point("redis-everysec", c)
        run.ours_point("put", "behind", "behind", c, 1, PUT_FLAGS)
        run.ours_point("put", "none", "none", c, 1, PUT_FLAGS)
    for s in ("redis-always", "redis-everysec"):
        info = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(run.servers[s].port), "info",
                               "persistence"], capture_output=True, text=True)
        (run.out / "raw" / f"{s}-persistence.txt").write_text(info.stdout + info.stderr)
    run.stop("redis-always", "redis-everysec", "through", "behind", "none")
    for d in ("redis-always", "redis-everysec", "through", "behind"):
        shutil.rmtree(run.work / d, ignore_errors=True)
    # 2. GET hit with and without a store (write-through, the default), interleaved, medians of 3.
    run.start_ours("get-none", ["--store", "none"])
    # --allow-reset: bench_client resets the server before its preload, and with a store the
    # full reset needs a token or this flag (docs/server.md, "Security model").
    run.start_ours("get-rocksdb", ["--store", f"rocksdb:{run.work}/get-rocksdb/db",
                                   "--allow-reset"])
    for rep in (1, 2, 3):
        run.ours_point("get", "get-none", "none", GET_CONNS, rep, GET_FLAGS)
        run.ours_point("get", "get-rocksdb", "rocksdb", GET_CONNS, rep, GET_FLAGS)
    run.stop("get-none", "get-rocksdb")


def run_all(a) -> Path:
    """Checks, then the whole run in a scratch directory under --data-dir (removed however the
    run ends); the results directory."""
    server_bin, client_bin = bench.binaries(a.build)
    bench.require_help(server_bin, ("--store", "--write-mode"))
    redis_version = check_tools(a)
    with bench.scratch_dir(NAME, a.data_dir, disk=True) as work:
        fs = bench.filesystem(work)
        out = bench.results_dir(a.out, f"store-{bench.stamp()}")
        run = Run(a, server_bin, client_bin, out, work)
        est = len(a.conn_list) * (5 * a.duration + 3 * a.warmup + 2 * 0.3 * a.duration + 3) + \
            6 * (a.duration + a.warmup + 1) + 10
        log(f"bench_store: {a.duration:g}s per point, conns {' '.join(map(str, a.conn_list))}, GET at "
            f"{GET_CONNS}; about {est:.0f}s; results in {out}")
        log(f"data in {work} (filesystem {fs}, device {run.disk or 'unknown'}); servers on CPU "
            f"{a.server_cpu}, clients on CPU {a.client_cpu}")
        (out / "commands.txt").write_text("")
        write_meta(a, run, fs, redis_version)
        try:
            measure(a, run)
        finally:
            procs.stop_all()
    return out


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    return bench.run_main(NAME, lambda: run_all(a), "bench_store_report")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
