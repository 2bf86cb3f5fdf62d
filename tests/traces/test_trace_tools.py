"""trace_replay and trace_gen end to end: help, output formats, known hit counts on hand-made
traces, conversion, and clear errors (exit 2) for bad flags, unknown evictors, missing and
malformed traces. TRACE_REPLAY and TRACE_GEN name the binaries (set by CMake)."""
import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPLAY = os.environ.get("TRACE_REPLAY", str(ROOT / "build/release/traces/trace_replay"))
GEN = os.environ.get("TRACE_GEN", str(ROOT / "build/release/traces/trace_gen"))

pytestmark = pytest.mark.skipif(not (Path(REPLAY).exists() and Path(GEN).exists()),
                                reason="trace_replay/trace_gen are not built")


def tool(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=60)


def binary_trace(path, ids):
    path.write_bytes(b"CCTRACE1" + struct.pack(f"<{len(ids)}Q", *ids))
    return path


def test_help_lists_the_library_evictors():
    r = tool(REPLAY, "--help")
    assert r.returncode == 0
    for name in tool(REPLAY, "--list-evictors").stdout.split():
        assert name in r.stdout
    assert tool(GEN, "--help").returncode == 0


def test_lru_and_fifo_hit_counts_on_a_hand_made_trace(tmp_path):
    # Capacity 2, a b a c b a: LRU hits once, FIFO twice (tests/traces/trace_test.cc explains).
    trace = tmp_path / "t.txt"
    trace.write_text("a\nb\na\nc\nb\na\n")
    r = tool(REPLAY, "-e", "lru,fifo", "-c", "2", "--format", "json", trace)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["requests"] == 6 and doc["distinct"] == 3
    hits = {x["evictor"]: x["hits"] for x in doc["results"]}
    assert hits == {"lru": 1, "fifo": 2}
    tsv = tool(REPLAY, "-e", "lru", "-c", "2", trace).stdout.splitlines()
    assert tsv[1] == "evictor\tcapacity\trequests\thits\thit_ratio"
    assert tsv[2] == "lru\t2\t6\t1\t0.166667"


def test_text_and_binary_forms_replay_alike(tmp_path):
    ids = [1, 2, 1, 3, 2, 1, 4, 1, 2]
    text = tmp_path / "t.txt"
    text.write_text("".join(f"key{i}\n" for i in ids))
    binary = binary_trace(tmp_path / "t.bin", ids)
    a = json.loads(tool(REPLAY, "-e", "lru,fifo", "-c", "2,3", "--format", "json", text).stdout)
    b = json.loads(tool(REPLAY, "-e", "lru,fifo", "-c", "2,3", "--format", "json", binary).stdout)
    assert [x["hits"] for x in a["results"]] == [x["hits"] for x in b["results"]]


def test_percent_capacity_warmup_and_convert(tmp_path):
    trace = binary_trace(tmp_path / "t.bin", list(range(100)) * 2)
    doc = json.loads(tool(REPLAY, "-e", "lru", "-c", "10%,100%", "--warmup", "100", "--format", "json",
                          trace).stdout)
    assert [(x["capacity"], x["requests"], x["hits"]) for x in doc["results"]] == [(10, 100, 0), (100, 100, 100)]
    out = tmp_path / "dense.bin"
    assert tool(REPLAY, "--convert", out, binary_trace(tmp_path / "s.bin", [70, 5, 70])).returncode == 0
    assert out.read_bytes() == b"CCTRACE1" + struct.pack("<3Q", 0, 1, 0)


@pytest.mark.parametrize("content,message", [
    (b"a\n\nb\n", "t.txt:2: empty key"),
    (b"a\n" + b"x" * 251 + b"\n", "t.txt:2: key of 251 bytes"),
    (b"", "the trace has no requests"),
    (b"CCTRACE1" + b"\x01" * 12, "binary trace truncated"),
])
def test_malformed_traces_exit_2_with_a_clear_error(tmp_path, content, message):
    trace = tmp_path / "t.txt"
    trace.write_bytes(content)
    r = tool(REPLAY, trace)
    assert r.returncode == 2
    assert message in r.stderr and r.stderr.startswith("trace_replay: ")


@pytest.mark.parametrize("args,message", [
    (["-e", "bogus"], "unknown evictor 'bogus' (known: "),
    (["-c", "0"], "invalid value '0' for -c"),
    (["-c", "150%"], "invalid value '150%' for -c"),
    (["--format", "xml"], "--format needs tsv or json"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--warmup", "1000"], "leaves none of the"),
])
def test_bad_arguments_exit_2(tmp_path, args, message):
    trace = binary_trace(tmp_path / "t.bin", [1, 2, 3])
    r = tool(REPLAY, *args, trace)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_missing_trace_exits_2():
    r = tool(REPLAY, "/nonexistent/trace.txt")
    assert r.returncode == 2
    assert "/nonexistent/trace.txt: cannot open: No such file or directory" in r.stderr
    assert tool(REPLAY).returncode == 2


def test_trace_gen_is_deterministic_and_mixes_in_the_scan(tmp_path):
    a, b, c = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.txt"
    for out in (a, b):
        assert tool(GEN, "--keys", 50, "--alpha", 0.99, "--requests", 400, "--scan", 50, "--scan-start", 100,
                    "-o", out).returncode == 0
    assert a.read_bytes() == b.read_bytes()
    ids = struct.unpack(f"<{(a.stat().st_size - 8) // 8}Q", a.read_bytes()[8:])
    assert len(ids) == 450 and sorted(i for i in ids if i >= 50) == list(range(50, 100))
    assert tool(GEN, "--keys", 50, "--alpha", 0.99, "--requests", 400, "-o", c).returncode == 0
    assert len(c.read_text().splitlines()) == 400 and c.read_text().startswith("k")


@pytest.mark.parametrize("args,message", [
    (["--keys", "0", "--alpha", "1", "--requests", "5", "-o", "x"], "invalid value '0' for --keys"),
    (["--keys", "5", "--alpha", "-1", "--requests", "5", "-o", "x"], "invalid value '-1' for --alpha"),
    (["--keys", "5", "--alpha", "1", "--requests", "5"], "are required"),
    (["--keys", "5", "--alpha", "1", "--requests", "5", "-o", "/nonexistent/x.bin"], "cannot write"),
])
def test_trace_gen_errors_exit_2(args, message):
    r = tool(GEN, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
