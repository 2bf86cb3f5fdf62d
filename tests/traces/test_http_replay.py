"""traces/http_replay.py end to end: the same Zipf trace through a real cache_server over HTTP
(look-aside: GET, PUT on a 404) and through the cache library (trace_replay) must give exactly
the same hits for every evictor: the server's cache is the library's, one shard, the same key
bytes. Reduced size (2,000 keys, 5,000 + 10,000 requests); CACHE_SERVER, TRACE_GEN and
TRACE_REPLAY come from CMake.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "traces" / "http_replay.py"
NEEDED = ("CACHE_SERVER", "TRACE_GEN", "TRACE_REPLAY")

pytestmark = pytest.mark.skipif(any(not os.environ.get(v) for v in NEEDED),
                                reason=f"needs {', '.join(NEEDED)} (set by ctest)")


def run(*args, timeout=240):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def test_every_evictor_over_http_matches_the_library(tmp_path):
    out = tmp_path / "replay.json"
    r = run("--keys", 2000, "--warmup", 5000, "--requests", 10000, "--json", out, "--markdown")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    known = subprocess.run([os.environ["TRACE_REPLAY"], "--list-evictors"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert sorted(doc["http"]) == sorted(known)
    for evictor, result in doc["http"].items():
        assert result["requests"] == 10000
        assert result["hits"] == doc["library"][evictor]["hits"], evictor
        assert 0 < result["hit_ratio"] < 1
        # Every miss was followed by a PUT (look-aside), warm-up included.
        assert result["puts"] >= 10000 - result["hits"]
    assert "| lru |" in r.stdout


def test_bad_arguments_exit_2():
    assert run("--evictors", "nosuch").returncode == 2
    assert run("--capacity-pct", "0").returncode == 2
