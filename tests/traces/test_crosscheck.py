"""The cross-check against libCacheSim, at the reduced size (traces/crosscheck.py, ~10 s).

The same traces (Zipf 0.6/0.8/0.99/1.2, Zipf 0.99 with a one-pass scan, ETC recorded from
bench_client) at 1%, 10% and 30% of the keys go through our library (trace_replay) and through
libCacheSim. Asserted: our LRU and FIFO within 0.2 points of libCacheSim's on every trace and
size (this is what proves the harness), our S3-FIFO within 0.3 points (skipped, saying so, while the
library has no S3-FIFO). The other policies (CLOCK, SIEVE, W-TinyLFU, ARC) are reported, not
asserted: ours may differ by design (our CLOCK sweeps the hash table). Skipped when the
libcachesim package (tests/requirements.txt, installed by scripts/setup.sh) is missing only with
CROSSCHECK_OPTIONAL=1; otherwise a missing package fails the test.
TRACE_REPLAY, TRACE_GEN (and BENCH_CLIENT, CACHE_SERVER for the ETC trace) come from CMake.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphs import mrc

ROOT = Path(__file__).resolve().parents[2]
CROSSCHECK = ROOT / "traces" / "crosscheck.py"

REPLAY = os.environ.get("TRACE_REPLAY", str(ROOT / "build/release/traces/trace_replay"))
TRACES = {"zipf-0.6", "zipf-0.8", "zipf-0.99", "zipf-1.2", "zipf-0.99+scan"}

pytestmark = pytest.mark.skipif(not Path(REPLAY).exists(), reason=f"{REPLAY} is not built")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    try:
        import libcachesim  # noqa: F401
    except ImportError as e:
        # scripts/setup.sh installs it; the cross-check is part of the suite, so a missing
        # package fails (CI must not pass without it) unless explicitly allowed.
        if os.environ.get("CROSSCHECK_OPTIONAL") == "1":
            pytest.skip(f"libcachesim is not installed ({e})")
        pytest.fail(f"libcachesim is not installed ({e}): pip install -r tests/requirements.txt "
                    "(or set CROSSCHECK_OPTIONAL=1 to skip the cross-check)")
    out = tmp_path_factory.mktemp("crosscheck") / "crosscheck.json"
    r = subprocess.run([sys.executable, str(CROSSCHECK), "--json", str(out), "--markdown"],
                       capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stderr
    print(r.stdout)  # the table, for the test log
    return json.loads(out.read_text())


def our_evictors():
    return subprocess.run([REPLAY, "--list-evictors"], capture_output=True, text=True,
                          check=True).stdout.split()


def pairs(doc, ours, theirs):
    """(trace, percent, our hit ratio, libCacheSim's) wherever both exist."""
    out = []
    for t in doc["traces"]:
        for s in t["sizes"]:
            mine = {mrc.normalise(k): v for k, v in s["ours"].items()}
            if ours in mine and theirs in s["libcachesim"]:
                out.append((t["name"], s["percent"], mine[ours], s["libcachesim"][theirs]))
    return out


def test_every_trace_and_size_ran_through_both(study):
    names = {t["name"] for t in study["traces"]}
    assert TRACES <= names
    if os.environ.get("BENCH_CLIENT") and os.environ.get("CACHE_SERVER"):
        assert "etc" in names
    for t in study["traces"]:
        assert [s["percent"] for s in t["sizes"]] == [1, 10, 30]
        for s in t["sizes"]:
            assert set(s["libcachesim"]) == {"LRU", "FIFO", "Clock", "ARC", "Sieve", "S3FIFO",
                                             "S3FIFO-5-50", "WTinyLFU"}
            assert {"lru", "fifo", "clock"} <= set(s["ours"])
            assert all(0 <= v <= 1 for v in [*s["ours"].values(), *s["libcachesim"].values()])


@pytest.mark.parametrize("ours,theirs", [("lru", "LRU"), ("fifo", "FIFO")])
def test_lru_and_fifo_agree_within_0_2_points(study, ours, theirs):
    got = pairs(study, ours, theirs)
    assert len(got) == 3 * len(study["traces"])
    bad = [(t, p, a, b) for t, p, a, b in got if abs(a - b) * 100 > 0.2]
    assert not bad, f"{ours} differs from libCacheSim {theirs} by more than 0.2 points: {bad}"


def test_s3fifo_agrees_within_0_3_points(study):
    if "s3fifo" not in {mrc.normalise(n) for n in our_evictors()}:
        pytest.skip("the cache library has no S3-FIFO evictor yet (trace_replay --list-evictors)")
    got = pairs(study, "s3fifo", "S3FIFO-5-50")  # libCacheSim's S3FIFO with our split
    assert len(got) == 3 * len(study["traces"])
    # 0.3 points: issue 47's bound (its main is a FIFO with reinsertion, as libCacheSim's, since
    # the segment logs; the slot-table CLOCK before them was allowed 1 point).
    bad = [(t, p, a, b) for t, p, a, b in got if abs(a - b) * 100 > 0.3]
    assert not bad, f"our S3-FIFO differs from libCacheSim's by more than 0.3 points: {bad}"


def test_other_policies_are_reported(study, capsys):
    """Not asserted (our CLOCK sweeps the hash table, others may differ by design): printed."""
    for ours, theirs in (("clock", "Clock"), ("sieve", "Sieve"), ("wtinylfu", "WTinyLFU"),
                         ("tinylfu", "WTinyLFU")):
        for t, p, a, b in pairs(study, ours, theirs):
            print(f"{t} {p}% {ours} {a:.4f} libCacheSim {theirs} {b:.4f} ({(a - b) * 100:+.2f} pt)")
    assert "| trace | cache size |" in "\n".join(mrc.markdown_table(study))


def test_the_split_given_to_libcachesim_is_our_default():
    """crosscheck.py configures libCacheSim's S3FIFO with our split; cache::Options is where the
    split lives, so a change there without one here would compare different algorithms."""
    import re

    from traces import crosscheck
    header = (ROOT / "cache" / "cache.hh").read_text()
    small = int(re.search(r"unsigned s3fifo_small_percent = (\d+);", header).group(1))
    ghost = int(re.search(r"unsigned s3fifo_ghost_percent = (\d+);", header).group(1))
    assert (crosscheck.S3FIFO_SMALL_PCT, crosscheck.S3FIFO_GHOST_PCT) == (small, ghost)
    assert crosscheck.S3FIFO_OURS == f"S3FIFO-{small}-{ghost}"
