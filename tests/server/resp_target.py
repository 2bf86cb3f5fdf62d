"""What the RESP tests (test_resp.py, test_resp_differential.py) share: the server they talk to,
ours (cache_server --resp-port 0, through conftest.py's start_server) or, with the environment's
RESP_TARGET=redis, a real redis-server started in its place, so every test that says "as Redis"
is checked against Redis itself; the marker that skips our deliberate differences from Redis
there; and the redis-py client the tests use.

    srv = resp_server(token=TOKEN)        # ours: --admin-token-file; Redis: --requirepass
    r = srv.client()                       # redis.Redis, RESP2, bytes replies
    srv.http_port                          # ours only (None for Redis)

redis-py 8 speaks RESP3 by default (HELLO 3 on connect): our front answers HELLO 3 with
-NOPROTO, so every client here asks for protocol=2.
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
import redis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "scripts"))  # as conftest.py does
from harness import peers  # noqa: E402
from harness.procs import CacheServer  # noqa: E402

TARGET = os.environ.get("RESP_TARGET", "ours")
if TARGET not in ("ours", "redis"):
    raise RuntimeError(f"RESP_TARGET must be 'ours' or 'redis', not '{TARGET}'")
AGAINST_REDIS = TARGET == "redis"
TOKEN = "resp-test-admin-token-0123456789"


def ours_only(reason: str):
    """Skips a test when the target is Redis: one of our known differences from Redis (the
    reason says which), or a test that needs our HTTP front or our store."""
    return pytest.mark.skipif(AGAINST_REDIS, reason=f"ours only: {reason}")


def client(port: int, **kw) -> redis.Redis:
    """A redis-py client of 127.0.0.1:PORT speaking RESP2, replies as bytes."""
    kw.setdefault("socket_timeout", 10)
    return redis.Redis(host="127.0.0.1", port=port, protocol=2, **kw)


class Redis(peers.Redis):
    """redis-server as the harness starts it, ready also when it demands AUTH (--requirepass
    answers PING with -NOAUTH)."""

    def ready(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith((b"+PONG", b"-NOAUTH"))
        except OSError:
            return False


class RespServer:
    """One server under test: .resp_port, .http_port (ours; None for Redis), .proc (the
    harness's process), .kind ("ours" or "redis")."""

    def __init__(self, kind: str, proc, resp_port: int, http_port: int | None):
        self.kind, self.proc, self.resp_port, self.http_port = kind, proc, resp_port, http_port

    def client(self, **kw) -> redis.Redis:
        return client(self.resp_port, **kw)


def token_file(directory: Path) -> Path:
    path = Path(directory) / "admin-token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def redis_flags(token: str | None, store: bool) -> list[str]:
    """Redis's counterparts of our flags: one database (so SELECT 1 is out of range, as ours),
    the token as requirepass, a store as an append-only file fsynced at every write."""
    flags = ["--databases", "1"]
    if token:
        flags += ["--requirepass", token]
    if store:
        flags += ["--appendonly", "yes", "--appendfsync", "always"]
    return flags


def start_redis(directory: Path, token: str | None = None, store: bool = False) -> RespServer:
    proc = Redis(directory, redis_flags(token, store), stop_timeout_s=15).start()
    return RespServer("redis", proc, proc.port, None)


@pytest.fixture
def resp_server(request, tmp_path):
    """Factory: resp_server(token=None, store=None, allow_reset=False, *flags) -> RespServer.
    Ours: cache_server --resp-port 0 (with --admin-token-file for a token, --store
    rocksdb:DIR for store=DIR, --allow-reset, FLAGS), stopped and checked by start_server. Redis
    (RESP_TARGET=redis): redis-server with redis_flags(), stopped at teardown."""
    started = []

    def start(*flags, token: str | None = None, store: Path | None = None,
              allow_reset: bool = False) -> RespServer:
        n = len(started)
        if AGAINST_REDIS:
            srv = start_redis(tmp_path / f"redis-{n}", token, store is not None)
            started.append(srv)
            return srv
        args = ["--resp-port", "0", "-t", "2"]
        if token:
            args += ["--admin-token-file", token_file(tmp_path)]
        if store is not None:
            args += ["--store", f"rocksdb:{store}"]
        if allow_reset:
            args.append("--allow-reset")
        proc = request.getfixturevalue("start_server")(*args, *flags)
        assert proc.resp_port, f"no resp port in {proc.stdout_lines[:5]}"
        srv = RespServer("ours", proc, proc.resp_port, proc.port)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        if srv.kind == "redis":
            srv.proc.stop()


def start_ours(server_bin: str, *flags) -> RespServer:
    """cache_server --resp-port 0 FLAGS for a module's shared server (stop_checked stops it)."""
    proc = CacheServer(server_bin, ["--resp-port", "0", *map(str, flags)], stderr_apart=True)
    proc.start()
    assert proc.resp_port, f"no resp port in {proc.stdout_lines[:5]}"
    return RespServer("ours", proc, proc.resp_port, proc.port)


def start_target(request, directory: Path) -> RespServer:
    """The target of a module's shared server: ours (memory-only, -t 2), or Redis."""
    if AGAINST_REDIS:
        return start_redis(directory)
    return start_ours(request.getfixturevalue("server_bin"), "-t", "2")


def stop_checked(srv: RespServer) -> None:
    """Stops a server; ours must exit 0 (a sanitizer report makes it fail the module)."""
    code, _, err = srv.proc.stop()
    if srv.kind == "ours":
        assert code == 0, f"cache_server exited {code}: {err[-4000:]}"


@pytest.fixture(scope="module")
def shared_resp(request, tmp_path_factory):
    """The module's server (start_target), memory-only, no token."""
    srv = start_target(request, tmp_path_factory.mktemp("resp"))
    yield srv
    stop_checked(srv)


@pytest.fixture
def r(shared_resp):
    """A client of the module's server, emptied first (FLUSHALL: open, memory-only)."""
    c = shared_resp.client()
    c.flushall()
    yield c
    c.close()


# --- the wire, without a client library ------------------------------------------------------

class Wire:
    """A raw RESP2 connection: send(*args) writes one request array (or several, pipelined, with
    send_many), read() returns one reply as a tagged tuple, exactly as it came:
    ("+", b"OK"), ("-", b"ERR ..."), (":", 5), ("$", b"bytes" or None), ("*", [reply...] or None),
    and after HELLO 3 RESP3's ("_", None), (",", b"1.5"), ("%", [k, v, ...]), ("=", b"txt:...").
    Every read has a timeout; a closed connection is a ConnectionError."""

    def __init__(self, port: int, timeout: float = 10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Wire":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def encode(args) -> bytes:
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        return b"".join(out)

    def send(self, *args) -> None:
        self.sock.sendall(self.encode(args))

    def send_many(self, commands) -> None:
        self.sock.sendall(b"".join(self.encode(c) for c in commands))

    def call(self, *args):
        self.send(*args)
        return self.read()

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buf += chunk

    def _line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            self._fill()
        line, self.buf = self.buf[:end], self.buf[end + 2:]
        return line

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return (kind.decode(), rest)
        if kind == b":":
            return (":", int(rest))
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return ("$", None)
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return ("$", data)
        if kind == b"*":
            n = int(rest)
            return ("*", None if n < 0 else [self.read() for _ in range(n)])
        # RESP3 (after HELLO 3): null, double, map (as its flat list), verbatim string.
        if kind == b"_":
            return ("_", None)
        if kind == b",":
            return (",", rest)
        if kind == b"%":
            return ("%", [self.read() for _ in range(2 * int(rest))])
        if kind == b"=":
            n = int(rest)
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return ("=", data)
        raise ValueError(f"not a RESP2 or RESP3 reply: {line[:200]!r}")

    def at_eof(self, timeout: float = 5) -> bool:
        """True once the server has closed the connection (and sent nothing more)."""
        self.sock.settimeout(timeout)
        try:
            return not self.buf and self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def plain(reply):
    """A tagged reply as plain values: errors as ("-", text), the rest untagged."""
    kind, value = reply
    if kind == "-":
        return reply
    if kind == "*" and value is not None:
        return [plain(v) for v in value]
    return value
