"""3,000 concurrent connections from one client CPU (issue 15), with --requests-total.

bench_client opens --connections-per-thread connections per thread and keeps them all open for
the whole point; the test counts the server's ESTABLISHED sockets in /proc/net/tcp while the run
goes on, so a client that opened fewer (or opened them one after another) fails. The point must
measure exactly --requests-total requests with no error. CACHE_SERVER and BENCH_CLIENT name the
binaries (CMake sets them).
"""
import json
import os
import re
import resource
import subprocess
import threading
import time
from pathlib import Path

import pytest

BENCH = os.environ.get("BENCH_CLIENT", "")
CACHE_SERVER = os.environ.get("CACHE_SERVER", "")
FDS_NEEDED = 6100  # 3,000 client sockets + 3,000 server sockets + spare

pytestmark = pytest.mark.skipif(
    not BENCH or not CACHE_SERVER or not Path(BENCH).exists() or not Path(CACHE_SERVER).exists(),
    reason="BENCH_CLIENT or CACHE_SERVER not set")


@pytest.fixture(autouse=True)
def enough_fds():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < FDS_NEEDED:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {FDS_NEEDED}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, FDS_NEEDED), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def established_on(port):
    """ESTABLISHED TCP sockets whose local port is `port` (the server's side)."""
    n = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "01" and int(f[1].rsplit(":", 1)[1], 16) == port:
                n += 1
    return n


@pytest.fixture
def server():
    proc = subprocess.Popen([CACHE_SERVER, "-t", "2", "-p", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        port = None
        deadline = time.monotonic() + 15
        while port is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
        assert port, "cache_server did not start"
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("threads,per_thread", [(1, 3000), (2, 1500)])
def test_3000_connections_held_at_once(server, tmp_path, threads, per_thread):
    out = tmp_path / "many.json"
    # A warm-up of 2 s keeps every connection open long enough to be counted.
    argv = [BENCH, "-p", str(server), "--threads", str(threads), "--connections-per-thread",
            str(per_thread), "--requests-total", "9000", "--warmup", "2s", "--workload",
            "get-popular", "--timeout", "20s", "--json", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, established_on(server))
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr
    assert peak >= 3000, f"at most {peak} connections were open at once"
    doc = json.loads(out.read_text())
    (point,) = doc["points"]
    assert point["connections"] == 3000
    assert point["errors"] == 0, point["errors_by_code"]
    assert point["requests"] == 9000  # exactly --requests-total, across the threads
    assert doc["meta"]["mode"]["requests_total"] == 9000
