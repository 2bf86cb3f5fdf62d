"""report — what the benchmark report scripts (bench_store_report.py, bench_postgres_report.py,
compare_redis_boards_report.py) share: the command line (DIR [--quiet] plus a script's own
subcommands), reading a run directory (meta.json, points.jsonl, raw JSON, loadavg_end.txt,
commands.txt), the figures' arithmetic, a report's sections and the targets block. Numbers and
table lines are harness.tables' (fnum, fratio, row, table_head), as in every other report.

A report script defines summarize(run) -> dict and render(run, summary) -> str, and ends with
    sys.exit(report.main(sys.argv, "NAME", __doc__, summarize, render, {"sub": (usage, fn)}))
main() writes DIR/summary.md (printed unless --quiet) and DIR/summary.json.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Callable

from .tables import fratio, table_head


# --- figures (their formatting is harness.tables') ---------------------------------------------

def div(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def median(xs):
    """The median of the measured values (None ones skipped); None when there are none."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cpu_pct(ticks, clk_tck, wall_s):
    """CPU ticks over a wall time, in % of one core; None when either is missing."""
    if ticks is None or wall_s is None or wall_s <= 0:
        return None
    return 100.0 * ticks / clk_tck / wall_s


# --- the run directory -------------------------------------------------------------------------

def read_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def read_points(run: Path) -> list[dict]:
    """points.jsonl: one JSON object per measured point."""
    return [json.loads(line) for line in (run / "points.jsonl").read_text().splitlines()
            if line.strip()]


def loadavg_end(run: Path) -> str:
    """The load average the script saved at its end (loadavg_end.txt), or "?"."""
    try:
        return " ".join((run / "loadavg_end.txt").read_text().split()[:3])
    except OSError:
        return "?"


def commands_block(run: Path, intro: str) -> list[str]:
    """The commands the run recorded (commands.txt) in a code block after `intro`; none when
    it recorded none."""
    path = run / "commands.txt"
    cmds = path.read_text().splitlines() if path.exists() else []
    return [intro, "```", *cmds, "```"] if cmds else []


# --- Markdown (tables and cells: harness.tables) -----------------------------------------------

def section(title: str, intro: str, headers: list[str], align: str, rows: list[str]) -> list[str]:
    """A report section: "## TITLE", its intro paragraph, a table (table_head, then `rows`) and
    a blank line."""
    return [f"## {title}\n", f"{intro}\n", *table_head(headers, align), *rows, ""]


class Targets:
    """The targets of a run: check() records each as PASS or `miss` ("FAIL" or "MISS") with its
    text; block() is the report's code block with the counts."""

    def __init__(self, miss: str = "FAIL", results: tuple = ("PASS", "FAIL", "SKIP")):
        self.miss, self.results, self.items = miss, results, []

    def check(self, name: str, value, threshold, fmt: Callable = fratio) -> None:
        if value is None:
            self.add(name, self.miss, None, f"{self.miss} {name}: not measured")
        else:
            result = "PASS" if value >= threshold else self.miss
            self.add(name, result, value, f"{result} {name}: {fmt(value)}")

    def skip(self, name: str, why: str) -> None:
        self.add(name, "SKIP", None, f"SKIP {name}: {why}")

    def add(self, name: str, result: str, value, text: str, **extra) -> None:
        self.items.append({"name": name, "result": result, "value": value, **extra, "text": text})


def targets_block(targets: list[dict], results: tuple) -> list[str]:
    """The "## Targets" section: one line per target and the count of each result."""
    counts = ", ".join(f"{sum(t['result'] == k for t in targets)} {k}" for k in results)
    return ["## Targets\n", "```", *(t["text"] for t in targets), f"targets: {counts}", "```\n"]


# --- the command line ------------------------------------------------------------------------

def main(argv: list[str], name: str, doc: str, summarize: Callable, render: Callable,
         subcommands: dict | None = None) -> int:
    """`python3 -m scripts.NAME DIR [--quiet]`, or `python3 -m scripts.NAME SUB ARGS...` for a
    script's subcommands ({SUB: (usage, min_args, max_args, fn(*args) -> exit code)}; max_args
    None: no limit)."""
    for sub, (usage, lo, hi, fn) in (subcommands or {}).items():
        if len(argv) >= 2 and argv[1] == sub:
            args = argv[2:]
            if len(args) < lo or (hi is not None and len(args) > hi):
                print(f"usage: python3 -m scripts.{name} {usage}", file=sys.stderr)
                return 2
            return fn(*args)
    args = [a for a in argv[1:] if a != "--quiet"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(doc.strip(), file=sys.stderr if len(args) != 1 else sys.stdout)
        return 0 if args and args[0] in ("-h", "--help") else 2
    run = Path(args[0])
    if not (run / "points.jsonl").exists():
        print(f"{name}: no points.jsonl in {run}", file=sys.stderr)
        return 1
    s = summarize(run)
    md = render(run, s)
    (run / "summary.md").write_text(md)
    (run / "summary.json").write_text(json.dumps(s, indent=1) + "\n")
    if "--quiet" not in argv:
        sys.stdout.write(md)
    return 0
