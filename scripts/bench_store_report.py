#!/usr/bin/env python3
"""bench_store_report.py — summary.md and summary.json of a scripts/bench_store.sh run.

Usage: python3 scripts/bench_store_report.py DIR [--quiet]

Reads DIR/meta.json, DIR/points.jsonl (one line per measured point, written by bench_store.sh),
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
import json
import statistics
import sys
from pathlib import Path

TARGET_THROUGH_VS_REDIS = 1.0
TARGET_THROUGH_CONNS = (8, 50, 200)
TARGET_BEHIND_VS_NONE = 0.9
TARGET_GET_RATIO = 0.97
TARGET_THROUGH_BEST = 55_900
BOUND_PCT = 85.0  # a resource this busy (% of one core / of the disk's time) is called the bound


def fnum(x, digits=0):
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}"


def fratio(x):
    return "n/a" if x is None else f"{x:.2f}"


def div(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def read_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


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


def build(run):
    meta = read_json(run / "meta.json") or {}
    recs = [json.loads(l) for l in (run / "points.jsonl").read_text().splitlines() if l.strip()]
    put, get = {}, {"none": [], "rocksdb": []}
    for rec in recs:
        fig = point_figures(run, rec)
        fig.update({k: rec.get(k) for k in ("system", "config", "conns", "threads", "per_thread",
                                            "rep")})
        if rec["part"] == "put":
            put[(rec["config"], rec["conns"])] = fig
        else:
            get.setdefault(rec["config"], []).append(fig)
    conns = meta.get("conns") or sorted({c for _, c in put})

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

    # --perf: what one PUT's server CPU is made of, and what that allows.
    cost = []
    for c in conns:
        f = {k: put.get((k, c), {}) for k in ("always", "through", "behind", "none")}
        if f["through"].get("rocksdb_write_pct") is None and f["behind"].get("rocksdb_write_pct") is None:
            continue
        none_us = cpu_us_per_op(f["none"]) if f["none"] else None
        row = {"conns": c, "none_us": none_us, "redis_always": f["always"].get("ops")}
        for mode in ("through", "behind"):
            us = cpu_us_per_op(f[mode]) if f[mode] else None
            wp, mp = f[mode].get("rocksdb_write_pct"), f[mode].get("memtable_pct")
            rocks = us * wp / 100 if us is not None and wp is not None else None
            row[mode] = {
                "us": us, "rocksdb_us": rocks,
                "memtable_us": us * mp / 100 if us is not None and mp is not None else None,
                # everything else beyond what the same PUT costs with no store at all
                "rest_us": (us - none_us - rocks
                            if None not in (us, none_us, rocks) else None),
                # a PUT could cost no less than none + RocksDB's own write: the throughput
                # that leaves on one fully busy core
                "floor_us": none_us + rocks if None not in (none_us, rocks) else None,
            }
        b, t = row["behind"], row["through"]
        row["behind_ceiling"] = div(none_us, b["floor_us"])
        row["through_ceiling_ops"] = div(1e6, t["floor_us"])
        row["through_ceiling_vs_redis"] = div(row["through_ceiling_ops"], row["redis_always"])
        cost.append(row)

    med = {k: (statistics.median(v["ops"] for v in figs) if figs and
               all(v["ops"] is not None for v in figs) else None) for k, figs in get.items()}
    get_summary = {"conns": meta.get("get_conns", 8), "none_rps": [f["ops"] for f in get["none"]],
                   "rocksdb_rps": [f["ops"] for f in get["rocksdb"]],
                   "none_median": med.get("none"), "rocksdb_median": med.get("rocksdb"),
                   "ratio": div(med.get("rocksdb"), med.get("none")),
                   "hit_rates": [f.get("hit_rate") for f in get["none"] + get["rocksdb"]],
                   "store_reads": sum(f.get("d_store_reads") or 0 for f in get["rocksdb"]),
                   "disk_util": [f.get("disk_util") for f in get["rocksdb"]]}

    targets = []

    def check(name, value, threshold, fmt=fratio):
        if value is None:
            targets.append({"name": name, "result": "FAIL", "value": None,
                            "text": f"FAIL {name}: not measured"})
        else:
            ok = value >= threshold
            targets.append({"name": name, "result": "PASS" if ok else "FAIL", "value": value,
                            "text": f"{'PASS' if ok else 'FAIL'} {name}: {fmt(value)}"})

    by_conns = {r["conns"]: r for r in rows}
    for c in TARGET_THROUGH_CONNS:
        name = f"through >= {TARGET_THROUGH_VS_REDIS:.1f}x Redis always at {c} conns"
        if c in by_conns:
            check(name, by_conns[c]["through_vs_redis_always"], TARGET_THROUGH_VS_REDIS)
        else:
            targets.append({"name": name, "result": "SKIP", "value": None,
                            "text": f"SKIP {name}: {c} not in --conns"})
    for r in rows:
        check(f"behind >= {TARGET_BEHIND_VS_NONE}x none at {r['conns']} conns",
              r["behind_vs_none"], TARGET_BEHIND_VS_NONE)
    check(f"GET hit with store >= {TARGET_GET_RATIO}x without (medians of 3, "
          f"{get_summary['conns']} conns)", get_summary["ratio"], TARGET_GET_RATIO)
    best = max((r["through"] for r in rows if r["through"] is not None), default=None)
    best_c = next((r["conns"] for r in rows if best is not None and r["through"] == best), None)
    check(f"through >= {TARGET_THROUGH_BEST:,} PUT/s at its best point"
          + (f" ({best_c} conns)" if best_c else ""), best, TARGET_THROUGH_BEST,
          fmt=lambda v: f"{v:,.0f} PUT/s")

    detail = []
    order = ("always", "through", "everysec", "behind", "none")
    for c in conns:
        for k in order:
            if (k, c) in put:
                detail.append(put[(k, c)])
    for i in range(max(len(get["none"]), len(get["rocksdb"]))):
        for k in ("none", "rocksdb"):
            if i < len(get[k]):
                detail.append(dict(get[k][i], config=f"GET {k}"))
    errors = sum(f.get("errors") or 0 for f in detail)
    return {"meta": meta, "rows": rows, "cost": cost, "get": get_summary, "targets": targets,
            "detail": detail, "errors": errors}


def loadavg_end(run):
    try:
        return " ".join((run / "loadavg_end.txt").read_text().split()[:3])
    except OSError:
        return "?"


def label(fig):
    if fig["system"] == "redis":
        return f"Redis {fig['config']}"
    return fig["config"] if fig["config"].startswith("GET") else f"ours {fig['config']}"


def render(run, s):
    m = s["meta"]
    d = m.get("duration_s")
    out = []
    out.append("# Durable tier beside Redis AOF: PUT/SET and GET-hit throughput\n")
    out.append(
        f"{m.get('date_utc', '?')}, {m.get('host', '?')} ({m.get('cpu_model', '?')}, CPUs "
        f"{m.get('online_cpus', '?')}, kernel {m.get('kernel', '?')}), git {m.get('git_revision', '?')}"
        f"{' (uncommitted changes)' if m.get('git_dirty') else ''}. Servers pinned to CPU "
        f"{m.get('server_cpu')}, load generators to CPU {m.get('client_cpu')}; "
        f"{d:g} s per point{' (--quick)' if m.get('quick') else ''}; data on "
        f"{m.get('filesystem', '?')} (device {m.get('disk') or 'unknown'}). Redis "
        f"{m.get('redis_version', '?')}; cache_server -t {m.get('server_threads')}. Load average "
        f"at the start: {m.get('loadavg_start', '?')}, at the end: {loadavg_end(run)}.\n")
    out.append("## PUT/SET throughput, 100-byte values, 100,000 keys, 1 request in flight per "
               "connection\n")
    out.append("| conns | Redis always SET/s | Redis everysec SET/s | ours through PUT/s | "
               "through÷Redis-always | commits/s | writes/commit | ours behind PUT/s | "
               "behind÷none | none PUT/s | server CPU% thr/beh/none | client CPU% thr/beh/none | "
               "disk util% thr/beh/none |")
    out.append("|" + "---:|" * 13)
    slash = lambda xs: "/".join(fnum(x) for x in xs)  # noqa: E731
    for r in s["rows"]:
        out.append(
            f"| {r['conns']} | {fnum(r['redis_always'])} | {fnum(r['redis_everysec'])} | "
            f"{fnum(r['through'])} | {fratio(r['through_vs_redis_always'])} | "
            f"{fnum(r['commits_per_s'])} | {fnum(r['writes_per_commit'], 1)} | "
            f"{fnum(r['behind'])} | {fratio(r['behind_vs_none'])} | {fnum(r['none'])} | "
            f"{slash(r['server_cpu'])} | {slash(r['client_cpu'])} | {slash(r['disk_util'])} |")
    g = s["get"]
    out.append("")
    out.append("## GET hit with and without a store\n")
    runs = lambda xs: ", ".join(fnum(x) for x in xs)  # noqa: E731
    out.append(
        f"GET-hit ratio (medians of 3, {g['conns']} conns, get-popular): with store ÷ without = "
        f"**{fratio(g['ratio'])}** (rocksdb {fnum(g['rocksdb_median'])} req/s [{runs(g['rocksdb_rps'])}]"
        f" vs none {fnum(g['none_median'])} req/s [{runs(g['none_rps'])}], run in the order "
        f"none, rocksdb, none, rocksdb, none, rocksdb; store reads during the rocksdb runs: "
        f"{g['store_reads']})\n")
    out.append("## Targets\n")
    out.append("```")
    out.extend(t["text"] for t in s["targets"])
    n = {k: sum(t["result"] == k for t in s["targets"]) for k in ("PASS", "FAIL", "SKIP")}
    out.append(f"targets: {n['PASS']} PASS, {n['FAIL']} FAIL, {n['SKIP']} SKIP")
    out.append("```\n")
    if s["cost"]:
        out.append("## Where a PUT's server CPU goes (--perf)\n")
        out.append(
            "Server CPU µs per PUT (all its threads; server CPU% ÷ PUT/s), and of that the part "
            "perf's cpu-clock samples put in RocksDB's `DBImpl::WriteImpl` (WAL append, "
            "fdatasync's CPU, memtable insert) and in its memtable insert alone (`MemTable::Add`). "
            "`rest`: what is left beyond the same PUT with no store (`none`) and RocksDB's write: "
            "the tier (pending maps, copies, the completer, deferred responses). `floor` = none + "
            "RocksDB: a PUT cannot cost less with this engine on this core, so write-behind can "
            "reach at most none ÷ floor of none's throughput, and write-through at most "
            "1 s ÷ floor PUT/s on one fully busy core.\n")
        out.append("| conns | none µs/PUT | through µs/PUT | RocksDB | memtable | rest | "
                   "through ceiling PUT/s | ÷ Redis always | behind µs/PUT | RocksDB | memtable | "
                   "rest | behind ceiling ÷ none |")
        out.append("|" + "---:|" * 13)
        for r in s["cost"]:
            t, b = r["through"], r["behind"]
            out.append(
                f"| {r['conns']} | {fnum(r['none_us'], 1)} | {fnum(t['us'], 1)} | "
                f"{fnum(t['rocksdb_us'], 1)} | {fnum(t['memtable_us'], 1)} | "
                f"{fnum(t['rest_us'], 1)} | {fnum(r['through_ceiling_ops'])} | "
                f"{fratio(r['through_ceiling_vs_redis'])} | {fnum(b['us'], 1)} | "
                f"{fnum(b['rocksdb_us'], 1)} | {fnum(b['memtable_us'], 1)} | "
                f"{fnum(b['rest_us'], 1)} | {fratio(r['behind_ceiling'])} |")
        out.append("")
    if s["errors"]:
        out.append(f"**Warning: {s['errors']} requests failed** (see the errors column below).\n")
    out.append("## Every point: CPU, disk, latency\n")
    sc, cc = m.get("server_cpu"), m.get("client_cpu")
    out.append(
        f"CPU in % of one core. `server CPU%`/`client CPU%`: the process's own; `CPU{sc} "
        f"busy%`/`CPU{cc} busy%`: the whole pinned core (the server's / the client's), so the "
        "difference is what other processes took from it. `bound by`: the resources at ≥ "
        f"{BOUND_PCT:.0f}% during the point; \"none saturated\" means the requests spent "
        "their time waiting (for fsync, or on each other). `server CPU µs/op`: server CPU% ÷ "
        "ops/s, the server's CPU cost of one request.\n")
    out.append("| conns | system | threads×conns | ops/s | errors | p50 µs | p99 µs | server CPU% | "
               f"client CPU% | CPU{sc} busy% | CPU{cc} busy% | disk util% | disk writes/s | "
               "disk flushes/s | store commits/s | writes/commit | server CPU µs/op | steal% | "
               "bound by |")
    out.append("|" + "---:|" * 2 + "---:|" * 17)
    for f in s["detail"]:
        tk = (f"{f['threads']}×{f['per_thread']}" if f.get("threads")
              else f"1×{f['conns']} (event loop)")
        out.append(
            f"| {f['conns']} | {label(f)} | {tk} | {fnum(f['ops'])} | {fnum(f.get('errors'))} | "
            f"{fnum(f.get('p50_us'))} | {fnum(f.get('p99_us'))} | {fnum(f.get('server_cpu'), 1)} | "
            f"{fnum(f.get('client_cpu'), 1)} | {fnum(f.get('server_core_busy'), 1)} | "
            f"{fnum(f.get('client_core_busy'), 1)} | {fnum(f.get('disk_util'), 1)} | "
            f"{fnum(f.get('disk_writes_s'))} | {fnum(f.get('disk_flushes_s'))} | "
            f"{fnum(f.get('commits_per_s')) if f['system'] == 'ours' else '-'} | "
            f"{fnum(f.get('writes_per_commit'), 1) if f['system'] == 'ours' else '-'} | "
            f"{fnum(cpu_us_per_op(f), 1)} | {fnum(f.get('steal_pct'), 1)} | {bound_by(f)} |")
    out.append("")
    out.append("## How it was measured\n")
    out.append(
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
    cmds = (run / "commands.txt").read_text().splitlines() if (run / "commands.txt").exists() else []
    if cmds:
        out.append("Commands, as run (`$DATA`: the temporary data directory; all in "
                   "`commands.txt`):\n")
        out.append("```")
        out.extend(cmds)
        out.append("```")
    return "\n".join(out) + "\n"


def main(argv):
    args = [a for a in argv[1:] if a != "--quiet"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(args) != 1 else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 2
    run = Path(args[0])
    if not (run / "points.jsonl").exists():
        print(f"bench_store_report: no points.jsonl in {run}", file=sys.stderr)
        return 1
    s = build(run)
    md = render(run, s)
    (run / "summary.md").write_text(md)
    (run / "summary.json").write_text(json.dumps(s, indent=1) + "\n")
    if "--quiet" not in argv:
        sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
