#!/usr/bin/env python3
"""The same traces through our cache library (trace_replay) and through libCacheSim.

usage: python traces/crosscheck.py [--full | --curves] [--json OUT] [--markdown] [--check]

Traces (written to a scratch directory, binary form, traces/README.md): Zipf with alpha 0.6, 0.8,
0.99 and 1.2 over K keys; Zipf(0.99) with a one-pass scan of K never-repeated keys mixed in (one
after each Zipf request from the first fifth of the trace on); and the ETC workload recorded from
bench_client (--record-trace, one thread, against a cache_server started here; skipped when the
binaries are missing). Cache sizes 1%, 10% and 30% of the keys (of K for the Zipf traces, of the
distinct keys for ETC). Each trace goes through every evictor trace_replay knows (look-aside,
one shard, room for exactly N objects) and through libCacheSim's LRU, FIFO, CLOCK, ARC, SIEVE,
S3-FIFO and W-TinyLFU with N equal-size objects. Every request counts (no warm-up).

  (default)   reduced size for CI: K = 10,000 keys, 100,000 Zipf requests per trace (~10 s)
  --full      K = 100,000 keys, 1,000,000 Zipf requests per trace (~1 minute)
  --curves    the miss-ratio study of the experiment: Zipf(0.99) with and without the scan,
              K = 20,000, 200,000 requests, sizes 0.5..50% (~15 s); draw it with graphs/mrc.py
  --json OUT  write every number (the input of graphs/mrc.py and scripts/report.py)
  --markdown  print the table (each cell: ours · libCacheSim's)
  --check     list every pair; exit 1 unless our LRU and FIFO agree with libCacheSim's within 0.2 points and our
              S3-FIFO (when the library has one) within 0.3 points, on every trace and size
  --work DIR  keep the traces in DIR (default: a temporary directory, removed at the end)

Binaries: $TRACE_REPLAY, $TRACE_GEN, $BENCH_CLIENT, $CACHE_SERVER, else build/release/. Without
the libcachesim package (a test dependency: pip install -r tests/requirements.txt) only our
numbers are produced, and the JSON says why. Exit status: 0 success; 1 a --check tolerance
missed; 2 bad arguments or a tool failed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "graphs"))
sys.path.insert(0, str(ROOT / "scripts"))
import mrc  # noqa: E402
from harness.procs import CacheServer, ServerError  # noqa: E402

VALUE_BYTES = 100
ALPHAS = (0.6, 0.8, 0.99, 1.2)
SIZES_PCT = (1, 10, 30)
CURVE_SIZES_PCT = (0.5, 1, 2, 5, 10, 20, 30, 50)
PRESETS = {"reduced": (10_000, 100_000), "full": (100_000, 1_000_000), "curves": (20_000, 200_000)}
# Our S3-FIFO's split, cache::Options' defaults (cache/cache.hh; a test keeps the two equal):
# small's share and the ghost's window in percent of the cache. libCacheSim's S3FIFO defaults to
# 10 and 90; "S3FIFO" below is that, the field's reference, and S3FIFO_OURS is the same class
# with our split, the counterpart our S3-FIFO must agree with.
S3FIFO_SMALL_PCT, S3FIFO_GHOST_PCT = 5, 50
S3FIFO_OURS = f"S3FIFO-{S3FIFO_SMALL_PCT}-{S3FIFO_GHOST_PCT}"
LIBCACHESIM_POLICIES = ("LRU", "FIFO", "Clock", "ARC", "Sieve", "S3FIFO", S3FIFO_OURS, "WTinyLFU")
# Our evictor (normalised name) that must agree with a libCacheSim policy, and by how many points.
TOLERANCES_PTS = (("lru", "LRU", 0.2), ("fifo", "FIFO", 0.2), ("s3fifo", S3FIFO_OURS, 0.3))


def libcachesim_cache(lcs, name: str, capacity: int):
    """libCacheSim's cache of `name` (a class name, or S3FIFO_OURS) holding `capacity` objects."""
    if name == S3FIFO_OURS:
        return lcs.S3FIFO(capacity, hashpower=20, small_size_ratio=S3FIFO_SMALL_PCT / 100,
                          ghost_size_ratio=S3FIFO_GHOST_PCT / 100)
    return getattr(lcs, name)(capacity, hashpower=20)


class ToolError(Exception):
    pass


def binary(env: str, rel: str) -> Path:
    p = Path(os.environ.get(env) or ROOT / "build/release" / rel)
    return p


def run(cmd: list, timeout: float = 600) -> str:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise ToolError(f"{Path(str(cmd[0])).name} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


# --- traces -------------------------------------------------------------------------------------
def zipf_trace(work: Path, keys: int, requests: int, alpha: float, scan: bool) -> dict:
    name = f"zipf-{alpha:g}" + ("+scan" if scan else "")
    path = work / f"{name}.bin"
    cmd = [binary("TRACE_GEN", "traces/trace_gen"), "--keys", keys, "--alpha", alpha,
           "--requests", requests, "--seed", 1, "-o", path]
    if scan:
        cmd += ["--scan", keys, "--scan-start", requests // 5]
    run(cmd)
    desc = f"Zipf({alpha:g}) over {keys:,} keys" + (f", one-pass scan of {keys:,} new keys" if scan else "")
    return {"name": name, "path": path, "basis": keys, "description": desc}


def start_server(exe: Path, *flags: str) -> CacheServer:
    """cache_server -t 1 [flags] on 127.0.0.1 and an ephemeral port, started by the harness
    (.port, .config_line, .stop()); ToolError when it does not start (traces/http_replay.py
    uses it too)."""
    try:
        return CacheServer(exe, ["-t", "1", *flags], stop_timeout_s=5).start()
    except ServerError as e:
        raise ToolError(str(e)) from e


def etc_trace(work: Path, keys: int, requests: int) -> dict | None:
    """ETC recorded from bench_client (one thread: exact send order), converted to dense ids."""
    client, server_exe = binary("BENCH_CLIENT", "client/bench_client"), binary("CACHE_SERVER", "server/cache_server")
    if not client.exists() or not server_exe.exists():
        print(f"crosscheck: ETC trace skipped ({client} or {server_exe} not built)", file=sys.stderr)
        return None
    text = work / "etc.txt"
    server = start_server(server_exe)
    try:
        run([client, "-p", server.port, "--threads", 1, "-n", requests, "--warmup", 0, "--keys", keys,
             "--no-preload", "--record-trace", text, "-q"])
    finally:
        server.stop()
    path = work / "etc.bin"
    run([binary("TRACE_REPLAY", "traces/trace_replay"), "--convert", path, text])
    return {"name": "etc", "path": path, "basis": None,
            "description": f"bench_client ETC workload, {keys:,} keys, recorded with --record-trace"}


# --- the two simulators -------------------------------------------------------------------------
def ours(path: Path, capacities: list[int], evictors: str | None = None) -> dict:
    """Every evictor trace_replay knows (or the comma-separated `evictors`) at each capacity."""
    cmd = [binary("TRACE_REPLAY", "traces/trace_replay"), "--format", "json", "--value-size", VALUE_BYTES,
           "-c", ",".join(map(str, capacities)), path]
    out = json.loads(run(cmd + (["-e", evictors] if evictors else [])))
    by_cap: dict[int, dict[str, float]] = {}
    for r in out["results"]:
        by_cap.setdefault(r["capacity"], {})[r["evictor"]] = r["hit_ratio"]
    return {"requests": out["requests"], "distinct": out["distinct"], "by_capacity": by_cap}


def libcachesim_status() -> dict:
    try:
        import libcachesim
    except Exception as e:  # ImportError, or a broken install
        return {"available": False, "error": f"{type(e).__name__}: {e}"}
    return {"available": True, "version": getattr(libcachesim, "__version__", "?")}


def theirs(path: Path, capacities: list[int]) -> dict[int, dict[str, float]]:
    import libcachesim as lcs
    params = lcs.ReaderInitParam(binary_fmt_str="<Q", ignore_obj_size=True, trace_start_offset=8)
    params.obj_id_field = 1  # the one field is the object id; every object has size 1
    reader = lcs.TraceReader(str(path), lcs.TraceType.BIN_TRACE, params)
    out: dict[int, dict[str, float]] = {}
    for cap in capacities:
        for name in LIBCACHESIM_POLICIES:
            cache = libcachesim_cache(lcs, name, cap)
            miss_ratio, _ = cache.process_trace(reader)
            out.setdefault(cap, {})[name] = round(1.0 - miss_ratio, 6)
    return out


# --- the study ----------------------------------------------------------------------------------
def study(preset: str, work: Path) -> dict:
    keys, requests = PRESETS[preset]
    if preset == "curves":
        traces = [zipf_trace(work, keys, requests, 0.99, False), zipf_trace(work, keys, requests, 0.99, True)]
        sizes = CURVE_SIZES_PCT
    else:
        traces = [zipf_trace(work, keys, requests, a, False) for a in ALPHAS]
        traces.append(zipf_trace(work, keys, requests, 0.99, True))
        etc = etc_trace(work, keys, requests)
        if etc:
            traces.append(etc)
        sizes = SIZES_PCT
    status = libcachesim_status()
    doc = {"meta": {"preset": preset, "keys": keys, "zipf_requests": requests, "value_bytes": VALUE_BYTES,
                    "seed": 1, "libcachesim": status,
                    "command": "python traces/crosscheck.py" + ("" if preset == "reduced" else f" --{preset}")},
           "traces": []}
    for t in traces:
        first = ours(t["path"], [1], "lru")  # the distinct count, for the ETC basis
        basis = t["basis"] or first["distinct"]
        caps = [max(1, round(basis * p / 100)) for p in sizes]
        mine = ours(t["path"], caps)
        lcs = theirs(t["path"], caps) if status["available"] else {}
        doc["traces"].append({
            "name": t["name"], "description": t["description"], "requests": mine["requests"],
            "distinct": mine["distinct"], "size_basis": basis,
            "sizes": [{"percent": p, "capacity": c, "ours": mine["by_capacity"].get(c, {}),
                       "libcachesim": lcs.get(c, {})} for p, c in zip(sizes, caps)]})
    doc["checks"] = checks(doc)
    return doc


def checks(doc: dict) -> list[dict]:
    """Each asserted pair on each trace and size: the difference in points and the verdict."""
    out = []
    for t in doc["traces"]:
        for s in t["sizes"]:
            names = {mrc.normalise(n): n for n in s["ours"]}
            for mine, theirs_name, tol in TOLERANCES_PTS:
                a, b = s["ours"].get(names.get(mine, "")), s["libcachesim"].get(theirs_name)
                if a is None or b is None:
                    continue
                diff = (a - b) * 100
                out.append({"trace": t["name"], "percent": s["percent"], "ours": names[mine],
                            "libcachesim": theirs_name, "diff_pts": round(diff, 4), "tolerance_pts": tol,
                            "ok": abs(diff) <= tol})
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--full", action="store_true")
    g.add_argument("--curves", action="store_true")
    p.add_argument("--json", type=Path)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--check", action="store_true")
    p.add_argument("--work", type=Path)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    args = p.parse_args(argv)
    preset = "full" if args.full else "curves" if args.curves else "reduced"
    replay = binary("TRACE_REPLAY", "traces/trace_replay")
    if not replay.exists():
        print(f"crosscheck: {replay} is not built (bash scripts/setup.sh)", file=sys.stderr)
        return 2
    try:
        if args.work:
            args.work.mkdir(parents=True, exist_ok=True)
            doc = study(preset, args.work)
        else:
            with tempfile.TemporaryDirectory(prefix="crosscheck-") as tmp:
                doc = study(preset, Path(tmp))
    except (ToolError, subprocess.TimeoutExpired) as e:
        print(f"crosscheck: {e}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    note = mrc.libcachesim_note(doc)
    if note:
        print(f"crosscheck: {note}", file=sys.stderr)
    if args.markdown or not args.json:
        print("\n".join(mrc.markdown_table(doc)))
    bad = [c for c in doc["checks"] if not c["ok"]]
    print(f"crosscheck: {len(doc['checks']) - len(bad)} of {len(doc['checks'])} asserted pairs within "
          "tolerance (LRU, FIFO 0.2 points; S3-FIFO 0.3 points)", file=sys.stderr)
    for c in doc["checks"] if args.check or bad else []:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['trace']:>14} {c['percent']:>4g}%  {c['ours']:>7} vs "
              f"libCacheSim {c['libcachesim']:<7} {c['diff_pts']:+.3f} pt (tolerance {c['tolerance_pts']:g})",
              file=sys.stderr)
    if args.check and bad:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
