"""pytest fixtures for the cache_server integration tests.

The binary comes from --server-bin (or $CACHE_SERVER_BIN). Every server is started on
127.0.0.1 port 0; the fixture waits for the "listening on HOST:PORT" line, and on teardown sends
SIGTERM and requires exit code 0 (so sanitizer reports, which make the exit code non-zero, fail
the test that owned the server).
"""
import os
import re
import select
import signal
import socket
import subprocess
import time

import pytest

LISTEN_RE = re.compile(rb"^listening on (\S+):(\d+)$")
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10
SOCK_TIMEOUT_S = 10


def pytest_addoption(parser):
    parser.addoption("--server-bin", default=os.environ.get("CACHE_SERVER_BIN"),
                     help="path to the cache_server binary")


@pytest.fixture(scope="session")
def server_bin(request):
    path = request.config.getoption("--server-bin")
    if not path:
        pytest.fail("pass --server-bin or set CACHE_SERVER_BIN")
    return os.path.abspath(path)


class ServerProcess:
    def __init__(self, binary, args):
        self.args = [binary, "-s", "127.0.0.1", "-p", "0", *args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.port = None
        self.stdout_lines = []
        deadline = time.monotonic() + START_TIMEOUT_S
        buf = b""
        while self.port is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise RuntimeError(f"no listening line within {START_TIMEOUT_S}s: {buf!r}")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                err = self.proc.stderr.read()
                raise RuntimeError(f"server exited before listening: {buf!r} {err!r}")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                self.stdout_lines.append(line)
                m = LISTEN_RE.match(line)
                if m:
                    self.port = int(m.group(2))

    def connect(self, timeout=SOCK_TIMEOUT_S):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def stop(self, sig=signal.SIGTERM):
        """Signals the server and returns (exit code, seconds to exit, stderr)."""
        if self.proc.poll() is None:
            t0 = time.monotonic()
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            elapsed = time.monotonic() - t0
        else:
            elapsed = 0.0
        err = self.proc.stderr.read().decode(errors="replace")
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, elapsed, err


@pytest.fixture
def start_server(server_bin):
    """Factory: start_server(*flags) -> ServerProcess; each is stopped (and checked) at teardown."""
    started = []

    def start(*args):
        srv = ServerProcess(server_bin, [str(a) for a in args])
        started.append(srv)
        return srv

    yield start
    for srv in started:
        if srv.proc.returncode is None:
            code, _, err = srv.stop()
            assert code == 0, f"server {srv.args} exited {code}: {err[-4000:]}"


@pytest.fixture(scope="module")
def shared_server(server_bin):
    srv = ServerProcess(server_bin, ["-t", "2"])
    yield srv
    code, _, err = srv.stop()
    assert code == 0, f"server exited {code}: {err[-4000:]}"


@pytest.fixture
def server(shared_server):
    """The module's default server, emptied before each test."""
    with shared_server.connect() as s:
        s.sendall(b"POST /reset HTTP/1.1\r\nHost: t\r\n\r\n")
        assert s.recv(1024).startswith(b"HTTP/1.1 204 ")
    return shared_server
