"""Loading bench_client result JSON, aggregating repetitions, and finding saturation points.

Shared by graphs/plot.py (figures) and scripts/report.py (REPORT.md) so both say the same thing.
A result file is what `bench_client --json FILE` writes (docs/client.md):
    {"meta": {...}, "points": [{"threads": 1, "throughput_rps": ..., "p95_us": ..., ...}, ...]}
One file is one server configuration. Its label is meta["label"] when present, else the file
name without ".json". Several points with the same thread count are repetitions or rounds (a
point's "round", scripts/experiment.py's interleaved rounds): they are reduced to the median,
with min and max kept for error bars, and the raw samples kept (Point.samples) for the per-round
peaks a headline ratio is taken of (Series.round_peaks). A file's pipeline depth is its
top-level "pipeline" (bench_client --pipeline N), else meta["pipeline"], else 1: a pipelined
series' latency is per request with up to N outstanding per connection, so it is not
comparable with depth 1 on latency. Each point also gets get_rps = gets / duration_s.

Also loads nginx.json (scripts/compare_nginx.py --json): cache_server beside nginx under wrk,
per pipeline depth and connection count (with --rounds, every round's measurement and their
median and range), the peak of each server and the per-round peak ratios (load_nginx).
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
    samples: list[dict] = field(default_factory=list)  # the raw points, one per repetition/round

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
    pipeline: int = 1

    @property
    def pipelined(self) -> bool:
        return self.pipeline > 1

    def peak(self, name: str = "throughput_rps") -> Point | None:
        """The point with the highest median `name` among the points that were not aborted."""
        usable = [p for p in self.points if not p.aborted and p.get(name) is not None]
        return max(usable, key=lambda p: p.get(name)) if usable else None

    def saturation(self) -> Point:
        """The saturation point by SATURATION_RULE."""
        complete = [p for p in self.points if not p.aborted] or self.points
        base = complete[0].get("p95_us") or 0.0
        within = [p for p in complete
                  if p.get("p95_us") is not None and p.get("p95_us") <= SATURATION_P95_FACTOR * base]
        candidates = within or complete[:1]
        return max(candidates, key=lambda p: p.get("throughput_rps") or 0.0)

    def rounds(self) -> list[int]:
        """The round numbers of the series' samples (a sample's "round", else 0)."""
        return sorted({int(s.get("round", 0)) for p in self.points for s in p.samples})

    def round_peaks(self, name: str = "get_rps") -> dict[int, float]:
        """Round -> the highest `name` among that round's samples that were not aborted: the
        per-round peak a headline ratio is taken of (scripts/report.py)."""
        out: dict[int, float] = {}
        for p in self.points:
            for s in p.samples:
                v = s.get(name)
                if s.get("aborted") is True or not isinstance(v, (int, float)):
                    continue
                r = int(s.get("round", 0))
                out[r] = max(out.get(r, v), v)
        return out


def _number(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _reduce(samples: list[dict], where: str) -> Point:
    samples = [_with_get_rps(s) for s in samples]
    names = sorted({k for s in samples for k, v in s.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)} - {"threads", "round"})
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
    return Point(int(samples[0]["threads"]), len(samples), median, low, high, notes, samples)


def _with_get_rps(sample: dict) -> dict:
    gets, secs = sample.get("gets"), sample.get("duration_s")
    if isinstance(gets, (int, float)) and isinstance(secs, (int, float)) and secs > 0 \
            and not isinstance(gets, bool) and "get_rps" not in sample:
        return {**sample, "get_rps": gets / secs}
    return sample


def read_json(path: Path):
    """The document in `path`, or a ResultError that names the file and what is wrong."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ResultError(f"{path}: not valid JSON ({e})") from None


def load_series(path: Path) -> Series:
    doc = read_json(path)
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
    pipeline = doc.get("pipeline", meta.get("pipeline", 1))
    if pipeline is None:
        pipeline = 1
    if isinstance(pipeline, bool) or not isinstance(pipeline, int) or pipeline < 1:
        raise ResultError(f"{path}: \"pipeline\" must be a positive integer, got {pipeline!r}")
    label = str(meta.get("label") or path.stem)
    if pipeline > 1 and f"-P {pipeline}" not in label:
        label += f" -P {pipeline}"
    points = [_reduce(s, f"{path}: threads={t}") for t, s in sorted(by_threads.items())]
    return Series(label, path, meta, points, pipeline)


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


# --- nginx.json (scripts/compare_nginx.py --json) ----------------------------------------------
NGINX_SERVERS = ("cache_server", "nginx")


@dataclass
class NginxRow:
    """One connection count at one pipeline depth. by_server: each server's measurement (None if
    absent); with several rounds, a summary of them: rps the median of the clean rounds' req/s
    (rps_min, rps_max their range; "rounds" how many), the other numbers medians too, errors the
    sum, failed when no round was clean. runs: each server's measurements, one per round."""
    connections: int
    by_server: dict[str, dict | None]
    runs: dict[str, list[dict]] = field(default_factory=dict)

    def rps(self, server: str) -> float | None:
        """req/s of a clean measurement (wrk ran, no socket errors, no non-2xx); else None."""
        m = self.by_server.get(server)
        return m["rps"] if m is not None and usable(m) else None

    def ratio(self) -> float | None:
        a, b = self.rps("cache_server"), self.rps("nginx")
        return a / b if a and b else None

    def round_rps(self, server: str) -> dict[int, float]:
        """Round -> req/s of that round's clean measurement of `server`."""
        return {int(m.get("round", 0)): m["rps"] for m in self.runs.get(server, []) if usable(m)}


def _summarize(ms: list[dict]) -> dict:
    """Several rounds' measurements of one server at one point as one (NginxRow.by_server)."""
    if len(ms) == 1:
        return {**ms[0], "rounds": 1}
    clean = [m for m in ms if usable(m)]
    out = {**ms[0], "rounds": len(ms), "errors": sum(m.get("errors") or 0 for m in ms),
           "failed": all(m.get("failed") for m in ms)}
    pool = clean or ms
    for k in ("rps", "server_cpu_pct", "wrk_cpu_pct", "p50_us", "p99_us", "wall_s"):
        vals = [m[k] for m in pool if isinstance(m.get(k), (int, float))]
        out[k] = statistics.median(vals) if vals else None
        if k in ("rps", "p99_us"):
            out[k + "_min"], out[k + "_max"] = (min(vals), max(vals)) if vals else (None, None)
    if clean:
        out["errors"] = 0  # the summary is of the clean rounds; the unclean ones are counted apart
        out["unclean_rounds"] = len(ms) - len(clean)
    return out


@dataclass
class NginxDepth:
    pipeline: int
    rows: list[NginxRow]

    def peak(self, server: str) -> tuple[float, int] | None:
        """(req/s, connections) of the server's highest clean measurement at this depth (with
        rounds: the highest of the per-connection medians)."""
        best = [(r.rps(server), r.connections) for r in self.rows if r.rps(server) is not None]
        return max(best) if best else None

    def round_peak_ratios(self) -> list[float]:
        """Per round: cache_server's peak over connections ÷ nginx's, both from that round."""
        peaks: dict[str, dict[int, float]] = {s: {} for s in NGINX_SERVERS}
        for r in self.rows:
            for server in NGINX_SERVERS:
                for rnd, v in r.round_rps(server).items():
                    peaks[server][rnd] = max(peaks[server].get(rnd, v), v)
        cs, ng = peaks["cache_server"], peaks["nginx"]
        return [cs[k] / ng[k] for k in sorted(cs) if k in ng and ng[k] > 0 and cs[k] > 0]

    def peak_ratio(self) -> float | None:
        """The median over rounds of cache_server's peak ÷ nginx's peak in the same round (one
        round: peak over connections ÷ peak over connections)."""
        rs = self.round_peak_ratios()
        return statistics.median(rs) if rs else None


@dataclass
class NginxComparison:
    path: Path
    doc: dict
    depths: list[NginxDepth]

    @property
    def complete(self) -> bool:
        return self.doc.get("complete") is True


def usable(m: dict) -> bool:
    return not m.get("failed") and not m.get("errors") and m.get("rps") is not None


def load_nginx(path: Path) -> NginxComparison:
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("measurements"), list):
        raise ResultError(f"{path}: expected an object with a \"measurements\" list (compare_nginx.py --json)")
    grid: dict[int, dict[int, dict[str, list[dict]]]] = {}
    for i, m in enumerate(doc["measurements"]):
        where = f"{path}: measurement {i}"
        if not isinstance(m, dict):
            raise ResultError(f"{where}: not an object")
        missing = [f for f in ("pipeline", "connections", "server", "rps") if f not in m]
        if missing:
            raise ResultError(f"{where}: missing {', '.join(missing)}")
        if m["server"] not in NGINX_SERVERS:
            raise ResultError(f"{where}: unknown server {m['server']!r}")
        for f in ("rps", "server_cpu_pct", "wrk_cpu_pct", "p50_us", "p99_us"):
            _number(m.get(f), f"{where} field {f}")
        row = grid.setdefault(int(m["pipeline"]), {}).setdefault(
            int(m["connections"]), {s: [] for s in NGINX_SERVERS})
        row[m["server"]].append(m)
    depths = [NginxDepth(d, [NginxRow(c, {s: _summarize(ms) if ms else None for s, ms in by.items()}, by)
                             for c, by in sorted(rows.items())])
              for d, rows in sorted(grid.items())]
    return NginxComparison(path, doc, depths)


def load_nginx_in(run_dir: Path) -> NginxComparison | None:
    """The run's nginx comparison (run_dir/nginx.json), or None when the run has none."""
    path = run_dir / "nginx.json"
    return load_nginx(path) if path.exists() else None
