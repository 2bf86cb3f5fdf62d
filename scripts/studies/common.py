"""The studies' shared measurement library (docs/studies.md).

Each study (kv_db.py, leaderboard.py, threadpool.py, crank.py in this folder) starts its servers
pinned, drives them with bench_client, samples the resources around each point and names the
bottleneck from those figures. What they share lives here:

- Server: cache_server pinned with taskset, ready once it prints its listening line, stopped
  on exit and on failure (the harness's procs.ListeningServer, scripts/harness/);
- pg_cluster(): a throwaway PostgreSQL cluster with its postmaster pinned to the server CPU
  (harness.postgres.pinned_cluster);
- run_bench(): one bench_client run, pinned and bounded in time, its JSON returned;
- Resources: the CPU of the server's processes, of PostgreSQL and the disk's %util over a
  with-block (harness.resources, re-exported here);
- verdict(): the saturated resource, from those figures and the client's own CPU;
  measured_the_client(): whether such a verdict names the client while the server had more than
  15% of its CPU left (the row measured bench_client, not the server: flagged in the report);
- slo_figures(), fnum(), md_table(), write_section(): reading bench_client --slo and writing a
  study's section.md + summary.json (fnum, md_table and NONE, the mark of a figure not
  measured, are harness.tables', the one formatter of every report).

The arithmetic (diskstats deltas, /proc/PID/stat ticks, the verdict) is pure and unit-tested
(tests/scripts/test_studies_common.py). Starting processes, /proc and the tables live in the
harness (scripts/harness/); this module keeps what only the studies do.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness.postgres import PgCluster, pinned_cluster, psql  # noqa: F401
from scripts.harness.procs import HarnessError, ListeningServer, taskset  # noqa: F401
from scripts.harness.resources import (CLK_TCK, Resources, child_pids, disk_delta,  # noqa: F401
                                       diskstats_fields, diskstats_line, find_disk,
                                       pid_cpu_seconds, pid_ticks, stat_ppid, stat_ticks,
                                       tree_ticks)
from scripts.harness.tables import NONE, fnum, md_table  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

BOUND_PCT = 85.0  # a resource this busy (% of its cores, % of the disk's time) is saturated
HEADROOM_PCT = 15.0  # a server with more CPU left than this was not measured by a client-bound row
MEASURED_CLIENT = "measured the client"
# A study cannot go on (a server did not start, bench_client failed): the message says why.
# The harness's own failures (a server, PostgreSQL) are the same error, so a study's main catches all.
StudyError = HarnessError


def log(study: str, msg: str) -> None:
    print(f"[{study} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="the study's output directory")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--quick", dest="full", action="store_false",
                      help="the quick form (default): fewer levels, shorter points")
    form.add_argument("--full", dest="full", action="store_true",
                      help="the long form: the published grid, longer points")
    p.set_defaults(full=False)
    p.add_argument("--build", type=Path, default=ROOT / "build" / "release",
                   help="build tree holding server/cache_server and client/bench_client "
                        "(default build/release)")
    p.add_argument("--server-cpu", type=int, default=0, help="CPU of the servers (default 0)")
    p.add_argument("--client-cpu", type=int, default=1, help="CPU of bench_client (default 1)")
    p.add_argument("--slo", help="the SLO of the capacity search, bench_client --slo syntax")
    p.add_argument("--duration", help="seconds per point (bench_client -d); the form's default")
    p.add_argument("--slo-precision", type=float, default=None,
                   help="bench_client --slo-precision of the capacity searches (default: the form's)")


def int_list(text: str | None, quick: list[int], full: list[int], full_form: bool) -> list[int]:
    """A comma list of counts from the command line, else the form's default."""
    return [int(x) for x in text.split(",")] if text else (full if full_form else quick)


def binaries(build: Path) -> tuple[Path, Path]:
    server, client = build / "server" / "cache_server", build / "client" / "bench_client"
    for b in (server, client):
        if not b.exists():
            raise StudyError(f"{b} not found: build first (bash scripts/setup.sh --build release)")
    return server, client


class Server(ListeningServer):
    """A server pinned to `cpu`, ready on its listening line, its output in LOG_DIR/NAME.log;
    a context manager (stopped on exit)."""

    def __init__(self, argv: list[str], cpu: int | None = 0, name: str = "cache_server",
                 log_dir: Path | None = None, env: dict | None = None):
        super().__init__(argv, cpu=cpu, name=name, env=env,
                         log_path=(log_dir / f"{name}.log") if log_dir else None)


def run_bench(client: Path, args: list[str], json_path: Path, cpu: int | None = 1,
              timeout_s: float = 600) -> dict:
    """One bench_client run pinned to `cpu`; its JSON. StudyError with stderr's tail on failure."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    argv = taskset(cpu) + [str(client)] + args + ["--json", str(json_path)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise StudyError(f"bench_client did not finish in {timeout_s:.0f} s: {' '.join(argv)}") from e
    (json_path.with_suffix(".txt")).write_text(r.stdout + r.stderr)
    if r.returncode != 0 or not json_path.exists():
        raise StudyError(f"bench_client failed (exit {r.returncode}): {' '.join(argv)}\n"
                         f"{r.stderr[-2000:]}")
    return json.loads(json_path.read_text())


def measure_point(client: Path, bench_args: list[str], json_path: Path, cpu: int | None,
                  server_pids: list[int], db_postmaster_pid: int | None = None,
                  disk_path: Path | None = None, cores: dict | None = None) -> dict:
    """One load level: bench_client with `bench_args` (one point), the resources sampled around
    it, and its verdict. The dict: throughput_rps, requests, errors, mean_us, p99_us,
    client_cpu_pct, the Resources figures, verdict and verdict_why.

    The server's CPU is bench_client's (`--server-pid`, added here when missing): it is sampled
    over the same measured window as the client's own CPU. Resources' figure spans the whole
    bench_client run, connection set-up and exit included: for a 0.13 s ab-like point behind
    3,000 connects that diluted the server's share and named the client as the limit when the
    server was. The database's CPU and the disk stay over the run (bench_client does not see
    them)."""
    if server_pids and "--server-pid" not in bench_args:
        bench_args = bench_args + ["--server-pid", ",".join(str(p) for p in server_pids)]
    with Resources(server_pids, db_postmaster_pid, disk_path) as res:
        doc = run_bench(client, bench_args, json_path, cpu=cpu)
    (pt,) = doc["points"]
    fig = res.figures()
    if pt.get("server_cpu_pct") is not None:
        fig["server_cpu_pct"] = pt["server_cpu_pct"]
    fig["client_cpu_pct"] = pt["client_cpu_pct"]
    cores = cores or {"server": 1, "client": 1}
    who, why = verdict(fig, cores)
    return {"throughput_rps": pt["throughput_rps"], "requests": pt["requests"],
            "errors": pt["errors"], "mean_us": pt["mean_us"], "p99_us": pt["p99_us"], **fig,
            "verdict": who, "verdict_why": why,
            "measured_client": measured_the_client(fig, cores, who)}


def verdict(fig: dict, cores: dict) -> tuple[str, str]:
    """The saturated resource of a point, from its figures: ("disk", ...) when the disk is at
    least 85% busy; otherwise the CPU consumer nearest its cores' limit among the server
    (server_cpu_pct, of cores["server"]), the database (db_cpu_pct, of cores["db"]; it shares the
    server's CPU when pinned there, so their sum is held against that CPU too) and the client
    (client_cpu_pct, of cores["client"]), when at least 85% of its cores; else none."""
    def share(pct, n):
        return None if pct is None or not n else pct / n
    disk = fig.get("disk_util_pct")
    if disk is not None and disk >= BOUND_PCT:
        return "disk", f"disk {disk:.0f}% busy"
    srv, db, cl = fig.get("server_cpu_pct"), fig.get("db_cpu_pct"), fig.get("client_cpu_pct")
    candidates = []
    if srv is not None or db is not None:
        both = (srv or 0.0) + (db or 0.0)
        if db is not None and cores.get("db_shares_server_cpu", True):
            s = share(both, cores.get("server", 1))
            who = "server CPU" if (srv or 0) >= (db or 0) else "database CPU"
            candidates.append((s, who, f"server CPU {srv or 0:.0f}% + database {db:.0f}% "
                                       f"of {cores.get('server', 1)} core(s)"))
        else:
            if srv is not None:
                candidates.append((share(srv, cores.get("server", 1)), "server CPU",
                                   f"server CPU {srv:.0f}% of {cores.get('server', 1)} core(s)"))
            if db is not None:
                candidates.append((share(db, cores.get("db", 1)), "database CPU",
                                   f"database CPU {db:.0f}% of {cores.get('db', 1)} core(s)"))
    if cl is not None:
        candidates.append((share(cl, cores.get("client", 1)), "client CPU",
                           f"client CPU {cl:.0f}% of {cores.get('client', 1)} core(s)"))
    candidates = sorted((c for c in candidates if c[0] is not None and c[0] >= BOUND_PCT),
                        key=lambda c: -c[0])
    if candidates:  # several may be at their limit at once: all are named, the busiest first
        return " + ".join(c[1] for c in candidates), "; ".join(c[2] for c in candidates)
    parts = [f"server CPU {srv:.0f}%" if srv is not None else None,
             f"database {db:.0f}%" if db is not None else None,
             f"client {cl:.0f}%" if cl is not None else None,
             f"disk {disk:.0f}%" if disk is not None else None]
    return "none saturated", "latency-bound: " + ", ".join(p for p in parts if p) + \
        f" (all below {BOUND_PCT:.0f}%)"


def server_cpu_left_pct(fig: dict, cores: dict) -> float | None:
    """The share of the server's cores its CPU left idle at a point (100 - busy %): the server's
    CPU, plus the database's when PostgreSQL shares the server's CPU (as verdict() counts them).
    None when the server's CPU was not sampled (a --target server without a PID)."""
    srv, db = fig.get("server_cpu_pct"), fig.get("db_cpu_pct")
    if srv is None:
        return None
    busy = srv + ((db or 0.0) if cores.get("db_shares_server_cpu", True) else 0.0)
    return 100.0 - busy / (cores.get("server", 1) or 1)


def measured_the_client(fig: dict, cores: dict, who: str | None = None) -> bool:
    """True when a point's verdict (`who`, else verdict(fig, cores)) names the client CPU while the
    server had more than HEADROOM_PCT (15%) of its CPU left: the row measured bench_client, not
    the server, and the report flags it "measured the client". A server whose CPU was not
    sampled is never flagged (nothing says it had CPU left)."""
    if who is None:
        who = verdict(fig, cores)[0]
    left = server_cpu_left_pct(fig, cores)
    return "client CPU" in who.split(" + ") and left is not None and left > HEADROOM_PCT


def bottleneck_cell(who: str, flagged: bool) -> str:
    """A table's bottleneck cell: the verdict, and the flag when the row measured the client."""
    return f"{who} — **{MEASURED_CLIENT}**" if flagged else who


def saturation(points: list[dict], key: str = "throughput_rps", share: float = 0.95) -> dict:
    """The saturation point of a sweep: the first point reaching `share` of the peak throughput
    (beyond it, more load adds latency, not throughput)."""
    peak = max(p[key] for p in points)
    for p in points:
        if p[key] >= share * peak:
            return p
    return points[-1]


def slo_figures(doc: dict) -> dict:
    """From a bench_client --slo JSON: spec, saturation_rps, capacity_rps (None: not met),
    capacity_percentile_us, steps (count), conclusion."""
    s = doc.get("slo") or {}
    return {"spec": s.get("spec"), "saturation_rps": s.get("saturation_rps"),
            "capacity_rps": s.get("capacity_rps"),
            "capacity_percentile_us": s.get("capacity_percentile_us"),
            "steps": len(s.get("steps") or []), "conclusion": s.get("conclusion")}


def write_section(out: Path, markdown: str, summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "section.md").write_text(markdown)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


# A throwaway PostgreSQL cluster, its postmaster pinned to the server CPU (the studies' name).
pg_cluster = pinned_cluster
