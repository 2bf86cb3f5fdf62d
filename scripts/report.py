#!/usr/bin/env python3
"""Writes REPORT.md for one experiment directory (results/<stamp>/).

usage: python scripts/report.py RESULTS_DIR

Reads the bench_client JSON files (one per server configuration), run.json (written by
scripts/experiment.py: machine, pinning, git revision, server flags) and, when present,
MICROBENCH.md and peers.json. Embeds the figures graphs/plot.py wrote into the same directory.
Every number in the report is copied (or reduced by median) from those files; nothing is
measured here.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "graphs"))
from results import (SATURATION_RULE, ResultError, Series, find_result_files,  # noqa: E402
                     load_series)

FIGURES = (("throughput_vs_threads", "Throughput against client threads"),
           ("p95_vs_threads", "p95 latency against client threads"),
           ("throughput_vs_p95", "Throughput against p95 latency"),
           ("latency_spectrum", "Latency percentiles at each saturation point"),
           ("cpu_vs_threads", "Server and client CPU against client threads"))
# A side is called saturated when its CPU is at least this share of the cores it may use.
SATURATED_SHARE = 0.9


def fmt(value, digits=0):
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def with_spread(p, name: str) -> str:
    """The median, plus the min–max range over repetitions when there were several."""
    if p.repetitions < 2 or p.low.get(name) is None:
        return fmt(p.get(name))
    return f"{fmt(p.get(name))} ({fmt(p.low[name])}–{fmt(p.high[name])})"


def point_row(p) -> str:
    hit = p.get("hit_rate")
    return (f"| {p.threads} | {with_spread(p, 'throughput_rps')} | {fmt(p.get('p50_us'))} | "
            f"{with_spread(p, 'p95_us')} | {fmt(p.get('p99_us'))} | {fmt(p.get('p999_us'))} | "
            f"{fmt(p.get('max_us'))} | {fmt(hit * 100 if hit is not None else None, 1)} | "
            f"{fmt(p.get('errors'))} | {fmt(p.get('server_cpu_pct'))} | {fmt(p.get('client_cpu_pct'))} | "
            f"{', '.join(p.notes)} |")


TABLE_HEAD = ("| client threads | req/s | p50 µs | p95 µs | p99 µs | p99.9 µs | max µs | hit % | "
              "errors | server CPU % | client CPU % | notes |\n"
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")


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
    usage = f"server CPU {fmt(srv)}% of {(server_cores or 0) * 100}%, client CPU {fmt(cli)}% of {(client_cores or 0) * 100}%"
    if server_full and client_full:
        return (f"**both sides saturated** ({usage}): the machine is the limit; the server's own "
                "ceiling is at least this high and needs a faster client or more cores to find")
    if server_full:
        return f"**CPU-bound server** ({usage})"
    if client_full:
        return f"**the client, not the server, is the limit** ({usage})"
    return (f"neither side's CPU is saturated ({usage}): the limit is latency "
            "(round trips, wake-ups), not CPU")


def render(out_dir: Path, series: list[Series], run: dict) -> str:
    lines = ["# Load-test report", ""]
    lines += [f"Run `{out_dir.name}`, {run.get('date', 'date unknown')}. "
              f"Command: `{run.get('command', '?')}`.", ""]
    lines += ["## Machine and software", "",
              f"- CPU: {run.get('cpu', '?')}, {run.get('cores', '?')} cores; kernel {run.get('kernel', '?')}",
              f"- Pinning: server on CPU {run.get('server_cpus', '–')}, client on CPU {run.get('client_cpus', '–')} (taskset)",
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
    lines += [f"- Repetitions per point: {reps}" + (" (tables show each column's median; req/s and p95 also "
              "the min–max range over repetitions)" if reps and reps > 1 else ""), ""]

    lines += ["## Saturation and bottleneck", "",
              f"Saturation point = {SATURATION_RULE}.", "",
              "| configuration | server flags | saturation (client threads) | req/s | p95 µs | bottleneck at saturation |",
              "|---|---|---:|---:|---:|---|"]
    for s in series:
        sat = s.saturation()
        flags = s.meta.get("server_flags", "–")
        lines.append(f"| {s.label} | `{flags}` | {sat.threads} | {fmt(sat.get('throughput_rps'))} | "
                     f"{fmt(sat.get('p95_us'))} | {bottleneck(s, run)} |")
    lines.append("")

    for s in series:
        lines += [f"## {s.label}", ""]
        if s.meta.get("server_flags"):
            lines += [f"Server: `{s.meta['server_flags']}`", ""]
        lines += [TABLE_HEAD] + [point_row(p) for p in s.points] + [""]

    peers = out_dir / "peers.json"
    if peers.exists():
        lines += render_peers(json.loads(peers.read_text()))

    lines += ["## Figures", ""]
    for name, title in FIGURES:
        if (out_dir / f"{name}.png").exists():
            lines += [f"### {title}", "", f"![{title}]({name}.png)", ""]
    micro = out_dir / "MICROBENCH.md"
    if micro.exists():  # embedded one heading level down
        body = micro.read_text().split("\n", 1)[1] if micro.read_text().startswith("# ") else micro.read_text()
        lines += ["## Cache micro-benchmarks (optimizations/)", ""]
        lines += [("#" + l if l.startswith("#") else l) for l in body.splitlines()] + [""]
    return "\n".join(lines)


def render_peers(peers: dict) -> list[str]:
    lines = ["## Side by side with a peer (same run, same pinning)", "",
             peers.get("description", ""), "",
             "| connections | " + " | ".join(f"{name} req/s" for name in peers["servers"]) + " | ratio |",
             "|---:|" + "---:|" * (len(peers["servers"]) + 1)]
    for row in peers["rows"]:
        vals = [row.get(name) for name in peers["servers"]]
        ratio = (vals[0] / vals[1]) if len(vals) == 2 and vals[0] and vals[1] else None
        lines.append(f"| {row['connections']} | " + " | ".join(fmt(v) for v in vals) +
                     f" | {fmt(ratio, 2)}{'x' if ratio else ''} |")
    return lines + [""]


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(argv) != 1 else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    out_dir = Path(argv[0])
    try:
        files, _ = find_result_files([str(out_dir)], out_dir)
        series = [load_series(f) for f in files]
    except ResultError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    run_file = out_dir / "run.json"
    run = json.loads(run_file.read_text()) if run_file.exists() else {}
    order = run.get("order") or []
    series.sort(key=lambda s: order.index(s.path.name) if s.path.name in order else len(order))
    report = out_dir / "REPORT.md"
    report.write_text(render(out_dir, series, run))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
