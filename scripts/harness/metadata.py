"""metadata — what a run records about where it ran: the machine (CPU model, cores, kernel, host,
online CPUs, load), the git revision (and whether the tree was dirty) and tool versions. One
place, so every report states the same facts the same way.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

from . import ROOT


def _out(argv: list[str], timeout_s: float = 10) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        return (r.stdout or r.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def git_revision(root: Path = ROOT) -> tuple[str, bool]:
    """(short revision or "unknown", whether tracked files differ from it)."""
    rev = _out(["git", "-C", str(root), "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = bool(_out(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"]))
    return rev, dirty


def version(argv: list[str]) -> str:
    """The first line a tool prints for its version flag ("" when it is missing)."""
    return _out(argv).split("\n")[0]


def machine() -> dict:
    """cpu_model, cores, online_cpus, kernel, host, loadavg (1/5/15 min)."""
    try:
        online = Path("/sys/devices/system/cpu/online").read_text().strip()
    except OSError:
        online = ""
    try:
        load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = ""
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "online_cpus": online,
            "kernel": platform.release(), "host": platform.node(), "loadavg": load}


def run_metadata(tool: str, **extra) -> dict:
    """The metadata a benchmark's meta.json starts with: tool, date_utc, git_revision, git_dirty,
    the machine(), then `extra`."""
    rev, dirty = git_revision()
    return {"tool": tool, "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "git_revision": rev, "git_dirty": dirty, **machine(), **extra}


def write(out: Path, tool: str, **extra) -> dict:
    """run_metadata(tool, **extra) written to OUT/meta.json; the metadata."""
    meta = run_metadata(tool, **extra)
    (Path(out) / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta
