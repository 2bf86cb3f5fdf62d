#!/usr/bin/env python3
"""One trace end to end over HTTP: a look-aside client against cache_server, per evictor,
beside the same trace through the cache library (trace_replay) and through libCacheSim.

usage: python traces/http_replay.py [options]

The trace is Zipf(--alpha) over --keys keys (trace_gen, seed --seed): --warmup requests that
are replayed but not counted, then --requests that are. For each evictor a fresh
`cache_server -t 1 -e EVICTOR` holds exactly N objects (N = --capacity-pct of the keys): one
shard, maxmem = N x (8 + 100) bytes, since only key and value bytes count and every key is the
8 bytes of its object id (percent-encoded in the URL, so the server stores the very bytes
trace_replay uses). The client sends GET /key/{k} on one keep-alive connection; on a 404 it
sends PUT /key/{k} with a 100-byte value (look-aside). The hit ratio counts the GETs after the
warm-up. libCacheSim (when installed) replays the same ids with N unit-size objects, counting
the same window.

  --evictors LIST     comma-separated (default: every one trace_replay --list-evictors names)
  --keys K            distinct keys (default 20000)
  --capacity-pct P    cache size in percent of the keys (default 10)
  --alpha A           Zipf exponent (default 0.99)
  --warmup W          requests replayed before counting (default 100000)
  --requests R        requests counted (default 200000)
  --seed S            trace seed (default 1)
  --json OUT          write every number
  --markdown          print a table: evictor, over HTTP, library, libCacheSim's same policy

Binaries: $CACHE_SERVER, $TRACE_GEN, $TRACE_REPLAY, else build/release/. Exit status: 0 done;
1 the HTTP and library hit ratios of an evictor differ (they must be equal); 2 bad arguments or
a tool failed. About 20 s per evictor at the defaults.
"""
from __future__ import annotations

import argparse
import json
import re
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck import (S3FIFO_OURS, ToolError, binary, libcachesim_cache,  # noqa: E402
                        run, start_server)  # (one copy of each)
VALUE = b"v" * 100
KEY_BYTES = 8
# Our evictor -> libCacheSim's policy of the same algorithm (None: no counterpart there).
LIBCACHESIM_NAMES = {"fifo": "FIFO", "lru": "LRU", "clock": "Clock", "s3fifo": S3FIFO_OURS,
                     "sieve": "Sieve", "tinylfu": "WTinyLFU"}
# Also reported: the field's best, and S3-FIFO with libCacheSim's own split (10%, 90%).
LIBCACHESIM_EXTRA = ("ARC", "S3FIFO", "WTinyLFU")


def read_ids(path: Path) -> list[int]:
    data = path.read_bytes()
    if data[:8] != b"CCTRACE1" or (len(data) - 8) % 8:
        raise ToolError(f"{path}: not a binary trace")
    return [i for (i,) in struct.iter_unpack("<Q", data[8:])]


def url_key(obj_id: int) -> bytes:
    return b"".join(b"%%%02X" % b for b in struct.pack("<Q", obj_id))


def one_shard_server(exe: Path, evictor: str, maxmem: int):
    """cache_server -t 1 -e EVICTOR holding exactly maxmem bytes in one shard, started."""
    # --max-value = maxmem: the server then keeps one shard (a shard must hold the largest
    # value), so the eviction order is global, as in the library replay.
    server = start_server(exe, "-e", evictor, "-m", str(maxmem), "--max-value", str(maxmem))
    if " shards=1 " not in server.config_line:
        server.stop()
        raise ToolError(f"cache_server did not keep one shard: {server.config_line}")
    return server


class Client:
    """One keep-alive connection; reads exactly one response per request."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def request(self, data: bytes) -> int:
        self.sock.sendall(data)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = int(head[9:12])
        m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.IGNORECASE)
        length = int(m.group(1)) if m else 0
        while len(self.buf) < length:
            self._fill()
        self.buf = self.buf[length:]
        return status

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ToolError("the server closed the connection")
        self.buf += chunk

    def close(self):
        self.sock.close()


def over_http(exe: Path, evictor: str, ids: list[int], capacity: int, warmup: int) -> dict:
    server = one_shard_server(exe, evictor, capacity * (KEY_BYTES + len(VALUE)))
    hits = counted = puts = 0
    try:
        client = Client(server.port)
        put_tail = b" HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(VALUE) + VALUE
        for i, obj in enumerate(ids):
            key = url_key(obj)
            status = client.request(b"GET /key/" + key + b" HTTP/1.1\r\n\r\n")
            if status == 404:
                if client.request(b"PUT /key/" + key + put_tail) not in (201, 204):
                    raise ToolError(f"PUT refused for request {i}")
                puts += 1
            elif status != 200:
                raise ToolError(f"GET answered {status} for request {i}")
            if i >= warmup:
                counted += 1
                hits += status == 200
        client.close()
    finally:
        server.stop()
    return {"hits": hits, "requests": counted, "hit_ratio": round(hits / counted, 6), "puts": puts}


def library(trace: Path, evictors: list[str], capacity: int, warmup: int) -> dict[str, dict]:
    out = json.loads(run([binary("TRACE_REPLAY", "traces/trace_replay"), "--format", "json",
                          "-e", ",".join(evictors), "-c", capacity, "--warmup", warmup, trace]))
    return {r["evictor"]: {"hits": r["hits"], "requests": r["requests"], "hit_ratio": r["hit_ratio"]}
            for r in out["results"]}


def libcachesim(ids: list[int], policies: list[str], capacity: int, warmup: int) -> dict:
    try:
        import libcachesim as lcs
    except Exception as e:  # not installed: a test dependency only
        return {"error": f"{type(e).__name__}: {e}"}
    out = {}
    for name in policies:
        cache = libcachesim_cache(lcs, name, capacity)
        req = lcs.Request()
        req.obj_size = 1
        hits = 0
        for i, obj in enumerate(ids):
            req.obj_id = obj
            hit = cache.get(req)
            if i >= warmup:
                hits += bool(hit)
        out[name] = round(hits / (len(ids) - warmup), 6)
    return out


def markdown(doc: dict) -> str:
    m = doc["meta"]
    lines = [f"Zipf({m['alpha']:g}) over {m['keys']:,} keys, cache of {m['capacity']:,} objects "
             f"({m['capacity_pct']:g}%), {m['warmup']:,} warm-up then {m['requests']:,} counted "
             f"requests (GET, PUT on a miss), seed {m['seed']}.", "",
             "| policy | ours, end to end over HTTP | ours, library (trace_replay) | libCacheSim |",
             "|---|---:|---:|---:|"]
    lcs = doc["libcachesim"]
    for e, r in doc["http"].items():
        theirs = lcs.get(LIBCACHESIM_NAMES.get(e, ""), "–") if "error" not in lcs else "–"
        lines.append(f"| {e} | {r['hit_ratio']:.4f} | {doc['library'][e]['hit_ratio']:.4f} | "
                     + (f"{theirs:.4f}" if isinstance(theirs, float) else theirs) + " |")
    if "error" not in lcs:
        for name in LIBCACHESIM_EXTRA:
            if name in lcs and name not in [LIBCACHESIM_NAMES.get(e) for e in doc["http"]]:
                lines.append(f"| libCacheSim {name} | – | – | {lcs[name]:.4f} |")
    else:
        lines.append(f"\nlibCacheSim not run: {lcs['error']}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--evictors")
    p.add_argument("--keys", type=int, default=20_000)
    p.add_argument("--capacity-pct", type=float, default=10)
    p.add_argument("--alpha", type=float, default=0.99)
    p.add_argument("--warmup", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args(argv)
    if a.keys < 1 or a.requests < 1 or a.warmup < 0 or not 0 < a.capacity_pct <= 100:
        print("http_replay: --keys and --requests must be >= 1, --warmup >= 0, "
              "--capacity-pct in (0, 100]", file=sys.stderr)
        return 2
    capacity = max(1, round(a.keys * a.capacity_pct / 100))
    try:
        exe = binary("CACHE_SERVER", "server/cache_server")
        known = run([binary("TRACE_REPLAY", "traces/trace_replay"), "--list-evictors"]).split()
        evictors = a.evictors.split(",") if a.evictors else known
        unknown = [e for e in evictors if e not in known]
        if unknown:
            print(f"http_replay: unknown evictor(s) {', '.join(unknown)} (known: {', '.join(known)})",
                  file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="http-replay-") as work:
            trace = Path(work) / "trace.bin"
            run([binary("TRACE_GEN", "traces/trace_gen"), "--keys", a.keys, "--alpha", a.alpha,
                 "--requests", a.warmup + a.requests, "--seed", a.seed, "-o", trace])
            ids = read_ids(trace)
            lib = library(trace, evictors, capacity, a.warmup)
            http = {e: over_http(exe, e, ids, capacity, a.warmup) for e in evictors}
        policies = sorted({LIBCACHESIM_NAMES[e] for e in evictors if e in LIBCACHESIM_NAMES}
                          | set(LIBCACHESIM_EXTRA) | {"Sieve"})
        lcs = libcachesim(ids, policies, capacity, a.warmup)
    except (ToolError, OSError, subprocess.TimeoutExpired) as e:
        print(f"http_replay: {e}", file=sys.stderr)
        return 2
    doc = {"meta": {"keys": a.keys, "capacity": capacity, "capacity_pct": a.capacity_pct,
                    "alpha": a.alpha, "warmup": a.warmup, "requests": a.requests, "seed": a.seed,
                    "value_bytes": len(VALUE)},
           "http": http, "library": lib, "libcachesim": lcs}
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=2) + "\n")
    if a.markdown:
        print(markdown(doc))
    mismatched = [e for e in evictors if http[e]["hits"] != lib.get(e, {}).get("hits")]
    for e in mismatched:
        print(f"http_replay: {e}: {http[e]['hits']} hits over HTTP but {lib.get(e, {}).get('hits')} "
              "in the library replay (they must be equal)", file=sys.stderr)
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
