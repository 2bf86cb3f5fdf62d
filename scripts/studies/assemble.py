#!/usr/bin/env python3
"""Assembles RUN_DIR/REPORT.md from the studies that ran (docs/studies.md).

crank's part is what scripts/report.py wrote (REPORT.md itself) followed by crank/section.md; the
other studies' sections (kv-db/, leaderboard/, threadpool/) follow in that order, each after a
line of its own. Everything from the marker line on is rewritten on each call, so running a study
again (or report.py again) and then this script gives one report, not two. Without crank the
report starts with a short header of its own.

  python3 -m scripts.studies.assemble RUN_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

MARKER = "<!-- studies: written by scripts/studies/assemble.py -->"
ORDER = ["crank", "kv-db", "leaderboard", "threadpool"]


def assemble(run_dir: Path) -> Path:
    report = run_dir / "REPORT.md"
    head = report.read_text().split(MARKER)[0].rstrip() + "\n" if report.exists() else (
        f"# Load-test report\n\nRun `{run_dir.name}`: the studies below "
        "(bash scripts/experiment.sh --study NAME).\n")
    present = [s for s in ORDER if (run_dir / s / "section.md").exists()]
    failed = [s for s in ORDER if (run_dir / s / "FAILED").exists()]
    parts = [head, "", MARKER, "", "# Studies", ""]
    parts.append("Each study below regenerates a published load study on this machine, with its "
                 "published numbers beside ours, the saturation point and the capacity at an SLO "
                 "for every configuration, and the bottleneck named from measured CPU and disk "
                 "figures (docs/studies.md). Studies in this run: " +
                 (", ".join(present) if present else "none") + ".")
    for s in failed:
        parts.append(f"\n> Study {s} failed: {(run_dir / s / 'FAILED').read_text().strip()}")
    parts.append("")
    for s in present:
        parts.append((run_dir / s / "section.md").read_text().rstrip() + "\n")
    report.write_text("\n".join(parts))
    return report


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    print(assemble(Path(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
