#!/usr/bin/env python3
"""Figures from bench_client result JSON: throughput and tail latency against load.

usage: python graphs/plot.py [RESULTS_DIR | RESULT.json ...]

With no argument it plots results/latest (the newest experiment). Each result file is one
server configuration and becomes one line in every figure. It writes, next to the results:
  throughput_vs_threads   req/s against client threads (error bars: min..max over the rounds
                          or repetitions)
  p95_vs_threads          p95 latency against client threads (likewise)
  throughput_vs_p95       the "hockey stick": throughput against p95
  latency_spectrum        p50..p99.9 at each configuration's saturation point (log scale)
  cpu_vs_threads          server CPU % (solid) and client CPU % (dashed) against client threads
  nginx_vs_connections    only when nginx.json (scripts/compare_nginx.py --json) is there: req/s
                          of cache_server and nginx against wrk connections, one line per server
                          and pipeline depth (depth 1 solid, deeper dashed); the median over
                          rounds, error bars min..max of the rounds
  miss_ratio_curves       only when miss_ratio_curves.json (traces/crosscheck.py --curves --json)
                          is there: hit ratio against cache size per evictor, ours solid and
                          libCacheSim's dashed (graphs/mrc.py)
each as PNG and SVG, and prints their paths. Pipelined configurations (bench_client --pipeline N,
label "-P N") are drawn with square markers and a dash-dot line; the three latency figures
leave them out (their latency is per request with N outstanding: not comparable) unless every
configuration is pipelined. Exits 1 with a one-line message on bad input.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mrc  # noqa: E402
from results import (PERCENTILE_FIELDS, SATURATION_RULE, NginxComparison,  # noqa: E402
                     ResultError, Series, find_result_files, load_nginx_in, load_series)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = REPO_ROOT / "results" / "latest"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    return plt


def _thread_axis(ax, series: list[Series]):
    threads = sorted({p.threads for s in series for p in s.points})
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads)
    ax.set_xticklabels([str(t) for t in threads])
    ax.set_xlabel("client threads")


def _style(s: Series) -> dict:
    """Pipelined series look different in every figure: square markers, dash-dot line."""
    return {"marker": "s", "linestyle": "-."} if s.pipelined else {"marker": "o"}


def _latency_series(series: list[Series]) -> tuple[list[Series], str]:
    """The series the latency figures compare, and a title suffix saying which."""
    depth1 = [s for s in series if not s.pipelined]
    if depth1 and len(depth1) < len(series):
        return depth1, " (pipeline depth 1)"
    return series, ""


def _errorbar(ax, s: Series, field: str, scale: float = 1.0, **kw):
    kw = {**_style(s), **kw}
    xs = [p.threads for p in s.points if p.get(field) is not None]
    pts = [p for p in s.points if p.get(field) is not None]
    if not pts:
        return False
    ys = [p.get(field) * scale for p in pts]
    if any(p.repetitions > 1 for p in pts):
        lo = [(p.get(field) - p.low[field]) * scale for p in pts]
        hi = [(p.high[field] - p.get(field)) * scale for p in pts]
        ax.errorbar(xs, ys, yerr=[lo, hi], capsize=3, label=s.label, **kw)
    else:
        ax.plot(xs, ys, label=s.label, **kw)
    return True


def _finish(plt, fig, ax, title: str, out_dir: Path, name: str) -> list[Path]:
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    fig.tight_layout()
    return mrc.save_figure(plt, fig, out_dir, name)


def plot_all(series: list[Series], out_dir: Path) -> list[Path]:
    plt = _pyplot()
    written: list[Path] = []

    lat_series, lat_note = _latency_series(series)
    # One line per configuration against client threads, with repetition error bars.
    for field, scale, ylabel, title, name, which in (
            ("throughput_rps", 1e-3, "throughput (thousand requests/s)", "Throughput vs client threads",
             "throughput_vs_threads", series),
            ("p95_us", 1.0, "p95 latency (µs)", "p95 latency vs client threads" + lat_note, "p95_vs_threads",
             lat_series)):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for s in which:
            _errorbar(ax, s, field, scale)
        _thread_axis(ax, which)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        written += _finish(plt, fig, ax, title, out_dir, name)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in lat_series:
        ax.plot([p.get("throughput_rps") * 1e-3 for p in s.points], [p.get("p95_us") for p in s.points],
                label=s.label, **_style(s))
        for p in s.points:
            ax.annotate(str(p.threads), (p.get("throughput_rps") * 1e-3, p.get("p95_us")),
                        textcoords="offset points", xytext=(4, 4), fontsize="x-small")
    ax.set_xlabel("throughput (thousand requests/s)")
    ax.set_ylabel("p95 latency (µs)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    written += _finish(plt, fig, ax, "Throughput vs p95 latency (labels: client threads)" + lat_note,
                       out_dir, "throughput_vs_p95")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in lat_series:
        sat = s.saturation()
        pairs = [(name, sat.get(f)) for name, f in PERCENTILE_FIELDS if sat.get(f) is not None]
        xs = [-math.log10(1 - float(name[1:]) / 100) for name, _ in pairs]
        ax.plot(xs, [v for _, v in pairs], label=f"{s.label} @ {sat.threads} threads", **_style(s))
    names = [name for name, _ in PERCENTILE_FIELDS]
    ax.set_xticks([-math.log10(1 - float(n[1:]) / 100) for n in names])
    ax.set_xticklabels(names)
    ax.set_yscale("log")
    from matplotlib.ticker import LogLocator, ScalarFormatter
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.yaxis.get_minor_formatter().set_scientific(False)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (µs, log scale)")
    written += _finish(plt, fig, ax, "Latency percentiles at each saturation point" + lat_note, out_dir,
                       "latency_spectrum")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in series:
        line = None
        if _errorbar(ax, s, "server_cpu_pct", linestyle="-"):
            line = ax.get_lines()[-1]
        color = line.get_color() if line is not None else None
        pts = [p for p in s.points if p.get("client_cpu_pct") is not None]
        if pts:
            ax.plot([p.threads for p in pts], [p.get("client_cpu_pct") for p in pts], linestyle="--",
                    marker="+" if s.pipelined else "x", color=color, label=f"{s.label} (client)")
    _thread_axis(ax, series)
    ax.set_ylabel("CPU % (100 = one core)")
    ax.set_ylim(bottom=0)
    written += _finish(plt, fig, ax, "Server CPU (solid) and client CPU (dashed)", out_dir,
                       "cpu_vs_threads")
    return written


def plot_nginx(cmp: NginxComparison, out_dir: Path) -> list[Path]:
    """req/s against wrk connections: one line per server and pipeline depth."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = {"cache_server": "tab:blue", "nginx": "tab:orange"}
    conns = sorted({r.connections for d in cmp.depths for r in d.rows})
    for d in cmp.depths:
        for server, color in colors.items():
            rows = [r for r in d.rows if r.rps(server) is not None]
            if rows:
                xs, ys = [r.connections for r in rows], [r.rps(server) * 1e-3 for r in rows]
                lo, hi = [], []
                for r, y in zip(rows, ys):
                    m = r.by_server[server]
                    lo.append(y - (m.get("rps_min") or m["rps"]) * 1e-3)
                    hi.append((m.get("rps_max") or m["rps"]) * 1e-3 - y)
                ax.errorbar(xs, ys, yerr=[lo, hi], capsize=3, color=color,
                            linestyle="-" if d.pipeline == 1 else "--",
                            marker="o" if d.pipeline == 1 else "s",
                            label=f"{server}, pipeline depth {d.pipeline}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(conns)
    ax.set_xticklabels([str(c) for c in conns])
    ax.set_xlabel("wrk connections (1 wrk thread)")
    ax.set_ylabel("throughput (thousand requests/s)")
    ax.set_ylim(bottom=0)
    return _finish(plt, fig, ax, "cache_server vs nginx, same 100-byte GET (wrk)", out_dir,
                   "nginx_vs_connections")


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    try:
        files, out_dir = find_result_files(argv, DEFAULT_RESULTS)
        series = [load_series(f) for f in files]
    except ResultError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    try:
        nginx = load_nginx_in(out_dir)
    except ResultError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    paths = plot_all(series, out_dir) + (plot_nginx(nginx, out_dir) if nginx else [])
    try:
        paths += mrc.plot_in(out_dir)
    except mrc.CurveError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    for s in series:
        sat = s.saturation()
        print(f"saturation {s.label}: {sat.threads} threads, {sat.get('throughput_rps'):.0f} req/s, "
              f"p95 {sat.get('p95_us'):.0f} µs", file=sys.stderr)
    print(f"(saturation = {SATURATION_RULE})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
