#!/usr/bin/env python3
"""Hit ratio against cache size: our evictors beside libCacheSim's, from one cross-check JSON.

usage: python graphs/mrc.py [RESULTS_DIR | miss_ratio_curves.json]

Reads the JSON traces/crosscheck.py writes (--json; the experiment writes
results/<stamp>/miss_ratio_curves.json) and draws miss_ratio_curves.png/.svg beside it: one panel
per trace, hit ratio against cache size (% of the keys), one colour per policy, our library's
evictors solid with circles and libCacheSim's dashed with crosses. Also the module the report and
the cross-check use to render the same numbers as a markdown table (markdown_table). Exits 1 with
a one-line message on bad input.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

FILE_NAME = "miss_ratio_curves.json"
FIGURE_NAME = "miss_ratio_curves"
FORMATS = ("png", "svg")
# Policy families: our name (normalised: lower case, no '-' or '_') and libCacheSim's class name,
# in the column order of the table. Our names are matched generically, so a new evictor in
# cache::parse_evictor shows up as soon as it exists.
FAMILIES = (("LRU", ("lru",), "LRU"),
            ("FIFO", ("fifo",), "FIFO"),
            ("CLOCK", ("clock",), "Clock"),
            ("S3-FIFO", ("s3fifo",), "S3FIFO-5-50"),  # libCacheSim's with our split (5%, 50%)
            ("SIEVE", ("sieve",), "Sieve"),
            ("W-TinyLFU", ("wtinylfu", "tinylfu"), "WTinyLFU"),
            ("ARC", ("arc",), "ARC"),
            ("S3-FIFO 10/90", (), "S3FIFO"))  # libCacheSim's own split; no counterpart of ours


class CurveError(Exception):
    pass


def normalise(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def family_of_ours(name: str) -> str | None:
    n = normalise(name)
    for label, ours, _ in FAMILIES:
        if n in ours or any(o in n for o in ours if o.endswith("tinylfu")):
            return label
    return None


def load(path: Path) -> dict:
    """The cross-check document, checked for the fields the figure and table read."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CurveError(f"{path}: no such file (run python traces/crosscheck.py --curves --json FILE)") from None
    except json.JSONDecodeError as e:
        raise CurveError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traces"), list) or not doc["traces"]:
        raise CurveError(f"{path}: expected an object with a non-empty \"traces\" list (traces/crosscheck.py --json)")
    for t in doc["traces"]:
        if not isinstance(t, dict) or "name" not in t or not isinstance(t.get("sizes"), list):
            raise CurveError(f"{path}: every trace needs \"name\" and a \"sizes\" list")
        for s in t["sizes"]:
            if not all(k in s for k in ("percent", "capacity", "ours", "libcachesim")):
                raise CurveError(f"{path}: trace {t['name']}: a size lacks percent/capacity/ours/libcachesim")
    return doc


def libcachesim_note(doc: dict) -> str | None:
    """None when libCacheSim ran; else the line saying why its numbers are missing."""
    lcs = doc.get("meta", {}).get("libcachesim", {})
    if lcs.get("available"):
        return None
    why = lcs.get("error") or "not importable"
    return (f"libCacheSim was not available ({why}; `pip install -r tests/requirements.txt`): "
            "only our evictors are shown.")


def columns(doc: dict) -> list[tuple[str, str | None, str | None]]:
    """(label, our evictor name, libCacheSim name) per column, families first, then any evictor
    of ours that belongs to none."""
    ours_names = sorted({n for t in doc["traces"] for s in t["sizes"] for n in s["ours"]})
    lcs_names = {n for t in doc["traces"] for s in t["sizes"] for n in s["libcachesim"]}
    cols = []
    for label, _, lcs in FAMILIES:
        mine = [n for n in ours_names if family_of_ours(n) == label]
        theirs = lcs if lcs in lcs_names else None
        if mine or theirs:
            cols.append((label, mine[0] if mine else None, theirs))
    for n in ours_names:
        if family_of_ours(n) is None:
            cols.append((n, n, None))
    return cols


def _cell(x) -> str:
    return "–" if x is None else f"{x:.4f}"


def markdown_table(doc: dict) -> list[str]:
    """One row per trace and cache size; each policy's cell is "ours · libCacheSim's"."""
    cols = columns(doc)
    lines = ["| trace | cache size | " + " | ".join(c[0] for c in cols) + " |",
             "|---|---:|" + "---:|" * len(cols)]
    for t in doc["traces"]:
        for s in t["sizes"]:
            cells = []
            for _, mine, theirs in cols:
                a = s["ours"].get(mine) if mine else None
                b = s["libcachesim"].get(theirs) if theirs else None
                cells.append(f"{_cell(a)} · {_cell(b)}")
            lines.append(f"| {t['name']} | {s['percent']:g}% ({s['capacity']:,}) | " + " | ".join(cells) + " |")
    return lines


def plot(doc: dict, out_dir: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")  # files only
    import matplotlib.pyplot as plt

    traces = doc["traces"]
    cols = columns(doc)
    fig, axes = plt.subplots(1, len(traces), figsize=(6 * len(traces), 4.5), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, t in zip(axes[0], traces):
        xs = [s["percent"] for s in t["sizes"]]
        for i, (label, mine, theirs) in enumerate(cols):
            color = colors[i % len(colors)]
            for name, key, style, marker, who in ((mine, "ours", "-", "o", "ours"),
                                                  (theirs, "libcachesim", "--", "x", "libCacheSim")):
                if name is None:
                    continue
                pts = [(x, s[key].get(name)) for x, s in zip(xs, t["sizes"]) if s[key].get(name) is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style, marker=marker,
                            color=color, label=f"{label} ({who})", markersize=4)
        ax.set_xscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
        ax.set_xlabel("cache size (% of the keys, log scale)")
        ax.set_ylabel("hit ratio")
        ys = [v for s in t["sizes"] for side in ("ours", "libcachesim") for v in s[side].values()]
        ax.set_ylim(max(0.0, min(ys, default=0) - 0.05), min(1.0, max(ys, default=1) + 0.05))
        ax.set_title(f"{t['name']} ({t.get('requests', 0):,} requests)")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(handles)), fontsize="small")
    fig.suptitle("Hit ratio against cache size: ours solid, libCacheSim dashed")
    fig.tight_layout(rect=(0, 0.05 + 0.035 * ((len(handles) + 3) // 4), 1, 1))
    return save_figure(plt, fig, out_dir, FIGURE_NAME)


def save_figure(plt, fig, out_dir: Path, name: str) -> list[Path]:
    """OUT_DIR/NAME.png and .svg (FORMATS) of `fig`, which is then closed; their paths."""
    paths = []
    for fmt in FORMATS:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, dpi=120)
        paths.append(path)
    plt.close(fig)
    return paths


def plot_in(run_dir: Path) -> list[Path]:
    """The figure for run_dir/miss_ratio_curves.json; [] when the run has none."""
    path = run_dir / FILE_NAME
    return plot(load(path), run_dir) if path.exists() else []


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv) or len(argv) > 1:
        print(__doc__.strip(), file=sys.stdout if argv and argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    target = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "results" / "latest"
    path = target / FILE_NAME if target.is_dir() else target
    try:
        doc = load(path)
    except CurveError as e:
        print(f"mrc.py: {e}", file=sys.stderr)
        return 1
    for p in plot(doc, path.parent):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
