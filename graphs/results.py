"""Loading bench_client result JSON, aggregating repetitions, and finding saturation points.

Shared by graphs/plot.py (figures) and scripts/report.py (REPORT.md) so both say the same thing.
A result file is what `bench_client --json FILE` writes (docs/client.md):
    {"meta": {...}, "points": [{"threads": 1, "throughput_rps": ..., "p95_us": ..., ...}, ...]}
One file is one server configuration. Its label is meta["label"] when present, else the file
name without ".json". Several points with the same thread count are repetitions: they are
reduced to the median, with min and max kept for error bars.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

REQUIRED_POINT_FIELDS = ("threads", "throughput_rps", "p50_us", "p95_us", "p99_us")
PERCENTILE_FIELDS = (("p50", "p50_us"), ("p90", "p90_us"), ("p95", "p95_us"),
                     ("p99", "p99_us"), ("p99.9", "p999_us"))
# The saturation rule, stated once so the report can quote it.
SATURATION_P95_FACTOR = 2.0
SATURATION_RULE = (f"the highest-throughput point whose p95 stays within "
                   f"{SATURATION_P95_FACTOR:g}x the p95 at the lowest client thread count")


class ResultError(Exception):
    """A result file is missing, unreadable or not in the expected shape."""


@dataclass
class Point:
    """One client thread count, reduced over repetitions (each column's median; min/max for
    spread). `notes` flags samples a reader must know about: an aborted point (the server died
    or stopped answering) or an open-loop point whose rate was not sustained."""
    threads: int
    repetitions: int
    median: dict[str, float | None]
    low: dict[str, float | None]
    high: dict[str, float | None]
    notes: list[str] = field(default_factory=list)

    @property
    def aborted(self) -> bool:
        return "aborted" in self.notes

    def get(self, name: str) -> float | None:
        return self.median.get(name)


@dataclass
class Series:
    label: str
    path: Path
    meta: dict
    points: list[Point] = field(default_factory=list)

    def saturation(self) -> Point:
        """The saturation point by SATURATION_RULE."""
        complete = [p for p in self.points if not p.aborted] or self.points
        base = complete[0].get("p95_us") or 0.0
        within = [p for p in complete
                  if p.get("p95_us") is not None and p.get("p95_us") <= SATURATION_P95_FACTOR * base]
        candidates = within or complete[:1]
        return max(candidates, key=lambda p: p.get("throughput_rps") or 0.0)


def _number(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _reduce(samples: list[dict], where: str) -> Point:
    names = sorted({k for s in samples for k, v in s.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)} - {"threads"})
    median, low, high = {}, {}, {}
    for n in names:
        values = [v for v in (_number(s.get(n), f"{where} field {n}") for s in samples) if v is not None]
        median[n] = statistics.median(values) if values else None
        low[n] = min(values) if values else None
        high[n] = max(values) if values else None
    for n in ("server_cpu_pct", "client_cpu_pct"):
        median.setdefault(n, None)
    notes = []
    if any(s.get("aborted") is True for s in samples):
        notes.append("aborted")
    if any(s.get("rate_sustained") is False for s in samples):
        notes.append("rate not sustained")
    return Point(int(samples[0]["threads"]), len(samples), median, low, high, notes)


def load_series(path: Path) -> Series:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ResultError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), list):
        raise ResultError(f"{path}: expected an object with a \"points\" list (bench_client --json)")
    if not doc["points"]:
        raise ResultError(f"{path}: \"points\" is empty")
    by_threads: dict[int, list[dict]] = {}
    for i, p in enumerate(doc["points"]):
        where = f"{path}: point {i}"
        if not isinstance(p, dict):
            raise ResultError(f"{where}: not an object")
        missing = [f for f in REQUIRED_POINT_FIELDS if f not in p]
        if missing:
            raise ResultError(f"{where}: missing {', '.join(missing)}")
        for f in REQUIRED_POINT_FIELDS:
            _number(p[f], f"{where} field {f}")
        by_threads.setdefault(int(p["threads"]), []).append(p)
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    label = str(meta.get("label") or path.stem)
    points = [_reduce(s, f"{path}: threads={t}") for t, s in sorted(by_threads.items())]
    return Series(label, path, meta, points)


def find_result_files(args: list[str], default: Path) -> tuple[list[Path], Path]:
    """Result files named by args (files or directories), and the directory to write into."""
    targets = [Path(a) for a in args] or [default]
    files: list[Path] = []
    for t in targets:
        if t.is_dir():
            found = sorted(f for f in t.glob("*.json") if _looks_like_result(f))
            if not found:
                raise ResultError(f"{t}: no bench_client result JSON in this directory")
            files += found
        elif t.exists():
            files.append(t)
        else:
            hint = " (run the experiment first: bash scripts/experiment.sh)" if t == default else ""
            raise ResultError(f"{t}: no such file or directory{hint}")
    out_dir = targets[0] if targets[0].is_dir() else targets[0].parent
    return files, out_dir.resolve()


def _looks_like_result(path: Path) -> bool:
    """True for bench_client output; False for other JSON beside it (meta.json, benchmarks).
    A file that is not JSON at all is an error, not something to skip silently."""
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ResultError(f"{path}: not valid JSON ({e})") from None
    return isinstance(doc, dict) and "points" in doc
