"""scripts/harness/ against the real components: cache_server (the release build), PostgreSQL,
Redis, nginx and HAProxy start pinned on free ports, become ready, answer, and are gone after
their with-block, also when the block raised. Plus the pure parts: the listening line, the
/proc arithmetic, the run metadata and the tables. A component that is not installed fails
its test naming the package (scripts/setup.sh --peers installs them all); the cache_server tests
need the release build (EXPERIMENT_TEST_BUILD names another)."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from harness import metadata, peers, postgres, procs, resources, tables  # noqa: E402

BUILD = Path(os.environ.get("EXPERIMENT_TEST_BUILD", ROOT / "build" / "release"))
SERVER = BUILD / "server" / "cache_server"


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie of ours counts as gone: Popen.wait reaps it; check its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    except OSError:
        return True


def http(port, method, path):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n".encode())
        return s.recv(4096)


# --- the listening line ----------------------------------------------------------------------

def test_listening_line_is_read_in_one_place():
    assert procs.parse_listening("listening on 127.0.0.1:8080\n") == ("127.0.0.1", 8080)
    assert procs.parse_listening(b"listening on 10.0.0.2:1") == ("10.0.0.2", 1)
    assert procs.parse_listening("config threads=1") is None
    assert procs.parse_listening("not listening on 1.2.3.4:5") is None


def test_a_process_that_exits_before_ready_says_so(tmp_path):
    p = procs.ListeningServer([sys.executable, "-c", "print('boom'); raise SystemExit(3)"],
                              name="fake")
    with pytest.raises(procs.ServerError, match="fake exited.*boom"):
        p.start()


def test_a_fake_server_is_ready_on_its_line_and_logged(tmp_path):
    code = ("import socket,time\ns=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
            "print('hello'); print('listening on 127.0.0.1:%d' % s.getsockname()[1], flush=True)\n"
            "time.sleep(60)")
    with procs.ListeningServer([sys.executable, "-c", code], log_path=tmp_path / "x.log",
                               cpu=0) as p:
        assert p.port > 0 and p.host == "127.0.0.1"
        assert p.stdout_lines[0] == b"hello"
        pid = p.pid
    assert gone(pid)
    assert b"listening on" in (tmp_path / "x.log").read_bytes()


# --- cache_server ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server_bin():
    if not SERVER.exists():
        pytest.fail(f"no {SERVER}: build it (bash scripts/setup.sh --build release)")
    return SERVER


def test_cache_server_starts_pinned_answers_and_stops(server_bin):
    with procs.CacheServer(server_bin, ["-t", "1"], cpu=0) as srv:
        assert srv.host == "127.0.0.1" and srv.port > 0
        assert srv.config_line.startswith("config ")
        assert os.sched_getaffinity(srv.pid) == {0}
        assert http(srv.port, "PUT", "/key/a/b").startswith(b"HTTP/1.1 ")
        assert b"\r\n\r\nb" in http(srv.port, "GET", "/key/a")
        pid = srv.pid
    assert gone(pid) and srv.proc.returncode == 0


def test_cache_server_is_stopped_when_the_block_raises(server_bin):
    with pytest.raises(KeyError):
        with procs.CacheServer(server_bin, ["-t", "1"]) as srv:
            pid = srv.pid
            raise KeyError("boom")
    assert gone(pid)


def test_bad_flags_fail_with_the_servers_words(server_bin):
    with pytest.raises(procs.ServerError, match="cache_server exited"):
        procs.CacheServer(server_bin, ["--no-such-flag"]).start()


def test_stop_reports_code_time_and_stderr(server_bin):
    srv = procs.CacheServer(server_bin, ["-t", "1"], stderr_apart=True).start()
    code, elapsed, err = srv.stop(signal.SIGINT)
    assert code == 0 and elapsed < procs.STOP_TIMEOUT_S and isinstance(err, str)


def test_stop_all_stops_what_is_left(server_bin):
    srv = procs.CacheServer(server_bin, ["-t", "1"]).start()
    procs.stop_all()
    assert gone(srv.pid)


# --- PostgreSQL ------------------------------------------------------------------------------

def test_postgres_cluster_runs_and_is_removed():
    with postgres.pinned_cluster(cpu=0, max_connections=20) as pg:
        assert postgres.psql(pg.conninfo, "SELECT 1+1").strip() == "2"
        assert os.sched_getaffinity(pg.postmaster_pid) == {0}
        directory = pg.dir
        pg.restart()
        assert postgres.psql(pg.conninfo, "SHOW max_connections").strip() == "20"
    assert not os.path.exists(directory)


def test_postgres_cleanup_on_error():
    with pytest.raises(RuntimeError):
        with postgres.PgCluster() as pg:
            directory, pid = pg.dir, pg.pids()[0]
            raise RuntimeError("boom")
    assert not os.path.exists(directory) and gone(pid)


# --- peers -----------------------------------------------------------------------------------

def test_redis_answers_and_stops(tmp_path):
    with peers.Redis(tmp_path / "r", ["--appendonly", "yes"], cpu=0) as r:
        with socket.create_connection(("127.0.0.1", r.port), timeout=5) as s:
            s.sendall(b"SET k v\r\n")
            assert s.recv(16) == b"+OK\r\n"
        pid = r.pid
    assert gone(pid)
    assert (tmp_path / "r" / "redis.log").exists()


def test_nginx_and_haproxy_in_front_of_it(tmp_path):
    with peers.Nginx(tmp_path / "n", cpu=0) as n:
        assert n.worker_pid() is not None
        with peers.HAProxy(tmp_path / "h", [n.address], cpu=1) as h:
            url = f"http://{h.address}/bench"
            with urllib.request.urlopen(url, timeout=5) as r:
                assert r.read().decode() == peers.BODY100
            hpid = h.pid
        npid = n.pid
    assert gone(hpid) and gone(npid)


# --- /proc, metadata, tables -----------------------------------------------------------------

def test_resources_see_a_busy_process():
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with resources.Resources([p.pid], disk_path=Path("/")) as r:
            time.sleep(0.4)
    finally:
        p.kill()
        p.wait()
    fig = r.figures()
    # A busy loop gets what a loaded machine leaves it: some CPU, at most one core.
    assert 2 < fig["server_cpu_pct"] <= 105
    assert fig["disk_note"] and fig["wall_s"] >= 0.4


def test_run_metadata_names_machine_and_revision():
    m = metadata.run_metadata("test", x=1)
    assert m["tool"] == "test" and m["x"] == 1 and m["cores"] >= 1
    assert m["git_revision"] != "unknown" and m["kernel"]
    assert "redis" in metadata.version(["redis-server", "--version"]).lower()


def test_md_table_and_numbers():
    assert tables.md_table(["a", "b"], [[1, tables.fnum(1234.5, 1)]]) == \
        "| a | b |\n|---|---:|\n| 1 | 1,234.5 |\n"
    assert tables.md_table(["a", "b"], [], align="ll") == "| a | b |\n|---|---|\n"
    assert tables.fnum(None) == "–"
