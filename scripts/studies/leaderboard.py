#!/usr/bin/env python3
"""Study leaderboard: leaderboard services, database only to fully cached (docs/studies.md).

The published PostgreSQL-backed service ran in four modes; here they are cache_server
configurations, all write-through to a throwaway PostgreSQL cluster pinned with the server:

  mode 0, database only   --store postgres --board-source store   (reads are SQL queries)
  mode 1, caches only     --store none                            (nothing durable)
  mode 2, cache + db      --store postgres --board-top-cache off  (boards in memory)
  mode 3, everything      --store postgres --board-top-cache on   (plus rendered top-N pages)

Four workloads over one board of players m0.. (--members; 100,000 in the long form) with scores
in [0, 50,000): update-only (board-update), leaderboard-only (board-top, top 100), mixed
(board-mixed, 90 reads : 10 updates) and single-score reads (board-score); load levels up to 64
connections (one bench_client thread, C connections; quick 1, 4, 16, 64, so that the figure has
four levels a line, its legend naming each mode). Per configuration (mode x workload): the
saturation point, the capacity at the SLO and the bottleneck verdict from measured CPU (server,
PostgreSQL, client) and disk %util. The Redis+MongoDB service's three tests map to update-only
(insert), leaderboard-only (top-100) and mixed (both).

  python3 -m scripts.studies.leaderboard --out DIR [--quick | --full] [--levels 1,4,16,64]
"""
from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
import urllib.request
from pathlib import Path

from scripts.studies import common as c

STUDY = "leaderboard"
MODES = {
    0: ("database only", ["--store", "postgres", "--board-source", "store"]),
    1: ("caches only", ["--store", "none"]),
    2: ("cache + database", ["--store", "postgres", "--board-top-cache", "off"]),
    3: ("everything", ["--store", "postgres", "--board-top-cache", "on"]),
}
WORKLOADS = {
    "update-only": ["--workload", "board-update"],
    "leaderboard-only": ["--workload", "board-top", "--top-n", "100"],
    "mixed": ["--workload", "board-mixed", "--top-n", "100", "--ratio", "90:10:0"],
    "single-score": ["--workload", "board-score"],
}
QUICK_LEVELS, FULL_LEVELS = [1, 4, 16, 64], [1, 4, 16, 32, 64]  # the figure: >= 4 levels a line
QUICK_MEMBERS, FULL_MEMBERS = 20_000, 100_000
SCORE_MAX = 50_000
DEFAULT_SLO = "p99=5ms"
BOARD_TABLE = "leaderboard"  # cache_server's default --store-board-table
# auto_explain is loaded, off (its log_min_duration defaults to -1; set it here and ALTER SYSTEM
# could not override it); mode 0's plan probe turns it on for three requests. random_page_cost
# 1.1, as a PostgreSQL expert sets it when the data is in memory or on SSD (the default 4 prices
# an index page as a disk seek: at 20,000 members PostgreSQL then read a page mid-board with a
# sequential scan and a sort of the whole board, 17.7 ms, instead of the index).
PG_SETTINGS = {"shared_preload_libraries": "auto_explain", "random_page_cost": "1.1"}
PLAN_PROBES = [("top page (top 100)", "/board/b0/top?n=100"),
               ("a page mid-board (ranks N/2+1..N/2+100)", "/board/b0/top?n=100&offset={mid}"),
               ("a member's rank", "/board/b0/member/m{mid}")]
# Published (issue 15).
PUBLISHED_PG = [
    ("mode 2, update-only, peak", "8,878 req/s, I/O 72% busy"),
    ("mode 3, mixed, peak", "11,294 req/s, CPU 100%"),
    ("top-N read latency", "10–50 µs cached, 1–3 ms from the database"),
]
PUBLISHED_REDIS_MONGO = {"update-only": ("insert", 580, 681), "leaderboard-only": ("top-100", 206, 253),
                         "mixed": ("combined", 509, 613)}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m scripts.studies.leaderboard",
                                description=__doc__.split("\n\n")[0])
    c.add_common_args(p)
    p.add_argument("--levels", help=f"connections per point (quick {QUICK_LEVELS}, full {FULL_LEVELS})")
    p.add_argument("--members", type=int, help=f"players (quick {QUICK_MEMBERS}, full {FULL_MEMBERS})")
    p.add_argument("--modes", default="0,1,2,3", help="modes to run (default 0,1,2,3)")
    return p.parse_args(argv)


def server_flags(mode: int, conninfo: str | None) -> list[str]:
    flags = ["-t", "1", "-p", "0", "--write-mode", "through"]
    for f in MODES[mode][1]:
        flags.append(f"postgres:{conninfo}" if f == "postgres" else f)
    if conninfo:  # the preload resets first: with a store that needs a token or --allow-reset
        flags += ["--store-connections", "4", "--allow-reset"]
    return flags


def run_mode(mode: int, args, server_bin, client_bin, levels, members, duration, warmup,
             precision, slo_duration) -> dict:
    out = args.out
    uses_pg = mode != 1
    board = ["--boards", "1", "--members", str(members), "--score-max", str(SCORE_MAX),
             "--timeout", "20s"]
    ctx = (c.pg_cluster(args.server_cpu, settings=PG_SETTINGS) if uses_pg
           else contextlib.nullcontext())
    result = {}
    with ctx as pg:
        conninfo = pg.conninfo if pg else None
        with c.Server([str(server_bin)] + server_flags(mode, conninfo), cpu=args.server_cpu,
                      name=f"cache_server-mode{mode}", log_dir=out) as srv:
            # One preload per mode (every member once); the points then keep the data.
            c.log(STUDY, f"mode {mode}: preload {members} players")
            c.run_bench(client_bin, ["-p", str(srv.port), "--workload", "board-score", "--threads",
                                     "1", "-n", "1", "--warmup", "0"] + board,
                        out / "raw" / f"mode{mode}-preload.json", cpu=args.client_cpu,
                        timeout_s=900)
            db_pid = pg.postmaster_pid if pg else None
            disk = Path(pg.dir) if pg else None
            for wl, wl_args in WORKLOADS.items():
                if pg:  # what autovacuum does within a minute of a load; a point lasts seconds
                    c.psql(pg.conninfo, f"VACUUM (ANALYZE) {BOARD_TABLE}")
                points = []
                for conns in levels:
                    c.log(STUDY, f"mode {mode} {wl} {conns} connections")
                    pt = c.measure_point(client_bin, ["-p", str(srv.port), "--no-preload",
                                                      "--threads", "1", "--connections-per-thread",
                                                      str(conns), "-d", duration, "--warmup",
                                                      warmup] + wl_args + board,
                                         out / "raw" / f"mode{mode}-{wl}-{conns}.json",
                                         args.client_cpu, [srv.pid], db_pid, disk)
                    srv.drain()
                    points.append({"connections": conns, **pt})
                sat = c.saturation(points)
                spec = args.slo or DEFAULT_SLO
                c.log(STUDY, f"mode {mode} {wl}: capacity at {spec}")
                slo_doc = c.run_bench(client_bin, ["-p", str(srv.port), "--no-preload", "--threads",
                                                   "1", "--connections-per-thread",
                                                   str(sat["connections"]), "-d", slo_duration,
                                                   "--warmup", warmup, "--slo", spec,
                                                   "--slo-precision", str(precision)] + wl_args +
                                      board, out / "raw" / f"mode{mode}-{wl}-slo.json",
                                      cpu=args.client_cpu, timeout_s=900)
                srv.drain()
                result[wl] = {"points": points, "saturation": sat, "slo": c.slo_figures(slo_doc)}
            if mode == 0:
                c.psql(pg.conninfo, f"VACUUM (ANALYZE) {BOARD_TABLE}")
                result["plans"] = plan_probe(pg, srv.port, members)
                srv.drain()
    return result


def plan_probe(pg, port: int, members: int) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of mode 0's own statements as PostgreSQL ran them: auto_explain
    (loaded, off) is turned on, PLAN_PROBES are sent to the server, it is turned off again, and
    each logged plan of a statement on the board table is returned by probe name."""
    log = Path(pg.log)
    start = log.stat().st_size
    settings = {"log_min_duration": "0", "log_analyze": "on", "log_buffers": "on"}
    for name, value in settings.items():
        c.psql(pg.conninfo, f"ALTER SYSTEM SET auto_explain.{name} = {value}")
    c.psql(pg.conninfo, "SELECT pg_reload_conf()")
    time.sleep(1.0)  # each backend applies the reload before its next statement
    status = {}
    for name, path in PLAN_PROBES:
        url = f"http://127.0.0.1:{port}" + path.format(mid=members // 2)
        with urllib.request.urlopen(url, timeout=30) as r:
            status[name] = r.status
    for name in settings:
        c.psql(pg.conninfo, f"ALTER SYSTEM RESET auto_explain.{name}")
    c.psql(pg.conninfo, "SELECT pg_reload_conf()")
    time.sleep(0.5)
    with log.open() as f:
        f.seek(start)
        text = f.read()
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", text)  # each log entry starts with its time
    plans = [p for p in entries if "LOG:  duration: " in p and BOARD_TABLE in p]
    return {name: {"status": status[name], "plan": plans[i].strip() if i < len(plans) else None}
            for i, (name, _) in enumerate(PLAN_PROBES)}


def plan_facts(plan: str | None) -> str:
    """One line of what a logged plan shows: the scans, heap fetches, buffers, the time."""
    if not plan:
        return "no plan logged"
    scans = sorted(set(re.findall(r"(Index Only Scan|Index Scan|Seq Scan|Bitmap Heap Scan)"
                                  r"(?: Backward)? using (\S+)", plan)))
    seq = "Seq Scan" in plan
    fetches = sum(int(x) for x in re.findall(r"Heap Fetches: (\d+)", plan))
    hits = re.search(r"Buffers: shared hit=(\d+)", plan)
    ms = re.search(r"duration: ([0-9.]+) ms", plan)
    aggs = len(re.findall(r"Aggregate", plan))
    return ("; ".join(f"{k} using {i}" for k, i in scans) + (", a Seq Scan" if seq else "") +
            f"; heap fetches {fetches}; {aggs} Aggregate node(s); shared buffers hit "
            f"{hits.group(1) if hits else '–'}; {ms.group(1) if ms else '–'} ms")


def mode_label(mode: int) -> str:
    """A mode as the figure's legend names it: "database only (mode 0)"."""
    return f"{MODES[mode][0]} (mode {mode})"


def figure_lines(results: dict) -> dict[str, list[tuple[str, list, list]]]:
    """What the figure draws: per workload, one (legend label, connections, req/s) per mode."""
    return {wl: [(mode_label(mode), [p["connections"] for p in r[wl]["points"]],
                  [p["throughput_rps"] for p in r[wl]["points"]]) for mode, r in results.items()]
            for wl in WORKLOADS}


def figure(out: Path, results: dict) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(13, 3.4), sharey=True)
    lines = figure_lines(results)
    for ax, wl in zip(axes, WORKLOADS):
        for label, xs, ys in lines[wl]:
            ax.plot(xs, ys, "o-", label=label)
        ax.set_title(wl)
        ax.set_xlabel("connections")
        ax.set_xscale("log", base=2)
        levels = sorted({x for _, xs, _ in lines[wl] for x in xs})
        ax.set_xticks(levels)
        ax.set_xticklabels([str(x) for x in levels])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("req/s")
    axes[0].set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize="small")
    fig.tight_layout(rect=(0, 0.08, 1, 1))  # room for the legend below the panels
    fig.savefig(out / "leaderboard.png", dpi=100)
    plt.close(fig)
    return "leaderboard.png"


def peak(r: dict) -> dict:
    return max(r["points"], key=lambda p: p["throughput_rps"])


def render(results, levels, members, duration, slo_duration, args, fig_name):
    L = ["## Study: leaderboard — leaderboard services, database only to fully cached", ""]
    L.append("The published PostgreSQL-backed service's four modes, as cache_server "
             "configurations (write-through; PostgreSQL is a throwaway cluster pinned with the "
             f"server to CPU {args.server_cpu}; bench_client on CPU {args.client_cpu}):")
    L.append("")
    L.append(c.md_table(["mode", "meaning", "cache_server flags"],
                        [[m, MODES[m][0], "`" + " ".join(MODES[m][1]) + "`"] for m in results]))
    L.append(f"Workloads over one board of {members:,} players with scores in [0, {SCORE_MAX:,}) "
             "(`--score-max`): update-only (`board-update`), leaderboard-only (`board-top`, top "
             "100), mixed (`board-mixed`, 90 reads : 10 updates), single-score reads "
             f"(`board-score`); levels {', '.join(map(str, levels))} connections (one client "
             f"thread), {duration} s per point, preloaded once per mode.")
    L.append("")
    L.append("### Published beside ours")
    L.append("")
    rows = []
    m2 = results.get(2, {}).get("update-only")
    m3 = results.get(3, {}).get("mixed")
    if m2:
        p = peak(m2)
        rows.append([PUBLISHED_PG[0][0], PUBLISHED_PG[0][1],
                     f"{c.fnum(p['throughput_rps'])} req/s, disk {c.fnum(p['disk_util_pct'])}% busy"])
    if m3:
        p = peak(m3)
        rows.append([PUBLISHED_PG[1][0], PUBLISHED_PG[1][1],
                     f"{c.fnum(p['throughput_rps'])} req/s, server CPU {c.fnum(p['server_cpu_pct'])}%"])
    if 3 in results and 0 in results:
        lo3 = results[3]["leaderboard-only"]["points"][0]
        lo0 = results[0]["leaderboard-only"]["points"][0]
        rows.append([PUBLISHED_PG[2][0], PUBLISHED_PG[2][1],
                     f"mean {c.fnum(lo3['mean_us'])} µs cached (mode 3); from the database (mode "
                     f"0) mean {c.fnum(lo0['mean_us'] / 1000, 2)} ms, p99 "
                     f"{c.fnum(lo0['p99_us'] / 1000, 2)} ms; at {lo3['connections']} connections"])
    L.append(c.md_table(["PostgreSQL-backed service", "published", "ours"], rows))
    if results.get(0, {}).get("plans"):
        L += sql_section(results[0]["plans"], members)
    if 3 in results:
        rows = []
        for wl, (test, lo, hi) in PUBLISHED_REDIS_MONGO.items():
            p = peak(results[3][wl])
            rows.append([test, f"{lo}–{hi}", wl, c.fnum(p["throughput_rps"]),
                         p["connections"]])
        L.append("The Redis+MongoDB service (2 vCPUs) beside ours in mode 3 (peak over the levels):")
        L.append("")
        L.append(c.md_table(["test", "published req/s", "our workload", "ours req/s",
                             "at connections"], rows))
    L.append(f"![leaderboard throughput](leaderboard/{fig_name})")
    L.append("")
    L.append("### Every configuration: saturation, capacity at the SLO, bottleneck")
    L.append("")
    L.append("Saturation: the first level reaching 95% of the peak. Capacity: bench_client --slo "
             f"at the saturation level, {slo_duration} s per step (invalid points never count). "
             "Verdict: the resources at "
             f"≥ {c.BOUND_PCT:.0f}% at the saturation point (docs/studies.md).")
    L.append("")
    rows = []
    summary = {"configurations": {}}
    for mode, r in results.items():
        for wl in WORKLOADS:
            s, slo = r[wl]["saturation"], r[wl]["slo"]
            name = f"mode {mode} {wl}"
            rows.append([name, s["connections"], c.fnum(s["throughput_rps"]),
                         c.fnum(s["mean_us"], 1), c.fnum(s["p99_us"], 1), slo["spec"],
                         c.fnum(slo["capacity_rps"]), c.fnum(s["server_cpu_pct"], 1),
                         c.fnum(s["db_cpu_pct"], 1), c.fnum(s["client_cpu_pct"], 1),
                         c.fnum(s["disk_util_pct"], 1),
                         c.bottleneck_cell(s["verdict"], s["measured_client"])])
            summary["configurations"][name] = r[wl]
    L.append(c.md_table(["configuration", "saturation (conns)", "req/s", "mean µs", "p99 µs", "SLO",
                         "capacity at SLO req/s", "server CPU %", "PostgreSQL CPU %",
                         "client CPU %", "disk %util", "bottleneck"], rows))
    return "\n".join(L) + "\n", summary


def sql_section(plans: dict, members: int) -> list[str]:
    """Mode 0's statements and the plans PostgreSQL ran them with (plan_probe)."""
    L = ["### Mode 0's SQL and its plans", "",
         "Mode 0 answers each read with one prepared statement (store/postgres_boards.cc). A top "
         "page: `SELECT member, score FROM leaderboard WHERE board = $1 ORDER BY score DESC, seq "
         "LIMIT $n OFFSET $k`, an index-only scan of `leaderboard_rank (board, score DESC, seq) "
         "INCLUDE (member)`, plus one probe of that index for the board's existence; no "
         "`count(*)` of the board per page (the page's `members` total is the board's count in "
         "the server's memory, which every mode keeps). A rank: 1 + `count(*) WHERE score > s` + "
         "`count(*) WHERE score = s AND seq < q`, two counts of index ranges, index-only. Before "
         "each workload the board table gets `VACUUM (ANALYZE)`, as autovacuum would within a "
         "minute of a load: the visibility map then spares the index-only scans the heap (rows "
         "updated since are fetched from the heap, and counted below). The cluster runs with "
         "`random_page_cost = 1.1` (data in memory). `OFFSET k` still reads the k entries it "
         "skips: a page mid-board costs more than the top page. The plans PostgreSQL ran "
         f"for three reads after the workloads ({members:,} members; auto_explain with ANALYZE "
         "and BUFFERS):", ""]
    L.append(c.md_table(["read", "HTTP status", "what the plan shows"],
                        [[name, p["status"], plan_facts(p["plan"])] for name, p in plans.items()]))
    L.append("<details><summary>the plans as logged</summary>")
    L.append("")
    L.append("```")
    for name, p in plans.items():
        L += [f"-- {name}", p["plan"] or "(not logged)", ""]
    L.append("```")
    L.append("</details>")
    L.append("")
    return L


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    levels = c.int_list(args.levels, QUICK_LEVELS, FULL_LEVELS, args.full)
    members = args.members or (FULL_MEMBERS if args.full else QUICK_MEMBERS)
    duration = args.duration or ("5" if args.full else "1")
    # The capacity search's steps: 0.5 s in the quick form, as the threadpool study's.
    slo_duration = args.duration or ("5" if args.full else "0.5")
    warmup = "1s" if args.full else "0.3s"
    precision = args.slo_precision or (0.02 if args.full else 0.1)
    modes = [int(m) for m in args.modes.split(",")]
    try:
        server_bin, client_bin = c.binaries(args.build)
        results = {m: run_mode(m, args, server_bin, client_bin, levels, members, duration, warmup,
                               precision, slo_duration) for m in modes}
    except c.StudyError as e:
        print(f"leaderboard.py: {e}", file=sys.stderr)
        return 1
    fig_name = figure(args.out, results)
    text, summary = render(results, levels, members, duration, slo_duration, args, fig_name)
    if results.get(0, {}).get("plans"):
        summary["mode0_plans"] = results[0]["plans"]
    summary.update({"study": STUDY, "levels": levels, "members": members,
                    "duration_s": float(duration), "slo_duration_s": float(slo_duration),
                    "modes": modes, "figures": [fig_name]})
    c.write_section(args.out, text, summary)
    c.log(STUDY, f"wrote {args.out / 'section.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
