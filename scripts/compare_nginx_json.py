#!/usr/bin/env python3
"""compare_nginx_json.py — the --json file of scripts/compare_nginx.sh (it was that script's
embedded Python): the measurements so far (rows.tsv, one tab-separated line per server and point)
with the run's settings, which the script passes in its environment (DURATION, CONNS, PIPELINE,
WARMUP, SERVER_CPU, CLIENT_CPU, CACHE_SERVER, CACHE_SERVER_FLAGS, COMPLETE, WRK_VERSION,
NGINX_VERSION). Written atomically (DEST.tmp, then renamed): the script rewrites it after every
point. scripts/experiment.py and scripts/report.py read it (nginx.json).

Usage: python3 scripts/compare_nginx_json.py ROWS.tsv CACHE_SERVER_STATS.json DEST.json
"""
import json
import os
import re
import sys

UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def micros(text):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    return round(float(m.group(1)) * UNITS[m.group(2)], 3) if m else None


def num(text):
    try:
        return float(text)
    except ValueError:
        return None


def write(rows_file: str, stats_file: str, dest: str) -> None:
    env = os.environ
    try:
        stats = json.load(open(stats_file))
    except (OSError, ValueError):
        stats = {}
    keep = ("variant", "lock", "value_path", "dispatch", "io_model", "threads")
    doc = {
        "tool": "scripts/compare_nginx.sh",
        "description": "GET of a 100-byte body over keep-alive: cache_server (GET hit) and nginx "
                       "(return 200, worker_processes 1), each pinned to CPU " + env["SERVER_CPU"] +
                       "; wrk -t1 pinned to CPU " + env["CLIENT_CPU"],
        "complete": env["COMPLETE"] == "true",
        "duration_s": int(env["DURATION"]), "warmup_s": int(env["WARMUP"]),
        "connections": [int(c) for c in env["CONNS"].split()],
        "pipeline_depths": [int(d) for d in env["PIPELINE"].split()],
        "server_cpus": env["SERVER_CPU"], "client_cpus": env["CLIENT_CPU"],
        "wrk": env["WRK_VERSION"].strip(), "nginx": env["NGINX_VERSION"].strip(),
        "cache_server": {"binary": env["CACHE_SERVER"], "extra_flags": env["CACHE_SERVER_FLAGS"],
                         "stats": {k: stats[k] for k in keep if k in stats}},
        "cpu_pct_note": "server_cpu_pct: utime+stime of the server process (nginx: its worker) over "
                        "the point's wall time, 100 = one core; wrk_cpu_pct: wrk's user+sys over its "
                        "own wall time (start-up included)",
        "latency_note": "p50/p99 are wrk's --latency percentiles as wrk printed them: wrk 'corrects' "
                        "them with synthetic samples for the expected interval, and with pipelining it "
                        "records one sample per batch (write to the batch's last response) and often prints 0.00us for "
                        "p99, an artefact of its correction. Read with care.",
        "measurements": [],
    }
    if os.path.exists(rows_file):
        for line in open(rows_file):
            f = line.rstrip("\n").split("\t")
            if len(f) != 11:
                continue
            depth, conns, server, rps, err, failed, srv_cpu, wrk_cpu, p50, p99, wall = f
            doc["measurements"].append({
                "pipeline": int(depth), "connections": int(conns), "server": server,
                "rps": num(rps), "errors": int(err), "failed": failed != "0",
                "server_cpu_pct": num(srv_cpu), "wrk_cpu_pct": num(wrk_cpu),
                "p50": p50, "p99": p99, "p50_us": micros(p50), "p99_us": micros(p99),
                "wall_s": num(wall)})
    tmp = dest + ".tmp"
    with open(tmp, "w") as out:
        json.dump(doc, out, indent=1)
    os.replace(tmp, dest)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    write(*sys.argv[1:4])
