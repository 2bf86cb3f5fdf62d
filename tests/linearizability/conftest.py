"""pytest fixtures for the linearizability test: tests/server/conftest.py's, reused as they are
(--server-bin, `store_backend` parametrization over rocksdb and postgres with
`@pytest.mark.rocksdb_only`, `store_flags` with its throwaway PostgreSQL cluster and per-test
tables), and the checker program built once per session (`lincheck_bin`).
"""
import importlib.util
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# Loaded under its own name: tests/server's conftest is not on this folder's path, and a plain
# `import conftest` would find this file.
_spec = importlib.util.spec_from_file_location(
    "server_conftest", os.path.join(HERE, "..", "server", "conftest.py"))
server_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(server_conftest)

pytest_configure = server_conftest.pytest_configure
pytest_generate_tests = server_conftest.pytest_generate_tests
server_bin = server_conftest.server_bin
pg_cluster_session = server_conftest.pg_cluster_session
pg = server_conftest.pg
store_table = server_conftest.store_table
store_flags = server_conftest.store_flags


def pytest_addoption(parser):
    try:
        server_conftest.pytest_addoption(parser)
    except ValueError:
        pass  # tests/server's conftest added --server-bin already (both folders in one run)


GO_HINT = ("install Go: Debian's golang-go (`apt-get install golang-go`; `bash scripts/setup.sh` "
           "installs it and runs `go mod download` in tests/linearizability)")


@pytest.fixture(scope="session")
def go_tool():
    """The `go` command; its absence fails the test, saying how to install it."""
    go = shutil.which("go")
    if go is None:
        pytest.fail(f"`go` is not on PATH: {GO_HINT}", pytrace=False)
    return go


@pytest.fixture(scope="session")
def lincheck_bin(tmp_path_factory, go_tool):
    """The checker (tests/linearizability, Go), built once into a temporary directory. Offline
    once its module (Porcupine, pinned in go.mod/go.sum) is in Go's module cache."""
    go = go_tool
    out = tmp_path_factory.mktemp("lincheck") / "lincheck"
    try:
        r = subprocess.run([go, "build", "-buildvcs=false", "-o", str(out), "."], cwd=HERE,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("`go build` of tests/linearizability took over 300 s", pytrace=False)
    if r.returncode != 0:
        pytest.fail(f"`go build` of tests/linearizability failed ({r.returncode}):\n"
                    f"{(r.stderr or r.stdout)[-3000:]}\nWithout network the module must be in "
                    f"Go's cache: run `go mod download` there once ({GO_HINT})", pytrace=False)
    return out
