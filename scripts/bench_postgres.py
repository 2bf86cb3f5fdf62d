#!/usr/bin/env python3
"""bench_postgres.py — cache_server write-through to PostgreSQL beside the naive design (one
commit per request, pgbench) and beside RocksDB, in one run, same machine.

1. PUT-ALL, 100-byte values, --keys keys, one request outstanding per connection, at each
   connection count (--conns), the three measured back to back per count:
     ours postgres  cache_server --store postgres:CONNINFO --write-mode through (bench_client
                    --workload put-all), PostgreSQL with fsync=on, synchronous_commit=on
     pgbench        pgbench -c C -j C -T S -M prepared, a one-row upsert script: every request
                    its own committed transaction, on a table of the same shape and key count
     ours rocksdb   cache_server --store rocksdb:DIR --write-mode through
   Every point starts with a CHECKPOINT. With --repeat N the sweep runs N times, medians shown.
2. GET-POPULAR (all cache hits) against --store postgres: and --store none, 3 times each,
   alternated (the order swapped every round).
3. Cold-cache read-through: --keys keys PUT through a write-through server (wrk, each key once),
   POST /reset?scope=cache, then every key read once (wrk, --read-conns connections): keys/s.
Per point: throughput, p50/p99 latency, PostgreSQL's CPU (utime+stime of all its processes,
/proc/PID/stat), cache_server's CPU, the load generator's CPU, the disk's %util (as iostat:
delta of /proc/diskstats field 13, ms doing I/O, of the device holding the PostgreSQL data
directory, over elapsed ms; the device is named in the report), writes/s and flushes/s, and the
store's commits (from /stats), so that the bottleneck is named. Servers (cache_server, and
PostgreSQL: its postmaster is pinned as it starts, every backend inherits the CPU, checked
before each point) run on CPU $SERVER_CPU (0); load generators (bench_client, pgbench, wrk) on
CPU $CLIENT_CPU (1). Prints summary.md (Markdown tables, the targets as PASS/MISS lines;
scripts/bench_postgres_report.py) and writes it, summary.json and the raw files to --out.

Processes and measurements come from the harness (scripts/harness/): PostgreSQL from
harness.postgres.pinned_cluster, every cache_server from harness.procs.CacheServer, CPU ticks and
the disk from harness.resources, the run's metadata from harness.metadata.
env: SERVER_CPU (0), CLIENT_CPU (1); CACHE_SERVER / BENCH_CLIENT (the binaries themselves);
START_WAIT_S (15: seconds a cache_server has to print its listening line); PG_BINDIR (where
PostgreSQL's binaries are; default pg_config --bindir, then /usr/lib/postgresql/15/bin); TMPDIR
(the default --data-dir).
Needs PostgreSQL 15 (initdb, pg_ctl, pgbench, psql: postgresql-15), wrk, taskset. Runs about
3 x (duration + 2 s) per connection count and repeat, plus 6 x (duration + 1 s) for GET, plus
the loads (a few seconds each at 100,000 keys, the cold load more at a slow disk): about 4
minutes with the defaults.
Exit status: 0 measured (whatever the targets say), 1 a failure (a message says which), 2 bad
usage, 130 interrupted (Ctrl-C; 143 on SIGTERM, 129 on SIGHUP). Everything listens on 127.0.0.1
only, on free ports; every process started is stopped on every exit path, and the data
directories (the cluster's too) are removed.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from scripts import bench_postgres_report as pgreport  # pg_ticks, pgbench_latency
from scripts.harness import bench, cli, metadata, postgres, procs, resources
from scripts.harness.bench import Failure, log, split_conns, tail
from scripts.harness.procs import HarnessError

ROOT = Path(__file__).resolve().parents[1]

NAME = "bench_postgres"
TABLE_DDL = ("(key bytea primary key, value bytea not null, "
             "updated_at timestamptz not null default now())")
PG_SETTINGS = ("fsync", "synchronous_commit", "wal_sync_method", "shared_buffers",
               "max_connections", "full_page_writes", "wal_level", "checkpoint_timeout",
               "max_wal_size", "commit_delay", "wal_buffers", "autovacuum", "server_version")
UPSERT = ("\\set id random(0, {last})\n"
          "INSERT INTO kv_pgbench(key, value) VALUES (convert_to(lpad(:id::text, 16, 'k'), "
          "'UTF8'), convert_to(rpad(:id::text, 100, 'v'), 'UTF8')) ON CONFLICT (key) DO UPDATE "
          "SET value = EXCLUDED.value, updated_at = now();\n")
GET_FLAGS = ["--workload", "get-popular", "--value-size", "100", "--key-size", "16"]

# The wrk script: one thread, its connections share one counter, so key i is requested once
# (after the last key, a connection re-requests key 0 until the last response is in: at most
# CONNS-1 extra requests). Writes "id t_first t_last ok bad" (CLOCK_MONOTONIC) when the KEYS-th
# response arrives; done() prints wrk's latency percentiles and error counts as JSON.
KEYS_LUA = r'''local ffi = require("ffi")
ffi.cdef[[ typedef struct { long tv_sec; long tv_nsec; } bp_timespec;
           int clock_gettime(int clk, bp_timespec *ts); ]]
local ts = ffi.new("bp_timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local mode, keys, dir, nexti, got, ok, bad, t0, value
function init(args)
  mode, keys, dir = args[1], tonumber(args[2]), args[3]
  nexti, got, ok, bad = 0, 0, 0, 0
  value = string.rep("v", 100)
end
function request()
  if not t0 then t0 = now() end
  local i = nexti
  if i < keys then nexti = nexti + 1 else i = 0 end
  local path = string.format("/key/c%015d", i)
  if mode == "put" then return wrk.format("PUT", path, nil, value) end
  return wrk.format("GET", path)
end
function response(status, headers, body)
  got = got + 1
  if got > keys then return end
  if (mode == "put" and (status == 200 or status == 201 or status == 204)) or
     (mode == "get" and status == 200 and #body == 100) then ok = ok + 1 else bad = bad + 1 end
  if got == keys then
    local t1 = now()
    local f = io.open(dir .. "/done.tmp", "w")
    f:write(string.format("0 %.6f %.6f %d %d\n", t0, t1, ok, bad))
    f:close()
    os.rename(dir .. "/done.tmp", dir .. "/done")
    wrk.thread:stop()
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests": %d, "p50_us": %d, "p99_us": %d, "errors": %d}\n',
    summary.requests, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout))
end
'''


# --- the command line --------------------------------------------------------------------------

# the integer options: (lowest, highest or None, what a value must be)
INT_OPTIONS = {
    "--repeat": (1, 20, "1..20"),
    "--keys": (100, 10_000_000, "100..10000000"),
    "--server-threads": (1, None, "a positive integer"),
    "--client-threads": (1, None, "a positive integer"),
    "--store-connections": (2, 64, "2..64"),
    "--get-conns": (1, 512, "1..512"),
    "--read-conns": (1, 512, "1..512"),
}


def add_options(p: argparse.ArgumentParser) -> None:
    add = p.add_argument
    add("--duration", metavar="S", help="seconds per point, decimals allowed (default 10; "
        "--quick: 1). pgbench's -T takes whole seconds: it runs ceil(S)")
    add("--conns", metavar='"LIST"', default="1 4 16 64",
        help='connection counts of the PUT sweep (default "1 4 16 64")')
    add("--repeat", metavar="N", default="1",
        help="run the PUT sweep N times, interleaved, and report the medians (default 1)")
    add("--keys", metavar="N", help="key space of every part (default 100000; --quick: 2000)")
    add("--out", metavar="DIR", help="results directory (default results/postgres-<stamp>/)")
    add("--quick", action="store_true", help="smoke test: short points, few keys, short warm-ups")
    add("--build", metavar="DIR", help="where cache_server and bench_client are (default "
        "build/release; env CACHE_SERVER / BENCH_CLIENT name the binaries)")
    add("--data-dir", metavar="DIR", default=os.environ.get("TMPDIR", "/tmp"),
        help="parent of the data directories (PostgreSQL's, RocksDB's; default $TMPDIR or /tmp; "
             "must be a real disk)")
    add("--server-threads", metavar="N", default="1", help="cache_server -t N (default 1)")
    add("--client-threads", metavar="N", default="8",
        help="most bench_client threads: C connections = T threads x C/T each, T the largest "
             "divisor of C up to N (default 8)")
    add("--store-connections", metavar="N", default="4",
        help="cache_server --store-connections (default 4: 1 writer, 3 readers)")
    add("--get-conns", metavar="N", default="8",
        help="connections of the GET-POPULAR part (default 8)")
    add("--read-conns", metavar="N", default="16", help="connections of the cold read "
        "(default 16); the load uses the largest of --conns")


def check_args(p: cli.Parser, a: argparse.Namespace) -> None:
    a.duration = p.duration(a.duration or ("1" if a.quick else "10"))
    a.keys = a.keys or ("2000" if a.quick else "100000")
    a.conn_list = p.conns(a.conns, 512)
    for flag, (lo, hi, what) in INT_OPTIONS.items():
        dest = flag[2:].replace("-", "_")
        setattr(a, dest, p.whole(flag, getattr(a, dest), lo, hi, what))
    a.server_cpu, a.client_cpu = p.cpus()


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = cli.Parser(NAME, __doc__)
    add_options(p)
    a = p.parse_args(argv)
    check_args(p, a)
    a.warmup = 0.1 if a.quick else 1.0
    a.pgbench_t = max(1, math.ceil(a.duration))
    # Each point must end: warm-up + duration + a drain bounded by bench_client's 5 s timeout.
    a.point_timeout = int(3 * a.duration + a.warmup + 30)
    # wrk passes over the keys: bounded by this many seconds (at least 200 keys/s, any disk)
    a.wrk_limit = max(a.keys // 200, 60)
    a.load_conns = max(a.conn_list)
    a.pg_max_connections = max(a.conn_list) + 3 * a.store_connections + 10
    return a


# --- checks before anything starts ---------------------------------------------------------------

def check_tools(a) -> Path:
    """The tools the run needs and the CPUs it pins to; pgbench's path. psql is put on PATH
    when only PostgreSQL's bindir has it (harness.postgres.psql runs `psql`)."""
    bench.require_tools(("wrk", "taskset"), "wrk util-linux")
    bench.require_cpus(a.server_cpu, a.client_cpu)
    bindir = Path(postgres.find_bindir())
    pgbench = bindir / "pgbench"
    if not os.access(pgbench, os.X_OK):
        pgbench = Path(shutil.which("pgbench") or bindir / "pgbench")
    if not os.access(pgbench, os.X_OK):
        raise Failure(f"pgbench not found in {bindir} (apt-get install postgresql-15)")
    if shutil.which("psql") is None:
        if not os.access(bindir / "psql", os.X_OK):
            raise Failure(f"psql not found in {bindir} (apt-get install postgresql-client-15)")
        os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    a.pg_bindir = str(bindir)
    return pgbench


def binaries(a) -> tuple[Path, Path]:
    server, client = bench.binaries(a.build)
    bench.require_help(server, ("--store", "--write-mode", "--store-table", "--store-connections",
                                "--store-timeout", "postgres:"),
                       "an older build, without the PostgreSQL store?")
    return server, client


# --- one run ---------------------------------------------------------------------------------

class Run(bench.Run):
    """The cluster, the servers, the output directory and the points of one run."""
    SCRATCH = "$DATA"

    def __init__(self, a, bins: tuple[Path, Path, Path], out: Path, work: Path):
        super().__init__(out, work, *bins[:2], a.server_cpu, a.client_cpu, a.server_threads)
        self.a, self.pgbench = a, bins[2]
        self.disk, self.disk_how = resources.find_disk(work)
        self.pg = None  # the cluster (harness.postgres.PgCluster), once started

    def shown(self, argv: list) -> str:
        """A command as a shell would take it, the conninfo as "$PG"."""
        conninfo = self.pg.conninfo if self.pg else None
        return " ".join(str(x).replace(conninfo, '"$PG"') if conninfo and conninfo in str(x)
                        else shlex.quote(str(x)) for x in argv)

    # --- PostgreSQL -------------------------------------------------------------------------

    def start_pg(self, stack: contextlib.ExitStack) -> None:
        a = self.a
        self.pg = stack.enter_context(postgres.pinned_cluster(
            cpu=a.server_cpu, max_connections=a.pg_max_connections, directory=self.work / "pg"))
        if not self.pg_pinned():
            raise Failure(f"PostgreSQL (postmaster {self.pg.postmaster_pid}) is not on CPU "
                          f"{a.server_cpu}")
        self.record_cmd("postgres", f"harness.postgres.pinned_cluster(cpu={a.server_cpu}, "
                        f"max_connections={a.pg_max_connections}, directory={self.work}/pg)   "
                        "(initdb; pg_ctl start: fsync=on, synchronous_commit=on, "
                        f"shared_buffers=256MB, max_connections={a.pg_max_connections}; then "
                        f"taskset -pc {a.server_cpu} on the postmaster and its processes)")
        log(f"postgres: postmaster PID {self.pg.postmaster_pid} on 127.0.0.1:{self.pg.port}, "
            f"CPU {a.server_cpu} ({a.pg_bindir})")

    def psql(self, sql: str) -> str:
        return postgres.psql(self.pg.conninfo, sql).strip()

    def pg_pinned(self) -> bool:
        """Every PostgreSQL process allowed on the server CPU only; a stray one is re-pinned
        (and said); False when re-pinning failed."""
        cpu, ok = str(self.a.server_cpu), True
        for pid in self.pg.pids():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue  # exited meanwhile
            allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M)
            if not allowed or allowed[1] == cpu:
                continue
            log(f"warning: postgres PID {pid} was on CPUs {allowed[1]}; pinning it to {cpu}")
            ok &= subprocess.run(["taskset", "-a", "-p", "-c", cpu, str(pid)],
                                 capture_output=True).returncode == 0
        return ok

    def pg_ticks(self) -> tuple[int, int]:
        try:
            return pgreport.pg_ticks(self.pg.postmaster_pid)
        except OSError as e:
            raise Failure(f"cannot read PostgreSQL's CPU: {e}") from e

    # --- a point's common measurements ------------------------------------------------------

    def begin(self, server_pid: int | None, checkpoint: bool) -> dict:
        """The CPU, disk and time snapshots a point starts with (after a CHECKPOINT if asked)."""
        if not self.pg_pinned():
            raise Failure(f"cannot keep PostgreSQL on CPU {self.a.server_cpu}")
        if checkpoint:
            self.psql("CHECKPOINT")
        pg, nprocs = self.pg_ticks()
        return {"server_pid": server_pid, "pg": pg, "nprocs": nprocs,
                "server": resources.pid_ticks(server_pid) or 0 if server_pid else None,
                "disk": resources.diskstats_line(self.disk) if self.disk else None,
                "cpu": resources.cpu_stat(), "t": time.time()}

    def end(self, begun: dict) -> dict:
        """The point's fields of points.jsonl, from begin()'s snapshots and the ones now."""
        t1 = time.time()
        pid = begun["server_pid"]
        server = resources.pid_ticks(pid) or 0 if pid else None
        disk = resources.diskstats_line(self.disk) if self.disk else None
        cpu = resources.cpu_stat()
        pg = self.pg_ticks()[0]
        c0 = begun["cpu"]
        busy = {side: resources.core_busy_pct(c0, cpu, n)
                for side, n in (("server", self.a.server_cpu), ("client", self.a.client_cpu))}
        steal = resources.steal_pct(c0, cpu)
        return {"t0": begun["t"], "t1": t1, "wall_s": round(t1 - begun["t"], 6),
                "pg_ticks": [begun["pg"], pg],
                "server_ticks": [begun["server"], server] if pid else None,
                "disk": self.disk, "diskstats_before": begun["disk"], "diskstats_after": disk,
                **{f"{side}_core_busy_pct": round(v, 1) if v is not None else None
                   for side, v in busy.items()},
                "steal_pct": round(steal, 2) if steal is not None else None}

    def timed(self, argv: list, tag: str) -> int:
        """Runs a load generator on the client CPU, its output into raw/TAG.txt and its times
        into raw/TAG.time; its exit code (124: it ran past the point's timeout)."""
        return self.client(argv, self.raw / f"{tag}.txt", timeout_s=self.a.point_timeout,
                           times=self.raw / f"{tag}.time")[0]

    # --- the points -------------------------------------------------------------------------

    def ours_point(self, part: str, name: str, config: str, c: int, rep: int, checkpoint: bool,
                   flags: list[str]) -> None:
        """One bench_client point against the server `name`."""
        a, raw = self.a, self.raw
        srv = self.alive(name)
        t, k = split_conns(c, a.client_threads)
        tag = f"{part}-{config}-c{c}-r{rep}"
        cmd = [self.client_bin, "-s", "127.0.0.1", "-p", srv.port, "--threads", t,
               "--connections-per-thread", k, "-d", f"{a.duration:g}s", "--warmup",
               f"{a.warmup:g}s", *flags, "--server-pid", srv.pid, "--json", raw / f"{tag}.json",
               "-q"]
        if rep == 1:
            self.record_cmd(tag, self.pinned(a.client_cpu, cmd))
        self.stats(name, raw / f"{tag}.stats0.json")
        begun = self.begin(srv.pid, checkpoint)
        rc = self.timed(cmd, tag)
        fields = self.end(begun)
        self.alive(name)
        self.stats(name, raw / f"{tag}.stats1.json")
        if rc:
            raise Failure(f"bench_client against {name} (c={c}) failed (exit {rc}): "
                          f"{tail(raw / f'{tag}.txt', 3)}")
        self.emit({"part": part, "system": "ours", "config": config, "conns": c, "threads": t,
                   "per_thread": k, "rep": rep, "raw": f"raw/{tag}.json",
                   "stats_before": f"raw/{tag}.stats0.json",
                   "stats_after": f"raw/{tag}.stats1.json", "client_times": f"raw/{tag}.time",
                   "rc": rc, **fields})
        with contextlib.suppress(OSError, ValueError, KeyError, IndexError):
            p = json.loads((raw / f"{tag}.json").read_text())["points"][0]
            log(f"{tag}: {p['throughput_rps']:.0f} req/s, {p['errors']} errors, p50 "
                f"{p['p50_us']:.0f} µs, p99 {p['p99_us']:.0f} µs")

    def pgbench_point(self, c: int, rep: int) -> None:
        """One pgbench point: a committed one-row upsert per request, C clients."""
        a, raw, tag = self.a, self.raw, f"put-pgbench-c{c}-r{rep}"
        logs = self.work / "pgbench-logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        cmd = [self.pgbench, "-h", "127.0.0.1", "-p", self.pg.port, "-U", "postgres", "-n", "-f",
               self.work / "upsert.sql", "-c", c, "-j", c, "-T", a.pgbench_t, "-M", "prepared",
               "-l", f"--log-prefix={logs}/log", "postgres"]
        if rep == 1:
            self.record_cmd(tag, self.pinned(a.client_cpu, cmd).replace(str(self.pgbench),
                                                                          "pgbench"))
        begun = self.begin(None, True)
        rc = self.timed(cmd, tag)
        # its backends exit after it: wait (bounded) until they are gone, so that their CPU is
        # in the postmaster's cutime when end() reads it
        for _ in range(50):
            if self.pg_ticks()[1] <= begun["nprocs"]:
                break
            time.sleep(0.1)
        fields = self.end(begun)
        out = raw / f"{tag}.txt"
        if rc:
            raise Failure(f"pgbench (c={c}) failed (exit {rc}): {tail(out, 5)}")
        tps = pgreport.pgbench_tps(out)
        if tps is None:
            raise Failure(f"pgbench (c={c}) printed no tps: {tail(out, 5)}")
        latency = pgreport.pgbench_latency(sorted(logs.glob("log.*")))
        (raw / f"{tag}.latency.json").write_text(json.dumps(latency) + "\n")
        shutil.rmtree(logs, ignore_errors=True)
        self.emit({"part": "put", "system": "pgbench", "config": "pgbench", "conns": c,
                   "threads": c, "per_thread": 1, "rep": rep, "raw": f"raw/{tag}.txt",
                   "latency": f"raw/{tag}.latency.json", "client_times": f"raw/{tag}.time",
                   "rc": rc, **fields})
        log(f"{tag}: {tps:g} tps, p50 {latency['p50_us']} µs, p99 {latency['p99_us']} µs")

    def wrk_pass(self, part: str, name: str, mode: str, c: int) -> None:
        """One wrk thread, C connections, keys c%015d each requested once (mode put or get);
        ends when the Lua script's marker says the last response is in."""
        a, raw, tag = self.a, self.raw, part
        srv, marks = self.alive(name), self.work / f"wrk-{part}"
        marks.mkdir()
        cmd = ["wrk", "-t", "1", "-c", c, "-d", f"{a.wrk_limit}s", "--timeout", "10s", "-s",
               self.work / "keys.lua", f"http://127.0.0.1:{srv.port}", "--", mode, a.keys, marks]
        self.record_cmd(tag, f"taskset -c {a.client_cpu} {self.shown(cmd)}   "
                             "(stopped by SIGINT once every key is answered)")
        self.stats(name, raw / f"{tag}.stats0.json")
        begun = self.begin(srv.pid, False)
        wrk = procs.Process(cmd, cpu=a.client_cpu, name=f"wrk ({part})",
                            log_path=raw / f"{tag}.txt").start()
        try:
            while not (marks / "done").exists() and wrk.alive:
                time.sleep(0.02)
            client_ticks = resources.pid_ticks(wrk.pid) or 0
            fields = self.end(begun)
        finally:
            rc = wrk.stop(signal.SIGINT)[0]
        if not (marks / "done").exists():
            raise Failure(f"wrk ({mode}, {c} conns) did not answer all {a.keys} keys within "
                          f"{a.wrk_limit}s (exit {rc}): {tail(raw / f'{tag}.txt', 5)}")
        self.alive(name)
        self.stats(name, raw / f"{tag}.stats1.json")
        shutil.copy(marks / "done", raw / f"{tag}.marker")
        self.emit({"part": part, "system": "wrk", "config": "postgres", "conns": c, "threads": 1,
                   "per_thread": c, "rep": 1, "raw": f"raw/{tag}.txt",
                   "markers": [f"raw/{tag}.marker"], "stats_before": f"raw/{tag}.stats0.json",
                   "stats_after": f"raw/{tag}.stats1.json", "client_ticks": [0, client_ticks],
                   "rc": rc, **fields})
        _, t0, t1, ok, bad = (marks / "done").read_text().split()[:5]
        span = float(t1) - float(t0)
        log(f"{tag}: {ok} keys in {span:.3f} s = {a.keys / span:.0f} keys/s, {bad} not ok")

    def preload(self, name: str, *store_flags: str) -> None:
        """Every key PUT once through a write-behind server (bench_client's preload: it resets
        the server first), which is then stopped once it has written everything back."""
        # --allow-reset: with a store, the full reset needs a token or this flag.
        srv = self.start_ours(name, [*store_flags, "--write-mode", "behind", "--allow-reset"])
        cmd = [self.client_bin, "-s", "127.0.0.1", "-p", srv.port, "--threads", 4, "--workload",
               "uniform", "--ratio", "0:1:0", *key_flags(self.a), "-n", 1, "--warmup", 0, "-q",
               "--json", self.raw / f"{name}.json"]
        rc = self.client(cmd, self.raw / f"{name}.txt", timeout_s=600)[0]
        if rc:
            raise Failure(f"preloading {name} failed (exit {rc}): "
                          f"{tail(self.raw / f'{name}.txt', 3)}")
        # written back before the stop (TERM flushes too, but the stop's KILL comes after 15 s)
        for _ in range(1200):
            with contextlib.suppress(HarnessError, ValueError):
                if self.stats(name).get("dirty_items", 0) == 0:
                    break
            time.sleep(0.1)
        self.stop(name)
        with contextlib.suppress(OSError, ValueError, KeyError):
            p = json.loads((self.raw / f"{name}.json").read_text())["meta"]["preload"]
            log(f"{name}: {p['keys']} keys in {p['seconds']:.1f} s, {p['errors']} errors")


def key_flags(a) -> list[str]:
    return ["--key-size", "16", "--value-size", "100", "--keys", str(a.keys)]


def pg_store(run: Run, table: str) -> list[str]:
    return ["--store", f"postgres:{run.pg.conninfo}", "--store-connections",
            str(run.a.store_connections), "--store-table", table]


# --- the parts of a run --------------------------------------------------------------------------

def write_meta(run: Run, fs: str) -> None:
    a = run.a
    settings = run.psql("SELECT json_object_agg(name, setting || coalesce(unit, '')) FROM "
                        "pg_settings WHERE name IN (" +
                        ", ".join(f"'{s}'" for s in PG_SETTINGS) + ")")
    (run.raw / "pg_settings.json").write_text(settings + "\n")
    metadata.write(
        run.out, "scripts/bench_postgres.py", duration_s=a.duration, warmup_s=a.warmup,
        pgbench_T=a.pgbench_t, quick=a.quick, repeat=a.repeat, keys=a.keys, conns=a.conn_list,
        get_conns=a.get_conns, read_conns=a.read_conns, load_conns=a.load_conns,
        server_cpu=a.server_cpu, client_cpu=a.client_cpu, server_threads=a.server_threads,
        client_threads_max=a.client_threads, store_connections=a.store_connections,
        clk_tck=resources.CLK_TCK, loadavg_start=metadata.machine()["loadavg"],
        data_dir=str(run.work), filesystem=fs, disk=run.disk, disk_how=run.disk_how,
        pg_version=run.psql("SHOW server_version").split()[0], pg_settings=json.loads(settings),
        pg_bindir=a.pg_bindir, cache_server=str(run.server_bin),
        bench_client=str(run.client_bin))


def setup_tables(run: Run) -> None:
    """Ours (kv) loaded through a write-behind server, which flushes everything when stopped;
    pgbench's (kv_pgbench) by generate_series; the same key count, so every PUT of a point
    updates an existing row."""
    keys = run.a.keys
    for table in ("kv", "kv_pgbench", "kv_get", "kv_cold"):
        run.psql(f"CREATE TABLE IF NOT EXISTS {table} {TABLE_DDL}")
    run.psql("INSERT INTO kv_pgbench(key, value) SELECT convert_to(lpad(i::text, 16, 'k'), "
             "'UTF8'), convert_to(rpad(i::text, 100, 'v'), 'UTF8') FROM generate_series(0, "
             f"{keys - 1}) i")
    (run.work / "upsert.sql").write_text(UPSERT.format(last=keys - 1))
    shutil.copy(run.work / "upsert.sql", run.raw / "pgbench-upsert.sql")
    run.preload("preload-postgres", *pg_store(run, "kv"))
    n = run.psql("SELECT count(*) FROM kv")
    if n != str(keys):
        raise Failure(f"after the preload kv holds {n} rows, not {keys} (did the write-behind "
                      "server flush on TERM?)")
    run.preload("preload-rocksdb", "--store", f"rocksdb:{run.work}/rocksdb/db")
    run.psql("VACUUM ANALYZE kv")
    run.psql("VACUUM ANALYZE kv_pgbench")


def put_sweep(run: Run) -> None:
    """PUT-ALL: the two servers up all along, the three measured back to back per count."""
    a = run.a
    run.start_ours("postgres", [*pg_store(run, "kv"), "--write-mode", "through"])
    run.start_ours("rocksdb", ["--store", f"rocksdb:{run.work}/rocksdb/db", "--write-mode",
                               "through"])
    flags = ["--workload", "put-all", *key_flags(a), "--no-reset"]
    for rep in range(1, a.repeat + 1):
        for c in a.conn_list:
            run.ours_point("put", "postgres", "postgres", c, rep, True, flags)
            run.pgbench_point(c, rep)
            run.ours_point("put", "rocksdb", "rocksdb", c, rep, True, flags)
    run.stats("postgres", run.raw / "postgres-final-stats.json")
    run.stop("postgres", "rocksdb")
    shutil.rmtree(run.work / "rocksdb", ignore_errors=True)


def get_part(run: Run) -> None:
    """GET hit with postgres behind and without a store, alternated (ABBAAB), medians of 3:
    none, postgres; postgres, none; none, postgres: a drift favours neither."""
    run.start_ours("get-none", ["--store", "none"])
    run.start_ours("get-postgres", [*pg_store(run, "kv_get"), "--write-mode", "through",
                                    "--allow-reset"])  # bench_client resets before its preload
    for rep in (1, 2, 3):
        for config in (("postgres", "none") if rep == 2 else ("none", "postgres")):
            run.ours_point("get", f"get-{config}", config, run.a.get_conns, rep, False, GET_FLAGS)
    run.stop("get-none", "get-postgres")


def cold_part(run: Run) -> None:
    """Cold-cache read-through: every key loaded through the server, the cache dropped, every
    key read once."""
    run.start_ours("cold", [*pg_store(run, "kv_cold"), "--write-mode", "through"])
    run.psql("CHECKPOINT")
    run.wrk_pass("cold-load", "cold", "put", run.a.load_conns)
    status, _ = run.http("cold", "/reset?scope=cache", "POST")
    if status not in (200, 204):
        raise Failure(f"POST /reset?scope=cache answered {status}")
    run.record_cmd("cold reset", "curl -X POST http://127.0.0.1:PORT/reset?scope=cache   "
                                 "(sent by the script, as this curl would)")
    items = run.stats("cold").get("items")
    if items != 0:
        raise Failure(f"the cache still holds {items} items after POST /reset?scope=cache")
    run.wrk_pass("cold-read", "cold", "get", run.a.read_conns)
    run.stop("cold")


# --- main ----------------------------------------------------------------------------------------

def measure(a, bins: tuple[Path, Path, Path]) -> Path:
    """The whole run in a scratch directory under --data-dir, removed at the end however it
    ends, with the cluster and every server in it; the results directory."""
    out = bench.results_dir(a.out, f"postgres-{bench.stamp()}")
    with contextlib.ExitStack() as stack:
        work = stack.enter_context(bench.scratch_dir(NAME, a.data_dir, disk=True))
        fs = bench.filesystem(work)
        work.chmod(0o755)  # as root PostgreSQL runs as the postgres user: it must reach work/pg
        run = Run(a, bins, out, work)
        if run.disk is None:
            log(f"warning: {run.disk_how}; disk utilization is not reported")
        est = a.repeat * len(a.conn_list) * (2 * (a.duration + a.warmup + 1) + a.pgbench_t + 1) \
            + 6 * (a.duration + a.warmup + 1) + 20
        log(f"bench_postgres: {a.duration:g}s per point, conns {' '.join(map(str, a.conn_list))}, "
            f"{a.repeat} repeat(s), {a.keys} keys; about {est:.0f}s plus the loads; results in "
            f"{out}")
        log(f"data in {work} (filesystem {fs}, device {run.disk or 'unknown'}: {run.disk_how}); "
            f"servers and PostgreSQL on CPU {a.server_cpu}, clients on CPU {a.client_cpu}")
        (out / "commands.txt").write_text("")
        (work / "keys.lua").write_text(KEYS_LUA)
        run.start_pg(stack)
        stack.callback(procs.stop_all)  # the servers go before the cluster and the directory
        write_meta(run, fs)
        setup_tables(run)
        put_sweep(run)
        get_part(run)
        cold_part(run)
    return out


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    return bench.run_main(NAME, lambda: measure(a, (*binaries(a), check_tools(a))),
                          "bench_postgres_report")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
