#!/usr/bin/env python3
"""bench_cluster.py — what sharding across nodes costs and how evenly it spreads (docs/cluster.md).

1. Balance: 4 nodes behind nginx (scripts/cluster.sh, weight 10). bench_client stores a
   100,000-key space THROUGH nginx (its preload), so each node's item count is nginx's
   placement; then a Zipf (theta 0.99) run with bench_client --targets reports the requests
   each node received. Reported: max / mean keys per node (target <= 1.10) and max / mean
   requests per node.
2. Cost of the front: one node, nginx (1 worker) in front of it, both on CPU 0, bench_client
   on CPU 1. For each connection count, in each round: a run direct to the node and a run
   through nginx, back to back. Reported per configuration: medians over the rounds of req/s,
   p50 and p99, the node's and nginx's CPU, and nginx's CPU time per request. On this 2-core
   machine the front shares the server's core, so scaling across machines cannot be shown;
   the cost per request is what repeats on every front machine.

Writes to --out: summary.md (also printed) and summary.json (scripts/bench_cluster_report.py),
raw/ (every bench_client JSON, the nodes' /stats, the CPU ticks), commands.txt and meta.json
(harness.metadata). env: BUILD (where cache_server and bench_client are, default build/release).
The clusters are stopped (scripts/cluster.sh down) on every exit path. Every node gets the same
admin token (cluster.sh up --admin-token-file, a fresh random one per run), and bench_client
sends it with its reset (--admin-token-file), as an operator's cluster would run.
Exit status: 0 measured, 1 a failure (a message says which), 2 bad usage, 130 interrupted.
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scripts import bench_cluster_report
from scripts.harness import bench, cli, metadata, procs, resources
from scripts.harness.bench import Failure, log, tail

ROOT = Path(__file__).resolve().parents[1]

NAME = "bench_cluster"
CLUSTER = ROOT / "scripts" / "cluster.sh"
SERVER_CPU, CLIENT_CPU = 0, 1
COST_KEYS = 10000


def parse_args(argv: list[str]):
    p = cli.Parser(NAME, __doc__)
    p.add_argument("--quick", action="store_true",
                   help="10,000 keys, 1 s points, 1 round (a smoke run; the tests use it)")
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default results/cluster-<UTC time>)")
    p.add_argument("--duration", metavar="S", type=cli.positive_int, default=5,
                   help="seconds per point (default 5)")
    p.add_argument("--rounds", metavar="R", type=cli.positive_int, default=3,
                   help="rounds of the cost comparison (default 3)")
    p.add_argument("--conns", metavar="LIST", type=lambda x: cli.int_list(x, ","), default="1,16",
                   help="connection counts of the cost comparison (default 1,16)")
    a = p.parse_args(argv)
    a.keys = 100000
    if a.quick:
        a.duration, a.rounds, a.keys = 1, 1, 10000
    return a


class Run:
    """The output directory, the cluster state directory and the clients of one run."""

    def __init__(self, a, build: Path, out: Path, work: Path):
        self.a, self.out = a, out
        self.server, self.client_bin = build / "server/cache_server", build / "client/bench_client"
        self.env = dict(os.environ, CLUSTER_DIR=str(work / "cluster"),
                        CACHE_SERVER=str(self.server))
        self.nginx_pidfile = work / "cluster" / "nginx.pid"
        # One admin token for every node (cluster.sh passes the file to each) and for
        # bench_client's reset before a run: the cluster is set up as an operator would.
        self.token_file = work / "admin.token"
        self.token_file.write_text(secrets.token_hex(32) + "\n")
        self.token_file.chmod(0o600)

    def record_cmd(self, name: str, cmd: str) -> None:
        with open(self.out / "commands.txt", "a") as f:
            f.write(f"{name}: {cmd}\n")

    def cluster(self, *args: str, check: bool = True) -> str:
        r = subprocess.run(["bash", str(CLUSTER), *args], env=self.env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        if check and r.returncode:
            raise Failure(f"cluster.sh {' '.join(args)} failed: {r.stderr.strip()[-1000:]}")
        return r.stdout

    def up(self, n: int) -> tuple[str, list[tuple[str, int]]]:
        """N nodes behind nginx, all pinned to the server CPU: (front, [(node, PID)])."""
        front, nodes = "", []
        for line in self.cluster("up", str(n), "--admin-token-file", str(self.token_file), "--",
                                 "-t", "1").splitlines():
            words = line.split()
            if words[:1] == ["front"]:
                front = words[1]
            elif words[:1] == ["node"]:
                nodes.append((words[2], int(words[3])))
        if len(nodes) != n:
            raise Failure(f"cluster.sh up {n} failed")
        self.record_cmd("cluster", f"CLUSTER_DIR=$DATA scripts/cluster.sh up {n} "
                                   "--admin-token-file $DATA/admin.token -- -t 1")
        master = self.nginx_master()
        for pid in [p for _, p in nodes] + [master] + resources.child_pids(master):
            procs.pin_running(pid, {SERVER_CPU})
        return front, nodes

    def down(self) -> None:
        self.cluster("down", check=False)

    def nginx_master(self) -> int:
        return int(self.nginx_pidfile.read_text().split()[0])

    def nginx_worker(self) -> int | None:
        kids = resources.child_pids(self.nginx_master())
        return min(kids) if kids else None

    def client(self, name: str, *args) -> None:
        """bench_client on the client CPU, its JSON in raw/NAME.json."""
        args = [str(x) for x in args]
        self.record_cmd(name, f"taskset -c {CLIENT_CPU} bench_client {' '.join(args)} "
                              f"--admin-token-file $DATA/admin.token --json raw/{name}.json")
        argv = procs.taskset(CLIENT_CPU) + [str(self.client_bin), *args,
                                            "--admin-token-file", str(self.token_file),
                                            "--json", str(self.out / "raw" / f"{name}.json"), "-q"]
        with open(self.out / "raw" / f"{name}.txt", "w") as txt:
            rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=txt,
                                stderr=subprocess.STDOUT).returncode
        if rc:
            said = tail(self.out / "raw" / f"{name}.txt").replace("\n", " ")
            raise Failure(f"bench_client failed ({name}): {said}")


def host_port(addr: str) -> list[str]:
    host, port = addr.rsplit(":", 1)
    return ["-s", host, "-p", port]


def balance(a, run: Run) -> None:
    log(f"balance: 4 nodes behind nginx, {a.keys} keys stored through nginx")
    front, nodes = run.up(4)
    run.client("balance-store", *host_port(front), "--workload", "zipf", "--keys", a.keys,
               "--threads", "1", "-n", "1000", "--warmup", "0")
    (run.out / "raw" / "balance-stats.txt").write_text(run.cluster("stats"))
    run.client("balance-zipf", "--targets", ",".join(addr for addr, _ in nodes),
               "--workload", "zipf", "--keys", a.keys, "--threads", "1",
               "--connections-per-thread", "4", "-d", f"{a.duration}s", "--warmup", "0",
               "--no-preload")
    run.down()


def front_cost(a, run: Run) -> None:
    log(f"front cost: 1 node + nginx on CPU {SERVER_CPU}, bench_client on CPU {CLIENT_CPU}")
    front, [(node, node_pid)] = run.up(1)
    run.client("cost-preload", *host_port(node), "--workload", "zipf", "--keys", COST_KEYS,
               "--threads", "1", "-n", "100", "--warmup", "0")
    for rnd in range(1, a.rounds + 1):
        for c in a.conns:
            for via, target in (("direct", node), ("front", front)):
                worker = run.nginx_worker()
                # No warm-up: the CPU ticks around the run then cover its measured window (and
                # the client's few milliseconds of start-up), so CPU % = ticks / the window.
                n0, s0 = resources.pid_ticks(worker) or 0, resources.pid_ticks(node_pid) or 0
                run.client(f"cost-{via}-c{c}-r{rnd}", *host_port(target), "--workload", "zipf",
                           "--keys", COST_KEYS, "--threads", "1", "--connections-per-thread", c,
                           "-d", f"{a.duration}s", "--warmup", "0", "--no-preload")
                n1, s1 = resources.pid_ticks(worker) or 0, resources.pid_ticks(node_pid) or 0
                with open(run.out / "raw" / "cost-ticks.txt", "a") as f:
                    f.write(f"{via} {c} {rnd} {n1 - n0} {s1 - s0}\n")


def check(build: Path) -> None:
    for b in (build / "server/cache_server", build / "client/bench_client"):
        if not os.access(b, os.X_OK):
            raise Failure(f"build first: bash scripts/setup.sh ({build})")
    bench.require_help(build / "client/bench_client", ("--targets",), "an older build")
    if shutil.which("nginx") is None:
        raise Failure("nginx is not installed (bash scripts/setup.sh --peers)")
    if (os.cpu_count() or 1) < 2:
        raise Failure("needs 2 CPUs (server side on CPU 0, load on CPU 1)")
    bench.require_cpus(SERVER_CPU, CLIENT_CPU)


def run_all(a) -> Path:
    """The checks, both parts with their clusters stopped however they end, the report; the
    results directory."""
    build = Path(os.environ.get("BUILD") or ROOT / "build/release")
    check(build)
    out = bench.results_dir(a.out, f"cluster-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    (out / "commands.txt").write_text("")
    metadata.write(
        out, "scripts/bench_cluster.py", duration_s=a.duration, rounds=a.rounds, conns=a.conns,
        keys=a.keys, quick=a.quick, server_cpu=SERVER_CPU, client_cpu=CLIENT_CPU,
        build=str(build))
    with bench.scratch_dir(NAME) as work:
        run = Run(a, build, out, work)
        try:
            balance(a, run)
            front_cost(a, run)
        finally:
            run.down()
    print(bench_cluster_report.write(out, resources.CLK_TCK, a.duration, a.rounds))
    return out


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    return bench.run_main(NAME, lambda: run_all(a))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
