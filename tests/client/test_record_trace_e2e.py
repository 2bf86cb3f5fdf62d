"""bench_client --record-trace against the real cache_server: one key per request sent (warm-up
included, preload excluded), the text and binary forms of the same run agree, the trace replays
through trace_replay, and bad uses are refused. BENCH_CLIENT, CACHE_SERVER and TRACE_REPLAY come
from CMake."""
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from harness.procs import CacheServer  # noqa: E402

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
REPLAY = os.environ.get("TRACE_REPLAY", "")

pytestmark = pytest.mark.skipif(not BENCH or not Path(BENCH).exists() or not CACHE_SERVER
                                or not Path(CACHE_SERVER).exists(),
                                reason="BENCH_CLIENT and CACHE_SERVER must be built")


@pytest.fixture
def port():
    with CacheServer(CACHE_SERVER, ["-t", "1"], stop_timeout_s=5, new_session=False) as srv:
        yield srv.port


def bench(*args):
    return subprocess.run([BENCH, *map(str, args)], capture_output=True, text=True, timeout=90)


RUN = ("--threads", "1,2", "-n", "400", "--warmup", "50", "--keys", "300", "-q")


def test_one_line_per_request_sent_and_both_forms_agree(port, tmp_path):
    text, binary, result = tmp_path / "etc.txt", tmp_path / "etc.bin", tmp_path / "r.json"
    r = bench("-p", port, *RUN, "--record-trace", text, "--json", result)
    assert r.returncode == 0, r.stderr
    keys = text.read_text().splitlines()
    # 1 thread then 2 threads, each thread 50 warm-up + 400 measured requests; no preload PUTs.
    assert len(keys) == (1 + 2) * (50 + 400)
    points = json.loads(result.read_text())["points"]
    assert sum(p["requests"] for p in points) == (1 + 2) * 400
    assert all(re.fullmatch(r"[km][0-9A-Za-z]+", k) for k in keys)
    assert len(set(keys)) > 100

    r = bench("-p", port, *RUN, "--record-trace", binary)
    assert r.returncode == 0, r.stderr
    raw = binary.read_bytes()
    assert raw[:8] == b"CCTRACE1" and len(raw) == 8 + 8 * len(keys)
    ids = struct.unpack(f"<{len(keys)}Q", raw[8:])
    # The same seed gives the same requests: key <-> id is one to one, position by position.
    pairs = set(zip(keys, ids))
    assert len(pairs) == len(set(keys)) == len(set(ids))
    assert all((k[0] == "m") == (i & 1 == 1) for k, i in pairs)  # cold keys have odd ids


def test_single_thread_trace_is_the_send_order_and_replays(port, tmp_path):
    trace = tmp_path / "one.txt"
    r = bench("-p", port, "--threads", "1", "-n", "2000", "--warmup", "0", "--keys", "500",
              "--record-trace", trace, "-q")
    assert r.returncode == 0, r.stderr
    again = tmp_path / "again.txt"
    bench("-p", port, "--threads", "1", "-n", "2000", "--warmup", "0", "--keys", "500",
          "--record-trace", again, "-q")
    assert trace.read_text() == again.read_text()  # deterministic per seed
    if REPLAY and Path(REPLAY).exists():
        out = subprocess.run([REPLAY, "-e", "lru", "-c", "100%", "--format", "json", str(trace)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["requests"] == 2000
        # Room for every key: only first references miss.
        assert doc["results"][0]["hits"] == 2000 - doc["distinct"]


def test_bad_uses_are_refused(port, tmp_path):
    r = bench("-p", port, "--threads", "1", "-n", "10", "--record-trace", "/nonexistent/dir/t.txt", "-q")
    assert r.returncode == 4
    assert "--record-trace: /nonexistent/dir/t.txt: cannot write" in r.stderr
    assert "threads" not in r.stdout  # refused before the run
    r = bench("--path", "/x", "--record-trace", tmp_path / "t.txt")
    assert r.returncode == 1 and "fixed-get has none" in r.stderr
    r = bench("--record-trace")
    assert r.returncode == 1 and "--record-trace needs a file name" in r.stderr
    assert "--record-trace FILE" in bench("--help").stdout
