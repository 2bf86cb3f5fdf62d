"""bench_client --protocol resp end to end: the key workloads as Redis commands against the real
cache_server's RESP front (--resp-port) and a real redis-server, every GET hit checked byte for
byte (the workloads' --verify default), the reset before the preload as FLUSHALL (refused without
the admin token, as POST /reset is), and the flags that cannot go with it refused.

BENCH_CLIENT and CACHE_SERVER name the binaries (CMake sets both); the Redis cases need
redis-server (Debian's redis-server package, which scripts/setup.sh --peers installs) and skip
without it.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "scripts"))
from harness import peers  # noqa: E402
from harness.procs import CacheServer  # noqa: E402

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
TOKEN = "resp-bench-admin-token-0123456789"

pytestmark = pytest.mark.skipif(not BENCH or not CACHE_SERVER,
                                reason="BENCH_CLIENT and CACHE_SERVER must name the binaries")


def bench(port: int, *flags, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([BENCH, "--protocol", "resp", "-p", str(port), *map(str, flags)],
                          capture_output=True, text=True, timeout=timeout)


def run_json(tmp_path: Path, port: int, *flags) -> dict:
    out = tmp_path / "run.json"
    p = bench(port, "--json", out, "-q", *flags)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def points(doc: dict) -> list[dict]:
    return doc["points"]


def call(port: int, *args: str) -> bytes:
    """One RESP command on a fresh connection; the raw reply's first line (enough here)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*%d\r\n" % len(args) +
                  b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args))
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


@pytest.fixture(scope="module")
def ours():
    proc = CacheServer(CACHE_SERVER, ["--resp-port", "0", "-t", "2"], stderr_apart=True)
    proc.start()
    assert proc.resp_port
    yield proc
    code, _, err = proc.stop()
    assert code == 0, err[-4000:]


@pytest.fixture(scope="module")
def redis_port(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/setup.sh --peers)")
    proc = peers.Redis(tmp_path_factory.mktemp("redis"), stop_timeout_s=15).start()
    yield proc.port
    proc.stop()


@pytest.fixture(params=["ours", "redis"])
def resp_port(request):
    if request.param == "ours":
        return request.getfixturevalue("ours").resp_port
    return request.getfixturevalue("redis_port")


def test_get_hits_are_checked_and_counted(tmp_path, resp_port):
    doc = run_json(tmp_path, resp_port, "--workload", "get-popular", "--threads", "2",
                   "--requests", 3000)
    [pt] = points(doc)
    assert pt["requests"] == 6000 and pt["errors"] == 0
    assert pt["hit_rate"] == 1.0


def test_a_mix_with_deletes_pipelined(tmp_path, resp_port):
    doc = run_json(tmp_path, resp_port, "--workload", "mixed", "--ratio", "6:3:1",
                   "--keys", 500, "--threads", "2", "--pipeline", 8, "--requests", 4000)
    [pt] = points(doc)
    assert pt["requests"] == 8000 and pt["errors"] == 0
    # Deletes make misses: some GETs find nothing (a nil reply), most still hit.
    assert 0.3 < pt["hit_rate"] < 1.0


def test_large_values_are_framed_whether_kept_or_discarded(tmp_path, resp_port):
    # etc's values reach hundreds of KiB: bulk strings past the receive buffer, discarded from
    # the socket unless sampled for the check, and the stream must stay aligned.
    doc = run_json(tmp_path, resp_port, "--workload", "etc", "--keys", 300, "--threads", "1",
                   "--requests", 3000)
    [pt] = points(doc)
    assert pt["errors"] == 0
    assert pt["hit_rate"] > 0.5


def test_the_reset_is_flushall_and_sets_carry_their_ttl(tmp_path, resp_port, request):
    assert call(resp_port, "SET", "stray-key", "x").startswith(b"+OK")
    run_json(tmp_path, resp_port, "--workload", "uniform", "--keys", 50, "--ttl", 3600,
             "--threads", "1", "--requests", 200)
    assert call(resp_port, "EXISTS", "stray-key") == b":0\r\n"  # FLUSHALL before the preload
    assert call(resp_port, "DBSIZE") == b":50\r\n"  # the preload's keys, nothing else
    if "redis" in request.node.callspec.id:  # RANDOMKEY finds one of them (our front has none)
        key = call(resp_port, "RANDOMKEY").split(b"\r\n")[1].decode()
        ttl = int(call(resp_port, "TTL", key)[1:].split(b"\r\n")[0])
        assert 3500 < ttl <= 3600


def test_a_refused_flushall_ends_the_run_with_the_token_hint(tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    proc = CacheServer(CACHE_SERVER, ["--resp-port", "0", "--admin-token-file", token],
                       stderr_apart=True)
    proc.start()
    try:
        p = bench(proc.resp_port, "--workload", "get-popular", "--threads", "1", "--requests", 10)
        assert p.returncode == 3, p.stderr
        assert "FLUSHALL answered -NOAUTH" in p.stderr and "--admin-token-file" in p.stderr
        p = bench(proc.resp_port, "--workload", "get-popular", "--threads", "1", "--requests", 10,
                  "--admin-token-file", token)
        assert p.returncode == 0, p.stderr
        bad = tmp_path / "bad"
        bad.write_text("not-the-token-at-all-0123456789\n")
        bad.chmod(0o600)
        p = bench(proc.resp_port, "--workload", "get-popular", "--threads", "1", "--requests", 10,
                  "--admin-token-file", bad)
        assert p.returncode == 3 and "AUTH answered -WRONGPASS" in p.stderr, p.stderr
    finally:
        proc.stop()


def test_server_errors_count_as_errors(tmp_path):
    # Values above --max-value are refused with -ERR: every SET is an error, none is lost.
    proc = CacheServer(CACHE_SERVER, ["--resp-port", "0", "--max-value", "64"], stderr_apart=True)
    proc.start()
    try:
        doc = run_json(tmp_path, proc.resp_port, "--workload", "put-all", "--value-size", 100,
                       "--threads", "1", "--requests", 100)
        [pt] = points(doc)
        assert pt["errors"] == 100
    finally:
        proc.stop()


def test_an_http_port_is_not_a_resp_server(ours):
    p = bench(ours.port, "--threads", "1", "--requests", 10)
    assert p.returncode != 0
    assert "PING failed" in p.stderr and "is this a RESP server" in p.stderr


@pytest.mark.parametrize("flags", [["--workload", "board-top"], ["--path", "/stats"]])
def test_workloads_without_a_resp_form_are_refused(flags):
    p = bench(1, *flags)
    assert p.returncode == 1  # usage
    assert "--protocol resp sends key commands" in p.stderr


def test_an_unknown_protocol_is_refused():
    p = subprocess.run([BENCH, "--protocol", "gopher"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 1  # usage
    assert "invalid value 'gopher' for --protocol (expected http or resp)" in p.stderr
