#!/usr/bin/env python3
"""Writes REPORT.md for one experiment directory (results/<stamp>/).

usage: python3 -m scripts.report RESULTS_DIR

Reads the bench_client JSON files (one per server configuration), run.json (written by
scripts/experiment.py: machine, pinning, git revision, server flags) and, when present,
nginx.json (scripts/compare_nginx.py --json), MICROBENCH.md, profile/PROFILE.md
(scripts/profile_server.py), peers.json and miss_ratio_curves.json (traces/crosscheck.py
--curves: hit ratio against cache size, ours beside libCacheSim). Embeds the figures
graphs/plot.py wrote into the same directory.
Every number in the report is copied (or reduced by median) from those files; nothing is
measured here. The headline (headline_entries(), also run.json's "headline") is the median of
per-round ratios with a 95% interval and the one verdict rule of scripts/harness/rounds.py:
met, missed, or within noise (docs/studies.md, "Headlines").
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from graphs import mrc
from graphs.results import (SATURATION_RULE, NginxComparison, ResultError, Series,
                            find_result_files, load_nginx_in, load_series, usable)
from scripts.harness import rounds
from scripts.harness.tables import NONE, fnum, fratio, row, table_head

FIGURES = (("throughput_vs_threads", "Throughput against client threads"),
           ("p95_vs_threads", "p95 latency against client threads"),
           ("throughput_vs_p95", "Throughput against p95 latency"),
           ("latency_spectrum", "Latency percentiles at each saturation point"),
           ("cpu_vs_threads", "Server and client CPU against client threads"))
# A side is called saturated when its CPU is at least this share of the cores it may use.
SATURATED_SHARE = 0.9
# Issue 6: the optimized cache_server's peak against nginx's on the same work (depth 1).
NGINX_TARGET = 1.0
NGINX_STRETCH = 1.3
NGINX_FIGURE = ("nginx_vs_connections", "cache_server and nginx: req/s against wrk connections")
# The optimizations' target: the optimized variant at least as fast as the baseline.
OPTIMIZED_TARGET = 1.0


def with_spread(p, name: str) -> str:
    """The median, plus the min–max range over repetitions when there were several."""
    if p.repetitions < 2 or p.low.get(name) is None:
        return fnum(p.get(name))
    return f"{fnum(p.get(name))} ({fnum(p.low[name])}–{fnum(p.high[name])})"


def point_row(p) -> str:
    hit = p.get("hit_rate")
    return row([p.threads, with_spread(p, "throughput_rps"), fnum(p.get("p50_us")),
                with_spread(p, "p95_us"), with_spread(p, "p99_us"), fnum(p.get("p999_us")),
                fnum(p.get("max_us")), fnum(hit * 100 if hit is not None else None, 1),
                fnum(p.get("errors")), fnum(p.get("server_cpu_pct")),
                fnum(p.get("client_cpu_pct")), ", ".join(p.notes)])


TABLE_HEAD = "\n".join(table_head(
    ["client threads", "req/s", "p50 µs", "p95 µs", "p99 µs", "p99.9 µs", "max µs", "hit %",
     "errors", "server CPU %", "client CPU %", "notes"], "rrrrrrrrrrrl"))


def cpu_count(spec: str | None) -> int | None:
    """Number of CPUs in a taskset list such as '0', '1', '0-1' or '0,2'."""
    if not spec:
        return None
    n = 0
    for part in str(spec).split(","):
        lo, _, hi = part.partition("-")
        n += (int(hi) - int(lo) + 1) if hi else 1
    return n


def bottleneck(s: Series, run: dict) -> str:
    sat = s.saturation()
    server_cores = cpu_count(s.meta.get("server_cpus") or run.get("server_cpus"))
    client_cores = cpu_count(s.meta.get("client_cpus") or run.get("client_cpus"))
    srv, cli = sat.get("server_cpu_pct"), sat.get("client_cpu_pct")
    server_full = srv is not None and server_cores and srv >= SATURATED_SHARE * 100 * server_cores
    client_full = cli is not None and client_cores and cli >= SATURATED_SHARE * 100 * client_cores
    usage = f"server CPU {fnum(srv)}% of {(server_cores or 0) * 100}%, client CPU {fnum(cli)}% of {(client_cores or 0) * 100}%"
    if server_full and client_full:
        return (f"**both sides saturated** ({usage}): the machine is the limit; the server's own "
                "ceiling is at least this high and needs a faster client or more cores to find")
    if server_full:
        return f"**CPU-bound server** ({usage})"
    if client_full:
        left = 100 - srv / server_cores if srv is not None and server_cores else None
        flag = (" — **measured the client** (the server had more than 15% of its CPU left)"
                if left is not None and left > 15 else "")
        return f"**the client, not the server, is the limit** ({usage}){flag}"
    return (f"neither side's CPU is saturated ({usage}): the limit is latency "
            "(round trips, wake-ups), not CPU")


def variant_of(s: Series) -> str | None:
    """The server variant a series measured: the server's own /stats, else --variant."""
    stats = s.meta.get("server_stats")
    if isinstance(stats, dict) and stats.get("variant"):
        return str(stats["variant"])
    m = re.search(r"--variant[ =](\S+)", str(s.meta.get("server_flags") or ""))
    return m.group(1) if m else None


def verdict_cell(entry: dict | None) -> str:
    """A headline entry's verdict as the report prints it (rounds.verdict_text), in bold."""
    if entry is None:
        return "not measured"
    return f"**{rounds.verdict_text(entry['ci'], entry['target'])}**"


def one_thread_pairs(series: list[Series]) -> dict[int, dict[str, Series]]:
    """depth -> {"baseline": series, "optimized": series} of the -t 1 configurations."""
    out: dict[int, dict[str, Series]] = {}
    for s in series:
        v = variant_of(s)
        if v in ("baseline", "optimized") and \
                str(s.meta.get("server_flags", "")).split()[:2] == ["-t", "1"]:
            out.setdefault(s.pipeline, {}).setdefault(v, s)
    return {d: p for d, p in sorted(out.items()) if len(p) == 2}


def pair_ratios(pair: dict[str, Series]) -> list[float]:
    """Per round: the optimized variant's peak GET req/s ÷ the baseline's, in the same round."""
    b, o = pair["baseline"].round_peaks("get_rps"), pair["optimized"].round_peaks("get_rps")
    return [o[r] / b[r] for r in sorted(b) if r in o and b[r] > 0 and o[r] > 0]


def optimized_name(depth: int) -> str:
    return f"optimized ÷ baseline, -t 1, pipeline depth {depth}"


def nginx_name(depth: int, stretch: bool = False) -> str:
    return f"cache_server ÷ nginx, pipeline depth {depth}" + (" (stretch)" if stretch else "")


def headline_entries(series: list[Series], nginx: NginxComparison | None) -> list[dict]:
    """run.json's "headline" (scripts/experiment.py writes it) and the report's: one entry per
    headline line, rounds.headline_entry of the per-round ratios of the peaks: optimized ÷
    baseline at -t 1 per depth (target OPTIMIZED_TARGET), cache_server ÷ nginx per depth (target
    NGINX_TARGET, and the stretch NGINX_STRETCH)."""
    out = []
    for d, pair in one_thread_pairs(series).items():
        rs = pair_ratios(pair)
        if rs:
            out.append(rounds.headline_entry(optimized_name(d), rs, OPTIMIZED_TARGET))
    for dep in (nginx.depths if nginx is not None else []):
        rs = dep.round_peak_ratios()
        if rs:
            out.append(rounds.headline_entry(nginx_name(dep.pipeline), rs, NGINX_TARGET))
            out.append(rounds.headline_entry(nginx_name(dep.pipeline, True), rs, NGINX_STRETCH))
    return out


def noise_line(run: dict) -> str | None:
    """The noise meter's reading (run.json "noise"), one sentence."""
    n = run.get("noise")
    if not isinstance(n, dict) or not n.get("readings"):
        return None
    rd = n["readings"]
    vals = ", ".join(f"{r['when']} {fnum(r['rps'])} req/s (p99 {fnum(r['p99_us'])} µs, load "
                     f"average {r['loadavg']:.2f})" for r in rd)
    sp = n.get("rps_spread_pct")
    spread = (f"spread {sp:.1f}% of req/s (max − min ÷ median), {n.get('p99_us_spread_pct') or 0:.1f}% of p99"
              if sp is not None else "one reading only: no spread")
    return (f"Noise meter ({n.get('point', 'a fixed calibration point')}): {vals}; {spread}. "
            "A spread of a few percent is a quiet machine; beside a spread larger than a headline's "
            "distance from its target, read that verdict as the machine's, not the server's.")


def render_headline(series: list[Series], nginx: NginxComparison | None,
                    run: dict | None = None) -> list[str]:
    """The headline table: every headline_entries() line with its per-round ratios, interval,
    target and verdict; the method; the noise meter."""
    run = run or {}
    entries = headline_entries(series, nginx)
    if not entries:
        return []
    per_round = {optimized_name(d): pair_ratios(p) for d, p in one_thread_pairs(series).items()}
    for dep in (nginx.depths if nginx is not None else []):
        per_round[nginx_name(dep.pipeline)] = per_round[nginx_name(dep.pipeline, True)] = \
            dep.round_peak_ratios()
    lines = ["## Headline", "",
             "Each ratio: the median over interleaved rounds of the per-round ratio of the two "
             "sides' peaks (optimized ÷ baseline: peak GET req/s, `gets / duration_s`, over client "
             "thread counts, aborted points excluded; ÷ nginx: peak req/s over wrk connections), "
             "the two sides alternating which runs first from point to point and round to round. "
             "95% CI: Student's t on the logarithms of the per-round ratios (docs/studies.md, "
             "'Headlines'). Verdict: met only if the whole interval clears the target, missed "
             "only if it lies wholly below, else within noise.", "",
             "| headline | ratio | 95% CI | rounds | per-round ratios | target | verdict |",
             "|---|---:|---:|---:|---|---:|---|"]
    for e in entries:
        rs = per_round.get(e["name"], [])
        lines.append(f"| {e['name']} | {fratio(e['ratio'], '×')} | {rounds.fci(e['ci'])} | "
                     f"{e['rounds']} | {', '.join(f'{r:.3f}' for r in rs)} | ≥ {e['target']:.1f}× | "
                     f"{verdict_cell(e)} |")
    lines.append("")
    note = noise_line(run)
    if note:
        lines += [note, ""]
    return lines


def load_run_series(out_dir: Path, run: dict) -> list[Series]:
    """The run's bench_client series, in run.json's order."""
    files, _ = find_result_files([str(out_dir)], out_dir)
    series = [load_series(f) for f in files]
    order = run.get("order") or []
    series.sort(key=lambda s: order.index(s.path.name) if s.path.name in order else len(order))
    return series


def render(out_dir: Path, series: list[Series], run: dict,
           nginx: NginxComparison | None = None) -> str:
    lines = ["# Load-test report", ""]
    lines += [f"Run `{out_dir.name}`, {run.get('date', 'date unknown')}. "
              f"Command: `{run.get('command', '?')}`.", ""]
    for note in run.get("notes") or []:
        lines += [f"> Note: {note}", ""]
    lines += render_headline(series, nginx, run)
    lines += ["## Machine and software", "",
              f"- CPU: {run.get('cpu', '?')}, {run.get('cores', '?')} cores; kernel {run.get('kernel', '?')}",
              f"- Pinning: server on CPU {run.get('server_cpus', NONE)}, client on CPU {run.get('client_cpus', NONE)} (taskset)",
              f"- Git revision: {run.get('git_revision', '?')}",
              ""]
    wl = series[0].meta.get("workload") if series else None
    lines += ["## Workload", ""]
    lines += [f"- bench_client workload: `{json.dumps(wl, sort_keys=True)}`" if wl else "- (not recorded)"]
    if run.get("point_duration_s"):
        lines += [f"- Each point: warm-up {run.get('warmup', '?')}, then {run['point_duration_s']:g} s measured; "
                  f"client threads {', '.join(map(str, run.get('client_threads', [])))}"]
    if run.get("client_args"):
        lines += [f"- bench_client arguments: `{' '.join(run['client_args'])}`"]
    reps = run.get("repetitions", 1)
    if run.get("rounds"):
        heads = ", ".join(f"`{n}`" for n in run.get("headline_configurations") or []) or "none"
        lines += [f"- Headline configurations ({heads}): {run['rounds']} interleaved rounds, one "
                  f"bench_client run per point ({fnum(run.get('point_duration_s'), 1)} s each); the "
                  f"others: {reps} sweep(s), {fnum(run.get('sweep_duration_s'), 1)} s per point. Tables "
                  "show each column's median; req/s, p95 and p99 also the min–max range over rounds or repetitions"]
    else:
        lines += [f"- Repetitions per point: {reps}" + (" (tables show each column's median; req/s, "
                  "p95 and p99 also the min–max range over repetitions)" if reps and reps > 1 else "")]
    depths = sorted({s.pipeline for s in series if s.pipelined})
    if depths:
        lines += [f"- Pipelined configurations (label `-P N`): bench_client `--pipeline N` keeps up to N "
                  f"requests outstanding per connection (here N = {', '.join(map(str, depths))}). Their "
                  "latency includes the wait behind the connection's earlier requests: compare them with "
                  "each other on latency, not with the depth-1 configurations"]
    lines += [""]

    lines += ["## Saturation and bottleneck", "",
              f"Saturation point = {SATURATION_RULE}.", "",
              "| configuration | server flags | pipeline depth | saturation (client threads) | req/s | p95 µs | bottleneck at saturation |",
              "|---|---|---:|---:|---:|---:|---|"]
    for s in series:
        sat = s.saturation()
        flags = s.meta.get("server_flags", NONE)
        lines.append(f"| {s.label} | `{flags}` | {s.pipeline} | {sat.threads} | {fnum(sat.get('throughput_rps'))} | "
                     f"{fnum(sat.get('p95_us'))} | {bottleneck(s, run)} |")
    lines.append("")

    for s in series:
        lines += [f"## {s.label}", ""]
        if s.meta.get("server_flags"):
            lines += [f"Server: `{s.meta['server_flags']}`", ""]
        if s.pipelined:
            lines += [f"bench_client `--pipeline {s.pipeline}`: up to {s.pipeline} requests outstanding per "
                      "connection; latencies are not comparable with the depth-1 tables.", ""]
        lines += [TABLE_HEAD] + [point_row(p) for p in s.points] + [""]

    lines += render_nginx(out_dir, nginx, run)

    peers = out_dir / "peers.json"
    if peers.exists():
        lines += render_peers(json.loads(peers.read_text()))

    lines += ["## Figures", ""]
    for name, title in FIGURES:
        if (out_dir / f"{name}.png").exists():
            lines += [f"### {title}", "", f"![{title}]({name}.png)", ""]
    lines += render_miss_ratio(out_dir)
    lines += embed(out_dir / "profile" / "PROFILE.md",
                   "Server profile: syscalls, CPU and instructions per request")
    lines += embed(out_dir / "MICROBENCH.md", "Cache micro-benchmarks (optimizations/)")
    return "\n".join(lines)


def render_miss_ratio(out_dir: Path) -> list[str]:
    """The miss-ratio study (traces/crosscheck.py --curves): figure and table, or why not."""
    path = out_dir / mrc.FILE_NAME
    skipped = out_dir / "miss_ratio_curves.skipped"
    if not path.exists():
        if skipped.exists():
            return ["## Hit ratio against cache size (ours beside libCacheSim)", "",
                    f"Not run: {skipped.read_text().strip()}", ""]
        return []
    try:
        doc = mrc.load(path)
    except mrc.CurveError as e:
        return ["## Hit ratio against cache size (ours beside libCacheSim)", "", f"Unreadable: {e}", ""]
    meta = doc.get("meta", {})
    lines = ["## Hit ratio against cache size (ours beside libCacheSim)", "",
             f"Look-aside replay of the same traces through our cache library (`trace_replay`: one shard, "
             f"room for exactly N objects of {meta.get('value_bytes', '?')} bytes) and through libCacheSim "
             f"(N equal-size objects); every request counts. Zipf traces over {meta.get('keys', 0):,} keys, "
             f"{meta.get('zipf_requests', 0):,} Zipf requests each, seed {meta.get('seed', '?')}. "
             "No key has a TTL: expiry is not part of these replays (docs/api.md, \"Expiry\"). "
             f"Command: `{meta.get('command', 'python traces/crosscheck.py --curves')}`.", ""]
    note = mrc.libcachesim_note(doc)
    if note:
        lines += [f"> {note}", ""]
    if (out_dir / f"{mrc.FIGURE_NAME}.png").exists():
        lines += [f"![Hit ratio against cache size]({mrc.FIGURE_NAME}.png)", ""]
    lines += ["Each cell: ours · libCacheSim's hit ratio (– where that side has no such policy).", ""]
    lines += mrc.markdown_table(doc) + [""]
    checks = doc.get("checks") or []
    if checks:
        worst = max(checks, key=lambda c: abs(c["diff_pts"]) / c["tolerance_pts"])
        ok = all(c["ok"] for c in checks)
        lines += [f"Agreement (LRU, FIFO within 0.2 points; S3-FIFO within 1): "
                  f"{'all ' + str(len(checks)) + ' pairs agree' if ok else 'MISSED'}; closest to its tolerance: "
                  f"{worst['diff_pts']:+.3f} pt ({worst['ours']} on {worst['trace']} at {worst['percent']:g}%).", ""]
    return lines


def embed(path: Path, title: str) -> list[str]:
    """Another report's markdown under a heading of ours, its own headings one level down."""
    if not path.exists():
        return []
    text = path.read_text()
    body = text.split("\n", 1)[1] if text.startswith("# ") else text
    return ["## " + title, ""] + [("#" + l if l.startswith("#") else l)
                                  for l in body.splitlines()] + [""]


def nginx_cell(m: dict | None, key: str, digits: int = 0) -> str:
    if m is None:
        return NONE
    if key == "rps" and not usable(m):
        return "failed" if m.get("failed") else f"{fnum(m.get('rps'), digits)} ({m.get('errors')} errors)"
    cell = fnum(m.get(key), digits)
    if m.get("rounds", 1) > 1 and m.get(f"{key}_min") is not None:
        cell += f" ({fnum(m[key + '_min'], digits)}–{fnum(m[key + '_max'], digits)})"
    if key == "rps" and m.get("unclean_rounds"):
        cell += f", {m['unclean_rounds']} round(s) with errors left out"
    return cell


def render_nginx(out_dir: Path, nginx: NginxComparison | None, run: dict) -> list[str]:
    """'cache_server vs nginx': a table per pipeline depth, the peak ratio and the verdicts."""
    status = run.get("nginx") if isinstance(run.get("nginx"), dict) else {}
    if nginx is None:
        if status.get("note") or (status.get("status") not in (None, "ok")):
            return ["## cache_server vs nginx", "", status.get("note") or f"Not measured: {status['status']}.", ""]
        return []
    doc = nginx.doc
    cs = doc.get("cache_server") or {}
    stats = cs.get("stats") or {}
    srv = ", ".join(f"{k} {stats[k]}" for k in ("variant", "lock", "value_path", "dispatch", "threads") if k in stats)
    lines = ["## cache_server vs nginx", "",
             f"{doc.get('description', '')}; {fnum(doc.get('duration_s'))} s per point after a "
             f"{fnum(doc.get('warmup_s'))} s warm-up per server and depth (`scripts/compare_nginx.py`, "
             f"{doc.get('wrk', 'wrk')}; {doc.get('nginx', 'nginx')}).",
             f"cache_server: {srv or 'variant not reported'}"
             + (f", extra flags `{cs['extra_flags']}`" if cs.get("extra_flags") else "") + ". "
             "Pipeline depth N: wrk sends N GETs per write on each connection "
             "(`scripts/lib/wrk_pipeline.lua`). "
             "CPU %: the server process's utime+stime over the point (nginx: its one worker), "
             "100 = one core; wrk's own CPU % is in the last column. "
             "p50/p99: wrk's percentiles as wrk printed them, which wrk 'corrects' with synthetic "
             "samples and, when pipelining, records once per batch (and then often prints 0.00us for p99, "
             "an artefact of that correction): read them with care.", ""]
    if status.get("status") not in (None, "ok", "pending"):
        lines += [f"> {status['status']}", ""]
    if not nginx.complete:
        lines += ["> Incomplete: the comparison stopped early; only the points below were measured.", ""]
    for dep in nginx.depths:
        lines += [f"### Pipeline depth {dep.pipeline}", "",
                  "| connections | cache_server req/s | nginx req/s | ratio | cache_server CPU % | nginx CPU % "
                  "| cache_server p50 / p99 (wrk) | nginx p50 / p99 (wrk) | wrk CPU % (cache_server / nginx) |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in dep.rows:
            c, n = r.by_server["cache_server"], r.by_server["nginx"]

            def lat(m):
                if not m:
                    return NONE
                if m.get("rounds", 1) > 1:  # medians over rounds, in µs
                    return f"{fnum(m.get('p50_us'))}us / {nginx_cell(m, 'p99_us')}us"
                return f"{m.get('p50', NONE)} / {m.get('p99', NONE)}"

            lines.append(f"| {r.connections} | {nginx_cell(c, 'rps')} | {nginx_cell(n, 'rps')} | "
                         f"{fratio(r.ratio(), '×')} | {nginx_cell(c, 'server_cpu_pct', 1)} | "
                         f"{nginx_cell(n, 'server_cpu_pct', 1)} | {lat(c)} | {lat(n)} | "
                         f"{nginx_cell(c, 'wrk_cpu_pct', 1)} / {nginx_cell(n, 'wrk_cpu_pct', 1)} |")
        a, b = dep.peak("cache_server"), dep.peak("nginx")
        rs = dep.round_peak_ratios()
        goal = rounds.headline_entry(nginx_name(dep.pipeline), rs, NGINX_TARGET) if rs else None
        stretch = rounds.headline_entry(nginx_name(dep.pipeline, True), rs, NGINX_STRETCH) if rs else None

        def at(peak):
            return f"{fnum(peak[0])} req/s ({peak[1]} connection{'s' if peak[1] != 1 else ''})" if peak else NONE

        ratio_text = (f"**{fratio(goal['ratio'], '×')}** (95% CI {rounds.fci(goal['ci'])}, "
                      f"{goal['rounds']} round{'s' if goal['rounds'] != 1 else ''})") if goal else f"**{NONE}**"
        lines += ["",
                  f"Peak ratio at depth {dep.pipeline}: cache_server {at(a)} ÷ nginx {at(b)} (peaks of "
                  f"the per-connection medians); the median of the per-round peak ratios = {ratio_text}. "
                  f"Target ≥ {NGINX_TARGET:.1f}×: {verdict_cell(goal)}. "
                  f"Stretch ≥ {NGINX_STRETCH:.1f}×: {verdict_cell(stretch)}."
                  + (" (The issue's target is stated for plain keep-alive, depth 1.)" if dep.pipeline > 1 else ""),
                  ""]
    name, title = NGINX_FIGURE
    if (out_dir / f"{name}.png").exists():
        lines += [f"![{title}]({name}.png)", ""]
    return lines


def render_peers(peers: dict) -> list[str]:
    lines = ["## Side by side with a peer (same run, same pinning)", "",
             peers.get("description", ""), "",
             *table_head(["connections", *(f"{name} req/s" for name in peers["servers"]), "ratio"],
                         "r" * (len(peers["servers"]) + 2))]
    for point in peers["rows"]:
        vals = [point.get(name) for name in peers["servers"]]
        ratio = (vals[0] / vals[1]) if len(vals) == 2 and vals[0] and vals[1] else None
        lines.append(row([point["connections"], *(fnum(v) for v in vals),
                          f"{fnum(ratio, 2)}{'x' if ratio else ''}"]))
    return lines + [""]


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 1 else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out_dir = Path(argv[0])
    run_file = out_dir / "run.json"
    run = json.loads(run_file.read_text()) if run_file.exists() else {}
    try:
        series = load_run_series(out_dir, run)
    except ResultError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    try:
        nginx = load_nginx_in(out_dir)
    except ResultError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    report = out_dir / "REPORT.md"
    report.write_text(render(out_dir, series, run, nginx))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
