#!/usr/bin/env python3
"""bench_store_report.py — summary.md and summary.json of a scripts/bench_store.py run.

Usage: python3 -m scripts.bench_store_report DIR [--quiet]

Reads DIR/meta.json, DIR/points.jsonl (one line per measured point, written by bench_store.py),
DIR/commands.txt and the raw files those name (redis-benchmark CSV and `time` output,
bench_client JSON, /stats before and after each point). Writes DIR/summary.md (printed to stdout
unless --quiet) and DIR/summary.json with every figure of the tables.

Figures:
  ops/s             redis-benchmark's SET rps; bench_client's throughput_rps (responses / window)
  server CPU%       Redis: utime+stime of redis-server over the redis-benchmark run / its wall
                    time; ours: bench_client's server_cpu_pct (/proc/PID/stat over the window).
                    100 = one core.
  client CPU%       redis-benchmark: user+sys / real (bash `time`); bench_client: client_cpu_pct
  writes/commit     delta store_writes / delta store_commits (/stats around the point)
  commits/s         delta store_commits / delta sets x PUT/s: commits per PUT, scaled to the
                    measured window (the /stats deltas also count the warm-up)
  RocksDB µs/PUT    (--perf) server CPU µs/PUT x the share of perf's cpu-clock samples of the
                    server in rocksdb::DBImpl::WriteImpl (memtable: rocksdb::MemTable::Add),
                    callees included
  disk util%        delta of /proc/diskstats field 10 (ms doing I/O) of the data directory's
                    device / elapsed ms, as iostat's %util; writes/s and flushes/s from fields
                    5 and 15 over the same time
"""
import statistics
import sys

from scripts.harness import report
from scripts.harness.report import div, read_json
from scripts.harness.tables import fnum, fratio, listed, row, slashed, table_head

TARGET_THROUGH_VS_REDIS = 1.0
TARGET_THROUGH_CONNS = (8, 50, 200)
TARGET_BEHIND_VS_NONE = 0.9
TARGET_GET_RATIO = 0.97
TARGET_THROUGH_BEST = 55_900
BOUND_PCT = 85.0  # a resource this busy (% of one core / of the disk's time) is called the bound


def redis_figures(run, rec):
    fig = {"ops": None, "p50_us": None, "p99_us": None, "errors": 0, "server_cpu": None,
           "client_cpu": None, "n": rec.get("n")}
    for line in (run / rec["raw"]).read_text().splitlines():
        cells = [c.strip().strip('"') for c in line.split(",")]
        if cells and cells[0] == "SET" and len(cells) >= 7:
            fig["ops"] = float(cells[1])
            fig["p50_us"] = float(cells[4]) * 1000
            fig["p99_us"] = float(cells[6]) * 1000
    wall = rec["wall_s"]
    if rec.get("server_cpu_s") is not None and wall > 0:
        fig["server_cpu"] = 100 * rec["server_cpu_s"] / wall
    try:
        real, user, sys_ = (float(v) for v in (run / rec["client_times"]).read_text().split()[:3])
        fig["client_cpu"] = 100 * (user + sys_) / real if real > 0 else None
    except (OSError, ValueError, KeyError):
        pass
    return fig


def ours_figures(run, rec):
    doc = read_json(run / rec["raw"]) or {}
    p = (doc.get("points") or [{}])[0]
    fig = {"ops": p.get("throughput_rps"), "p50_us": p.get("p50_us"), "p99_us": p.get("p99_us"),
           "errors": p.get("errors"), "server_cpu": p.get("server_cpu_pct"),
           "client_cpu": p.get("client_cpu_pct"), "hit_rate": p.get("hit_rate"),
           "requests": p.get("requests"), "window_s": p.get("duration_s"),
           "aborted": bool(p.get("aborted") or (doc.get("meta") or {}).get("aborted"))}
    perf = read_json(run / rec["perf"]) if rec.get("perf") else None
    if perf:
        fig["rocksdb_write_pct"] = perf.get("write_pct")
        fig["memtable_pct"] = perf.get("memtable_pct")
    s0 = read_json(run / rec["stats_before"]) if rec.get("stats_before") else None
    s1 = read_json(run / rec["stats_after"]) if rec.get("stats_after") else None
    if s0 and s1:
        d = {k: s1.get(k, 0) - s0.get(k, 0) for k in
             ("store_commits", "store_writes", "store_reads", "store_errors", "sets",
              "readthrough_fills")}
        fig.update({"d_" + k: v for k, v in d.items()})
        fig["store"] = s1.get("store")
        fig["write_mode"] = s1.get("write_mode")
        fig["writes_per_commit"] = div(d["store_writes"], d["store_commits"])
        commits_per_put = div(d["store_commits"], d["sets"])
        fig["commits_per_s"] = (commits_per_put * fig["ops"]  # PUT points only
                                if rec["part"] == "put" and commits_per_put is not None
                                and fig["ops"] is not None else None)
        if rec["part"] != "put":
            fig["writes_per_commit"] = None  # only the preload's few PUTs: not a figure
    return fig


def point_figures(run, rec):
    fig = redis_figures(run, rec) if rec["system"] == "redis" else ours_figures(run, rec)
    wall = rec["wall_s"]
    fig["disk_util"] = (100 * rec["disk_io_ms"] / (wall * 1000)
                        if rec.get("disk_io_ms") is not None and wall > 0 else None)
    fig["disk_writes_s"] = rec["disk_writes"] / wall if rec.get("disk_writes") is not None else None
    fig["disk_flushes_s"] = (rec["disk_flushes"] / wall
                             if rec.get("disk_flushes") is not None else None)
    fig["steal_pct"] = rec.get("steal_pct")
    fig["server_core_busy"] = rec.get("server_core_busy_pct")
    fig["client_core_busy"] = rec.get("client_core_busy_pct")
    fig["wall_s"] = wall
    return fig


def cpu_us_per_op(fig):
    """The server's CPU time per request or command, in µs (its CPU% of one core / ops/s)."""
    if fig.get("server_cpu") is None or not fig.get("ops"):
        return None
    return fig["server_cpu"] / 100 / fig["ops"] * 1e6


def bound_by(fig):
    """Which resource was at its limit during the point, from the CPU and disk figures: a side's
    own CPU, its core taken by other processes (the pinned core busy, the side's share not), or
    the disk (device-wide utilization)."""
    named = []
    for side in ("server", "client"):
        own, core = fig.get(f"{side}_cpu") or 0, fig.get(f"{side}_core_busy")
        if own >= BOUND_PCT:
            named.append(f"{side} CPU")
        elif core is not None and core >= BOUND_PCT:
            named.append(f"{side} core shared ({core - own:.0f}% others)")
    if (fig.get("disk_util") or 0) >= BOUND_PCT:
        named.append("disk")
    return " + ".join(named) if named else "none saturated (waits)"


def collect(run):
    """The points of a run by part: PUT figures by (config, conns), GET figures by config."""
    put, get = {}, {"none": [], "rocksdb": []}
    for rec in report.read_points(run):
        fig = point_figures(run, rec)
        fig.update({k: rec.get(k) for k in ("system", "config", "conns", "threads", "per_thread",
                                            "rep")})
        if rec["part"] == "put":
            put[(rec["config"], rec["conns"])] = fig
        else:
            get.setdefault(rec["config"], []).append(fig)
    return put, get


def put_rows(put, conns):
    """One row per connection count: every configuration's PUT/SET rate and the ratios."""
    rows = []
    for c in conns:
        f = {k: put.get((k, c), {}) for k in ("always", "everysec", "through", "behind", "none")}
        ops = {k: v.get("ops") for k, v in f.items()}
        rows.append({
            "conns": c,
            "redis_always": ops["always"], "redis_everysec": ops["everysec"],
            "through": ops["through"], "through_vs_redis_always": div(ops["through"], ops["always"]),
            "commits_per_s": f["through"].get("commits_per_s"),
            "writes_per_commit": f["through"].get("writes_per_commit"),
            "behind": ops["behind"], "behind_vs_none": div(ops["behind"], ops["none"]),
            "none": ops["none"],
            "server_cpu": [f[k].get("server_cpu") for k in ("through", "behind", "none")],
            "client_cpu": [f[k].get("client_cpu") for k in ("through", "behind", "none")],
            "disk_util": [f[k].get("disk_util") for k in ("through", "behind", "none")],
        })
    return rows


def mode_cost(fig, none_us):
    """What one PUT of a write mode costs the server, from its CPU and perf's shares (--perf)."""
    us = cpu_us_per_op(fig) if fig else None
    wp, mp = fig.get("rocksdb_write_pct"), fig.get("memtable_pct")
    rocks = us * wp / 100 if us is not None and wp is not None else None
    return {
        "us": us, "rocksdb_us": rocks,
        "memtable_us": us * mp / 100 if us is not None and mp is not None else None,
        # everything else beyond what the same PUT costs with no store at all
        "rest_us": us - none_us - rocks if None not in (us, none_us, rocks) else None,
        # a PUT could cost no less than none + RocksDB's own write: the throughput that leaves
        # on one fully busy core
        "floor_us": none_us + rocks if None not in (none_us, rocks) else None,
    }


def cost_rows(put, conns):
    """--perf: what one PUT's server CPU is made of, and what that allows."""
    cost = []
    for c in conns:
        f = {k: put.get((k, c), {}) for k in ("always", "through", "behind", "none")}
        if f["through"].get("rocksdb_write_pct") is None and f["behind"].get("rocksdb_write_pct") is None:
            continue
        none_us = cpu_us_per_op(f["none"]) if f["none"] else None
        row = {"conns": c, "none_us": none_us, "redis_always": f["always"].get("ops")}
        for mode in ("through", "behind"):
            row[mode] = mode_cost(f[mode], none_us)
        b, t = row["behind"], row["through"]
        row["behind_ceiling"] = div(none_us, b["floor_us"])
        row["through_ceiling_ops"] = div(1e6, t["floor_us"])
        row["through_ceiling_vs_redis"] = div(row["through_ceiling_ops"], row["redis_always"])
        cost.append(row)
    return cost


def get_summary(get, meta):
    med = {k: (statistics.median(v["ops"] for v in figs) if figs and
               all(v["ops"] is not None for v in figs) else None) for k, figs in get.items()}
    return {"conns": meta.get("get_conns", 8), "none_rps": [f["ops"] for f in get["none"]],
            "rocksdb_rps": [f["ops"] for f in get["rocksdb"]],
            "none_median": med.get("none"), "rocksdb_median": med.get("rocksdb"),
            "ratio": div(med.get("rocksdb"), med.get("none")),
            "hit_rates": [f.get("hit_rate") for f in get["none"] + get["rocksdb"]],
            "store_reads": sum(f.get("d_store_reads") or 0 for f in get["rocksdb"]),
            "disk_util": [f.get("disk_util") for f in get["rocksdb"]]}


def targets(rows, get_sum):
    t = report.Targets(miss="FAIL")
    by_conns = {r["conns"]: r for r in rows}
    for c in TARGET_THROUGH_CONNS:
        name = f"through >= {TARGET_THROUGH_VS_REDIS:.1f}x Redis always at {c} conns"
        if c in by_conns:
            t.check(name, by_conns[c]["through_vs_redis_always"], TARGET_THROUGH_VS_REDIS)
        else:
            t.skip(name, f"{c} not in --conns")
    for r in rows:
        t.check(f"behind >= {TARGET_BEHIND_VS_NONE}x none at {r['conns']} conns",
                r["behind_vs_none"], TARGET_BEHIND_VS_NONE)
    t.check(f"GET hit with store >= {TARGET_GET_RATIO}x without (medians of 3, "
            f"{get_sum['conns']} conns)", get_sum["ratio"], TARGET_GET_RATIO)
    best = max((r["through"] for r in rows if r["through"] is not None), default=None)
    best_c = next((r["conns"] for r in rows if best is not None and r["through"] == best), None)
    t.check(f"through >= {TARGET_THROUGH_BEST:,} PUT/s at its best point"
            + (f" ({best_c} conns)" if best_c else ""), best, TARGET_THROUGH_BEST,
            fmt=lambda v: f"{v:,.0f} PUT/s")
    return t.items


def detail_points(put, get, conns):
    """Every point in the order the table lists them: per count the PUT configurations, then
    the GET runs alternated."""
    detail = [put[(k, c)] for c in conns for k in ("always", "through", "everysec", "behind", "none")
              if (k, c) in put]
    for i in range(max(len(get["none"]), len(get["rocksdb"]))):
        for k in ("none", "rocksdb"):
            if i < len(get[k]):
                detail.append(dict(get[k][i], config=f"GET {k}"))
    return detail


def build(run):
    meta = read_json(run / "meta.json") or {}
    put, get = collect(run)
    conns = meta.get("conns") or sorted({c for _, c in put})
    rows = put_rows(put, conns)
    get_sum = get_summary(get, meta)
    detail = detail_points(put, get, conns)
    errors = sum(f.get("errors") or 0 for f in detail)
    return {"meta": meta, "rows": rows, "cost": cost_rows(put, conns), "get": get_sum,
            "targets": targets(rows, get_sum), "detail": detail, "errors": errors}


def label(fig):
    if fig["system"] == "redis":
        return f"Redis {fig['config']}"
    return fig["config"] if fig["config"].startswith("GET") else f"ours {fig['config']}"


# --- summary.md, section by section ----------------------------------------------------------

def render_header(run, m):
    d = m.get("duration_s")
    return [
        "# Durable tier beside Redis AOF: PUT/SET and GET-hit throughput\n",
        f"{m.get('date_utc', '?')}, {m.get('host', '?')} ({m.get('cpu_model', '?')}, CPUs "
        f"{m.get('online_cpus', '?')}, kernel {m.get('kernel', '?')}), git {m.get('git_revision', '?')}"
        f"{' (uncommitted changes)' if m.get('git_dirty') else ''}. Servers pinned to CPU "
        f"{m.get('server_cpu')}, load generators to CPU {m.get('client_cpu')}; "
        f"{d:g} s per point{' (--quick)' if m.get('quick') else ''}; data on "
        f"{m.get('filesystem', '?')} (device {m.get('disk') or 'unknown'}). Redis "
        f"{m.get('redis_version', '?')}; cache_server -t {m.get('server_threads')}. Load average "
        f"at the start: {m.get('loadavg_start', '?')}, at the end: {report.loadavg_end(run)}.\n"]


def render_put(rows):
    out = ["## PUT/SET throughput, 100-byte values, 100,000 keys, 1 request in flight per "
           "connection\n"]
    out += table_head(["conns", "Redis always SET/s", "Redis everysec SET/s", "ours through PUT/s",
                       "through÷Redis-always", "commits/s", "writes/commit", "ours behind PUT/s",
                       "behind÷none", "none PUT/s", "server CPU% thr/beh/none",
                       "client CPU% thr/beh/none", "disk util% thr/beh/none"], "r" * 13)
    sl = slashed
    for r in rows:
        out.append(row([
            r["conns"], fnum(r["redis_always"]), fnum(r["redis_everysec"]), fnum(r["through"]),
            fratio(r["through_vs_redis_always"]), fnum(r["commits_per_s"]),
            fnum(r["writes_per_commit"], 1), fnum(r["behind"]), fratio(r["behind_vs_none"]),
            fnum(r["none"]), sl(r["server_cpu"]), sl(r["client_cpu"]), sl(r["disk_util"])]))
    return out


def render_get(g):
    runs = listed
    return [
        "",
        "## GET hit with and without a store\n",
        f"GET-hit ratio (medians of 3, {g['conns']} conns, get-popular): with store ÷ without = "
        f"**{fratio(g['ratio'])}** (rocksdb {fnum(g['rocksdb_median'])} req/s [{runs(g['rocksdb_rps'])}]"
        f" vs none {fnum(g['none_median'])} req/s [{runs(g['none_rps'])}], run in the order "
        f"none, rocksdb, none, rocksdb, none, rocksdb; store reads during the rocksdb runs: "
        f"{g['store_reads']})\n"]


def render_cost(cost):
    if not cost:
        return []
    out = [
        "## Where a PUT's server CPU goes (--perf)\n",
        "Server CPU µs per PUT (all its threads; server CPU% ÷ PUT/s), and of that the part "
        "perf's cpu-clock samples put in RocksDB's `DBImpl::WriteImpl` (WAL append, "
        "fdatasync's CPU, memtable insert) and in its memtable insert alone (`MemTable::Add`). "
        "`rest`: what is left beyond the same PUT with no store (`none`) and RocksDB's write: "
        "the tier (pending maps, copies, the completer, deferred responses). `floor` = none + "
        "RocksDB: a PUT cannot cost less with this engine on this core, so write-behind can "
        "reach at most none ÷ floor of none's throughput, and write-through at most "
        "1 s ÷ floor PUT/s on one fully busy core.\n"]
    out += table_head(["conns", "none µs/PUT", "through µs/PUT", "RocksDB", "memtable", "rest",
                       "through ceiling PUT/s", "÷ Redis always", "behind µs/PUT", "RocksDB",
                       "memtable", "rest", "behind ceiling ÷ none"], "r" * 13)
    for r in cost:
        t, b = r["through"], r["behind"]
        out.append(row([
            r["conns"], fnum(r["none_us"], 1), fnum(t["us"], 1), fnum(t["rocksdb_us"], 1),
            fnum(t["memtable_us"], 1), fnum(t["rest_us"], 1), fnum(r["through_ceiling_ops"]),
            fratio(r["through_ceiling_vs_redis"]), fnum(b["us"], 1), fnum(b["rocksdb_us"], 1),
            fnum(b["memtable_us"], 1), fnum(b["rest_us"], 1), fratio(r["behind_ceiling"])]))
    return out + [""]


def detail_row(f):
    tk = (f"{f['threads']}×{f['per_thread']}" if f.get("threads")
          else f"1×{f['conns']} (event loop)")
    ours = f["system"] == "ours"
    return row([
        f["conns"], label(f), tk, fnum(f["ops"]), fnum(f.get("errors")), fnum(f.get("p50_us")),
        fnum(f.get("p99_us")), fnum(f.get("server_cpu"), 1), fnum(f.get("client_cpu"), 1),
        fnum(f.get("server_core_busy"), 1), fnum(f.get("client_core_busy"), 1),
        fnum(f.get("disk_util"), 1), fnum(f.get("disk_writes_s")), fnum(f.get("disk_flushes_s")),
        fnum(f.get("commits_per_s")) if ours else "-",
        fnum(f.get("writes_per_commit"), 1) if ours else "-",
        fnum(cpu_us_per_op(f), 1), fnum(f.get("steal_pct"), 1), bound_by(f)])


def render_detail(m, detail):
    sc, cc = m.get("server_cpu"), m.get("client_cpu")
    return report.section(
        "Every point: CPU, disk, latency",
        f"CPU in % of one core. `server CPU%`/`client CPU%`: the process's own; `CPU{sc} "
        f"busy%`/`CPU{cc} busy%`: the whole pinned core (the server's / the client's), so the "
        "difference is what other processes took from it. `bound by`: the resources at ≥ "
        f"{BOUND_PCT:.0f}% during the point; \"none saturated\" means the requests spent "
        "their time waiting (for fsync, or on each other). `server CPU µs/op`: server CPU% ÷ "
        "ops/s, the server's CPU cost of one request.",
        ["conns", "system", "threads×conns", "ops/s", "errors", "p50 µs", "p99 µs",
         "server CPU%", "client CPU%", f"CPU{sc} busy%", f"CPU{cc} busy%", "disk util%",
         "disk writes/s", "disk flushes/s", "store commits/s", "writes/commit",
         "server CPU µs/op", "steal%", "bound by"],
        "r" * 19, [detail_row(f) for f in detail])


HOW_MEASURED = (
    "- **Redis**: one `redis-server` per fsync policy (`--appendonly yes --appendfsync "
    "always|everysec --save \"\"`, its own data directory), `redis-benchmark -t set -d 100 "
    "-r 100000 -c C -P 1 --csv`; a short probe run first (also the warm-up) measures the "
    "rate, then `-n` is sized to about the point's duration (each `-n` is listed below). "
    "SET/s is redis-benchmark's rps. With `always`, Redis answers a batch of SETs only "
    "after fdatasync of the AOF (its event loop's group commit).\n"
    "- **ours**: `cache_server --store rocksdb:DIR --write-mode through|behind` (fresh DIR "
    "each) and `--store none`; `bench_client --workload put-all --value-size 100 "
    "--key-size 16 --keys 100000 --no-reset` with C connections as threads × connections "
    "per thread, `-d`, a timed warm-up and `--json`. PUT/s is bench_client's "
    "throughput_rps (responses / measured window). `/stats` is read before and after each "
    "point for store_commits, store_writes and sets.\n"
    "- Per connection count the five configurations run back to back (Redis always, "
    "through, Redis everysec, behind, none), all five servers up at once (the idle ones "
    "use no CPU), so each ratio compares figures taken seconds apart; the keys accumulate "
    "over the counts in every server.\n"
    "- **GET hit**: `bench_client --workload get-popular --value-size 100 --key-size 16` "
    "(it resets the server and preloads the 8 hot keys: every GET hits the cache) against "
    "`--store none` and `--store rocksdb:DIR` (write-through), alternated 3 times each; "
    "the ratio is of the medians.\n"
    "- **disk util%**: as iostat's %util, the delta of field 10 of `/proc/diskstats` (ms "
    "doing I/O) for the device holding the data directories over the elapsed ms of the "
    "point; writes/s and flushes/s from fields 5 and 15. The figure is the whole device's: "
    "other processes' I/O counts too, and the `none` column (no store) shows that "
    "background. commits/s = Δstore_commits ÷ "
    "Δsets × PUT/s; writes/commit = Δstore_writes ÷ Δstore_commits.\n")


def render(run, s):
    m = s["meta"]
    out = render_header(run, m) + render_put(s["rows"]) + render_get(s["get"])
    out += report.targets_block(s["targets"], ("PASS", "FAIL", "SKIP"))
    out += render_cost(s["cost"])
    if s["errors"]:
        out.append(f"**Warning: {s['errors']} requests failed** (see the errors column below).\n")
    out += render_detail(m, s["detail"])
    out += ["## How it was measured\n", HOW_MEASURED]
    out += report.commands_block(run, "Commands, as run (`$DATA`: the temporary data directory; "
                                      "all in `commands.txt`):\n")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(report.main(sys.argv, "bench_store_report", __doc__, build, render))
