"""Expiry with a store (issue 30; docs/api.md, "Expiry" and "Failures of the store"): a TTL is
durable, the store never serves an expired row (read-through, the dirty buffer, DELETE), and
expired rows leave the store without being read. Each test runs against RocksDB and a real
PostgreSQL (conftest.py's store_backend), in both write modes where the mode matters."""
import time

import pytest

from rawhttp import exchange
from test_expiry_cas import get, max_age, put, wait_until

MODES = ["through", "behind"]


def reset_cache(srv):
    assert exchange(srv, "POST", "/reset?scope=cache").status == 204


@pytest.mark.parametrize("mode", MODES)
def test_a_ttl_is_durable_and_survives_a_restart(start_server, store_flags, mode):
    flags = [*store_flags, "--write-mode", mode]
    srv = start_server(*flags)
    assert put(srv, "ttl", b"v", query="?ttl=100").status == 201
    assert put(srv, "plain", b"p").status == 201
    assert 98 <= max_age(get(srv, "ttl")) <= 100
    code, _, err = srv.stop()  # write-behind flushes its dirty writes on the way out
    assert code == 0, err

    srv = start_server(*flags)
    r = get(srv, "ttl")  # read through: the expiry came back from the store
    assert r.status == 200 and r.body == b"v"
    assert 90 <= max_age(r) <= 100, r.headers
    r = get(srv, "ttl")  # and the cache holds it with the time it has left
    assert r.status == 200 and 90 <= max_age(r) <= 100, r.headers
    p = get(srv, "plain")
    assert p.status == 200 and max_age(p) is None


@pytest.mark.parametrize("mode", MODES)
def test_an_expired_key_is_404_from_the_store_and_to_delete(start_server, store_flags, mode):
    srv = start_server(*store_flags, "--write-mode", mode)
    assert put(srv, "a", b"v", query="?ttl=1").status == 201
    assert put(srv, "b", b"v", query="?ttl=1").status == 201
    assert put(srv, "c", b"v", query="?ttl=1").status == 201
    assert put(srv, "live", b"v", query="?ttl=100").status == 201
    time.sleep(0.3)  # write-behind: flushed (every --flush-interval / 4)
    reset_cache(srv)  # every read below goes past the cache
    time.sleep(1.2)
    assert get(srv, "a").status == 404  # read through: the store's row has expired
    assert exchange(srv, "HEAD", "/key/b").status == 404
    assert exchange(srv, "DELETE", "/key/c").status == 404
    r = get(srv, "live")
    # 1.5 s of sleeps since its PUT, more on a loaded machine (97 was read once): its TTL came
    # back from the store's row, not none and not a fresh 100.
    assert r.status == 200 and 95 <= max_age(r) <= 100
    # A new PUT over an expired row creates the key.
    assert put(srv, "a", b"new").status == 201
    r = get(srv, "a")
    assert r.status == 200 and r.body == b"new" and max_age(r) is None


def test_write_behind_never_serves_an_expired_dirty_write(start_server, store_flags):
    # A long flush interval keeps the writes in the dirty buffer for the whole test.
    srv = start_server(*store_flags, "--write-mode", "behind", "--flush-interval", "60s")
    assert put(srv, "k", b"v", query="?ttl=1").status == 201
    reset_cache(srv)  # the dirty buffer alone holds it now
    r = get(srv, "k")
    assert r.status == 200 and r.body == b"v" and max_age(r) in (0, 1)
    time.sleep(1.2)
    assert get(srv, "k").status == 404
    assert exchange(srv, "DELETE", "/key/k").status == 404
    assert put(srv, "k", b"again").status == 201


def test_postgres_removes_expired_rows_without_reads(start_server, pg, psql, store_table):
    psql(f'DROP TABLE IF EXISTS "{store_table}", "{store_table}_lb"')
    srv = start_server("--store", f"postgres:{pg.conninfo}", "--store-table", store_table,
                       "--store-board-table", f"{store_table}_lb")
    for i in range(20):
        assert put(srv, f"gone{i}", b"v", query="?ttl=1").status == 201
    assert put(srv, "kept", b"v", query="?ttl=600").status == 201
    assert put(srv, "plain", b"v").status == 201

    def rows():
        out = psql(f'SELECT convert_from(key, \'UTF8\') FROM "{store_table}" '
                                "ORDER BY 1")
        return [r[0] for r in out]

    assert len(rows()) == 22
    # Expired after 1 s, removed by the writer's purge within about a second more.
    assert wait_until(lambda: rows() == ["kept", "plain"], 6.0, 0.2), rows()
    exp = psql(f'SELECT expires_at FROM "{store_table}" ORDER BY key')
    now_ms = time.time() * 1000
    assert int(exp[0][0]) > now_ms + 590_000 and int(exp[1][0]) == 0, exp
