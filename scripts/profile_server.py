#!/usr/bin/env python3
"""profile_server.py — where a GET hit's cost goes, per request, baseline against optimized.

For each server variant and each pipeline depth it starts `cache_server -t 1` pinned to CPU
--server-cpu, loads it with wrk (keep-alive, --conns connections, pinned to CPU --client-cpu;
depth N = a Lua script sending N GETs per write) on a 100-byte value, and measures over the
same window:
  - requests (the server's own /stats counter), reads and writes per request (/stats)
  - syscalls per request: perf stat on the raw_syscalls:sys_enter tracepoint (these VMs have
    no hardware counters, but tracepoints work), with the busiest syscalls named
  - CPU µs per request, user and system, from /proc/PID/stat
  - the top symbols by CPU samples (perf record -e cpu-clock, kernel included)
  - user-space instructions per request: a second run under valgrind --tool=callgrind with
    collection switched on only around the load (instruction counts repeat run to run)
and writes DIR/PROFILE.md (tables), DIR/profile.json, DIR/rows.jsonl (a row per finished
configuration, kept when a later one fails) and DIR/meta.json, plus the raw perf/callgrind
outputs beside them.

Usage: python3 -m scripts.profile_server [options] [DIR] (default results/profile-<stamp>)
Every option defaults to the environment variable the shell version (profile_server.sh) read:
VARIANTS ("baseline optimized"), PIPELINES ("1 16"), CONNS (16), DURATION (s, 3),
CALLGRIND_DURATION (s, 3), CACHE_SERVER (build/release/server/cache_server), SERVER_CPU (0),
CLIENT_CPU (1), NO_CALLGRIND (1 skips valgrind), NO_RECORD (1 skips perf record).
Needs wrk, perf and (unless NO_CALLGRIND=1) valgrind: `scripts/setup.sh --peers` installs them.
cache_server and wrk come from the harness (scripts/harness/): everything listens on 127.0.0.1
only, and every process started is stopped on every exit path.
Exit status: 0 profiled, 1 a failure (a message says which), 2 bad usage, 130 interrupted.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from scripts.compare_nginx import LUA, http, store_value
from scripts.harness import bench, cli, metadata, procs, resources
from scripts.harness.bench import Failure
from scripts.harness.tables import fnum, fratio, row, table_head

ROOT = Path(__file__).resolve().parents[1]

NAME = "profile_server"
SYSCALL_EVENTS = ["raw_syscalls:sys_enter"] + [
    f"syscalls:sys_enter_{name}"
    for name in ("recvmsg", "sendmsg", "epoll_wait", "read", "write", "recvfrom", "sendto")]
START_TIMEOUT_S = 30  # valgrind needs a few seconds to start


def parse_args(argv: list[str]):
    env = cli.env
    p = cli.Parser(NAME, __doc__)
    p.add_argument("dir", metavar="DIR", nargs="?",
                   help="results directory (default results/profile-<stamp>)")
    p.add_argument("--variants", metavar='"LIST"', default=env("VARIANTS", "baseline optimized"),
                   help='server variants (env VARIANTS, default "baseline optimized")')
    p.add_argument("--pipelines", metavar='"LIST"', type=cli.int_list,
                   default=env("PIPELINES", "1 16"),
                   help='pipeline depths (env PIPELINES, default "1 16")')
    for flag, var, default, what in (
            ("--conns", "CONNS", "16", "wrk connections"),
            ("--duration", "DURATION", "3", "seconds of each counted and sampled window"),
            ("--callgrind-duration", "CALLGRIND_DURATION", "3", "seconds of load under callgrind")):
        p.add_argument(flag, metavar="N", type=cli.positive_int, default=env(var, default),
                       help=f"{what} (env {var}, default {default})")
    cli.add_server_options(p, "the server", "wrk")
    p.add_argument("--no-callgrind", action="store_true",
                   default=os.environ.get("NO_CALLGRIND") == "1",
                   help="skip valgrind: no instructions per request (env NO_CALLGRIND=1)")
    p.add_argument("--no-record", action="store_true", default=os.environ.get("NO_RECORD") == "1",
                   help="skip perf record: no top symbols (env NO_RECORD=1)")
    a = p.parse_args(argv)
    a.variant_list = a.variants.split()
    if not a.variant_list:
        p.error("--variants is empty")
    return a


# --- the processes -------------------------------------------------------------------------------

def start_server(a, variant: str, wrapper: list | None = None) -> procs.CacheServer:
    """cache_server -t 1 --variant VARIANT (under `wrapper`, e.g. valgrind), ready, the 100-byte
    value stored and read back."""
    srv = procs.CacheServer(a.cache_server, ["-t", "1", "--variant", variant], cpu=a.server_cpu,
                            log_path=a.work / "server.log")
    srv.argv = [str(x) for x in (wrapper or [])] + srv.argv
    srv.ready_timeout_s = START_TIMEOUT_S
    srv.start()
    try:
        store_value(srv)
    except BaseException:
        srv.stop()
        raise
    return srv


def start_load(a, srv: procs.CacheServer, seconds: int, depth: int) -> procs.Process:
    """wrk in the background (depth > 1: the pipelining script sends DEPTH GETs per write)."""
    url = f"http://{srv.address}/key/bench"
    pipelined = ["-s", LUA, url, "--", depth] if depth > 1 else [url]
    return procs.Process(["wrk", "-t1", f"-c{a.conns}", f"-d{seconds}s", *pipelined],
                         cpu=a.client_cpu, log_path=a.work / "wrk.out").start()


def end_load(wrk: procs.Process, timeout_s: float) -> None:
    try:
        rc = wrk.proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        rc = None
    wrk.stop()
    if rc != 0:
        raise Failure(f"wrk failed: {wrk.output()}")


def run_tool(argv: list, what: str, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(x) for x in argv], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, **kw)
    if r.returncode:
        raise Failure(f"{what} failed: {r.stderr.strip()}")
    return r


# --- measuring ---------------------------------------------------------------------------------

def snapshot(srv: procs.CacheServer) -> dict:
    """One end of the counted window: the time, the server's CPU ticks (user, system), /stats."""
    t = time.time()
    stat = Path(f"/proc/{srv.pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    stats = json.loads(http("GET", f"http://{srv.address}/stats")[1])
    return {"t": t, "utime": int(fields[11]), "stime": int(fields[12]), "stats": stats}


def counted_window(a, srv: procs.CacheServer, perfstat: Path) -> tuple[dict, dict]:
    """perf stat's syscall counts over exactly the window between two snapshots: its workload
    (cat of a FIFO) starts counting when it opens the FIFO, which is when this side's open
    returns, and stops when this side closes it."""
    fifo = a.work / "window.fifo"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    events = [x for e in SYSCALL_EVENTS for x in ("-e", e)]
    perf = procs.Process(["perf", "stat", "-x,", "-o", perfstat, "-p", srv.pid, *events,
                          "--", "cat", fifo], log_path=a.work / "perf.err")
    with perf:
        fd = open_writer(fifo, perf)
        try:
            s0 = snapshot(srv)
            time.sleep(a.duration)
            s1 = snapshot(srv)
        finally:
            os.close(fd)
        if perf.proc.wait(30) != 0:
            raise Failure(f"perf stat failed: {perf.output()}")
    return s0, s1


def open_writer(fifo: Path, perf: procs.Process, timeout_s: float = 30) -> int:
    """The FIFO opened for writing once perf's workload has opened it for reading."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            if not perf.alive or time.monotonic() > deadline:
                raise Failure(f"perf stat did not start: {perf.output()}") from None
            time.sleep(0.001)


def record_top(a, srv: procs.CacheServer, top: Path) -> None:
    """perf record's top 15 symbols by CPU samples over DURATION seconds."""
    data = a.work / "perf.data"
    run_tool(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2000", "-p", srv.pid, "-o", data,
              "--", "sleep", a.duration], "perf record")
    r = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "sym",
                        "--stdio"], capture_output=True, text=True)
    lines = [line for line in r.stdout.splitlines() if re.match(r" +[0-9]", line)]
    top.write_text("".join(f"{line}\n" for line in lines[:15]))


def callgrind(a, variant: str, depth: int, out: Path) -> dict | None:
    """User-space instructions over the requests of a load under callgrind, instrumented from
    before the load starts until after it ends: the server is idle at both edges, so the
    instructions and the /stats requests cover the same work."""
    srv = start_server(a, variant, ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no",
                                    f"--callgrind-out-file={out}"])
    with srv:
        c0 = snapshot(srv)["stats"]
        run_tool(["callgrind_control", "-i", "on", srv.pid], "callgrind_control -i on")
        end_load(start_load(a, srv, a.callgrind_duration, depth), a.callgrind_duration + 60)
        run_tool(["callgrind_control", "-i", "off", srv.pid], "callgrind_control -i off")
        c1 = snapshot(srv)["stats"]
    r = subprocess.run(["callgrind_annotate", str(out)], capture_output=True, text=True)
    m = re.search(r"^ *([0-9,]+) .*PROGRAM TOTALS", r.stdout, re.M)
    if not m:
        print(f"{NAME}: no instruction total in {out}; instructions/req left out", file=sys.stderr)
        return None
    return {"ir": int(m.group(1).replace(",", "")), "requests": c1["requests"] - c0["requests"] - 1}


def profile(a, variant: str, depth: int) -> dict:
    """One configuration: load, perf stat, perf record, then callgrind; its row."""
    tag = f"{variant}-P{depth}"
    print(f"[profile] {tag}: load, perf stat, perf record", file=sys.stderr, flush=True)
    with start_server(a, variant) as srv:
        # One wrk run covers a warm-up second, the counted window and the sampled window.
        wrk = start_load(a, srv, a.duration * 2 + 4, depth)
        with wrk:
            time.sleep(1)
            s0, s1 = counted_window(a, srv, a.out / f"{tag}.perfstat.csv")
            if not a.no_record:
                record_top(a, srv, a.out / f"{tag}.top.txt")
            end_load(wrk, a.duration * 2 + 60)
    wrk_out = (a.work / "wrk.out").read_text()
    instr = None
    if not a.no_callgrind:
        print(f"[profile] {tag}: callgrind", file=sys.stderr, flush=True)
        instr = callgrind(a, variant, depth, a.out / f"{tag}.callgrind.out")
    syscalls = syscall_counts(a.out / f"{tag}.perfstat.csv")
    return config_figures(tag, variant, depth, (s0, s1), syscalls, wrk_out, instr)


# --- the report ----------------------------------------------------------------------------------

def syscall_counts(perfcsv: Path) -> dict:
    """perf stat -x, output: {event name without its category: count}."""
    syscalls = {}
    for line in perfcsv.read_text().splitlines():
        f = line.strip().split(",")
        if len(f) > 2 and f[0].isdigit():
            syscalls[f[2].split(":")[-1]] = int(f[0])
    return syscalls


def config_figures(tag: str, variant: str, depth: int, window: tuple, syscalls: dict,
                   wrk_out: str, instr: dict | None) -> dict:
    """One configuration's figures over the counted window."""
    s0, s1 = window
    a, b = s0["stats"], s1["stats"]
    secs, tck = s1["t"] - s0["t"], resources.CLK_TCK
    user, system = s1["utime"] - s0["utime"], s1["stime"] - s0["stime"]
    req = b["requests"] - a["requests"] - 1  # the second /stats counts the first
    n = max(req, 1)
    m = re.search(r"Requests/sec:\s*([\d.]+)", wrk_out)
    out = {
        "tag": tag, "variant": variant, "pipeline": depth, "requests": req, "window_s": secs,
        "req_per_s": req / secs, "wrk_req_per_s": float(m.group(1)) if m else None,
        "server_cpu_pct": 100.0 * (user + system) / tck / secs,
        "user_us_per_req": 1e6 * user / tck / n, "sys_us_per_req": 1e6 * system / tck / n,
        # (servers older than the reads/writes counters: null)
        "reads_per_req": (b["reads"] - a["reads"] - 1) / n if "reads" in b else None,
        "writes_per_req": (b["writes"] - a["writes"] - 1) / n if "writes" in b else None,
        "syscalls_per_req": syscalls.get("sys_enter", 0) / n,
        "syscalls": syscalls,
    }
    if instr:
        out["instr_per_req"] = instr["ir"] / max(instr["requests"], 1)
        out["callgrind_requests"] = instr["requests"]
    return out


def table(rows: list[dict], conns: int, dur: int) -> list[str]:
    lines = [
        "# Server profile: cost per GET hit",
        "",
        f"`cache_server -t 1` on one CPU, wrk -t1 -c{conns} on the other, 100-byte value, "
        f"{dur} s windows (rates use each window's measured length). Requests, reads and writes "
        "are the server's own counters; syscalls from "
        "`perf stat -e raw_syscalls:sys_enter`; CPU from /proc/PID/stat; instructions (user space "
        "only) from a separate run under `valgrind --tool=callgrind`, so its rate is not the "
        "table's. Pipeline N = wrk sends N GETs per write.",
        "",
        *table_head(["variant", "pipeline", "req/s", "server CPU %", "user µs/req", "sys µs/req",
                     "syscalls/req", "reads/req", "writes/req", "instructions/req"], "l" * 10),
    ]
    for r in rows:
        lines.append(row([
            r["variant"], r["pipeline"], fnum(r["req_per_s"]), fnum(r["server_cpu_pct"]),
            fratio(r["user_us_per_req"]), fratio(r["sys_us_per_req"]),
            fratio(r["syscalls_per_req"]), fnum(r["reads_per_req"], 3, grouped=False),
            fnum(r["writes_per_req"], 3, grouped=False), fnum(r.get("instr_per_req"))]))
    return lines


def report(rows: list[dict], out: Path, conns: int, dur: int) -> Path:
    """OUT/profile.json and OUT/PROFILE.md from the rows."""
    (out / "profile.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = table(rows, conns, dur)
    lines += ["", "Syscalls per request by name (the busiest):", ""]
    for r in rows:
        named = {k: v for k, v in r["syscalls"].items() if k != "sys_enter" and v}
        top = sorted(named.items(), key=lambda kv: -kv[1])[:4]
        desc = ", ".join(f"{k.removeprefix('sys_enter_')} {v / max(r['requests'], 1):.3f}"
                         for k, v in top)
        lines.append(f"- {r['variant']}, pipeline {r['pipeline']}: {desc or 'n/a'}")
    for r in rows:
        top = out / f"{r['tag']}.top.txt"
        if top.exists() and top.read_text().strip():
            lines += ["", f"Top symbols by CPU samples, {r['variant']}, pipeline {r['pipeline']} "
                      "(`perf record -e cpu-clock`, kernel included):", "", "```",
                      top.read_text().rstrip(), "```"]
    (out / "PROFILE.md").write_text("\n".join(lines) + "\n")
    return out / "PROFILE.md"


# --- main ----------------------------------------------------------------------------------------

def check_tools(a) -> None:
    need = ["wrk", "perf", "taskset", "cat"]
    if not a.no_callgrind:
        need += ["valgrind", "callgrind_control", "callgrind_annotate"]
    bench.require_tools(tuple(need), "wrk linux-perf valgrind util-linux; or scripts/setup.sh "
                        "--peers")
    bench.require_cpus(a.server_cpu, a.client_cpu)
    if not os.access(a.cache_server, os.X_OK):
        raise Failure(f"no cache_server at {a.cache_server}")


def run_all(a) -> None:
    check_tools(a)
    a.out = Path(a.dir or ROOT / "results" / f"profile-{bench.stamp()}")
    a.out.mkdir(parents=True, exist_ok=True)
    metadata.write(
        a.out, "scripts/profile_server.py", variants=a.variant_list, pipelines=a.pipelines,
        conns=a.conns, duration_s=a.duration, callgrind_duration_s=a.callgrind_duration,
        cache_server=a.cache_server, server_cpu=a.server_cpu, client_cpu=a.client_cpu,
        callgrind=not a.no_callgrind, record=not a.no_record)
    # rows.jsonl: a run that fails later keeps the finished rows
    rows_path = a.out / "rows.jsonl"
    rows_path.write_text("")
    rows = []
    with bench.scratch_dir(NAME) as a.work:
        for variant in a.variant_list:
            for depth in a.pipelines:
                rows.append(profile(a, variant, depth))
                with open(rows_path, "a") as f:
                    f.write(json.dumps(rows[-1]) + "\n")
    print(report(rows, a.out, a.conns, a.duration))


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    return bench.run_main(NAME, lambda: run_all(a))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
