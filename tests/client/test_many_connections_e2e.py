"""3,000 concurrent connections from one client CPU (issue 15), with --requests-total.

bench_client opens --connections-per-thread connections per thread and keeps them all open for
the whole point; the test counts the server's ESTABLISHED sockets in /proc/net/tcp while the run
goes on, so a client that opened fewer (or opened them one after another) fails. The point must
measure exactly --requests-total requests with no error. And the readiness list (issue 29): with
many connections a thread waits on an epoll set in which each connection's socket is registered
once, not on a ppoll of every busy socket per wake-up (strace counts the calls). CACHE_SERVER and
BENCH_CLIENT name the binaries (CMake sets them).
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from harness.procs import CacheServer  # noqa: E402

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
    with CacheServer(CACHE_SERVER, ["-t", "2"], new_session=False) as srv:
        yield srv.port


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


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
def test_each_connection_is_registered_once_in_epoll(server, tmp_path):
    """500 connections, 6,000 requests (12 per connection): every socket is added to the thread's
    epoll set exactly once (EPOLL_CTL_ADD, never removed or modified: no reconnect happened), the
    thread waits in epoll_pwait2 and never in ppoll, so a wake-up costs the ready connections, not
    all of them. A client that registered sockets per request, or polled them all, fails."""
    log, out = tmp_path / "strace.log", tmp_path / "r.json"
    conns, total = 500, 6000
    argv = ["strace", "-f", "-qq", "-e", "trace=epoll_ctl,epoll_wait,epoll_pwait,epoll_pwait2,ppoll",
            "-o", str(log), BENCH, "-p", str(server), "--threads", "1", "--connections-per-thread",
            str(conns), "--requests-total", str(total), "--warmup", "0", "--no-preload",
            "--workload", "get-popular", "--timeout", "20s", "--json", str(out)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and "ptrace" in r.stderr:
        pytest.skip(f"strace cannot trace here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    (point,) = json.loads(out.read_text())["points"]
    assert point["errors"] == 0, point["errors_by_code"]
    assert point["requests"] == total
    calls = {}
    for line in log.read_text().splitlines():
        m = re.match(r"\d+\s+(\w+)\((.*)", line)
        if m:
            name = m.group(1)
            if name == "epoll_ctl":
                name += ":" + m.group(2).split(",")[1].strip()
            calls[name] = calls.get(name, 0) + 1
    assert calls.get("ppoll", 0) == 0, calls
    assert calls.get("epoll_ctl:EPOLL_CTL_ADD", 0) == conns, calls
    assert calls.get("epoll_ctl:EPOLL_CTL_DEL", 0) == 0, calls
    assert calls.get("epoll_ctl:EPOLL_CTL_MOD", 0) == 0, calls
    waits = calls.get("epoll_pwait2", 0) + calls.get("epoll_wait", 0)
    assert 0 < waits <= total, calls
