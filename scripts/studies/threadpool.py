#!/usr/bin/env python3
"""Study threadpool: server threads against concurrency, for our server or any HTTP server
(docs/studies.md).

The published study (CivetWeb, measured with ab) swept concurrency from 100 to 3,000 connections
with a fixed request count per point and compared worker pools. Here: cache_server at -t 8, 32,
64 and 128 (quick form: 8 and 64), pinned to the server CPU; bench_client on the client CPU, one
thread holding all C connections (--connections-per-thread C, one request outstanding each) and
a fixed --requests-total per point like ab -n (default 9,000), and beside it a steady-state
point (-d, after a warm-up) over the same connections. Three endpoints: a tiny GET hit
(100-byte value), a 100 KiB value GET, and a PUT (100-byte values over 10,000 keys).
`--target http://HOST:PORT/PATH[,...]` runs the same concurrency sweep against any other HTTP
server (GET of PATH, e.g. nginx), beside ours. Per configuration: the peak, the saturation point,
the capacity at the SLO (bench_client --slo at the saturation level) and the bottleneck verdict.

  python3 -m scripts.studies.threadpool --out DIR [--quick | --full] [--levels 100,1000,3000]
      [--server-threads 8,64] [--requests-total 9000] [--steady-duration 1]
      [--target http://127.0.0.1:8081/]
"""
from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path
from urllib.parse import urlsplit

from scripts.studies import common as c

STUDY = "threadpool"
QUICK_LEVELS = [100, 1000, 2000, 3000]
FULL_LEVELS = list(range(100, 3000, 250)) + [3000]
QUICK_THREADS, FULL_THREADS = [8, 64], [8, 32, 64, 128]
ENDPOINTS = {
    "tiny GET": ["--workload", "get-popular", "--hot-keys", "8", "--value-size", "100"],
    "100 KiB GET": ["--workload", "get-popular", "--hot-keys", "8", "--value-size", "102400"],
    "PUT": ["--workload", "put-all", "--keys", "10000", "--value-size", "100"],
}
DEFAULT_SLO = "p99=20ms"
PUBLISHED = [("index page (static)", "~42,000 req/s peak, pool of 8"),
             ("computed endpoint", "~19,000 req/s peak, pool of 64"),
             ("plateau", "throughput flat from ~1,500 concurrent connections")]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m scripts.studies.threadpool",
                                description=__doc__.split("\n\n")[0])
    c.add_common_args(p)
    p.add_argument("--levels", help=f"connections per point (quick {QUICK_LEVELS}, full "
                                     "100..3000 in steps of 250, and 3000)")
    p.add_argument("--server-threads", help=f"cache_server -t values (quick {QUICK_THREADS}, "
                                            f"full {FULL_THREADS})")
    p.add_argument("--requests-total", type=int, default=9000,
                   help="requests per point across all connections, like ab -n (default 9000)")
    p.add_argument("--steady-duration", default=None,
                   help="seconds of each steady-state point (bench_client -d, after a warm-up "
                        "of a third of it; quick 1, full 3)")
    p.add_argument("--target", default="",
                   help="also sweep other HTTP servers: http://HOST:PORT/PATH[,...] (GET PATH)")
    return p.parse_args(argv)


def raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = need if hard == resource.RLIM_INFINITY else min(need, hard)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if want < need:
        raise c.StudyError(f"RLIMIT_NOFILE hard limit {hard} is below the {need} descriptors "
                           "the largest level needs (raise it: ulimit -Hn)")


def sweep(name, client_bin, host, port, pids, wl_args, levels, total, args, precision,
          slo_duration, steady_duration) -> dict:
    """Per level: the seed's point (--requests-total, no warm-up, like ab -n) and a steady-state
    point (-d steady_duration after a warm-up of a third of it, same connections). The
    saturation and verdict of each method; the capacity search at the steady saturation level."""
    points, steady = [], []
    conn_args = ["-s", host, "-p", str(port), "--threads", "1", "--timeout", "30s"]
    warm = f"{float(steady_duration) / 3:.3f}s"
    for conns in levels:
        c.log(STUDY, f"{name}: {conns} connections")
        per_conn = ["--connections-per-thread", str(conns)]
        pt = c.measure_point(client_bin, conn_args + per_conn +
                             ["--requests-total", str(total), "--warmup", "0"] + wl_args,
                             args.out / "raw" / f"{slug(name)}-{conns}.json", args.client_cpu, pids)
        points.append({"connections": conns, **pt})
        st = c.measure_point(client_bin, conn_args + per_conn +
                             ["-d", steady_duration, "--warmup", warm] + wl_args,
                             args.out / "raw" / f"{slug(name)}-{conns}-steady.json",
                             args.client_cpu, pids)
        steady.append({"connections": conns, **st})
    sat, steady_sat = c.saturation(points), c.saturation(steady)
    spec = args.slo or DEFAULT_SLO
    c.log(STUDY, f"{name}: capacity at {spec}, {steady_sat['connections']} connections")
    slo_doc = c.run_bench(client_bin, ["-s", host, "-p", str(port), "--threads", "1",
                                       "--connections-per-thread", str(steady_sat["connections"]), "-d",
                                       slo_duration, "--warmup", "0.3s", "--timeout", "30s",
                                       "--slo", spec, "--slo-precision", str(precision),
                                       "--no-preload"] + wl_args,
                          args.out / "raw" / f"{slug(name)}-slo.json", cpu=args.client_cpu,
                          timeout_s=900)
    return {"points": points, "saturation": sat, "peak": max(points, key=lambda p: p["throughput_rps"]),
            "steady": {"points": steady, "saturation": steady_sat,
                       "peak": max(steady, key=lambda p: p["throughput_rps"])},
            "slo": c.slo_figures(slo_doc)}


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-").lower()


def figure(out: Path, results: dict) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    endpoints = sorted({e for r in results.values() for e in r})
    fig, axes = plt.subplots(1, len(endpoints), figsize=(4.2 * len(endpoints), 3.4), squeeze=False)
    for ax, ep in zip(axes[0], endpoints):
        for server, r in results.items():
            if ep in r:
                pts = r[ep]["points"]
                line = ax.plot([p["connections"] for p in pts], [p["throughput_rps"] for p in pts],
                               "o-", label=f"{server}, -n")[0]
                pts = r[ep]["steady"]["points"]
                ax.plot([p["connections"] for p in pts], [p["throughput_rps"] for p in pts], "s--",
                        color=line.get_color(), label=f"{server}, steady")
        ax.set_title(ep)
        ax.set_xlabel("concurrent connections")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("req/s")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "threadpool.png", dpi=100)
    plt.close(fig)
    return "threadpool.png"


def method_note(levels, total, steady_s) -> str:
    """What the two methods measure, in the report's words (the seed's -n at 3,000 connections)."""
    most = max(levels)
    return (f"Two measurements per level. **ab-like** (the seed's method, kept): `--requests-total "
            f"{total:,}` over all connections, no warm-up. At {most:,} connections that is "
            f"{total / most:g} requests per connection. bench_client opens every connection "
            "before the timed window (ab without `-k` opens one per request inside it), so no "
            "handshake is timed, but a third or more of the requests are a connection's first "
            "(the server's first read on a fresh socket) and the window, ramp-up and drain "
            "included, lasts a fraction of a second: connection setup weighs on the figure as "
            "it would not in a longer run. **Steady state**: the same connections, "
            f"`-d {steady_s:g}` after a warm-up of a third of it ({steady_s / 3:.2f} s, not "
            "recorded): the request path alone. The gap between the two columns is what the "
            "short window costs; what both lose from the fewest to the most connections is the "
            "cost of many sockets per wake-up, on both sides. "
            "The capacity search runs at the steady saturation level.")


def published_rows(results):
    """The "published beside ours" rows: our best tiny GET and PUT, and where each saturates."""
    ours = {k: v for k, v in results.items() if k.startswith("cache_server")}
    rows = []
    if not ours:
        return rows
    best_tiny = max(((k, r["tiny GET"]["peak"]) for k, r in ours.items() if "tiny GET" in r),
                    key=lambda kv: kv[1]["throughput_rps"], default=None)
    best_put = max(((k, r["PUT"]["peak"]) for k, r in ours.items() if "PUT" in r),
                   key=lambda kv: kv[1]["throughput_rps"], default=None)
    if best_tiny:
        rows.append([PUBLISHED[0][0], PUBLISHED[0][1],
                     f"tiny GET: {c.fnum(best_tiny[1]['throughput_rps'])} req/s peak, "
                     f"{best_tiny[0]}, {best_tiny[1]['connections']} connections"])
    if best_put:
        rows.append([PUBLISHED[1][0], PUBLISHED[1][1],
                     f"PUT: {c.fnum(best_put[1]['throughput_rps'])} req/s peak, "
                     f"{best_put[0]}, {best_put[1]['connections']} connections"])
    sats = [f"{k} {ep}: {r[ep]['saturation']['connections']}" for k, r in ours.items() for ep in r]
    rows.append([PUBLISHED[2][0], PUBLISHED[2][1],
                 "saturation (95% of peak) at " + "; ".join(sats) + " connections"])
    return rows


def render(results, levels, total, args, fig_name):
    L = ["## Study: threadpool — server threads against concurrency", ""]
    L.append(f"cache_server at -t {', '.join(str(t) for t in results_threads(results))}, pinned to "
             f"CPU {args.server_cpu}; bench_client on CPU {args.client_cpu}, one thread holding "
             f"every connection (one request outstanding each), {total:,} requests per point "
             f"(`--requests-total`, like `ab -n`), no warm-up; levels "
             f"{', '.join(map(str, levels))} connections. Endpoints: a tiny GET hit (100-byte "
             "value), a 100 KiB value GET, a PUT (100-byte values). Other servers "
             "(`--target URL`) get the same sweep of GETs of their URL.")
    L.append("")
    L.append(method_note(levels, total, args.steady_s))
    L.append("")
    L.append("### Published beside ours")
    L.append("")
    L.append(c.md_table(["", "published (CivetWeb, ab)", "ours"], published_rows(results)))
    L.append(f"![threadpool](threadpool/{fig_name})")
    L.append("")
    L.append(f"### Throughput by concurrency (req/s): ab-like `-n {total:,}` and steady state")
    L.append("")
    configs = [(s, ep) for s, r in results.items() for ep in r]
    rows = []
    for n in levels:
        row = [n]
        for s, ep in configs:
            for pts in (results[s][ep]["points"], results[s][ep]["steady"]["points"]):
                pt = next(p for p in pts if p["connections"] == n)
                row.append(c.fnum(pt["throughput_rps"]) +
                           (f" ({pt['errors']} errors)" if pt["errors"] else ""))
        rows.append(row)
    L.append(c.md_table(["connections"] + [f"{s}, {ep}, {m}" for s, ep in configs
                                           for m in (f"-n {total:,}", "steady")], rows))
    L.append("### Every configuration: saturation, capacity at the SLO, bottleneck")
    L.append("")
    L.append(f"Each method's saturation point (the first level at 95% of its peak) and its verdict "
             f"there (docs/studies.md); a client-bound row whose server had more than "
             f"{c.HEADROOM_PCT:.0f}% of its CPU left is flagged \"{c.MEASURED_CLIENT}\". The "
             "capacity at the SLO is searched at the steady saturation level.")
    L.append("")
    rows = []
    summary = {"configurations": {}}
    for s, ep in configs:
        r = results[s][ep]
        sat, slo = r["saturation"], r["slo"]
        name = f"{s}, {ep}"
        rows.append([name, c.fnum(r["peak"]["throughput_rps"]), sat["connections"],
                     c.fnum(sat["throughput_rps"]), c.fnum(sat["p99_us"] / 1000, 1), slo["spec"],
                     c.fnum(slo["capacity_rps"]), c.fnum(sat["server_cpu_pct"], 1),
                     c.fnum(sat["client_cpu_pct"], 1),
                     c.bottleneck_cell(sat["verdict"], sat["measured_client"])])
        summary["configurations"][name] = r
    L.append(c.md_table(["configuration", "peak req/s", "saturation (conns)", "req/s", "p99 ms",
                         "SLO", "capacity at SLO req/s", "server CPU %", "client CPU %",
                         "bottleneck"], rows))
    L.append("Steady state, the same configurations:")
    L.append("")
    rows = []
    for s, ep in configs:
        st = results[s][ep]["steady"]
        sat = st["saturation"]
        rows.append([f"{s}, {ep}", c.fnum(st["peak"]["throughput_rps"]), sat["connections"],
                     c.fnum(sat["throughput_rps"]), c.fnum(sat["p99_us"] / 1000, 1),
                     c.fnum(sat["server_cpu_pct"], 1), c.fnum(sat["client_cpu_pct"], 1),
                     c.bottleneck_cell(sat["verdict"], sat["measured_client"])])
    L.append(c.md_table(["configuration", "steady peak req/s", "saturation (conns)", "req/s",
                         "p99 ms", "server CPU %", "client CPU %", "bottleneck"], rows))
    return "\n".join(L) + "\n", summary


def results_threads(results):
    return [int(k.split("-t ")[1]) for k in results if k.startswith("cache_server -t ")]


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    levels = c.int_list(args.levels, QUICK_LEVELS, FULL_LEVELS, args.full)
    threads = c.int_list(args.server_threads, QUICK_THREADS, FULL_THREADS, args.full)
    precision = args.slo_precision or (0.02 if args.full else 0.1)
    slo_duration = args.duration or ("3" if args.full else "0.5")
    steady_duration = args.steady_duration or ("3" if args.full else "1")
    results: dict = {}
    try:
        raise_fd_limit(2 * max(levels) + 200)
        server_bin, client_bin = c.binaries(args.build)
        for t in threads:
            name = f"cache_server -t {t}"
            results[name] = {}
            for ep, wl_args in ENDPOINTS.items():
                # A fresh server per endpoint: the PUTs and 100 KiB values of one do not fill
                # the next one's cache.
                with c.Server([str(server_bin), "-t", str(t), "-p", "0", "-m", "256M"],
                              cpu=args.server_cpu, name=f"cache_server-t{t}", log_dir=args.out) as srv:
                    results[name][ep] = sweep(f"{name}, {ep}", client_bin, srv.host, srv.port,
                                              [srv.pid], wl_args, levels,
                                              args.requests_total, args, precision, slo_duration,
                                              steady_duration)
        for url in [u for u in args.target.split(",") if u]:
            parts = urlsplit(url)
            if parts.scheme != "http" or not parts.hostname or not parts.port:
                raise c.StudyError(f"--target {url!r}: expected http://HOST:PORT/PATH")
            results[url] = {"GET": sweep(url, client_bin, parts.hostname, parts.port, [],
                                         ["--workload", "fixed-get", "--path", parts.path or "/"],
                                         levels, args.requests_total, args, precision,
                                         slo_duration, steady_duration)}
    except c.StudyError as e:
        print(f"threadpool.py: {e}", file=sys.stderr)
        return 1
    fig_name = figure(args.out, results)
    args.steady_s = float(steady_duration)
    text, summary = render(results, levels, args.requests_total, args, fig_name)
    summary.update({"study": STUDY, "levels": levels, "server_threads": threads,
                    "requests_total": args.requests_total, "steady_duration_s":
                    float(steady_duration), "figures": [fig_name]})
    c.write_section(args.out, text, summary)
    c.log(STUDY, f"wrote {args.out / 'section.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
