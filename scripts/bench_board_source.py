#!/usr/bin/env python3
"""bench_board_source.py — boards durable through the store: the in-memory boards against the
database answering the same reads with SQL (--board-source memory vs store, PostgreSQL), and how
long a restart takes to rebuild the boards from each store (PostgreSQL and RocksDB).

1. PostgreSQL (a throwaway cluster pinned to $SERVER_CPU: scripts/harness/postgres.py's
   pinned_cluster, shared_buffers=256MB, max_connections=40) and
   cache_server --store postgres:... --write-mode through; bench_client preloads one board of
   --members members (every member PUT once: each a committed row). Timed.
2. The server is restarted twice: once with --board-source memory, once with store. Each prints
   "boards rebuilt from the store: N members in B boards, ... in T ms": the rebuild time.
3. Points, alternated between the two (memory first in odd rounds), --repeat rounds, medians,
   each at --conns connections (throughput: the saturation point) and at 1 connection (the
   latency of one request on an idle server, as the PostgreSQL-backed service compared them):
     top   bench_client --workload board-top --top-n 100   (GET /board/b0/top?n=100)
     rank  bench_client --workload board-score             (GET /board/b0/member/m<i>)
   bench_client's socket timeout is 120 s, so the database's slow answers are measured (they
   queue behind each other), not counted as errors.
   memory answers from boards/ (and its top-N cache); store answers with SQL: ORDER BY score
   DESC, seq LIMIT 100 plus a count(*) for top, a COUNT of the members ranked above for rank
   (store/postgres_store.cc). Per point: req/s, p50/p99, and the CPU of cache_server and of
   PostgreSQL (all its processes, exited backends included), as % of one core and per request
   (CPU over bench_client's whole run, warm-up and drain included, divided by the measured
   rate times that run's wall time).
4. RocksDB: the same preload into --store rocksdb:DIR, then a restart: its rebuild time.
Prints summary.md and writes it, summary.json, meta.json, commands.txt and the raw files to
--out.

env: SERVER_CPU (0), CLIENT_CPU (1); CACHE_SERVER / BENCH_CLIENT name the binaries themselves;
TMPDIR, the parent of the temporary directory.
Needs PostgreSQL 15 (postgresql-15), taskset. With the defaults it runs about 2 x 35 s of
preloads, 3 rebuilds and 24 points: about 10 minutes.
Exit status: 0 measured, 1 a failure (a message says which), 2 bad usage, 130 interrupted
(Ctrl-C; SIGTERM: 143). Everything listens on 127.0.0.1 only, on free ports; every process
started is stopped on exit and the temporary directory (the database files included) is removed.
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

from scripts.harness import bench, cli, metadata, postgres, procs, resources
from scripts.harness.bench import Failure, Run, log, split_conns, tail
from scripts.harness.tables import row, table_head

ROOT = Path(__file__).resolve().parents[1]

NAME = "bench_board_source"
CLIENT_THREADS = 2
START_WAIT_S = 120  # a rebuild of 10M members takes a while
WORKLOAD = {"top": "board-top", "rank": "board-score"}
REBUILT = re.compile(r"^boards rebuilt from the store: .* in ([0-9.]*) ms$")


def parse_args(argv: list[str]):
    p = cli.Parser(NAME, __doc__)
    p.add_argument("--members", metavar="N",
                   help="members of the board, 100..10000000 (default 1000000; --quick: 20000)")
    p.add_argument("--conns", metavar="N", default="50",
                   help="connections of every point, 1..1000 (default 50)")
    p.add_argument("--duration", metavar="S", help="seconds per point (default 10; --quick: 1)")
    p.add_argument("--repeat", metavar="N", help="rounds, 1..20 (default 3; --quick: 1)")
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default results/board-source-<stamp>/)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: few members, short points, one round")
    p.add_argument("--build", metavar="DIR",
                   help="where cache_server and bench_client are (default build/release)")
    a = p.parse_args(argv)
    quick = a.quick
    a.members = p.whole("--members", a.members or ("20000" if quick else "1000000"), 100,
                        10_000_000, "a whole number 100..10000000")
    a.conns = p.whole("--conns", a.conns, 1, 1000, "a connection count 1..1000")
    a.duration = p.whole("--duration", a.duration or ("1" if quick else "10"), 1, 600,
                         "whole seconds 1..600")
    a.repeat = p.whole("--repeat", a.repeat or ("1" if quick else "3"), 1, 20, "1..20")
    a.server_cpu, a.client_cpu = p.cpus("SERVER_CPU and CLIENT_CPU must be two different CPU "
                                        "numbers")
    a.board_maxmem = f"{a.members * 320 // 1048576 + 64}M"
    a.warmup = 0.2 if quick else 1
    a.point_timeout = 3 * a.duration + 180  # the drain may wait out a 120 s socket timeout
    a.preload_timeout = a.members // 1000 + 180
    a.ct, a.ck = split_conns(a.conns, CLIENT_THREADS)
    return a


class Bench(Run):
    """The run: its servers, the PostgreSQL cluster's postmaster (for its CPU) and the points."""

    def __init__(self, a, *args):
        super().__init__(*args, server_cpu=a.server_cpu, client_cpu=a.client_cpu)
        self.a, self.postmaster = a, None

    def start_board(self, name: str, flags: list) -> None:
        self.start_ours(name, flags, ready_timeout_s=START_WAIT_S)

    def preload(self, name: str) -> None:
        d = self.board_preload(name, self.a.members, 32, self.a.preload_timeout)
        log(f"{name}: {self.a.members} members preloaded in "
            f"{d['meta']['preload']['seconds']:.1f} s")

    def rebuild_ms(self, name: str) -> float:
        """The rebuild time the server NAME printed ("boards rebuilt from the store: ...")."""
        for line in (self.raw / f"server-{name}.log").read_text(errors="replace").splitlines():
            m = REBUILT.match(line)
            if m:
                return float(m.group(1))
        raise Failure(f"the {name} server printed no 'boards rebuilt from the store' line "
                      f"(raw/server-{name}.log)")

    def pg_ticks(self) -> int:
        return (resources.tree_ticks(self.postmaster) if self.postmaster else None) or 0

    def point(self, op: str, src: str, rep: int, conns: int) -> None:
        a, tag, srv = self.a, f"{op}-{src}-c{conns}-r{rep}", self.alive(src)
        t, k = (1, 1) if conns == 1 else (a.ct, a.ck)
        cmd = [self.client_bin, "-s", "127.0.0.1", "-p", srv.port, "--workload", WORKLOAD[op],
               "--boards", 1, "--members", a.members, "--threads", t,
               "--connections-per-thread", k, "-d", f"{a.duration}s", "--warmup", f"{a.warmup}s",
               "--no-preload", "--seed", rep, "--server-pid", srv.pid, "--timeout", "120s",
               "--json", self.raw / f"{tag}.json", "-q"] + (["--top-n", 100] if op == "top" else [])
        if rep == 1:
            self.record_cmd(f"{op} {src} {conns} conns",
                            self.pinned(a.client_cpu, cmd).replace("--seed 1", "--seed REP"))
        k0, p0 = resources.pid_ticks(srv.pid) or 0, self.pg_ticks()
        rc, wall, _, _ = self.client(cmd, self.raw / f"{tag}.txt", timeout_s=a.point_timeout)
        k1, p1 = resources.pid_ticks(srv.pid) or 0, self.pg_ticks()
        if rc:
            raise Failure(f"bench_client ({op}, {src}) failed (exit {rc}): "
                          f"{tail(self.raw / f'{tag}.txt')}")
        p = json.loads((self.raw / f"{tag}.json").read_text())["points"][0]
        srv_s, pg_s = (k1 - k0) / resources.CLK_TCK, (p1 - p0) / resources.CLK_TCK
        # The CPU readings span bench_client's whole run (warm-up and drain too), its rate only
        # the measured window: per request is CPU / (rate x the run's wall time), i.e. the run
        # assumed to go at the measured rate throughout (it does, at a bound).
        served = max(p["throughput_rps"] * wall, 1e-9)
        line = {
            "op": op, "source": src, "rep": rep, "conns": conns, "rps": p["throughput_rps"],
            "p50_us": p["p50_us"], "p99_us": p["p99_us"], "errors": p["errors"],
            "requests": p["requests"], "wall_s": round(wall, 6),
            "server_cpu_pct": 100 * srv_s / wall, "postgres_cpu_pct": 100 * pg_s / wall,
            "server_cpu_us_per_req": srv_s * 1e6 / served,
            "postgres_cpu_us_per_req": pg_s * 1e6 / served}
        self.emit(line)
        log(f"{tag}: {json.dumps(line)}")


# --- the run ---------------------------------------------------------------------------------

def postgres_part(a, b: Bench) -> tuple[float, float]:
    """Steps 1 to 3: the preload into PostgreSQL, the two restarts, the points; the two rebuild
    times (ms)."""
    with postgres.pinned_cluster(cpu=a.server_cpu, max_connections=40,
                                 directory=b.work / "pg") as pg:
        b.postmaster = pg.postmaster_pid
        b.record_cmd("postgres", f"PostgreSQL in $TMP/pg pinned to CPU {a.server_cpu}   "
                     "(scripts/harness/postgres.py pinned_cluster: max_connections=40, "
                     "shared_buffers=256MB, fsync on)")
        flags = ["--store", f"postgres:{pg.conninfo}", "--write-mode", "through",
                 "--board-maxmem", a.board_maxmem]
        b.start_board("pg-load", [*flags, "--allow-reset"])  # the preload resets it first
        b.preload("pg-load")
        b.stop("pg-load")
        b.start_board("memory", [*flags, "--board-source", "memory"])
        b.start_board("store", [*flags, "--board-source", "store"])
        rebuilt = b.rebuild_ms("memory"), b.rebuild_ms("store")
        log(f"rebuilt from PostgreSQL: memory server {rebuilt[0]:g} ms, store server "
            f"{rebuilt[1]:g} ms")
        for rep in range(1, a.repeat + 1):
            for op in ("top", "rank"):
                for src in (("memory", "store") if rep % 2 else ("store", "memory")):
                    b.point(op, src, rep, a.conns)
                    b.point(op, src, rep, 1)
        b.stop("memory", "store")
        b.postmaster = None
    return rebuilt


def rocksdb_part(a, b: Bench) -> float:
    """Step 4: the same preload into RocksDB, a restart; its rebuild time (ms)."""
    flags = ["--store", f"rocksdb:{b.work}/rocks", "--write-mode", "through",
             "--board-maxmem", a.board_maxmem]
    b.start_board("rocks-load", [*flags, "--allow-reset"])  # the preload resets it first
    b.preload("rocks-load")
    b.stop("rocks-load")
    b.start_board("rocks", flags)
    rebuilt = b.rebuild_ms("rocks")
    b.stop("rocks")
    log(f"rebuilt from RocksDB in {rebuilt:g} ms")
    return rebuilt


# --- summary -------------------------------------------------------------------------------------

MEDIANS = ("rps", "p50_us", "p99_us", "errors", "server_cpu_pct", "postgres_cpu_pct",
           "server_cpu_us_per_req", "postgres_cpu_us_per_req")


def summarize(out: Path, a, pg_rebuild: tuple[float, float], rocks: float) -> dict:
    points = [json.loads(line) for line in (out / "points.jsonl").read_text().splitlines()]
    s = {"members": a.members, "conns": a.conns, "duration_s": a.duration, "repeat": a.repeat,
         "points": {}}
    for op in ("top", "rank"):
        for c in (a.conns, 1):
            for src in ("memory", "store"):
                mine = [p for p in points
                        if p["op"] == op and p["source"] == src and p["conns"] == c]
                s["points"][f"{op}-{src}-c{c}"] = {
                    k: statistics.median(p[k] for p in mine) for k in MEDIANS}
        pts = s["points"]
        s[f"{op}_memory_over_store"] = (pts[f"{op}-memory-c{a.conns}"]["rps"] /
                                        max(pts[f"{op}-store-c{a.conns}"]["rps"], 1e-9))
        s[f"{op}_p50_store_over_memory_1conn"] = (pts[f"{op}-store-c1"]["p50_us"] /
                                                  max(pts[f"{op}-memory-c1"]["p50_us"], 1e-9))
    s["rebuild_ms"] = {"postgres": list(pg_rebuild), "rocksdb": rocks}
    return s


def render(s: dict) -> str:
    conns, rows = s["conns"], []
    for op, label in (("top", "top-100"), ("rank", "rank")):
        for c in (conns, 1):
            for src in ("memory", "store"):
                m = s["points"][f"{op}-{src}-c{c}"]
                rows.append(row([label, c, src, f"{m['rps']:,.0f}", f"{m['p50_us']:,.0f}",
                                 f"{m['p99_us']:,.0f}", f"{m['server_cpu_pct']:,.0f}",
                                 f"{m['postgres_cpu_pct']:,.0f}",
                                 f"{m['server_cpu_us_per_req']:,.1f}",
                                 f"{m['postgres_cpu_us_per_req']:,.1f}", f"{m['errors']:.0f}"]))
    pg_mem, pg_store = s["rebuild_ms"]["postgres"]
    md = [f"# Boards: memory against the database ({s['members']:,} members, {conns} "
          f"connections, {s['repeat']} x {s['duration_s']} s, medians)", "",
          *table_head(["read", "conns", "--board-source", "req/s", "p50 µs", "p99 µs",
                       "cache_server CPU%", "PostgreSQL CPU%", "cache_server CPU µs/req",
                       "PostgreSQL CPU µs/req", "errors"], "lrl" + "r" * 8),
          *rows, "",
          f"Throughput at {conns} connections, memory / store: top-100 "
          f"{s['top_memory_over_store']:,.0f}x, rank {s['rank_memory_over_store']:,.0f}x. "
          f"Latency at 1 connection (p50), store / memory: top-100 "
          f"{s['top_p50_store_over_memory_1conn']:,.0f}x, rank "
          f"{s['rank_p50_store_over_memory_1conn']:,.0f}x.", "",
          *table_head(["rebuild on restart", "ms"], "lr"),
          f"| PostgreSQL (two restarts) | {pg_mem:,.0f}, {pg_store:,.0f} |",
          f"| RocksDB | {s['rebuild_ms']['rocksdb']:,.0f} |", ""]
    return "\n".join(md)


# --- main ----------------------------------------------------------------------------------------

def prepare(a) -> tuple[Path, Path, Path]:
    """The checks before anything starts; (cache_server, bench_client, the results directory)."""
    bench.require_tools(("taskset",), "util-linux")
    bench.require_cpus(a.server_cpu, a.client_cpu)
    postgres.find_bindir()
    server_bin, client_bin = bench.binaries(a.build)
    bench.require_help(server_bin, ("--board-source",))
    out = bench.results_dir(a.out, f"board-source-{bench.stamp()}")
    return server_bin, client_bin, out


def measure(a) -> Path:
    server_bin, client_bin, out = prepare(a)
    (out / "commands.txt").write_text("")
    metadata.write(
        out, "scripts/bench_board_source.py", members=a.members, conns=a.conns,
        duration_s=a.duration, warmup_s=a.warmup, repeat=a.repeat, quick=a.quick,
        client_threads=a.ct, per_thread=a.ck, board_maxmem=a.board_maxmem,
        server_cpu=a.server_cpu, client_cpu=a.client_cpu, clk_tck=resources.CLK_TCK,
        postgres=metadata.version([str(Path(postgres.find_bindir()) / "postgres"), "--version"]),
        cache_server=str(server_bin), bench_client=str(client_bin))
    with bench.scratch_dir(NAME) as work:
        work.chmod(0o755)  # PostgreSQL runs as the postgres user when we are root
        b = Bench(a, out, work, server_bin, client_bin)
        try:
            pg_rebuild = postgres_part(a, b)
            rocks = rocksdb_part(a, b)
        finally:
            procs.stop_all()
    s = summarize(out, a, pg_rebuild, rocks)
    md = render(s)
    (out / "summary.md").write_text(md)
    (out / "summary.json").write_text(json.dumps(s, indent=1))
    sys.stdout.write(md)
    return out


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    return bench.run_main(NAME, lambda: measure(a))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
