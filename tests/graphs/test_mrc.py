"""graphs/mrc.py (hit ratio against cache size, ours beside libCacheSim) and its use by
graphs/plot.py and scripts/report.py, from a small hand-written cross-check document."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphs import mrc
from scripts import report
from scripts.harness.procs import python_module

ROOT = Path(__file__).resolve().parents[2]  # scripts/report.py runs from here (python3 -m)
FIXTURE = Path(__file__).parent / "fixture"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def doc(libcachesim=True):
    sizes = [{"percent": p, "capacity": c,
              "ours": {"lru": h, "fifo": h - 0.04, "s3fifo": h + 0.05, "newpolicy": h + 0.01},
              "libcachesim": ({"LRU": h, "FIFO": h - 0.04, "S3FIFO-5-50": h + 0.049, "ARC": h + 0.03,
                               "S3FIFO": h + 0.045}
                              if libcachesim else {})}
             for p, c, h in ((1, 100, 0.40), (10, 1000, 0.70))]
    meta = {"keys": 10000, "zipf_requests": 100000, "value_bytes": 100, "seed": 1,
            "command": "python traces/crosscheck.py --curves",
            "libcachesim": {"available": True, "version": "0.3.5"} if libcachesim
            else {"available": False, "error": "ModuleNotFoundError: No module named 'libcachesim'"}}
    return {"meta": meta, "traces": [{"name": "zipf-0.99", "requests": 100000, "sizes": sizes}],
            "checks": [{"trace": "zipf-0.99", "percent": 10, "ours": "lru", "libcachesim": "LRU",
                        "diff_pts": 0.0, "tolerance_pts": 0.2, "ok": True}] if libcachesim else []}


def test_table_puts_each_policy_beside_libcachesims():
    lines = mrc.markdown_table(doc())
    assert lines[0] == "| trace | cache size | LRU | FIFO | S3-FIFO | ARC | S3-FIFO 10/90 | newpolicy |"
    assert lines[2] == ("| zipf-0.99 | 1% (100) | 0.4000 · 0.4000 | 0.3600 · 0.3600 | 0.4500 · 0.4490 | "
                        "– · 0.4300 | – · 0.4450 | 0.4100 · – |")


def test_family_matching_is_generic():
    assert mrc.family_of_ours("S3-FIFO") == "S3-FIFO" and mrc.family_of_ours("s3_fifo") == "S3-FIFO"
    assert mrc.family_of_ours("w-tinylfu") == "W-TinyLFU" and mrc.family_of_ours("tinylfu") == "W-TinyLFU"
    assert mrc.family_of_ours("sieve") == "SIEVE" and mrc.family_of_ours("mystery") is None


def test_plot_and_report_embed_the_figure_and_table(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIXTURE, d)
    (d / mrc.FILE_NAME).write_text(json.dumps(doc()))
    r = subprocess.run([sys.executable, str(ROOT / "graphs/plot.py"), str(d)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    png = d / f"{mrc.FIGURE_NAME}.png"
    assert str(png) in r.stdout.split() and png.read_bytes().startswith(PNG_SIGNATURE)
    assert (d / f"{mrc.FIGURE_NAME}.svg").exists()
    r = subprocess.run(python_module("report", d), cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    md = (d / "REPORT.md").read_text()
    assert "## Hit ratio against cache size (ours beside libCacheSim)" in md
    assert f"![Hit ratio against cache size]({mrc.FIGURE_NAME}.png)" in md
    assert "| zipf-0.99 | 10% (1,000) | 0.7000 · 0.7000 |" in md
    assert "all 1 pairs agree" in md


def test_without_libcachesim_the_report_says_so(tmp_path):
    (tmp_path / mrc.FILE_NAME).write_text(json.dumps(doc(libcachesim=False)))
    lines = report.render_miss_ratio(tmp_path)
    text = "\n".join(lines)
    assert "libCacheSim was not available (ModuleNotFoundError" in text
    assert "only our evictors are shown" in text
    assert "| zipf-0.99 | 1% (100) | 0.4000 · – |" in text
    assert mrc.plot_in(tmp_path)  # ours alone still draws


def test_skipped_study_and_no_study(tmp_path):
    assert report.render_miss_ratio(tmp_path) == []
    (tmp_path / "miss_ratio_curves.skipped").write_text("traces/crosscheck.py --curves failed\n")
    assert "Not run: traces/crosscheck.py --curves failed" in "\n".join(report.render_miss_ratio(tmp_path))


def test_bad_input_is_a_clear_error(tmp_path):
    f = tmp_path / mrc.FILE_NAME
    f.write_text("{")
    with pytest.raises(mrc.CurveError, match="not valid JSON"):
        mrc.load(f)
    f.write_text(json.dumps({"traces": []}))
    with pytest.raises(mrc.CurveError, match="non-empty"):
        mrc.load(f)
    r = subprocess.run([sys.executable, str(ROOT / "graphs/mrc.py"), str(f)], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("mrc.py: ")
