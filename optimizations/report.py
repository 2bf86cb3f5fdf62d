#!/usr/bin/env python3
"""Turns the micro-benchmark outputs of one run into markdown tables (MICROBENCH.md).

Reads, from a results directory written by scripts/experiment.sh:
  cache_throughput.json  Google Benchmark JSON (with repetitions: the median is used)
  hit_ratio.json         Google Benchmark JSON with a hit_ratio counter
  memory_per_item.jsonl  one JSON object per store (optimizations/memory_per_item --json)
  server_memory.jsonl    optional: the same figure through cache_server over HTTP, one object
                         per run (optimizations/server_memory.sh --json)
Writes <dir>/MICROBENCH.md and prints it. Computes nothing but medians and ratios.

usage: python optimizations/report.py RESULTS_DIR
"""
import json
import statistics
import sys
from pathlib import Path

EVICTORS = {0: "none", 1: "fifo", 2: "lru", 3: "clock", 4: "s3fifo", 5: "sieve"}
LOCKS = {0: "shared", 1: "exclusive"}


def fail(msg):
    print(f"report.py: {msg}", file=sys.stderr)
    sys.exit(1)


def load_json(path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        fail(f"missing {path}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not valid JSON: {e}")


def parse_name(name):
    """'BM_Get/evictor:3/lock:0/shards:8/real_time/threads:2' -> ('BM_Get', {...})"""
    parts = name.split("/")
    fields = {}
    for p in parts[1:]:
        if ":" in p:
            k, v = p.split(":", 1)
            fields[k] = int(v)
    return parts[0], fields


def throughput_table(doc):
    # (bench, evictor, lock, shards, threads) -> [items_per_second...]
    samples = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or "items_per_second" not in b:
            continue
        bench, f = parse_name(b["name"])
        key = (bench, f["evictor"], f["lock"], f["shards"], f.get("threads", 1))
        samples.setdefault(key, []).append(b["items_per_second"])
    if not samples:
        fail("cache_throughput.json holds no items_per_second results")
    med = {k: statistics.median(v) for k, v in samples.items()}
    reps = max(len(v) for v in samples.values())
    lines = [f"Median of {reps} repetition(s), million operations per second (all threads together).", ""]
    for bench in sorted({k[0] for k in med}):
        lines += [f"**{bench}**", "",
                  "| evictor | lock | shards | 1 thread | 2 threads | 2 vs 1 |",
                  "|---|---|---:|---:|---:|---:|"]
        for (b, e, l, s, t) in sorted(k for k in med if k[0] == bench and k[4] == 1):
            one = med[(b, e, l, s, 1)]
            two = med.get((b, e, l, s, 2))
            two_s = f"{two / 1e6:.2f}" if two else "n/a"
            ratio = f"{two / one:.2f}x" if two else "n/a"
            lines.append(f"| {EVICTORS.get(e, e)} | {LOCKS.get(l, l)} | {s} | {one / 1e6:.2f} | {two_s} | {ratio} |")
        lines.append("")
    return lines


def hit_ratio_table(doc):
    rows = {}
    for b in doc.get("benchmarks", []):
        if "hit_ratio" not in b:
            continue
        _, f = parse_name(b["name"])
        rows[(f["evictor"], f["scan"])] = b["hit_ratio"]
    if not rows:
        fail("hit_ratio.json holds no hit_ratio results")
    lines = ["| evictor | Zipf(0.99) | Zipf(0.99) + one-pass scan |", "|---|---:|---:|"]
    for e in sorted({k[0] for k in rows}):
        plain, scan = rows.get((e, 0)), rows.get((e, 1))
        fmt = lambda x: f"{x:.4f}" if x is not None else "n/a"
        lines.append(f"| {EVICTORS.get(e, e)} | {fmt(plain)} | {fmt(scan)} |")
    return lines + [""]


def memory_table(path):
    try:
        rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    except FileNotFoundError:
        fail(f"missing {path}")
    except json.JSONDecodeError as e:
        fail(f"{path} has a line that is not JSON: {e}")
    if not rows:
        fail(f"{path} is empty")
    lines = ["| store | measured | items | RSS growth (MB) | overhead (B/item above key+value) |",
             "|---|---|---:|---:|---:|"]
    for r in rows + server_rows(path.parent / "server_memory.jsonl"):
        via = "server, HTTP PUTs" if r.get("via") == "server" else "library"
        lines.append(f"| {r['store']} | {via} | {r['items']} | {r['rss_delta_bytes'] / 1e6:.1f} | "
                     f"{r['overhead_bytes_per_item']:.1f} |")
    return lines + [""]


def server_rows(path):
    """The through-the-server rows (server_memory.sh --json), or none when that file is absent."""
    if not path.exists():
        return []
    try:
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    except json.JSONDecodeError as e:
        fail(f"{path} has a line that is not JSON: {e}")


def main(argv):
    if len(argv) != 2:
        fail("usage: python optimizations/report.py RESULTS_DIR")
    d = Path(argv[1])
    if not d.is_dir():
        fail(f"{d} is not a directory")
    out = ["# Micro-benchmarks", ""]
    out += ["## Cache throughput", ""] + throughput_table(load_json(d / "cache_throughput.json"))
    out += ["## Hit ratio (look-aside, capacity 10% of 100k keys)", ""] + hit_ratio_table(load_json(d / "hit_ratio.json"))
    out += ["## Memory per item (1M items, 11-byte keys, 100-byte values)", ""] + memory_table(d / "memory_per_item.jsonl")
    text = "\n".join(out)
    (d / "MICROBENCH.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
