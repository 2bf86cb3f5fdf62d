"""GET /metrics against the real binary: the Prometheus text format as Debian's promtool checks
it, the /stats counters in it, the request-duration histograms, and a real Prometheus server
(the same package) scraping cache_server every second and answering a query with its series.

scripts/setup.sh installs `prometheus` (promtool comes with it); without the binaries these
tests skip and say so. The Prometheus test is bounded (PROMETHEUS_DEADLINE_S) and removes its
process and data directory however it ends.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from rawhttp import exchange

PROMETHEUS_DEADLINE_S = 30
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")


def need(binary):
    path = shutil.which(binary)
    if path is None:
        pytest.skip(f"`{binary}` not found: install Debian's `prometheus` package "
                    "(scripts/setup.sh does)")
    return path


def traffic(srv):
    """Some of every route class, so counters and histograms are non-zero."""
    assert exchange(srv, "PUT", "/key/m1", body=b"hello").status == 201
    for _ in range(5):
        assert exchange(srv, "GET", "/key/m1").status == 200
    assert exchange(srv, "GET", "/key/absent").status == 404
    assert exchange(srv, "HEAD", "/key/m1").status == 200
    assert exchange(srv, "DELETE", "/key/m1").status == 204
    assert exchange(srv, "GET", "/nowhere").status == 404
    assert exchange(srv, "GET", "/stats").status == 200
    assert exchange(srv, "GET", "/metrics").status == 200


def samples(text):
    """{(name, labels): value} of every sample line; fails on a line that is neither."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"not a sample line: {line!r}"
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def test_metrics_format_and_values(start_server):
    srv = start_server("-t", "2", "-e", "lru")
    traffic(srv)
    r = exchange(srv, "GET", "/metrics")
    assert r.status == 200 and r.headers["content-type"] == CONTENT_TYPE
    text = r.body.decode()
    s = samples(text)
    stats = exchange(srv, "GET", "/stats").json()
    # Every numeric /stats field is a sample; counters carry _total.
    assert s[("cache_server_hits_total", "")] == stats["hits"] == 6  # HEAD hits count too
    assert s[("cache_server_misses_total", "")] == stats["misses"] == 1
    assert s[("cache_server_sets_total", "")] == 1
    assert s[("cache_server_rejected_connections_total", "")] == 0 == stats["rejected_connections"]
    assert s[("cache_server_threads", "")] == 2
    assert "# TYPE cache_server_requests_total counter\n" in text
    assert "# HELP cache_server_requests_total " in text
    assert "# TYPE cache_server_items gauge\n" in text
    info = [k for k in s if k[0] == "cache_server_info"]
    assert len(info) == 1 and 'evictor="lru"' in info[0][1] and 'store="none"' in info[0][1]
    # The histograms: the 5 hits and the miss in route="get", cumulative, +Inf == _count.
    assert "# TYPE cache_server_request_duration_seconds histogram\n" in text
    get_count = s[("cache_server_request_duration_seconds_count", '{route="get"}')]
    assert get_count == 6
    assert s[("cache_server_request_duration_seconds_bucket", '{route="get",le="+Inf"}')] == 6
    assert s[("cache_server_request_duration_seconds_sum", '{route="get"}')] > 0
    for route, n in (("put", 1), ("head", 1), ("delete", 1), ("other", 1), ("stats", 1)):
        assert s[("cache_server_request_duration_seconds_count", f'{{route="{route}"}}')] == n, route
    # The earlier /metrics request was timed; this one is rendered before it is.
    assert s[("cache_server_request_duration_seconds_count", '{route="metrics"}')] == 1
    buckets = [v for (name, labels), v in s.items()
               if name == "cache_server_request_duration_seconds_bucket" and 'route="get"' in labels]
    assert buckets == sorted(buckets) and len(buckets) == 16


def test_requests_that_wait_on_the_store_are_timed(start_server, tmp_path):
    """Write-through PUTs and read-through GETs defer their responses; they are timed too."""
    srv = start_server("--store", f"rocksdb:{tmp_path / 'db'}")
    assert exchange(srv, "PUT", "/key/s", body=b"v").status == 201
    assert exchange(srv, "POST", "/reset?scope=cache").status == 204
    assert exchange(srv, "GET", "/key/s").status == 200  # read from the store
    assert exchange(srv, "GET", "/stats").json()["readthrough_fills"] == 1
    s = samples(exchange(srv, "GET", "/metrics").body.decode())
    for route in ("put", "get", "reset"):
        assert s[("cache_server_request_duration_seconds_count", f'{{route="{route}"}}')] == 1, route
        assert s[("cache_server_request_duration_seconds_sum", f'{{route="{route}"}}')] > 0, route
    assert s[("cache_server_store_reads_total", "")] == 1


def test_metrics_wrong_method_is_405(start_server):
    srv = start_server()
    r = exchange(srv, "POST", "/metrics")
    assert r.status == 405 and r.headers["allow"] == "GET"


def test_promtool_check_metrics(start_server):
    promtool = need("promtool")
    srv = start_server("-t", "2")
    traffic(srv)
    body = exchange(srv, "GET", "/metrics").body
    assert b"cache_server_hits_total 6\n" in body  # non-zero counters and histograms
    run = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                         timeout=60)
    # promtool exits 0 on a clean exposition and prints lint problems (1 when there are any).
    assert run.returncode == 0, (run.stdout + run.stderr).decode(errors="replace")
    assert not (run.stdout + run.stderr).strip(), (run.stdout + run.stderr).decode()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.load(resp)


def test_prometheus_scrapes_cache_server(start_server):
    prometheus = need("prometheus")
    srv = start_server("-t", "2")
    traffic(srv)
    workdir = tempfile.mkdtemp(prefix="crank-prometheus-")
    proc = None
    log = None
    try:
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: cache_server\n    scrape_interval: 1s\n"
                    "    scrape_timeout: 1s\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{srv.port}']\n")
        port = free_port()
        log = open(os.path.join(workdir, "prometheus.log"), "wb")
        proc = subprocess.Popen(
            [prometheus, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(workdir, 'data')}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + PROMETHEUS_DEADLINE_S
        last = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"prometheus exited {proc.returncode}"
            try:
                last = query(port, "cache_server_hits_total")
                result = last.get("data", {}).get("result", [])
                if last.get("status") == "success" and result:
                    break
            except (urllib.error.URLError, ConnectionError, OSError) as e:
                last = repr(e)  # not listening yet
            time.sleep(0.25)
        else:
            log.flush()
            with open(os.path.join(workdir, "prometheus.log"), "rb") as f:
                tail = f.read()[-3000:].decode(errors="replace")
            pytest.fail(f"no cache_server series within {PROMETHEUS_DEADLINE_S}s; "
                        f"last answer {last!r}; prometheus log:\n{tail}")
        (series,) = result
        assert series["metric"]["job"] == "cache_server"
        assert series["metric"]["instance"] == f"127.0.0.1:{srv.port}"
        assert float(series["value"][1]) == 6
        # The histogram arrived too (its _count per route class).
        hist = query(port, 'cache_server_request_duration_seconds_count{route="get"}')
        assert hist["status"] == "success" and float(hist["data"]["result"][0]["value"][1]) >= 6
        up = query(port, 'up{job="cache_server"}')
        assert float(up["data"]["result"][0]["value"][1]) == 1
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if log is not None:
            log.close()
        shutil.rmtree(workdir, ignore_errors=True)
