#!/usr/bin/env python3
"""profile_server_report.py — the Python scripts/profile_server.sh needs (it embedded it until
issue 31): one measured configuration's row, its instruction count, and PROFILE.md.

  instr STATS0 STATS1 IR
      callgrind's instruction total IR over the requests between two /stats JSON documents:
      prints {"ir": IR, "requests": N}
  row TAG VARIANT DEPTH WORK CLK_TCK PERFSTAT.csv WRK.out INSTR-JSON
      one configuration's figures (WORK holds stats0/stats1, cpu0/cpu1 "utime stime" ticks and
      t0/t1 times of the window): prints one JSON line
  report ROWS.jsonl OUT CONNS DURATION
      OUT/profile.json and OUT/PROFILE.md from the rows; prints PROFILE.md's path
"""
import json
import re
import sys
from pathlib import Path


def instr(stats0: str, stats1: str, ir: str) -> str:
    a, b = json.loads(stats0), json.loads(stats1)
    return json.dumps({"ir": int(ir), "requests": b["requests"] - a["requests"] - 1})


def syscall_counts(perfcsv: str) -> dict:
    """perf stat -x, output: {event name without its category: count}."""
    syscalls = {}
    for line in open(perfcsv):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].isdigit():
            syscalls[f[2].split(":")[-1]] = int(f[0])
    return syscalls


def row(tag, variant, depth, work, tck, perfcsv, wrkout, instr_json) -> str:
    w = Path(work)
    a, b = json.loads((w / "stats0").read_text()), json.loads((w / "stats1").read_text())
    (u0, k0), (u1, k1) = (map(int, (w / f"cpu{i}").read_text().split()) for i in (0, 1))
    secs = float((w / "t1").read_text()) - float((w / "t0").read_text())
    tck = int(tck)
    req = b["requests"] - a["requests"] - 1  # the second /stats counts the first
    n = max(req, 1)
    syscalls = syscall_counts(perfcsv)
    m = re.search(r"Requests/sec:\s*([\d.]+)", open(wrkout).read())
    out = {
        "tag": tag, "variant": variant, "pipeline": int(depth), "requests": req, "window_s": secs,
        "req_per_s": req / secs, "wrk_req_per_s": float(m.group(1)) if m else None,
        "server_cpu_pct": 100.0 * ((u1 - u0) + (k1 - k0)) / tck / secs,
        "user_us_per_req": 1e6 * (u1 - u0) / tck / n,
        "sys_us_per_req": 1e6 * (k1 - k0) / tck / n,
        # (servers older than the reads/writes counters: null)
        "reads_per_req": (b["reads"] - a["reads"] - 1) / n if "reads" in b else None,
        "writes_per_req": (b["writes"] - a["writes"] - 1) / n if "writes" in b else None,
        "syscalls_per_req": syscalls.get("sys_enter", 0) / n,
        "syscalls": syscalls,
    }
    cg = json.loads(instr_json)
    if cg:
        out["instr_per_req"] = cg["ir"] / max(cg["requests"], 1)
        out["callgrind_requests"] = cg["requests"]
    return json.dumps(out)


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


def table(rows, conns, dur) -> list:
    lines = [
        "# Server profile: cost per GET hit",
        "",
        f"`cache_server -t 1` on one CPU, wrk -t1 -c{conns} on the other, 100-byte value, "
        f"{dur} s windows (rates use each window's measured length). Requests, reads and writes are the server's own counters; syscalls from "
        "`perf stat -e raw_syscalls:sys_enter`; CPU from /proc/PID/stat; instructions (user space "
        "only) from a separate run under `valgrind --tool=callgrind`, so its rate is not the "
        "table's. Pipeline N = wrk sends N GETs per write.",
        "",
        "| variant | pipeline | req/s | server CPU % | user µs/req | sys µs/req | syscalls/req "
        "| reads/req | writes/req | instructions/req |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ins = f"{r['instr_per_req']:,.0f}" if "instr_per_req" in r else "n/a"
        lines.append(
            f"| {r['variant']} | {r['pipeline']} | {r['req_per_s']:,.0f} | {r['server_cpu_pct']:.0f} "
            f"| {r['user_us_per_req']:.2f} | {r['sys_us_per_req']:.2f} | {r['syscalls_per_req']:.2f} "
            f"| {fmt(r['reads_per_req'])} | {fmt(r['writes_per_req'])} | {ins} |")
    return lines


def report(rows_path, out, conns, dur) -> str:
    rows = [json.loads(line) for line in open(rows_path)]
    out = Path(out)
    (out / "profile.json").write_text(json.dumps(rows, indent=2) + "\n")
    lines = table(rows, conns, dur)
    lines += ["", "Syscalls per request by name (the busiest):", ""]
    for r in rows:
        named = {k: v for k, v in r["syscalls"].items() if k != "sys_enter" and v}
        top = sorted(named.items(), key=lambda kv: -kv[1])[:4]
        desc = ", ".join(f"{k.removeprefix('sys_enter_')} {v / max(r['requests'], 1):.3f}" for k, v in top)
        lines.append(f"- {r['variant']}, pipeline {r['pipeline']}: {desc or 'n/a'}")
    for r in rows:
        top = out / f"{r['tag']}.top.txt"
        if top.exists() and top.read_text().strip():
            lines += ["", f"Top symbols by CPU samples, {r['variant']}, pipeline {r['pipeline']} "
                      "(`perf record -e cpu-clock`, kernel included):", "", "```",
                      top.read_text().rstrip(), "```"]
    (out / "PROFILE.md").write_text("\n".join(lines) + "\n")
    return str(out / "PROFILE.md")


COMMANDS = {"instr": (3, instr), "row": (8, row), "report": (4, report)}


def main(argv) -> int:
    cmd = COMMANDS.get(argv[1]) if len(argv) > 1 else None
    if cmd is None or len(argv) - 2 != cmd[0]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(cmd[1](*argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
