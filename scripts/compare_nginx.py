#!/usr/bin/env python3
"""compare_nginx.py — GET-hit throughput of cache_server beside nginx, same machine, same run.

Both servers get one worker pinned to CPU --server-cpu; wrk (one thread, keep-alive) is pinned to
CPU --client-cpu. cache_server serves a 100-byte value from GET /key/bench; nginx answers
`return 200 "<the same 100 bytes>"` from memory (worker_processes 1, access log off). For each
pipeline depth and connection count it measures both servers, and prints req/s, each server's CPU %
over the point (utime+stime of its process from /proc/PID/stat; nginx: the worker; 100 = one
core), wrk's p50/p99 and the ratio cache_server / nginx. --rounds R repeats the whole grid R times;
the two servers alternate which goes first from point to point and from round to round
(scripts/harness/rounds.py order()), so a slow stretch of a shared machine lands on both.

--json FILE also writes the measurements as JSON (rewritten after every point; "complete" is
true once every point is in): per depth, connection count and server: req/s, the server's CPU %,
wrk's own CPU % (user+sys over its wall time), wrk's p50/p99 as printed and in µs, errors and
the round (from 0).
wrk's percentiles are wrk's "corrected" ones (it adds synthetic samples for the expected
interval) and, when pipelining, one sample per batch of N: read them with care.

Every option defaults to the environment variable the shell version (compare_nginx.sh) read:
JSON, DURATION, CONNS, PIPELINE, ROUNDS, WARMUP, CACHE_SERVER, CACHE_SERVER_FLAGS, NGINX_PORT,
SERVER_CPU, CLIENT_CPU. Pipeline depth N > 1 sends N GETs per write (scripts/lib/wrk_pipeline.lua).
cache_server and nginx come from the harness (scripts/harness/): everything listens on 127.0.0.1
only, and every process started is stopped on every exit path. They stay in this script's process
group, so that a SIGINT or SIGKILL sent to the group (scripts/experiment.py) reaches them too.
Exit status: 0 measured, 1 a failure (a message says which), 2 bad usage, 130 interrupted.
"""
from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from scripts.harness import bench, cli, metadata, peers, procs, resources, rounds
from scripts.harness.bench import Failure

ROOT = Path(__file__).resolve().parents[1]

NAME = "compare_nginx"
LUA = ROOT / "scripts" / "lib" / "wrk_pipeline.lua"
UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
ROW = "{:<6} {:>14} {:>6} {:>9} {:>9} {:>14} {:>6} {:>9} {:>9} {:>7}"
STATS_KEPT = ("variant", "lock", "value_path", "dispatch", "io_model", "threads")
CPU_PCT_NOTE = ("server_cpu_pct: utime+stime of the server process (nginx: its worker) over the "
                "point's wall time, 100 = one core; wrk_cpu_pct: wrk's user+sys over its own wall "
                "time (start-up included)")
LATENCY_NOTE = ("p50/p99 are wrk's --latency percentiles as wrk printed them: wrk 'corrects' them "
                "with synthetic samples for the expected interval, and with pipelining it records "
                "one sample per batch (write to the batch's last response) and often prints 0.00us "
                "for p99, an artefact of its correction. Read with care.")


def parse_args(argv: list[str]):
    env = cli.env
    p = cli.Parser(NAME, __doc__)
    p.add_argument("--json", metavar="FILE", default=env("JSON", ""),
                   help="also write the measurements as JSON (env JSON)")
    p.add_argument("--duration", metavar="S", type=cli.positive_int, default=env("DURATION", "5"),
                   help="whole seconds per point, as wrk takes them (env DURATION, default 5)")
    p.add_argument("--conns", metavar='"LIST"', type=cli.int_list,
                   default=env("CONNS", "1 2 4 8 16 32"),
                   help='connection counts (env CONNS, default "1 2 4 8 16 32")')
    p.add_argument("--pipeline", metavar='"LIST"', type=cli.int_list, default=env("PIPELINE", "1"),
                   help='pipeline depths (env PIPELINE, default "1")')
    p.add_argument("--rounds", metavar="R", type=cli.positive_int, default=env("ROUNDS", "1"),
                   help="repeat the grid R times, the servers' order alternating (env ROUNDS, "
                        "default 1)")
    p.add_argument("--warmup", metavar="S", type=cli.uint, default=env("WARMUP", "1"),
                   help="whole seconds of warm-up per server and depth (env WARMUP, default 1; "
                        "0: none)")
    p.add_argument("--cache-server-flags", metavar='"FLAGS"', default=env("CACHE_SERVER_FLAGS", ""),
                   help='extra cache_server flags (env CACHE_SERVER_FLAGS; default none = the '
                        'optimized variant, e.g. --cache-server-flags="--variant baseline")')
    p.add_argument("--nginx-port", metavar="PORT", type=cli.uint,
                   default=env("NGINX_PORT", "18181"),
                   help="nginx's port on 127.0.0.1 (env NGINX_PORT, default 18181; 0: a free one)")
    cli.add_server_options(p, "both servers", "wrk")
    a = p.parse_args(argv)
    a.flag_list = a.cache_server_flags.split()
    if any(f in ("-s", "--host", "-p", "--port") or f.startswith(("--host=", "--port="))
           for f in a.flag_list):
        p.error("--cache-server-flags must not set the address: everything listens on 127.0.0.1")
    return a


# --- one wrk run -------------------------------------------------------------------------------

def wrk_argv(a, url: str, conns: int, depth: int, seconds: int) -> list[str]:
    script = ["-s", str(LUA)] if depth > 1 else []
    extra = ["--", str(depth)] if depth > 1 else []
    return procs.taskset(a.client_cpu) + ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency",
                                          *script, url, *extra]


def parse_wrk(text: str, rc: int) -> dict:
    """wrk's output as the shell version's awk read it: req/s (as printed), errors (socket errors
    and non-2xx/3xx answers), p50/p99 (as printed), and whether the run failed."""
    rps = p50 = p99 = None
    errors, failed = 0, False
    for line in text.splitlines():
        words = line.replace(",", "").split()
        if line.startswith("Requests/sec:"):
            rps = words[1]
        elif re.match(r" +50% ", line):
            p50 = words[1]
        elif re.match(r" +99% ", line):
            p99 = words[1]
        if "Socket errors:" in line:
            errors += sum(int(w) for w in words[3:10:2] if w.isdigit())
        elif re.search(r"unable to connect|[Ee]rror", line):
            failed = True
        if "Non-2xx or 3xx responses:" in line:
            errors += int(words[4])
    return {"rps": rps or "0", "errors": errors, "p50": p50 or "-", "p99": p99 or "-",
            "failed": failed or rps is None or rc != 0}


def run_point(a, name: str, url: str, pid: int | None, conns: int, depth: int,
              round_i: int = 0) -> dict:
    """One wrk run against one server: wrk's figures, the server's and wrk's CPU %, the wall
    time."""
    k0, t0 = resources.pid_ticks(pid) if pid else None, time.monotonic()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(wrk_argv(a, url, conns, depth, a.duration), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t1, r1 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    k1 = resources.pid_ticks(pid) if pid else None
    row = {"pipeline": depth, "connections": conns, "server": name, "round": round_i,
           **parse_wrk(r.stdout, r.returncode)}
    if row["failed"]:
        print(f"{NAME}: wrk against {name} (c={conns}, depth {depth}) failed:", file=sys.stderr)
        print("".join(f"  {line}\n" for line in r.stdout.splitlines()), end="", file=sys.stderr)
    wall = t1 - t0
    busy = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    row["server_cpu_pct"] = (f"{(k1 - k0) / resources.CLK_TCK / wall * 100:.1f}"
                             if None not in (k0, k1) and wall > 0 else "-")
    row["wrk_cpu_pct"] = f"{busy / wall * 100:.1f}" if wall > 0 else "-"
    row["wall_s"] = f"{wall:.3f}"
    return row


def shown_rps(row: dict) -> str:
    return "ERR" if row["failed"] or row["errors"] else row["rps"]


def ratio(cs: str, ng: str) -> str:
    a, b = number(cs) or 0, number(ng) or 0
    return f"{a / b:.2f}" if a > 0 and b > 0 else "NA"


# --- the --json file ---------------------------------------------------------------------------

def micros(text: str) -> float | None:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    return round(float(m.group(1)) * UNITS[m.group(2)], 3) if m else None


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def measurement(row: dict) -> dict:
    return {"pipeline": row["pipeline"], "connections": row["connections"], "server": row["server"],
            "rps": number(row["rps"]), "errors": row["errors"], "failed": row["failed"],
            "server_cpu_pct": number(row["server_cpu_pct"]),
            "wrk_cpu_pct": number(row["wrk_cpu_pct"]),
            "p50": row["p50"], "p99": row["p99"], "p50_us": micros(row["p50"]),
            "p99_us": micros(row["p99"]), "wall_s": number(row["wall_s"]),
            "round": row.get("round", 0)}


def write_json(a, rows: list[dict], stats: dict, complete: bool) -> None:
    """The --json file, atomically (FILE.tmp, then renamed): scripts/experiment.py and
    scripts/report.py read it (nginx.json)."""
    if not a.json:
        return
    doc = {
        "tool": "scripts/compare_nginx.py",
        "description": "GET of a 100-byte body over keep-alive: cache_server (GET hit) and nginx "
                       f"(return 200, worker_processes 1), each pinned to CPU {a.server_cpu}; "
                       f"wrk -t1 pinned to CPU {a.client_cpu}",
        "complete": complete, "duration_s": a.duration, "warmup_s": a.warmup,
        "rounds": a.rounds,
        "connections": a.conns, "pipeline_depths": a.pipeline,
        "server_cpus": a.server_cpu, "client_cpus": a.client_cpu,
        "wrk": a.versions["wrk"], "nginx": a.versions["nginx"],
        "cache_server": {"binary": a.cache_server, "extra_flags": a.cache_server_flags,
                         "stats": {k: stats[k] for k in STATS_KEPT if k in stats}},
        "cpu_pct_note": CPU_PCT_NOTE,
        "latency_note": LATENCY_NOTE,
        "meta": a.meta,
        "measurements": [measurement(r) for r in rows],
    }
    tmp = a.json + ".tmp"
    with open(tmp, "w") as out:
        json.dump(doc, out, indent=1)
    os.replace(tmp, a.json)


# --- the run -----------------------------------------------------------------------------------

def http(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except OSError as e:
        raise Failure(f"{method} {url} failed: {e}") from e


def cache_server(a, work: Path) -> procs.CacheServer:
    """cache_server -t 1 with the extra flags (not started: a with-block starts and stops it)."""
    flags = ["-t", "1", *a.flag_list]
    return procs.CacheServer(a.cache_server, flags, cpu=a.server_cpu,
                             log_path=work / "cache_server.log", new_session=False)


def store_value(srv: procs.CacheServer) -> dict:
    """The 100-byte value stored and read back; the server's /stats ({} when unreadable)."""
    url = f"http://{srv.address}/key/bench"
    if http("PUT", url, peers.BODY100.encode())[0] != 201:
        raise Failure(f"PUT {url} was not answered 201")
    if http("GET", url)[1].decode() != peers.BODY100:
        raise Failure("cache_server GET mismatch")
    try:
        return json.loads(http("GET", f"http://{srv.address}/stats")[1])
    except (Failure, ValueError):
        return {}


def nginx_worker(nginx: peers.Nginx) -> int:
    for _ in range(50):
        pid = nginx.worker_pid()
        if pid:
            return pid
        time.sleep(0.1)
    raise Failure("no nginx worker process found")


def measure(a, targets: dict, rows: list[dict], stats: dict) -> None:
    """Every round, depth and connection count: both servers, the one that goes first
    alternating (rounds.order); a table row after each pair."""
    names = list(targets)
    for depth in a.pipeline:
        if a.warmup > 0:
            for url, _ in targets.values():
                subprocess.run(wrk_argv(a, url, 4, depth, a.warmup), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for rnd in range(a.rounds):
        for depth in a.pipeline:
            flags = f"; cache_server {a.cache_server_flags}" if a.cache_server_flags else ""
            print(f"# pipeline depth {depth}: GET hit, 100-byte body, keep-alive; servers on CPU "
                  f"{a.server_cpu}, wrk -t1 on CPU {a.client_cpu}, {a.duration}s per point{flags}"
                  f"; round {rnd + 1}/{a.rounds}")
            print(ROW.format("conns", "cache_server", "cpu%", "p50", "p99", "nginx", "cpu%", "p50",
                             "p99", "ratio"), flush=True)
            for j, c in enumerate(a.conns):
                got = {}
                for name in rounds.order(names, rnd, j + a.pipeline.index(depth)):
                    url, pid = targets[name]
                    got[name] = run_point(a, name, url, pid, c, depth, rnd)
                cs, ng = got["cache_server"], got["nginx"]
                rows += [cs, ng]
                print(ROW.format(c, shown_rps(cs), cs["server_cpu_pct"], cs["p50"], cs["p99"],
                                 shown_rps(ng), ng["server_cpu_pct"], ng["p50"], ng["p99"],
                                 ratio(shown_rps(cs), shown_rps(ng))), flush=True)
                write_json(a, rows, stats, False)


def run(a) -> None:
    """The checks, both servers in a scratch directory, every point, the --json file."""
    bench.require_tools(("wrk", "nginx", "taskset"), "wrk nginx util-linux")
    bench.require_cpus(a.server_cpu, a.client_cpu)
    if not os.access(a.cache_server, os.X_OK):
        raise Failure(f"no cache_server at {a.cache_server} (build it first)")
    a.versions = {"wrk": metadata.version(["wrk", "-v"]),
                  "nginx": metadata.version(["nginx", "-v"])}
    a.meta = metadata.run_metadata("scripts/compare_nginx.py")
    rows: list[dict] = []
    with bench.scratch_dir(NAME) as work:
        with cache_server(a, work) as srv, \
                peers.Nginx(work / "nginx", cpu=a.server_cpu, port=a.nginx_port,
                            new_session=False) as nginx:
            stats = store_value(srv)
            targets = {"cache_server": (f"http://{srv.address}/key/bench", srv.pid),
                       "nginx": (nginx.url, nginx_worker(nginx))}
            measure(a, targets, rows, stats)
    write_json(a, rows, stats, True)
    if a.json:
        print(f"# JSON: {a.json}")


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    return bench.run_main(NAME, lambda: run(a))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
