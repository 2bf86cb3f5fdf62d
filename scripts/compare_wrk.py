#!/usr/bin/env python3
"""compare_wrk.py — bench_client beside wrk on the answers of issue 29, in one run.

Rows (--rows, default all three; the server pinned to --server-cpu, every client to --client-cpu,
one client thread each):
  board  cache_server -t 1 holding one board of --members (100,000) members, preloaded first by
         bench_client (its board-score preload: every member PUT once); GET /board/b0/top?n=100
         (5.6 KB of JSON at 100,000 members), 50 connections. wrk GETs that URL; bench_client
         runs --workload board-top --top-n 100 --no-preload, the same GET, at its default
         --verify (one answer in 64 checked in full: the JSON parsed, count, order and ranks).
  big    the same cache_server holding one 100 KiB value (bench_client's get-popular preload of
         key 0); GET of it, 16 connections (bench_client: get-popular, one key, default --verify).
  nginx  nginx (1 worker, scripts/harness/peers.py's config, --port) serving 100 bytes at
         /bench, 1 connection (bench_client: --path /bench).
Each round runs every row, wrk and bench_client back to back against the same server instance,
the order alternating between rounds (and rows); wrk gets a 1 s warm-up run per row before the
first round, bench_client a 1 s --warmup before each of its windows. Per run: req/s, the client's
CPU time per response (wrk: its rusage, i.e. /proc's utime+stime, over the requests it reports;
bench_client: its JSON's client_cpu_us_per_response, its getrusage, the same counters, over its
measured window), the server's CPU % (/proc/PID/stat over the run) and the p50.

Prints every run, then per row the medians of each client, bench_client ÷ wrk, the target
(board >= 0.9, big >= 0.9, nginx >= 0.95) and PASS/FAIL, the CPU per response of each and
whether bench_client's is at or below wrk's (shown, not part of the verdict). wrk's percentiles
are kept out of the verdict, except the nginx row's p50, compared as before: bench_client's must
be within +-10% of wrk's. RESULT: PASS when every row (and that p50) meets its target.
--old-bench BIN adds an older bench_client to every round (A/B: its req/s, new ÷ old, its CPU).
Exit status: 0 targets met, 1 targets missed, 2 setup failure (a tool or binary missing, a
client failing or answering errors, a bad option).

Run it alone on the machine: flock /tmp/bench.lock python3 -m scripts.compare_wrk --runs 5
--duration 5. On a machine others share, their processes take turns on the two CPUs: every time
the server or a client waits for the other, the CPU goes to someone else's work and the wake-up
waits for it, and the run measures that, not the clients (server and client both at 30-50% CPU).
--realtime runs the servers and clients SCHED_FIFO, so each has its CPU as on an idle machine.
Every option defaults to the environment variable of the shell version it replaced
(scripts/compare_wrk.sh): DURATION, RUNS, PORT, SERVER_CPU, CLIENT_CPU, BENCH; CACHE_SERVER too.
Servers come from the harness (scripts/harness) and are stopped on every exit path.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

from scripts.harness import bench, cli, peers, resources, rounds
from scripts.harness.bench import Failure  # exit status 2 here: run_main(failed=2)
from scripts.harness.tables import fnum, md_table

ROOT = Path(__file__).resolve().parents[1]

NAME = "compare_wrk"
ROWS = ("board", "big", "nginx")
TARGET_P50 = 0.10  # the nginx row: bench_client's p50 within +-10% of wrk's
TOP_N, BIG_BYTES = 100, 102400
BIG_KEY = "k00qedr5Zv46Y78Z"  # key 0 of bench_client's --key-size 16 (KeySpace::write_key)


class Row:
    """One row of the table: what both clients GET, over how many connections, from which server
    (its port, its PID for its CPU), bench_client's workload flags, and the runs (client -> [run
    dict, ...])."""

    def __init__(self, name: str, label: str, conns: int, target: float, path: str,
                 bench_args: list):
        self.name, self.label, self.conns, self.target = name, label, conns, target
        self.path, self.bench_args = path, bench_args
        self.port, self.server_pid = 0, None
        self.runs: dict[str, list[dict]] = {}


def make_rows(a) -> list[Row]:
    board = ["--workload", "board-top", "--boards", "1", "--members", str(a.members), "--top-n",
             str(TOP_N), "--no-preload"]
    big = ["--workload", "get-popular", "--keys", "1", "--hot-keys", "1", "--value-size",
           str(BIG_BYTES), "--key-size", "16", "--no-preload"]
    every = {
        "board": Row("board", f"board top-{TOP_N} ({a.members:,} members), 50 conns", 50, 0.90,
                     f"/board/b0/top?n={TOP_N}", board),
        "big": Row("big", "100 KiB GET, 16 conns", 16, 0.90, f"/key/{BIG_KEY}", big),
        "nginx": Row("nginx", "100-byte GET, nginx, 1 conn", 1, 0.95, "/bench",
                     ["--path", "/bench"]),
    }
    return [every[r] for r in a.rows]


def rows_list(text: str) -> list[str]:
    """--rows: a comma-separated subset of board,big,nginx (kept in that order)."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in ROWS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of {','.join(ROWS)}")
    return [r for r in ROWS if r in names]


def parse_args(argv: list[str]) -> argparse.Namespace:
    env = cli.env
    p = cli.Parser(NAME, __doc__)
    p.add_argument("--duration", metavar="S", type=cli.positive_int, default=env("DURATION", "5"),
                   help="whole seconds per run, as wrk takes them (env DURATION, default 5)")
    p.add_argument("--runs", "--rounds", dest="runs", metavar="N", type=cli.positive_int,
                   default=env("RUNS", "5"), help="rounds (env RUNS, default 5)")
    p.add_argument("--rows", metavar="LIST", type=rows_list, default=",".join(ROWS),
                   help="the rows to measure, of board,big,nginx (default all)")
    p.add_argument("--members", metavar="N", type=cli.positive_int, default=100000,
                   help="members of the board row's board (default 100000)")
    p.add_argument("--port", metavar="PORT", type=cli.uint, default=env("PORT", "18081"),
                   help="nginx's port on 127.0.0.1 (env PORT, default 18081; 0: a free one)")
    cli.add_server_options(p, "the servers", "the clients")
    p.add_argument("--bench", metavar="BIN", default=env("BENCH", ""),
                   help="bench_client (env BENCH; default build/release's)")
    p.add_argument("--old-bench", metavar="BIN", default="",
                   help="an older bench_client to run in every round too (A/B)")
    p.add_argument("--json", metavar="FILE", default="", help="write every run into FILE")
    p.add_argument("--realtime", action="store_true",
                   help="run the servers and clients SCHED_FIFO (priority 1; needs root or "
                   "CAP_SYS_NICE): on a shared machine they then have their CPUs as on an idle "
                   "one")
    return p.parse_args(argv)


def bench_client(a) -> str:
    for candidate in ([a.bench] if a.bench else
                      [ROOT / "build/release/client/bench_client", ROOT / "bench_client"]):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise Failure("bench_client not found (build it or set BENCH=path)")


def parse_wrk(text: str) -> tuple[float, float, int]:
    """wrk --latency output -> (req/s, p50 µs, requests); errors it reports are a Failure."""
    if "Non-2xx" in text or "Socket errors" in text:
        raise Failure(f"wrk saw errors: {text[-500:]}")
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1))
    val, unit = re.search(r"^\s*50%\s+([\d.]+)(us|ms|s)\s*$", text, re.M).groups()
    total = int(re.search(r"(\d+) requests in", text).group(1))
    return rps, float(val) * {"us": 1, "ms": 1e3, "s": 1e6}[unit], total


def parse_bench(path: Path) -> dict:
    """bench_client JSON -> its figures; a run with errors is a setup failure (Failure, exit 2)."""
    p = json.loads(path.read_text())["points"][0]
    if p["errors"] or not p.get("valid", True):
        raise Failure(f"bench_client saw errors: {p['errors_by_code']} ({path})")
    cpu = p.get("client_cpu_us_per_response")
    if cpu is None:  # a bench_client older than the field: its CPU % over the window
        cpu = p["client_cpu_pct"] / 100.0 * p["duration_s"] * 1e6 / p["requests"]
    return {"rps": p["throughput_rps"], "p50_us": p["p50_us"], "cpu_us": cpu,
            "verified": p.get("verified")}


class Clients:
    """The load generators of one run of the script, pinned by `run` (a harness bench.Run)."""

    def __init__(self, a, run: bench.Run, bins: dict):
        self.a, self.run, self.bins = a, run, bins
        self.order = ["wrk", *[c for c in ("bench", "old") if c in bins]]

    def launch(self, row: Row, argv: list, what: str) -> tuple[str, float, float]:
        """Runs a client pinned: (its output, its CPU seconds, the server's CPU % meanwhile)."""
        out = self.run.work / f"{what}.out"
        t0 = resources.pid_ticks(row.server_pid)
        rc, real, user, sys_ = self.run.client(argv, out, timeout_s=self.a.duration + 120)
        t1 = resources.pid_ticks(row.server_pid)
        text = out.read_text(errors="replace")
        if rc:
            raise Failure(f"{what} failed (exit {rc}) on the {row.name} row: {text[-500:]}")
        server = None if None in (t0, t1) else 100.0 * (t1 - t0) / resources.CLK_TCK / real
        return text, user + sys_, server

    def wrk(self, row: Row, seconds: int) -> dict:
        url = f"http://127.0.0.1:{row.port}{row.path}"
        text, cpu_s, server = self.launch(row, ["wrk", "-t1", f"-c{row.conns}", f"-d{seconds}s",
                                                "--latency", url], "wrk")
        rps, p50, total = parse_wrk(text)
        return {"rps": rps, "p50_us": p50, "cpu_us": cpu_s * 1e6 / max(total, 1),
                "server_cpu_pct": server}

    def bench(self, row: Row, client: str) -> dict:
        out = self.run.work / f"{client}.json"
        argv = [self.bins[client], "-p", row.port, "--threads", "1", "--connections-per-thread",
                row.conns, "-d", self.a.duration, "--warmup", "1s", "--quiet", "--json", out,
                *row.bench_args]
        _, _, server = self.launch(row, argv, client)
        return {**parse_bench(out), "server_cpu_pct": server}

    def one(self, row: Row, client: str) -> dict:
        return self.wrk(row, self.a.duration) if client == "wrk" else self.bench(row, client)


def start_cache_server(run: bench.Run, a, rows: list[Row]) -> None:
    """cache_server -t 1 with the board (board row) and the 100 KiB value (big row) loaded."""
    srv = run.start_ours("cache", ["-m", "1G"])
    reset = []
    for row in rows:
        row.port, row.server_pid = srv.port, srv.pid
        if row.name == "board":
            run.board_preload("cache", a.members, 50, timeout_s=600)
            reset = ["--no-reset"]
        else:
            cmd = [run.client_bin, "-p", srv.port, "--threads", "1", "-n", "1", "--warmup", "0",
                   "--quiet", *[x for x in row.bench_args if x != "--no-preload"], *reset]
            run.record_cmd("big preload", run.pinned(run.client_cpu, cmd))
            if run.client(cmd, run.raw / "big-preload.txt", timeout_s=120)[0]:
                said = bench.tail(run.raw / "big-preload.txt")
                raise Failure(f"the 100 KiB preload failed: {said}")
        status, body = run.http("cache", row.path)
        if status != 200:
            raise Failure(f"GET {row.path} answered {status} after the preload")
        if row.name == "big" and len(body) != BIG_BYTES:
            raise Failure(f"GET {row.path}: {len(body)} bytes, not {BIG_BYTES} (key 0 changed?)")
        if row.name == "board" and json.loads(body)["members"] != a.members:
            raise Failure(f"the board holds {json.loads(body)['members']} members, "
                          f"not {a.members}")
        bench.log(f"{row.name}: GET {row.path} answers {len(body):,} bytes")


def start_servers(run: bench.Run, a, rows: list[Row]) -> None:
    ours = [r for r in rows if r.name != "nginx"]
    if ours:
        start_cache_server(run, a, ours)
    for row in rows:
        if row.name == "nginx":
            nginx = run.start("nginx", peers.Nginx(run.work / "nginx", cpu=a.server_cpu,
                                                  port=a.port), "1 worker")
            row.port, row.server_pid = nginx.port, nginx.worker_pid()


def measure(a, clients: Clients, rows: list[Row]) -> None:
    """Every round: every row, each client once, the order alternating."""
    for row in rows:
        clients.wrk(row, 1)  # warm-up
        row.runs = {c: [] for c in clients.order}
    print(f"# server on CPU {a.server_cpu}, clients on CPU {a.client_cpu}, 1 client thread, "
          f"{a.duration} s per run, {a.runs} rounds"
          + (", SCHED_FIFO (--realtime)" if a.realtime else ""))
    print(f"{'round':<6}{'row':<7}{'client':<7}{'req/s':>11}{'cpu_us/resp':>13}"
          f"{'server_cpu%':>13}{'p50_us':>10}", flush=True)
    for i in range(1, a.runs + 1):
        for j, row in enumerate(rows):
            for client in rounds.order(clients.order, i - 1, j):
                r = clients.one(row, client)
                row.runs[client].append(r)
                srv = fnum(r["server_cpu_pct"], 1)
                print(f"{i:<6}{row.name:<7}{client:<7}{r['rps']:11.1f}{r['cpu_us']:13.2f}"
                      f"{srv:>13}{r['p50_us']:10.2f}", flush=True)


def medians(row: Row, client: str) -> dict:
    runs = row.runs[client]
    out = {}
    for k in ("rps", "cpu_us", "p50_us", "server_cpu_pct"):
        vals = [r[k] for r in runs if r[k] is not None]
        out[k] = statistics.median(vals) if vals else None
    return out


def verdict(rows: list[Row], old: bool) -> bool:
    """The summary table, the nginx p50 line and RESULT; whether every target is met."""
    headers = ["answer", "wrk req/s", "bench_client req/s", "÷ wrk", "target", "verdict",
               "CPU µs/response wrk / bench_client", "bench_client CPU ≤ wrk",
               "server CPU % wrk / bench_client"]
    if old:
        headers[7:7] = ["old req/s", "new ÷ old", "old CPU µs/response"]
    table, ok = [], True
    for row in rows:
        w, b = medians(row, "wrk"), medians(row, "bench")
        ratio, cpu_ok = b["rps"] / w["rps"], b["cpu_us"] <= w["cpu_us"]
        ok &= ratio >= row.target
        line = [row.label, fnum(w["rps"]), fnum(b["rps"]), f"{ratio:.3f}", f">= {row.target}",
                "PASS" if ratio >= row.target else "FAIL",
                f"{w['cpu_us']:.2f} / {b['cpu_us']:.2f}", "yes" if cpu_ok else "no",
                f"{fnum(w['server_cpu_pct'])} / {fnum(b['server_cpu_pct'])}"]
        if old:
            o = medians(row, "old")
            line[7:7] = [fnum(o["rps"]), f"{b['rps'] / o['rps']:.2f}", f"{o['cpu_us']:.2f}"]
        table.append(line)
    print("\nMedians:\n")
    print(md_table(headers, table, "lrrrrl" + "r" * (len(headers) - 6)))
    for row in rows:
        if row.name == "nginx":
            w, b = medians(row, "wrk"), medians(row, "bench")
            delta = (b["p50_us"] - w["p50_us"]) / w["p50_us"]
            ok &= abs(delta) <= TARGET_P50
            print(f"nginx p50: wrk {w['p50_us']:.2f} us, bench_client {b['p50_us']:.2f} us, "
                  f"difference {delta * 100:+.1f}% (target within +-{TARGET_P50 * 100:.0f}%): "
                  f"{'PASS' if abs(delta) <= TARGET_P50 else 'FAIL'}")
    print("RESULT:", "PASS" if ok else "FAIL")
    return ok


def go_realtime() -> None:
    """This process and every child it starts from now on (servers, clients) SCHED_FIFO at
    priority 1: a wake-up preempts other processes' work at once (the kernel's RT throttling
    still leaves them 5% of each CPU)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError as e:
        raise Failure(f"--realtime: cannot use SCHED_FIFO ({e.strerror}; needs root or "
                      "CAP_SYS_NICE)") from e


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    rows = make_rows(a)

    def run() -> None:
        if a.realtime:
            go_realtime()
        bins = {"bench": bench_client(a)}
        if a.old_bench:
            if not os.access(a.old_bench, os.X_OK):
                raise Failure(f"--old-bench {a.old_bench} is not an executable")
            bins["old"] = a.old_bench
        bench.require_tools(("wrk", "taskset"), "wrk util-linux")
        if any(r.name == "nginx" for r in rows):
            bench.require_tools(("nginx",), "nginx-light")
        if any(r.name != "nginx" for r in rows) and not os.access(a.cache_server, os.X_OK):
            raise Failure(f"cache_server not found at {a.cache_server} (build it or set "
                          "CACHE_SERVER=path)")
        bench.require_cpus(a.server_cpu, a.client_cpu)
        with bench.scratch_dir(NAME) as work:
            (work / "raw").mkdir()
            r = bench.Run(work, work, Path(a.cache_server), Path(bins["bench"]),
                          server_cpu=a.server_cpu, client_cpu=a.client_cpu)
            try:
                start_servers(r, a, rows)
                measure(a, Clients(a, r, bins), rows)
            finally:
                for name in list(r.servers):
                    r.stop(name)
        if a.json:
            Path(a.json).write_text(json.dumps({row.name: row.runs for row in rows}, indent=1))

    return bench.run_main(NAME, run, failed=2) or (0 if verdict(rows, bool(a.old_bench)) else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
