#!/usr/bin/env python3
"""bench_cluster_report.py — summary.json and summary.md (also printed) of a
scripts/bench_cluster.py run: the balance of keys and requests over the nodes, and the cost of
the nginx front per connection count (medians over the rounds). bench_cluster.py calls write();
the command line re-renders a run directory.

Usage: python3 -m scripts.bench_cluster_report OUT CLK_TCK DURATION ROUNDS
OUT holds raw/balance-stats.txt ("node I ADDR STATS-JSON" lines), raw/balance-zipf.json,
raw/cost-ticks.txt ("VIA CONNS ROUND NGINX_TICKS NODE_TICKS" lines) and the bench_client JSON
of every cost point (raw/cost-VIA-cCONNS-rROUND.json).
"""
import json
import statistics
import sys
from pathlib import Path

TARGET_KEYS_MAX_OVER_MEAN = 1.10


def point(raw: Path, name: str) -> dict:
    return json.loads((raw / f"{name}.json").read_text())["points"][0]


def balance(raw: Path) -> tuple[dict, float, float]:
    lines = (raw / "balance-stats.txt").read_text().strip().split("\n")
    items = [json.loads(l.split(" ", 3)[3])["items"] for l in lines if l.startswith("node ")]
    keys_ratio = max(items) / (sum(items) / len(items))
    reqs = [n["requests"] for n in point(raw, "balance-zipf")["nodes"]]
    req_ratio = max(reqs) / (sum(reqs) / len(reqs))
    return {"nodes": len(items), "keys_per_node": items, "keys_max_over_mean": round(keys_ratio, 4),
            "zipf_requests_per_node": reqs, "zipf_requests_max_over_mean": round(req_ratio, 4),
            "target_keys_max_over_mean": TARGET_KEYS_MAX_OVER_MEAN,
            "pass": keys_ratio <= TARGET_KEYS_MAX_OVER_MEAN}, keys_ratio, req_ratio


def read_ticks(raw: Path) -> dict:
    ticks = {}
    for line in (raw / "cost-ticks.txt").read_text().split("\n"):
        if line.strip():
            via, c, r, nginx_t, node_t = line.split()
            ticks[(via, int(c), int(r))] = (int(nginx_t), int(node_t))
    return ticks


def path_figures(raw: Path, ticks: dict, via: str, c: int, rounds: int, clk_tck: int) -> dict:
    """One path (direct or through the front) at one connection count: medians over rounds."""
    pts = [point(raw, f"cost-{via}-c{c}-r{r}") for r in range(1, rounds + 1)]
    t = [ticks[(via, c, r)] for r in range(1, rounds + 1)]
    med = statistics.median
    return {"throughput_rps": round(med(p["throughput_rps"] for p in pts), 1),
            "p50_us": med(p["p50_us"] for p in pts), "p99_us": med(p["p99_us"] for p in pts),
            "nginx_cpu_pct": round(med(x[0] / clk_tck / p["duration_s"] * 100 for x, p in zip(t, pts)), 1),
            "node_cpu_pct": round(med(x[1] / clk_tck / p["duration_s"] * 100 for x, p in zip(t, pts)), 1),
            "nginx_cpu_us_per_request": round(med(x[0] / clk_tck / max(p["requests"], 1) * 1e6
                                                  for x, p in zip(t, pts)), 2),
            "node_cpu_us_per_request": round(med(x[1] / clk_tck / max(p["requests"], 1) * 1e6
                                                 for x, p in zip(t, pts)), 2),
            "errors": sum(p["errors"] for p in pts),
            "client_cpu_pct": med(p["client_cpu_pct"] for p in pts)}


def front_cost(raw: Path, rounds: int, clk_tck: int) -> list:
    ticks = read_ticks(raw)
    out = []
    for c in sorted({c for _, c, _ in ticks}):
        entry = {"connections": c}
        for via in ("direct", "front"):
            entry[via] = path_figures(raw, ticks, via, c, rounds, clk_tck)
        entry["front_over_direct_rps"] = round(entry["front"]["throughput_rps"] /
                                               entry["direct"]["throughput_rps"], 3)
        out.append(entry)
    return out


def render(summary: dict, keys_ratio: float, req_ratio: float, rounds: int, duration: float) -> str:
    b = summary["balance"]
    md = ["# Cluster: balance and the cost of the front", "",
          f"## Balance ({b['nodes']} nodes, nginx `hash $cache_key consistent`, weight 10)", "",
          "| measure | per node | max / mean | target |", "|---|---|---:|---|",
          f"| keys stored through nginx | {', '.join(map(str, b['keys_per_node']))} | {keys_ratio:.3f} | "
          f"<= 1.10: {'PASS' if b['pass'] else 'FAIL'} |",
          f"| requests, Zipf 0.99 (bench_client --targets) | {', '.join(map(str, b['zipf_requests_per_node']))} | "
          f"{req_ratio:.3f} | (hot keys: not a target) |", "",
          f"## Cost of the front (1 node + nginx on CPU 0, bench_client on CPU 1; "
          f"{rounds} round(s) x {duration:g} s, medians)", "",
          "| conns | path | req/s | p50 us | p99 us | node CPU % | nginx CPU % | node CPU us/req | nginx CPU us/req | errors |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for e in summary["front_cost"]:
        for via in ("direct", "front"):
            v = e[via]
            md.append(f"| {e['connections']} | {'direct to the node' if via == 'direct' else 'through nginx'} "
                      f"| {v['throughput_rps']:,.0f} | {v['p50_us']:.0f} | {v['p99_us']:.0f} | "
                      f"{v['node_cpu_pct']:.0f} | {v['nginx_cpu_pct']:.0f} | {v['node_cpu_us_per_request']:.1f} | "
                      f"{v['nginx_cpu_us_per_request'] if via == 'front' else 0:.1f} | {v['errors']} |")
    md += ["", "Through nginx / direct, req/s: " +
           ", ".join(f"{e['front_over_direct_rps']:.2f} at {e['connections']} conn(s)"
                     for e in summary["front_cost"]), "",
           "CPU % and CPU time per request come from /proc/PID/stat ticks (10 ms) of the node and of "
           "nginx's worker around each run (no warm-up, so the ticks cover the measured window). ",
           "This machine has 2 cores: the front shares the node's core, so adding nodes cannot show "
           "scaling here. What repeats on every front machine is nginx's CPU per request (above).", ""]
    return "\n".join(md)


def write(out: Path, clk_tck: int, duration: float, rounds: int) -> str:
    """Writes OUT/summary.json and OUT/summary.md; returns the Markdown."""
    raw = out / "raw"
    bal, keys_ratio, req_ratio = balance(raw)
    summary = {"balance": bal, "front_cost": front_cost(raw, rounds, clk_tck)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    md = render(summary, keys_ratio, req_ratio, rounds, duration)
    (out / "summary.md").write_text(md)
    return md


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(write(Path(argv[1]), int(argv[2]), float(argv[3]), int(argv[4])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
