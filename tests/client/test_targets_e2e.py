"""End-to-end tests of `bench_client --targets` against three real cache_server processes.

bench_client places every request on the node nginx's `hash $cache_key consistent` would pick
(client/placement.hh) and sends it there directly. These tests start three cache_server on
127.0.0.1 (ephemeral ports), run bench_client with --targets, and check:
  - every node got requests, the per-node requests add up to the point's, no errors;
  - each node's /stats agrees (it stored its share of the preload and served GETs);
  - after a put-all run, every key is stored on exactly the node the Python model of nginx's ring
    below names (GET /key/K on every node: 200 only on the owner);
  - the point's p99 is the percentile of the sum of the nodes' histograms.
BENCH_CLIENT and CACHE_SERVER name the binaries (CMake sets both). Every server started is
stopped at the end, also on failure.
"""
import bisect
import json
import os
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest

from test_bench_client_e2e import Server, run_bench

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
WEIGHT = 10  # bench_client's --target-weight default

pytestmark = [
    pytest.mark.skipif(not BENCH or not Path(BENCH).exists(), reason="BENCH_CLIENT not set"),
    pytest.mark.skipif(not CACHE_SERVER or not Path(CACHE_SERVER).exists(),
                       reason="CACHE_SERVER not set (the cache_server target is not built)"),
]


# --- the model: nginx 1.22's hash ... consistent (verified against a real nginx) -----------------
def ring(nodes, weight=WEIGHT):
    points = []
    for node in nodes:
        host, port = node.rsplit(":", 1)
        base = host.encode() + b"\0" + port.encode()
        prev = 0
        for _ in range(160 * weight):
            h = zlib.crc32(base + prev.to_bytes(4, "little"))
            points.append((h, node))
            prev = h
    points.sort(key=lambda p: p[0])
    out = []
    for p in points:
        if not out or out[-1][0] != p[0]:
            out.append(p)
    return out


def owner(points, key):
    hashes = [p[0] for p in points]
    i = bisect.bisect_left(hashes, zlib.crc32(key.encode()))
    return points[i % len(points)][1]


# --- bench_client's key names (client/workload.cc, KeySpace::write_key) with --key-size ---------
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
COLD_SALT = 0x636f6c642d6b6579
M64 = (1 << 64) - 1


def mix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def key_name(idx, keys, size):
    width, largest = 1, keys - 1
    while largest >= 62:
        largest //= 62
        width += 1
    size = max(size, 1 + width)
    out = ["k"] + [""] * (size - 1)
    rest = idx
    for i in range(width, 0, -1):
        out[i] = ALPHABET[rest % 62]
        rest //= 62
    pad = mix64(idx ^ COLD_SALT)
    for i in range(1 + width, size):
        out[i] = ALPHABET[pad % 62]
        pad //= 62
        if pad < 62:
            pad = mix64(pad + i)
    return "".join(out)


# --- the servers -----------------------------------------------------------------------------------
@pytest.fixture
def nodes():
    servers = []
    try:
        for _ in range(3):
            servers.append(Server([CACHE_SERVER, "-p", "0"]))
        yield servers
    finally:
        for s in servers:
            s.stop()


def addr(server):
    return f"127.0.0.1:{server.port}"


def http(address, method, path):
    req = urllib.request.Request(f"http://{address}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def stats(address):
    status, body = http(address, "GET", "/stats")
    assert status == 200, (address, status)
    return json.loads(body)


def run_targets(servers, tmp_path, *extra, name="out"):
    out = tmp_path / f"{name}.json"
    targets = ",".join(addr(s) for s in servers)
    r = run_bench("--targets", targets, "--json", out, *extra, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r


def check_nodes_add_up(point, servers):
    nodes = point["nodes"]
    assert [n["target"] for n in nodes] == [addr(s) for s in servers]
    for n in nodes:
        assert n["requests"] > 0, n["target"]
        assert n["errors"] == 0, n
        assert n["histogram"]["count"] >= n["requests"]
        assert n["throughput_rps"] == pytest.approx(n["requests"] / point["duration_s"], rel=0.01)
        assert n["latency"]["p50_us"] <= n["latency"]["p99_us"] <= n["latency"]["max_us"]
    assert sum(n["requests"] for n in nodes) == point["requests"]
    assert sum(n["errors"] for n in nodes) == point["errors"] == 0, point["errors_by_code"]


def test_default_workload_spreads_over_the_nodes_as_placed(nodes, tmp_path):
    doc, r = run_targets(nodes, tmp_path, "-n", 2000, "--threads", 2, "--warmup", 200,
                         "--server-pid", ",".join(str(s.pid) for s in nodes))
    meta = doc["meta"]
    assert meta["targets"] == [addr(s) for s in nodes]
    assert set(meta["server_stats_by_target"]) == set(meta["targets"])
    assert meta["server_stats"] == meta["server_stats_by_target"][addr(nodes[0])]
    assert meta["server_pids"] == [s.pid for s in nodes]
    assert meta["mode"]["target_weight"] == WEIGHT
    (point,) = doc["points"]
    assert point["requests"] == 2 * 2000
    check_nodes_add_up(point, nodes)
    assert 0.7 <= point["hit_rate"] <= 0.9, point["hit_rate"]  # the preload went to the owners
    for n in point["nodes"]:
        assert n["server_cpu_pct"] is not None and n["server_cpu_pct"] >= 0
    # The table: one indented line per node after the point's row.
    node_lines = [l for l in r.stdout.splitlines() if l.startswith("  node ")]
    assert [l.split()[1] for l in node_lines] == [addr(s) for s in nodes]
    # Each node stored its share of the 10,000 preloaded keys and served GETs and SETs.
    per_node = {addr(s): stats(addr(s)) for s in nodes}
    assert sum(s["items"] for s in per_node.values()) == 10_000
    for a, s in per_node.items():
        assert s["items"] > 10_000 / 3 * 0.5, (a, s["items"])  # weight 10: near a third each
        assert s["hits"] + s["misses"] > 0, a


def test_put_all_stores_every_key_on_its_owner_only(nodes, tmp_path):
    keys, size = 300, 12
    doc, _ = run_targets(nodes, tmp_path, "--workload", "put-all", "--keys", keys, "--key-size",
                         size, "-n", 1500, "--threads", 2, "--warmup", 0,
                         "--connections-per-thread", 2)
    (point,) = doc["points"]
    check_nodes_add_up(point, nodes)
    points = ring([addr(s) for s in nodes])
    held = {addr(s): 0 for s in nodes}
    for idx in range(keys):
        key = key_name(idx, keys, size)
        holders = [addr(s) for s in nodes if http(addr(s), "GET", f"/key/{key}")[0] == 200]
        assert holders in ([], [owner(points, key)]), (key, holders, owner(points, key))
        for h in holders:
            held[h] += 1
    # 3000 uniform PUTs over 300 keys: all but a few keys were written.
    assert sum(held.values()) >= keys * 0.97, held
    # Nothing else is stored anywhere: each node's items are exactly its keys of the model.
    for s in nodes:
        assert stats(addr(s))["items"] == held[addr(s)], addr(s)


def percentile_from_buckets(buckets, count, lo, hi, p):
    """Nearest rank over the buckets; the bucket's highest value clamped to [lo, hi]."""
    rank = max(1, min(count, -(-count * round(p * 10_000) // 1_000_000)))
    seen = 0
    for index, n in sorted(buckets.items()):
        seen += n
        if seen >= rank:
            if index < 128:
                highest = index
            else:
                shift = index // 128 - 1
                highest = ((128 + index % 128) << shift) + (1 << shift) - 1
            return min(max(highest, lo), hi)
    return hi


def test_merged_p99_is_the_percentile_of_the_summed_node_histograms(nodes, tmp_path):
    doc, _ = run_targets(nodes, tmp_path, "-n", 3000, "--threads", 2, "--warmup", 100,
                         "--workload", "mixed")
    (point,) = doc["points"]
    check_nodes_add_up(point, nodes)
    summed, count, lo, hi = {}, 0, None, 0
    for n in point["nodes"]:
        h = n["histogram"]
        for index, c in h["buckets"]:
            summed[index] = summed.get(index, 0) + c
        count += h["count"]
        lo = h["min"] if lo is None else min(lo, h["min"])
        hi = max(hi, h["max"])
    merged = point["histogram"]
    assert count == merged["count"]
    assert sorted(summed.items()) == sorted(map(tuple, merged["buckets"]))
    assert (lo, hi) == (merged["min"], merged["max"])
    assert sum(n["histogram"]["sum"] for n in point["nodes"]) == merged["sum"]
    for p, field in ((50, "p50_us"), (99, "p99_us"), (99.9, "p999_us")):
        ns = percentile_from_buckets(summed, count, lo, hi, p)
        assert point[field] == pytest.approx(ns / 1000, abs=0.0011), field
    # Never an average of the nodes' p99s (unless they happen to agree).
    assert point["p99_us"] == pytest.approx(
        percentile_from_buckets(summed, count, lo, hi, 99) / 1000, abs=0.0011)


def test_flag_errors(nodes):
    targets = ",".join(addr(s) for s in nodes)
    for args, message in [
        (["--targets", targets, "-p", "8080"], "cannot be combined with --port"),
        (["--targets", targets, "--path", "/x"], "fixed-get has none"),
        (["--targets", f"{targets},{addr(nodes[0])}"], "given twice"),
        (["--targets", "[::1]:8080"], "IPv6"),
        (["--targets", targets, "--server-pid", str(nodes[0].pid)], "one PID per target"),
        (["--target-weight", "10"], "--targets only"),
    ]:
        r = run_bench(*args, timeout=30)
        assert r.returncode == 1, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)


def test_an_unreachable_node_is_named(nodes, tmp_path):
    dead = nodes[2]
    dead_addr = addr(dead)
    dead.stop()
    r = run_bench("--targets", ",".join(addr(s) for s in nodes), "-n", 100, "--threads", 1,
                  timeout=60)
    assert r.returncode == 2, r.stderr
    assert dead_addr in r.stderr
