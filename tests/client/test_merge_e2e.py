"""End-to-end tests of `bench_client merge` against one real cache_server.

Two bench_client runs with the same flags (as two load machines would make) write a.json and
b.json; `bench_client merge a.json b.json --json m.json` combines them. Checked in Python: every
merged point's requests are the sums, and its p50/p99/p99.9/max equal the nearest-rank percentiles
recomputed here from the union of the two inputs' histogram buckets (client/histogram.cc:
bucket_highest, clamped to [min, max]; the rank in integers as percentile_ns computes it). Runs
of another configuration and files that are not JSON are refused with a non-zero exit status and
a message naming the difference. BENCH_CLIENT and CACHE_SERVER name the binaries (CMake sets
both); the server is stopped at the end, also on failure; every process is bounded in time.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from test_bench_client_e2e import Server, run_bench

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
EXIT_USAGE, EXIT_NOT_MERGEABLE = 1, 5  # bench_client merge --help

pytestmark = [
    pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set"),
    pytest.mark.skipif(not CACHE_SERVER or not Path(CACHE_SERVER).exists(),
                       reason="CACHE_SERVER not set (the cache_server target is not built)"),
]

FLAGS = ["--threads", "1,2", "-n", "3000", "--warmup", "200", "--keys", "2000", "-q"]


@pytest.fixture(scope="module")
def server():
    srv = Server([CACHE_SERVER, "-p", "0"])
    try:
        yield srv
    finally:
        srv.stop()


def run(server, out, *flags):
    r = run_bench("-p", server.port, *(flags or FLAGS), "--json", out, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(Path(out).read_text())


def merge(*args):
    return subprocess.run([BENCH, "merge", *map(str, args)], capture_output=True, text=True,
                          timeout=60)


@pytest.fixture(scope="module")
def two_runs(server, tmp_path_factory):
    d = tmp_path_factory.mktemp("merge")
    return d, run(server, d / "a.json"), run(server, d / "b.json")


def bucket_highest(index):
    if index < 128:
        return index
    shift = index // 128 - 1
    return ((128 + index % 128) << shift) + (1 << shift) - 1


def percentile_ns(buckets, count, lo, hi, p):
    """Histogram::percentile_ns: nearest rank in integers (p in millionths), the bucket's highest
    value clamped to [lo, hi]; hi when the rank falls among the values above the range."""
    pm = round(p * 10_000)
    rank = (count // 1_000_000) * pm + ((count % 1_000_000) * pm + 999_999) // 1_000_000
    rank = max(1, min(count, rank))
    seen = 0
    for index in sorted(buckets):
        if index == 4352:  # kAboveRangeIndex: after every bucket
            continue
        seen += buckets[index]
        if seen >= rank:
            return min(max(bucket_highest(index), lo), hi)
    return hi


def test_merged_points_are_sums_and_percentiles_of_the_union(two_runs):
    d, a, b = two_runs
    out = d / "m.json"
    r = merge(d / "a.json", d / "b.json", "--json", out)
    assert r.returncode == 0, r.stderr
    assert "# merged 2 runs:" in r.stdout
    m = json.loads(out.read_text())
    assert [p["threads"] for p in m["points"]] == [1, 2]
    assert m["meta"]["workload"] == a["meta"]["workload"]
    assert m["meta"]["mode"] == a["meta"]["mode"]
    assert [e["file"] for e in m["meta"]["merged_from"]] == [str(d / "a.json"), str(d / "b.json")]
    assert [e["date_utc"] for e in m["meta"]["merged_from"]] == [a["meta"]["date_utc"],
                                                                  b["meta"]["date_utc"]]
    for pa, pb, pm in zip(a["points"], b["points"], m["points"]):
        assert pm["requests"] == pa["requests"] + pb["requests"]
        assert pm["requests"] == 2 * 3000 * pm["threads"]
        assert pm["errors"] == pa["errors"] + pb["errors"] == 0
        for k in ("gets", "get_hits", "sets", "deletes"):
            assert pm[k] == pa[k] + pb[k], k
        assert pm["duration_s"] == max(pa["duration_s"], pb["duration_s"])
        assert pm["throughput_rps"] == pytest.approx(pa["throughput_rps"] + pb["throughput_rps"],
                                                     abs=0.002)
        assert pm["hit_rate"] == pytest.approx(pm["get_hits"] / pm["gets"], abs=1e-9)
        buckets = {}
        for h in (pa["histogram"], pb["histogram"]):
            for index, n in h["buckets"]:
                buckets[index] = buckets.get(index, 0) + n
        count = pa["histogram"]["count"] + pb["histogram"]["count"]
        lo = min(pa["histogram"]["min"], pb["histogram"]["min"])
        hi = max(pa["histogram"]["max"], pb["histogram"]["max"])
        h = pm["histogram"]
        assert (h["count"], h["min"], h["max"]) == (count, lo, hi)
        assert h["sum"] == pa["histogram"]["sum"] + pb["histogram"]["sum"]
        assert sorted(map(tuple, h["buckets"])) == sorted(buckets.items())
        for p, field in ((50, "p50_us"), (99, "p99_us"), (99.9, "p999_us"), (100, "max_us")):
            want = round(percentile_ns(buckets, count, lo, hi, p) / 1000, 3)
            assert pm[field] == want, (field, pm[field], want)
        assert pm["max_us"] == round(hi / 1000, 3)
        assert pm["min_us"] == round(lo / 1000, 3)
        assert pm["mean_us"] == pytest.approx(h["sum"] / count / 1000, abs=0.0011)
        # The per-second p99 cannot be merged exactly: null, never an average.
        assert pm["series"] and all(s["p99_us"] is None for s in pm["series"])
        assert sum(s["requests"] for s in pm["series"]) == pm["requests"]


def test_the_merged_file_merges_again_and_csv_is_written(two_runs):
    d, a, _ = two_runs
    r = merge(d / "a.json", d / "b.json", "--json", d / "ab.json", "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    r = merge(d / "ab.json", d / "a.json", "--json", d / "aba.json", "--csv", d / "aba.csv")
    assert r.returncode == 0, r.stderr
    m = json.loads((d / "aba.json").read_text())
    assert len(m["meta"]["merged_from"]) == 3
    assert [p["requests"] for p in m["points"]] == [3 * 3000 * p["threads"] for p in a["points"]]
    rows = (d / "aba.csv").read_text().splitlines()
    assert len(rows) == 1 + len(m["points"])


def test_another_configuration_is_refused(server, two_runs):
    d, _, _ = two_runs
    other = ["--threads", "1,2", "-n", "3000", "--warmup", "200", "--keys", "2000", "-q",
             "--workload", "mixed"]
    run(server, d / "w.json", *other)
    r = merge(d / "a.json", d / "w.json", "--json", d / "x.json")
    assert r.returncode == EXIT_NOT_MERGEABLE, r.stderr
    assert "meta.workload.name differs" in r.stderr, r.stderr
    assert "a.json" in r.stderr and "w.json" in r.stderr
    assert not (d / "x.json").exists()

    run(server, d / "t.json", "--threads", "1,3", *FLAGS[2:])
    r = merge(d / "a.json", d / "t.json")
    assert r.returncode == EXIT_NOT_MERGEABLE, r.stderr
    assert "meta.mode.thread_counts differs" in r.stderr, r.stderr


def test_bad_inputs_are_refused(two_runs, tmp_path):
    d, _, _ = two_runs
    junk = tmp_path / "junk.json"
    junk.write_text("threads,requests\n1,2\n")
    r = merge(d / "a.json", junk)
    assert r.returncode == EXIT_NOT_MERGEABLE
    assert f"{junk}: not valid JSON" in r.stderr, r.stderr

    old = json.loads((d / "a.json").read_text())
    for p in old["points"]:
        del p["histogram"]  # as an older bench_client wrote it
    (tmp_path / "old.json").write_text(json.dumps(old))
    r = merge(d / "a.json", tmp_path / "old.json")
    assert r.returncode == EXIT_NOT_MERGEABLE
    assert "points[0].histogram is missing" in r.stderr, r.stderr

    r = merge(d / "a.json", tmp_path / "absent.json")
    assert r.returncode == EXIT_NOT_MERGEABLE
    assert "cannot be read" in r.stderr

    r = merge(d / "a.json")
    assert r.returncode == EXIT_USAGE
    assert "at least two" in r.stderr

    r = merge("--help")
    assert r.returncode == 0 and "Usage: bench_client merge" in r.stdout
