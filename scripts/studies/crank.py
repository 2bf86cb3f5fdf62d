#!/usr/bin/env python3
"""Study crank: the multithreaded cache server (docs/studies.md).

scripts/experiment.py runs the study itself (every server configuration swept over client
threads, REPORT.md by scripts/report.py). This adds what issue 15 asks of every study, from that
run's files plus one measurement per configuration:
  - the published numbers beside ours (the optimized -t 1, the baseline -t 1, the optimized -t 4);
  - the saturation point as the other studies define it (the first client thread count reaching
    95% of the peak) beside the peak;
  - the capacity at the SLO (default p99=1ms): each configuration's server started again with the
    same flags and pinning, bench_client --slo at that configuration's saturation thread count,
    pipelined configurations at their depth (--pipeline N: the open loop at depth N sends what is
    due, up to N outstanding per connection, each request timed from its planned send);
  - the bottleneck verdict at that point from the server's and the client's CPU;
  - the RESP front beside Redis (scripts/compare_redis_resp.py, redis-benchmark against both in
    this run, into RUN_DIR/crank/resp/; the quick form's runs last about 1.5 s, --full's 3 s),
    when redis-server, redis-benchmark and wrk are installed and --no-resp is not given.
Writes RUN_DIR/crank/section.md and summary.json.

  python3 -m scripts.studies.crank --out RUN_DIR/crank --run RUN_DIR [--slo p99=1ms] [--no-resp]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from scripts.harness import rounds
from scripts.studies import common as c

STUDY = "crank"
DEFAULT_SLO = "p99=1ms"
# Published (issue 15): label of ours -> (what, req/s, p95 µs or None, saturation threads or None).
PUBLISHED = [
    ("optimized -t 1", "1 server thread, optimized", 22835, 136, 2),
    ("baseline -t 1", "1 server thread, before its optimizations", 21042, 147, None),
    ("optimized -t 4", "4 server threads", 17178, None, None),
]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m scripts.studies.crank",
                                description=__doc__.split("\n\n")[0])
    c.add_common_args(p)
    p.add_argument("--run", type=Path, required=True, help="the experiment's run directory")
    p.add_argument("--no-resp", action="store_true",
                   help="skip the RESP front beside Redis (scripts/compare_redis_resp.py)")
    return p.parse_args(argv)


RESP_TOOLS = ("redis-server", "redis-benchmark", "redis-cli", "wrk")
RESP_QUICK_SECONDS = 1.5  # compare_redis_resp's --seconds in the quick form (its default: 3)


def run_resp_comparison(args) -> dict:
    """scripts/compare_redis_resp.py into OUT/resp/: {"status": "ok"|why not, "dir": ...}."""
    if args.no_resp:
        return {"status": "skipped (--no-resp)"}
    missing = [t for t in RESP_TOOLS if shutil.which(t) is None]
    if missing:
        return {"status": f"skipped: {', '.join(missing)} not installed (bash scripts/setup.sh "
                          "--peers installs them)"}
    out = args.out / "resp"
    argv = [sys.executable, "-m", "scripts.compare_redis_resp", "--out", str(out),
            "--build", str(args.build)]
    if not args.full:
        argv += ["--seconds", str(RESP_QUICK_SECONDS)]  # still 3 rounds
    env = {**os.environ, "SERVER_CPU": str(args.server_cpu), "CLIENT_CPU": str(args.client_cpu)}
    c.log(STUDY, "the RESP front beside Redis: " + " ".join(argv[1:]))
    r = subprocess.run(argv, cwd=c.ROOT, env=env, capture_output=True, text=True, timeout=3600)
    (args.out / "resp.stderr").write_text(r.stderr)
    if r.returncode != 0 or not (out / "resp.json").exists():
        last = (r.stderr.strip().splitlines() or ["no message"])[-1]
        return {"status": f"failed: compare_redis_resp exited {r.returncode}: {last}"}
    return {"status": "ok", "dir": "resp"}


def render_resp(out: Path, resp: dict) -> list[str]:
    """The RESP comparison's tables (resp/resp.md without its title), or why there are none."""
    L = ["### The RESP front beside Redis", ""]
    if resp.get("status") != "ok":
        return L + [f"Not measured: {resp.get('status')}.", ""]
    text = (out / resp["dir"] / "resp.md").read_text()
    body = text.split("\n", 1)[1].lstrip("\n") if text.startswith("# ") else text
    return L + [body.rstrip("\n"), "", f"(every run: `{resp['dir']}/resp.json`, "
                f"`{resp['dir']}/points.jsonl`; docs/resp.md)", ""]


def median_points(points: list[dict]) -> list[dict]:
    """One point per client thread count: with several rounds (or repetitions), the sample of the
    median req/s (the lower middle of an even count), a measured point whose figures belong
    together; in thread order."""
    by: dict[int, list[dict]] = {}
    for p in points:
        by.setdefault(p["threads"], []).append(p)
    out = []
    for t in sorted(by):
        ps = sorted(by[t], key=lambda p: p["throughput_rps"])
        out.append(ps[(len(ps) - 1) // 2])
    return out


def round_peaks(points: list[dict]) -> dict[int, float]:
    """Round -> the highest req/s of that round's points."""
    out: dict[int, float] = {}
    for p in points:
        r = int(p.get("round", 0))
        out[r] = max(out.get(r, p["throughput_rps"]), p["throughput_rps"])
    return out


def load_configs(run_dir: Path) -> list[dict]:
    run = json.loads((run_dir / "run.json").read_text())
    out = []
    for name in run.get("order") or []:
        doc = json.loads((run_dir / name).read_text())
        meta = doc["meta"]
        samples = [p for p in doc["points"] if not p.get("aborted")]
        if not samples:
            continue
        pipeline = (meta.get("mode") or {}).get("pipeline", 1)
        out.append({"file": name, "label": meta.get("label", name), "flags": meta.get("server_flags"),
                    "pipeline": pipeline, "points": median_points(samples),
                    "round_peaks": round_peaks(samples)})
    return out


def analyse(cfg: dict) -> dict:
    peak = max(cfg["points"], key=lambda p: p["throughput_rps"])
    sat = c.saturation(cfg["points"])
    fig = {"server_cpu_pct": sat.get("server_cpu_pct"), "client_cpu_pct": sat.get("client_cpu_pct")}
    who, why = c.verdict(fig, {"server": 1, "client": 1})
    flagged = c.measured_the_client(fig, {"server": 1, "client": 1}, who)
    return {"round_peaks_rps": [cfg["round_peaks"][r] for r in sorted(cfg["round_peaks"])],
            "peak_rps": peak["throughput_rps"], "peak_threads": peak["threads"],
            "saturation_threads": sat["threads"], "saturation_rps": sat["throughput_rps"],
            "saturation_p95_us": sat["p95_us"], "server_cpu_pct": fig["server_cpu_pct"],
            "client_cpu_pct": fig["client_cpu_pct"], "verdict": who, "verdict_why": why,
            "measured_client": flagged}


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    spec = args.slo or DEFAULT_SLO
    precision = args.slo_precision or (0.02 if args.full else 0.05)
    duration = args.duration or ("3" if args.full else "1")
    try:
        server_bin, client_bin = c.binaries(args.build)
        configs = load_configs(args.run)
        if not configs:
            raise c.StudyError(f"no finished configuration in {args.run}/run.json")
        rows = {}
        for cfg in configs:
            a = analyse(cfg)
            a["slo"] = None
            if cfg["flags"] and cfg["flags"].startswith("-t"):
                c.log(STUDY, f"{cfg['label']}: capacity at {spec}, {a['saturation_threads']} threads"
                             f", depth {cfg['pipeline']}")
                depth = ["--pipeline", str(cfg["pipeline"])] if cfg["pipeline"] > 1 else []
                with c.Server([str(server_bin), "-p", "0"] + cfg["flags"].split(),
                              cpu=args.server_cpu, log_dir=args.out,
                              name=f"cache_server-{cfg['file'][:-5]}") as srv:
                    doc = c.run_bench(client_bin, ["-p", str(srv.port), "--threads",
                                                   str(a["saturation_threads"]), "-d", duration,
                                                   "--warmup", "0.5s", "--slo", spec,
                                                   "--slo-precision", str(precision)] + depth,
                                      args.out / "raw" / f"{cfg['file'][:-5]}-slo.json",
                                      cpu=args.client_cpu, timeout_s=900)
                a["slo"] = c.slo_figures(doc)
            rows[cfg["label"]] = a
        resp = run_resp_comparison(args)
    except c.StudyError as e:
        print(f"crank.py: {e}", file=sys.stderr)
        return 1
    text = render(rows, spec) + "\n" + "\n".join(render_resp(args.out, resp))
    c.write_section(args.out, text, {"study": STUDY, "slo": spec, "configurations": rows,
                                     "published": PUBLISHED, "resp": resp})
    c.log(STUDY, f"wrote {args.out / 'section.md'}")
    return 0


def render(rows: dict, spec: str) -> str:
    L = ["## Study: crank — the multithreaded cache server", "",
         "The experiment above is this study; here are the published numbers beside ours, the "
         "saturation point as every study defines it (the first client thread count reaching 95% "
         "of the peak), the capacity at the SLO (bench_client --slo at that thread count, the "
         "server started again with the same flags and pinning; a pipelined configuration "
         "(`-P N`) is searched at its depth: the open loop sends the requests that are due, up to "
         "N outstanding per connection, each timed from its planned send, docs/client.md "
         "\"Pipelining\") and the bottleneck verdict from the server's and the client's CPU at "
         "that point; a client-bound row whose server had more than "
         f"{c.HEADROOM_PCT:.0f}% of its CPU left is flagged \"{c.MEASURED_CLIENT}\".", "",
         "### Published beside ours", ""]
    prow = []
    for label, what, rps, p95, sat_threads in PUBLISHED:
        ours = rows.get(label)
        pub = f"{c.fnum(rps)} req/s" + (f" at p95 {p95} µs" if p95 else "") + \
              (f", saturating at {sat_threads} client threads" if sat_threads else "")
        mine = c.NONE if ours is None else (
            f"{c.fnum(ours['saturation_rps'])} req/s at p95 {c.fnum(ours['saturation_p95_us'])} µs, "
            f"saturating at {ours['saturation_threads']} client threads (peak "
            f"{c.fnum(ours['peak_rps'])} req/s)")
        if ours is None:
            prow.append([what, label, pub, mine, c.NONE, c.NONE])
            continue
        e = rounds.headline_entry(f"{label} ÷ published", [x / rps for x in ours["round_peaks_rps"]], 1.0)
        prow.append([what, label, pub, mine,
                     f"{e['ratio']:.2f}× (95% CI {rounds.fci(e['ci'])}, {e['rounds']} round"
                     f"{'s' if e['rounds'] != 1 else ''})", rounds.verdict_text(e["ci"], 1.0)])
    L.append(c.md_table(["published configuration", "ours", "published", "ours (this run)",
                         "our peak ÷ published req/s", "≥ 1.0×"], prow))
    L += ["Our peak ÷ published: per round, the configuration's peak req/s ÷ the published "
          "req/s; the median over rounds and its 95% interval (t on the log ratios, "
          "docs/studies.md \"Headlines\"). \"met\" only if the whole interval is at or above 1.0×, "
          "\"missed\" only if it is wholly below, else \"within noise\" (a configuration swept "
          "once has no interval). Each table cell of a configuration with several rounds is the "
          "sample of the median req/s at its thread count.", ""]
    L += ["### Every configuration: saturation, capacity at the SLO, bottleneck", ""]
    trow = []
    for label, a in rows.items():
        slo = a["slo"]
        trow.append([label, c.fnum(a["peak_rps"]), a["saturation_threads"], c.fnum(a["saturation_rps"]),
                     c.fnum(a["saturation_p95_us"]), slo["spec"] if slo else "not searched",
                     c.fnum(slo["capacity_rps"]) if slo else c.NONE, c.fnum(a["server_cpu_pct"], 1),
                     c.fnum(a["client_cpu_pct"], 1),
                     c.bottleneck_cell(a["verdict"], a["measured_client"])])
    L.append(c.md_table(["configuration", "peak req/s", "saturation (client threads)", "req/s",
                         "p95 µs", "SLO", "capacity at SLO req/s", "server CPU %", "client CPU %",
                         "bottleneck"], trow))
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
