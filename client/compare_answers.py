#!/usr/bin/env python3
"""bench_client against wrk, and against an older bench_client, on the answers of issue 29.

Cases (server on CPU 0, every client on CPU 1, one client thread):
  board  cache_server -t 1, GET /board/b0/top?n=100 of a 100,000-member board, 50 connections
  big    cache_server -t 1, GET of one 100 KiB value, 16 connections
  nginx  nginx (1 worker, scripts/harness/peers.py's config), GET /bench (100 bytes), 1 connection
For each case the server is started once and preloaded; then RUNS rounds run wrk, the new
bench_client and the old one back to back against the same server, the order rotating each round.
Every client run (and the preload) holds /tmp/bench.lock (flock(2), as flock(1) takes it), so it
never overlaps another benchmark on these two cores. Per run: req/s, the client's CPU time per
response (wrk: its rusage over the requests it reports; bench_client: the JSON's
client_cpu_us_per_response, the measured window), the server's CPU %. Prints a table and the
medians; --json FILE keeps every run.

  client/compare_answers.py --new build/release/client/bench_client \\
      --old /work/main/build/release/client/bench_client --server build/release/server/cache_server
"""
import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from harness import peers  # noqa: E402
from harness.procs import CacheServer  # noqa: E402

LOCK = "/tmp/bench.lock"
SERVER_CPU, CLIENT_CPU = "0", "1"
BIG_KEY = "k00qedr5Zv46Y78Z"  # key 0 of --key-size 16 (KeySpace::write_key)
CLK_TCK = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def bench_lock():
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def proc_cpu_s(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def run_measured(argv, server_pid):
    """Runs argv pinned to the client CPU under the lock: (stdout, client CPU s, server CPU %)."""
    with bench_lock():
        s0, t0 = proc_cpu_s(server_pid), time.monotonic()
        proc = subprocess.Popen(["taskset", "-c", CLIENT_CPU, *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall, s1 = time.monotonic() - t0, proc_cpu_s(server_pid)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{argv[0]} exited {code}: {out[-1500:]}")
    return out, usage.ru_utime + usage.ru_stime, 100.0 * (s1 - s0) / wall


def wrk_run(url, conns, duration, server_pid):
    out, cpu, srv = run_measured(["wrk", "-t1", f"-c{conns}", f"-d{duration}s", url], server_pid)
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError("wrk saw errors: " + out)
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": rps, "cpu_us_per_response": cpu * 1e6 / total, "server_cpu_pct": srv}


def bench_run(binary, port, args, duration, server_pid, json_path):
    argv = [binary, "-p", str(port), "--threads", "1", "-d", f"{duration}s", "--warmup", "1s",
            "--quiet", "--server-pid", str(server_pid), "--json", str(json_path), *args]
    run_measured(argv, server_pid)
    p = json.loads(Path(json_path).read_text())["points"][0]
    if p["errors"] != 0:
        raise RuntimeError(f"{binary}: errors {p['errors_by_code']}")
    cpu = p.get("client_cpu_us_per_response")
    if cpu is None:  # a bench_client older than the field: CPU % over the window, per response
        cpu = p["client_cpu_pct"] / 100.0 * p["duration_s"] * 1e6 / p["requests"]
    return {"rps": p["throughput_rps"], "cpu_us_per_response": cpu,
            "server_cpu_pct": p["server_cpu_pct"], "verified": p.get("verified")}


def start_server(name, a, work):
    """The case's server from the harness, pinned to the server CPU and ready: cache_server -t 1
    -m 1G, or nginx (1 worker, harness.peers.Nginx). (server, PID whose CPU is measured, port)."""
    if name == "nginx":
        nginx = peers.Nginx(Path(work) / "nginx", cpu=SERVER_CPU).start()
        worker = nginx.worker_pid()
        if worker is None:
            nginx.stop()
            raise RuntimeError("no nginx worker process found")
        return nginx, worker, nginx.port
    srv = CacheServer(a.server, ["-t", "1", "-m", "1G"], cpu=SERVER_CPU).start()
    return srv, srv.pid, srv.port


CASES = {
    "board": {"conns": 50, "path": "/board/b0/top?n=100",
              "preload": ["--workload", "board-top", "--boards", "1", "--members", "100000",
                          "--top-n", "100", "-n", "100", "--warmup", "0"],
              "args": ["--workload", "board-top", "--boards", "1", "--members", "100000",
                       "--top-n", "100", "--no-preload", "--connections-per-thread", "50"]},
    "big": {"conns": 16, "path": f"/key/{BIG_KEY}",
            "preload": ["--workload", "get-popular", "--keys", "1", "--hot-keys", "1",
                        "--value-size", "102400", "--key-size", "16", "-n", "100", "--warmup",
                        "0"],
            "args": ["--workload", "get-popular", "--keys", "1", "--hot-keys", "1",
                     "--value-size", "102400", "--key-size", "16", "--no-preload",
                     "--connections-per-thread", "16"]},
    "nginx": {"conns": 1, "path": "/bench",
              "args": ["--path", "/bench", "--connections-per-thread", "1"]},
}


def run_case(name, a, work):
    case = CASES[name]
    server, server_pid, port = start_server(name, a, work)
    with server:
        if "preload" in case:
            with bench_lock():
                subprocess.run([a.new, "-p", str(port), "--threads", "1", "--quiet",
                                *case["preload"]], check=True, capture_output=True, timeout=300)
        url = f"http://127.0.0.1:{port}{case['path']}"
        with bench_lock():
            subprocess.run(["taskset", "-c", CLIENT_CPU, "wrk", "-t1", f"-c{case['conns']}",
                            "-d1s", url], check=True, capture_output=True)  # warm-up
        runs = []
        clients = ["wrk", "new", "old"]
        for r in range(a.runs):
            order = clients[r % 3:] + clients[:r % 3]
            for client in order:
                if client == "wrk":
                    res = wrk_run(url, case["conns"], a.duration, server_pid)
                else:
                    res = bench_run(a.new if client == "new" else a.old, port, case["args"],
                                    a.duration, server_pid, Path(work) / f"{client}.json")
                res.update(case=name, run=r + 1, client=client)
                print(f"{name:6} {r + 1} {client:4} {res['rps']:11.0f} req/s  "
                      f"cpu {res['cpu_us_per_response']:6.2f} us/resp  "
                      f"server {res['server_cpu_pct']:5.1f}%", flush=True)
                runs.append(res)
        return runs


def summarize(runs):
    print("\ncase   client  median req/s  median cpu us/resp  median server cpu%  ÷ wrk")
    for name in dict.fromkeys(r["case"] for r in runs):
        med = {}
        for client in ("wrk", "new", "old"):
            sel = [r for r in runs if r["case"] == name and r["client"] == client]
            med[client] = {k: statistics.median(r[k] for r in sel)
                           for k in ("rps", "cpu_us_per_response", "server_cpu_pct")}
        for client, m in med.items():
            print(f"{name:6} {client:6} {m['rps']:13.0f} {m['cpu_us_per_response']:19.2f} "
                  f"{m['server_cpu_pct']:19.1f}  {m['rps'] / med['wrk']['rps']:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--new", required=True)
    ap.add_argument("--old", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--cases", default="board,big,nginx")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="compare_answers.")
    try:
        runs = []
        for name in a.cases.split(","):
            runs += run_case(name, a, work)
        summarize(runs)
        if a.json:
            Path(a.json).write_text(json.dumps(runs, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
