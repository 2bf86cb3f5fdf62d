#!/usr/bin/env python3
"""compare_wrk.py — bench_client beside wrk against nginx serving a 100-byte body from memory.

nginx: worker_processes 1, pinned to CPU --server-cpu; each client pinned to CPU --client-cpu;
1 client thread, 1 connection, same duration; --runs runs alternating which client goes first.
Prints each run, the medians, and whether bench_client reaches >= 0.95x wrk's req/s with a p50
within +-10% of wrk's. Exit status: 0 targets met, 1 targets missed, 2 setup failure.
Every option defaults to the environment variable of the shell version it replaces
(scripts/compare_wrk.sh): DURATION, RUNS, PORT, SERVER_CPU, CLIENT_CPU, BENCH. nginx comes from
the harness (scripts/harness/peers.py) and is stopped on every exit path.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from harness import bench, cli, peers, procs  # noqa: E402
from harness.bench import Failure  # noqa: E402  (exit status 2 here: run_main(failed=2))

NAME = "compare_wrk"
TARGET_RATIO, TARGET_P50 = 0.95, 0.10


def parse_args(argv: list[str]) -> argparse.Namespace:
    env = cli.env
    p = cli.Parser(NAME, __doc__)
    p.add_argument("--duration", metavar="S", type=cli.positive_int, default=env("DURATION", "10"),
                   help="whole seconds per run, as wrk takes them (env DURATION, default 10)")
    p.add_argument("--runs", metavar="N", type=cli.positive_int, default=env("RUNS", "3"),
                   help="runs (env RUNS, default 3)")
    p.add_argument("--port", metavar="PORT", type=cli.uint, default=env("PORT", "18081"),
                   help="nginx's port on 127.0.0.1 (env PORT, default 18081; 0: a free one)")
    cli.add_cpu_options(p, "nginx", "the clients")
    p.add_argument("--bench", metavar="BIN", default=env("BENCH", ""),
                   help="bench_client (env BENCH; default build/release's)")
    return p.parse_args(argv)


def bench_client(a) -> str:
    for candidate in ([a.bench] if a.bench else
                      [ROOT / "build/release/client/bench_client", ROOT / "bench_client"]):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise Failure("bench_client not found (build it or set BENCH=path)")


def parse_wrk(text: str) -> tuple[float, float]:
    """wrk --latency output -> (req/s, p50 µs)."""
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
    val, unit = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    return rps, float(val) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]


def parse_bench(path: Path) -> tuple[float, float]:
    """bench_client JSON -> (req/s, p50 µs); a run with errors is a setup failure (Failure, exit 2)."""
    p = json.loads(path.read_text())["points"][0]
    if p["errors"]:
        raise Failure(f"bench_client saw errors: {p['errors_by_code']}")
    return p["throughput_rps"], p["p50_us"]


def run(argv: list, what: str) -> str:
    r = subprocess.run([str(x) for x in argv], capture_output=True, text=True)
    if r.returncode:
        raise Failure(f"{what} failed: {(r.stdout + r.stderr)[-500:]}")
    return r.stdout


def measure(a, bench: str, nginx: peers.Nginx, work: Path) -> dict[str, list[tuple[float, float]]]:
    pin = procs.taskset(a.client_cpu)
    wrk = pin + ["wrk", "-t1", "-c1", f"-d{a.duration}s", "--latency", nginx.url]
    ours = pin + [bench, "-p", nginx.port, "--path", "/bench", "--threads", "1", "--connections-per-thread",
                  "1", "-d", str(a.duration), "--warmup", "1s", "--quiet", "--json", work / "bench.json"]
    run(pin + ["wrk", "-t1", "-c1", "-d1s", nginx.url], "wrk (warm-up)")
    print(f"# nginx 1 worker on CPU {a.server_cpu}, clients on CPU {a.client_cpu}, 1 thread, 1 connection, "
          f"{a.duration}s, GET /bench (100 B)")
    print(f"{'run':<4} {'client':<13} {'req/s':>12} {'p50_us':>10}", flush=True)
    results: dict[str, list[tuple[float, float]]] = {"wrk": [], "bench": []}
    for i in range(1, a.runs + 1):
        for client in (("wrk", "bench") if i % 2 else ("bench", "wrk")):
            if client == "wrk":
                rps, p50 = parse_wrk(run(wrk, "wrk"))
            else:
                run(ours, "bench_client")
                rps, p50 = parse_bench(work / "bench.json")
            results[client].append((rps, p50))
            print(f"{i:<4} {client:<13} {rps:12.1f} {p50:10.2f}", flush=True)
    return results


def verdict(results) -> bool:
    (mw, mwp), (mb, mbp) = ((statistics.median(x[0] for x in results[k]),
                             statistics.median(x[1] for x in results[k])) for k in ("wrk", "bench"))
    ratio, p50_delta = mb / mw, (mbp - mwp) / mwp
    ok = ratio >= TARGET_RATIO and abs(p50_delta) <= TARGET_P50
    print(f"median wrk          {mw:12.1f} req/s  p50 {mwp:8.2f} us")
    print(f"median bench_client {mb:12.1f} req/s  p50 {mbp:8.2f} us")
    print(f"bench_client/wrk throughput {ratio:.3f} (target >= {TARGET_RATIO}); p50 difference "
          f"{p50_delta * 100:+.1f}% (target within +-{TARGET_P50 * 100:.0f}%)")
    print("RESULT:", "PASS" if ok else "FAIL")
    return ok


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    results = {}

    def run() -> None:
        client = bench_client(a)
        bench.require_tools(("nginx", "wrk", "taskset"), "nginx wrk util-linux")
        bench.require_cpus(a.server_cpu, a.client_cpu)
        with bench.scratch_dir(NAME) as work, \
                peers.Nginx(work / "nginx", cpu=a.server_cpu, port=a.port) as nginx:
            results.update(measure(a, client, nginx, work))

    return bench.run_main(NAME, run, failed=2) or (0 if verdict(results) else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
