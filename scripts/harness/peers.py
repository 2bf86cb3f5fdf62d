"""peers — the servers cache_server is measured beside: Redis, nginx and HAProxy, each pinned, on
127.0.0.1 and a free port, with its files in a scratch directory the caller owns, ready once it
answers, and stopped on every exit path (they are procs.Process: context managers).

    with Redis(tmp, ["--appendonly", "yes"], cpu=0) as r: r.port, r.pid
    with Nginx(tmp, cpu=0) as n: n.url, n.worker_pid()      # serves BODY100 at /bench
    with HAProxy(tmp, ["127.0.0.1:8001", "127.0.0.1:8002"], cpu=0) as h: h.port
"""
from __future__ import annotations

import re
import shutil
import signal
import socket
import urllib.request
from pathlib import Path

from .metadata import version
from .procs import Process, ServerError, free_port
from .resources import child_pids

BODY100 = "v" * 100  # the fixed body nginx serves, the size of the benchmarks' values
PORT_TRIES = 5  # a free port can be taken between the probe and the bind: try another


def require(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ServerError(f"{tool} is not installed (apt-get install {package}; "
                          "bash scripts/setup.sh --peers installs it)")
    return path


def redis7_version() -> str:
    """redis-server's version ("7.0.15"); ServerError unless it is Redis 7 or later."""
    m = re.search(r" v=([0-9.]+)", version(["redis-server", "--version"]))
    found = m.group(1) if m else ""
    if not found.startswith(("7.", "8.")):
        raise ServerError(f"needs Redis 7 (redis-server --version says '{found or 'nothing'}')")
    return found


class _PortServer(Process):
    """A peer that binds the port it is given: start() retries on another free port when the
    first one turns out taken."""

    host = "127.0.0.1"

    def __init__(self, directory: Path, cpu=None, port: int = 0, **kw):
        """port: the one to bind (0, the default: a free one)."""
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port, self.fixed_port = port, port
        super().__init__(self.command(port), cpu=cpu, **kw)

    def command(self, port: int) -> list:
        raise NotImplementedError

    def start(self):
        last = None
        for _ in range(1 if self.fixed_port else PORT_TRIES):
            self.port = self.fixed_port or free_port(self.host)
            self.argv = [str(a) for a in self.command(self.port)]
            self.stdout_lines.clear()
            try:
                return super().start()
            except ServerError as e:
                last = e
        raise last

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Redis(_PortServer):
    """redis-server with `flags` (e.g. --appendonly yes --appendfsync always), no RDB snapshots,
    its data and log in `directory`; ready once it answers PING."""

    def __init__(self, directory: Path, flags: list | tuple = (), cpu=None, **kw):
        self.flags = list(flags)
        require("redis-server", "redis-server")
        kw.setdefault("name", "redis-server")
        super().__init__(directory, cpu, **kw)

    def command(self, port: int) -> list:
        return ["redis-server", "--bind", self.host, "--port", port, "--protected-mode", "yes",
                "--daemonize", "no", "--save", "", *self.flags, "--dir", self.dir,
                "--logfile", self.dir / "redis.log"]

    def ready(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


NGINX_CONF = """worker_processes 1;
daemon off;
master_process on;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  tcp_nodelay on;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  server {{
    listen {host}:{port};
    location = /bench {{ default_type application/octet-stream; return 200 "{body}"; }}
  }}
}}
"""


class Nginx(_PortServer):
    """nginx, one worker, serving BODY100 at /bench;
    ready once /bench answers it. Stopped gracefully (SIGQUIT)."""

    def __init__(self, directory: Path, cpu=None, **kw):
        require("nginx", "nginx-light")
        kw.setdefault("name", "nginx")
        super().__init__(directory, cpu, **kw)
        self.dir.chmod(0o755)
        (self.dir / "tmp").mkdir(exist_ok=True)

    def command(self, port: int) -> list:
        conf = self.dir / "nginx.conf"
        conf.write_text(NGINX_CONF.format(d=self.dir, host=self.host, port=port, body=BODY100))
        return ["nginx", "-e", self.dir / "error.log", "-p", self.dir, "-c", conf]

    @property
    def url(self) -> str:
        return f"http://{self.address}/bench"

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=1) as r:
                return r.read().decode() == BODY100
        except OSError:
            return False

    def worker_pid(self) -> int | None:
        """The worker's PID (worker_processes 1: the master's one child)."""
        kids = child_pids(self.pid)
        return kids[0] if kids else None

    def stop(self, sig: int = signal.SIGQUIT):
        return super().stop(sig)


HAPROXY_CONF = """global
  maxconn 8000
defaults
  mode http
  option http-keep-alive
  timeout connect 1s
  timeout client 60s
  timeout server 10s
frontend front
  bind {host}:{port}
  default_backend nodes
backend nodes
  balance {balance}
{servers}
"""


class HAProxy(_PortServer):
    """HAProxy in the foreground (-db) in front of `backends` ("HOST:PORT" each), balanced by
    `balance` (default roundrobin); ready once its port accepts connections."""

    def __init__(self, directory: Path, backends: list[str], cpu=None, balance="roundrobin", **kw):
        require("haproxy", "haproxy")
        self.backends, self.balance = list(backends), balance
        kw.setdefault("name", "haproxy")
        super().__init__(directory, cpu, **kw)

    def command(self, port: int) -> list:
        servers = "\n".join(f"  server n{i} {b}" for i, b in enumerate(self.backends, 1))
        conf = self.dir / "haproxy.cfg"
        conf.write_text(HAPROXY_CONF.format(host=self.host, port=port, balance=self.balance,
                                            servers=servers))
        return ["haproxy", "-db", "-f", conf]

    def ready(self) -> bool:
        try:
            socket.create_connection((self.host, self.port), timeout=0.5).close()
            return True
        except OSError:
            return False
