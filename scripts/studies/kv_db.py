#!/usr/bin/env python3
"""Study kv-db: a key-value store with a cache in front of a database (docs/studies.md).

The published study put a cache in front of a database and loaded it with two workloads at 1 to
20 clients: GET-POPULAR (reads of 10 hot keys: the cache answers, the CPU is the limit) and
PUT-ALL (creates and updates over 5,000 keys: every write is committed, the disk is the limit).
Here cache_server runs write-through (`--write-mode through`: a PUT is answered once durable)
in front of each of our stores, embedded RocksDB and PostgreSQL (a throwaway cluster), pinned to
the server CPU with PostgreSQL; bench_client runs on the client CPU, one thread with C
connections per level (C clients, one request outstanding each). Per point: throughput, mean and
p99 latency, the server's, PostgreSQL's and the client's CPU, the disk's %util; per configuration
(store x workload): the saturation point, the capacity at the SLO (bench_client --slo at the
saturation level) and the bottleneck verdict.

  python3 -m scripts.studies.kv_db --out DIR [--quick | --full] [--levels 1,5,20] [--duration S]
"""
from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

from scripts.studies import common as c

STUDY = "kv-db"
QUICK_LEVELS, FULL_LEVELS = [1, 5, 20], [1, 2, 3, 5, 10, 15, 20]
WORKLOADS = {
    "GET-POPULAR": ["--workload", "get-popular", "--hot-keys", "10"],
    "PUT-ALL": ["--workload", "put-all", "--keys", "5000", "--value-size", "100"],
}
SLO = {"GET-POPULAR": "p99=1ms", "PUT-ALL": "p99=20ms"}
# The published study's numbers (issue 15): clients -> (req/s, mean latency ms, CPU % or disk %).
PUBLISHED = {
    "GET-POPULAR": {1: (8382, 0.118, 48), 2: (12404, 0.160, 79), 5: (14257, 0.349, 85),
                    20: (14571, 1.373, 85.7)},
    "PUT-ALL": {1: (16.56, 60.4, 92.8), 6: (39.67, 151, 95), 20: (55.90, 380, 95.5)},
}
PUBLISHED_RESOURCE = {"GET-POPULAR": "CPU", "PUT-ALL": "disk busy"}


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m scripts.studies.kv_db",
                                description=__doc__.split("\n\n")[0])
    c.add_common_args(p)
    p.add_argument("--levels", help="client connections per point, e.g. 1,5,20 "
                                    f"(quick {QUICK_LEVELS}, full {FULL_LEVELS})")
    p.add_argument("--stores", default="rocksdb,postgres",
                   help="stores to measure, comma list of rocksdb,postgres (default both)")
    return p.parse_args(argv)


def point_args(conns: int, duration: str, warmup: str) -> list[str]:
    return ["--threads", "1", "--connections-per-thread", str(conns), "-d", duration,
            "--warmup", warmup, "--timeout", "20s"]


def measure_store(store: str, args, server_bin: Path, client_bin: Path, levels: list[int],
                  duration: str, warmup: str, slo_duration: str, precision: float) -> dict:
    out = args.out
    data_parent = Path(tempfile.mkdtemp(prefix=f"kv-db-{store}-", dir=out))
    with contextlib_for(store, args) as pg:
        # --allow-reset: bench_client resets the server before each point's preload, and with
        # a store the full reset needs a token or this flag (docs/server.md, "Security model").
        flags = ["-t", "1", "-p", "0", "--write-mode", "through", "--allow-reset"]
        if store == "rocksdb":
            flags += ["--store", f"rocksdb:{data_parent / 'rocksdb'}"]
            disk_path, db_pid = data_parent, None
        else:
            flags += ["--store", f"postgres:{pg.conninfo}", "--store-connections", "4"]
            disk_path, db_pid = Path(pg.dir), pg.postmaster_pid
        result = {}
        with c.Server([str(server_bin)] + flags, cpu=args.server_cpu, name=f"cache_server-{store}",
                      log_dir=out) as srv:
            for wl, wl_args in WORKLOADS.items():
                points = []
                for conns in levels:
                    c.log(STUDY, f"{store} {wl} {conns} connections")
                    pt = c.measure_point(client_bin, ["-p", str(srv.port), "--server-pid",
                                                      str(srv.pid)] + wl_args +
                                         point_args(conns, duration, warmup),
                                         out / "raw" / f"{store}-{wl}-{conns}.json",
                                         args.client_cpu, [srv.pid], db_pid, disk_path)
                    srv.drain()
                    points.append({"connections": conns, **pt})
                sat = c.saturation(points)
                slo_spec = args.slo or SLO[wl]
                c.log(STUDY, f"{store} {wl}: capacity at {slo_spec}, {sat['connections']} connections")
                slo_doc = c.run_bench(client_bin, ["-p", str(srv.port)] + wl_args +
                                      ["--threads", "1", "--connections-per-thread",
                                       str(sat["connections"]), "-d", slo_duration, "--warmup",
                                       warmup, "--timeout", "20s", "--slo", slo_spec,
                                       "--slo-precision", str(precision)],
                                      out / "raw" / f"{store}-{wl}-slo.json", cpu=args.client_cpu,
                                      timeout_s=900)
                srv.drain()
                result[wl] = {"points": points, "saturation": sat,
                              "slo": c.slo_figures(slo_doc)}
    shutil.rmtree(data_parent, ignore_errors=True)  # RocksDB's files: not results
    return result


def contextlib_for(store: str, args):
    """PostgreSQL's throwaway cluster for the postgres store; nothing for RocksDB (embedded)."""
    if store == "postgres":
        return c.pg_cluster(args.server_cpu)
    return contextlib.nullcontext()


def figure(out: Path, results: dict, wl: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for store, r in results.items():
        pts = r[wl]["points"]
        ax.plot([p["connections"] for p in pts], [p["throughput_rps"] for p in pts], "o-",
                label=f"ours, {store}")
    pub = PUBLISHED[wl]
    ax.plot(list(pub), [v[0] for v in pub.values()], "s--", color="grey", label="published")
    ax.set_xlabel("client connections")
    ax.set_ylabel("req/s")
    ax.set_yscale("log")
    ax.set_title(f"kv-db {wl}: throughput against clients")
    ax.grid(alpha=0.3)
    ax.legend()
    name = f"kv-db-{wl.lower()}.png"
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def render(results: dict, levels: list[int], args, duration: str, figures: dict) -> str:
    L = [f"## Study: kv-db — a key-value store with a cache in front of a database", ""]
    L.append("cache_server `--write-mode through` (a PUT is answered once durable) in front of "
             + " and ".join(f"`--store {s}`" for s in results) +
             f", `-t 1`, pinned to CPU {args.server_cpu} (PostgreSQL pinned there too); "
             f"bench_client on CPU {args.client_cpu}, one thread with C connections per level "
             f"(C clients, one request outstanding each), {duration} s per point. "
             "GET-POPULAR: GETs of 10 hot keys (preloaded); PUT-ALL: PUTs of 100-byte values "
             "over 5,000 keys (creates, then updates). Resource figures: CPU from /proc/PID/stat "
             "(% of one core; PostgreSQL = the postmaster and all its backends), disk %util as "
             "iostat computes it (/proc/diskstats io_ticks) for the device holding the data.")
    L.append("")
    summary = {"levels": levels, "configurations": {}}
    for wl in WORKLOADS:
        res_name = PUBLISHED_RESOURCE[wl]
        L.append(f"### {wl}: published beside ours")
        L.append("")
        headers = ["clients", "published req/s", "published avg ms", f"published {res_name} %"]
        for store in results:
            headers += [f"{store} req/s", f"{store} avg ms", f"{store} p99 ms",
                        f"{store} server CPU %" if wl == "GET-POPULAR" else f"{store} disk %util"]
        rows = []
        all_levels = sorted(set(levels) | set(PUBLISHED[wl]))
        for n in all_levels:
            pub = PUBLISHED[wl].get(n)
            row = [n] + ([c.fnum(pub[0], 2 if pub[0] < 100 else 0), c.fnum(pub[1], 3),
                          c.fnum(pub[2], 1)] if pub else [c.NONE] * 3)
            for store in results:
                pt = next((p for p in results[store][wl]["points"] if p["connections"] == n), None)
                if pt is None:
                    row += [c.NONE] * 4
                    continue
                res = pt["server_cpu_pct"] if wl == "GET-POPULAR" else pt["disk_util_pct"]
                row += [c.fnum(pt["throughput_rps"], 0), c.fnum(pt["mean_us"] / 1000, 3),
                        c.fnum(pt["p99_us"] / 1000, 3), c.fnum(res, 1)]
            rows.append(row)
        L.append(c.md_table(headers, rows))
        L.append(f"![kv-db {wl}](kv-db/{figures[wl]})")
        L.append("")
    L.append("### Saturation, capacity at the SLO and the bottleneck")
    L.append("")
    L.append("Saturation: the first level reaching 95% of the peak throughput. Capacity: the "
             "highest open-loop rate whose corrected p99 meets the SLO (bench_client --slo at the "
             "saturation level; invalid points never count). Verdict at the saturation point: "
             f"the resource at ≥ {c.BOUND_PCT:.0f}% of its capacity (docs/studies.md).")
    L.append("")
    headers = ["configuration", "saturation (clients)", "saturation req/s", "SLO",
               "capacity at SLO req/s", "server CPU %", "PostgreSQL CPU %", "client CPU %",
               "disk %util", "bottleneck"]
    rows = []
    for store in results:
        for wl in WORKLOADS:
            r = results[store][wl]
            s, slo = r["saturation"], r["slo"]
            name = f"{store} {wl}"
            rows.append([name, s["connections"], c.fnum(s["throughput_rps"], 0), slo["spec"],
                         c.fnum(slo["capacity_rps"], 0), c.fnum(s["server_cpu_pct"], 1),
                         c.fnum(s["db_cpu_pct"], 1), c.fnum(s["client_cpu_pct"], 1),
                         c.fnum(s["disk_util_pct"], 1),
                         c.bottleneck_cell(f"{s['verdict']} ({s['verdict_why']})",
                                           s["measured_client"])])
            summary["configurations"][name] = r
    L.append(c.md_table(headers, rows))
    disk_notes = {results[s][w]["saturation"]["disk_note"] for s in results for w in WORKLOADS}
    L.append("Disk: " + "; ".join(sorted(n for n in disk_notes if n)) + ".")
    L.append("")
    return "\n".join(L) + "\n", summary


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    levels = c.int_list(args.levels, QUICK_LEVELS, FULL_LEVELS, args.full)
    duration = args.duration or ("5" if args.full else "2")
    warmup = "1s" if args.full else "0.5s"
    slo_duration = args.duration or ("3" if args.full else "1")
    precision = args.slo_precision or (0.02 if args.full else 0.05)
    stores = [s for s in args.stores.split(",") if s]
    try:
        server_bin, client_bin = c.binaries(args.build)
        results = {s: measure_store(s, args, server_bin, client_bin, levels, duration, warmup,
                                    slo_duration, precision) for s in stores}
    except c.StudyError as e:
        print(f"kv_db.py: {e}", file=sys.stderr)
        return 1
    figures = {wl: figure(args.out, results, wl) for wl in WORKLOADS}
    text, summary = render(results, levels, args, duration, figures)
    summary.update({"study": STUDY, "published": PUBLISHED, "duration_s": float(duration),
                    "stores": stores, "figures": sorted(figures.values())})
    c.write_section(args.out, text, summary)
    c.log(STUDY, f"wrote {args.out / 'section.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
