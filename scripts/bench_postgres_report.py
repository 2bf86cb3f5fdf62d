#!/usr/bin/env python3
"""bench_postgres_report.py — summary.md and summary.json of a scripts/bench_postgres.py run,
and the PostgreSQL measurements that script (and scripts/bench_board_source.sh) use.

Usage: python3 -m scripts.bench_postgres_report DIR [--quiet]
       python3 -m scripts.bench_postgres_report pg-start DIR MAX_CONNECTIONS
       python3 -m scripts.bench_postgres_report pg-ticks POSTMASTER_PID

DIR: reads DIR/meta.json, DIR/points.jsonl (one line per measured point, written by
bench_postgres.py), DIR/commands.txt and the raw files those name (bench_client JSON, pgbench
output and latency summaries, wrk markers and summaries, /stats before and after each point).
Writes DIR/summary.md (printed to stdout unless --quiet) and DIR/summary.json with every figure.

pg-start: a throwaway cluster through the harness (scripts/harness/postgres.py: its initdb, its
settings: fsync=on, synchronous_commit=on; run it under `taskset` and PostgreSQL inherits the
CPU), with one setting added: max_connections (pg_cluster's 40 is too few for pgbench at 64
connections). Prints the conninfo; `pg_cluster.py stop DIR` stops it and removes DIR. For the
shell scripts (bench_board_source.sh): bench_postgres.py starts its cluster with
harness.postgres.pinned_cluster.

pg-ticks: utime+stime, in clock ticks, of every PostgreSQL process: the postmaster, each of its
live children, and (the postmaster's cutime+cstime) the children it has already reaped, so a
backend that exits during the point (pgbench's, at its end) still counts. Prints "TICKS NPROCS".
bench_postgres.py calls pg_ticks() and pgbench_latency() (p50/p99/mean of the latencies in
pgbench's per-transaction logs, -l: the third column, µs) directly.

Figures of the report:
  PUT/s             bench_client's throughput_rps (responses / measured window); pgbench: its
                    "tps (without initial connection time)" — one transaction per request
  p50/p99 µs        bench_client's; pgbench: from its per-transaction log; wrk: its histogram
  PG CPU%           Δ pg-ticks over the point's wall time (the load generator's run), 100 = one
                    core; cache_server CPU% and client CPU% likewise (/proc/PID/stat of the
                    server; the client's user+sys over real, from its rusage as `time`
                    prints it: raw/*.time)
  disk util%        as iostat's %util: Δ field 13 of the device's /proc/diskstats line (ms
                    doing I/O) over the elapsed ms; writes/s and flush requests/s from fields 8
                    and 19 (kernel iostats fields 5 and 16)
  commits/s         ours: Δstore_commits ÷ Δsets × PUT/s; writes/commit Δstore_writes ÷
                    Δstore_commits (/stats around the point). pgbench: one commit per transaction
"""
import json
import math
import statistics
import sys
from pathlib import Path

from scripts.harness import report
from scripts.harness.report import cpu_pct, div, read_json
from scripts.harness.resources import disk_delta, tree_ticks_count
from scripts.harness.tables import fnum, fratio, listed, row, slashed, table_head

TARGET_VS_PGBENCH = 4.0       # write-through PUT/s ÷ pgbench per-request-commit tps ...
TARGET_VS_PGBENCH_CONNS = 64  # ... at this many connections
BASELINE_PUT_S = 55.9         # the system this answers for
TARGET_BEST = 28_000          # 500 × 55.9 PUT/s, rounded as the issue states it
TARGET_GET_RATIO = 0.97       # GET hits with postgres behind ÷ --store none: "unchanged"
BOUND_PCT = 85.0              # a resource this busy (% of one core / of the disk) is the bound


# --- pure arithmetic (unit-tested) -------------------------------------------------------------

SHARED_BUFFERS = "256MB"  # pg-start: PostgreSQL's buffers for the benchmark cluster


def pg_ticks(postmaster_pid, proc="/proc"):
    """(ticks, nprocs) of the postmaster and every process whose parent it is (see the doc)."""
    found = tree_ticks_count(postmaster_pid, proc)
    if found is None:
        raise OSError(f"no process {postmaster_pid}")
    return found


def percentile(sorted_values, pct):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return None
    k = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[k - 1]


def pgbench_latency(paths):
    lat = []
    for p in paths:
        with open(p) as f:
            for line in f:
                cols = line.split()
                if len(cols) >= 3 and cols[2].lstrip("-").isdigit():
                    lat.append(int(cols[2]))
    lat.sort()
    return {"transactions": len(lat), "p50_us": percentile(lat, 50), "p99_us": percentile(lat, 99),
            "mean_us": (sum(lat) / len(lat)) if lat else None}


# --- figures of one point ----------------------------------------------------------------------

def time_cpu(path):
    """A .time file, 'real user sys' seconds as bash's `time` prints them -> client CPU%
    (user+sys over real)."""
    try:
        real, user, sys_ = (float(v) for v in Path(path).read_text().split()[:3])
    except (OSError, ValueError):
        return None
    return 100.0 * (user + sys_) / real if real > 0 else None


def pgbench_tps(path):
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith("tps = "):
                return float(line.split()[2])
    except (OSError, ValueError, IndexError):
        pass
    return None


def pgbench_failed(path):
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith("number of failed transactions:"):
                return int(line.split(":")[1].split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def wrk_figures(run, rec):
    """keys/s of a wrk pass over every key once: the keys over the span from the first request
    to the last needed response (the Lua markers' monotonic timestamps)."""
    t0, t1, ok, bad = None, None, 0, 0
    for m in rec.get("markers") or []:
        cols = (run / m).read_text().split()
        a, b = float(cols[1]), float(cols[2])
        t0 = a if t0 is None else min(t0, a)
        t1 = b if t1 is None else max(t1, b)
        ok += int(cols[3])
        bad += int(cols[4])
    summary = {}
    try:
        for line in (run / rec["raw"]).read_text().splitlines():
            if line.startswith("WRKJSON "):
                summary = json.loads(line[len("WRKJSON "):])
    except OSError:
        pass
    span = (t1 - t0) if t0 is not None and t1 is not None else None
    errs = bad + (summary.get("errors") or 0)
    return {"ops": div(ok, span), "keys_ok": ok, "errors": errs, "span_s": span,
            "p50_us": summary.get("p50_us"), "p99_us": summary.get("p99_us"),
            "requests": summary.get("requests")}


def point_figures(run, rec, clk_tck):
    wall = rec.get("wall_s")
    fig = {k: rec.get(k) for k in ("part", "system", "config", "conns", "threads", "per_thread",
                                   "rep")}
    fig["wall_s"] = wall
    if rec["system"] == "ours":
        doc = read_json(run / rec["raw"]) or {}
        p = (doc.get("points") or [{}])[0]
        fig.update({"ops": p.get("throughput_rps"), "p50_us": p.get("p50_us"),
                    "p99_us": p.get("p99_us"), "errors": p.get("errors"),
                    "hit_rate": p.get("hit_rate"),
                    "aborted": bool(p.get("aborted") or (doc.get("meta") or {}).get("aborted"))})
    elif rec["system"] == "pgbench":
        lat = read_json(run / rec["latency"]) if rec.get("latency") else None
        fig.update({"ops": pgbench_tps(run / rec["raw"]), "errors": pgbench_failed(run / rec["raw"]),
                    "p50_us": (lat or {}).get("p50_us"), "p99_us": (lat or {}).get("p99_us"),
                    "transactions": (lat or {}).get("transactions")})
    else:  # wrk
        fig.update(wrk_figures(run, rec))
    s0 = read_json(run / rec["stats_before"]) if rec.get("stats_before") else None
    s1 = read_json(run / rec["stats_after"]) if rec.get("stats_after") else None
    if s0 and s1:
        keys = ("store_commits", "store_writes", "store_reads", "store_errors", "sets", "hits",
                "misses", "readthrough_fills", "store_reconnects")
        d = {k: (s1.get(k) or 0) - (s0.get(k) or 0) for k in keys}
        fig.update({"d_" + k: v for k, v in d.items()})
        fig["store_connected"] = s1.get("store_connected")
        if rec["part"] in ("put", "cold-load") and fig.get("ops") is not None:
            fig["writes_per_commit"] = div(d["store_writes"], d["store_commits"])
            cpp = div(d["store_commits"], d["sets"])
            fig["commits_per_s"] = cpp * fig["ops"] if cpp is not None else None
    if rec["system"] == "pgbench" and fig.get("ops") is not None:
        fig["commits_per_s"] = fig["ops"]
        fig["writes_per_commit"] = 1.0
    pg = rec.get("pg_ticks")
    fig["pg_cpu"] = cpu_pct(pg[1] - pg[0], clk_tck, wall) if pg else None
    sv = rec.get("server_ticks")
    fig["server_cpu"] = cpu_pct(sv[1] - sv[0], clk_tck, wall) if sv else None
    fig["client_cpu"] = time_cpu(run / rec["client_times"]) if rec.get("client_times") else None
    ct = rec.get("client_ticks")
    if ct:  # wrk: its own ticks, read just before it was stopped
        fig["client_cpu"] = cpu_pct(ct[1] - ct[0], clk_tck, wall)
    fig["disk_util"] = fig["disk_writes_s"] = fig["disk_flushes_s"] = None
    if rec.get("diskstats_before") and rec.get("diskstats_after") and wall:
        dd = disk_delta(rec["diskstats_before"], rec["diskstats_after"], wall)
        fig["disk_util"], fig["disk_writes_s"] = dd["util_pct"], dd["writes_per_s"]
        fig["disk_flushes_s"] = dd["flushes_per_s"]
    fig["server_core_busy"] = rec.get("server_core_busy_pct")
    fig["client_core_busy"] = rec.get("client_core_busy_pct")
    fig["steal_pct"] = rec.get("steal_pct")
    return fig


def core_us(fig):
    """µs of server-core CPU (cache_server + PostgreSQL) per request of a point."""
    if not fig or not fig.get("ops") or (fig.get("server_cpu") is None and fig.get("pg_cpu") is None):
        return None
    return ((fig.get("server_cpu") or 0.0) + (fig.get("pg_cpu") or 0.0)) / 100.0 / fig["ops"] * 1e6


def bound_by(fig):
    """The resources at their limit during the point. CPU 0 runs both cache_server and
    PostgreSQL: their sum is what that core gave the servers; what else the core was busy with
    (from /proc/stat) is other processes' (named when >= 15% of it)."""
    named = []
    ours, pg = fig.get("server_cpu") or 0.0, fig.get("pg_cpu") or 0.0
    core = fig.get("server_core_busy")
    if ours + pg >= BOUND_PCT or (core is not None and core >= BOUND_PCT):
        others = (core - ours - pg) if core is not None else 0.0
        text = f"server core (cache_server {ours:.0f}% + postgres {pg:.0f}%"
        named.append(text + (f" + others {others:.0f}%)" if others >= 15 else ")"))
    cl, ccore = fig.get("client_cpu") or 0.0, fig.get("client_core_busy")
    if cl >= BOUND_PCT or (ccore is not None and ccore >= BOUND_PCT):
        others = (ccore - cl) if ccore is not None else 0.0
        named.append(f"client core (client {cl:.0f}%" +
                     (f" + others {others:.0f}%)" if others >= 15 else ")"))
    if (fig.get("disk_util") or 0) >= BOUND_PCT:
        named.append("disk")
    return " + ".join(named) if named else "none saturated (waits: commit/fsync latency)"


# --- the whole run -----------------------------------------------------------------------------

def median_point(figs):
    """The point whose throughput is the (low) median of the repeats, and every repeat's ops."""
    figs = [f for f in figs if f.get("ops") is not None]
    if not figs:
        return None, []
    ordered = sorted(figs, key=lambda f: f["ops"])
    return ordered[(len(ordered) - 1) // 2], [f["ops"] for f in figs]


SYSTEMS = ("postgres", "pgbench", "rocksdb")


def put_row(c, points):
    """The row of one connection count: each system's median point and the figures of it."""
    m = {}
    for k in SYSTEMS:
        m[k], m[k + "_runs"] = median_point(points.get((k, c), []))
    ops = {k: (m[k] or {}).get("ops") for k in SYSTEMS}
    g = lambda k, field: (m[k] or {}).get(field)  # noqa: E731
    return {
        "conns": c,
        "postgres": ops["postgres"], "pgbench": ops["pgbench"], "rocksdb": ops["rocksdb"],
        "postgres_vs_pgbench": div(ops["postgres"], ops["pgbench"]),
        "runs": {k: m[k + "_runs"] for k in SYSTEMS},
        "p50_us": {k: g(k, "p50_us") for k in SYSTEMS},
        "p99_us": {k: g(k, "p99_us") for k in SYSTEMS},
        "pg_cpu": {k: g(k, "pg_cpu") for k in ("postgres", "pgbench")},
        "server_cpu": {k: g(k, "server_cpu") for k in ("postgres", "rocksdb")},
        "client_cpu": {k: g(k, "client_cpu") for k in SYSTEMS},
        "disk_util": {k: g(k, "disk_util") for k in SYSTEMS},
        # CPU time of the server core (cache_server + PostgreSQL, both pinned there) per
        # request: 1 s / this is what that core allows at 100% busy
        "core_us": {k: core_us(m[k]) for k in SYSTEMS},
        "commits_per_s": g("postgres", "commits_per_s"),
        "writes_per_commit": g("postgres", "writes_per_commit"),
        "bound": {k: bound_by(m[k]) if m[k] else None for k in SYSTEMS},
    }


def get_summary(figs, meta):
    get = {"none": [f for f in figs if f["part"] == "get" and f["config"] == "none"],
           "postgres": [f for f in figs if f["part"] == "get" and f["config"] == "postgres"]}
    med = {k: (statistics.median(f["ops"] for f in v) if v and all(f.get("ops") is not None
                                                                   for f in v) else None)
           for k, v in get.items()}
    return {"conns": meta.get("get_conns"),
            "none_rps": [f["ops"] for f in get["none"]],
            "postgres_rps": [f["ops"] for f in get["postgres"]],
            "none_median": med["none"], "postgres_median": med["postgres"],
            "ratio": div(med["postgres"], med["none"]),
            "hit_rates": [f.get("hit_rate") for f in get["none"] + get["postgres"]],
            "store_reads": sum(f.get("d_store_reads") or 0 for f in get["postgres"]),
            "pg_cpu": [f.get("pg_cpu") for f in get["postgres"]],
            "order": [f["config"] for f in figs if f["part"] == "get"]}


def cold_summary(figs, meta):
    cold = {"keys": meta.get("keys"), "conns": meta.get("read_conns")}
    for part in ("cold-load", "cold-read"):
        cold[part.replace("cold-", "")] = next((f for f in figs if f["part"] == part), None)
    cold["read_keys_s"] = (cold.get("read") or {}).get("ops")
    cold["load_put_s"] = (cold.get("load") or {}).get("ops")
    return cold


def targets(rows, get_sum):
    t = report.Targets(miss="MISS")
    by_c = {r["conns"]: r for r in rows}
    name = (f"write-through >= {TARGET_VS_PGBENCH:.0f}x pgbench per-request-commit tps at "
            f"{TARGET_VS_PGBENCH_CONNS} conns")
    if TARGET_VS_PGBENCH_CONNS in by_c:
        t.check(name, by_c[TARGET_VS_PGBENCH_CONNS]["postgres_vs_pgbench"], TARGET_VS_PGBENCH)
    else:
        t.skip(name, f"{TARGET_VS_PGBENCH_CONNS} not in --conns")
    best = max((r["postgres"] for r in rows if r["postgres"] is not None), default=None)
    best_c = next((r["conns"] for r in rows if best is not None and r["postgres"] == best), None)
    t.check(f"write-through >= {TARGET_BEST:,} PUT/s at its best point (500x {BASELINE_PUT_S} "
            f"PUT/s)" + (f" ({best_c} conns)" if best_c else ""), best, TARGET_BEST,
            fmt=lambda v: f"{v:,.0f} PUT/s = {v / BASELINE_PUT_S:,.0f}x {BASELINE_PUT_S}")
    t.check(f"GET hit with postgres behind >= {TARGET_GET_RATIO}x --store none (medians, "
            f"{get_sum['conns']} conns)", get_sum["ratio"], TARGET_GET_RATIO)
    return t.items


def build(run):
    meta = read_json(run / "meta.json") or {}
    clk = meta.get("clk_tck") or 100
    figs = [point_figures(run, r, clk) for r in report.read_points(run)]
    conns = meta.get("conns") or sorted({f["conns"] for f in figs if f["part"] == "put"})
    put = {}
    for f in figs:
        if f["part"] == "put":
            put.setdefault((f["config"], f["conns"]), []).append(f)
    rows = [put_row(c, put) for c in conns]
    get_sum = get_summary(figs, meta)
    errors = sum(f.get("errors") or 0 for f in figs)
    return {"meta": meta, "rows": rows, "get": get_sum, "cold": cold_summary(figs, meta),
            "targets": targets(rows, get_sum), "detail": figs, "errors": errors}


LABEL = {"postgres": "ours postgres", "pgbench": "pgbench", "rocksdb": "ours rocksdb",
         "none": "ours none"}


# --- summary.md, section by section ----------------------------------------------------------

def render_header(run, m):
    d = m.get("duration_s")
    st = m.get("pg_settings") or {}
    return [
        "# cache_server write-through to PostgreSQL beside per-request commits (pgbench) "
        "and RocksDB\n",
        f"{m.get('date_utc', '?')}, {m.get('host', '?')} ({m.get('cpu_model', '?')}, CPUs "
        f"{m.get('online_cpus', '?')}, kernel {m.get('kernel', '?')}), git "
        f"{m.get('git_revision', '?')}{' (uncommitted changes)' if m.get('git_dirty') else ''}. "
        f"**Pinned**: cache_server and PostgreSQL (postmaster pinned by `taskset -pc "
        f"{m.get('server_cpu')}` once it is up, every backend inherits it; checked per point) "
        f"on CPU {m.get('server_cpu')}; bench_client, pgbench and wrk on CPU "
        f"{m.get('client_cpu')}. "
        f"{d:g} s per point{' (--quick)' if m.get('quick') else ''}, "
        f"{m.get('repeat', 1)} repeat(s) (medians); {m.get('keys'):,} keys, 100-byte values. "
        f"PostgreSQL {m.get('pg_version', '?')}: fsync={st.get('fsync', '?')}, "
        f"synchronous_commit={st.get('synchronous_commit', '?')}, wal_sync_method="
        f"{st.get('wal_sync_method', '?')}, shared_buffers={st.get('shared_buffers', '?')}, "
        f"max_connections={st.get('max_connections', '?')}; data on {m.get('filesystem', '?')}, "
        f"device **{m.get('disk') or 'unknown'}** (from `{m.get('disk_how', '?')}`). "
        f"cache_server -t {m.get('server_threads')} --store-connections "
        f"{m.get('store_connections')}. Load average at the start: "
        f"{m.get('loadavg_start', '?')}, at the end: {report.loadavg_end(run)}.\n"]


def put_table_row(r):
    sl = slashed
    return row([
        r["conns"], fnum(r["postgres"]), fnum(r["pgbench"]), fratio(r["postgres_vs_pgbench"]),
        fnum(r["rocksdb"]), *(sl([r["p50_us"][k], r["p99_us"][k]]) for k in SYSTEMS),
        sl([r["pg_cpu"]["postgres"], r["pg_cpu"]["pgbench"]]),
        sl([r["server_cpu"]["postgres"], r["server_cpu"]["rocksdb"]]),
        sl([r["client_cpu"][k] for k in SYSTEMS]), sl([r["disk_util"][k] for k in SYSTEMS]),
        sl([r["core_us"][k] for k in SYSTEMS], 1), fnum(r["commits_per_s"]),
        fnum(r["writes_per_commit"], 1)])


def render_put(m, rows):
    out = [
        "## PUT-ALL, 100-byte values, 1 request in flight per connection\n",
        "`ours postgres` = `cache_server --store postgres:… --write-mode through` (each PUT "
        "answered after the COMMIT covering it); `pgbench` = the naive design, one upsert "
        "committed per request (`-M prepared`, same table shape and key count); `ours rocksdb` = "
        "`--store rocksdb:DIR --write-mode through`. PG CPU% = all PostgreSQL processes; "
        "srv CPU% = cache_server; both on CPU "
        f"{m.get('server_cpu')}, 100 = one core. server-core µs/req = (PG CPU% + srv CPU%) "
        "÷ 100 ÷ ops/s × 10⁶: the CPU the server core spends per request, so 10⁶ ÷ it is what "
        "that core allows when it is the bound. Latencies in µs.\n"]
    out += table_head(["conns", "ours postgres PUT/s", "pgbench tps", "ours÷pgbench",
                       "ours rocksdb PUT/s", "p50/p99 postgres", "p50/p99 pgbench",
                       "p50/p99 rocksdb", "PG CPU% ours/pgbench", "srv CPU% postgres/rocksdb",
                       "client CPU% pg/pgbench/rocks", "disk util% pg/pgbench/rocks",
                       "server-core µs/req pg/pgbench/rocks", "commits/s", "writes/commit"],
                      "r" * 15)
    out += [put_table_row(r) for r in rows]
    out += ["", "Bound by (the median point of each; ≥ "
                f"{BOUND_PCT:.0f}% of a core or of the disk's time):\n"]
    out += [f"- {r['conns']} conns: postgres — {r['bound']['postgres']}; pgbench — "
            f"{r['bound']['pgbench']}; rocksdb — {r['bound']['rocksdb']}" for r in rows]
    return out + [""]


def render_get(g):
    return [
        "## GET-POPULAR (cache hits): postgres behind vs --store none\n",
        f"GET-hit ratio (medians of {len(g['none_rps'])}, {g['conns']} conns, get-popular): "
        f"postgres ÷ none = **{fratio(g['ratio'])}** (postgres {fnum(g['postgres_median'])} "
        f"req/s [{listed(g['postgres_rps'])}] vs none {fnum(g['none_median'])} req/s "
        f"[{listed(g['none_rps'])}], run in the order {', '.join(g['order'])}; store "
        f"reads during the postgres runs: {g['store_reads']}; PG CPU% during them: "
        f"{listed(g['pg_cpu'], 1)})\n"]


def render_cold(c):
    ld, rd = c.get("load") or {}, c.get("read") or {}
    out = [
        "## Cold-cache read-through\n",
        f"{fnum(c['keys'])} keys PUT through `--write-mode through` (wrk, {ld.get('conns')} "
        f"conns, each key once: {fnum(c['load_put_s'])} PUT/s), then `POST /reset?scope=cache`, "
        f"then every key read once (wrk, {rd.get('conns')} conns on one thread): each GET "
        f"misses the cache and is read from PostgreSQL.\n"]
    out += table_head(["phase", "conns", "keys/s", "keys ok", "errors", "p50 µs", "p99 µs",
                       "PG CPU%", "srv CPU%", "client CPU%", "disk util%", "store reads",
                       "read-through fills", "cache hits"], "l" + "r" * 13)
    for name, f in (("load (PUT)", ld), ("cold read (GET)", rd)):
        if f:
            out.append(row([
                name, f.get("conns"), fnum(f.get("ops")), fnum(f.get("keys_ok")),
                fnum(f.get("errors")), fnum(f.get("p50_us")), fnum(f.get("p99_us")),
                fnum(f.get("pg_cpu"), 1), fnum(f.get("server_cpu"), 1),
                fnum(f.get("client_cpu"), 1), fnum(f.get("disk_util"), 1),
                fnum(f.get("d_store_reads")), fnum(f.get("d_readthrough_fills")),
                fnum(f.get("d_hits"))]))
    out.append("")
    if rd:
        out.append(f"Cold read bound by: {bound_by(rd)}.\n")
    return out


def detail_row(f):
    tk = f"{f['threads']}×{f['per_thread']}" if f.get("threads") else "-"
    return row([
        f["part"], f["conns"], LABEL.get(f["config"], f["config"]), f.get("rep") or 1, tk,
        fnum(f.get("ops")), fnum(f.get("errors")), fnum(f.get("p50_us")), fnum(f.get("p99_us")),
        fnum(f.get("pg_cpu"), 1), fnum(f.get("server_cpu"), 1), fnum(f.get("client_cpu"), 1),
        fnum(f.get("server_core_busy"), 1), fnum(f.get("client_core_busy"), 1),
        fnum(f.get("disk_util"), 1), fnum(f.get("disk_writes_s")), fnum(f.get("disk_flushes_s")),
        fnum(f.get("commits_per_s")), fnum(f.get("writes_per_commit"), 1),
        fnum(f.get("steal_pct"), 1), bound_by(f)])


def render_detail(m, detail):
    sc, cc = m.get("server_cpu"), m.get("client_cpu")
    return report.section(
        "Every point: CPU, disk, latency",
        f"CPU in % of one core over the point's wall time. `CPU{sc} busy%`/`CPU{cc} busy%`: "
        "the whole pinned core (from /proc/stat), so what other processes took shows as the "
        "difference. disk: device "
        f"{m.get('disk') or 'unknown'}, the whole device's activity (other processes' I/O "
        "counts too).",
        ["part", "conns", "system", "rep", "threads×conns", "ops/s", "errors", "p50 µs",
         "p99 µs", "PG CPU%", "srv CPU%", "client CPU%", f"CPU{sc} busy%", f"CPU{cc} busy%",
         "disk util%", "disk writes/s", "disk flushes/s", "commits/s", "writes/commit",
         "steal%", "bound by"],
        "lrl" + "r" * 17 + "l", [detail_row(f) for f in detail])


HOW_MEASURED = (
    "- **PostgreSQL**: one throwaway cluster from `scripts/harness/postgres.py` (initdb, "
    "`fsync=on`, `synchronous_commit=on`, its other settings), with max_connections raised "
    "for pgbench; every point begins with a `CHECKPOINT`, so each starts the same way "
    "(full-page writes after it). Three tables of the store's shape (`key bytea primary "
    "key, value bytea, updated_at timestamptz`), each filled with the key count before "
    "the first point: `kv` (ours, loaded through a write-behind cache_server, stopped, so "
    "every PUT of a point updates an existing row), `kv_pgbench` (generate_series), and "
    "`kv_get`, `kv_cold` for the GET and cold-read parts.\n"
    "- **ours**: `bench_client --workload put-all --value-size 100 --key-size 16 --keys N "
    "--no-reset`, C connections as threads × connections per thread, `-d`, a timed warm-up "
    "(in the CPU and disk window, not in the throughput). `/stats` before and after gives "
    "commits and writes per commit.\n"
    "- **pgbench**: `pgbench -n -f upsert.sql -c C -j C -T ceil(duration) -M prepared -l`, "
    "the script one `\\set id random(0, N-1)` and one `INSERT ... ON CONFLICT (key) DO "
    "UPDATE SET value = EXCLUDED.value, updated_at = now()` (the store's own upsert, one row "
    "instead of a group) in autocommit: one commit, so one WAL flush wait, per request. "
    "PostgreSQL still groups concurrent backends' WAL flushes by itself (one fdatasync can "
    "cover every commit record written before it).\n"
    "- Per connection count the three run back to back (ours postgres, pgbench, ours "
    "rocksdb), the servers up all along, so each ratio compares figures taken seconds "
    "apart; with `--repeat` the whole sweep repeats and the median point is shown.\n"
    "- **GET hit**: `bench_client --workload get-popular` (it resets the server and preloads "
    "the 8 hot keys: every GET hits the cache) against `--store none` and `--store "
    "postgres:` (write-through), alternated (none first, then postgres first, ...: a drift of "
    "the machine's load does not favour one side); the ratio is of the medians.\n"
    "- **Cold read-through**: wrk with a Lua script over keys `c%015d` (one thread: the "
    "connections share one counter, so each key is requested once); keys/s = keys ÷ the "
    "span from the first request to the last response (monotonic clock in the script).\n"
    "- **CPU**: PostgreSQL = utime+stime of the postmaster, its live children and the "
    "children it reaped meanwhile (cutime+cstime), from /proc/PID/stat at the start and the "
    "end of the load generator's run; cache_server likewise; clients: user+sys ÷ real of "
    "their own run (their rusage).\n"
    "- **disk util%**: iostat's %util: Δ field 13 of the device's `/proc/diskstats` line "
    "(ms with I/O in flight) ÷ the point's elapsed ms; writes/s and flushes/s from fields 8 "
    "and 19.\n")


def render(run, s):
    m = s["meta"]
    out = render_header(run, m) + render_put(m, s["rows"]) + render_get(s["get"])
    out += render_cold(s["cold"])
    out += report.targets_block(s["targets"], ("PASS", "MISS", "SKIP"))
    if s["errors"]:
        out.append(f"**Warning: {s['errors']} requests failed** (see the errors column below).\n")
    out += render_detail(m, s["detail"]) + ["## How it was measured\n", HOW_MEASURED]
    out += report.commands_block(run, "Commands, as run (`$DATA`: the temporary data directory, "
                                      "`$PG`: the conninfo; all in `commands.txt`):\n")
    return "\n".join(out) + "\n"


# --- subcommands -------------------------------------------------------------------------------

def cmd_pg_start(directory, max_connections):
    import atexit

    from scripts.harness.postgres import PgCluster, PgClusterError

    try:
        # Room for pgbench's connections, and buffers that hold the whole key space (the tests'
        # 16MB would make every point pay for evicting pages).
        c = PgCluster(directory, settings={"max_connections": int(max_connections),
                                           "shared_buffers": SHARED_BUFFERS})
        atexit.unregister(c.cleanup)  # the caller stops it (pg_cluster.py stop DIR)
        c.start()
    except PgClusterError as e:
        print(f"bench_postgres: {e}", file=sys.stderr)
        return 1
    print(c.conninfo, flush=True)
    print(c.bindir, flush=True)
    return 0


def cmd_pg_ticks(pid):
    try:
        ticks, n = pg_ticks(int(pid))
    except (OSError, ValueError) as e:
        print(f"bench_postgres: cannot read PostgreSQL's CPU: {e}", file=sys.stderr)
        return 1
    print(ticks, n)
    return 0


SUBCOMMANDS = {
    "pg-start": ("pg-start DIR MAX_CONNECTIONS", 2, 2, cmd_pg_start),
    "pg-ticks": ("pg-ticks POSTMASTER_PID", 1, 1, cmd_pg_ticks),
}

if __name__ == "__main__":
    sys.exit(report.main(sys.argv, "bench_postgres_report", __doc__, build, render, SUBCOMMANDS))
