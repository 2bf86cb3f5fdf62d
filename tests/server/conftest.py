"""pytest fixtures for the cache_server integration tests.

The binary comes from --server-bin (or $CACHE_SERVER_BIN). Every server is started on
127.0.0.1 port 0 by the harness (scripts/harness/procs.py, CacheServer: ready on its listening
line), and on teardown sent SIGTERM and required to exit 0 (so sanitizer reports, which make the
exit code non-zero, fail the test that owned the server).

The store tests run on every backend: a test that takes `store_backend` (directly or through
`store_flags`) is parametrized over `rocksdb` and `postgres` (ids `[rocksdb]`, `[postgres]`),
unless marked `@pytest.mark.rocksdb_only(reason=...)`. PostgreSQL is one throwaway cluster per
pytest process (scripts/harness/postgres.py, the one way the tests start PostgreSQL), and each
test gets its own tables (`--store-table`, the test's name, and `--store-board-table`, the same
with `_lb`). Missing PostgreSQL fails the
PostgreSQL tests, unless PG_OPTIONAL=1 is set: then they are skipped, saying why.
"""
import hashlib
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, os.path.join(HERE, "..", "support"))  # `import pg_cluster` in the test modules
from harness import postgres as pg_cluster  # noqa: E402
from harness.procs import CacheServer  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--server-bin", default=os.environ.get("CACHE_SERVER_BIN"),
                     help="path to the cache_server binary")


STORE_BACKENDS = ("rocksdb", "postgres")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "rocksdb_only(reason): a store test of RocksDB-only behaviour (its fault "
        "injection, a store directory): run on the rocksdb backend only; the reason is required")


def pytest_generate_tests(metafunc):
    if "store_backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("rocksdb_only")
    if marker is not None and not marker.kwargs.get("reason"):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: rocksdb_only needs reason=...")
    backends = ["rocksdb"] if marker is not None else list(STORE_BACKENDS)
    metafunc.parametrize("store_backend", backends, ids=backends, scope="function")


@pytest.fixture(scope="session")
def pg_cluster_session():
    """The process's PostgreSQL cluster, started on first use, removed at the end.

    Not installed: a failure naming the package, or a skip when PG_OPTIONAL=1. Installed but
    not starting: always a failure."""
    missing = None
    try:
        cluster = pg_cluster.PgCluster()  # finds the binaries, or raises
    except pg_cluster.PgClusterError as e:
        missing = str(e)
    if missing is not None:
        if os.environ.get("PG_OPTIONAL") == "1":
            pytest.skip(f"PostgreSQL is not installed and PG_OPTIONAL=1: {missing}")
        pytest.fail(f"{missing} (set PG_OPTIONAL=1 to skip the PostgreSQL tests instead)",
                    pytrace=False)
    with cluster:
        yield cluster


def pg_running(cluster):
    return os.path.isfile(os.path.join(cluster.data, "postmaster.pid"))


@pytest.fixture
def pg(pg_cluster_session):
    """The PostgreSQL cluster, running; started again after a test that stopped it."""
    if not pg_running(pg_cluster_session):
        pg_cluster_session.start()
    yield pg_cluster_session
    if not pg_running(pg_cluster_session):
        pg_cluster_session.start()


def psql_run(cluster, sql, timeout=30):
    """Runs SQL with psql against the cluster; returns its output rows as lists of strings."""
    out = pg_cluster.psql(cluster.conninfo, sql, timeout, separator="\t")
    return [line.split("\t") for line in out.splitlines() if line]


@pytest.fixture
def psql(pg):
    """psql(sql) -> rows (lists of strings) from the test's PostgreSQL cluster."""
    return lambda sql, timeout=30: psql_run(pg, sql, timeout)


def table_name_for(nodename):
    """A PostgreSQL table name from a test's name: [a-z0-9_], unique, under 63 bytes."""
    base = re.sub(r"[^a-z0-9_]+", "_", nodename.lower()).strip("_")[:40]
    return f"t_{base}_{hashlib.sha1(nodename.encode()).hexdigest()[:8]}"


@pytest.fixture
def store_table(request):
    return table_name_for(request.node.name)


@pytest.fixture
def store_flags(request, store_backend, tmp_path, store_table):
    """The --store flags of the test's store: its RocksDB directory, or its PostgreSQL table
    (dropped first, so a test starts empty)."""
    if store_backend == "rocksdb":
        return ["--store", f"rocksdb:{tmp_path / 'db'}"]
    cluster = request.getfixturevalue("pg")
    board_table = f"{store_table}_lb"
    psql_run(cluster, f'DROP TABLE IF EXISTS "{store_table}", "{board_table}"')
    return ["--store", f"postgres:{cluster.conninfo}", "--store-table", store_table,
            "--store-board-table", board_table]


@pytest.fixture
def pg_flags(pg, store_table, psql):
    """--store flags for the test's own (empty) PostgreSQL key and board tables (a module may
    define its own)."""
    board_table = f"{store_table}_lb"
    psql(f'DROP TABLE IF EXISTS "{store_table}", "{board_table}"')
    return ["--store", f"postgres:{pg.conninfo}", "--store-table", store_table,
            "--store-board-table", board_table]


@pytest.fixture(scope="session")
def server_bin(request):
    path = request.config.getoption("--server-bin")
    if not path:
        pytest.fail("pass --server-bin or set CACHE_SERVER_BIN")
    return os.path.abspath(path)


class ServerProcess(CacheServer):
    """cache_server -s 127.0.0.1 -p 0 ARGS..., started and ready; .port, .stdout_lines, .connect(),
    .stop(sig) -> (exit code, seconds to exit, stderr)."""

    def __init__(self, binary, args):
        super().__init__(binary, args, stderr_apart=True)
        self.args = self.argv
        self.start()


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
