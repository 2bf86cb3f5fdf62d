"""The RESP front (cache_server --resp-port, issue 46) through redis-py and redis-cli: every
command and option of docs/resp.md's table with Redis 7's replies and error texts, pipelining,
inline commands, the guarded FLUSHALL, one meaning for both fronts (RESP and HTTP) and a kill -9
of a store-backed server after SETs answered +OK.

With RESP_TARGET=redis every test runs against a real redis-server instead (resp_target.py),
except our known differences from Redis and what needs our HTTP front or our store (marked
ours_only, with the reason): the tests that say "as Redis" are thereby checked against Redis.
Error replies are compared byte for byte on the wire (resp_target.Wire), the rest through
redis-py (RESP2: redis-py 8 asks for RESP3 unless told).
"""
import json
import signal
import subprocess
import time

import pytest
import redis

import rawhttp
from resp_target import AGAINST_REDIS, TOKEN, Wire, ours_only, plain
from resp_target import r, resp_server, shared_resp  # noqa: F401 (the fixtures)


def wire(srv, *args):
    """One command on a fresh raw connection: its tagged reply."""
    with Wire(srv.resp_port) as w:
        return w.call(*args)


def error_of(srv, *args) -> bytes:
    """The error text one command answers (the whole line after '-'); fails on another reply."""
    kind, text = wire(srv, *args)
    assert kind == "-", f"{args} answered {kind}{text!r}, not an error"
    return text


def raw(r, *args):
    """A command through redis-py without its reply callbacks: the reply as RESP2 gave it."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


# --- connection -----------------------------------------------------------------------------

def test_ping(r, shared_resp):
    assert r.ping() is True
    assert wire(shared_resp, "PING") == ("+", b"PONG")
    assert wire(shared_resp, "PING", "hello world") == ("$", b"hello world")
    assert raw(r, "PING", b"\x00\xff") == b"\x00\xff"


def test_echo(r):
    assert r.echo(b"bytes \x00\r\n\xff") == b"bytes \x00\r\n\xff"
    assert r.echo("") == b""


def test_quit_answers_ok_and_closes(shared_resp):
    with Wire(shared_resp.resp_port) as w:
        assert w.call("QUIT") == ("+", b"OK")
        assert w.at_eof()


def test_select(r, shared_resp):
    assert r.execute_command("SELECT", 0) is True
    assert error_of(shared_resp, "SELECT", "1") == b"ERR DB index is out of range"
    assert error_of(shared_resp, "SELECT", "-1") == b"ERR DB index is out of range"
    assert error_of(shared_resp, "SELECT", "x") == b"ERR value is not an integer or out of range"
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.execute_command("SELECT", 1)


def test_auth_without_a_token(shared_resp):
    assert error_of(shared_resp, "AUTH", "whatever") == (
        b"ERR AUTH <password> called without any password configured for the default user. "
        b"Are you sure your configuration is correct?")


def test_auth_with_the_token(resp_server):
    srv = resp_server(token=TOKEN)
    with Wire(srv.resp_port) as w:
        assert w.call("AUTH", "not-the-token-at-all") == (
            "-", b"WRONGPASS invalid username-password pair or user is disabled.")
        assert w.call("AUTH", TOKEN) == ("+", b"OK")
        assert w.call("AUTH", "default", TOKEN) == ("+", b"OK")
        assert w.call("AUTH", "default", "not-the-token-at-all")[0] == "-"
    c = srv.client(password=TOKEN)  # redis-py's AUTH at connect
    assert c.ping() is True
    with pytest.raises(redis.AuthenticationError):
        srv.client(password="not-the-token-at-all").ping()


def hello_map(reply) -> dict:
    assert isinstance(reply, list) and len(reply) % 2 == 0, reply
    return dict(zip(reply[::2], reply[1::2]))


def test_hello_2(r):
    for args in (("HELLO", "2"), ("HELLO",)):
        m = hello_map(raw(r, *args))
        assert m[b"proto"] == 2
        for field in (b"server", b"version", b"id", b"mode", b"role", b"modules"):
            assert field in m, (args, m)
        assert isinstance(m[b"id"], int)
        assert m[b"modules"] == []


def test_hello_2_with_auth_and_setname(resp_server):
    srv = resp_server(token=TOKEN)
    with Wire(srv.resp_port) as w:
        kind, fields = w.call("HELLO", "2", "AUTH", "default", TOKEN, "SETNAME", "hi")
        assert kind == "*" and plain(("*", fields))[4:6] == [b"proto", 2]
        assert w.call("CLIENT", "GETNAME") == ("$", b"hi")
        assert w.call("HELLO", "2", "AUTH", "default", "nope-nope-nope-nope") == (
            "-", b"WRONGPASS invalid username-password pair or user is disabled.")


def test_hello_other_versions(shared_resp):
    assert error_of(shared_resp, "HELLO", "4") == b"NOPROTO unsupported protocol version"
    assert error_of(shared_resp, "HELLO", "1") == b"NOPROTO unsupported protocol version"
    assert error_of(shared_resp, "HELLO", "x") == (
        b"ERR Protocol version is not an integer or out of range")


def test_hello_3_switches_to_resp3(shared_resp):
    with Wire(shared_resp.resp_port) as w:
        kind, fields = w.call("HELLO", "3")
        assert kind == "%", (kind, fields)
        hello = {fields[i][1]: fields[i + 1] for i in range(0, len(fields), 2)}
        assert hello[b"proto"] == (":", 3) and hello[b"server"] == ("$", b"redis")
        assert w.call("GET", "absent:resp3") == ("_", None)
        assert w.call("ZADD", "z:resp3", "1.5", "m") == (":", 1)
        assert w.call("ZSCORE", "z:resp3", "m") == (",", b"1.5")
        assert w.call("ZRANGE", "z:resp3", "0", "-1", "WITHSCORES") == (
            "*", [("*", [("$", b"m"), (",", b"1.5")])])
        assert w.call("CONFIG", "GET", "databases")[0] == "%"
        assert w.call("INFO", "server")[1].startswith(b"txt:# Server")
        assert w.call("HELLO", "2")[0] == "*"  # and back
        assert w.call("ZSCORE", "z:resp3", "m") == ("$", b"1.5")
        assert w.call("DEL", "z:resp3") == (":", 1)
    assert error_of(shared_resp, "HELLO", "4") == b"NOPROTO unsupported protocol version"


def test_redis_py_default_protocol_works(shared_resp):
    """redis-py 8 asks for RESP3 (HELLO 3) on connect unless told otherwise."""
    c = redis.Redis(host="127.0.0.1", port=shared_resp.resp_port, socket_timeout=10)
    try:
        assert c.ping() is True
        assert c.set("k:default", "v") is True and c.get("k:default") == b"v"
        assert c.zadd("z:default", {"a": 1, "b": 2.5}) == 2
        assert c.zscore("z:default", "b") == 2.5
        assert c.zrevrange("z:default", 0, -1, withscores=True) == [(b"b", 2.5), (b"a", 1.0)]
        assert c.mget("k:default", "nope") == [b"v", None]
        assert "redis_version" in c.info("server")
        assert c.delete("k:default", "z:default") == 2
    finally:
        c.close()


def test_client_setname_getname(r, shared_resp):
    assert raw(r, "CLIENT", "GETNAME") is None
    assert r.client_setname("worker-1") is True
    assert raw(r, "CLIENT", "GETNAME") == b"worker-1"
    assert error_of(shared_resp, "CLIENT", "SETNAME", "a b") == (
        b"ERR Client names cannot contain spaces, newlines or special characters.")
    with Wire(shared_resp.resp_port) as w:
        assert w.call("CLIENT", "SETNAME", "x") == ("+", b"OK")
        assert w.call("CLIENT", "SETNAME", "") == ("+", b"OK")  # an empty name clears it
        assert w.call("CLIENT", "GETNAME") == ("$", None)


def test_client_id(shared_resp):
    with Wire(shared_resp.resp_port) as a, Wire(shared_resp.resp_port) as b:
        ka, ia = a.call("CLIENT", "ID")
        kb, ib = b.call("CLIENT", "ID")
        assert ka == kb == ":" and ia > 0 and ib > 0 and ia != ib
        assert a.call("CLIENT", "ID") == (":", ia)


def test_client_unknown_subcommand(shared_resp):
    assert error_of(shared_resp, "CLIENT", "NOSUCH") == (
        b"ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.")


@ours_only("CLIENT SETINFO is Redis 7.2's; the reference redis-server 7.0.15 does not know it")
def test_client_setinfo(shared_resp):
    with Wire(shared_resp.resp_port) as w:
        assert w.call("CLIENT", "SETINFO", "LIB-NAME", "redis-py") == ("+", b"OK")
        assert w.call("CLIENT", "SETINFO", "lib-ver", "8.1.0") == ("+", b"OK")
        assert w.call("CLIENT", "SETINFO", "NOSUCH", "x")[0] == "-"


def test_command_count(r):
    n = r.command_count()
    assert isinstance(n, int) and n > 0


def test_command_docs(r):
    docs = raw(r, "COMMAND", "DOCS", "GET")
    assert isinstance(docs, list) and docs[0] == b"get", docs
    fields = docs[1]
    assert isinstance(fields, list) and b"summary" in fields[::2], fields
    assert raw(r, "COMMAND", "DOCS", "NOSUCHCOMMAND") == []


# --- keys ------------------------------------------------------------------------------------

def test_get_set(r, shared_resp):
    assert r.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    value = bytes(range(256)) + b"\r\n*1\r\n$3\r\n"
    assert r.set(b"bin\x00key", value) is True
    assert r.get(b"bin\x00key") == value
    assert r.set("k", "") is True and r.get("k") == b""
    assert wire(shared_resp, "SET", "k2", "v") == ("+", b"OK")


def test_set_ex_px(r):
    assert r.set("ex", "v", ex=100) is True
    assert 98 <= r.ttl("ex") <= 100
    assert r.set("px", "v", px=100000) is True
    assert 95000 <= r.pttl("px") <= 100000
    assert 98 <= r.ttl("px") <= 100


def test_set_exat_pxat(r):
    now = time.time()
    assert r.set("exat", "v", exat=int(now) + 100) is True
    assert 97 <= r.ttl("exat") <= 100
    assert r.set("pxat", "v", pxat=int(now * 1000) + 100000) is True
    assert 95000 <= r.pttl("pxat") <= 100000


def test_set_keepttl(r):
    r.set("k", "v1", ex=100)
    assert r.set("k", "v2", keepttl=True) is True
    assert r.get("k") == b"v2" and 98 <= r.ttl("k") <= 100
    r.set("k", "v3")  # a SET without KEEPTTL drops the TTL
    assert r.ttl("k") == -1


def test_set_nx_xx(r):
    assert r.set("k", "a", xx=True) is None
    assert r.get("k") is None
    assert r.set("k", "a", nx=True) is True
    assert r.set("k", "b", nx=True) is None
    assert r.get("k") == b"a"
    assert r.set("k", "c", xx=True) is True
    assert r.get("k") == b"c"


def test_set_get_option(r, shared_resp):
    assert r.set("k", "a", get=True) is None
    assert r.set("k", "b", get=True) == b"a"
    assert r.get("k") == b"b"
    assert r.set("k", "c", nx=True, get=True) == b"b"  # NX refused: the old value, unchanged
    assert r.get("k") == b"b"
    assert r.set("nokey", "c", xx=True, get=True) is None
    assert r.get("nokey") is None
    assert r.set("k", "d", ex=100, get=True) == b"b"
    assert 98 <= r.ttl("k") <= 100


def test_set_options_in_any_order_and_case(r, shared_resp):
    with Wire(shared_resp.resp_port) as w:
        assert w.call("set", "k", "v", "nx", "ex", "100") == ("+", b"OK")
        assert w.call("SET", "k", "w", "Get", "Xx", "Px", "100000") == ("$", b"v")
        assert w.call("GET", "k") == ("$", b"w")


def test_setex(r, shared_resp):
    assert raw(r, "SETEX", "k", 100, "v") == b"OK"
    assert r.get("k") == b"v" and 98 <= r.ttl("k") <= 100
    assert error_of(shared_resp, "SETEX", "k", "0", "v") == (
        b"ERR invalid expire time in 'setex' command")
    assert error_of(shared_resp, "SETEX", "k", "x", "v") == (
        b"ERR value is not an integer or out of range")


def test_getdel(r):
    r.set("k", "v")
    assert r.getdel("k") == b"v"
    assert r.getdel("k") is None
    assert r.exists("k") == 0


def test_del_unlink_many(r):
    r.mset({"a": "1", "b": "2", "c": "3", "d": "4"})
    assert r.delete("a", "b", "nope") == 2
    assert r.delete("a") == 0
    assert r.unlink("c", "d", "nope", "c") == 2
    assert r.exists("a", "b", "c", "d") == 0


def test_exists_many(r):
    r.mset({"a": "1", "b": "2"})
    assert r.exists("a") == 1
    assert r.exists("a", "b", "nope") == 2
    assert r.exists("a", "a", "a") == 3  # counted per argument, as Redis
    assert r.exists("nope") == 0


def test_mget_mset(r):
    assert r.mset({"a": "1", "b": b"\x00two"}) is True
    assert r.mget("a", "nope", "b", "a") == [b"1", None, b"\x00two", b"1"]
    assert raw(r, "MSET", "a", "x", "a", "y") == b"OK"  # the last one wins
    assert r.get("a") == b"y"


def test_mset_clears_ttl(r):
    r.set("a", "1", ex=100)
    r.mset({"a": "2"})
    assert r.ttl("a") == -1


def test_expire_pexpire(r):
    assert r.expire("nope", 100) is False
    r.set("k", "v")
    assert r.expire("k", 100) is True
    assert 98 <= r.ttl("k") <= 100
    assert r.pexpire("k", 200000) is True
    assert 195000 <= r.pttl("k") <= 200000
    assert r.pexpire("k", 150) is True
    time.sleep(0.4)
    assert r.get("k") is None and r.exists("k") == 0 and r.ttl("k") == -2


def test_expire_zero_or_negative_deletes(r):
    r.set("k", "v")
    assert r.expire("k", 0) is True
    assert r.exists("k") == 0
    r.set("k", "v")
    assert r.pexpire("k", -5) is True
    assert r.exists("k") == 0


def test_expire_nx_xx(r):
    r.set("k", "v")
    assert r.expire("k", 100, xx=True) is False  # no TTL yet
    assert r.ttl("k") == -1
    assert r.expire("k", 100, nx=True) is True
    assert r.expire("k", 200, nx=True) is False
    assert 98 <= r.ttl("k") <= 100
    assert r.expire("k", 200, xx=True) is True
    assert 198 <= r.ttl("k") <= 200


def test_expire_gt_lt(r):
    r.set("k", "v")
    assert r.expire("k", 100, gt=True) is False  # no TTL counts as infinite
    assert r.expire("k", 100, lt=True) is True
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 200, gt=True) is True
    assert 198 <= r.ttl("k") <= 200
    assert r.expire("k", 300, lt=True) is False
    assert r.pexpire("k", 100000, lt=True) is True
    assert 95000 <= r.pttl("k") <= 100000
    assert r.expire("k", 500, xx=True, gt=True) is True  # XX with GT is allowed
    assert r.pexpire("k", 900000, nx=True) is False


def test_ttl_pttl_persist(r):
    assert r.ttl("nope") == -2 and r.pttl("nope") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1 and r.pttl("k") == -1
    assert r.persist("k") is False
    r.expire("k", 100)
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    assert r.persist("nope") is False


def test_type_strlen(r):
    assert r.type("nope") == b"none"
    r.set("k", "hello")
    assert r.type("k") == b"string"
    assert r.strlen("k") == 5
    assert r.strlen("nope") == 0
    r.set("bin", bytes(300))
    assert r.strlen("bin") == 300


def test_dbsize(r):
    assert r.dbsize() == 0
    r.mset({"a": "1", "b": "2"})
    r.set("c", "3", ex=100)
    assert r.dbsize() == 3
    r.delete("a")
    assert r.dbsize() == 2


def test_dbsize_counts_sorted_sets_too(r):
    r.set("k:1", "v")
    r.zadd("z:1", {"m": 1})
    assert r.dbsize() == 2  # as Redis: DBSIZE counts every key, of any type


# --- sorted sets (the boards) ---------------------------------------------------------------

def test_zadd_and_zscore(r, shared_resp):
    assert r.zadd("z", {"a": 1, "b": 2}) == 2
    assert r.zadd("z", {"a": 3, "c": 4}) == 1  # a updated, c added
    assert r.zscore("z", "a") == 3.0
    assert r.zscore("z", "nope") is None
    assert r.zscore("nokey", "a") is None
    assert wire(shared_resp, "ZSCORE", "z", "b") == ("$", b"2")
    assert wire(shared_resp, "ZADD", "z", "1.5", "h") == (":", 1)
    assert wire(shared_resp, "ZSCORE", "z", "h") == ("$", b"1.5")
    assert wire(shared_resp, "ZADD", "z", "-2.25", "n", "+7", "p", "1e3", "e") == (":", 3)
    assert wire(shared_resp, "ZMSCORE", "z", "n", "p", "e") == (
        "*", [("$", b"-2.25"), ("$", b"7"), ("$", b"1000")])


def test_zadd_binary_member(r):
    m = bytes(range(200))  # any bytes; our names are at most 250 bytes (Redis: 512 MB)
    assert r.zadd("z", {m: 5}) == 1
    assert r.zscore("z", m) == 5.0
    assert r.zrange("z", 0, -1) == [m]


def test_zadd_nx_xx(r):
    r.zadd("z", {"a": 1})
    assert r.zadd("z", {"a": 10, "b": 2}, nx=True) == 1
    assert r.zscore("z", "a") == 1.0 and r.zscore("z", "b") == 2.0
    assert r.zadd("z", {"a": 10, "c": 3}, xx=True) == 0
    assert r.zscore("z", "a") == 10.0 and r.zscore("z", "c") is None
    assert r.zadd("nokey", {"a": 1}, xx=True) == 0
    assert r.exists("nokey") == 0


def test_zadd_gt_lt(r):
    r.zadd("z", {"a": 10})
    assert r.zadd("z", {"a": 5}, gt=True) == 0
    assert r.zscore("z", "a") == 10.0
    assert r.zadd("z", {"a": 20}, gt=True) == 0
    assert r.zscore("z", "a") == 20.0
    assert r.zadd("z", {"a": 30}, lt=True) == 0
    assert r.zscore("z", "a") == 20.0
    assert r.zadd("z", {"a": 15}, lt=True) == 0
    assert r.zscore("z", "a") == 15.0
    assert r.zadd("z", {"new": 1}, gt=True) == 1  # GT and LT still add new members
    assert r.zadd("z", {"new2": 1}, lt=True) == 1
    assert r.zadd("z", {"a": 100, "newer": 1}, xx=True, gt=True) == 0
    assert r.zscore("z", "a") == 100.0 and r.zscore("z", "newer") is None


def test_zadd_ch(r):
    r.zadd("z", {"a": 1, "b": 2})
    assert r.zadd("z", {"a": 1, "b": 3, "c": 4}, ch=True) == 2  # b changed, c added
    assert r.zadd("z", {"a": 1}, ch=True) == 0
    assert r.zadd("z", {"a": 0, "b": 100}, ch=True, gt=True) == 1
    assert r.zadd("z", {"a": 5, "d": 1}, ch=True, xx=True) == 1


def test_zadd_incr(r, shared_resp):
    assert r.zadd("z", {"a": 5}, incr=True) == 5.0
    assert r.zadd("z", {"a": 2.5}, incr=True) == 7.5
    assert wire(shared_resp, "ZADD", "z", "INCR", "1", "a") == ("$", b"8.5")
    assert wire(shared_resp, "ZADD", "z", "NX", "INCR", "1", "a") == ("$", None)
    assert wire(shared_resp, "ZADD", "z", "XX", "INCR", "1", "nope") == ("$", None)
    assert wire(shared_resp, "ZADD", "z", "GT", "INCR", "-1", "a") == ("$", None)
    assert wire(shared_resp, "ZADD", "z", "LT", "INCR", "-1", "a") == ("$", b"7.5")
    assert wire(shared_resp, "ZADD", "z", "CH", "INCR", "1", "b") == ("$", b"1")
    assert r.zscore("z", "a") == 7.5


def test_zincrby(r, shared_resp):
    assert r.zincrby("z", 2, "a") == 2.0
    assert r.zincrby("z", -0.5, "a") == 1.5
    assert wire(shared_resp, "ZINCRBY", "z", "10", "a") == ("$", b"11.5")
    assert r.zcard("z") == 1


def test_zmscore(r):
    r.zadd("z", {"a": 1, "b": 2})
    assert r.zmscore("z", ["b", "nope", "a"]) == [2.0, None, 1.0]
    assert r.zmscore("nokey", ["a", "b"]) == [None, None]


def test_zcard(r):
    assert r.zcard("nokey") == 0
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zcard("z") == 3


def test_zrank_zrevrank(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert [r.zrank("z", m) for m in "abcd"] == [0, 1, 2, 3]
    assert [r.zrevrank("z", m) for m in "abcd"] == [3, 2, 1, 0]
    assert r.zrank("z", "nope") is None and r.zrevrank("z", "nope") is None
    assert r.zrank("nokey", "a") is None


@ours_only("ZRANK/ZREVRANK WITHSCORE are Redis 7.2's; the reference redis-server 7.0.15 lacks them")
def test_zrank_withscore(r, shared_resp):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    assert wire(shared_resp, "ZRANK", "z", "b", "WITHSCORE") == ("*", [(":", 1), ("$", b"2.5")])
    assert wire(shared_resp, "ZREVRANK", "z", "b", "withscore") == ("*", [(":", 1), ("$", b"2.5")])
    assert wire(shared_resp, "ZRANK", "z", "nope", "WITHSCORE") == ("*", None)
    assert r.zrank("z", "c", withscore=True) == [2, 3.0]
    assert error_of(shared_resp, "ZRANK", "z", "b", "NOSUCH") == b"ERR syntax error"


def test_zrange_by_index(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.zrange("z", 0, -1) == [b"a", b"b", b"c", b"d"]
    assert r.zrange("z", 1, 2) == [b"b", b"c"]
    assert r.zrange("z", -2, -1) == [b"c", b"d"]
    assert r.zrange("z", -100, 100) == [b"a", b"b", b"c", b"d"]
    assert r.zrange("z", 5, 10) == []
    assert r.zrange("z", 2, 1) == []
    assert r.zrange("nokey", 0, -1) == []


def test_zrange_withscores_and_rev(r, shared_resp):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    assert r.zrange("z", 0, -1, withscores=True) == [(b"a", 1.0), (b"b", 2.5), (b"c", 3.0)]
    assert r.zrange("z", 0, 0, desc=True) == [b"c"]
    assert wire(shared_resp, "ZRANGE", "z", "0", "1", "REV", "WITHSCORES") == (
        "*", [("$", b"c"), ("$", b"3"), ("$", b"b"), ("$", b"2.5")])
    assert wire(shared_resp, "ZRANGE", "z", "0", "1", "withscores", "rev") == (
        "*", [("$", b"c"), ("$", b"3"), ("$", b"b"), ("$", b"2.5")])
    assert wire(shared_resp, "ZRANGE", "z", "-1", "-1", "WITHSCORES") == (
        "*", [("$", b"c"), ("$", b"3")])


def test_zrevrange(r, shared_resp):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zrevrange("z", 0, -1) == [b"c", b"b", b"a"]
    assert r.zrevrange("z", 0, 1, withscores=True) == [(b"c", 3.0), (b"b", 2.0)]
    assert wire(shared_resp, "ZREVRANGE", "z", "1", "5", "WITHSCORES") == (
        "*", [("$", b"b"), ("$", b"2"), ("$", b"a"), ("$", b"1")])
    assert r.zrevrange("nokey", 0, -1) == []


def test_zrem(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zrem("z", "a", "nope", "a") == 1
    assert r.zrem("nokey", "a") == 0
    assert r.zrange("z", 0, -1) == [b"b", b"c"]
    assert r.zrem("z", "b", "c") == 2
    assert r.exists("z") == 0 and r.type("z") == b"none"  # the last member takes the set


def test_del_exists_type_of_a_sorted_set(r):
    r.zadd("z:1", {"a": 1})
    r.set("k:1", "v")
    assert r.type("z:1") == b"zset"
    assert r.exists("z:1", "k:1", "nope") == 2
    assert r.delete("z:1", "k:1") == 2
    assert r.exists("z:1") == 0 and r.zcard("z:1") == 0


def test_unlink_of_a_sorted_set(r):
    r.zadd("z:1", {"a": 1, "b": 2})
    assert r.unlink("z:1") == 1
    assert r.zcard("z:1") == 0


@ours_only("equal scores rank by arrival (Redis: by member, lexicographically)")
def test_equal_scores_rank_by_arrival(r):
    # Highest first, and at equal scores the member that reached the score first ranks higher
    # (docs/api.md, "Boards"): ZREVRANGE lists arrival order, ZRANGE the reverse.
    r.zadd("z", {"m": 5})
    r.zadd("z", {"c": 5})
    r.zadd("z", {"x": 5})
    r.zadd("z", {"a": 9, "b": 1})
    assert r.zrevrange("z", 0, -1) == [b"a", b"m", b"c", b"x", b"b"]
    assert r.zrange("z", 0, -1) == [b"b", b"x", b"c", b"m", b"a"]
    assert r.zrevrank("z", "m") == 1 and r.zrevrank("z", "x") == 3
    assert r.zrank("z", "x") == 1
    r.zadd("z", {"m": 5})  # the same score: m keeps its place
    assert r.zrevrange("z", 0, -1) == [b"a", b"m", b"c", b"x", b"b"]
    r.zincrby("z", 0, "c")  # incr by 0: c keeps its place
    assert r.zrevrange("z", 0, -1) == [b"a", b"m", b"c", b"x", b"b"]
    r.zadd("z", {"m": 6})
    r.zadd("z", {"m": 5})  # changed and back: m is now the latest arrival at 5
    assert r.zrevrange("z", 0, -1) == [b"a", b"c", b"x", b"m", b"b"]


@ours_only("keys and boards are two namespaces (Redis: one keyspace, WRONGTYPE)")
def test_a_string_and_a_sorted_set_of_one_name(r):
    r.set("same", "v")
    assert r.zadd("same", {"m": 1}) == 1
    assert r.get("same") == b"v"
    assert r.zscore("same", "m") == 1.0
    assert r.strlen("same") == 1
    # DEL and EXISTS address both; whether a name that is both counts once or twice is open.
    assert r.exists("same") in (1, 2)
    assert r.delete("same") in (1, 2)
    assert r.exists("same") == 0
    assert r.get("same") is None and r.zcard("same") == 0


# --- server ----------------------------------------------------------------------------------

def test_info_sections(r, shared_resp):
    r.set("k:1", "v")
    r.set("k:2", "v", ex=100)
    info = r.info()
    for field in ("redis_version", "tcp_port", "uptime_in_seconds", "connected_clients",
                  "used_memory", "maxmemory", "total_commands_processed",
                  "total_connections_received", "keyspace_hits", "keyspace_misses", "loading"):
        assert field in info, field
    assert info["tcp_port"] == shared_resp.resp_port
    assert info["connected_clients"] >= 1
    assert isinstance(info["used_memory"], int) and isinstance(info["maxmemory"], int)
    assert info["loading"] == 0
    assert info["db0"]["keys"] == 2
    if AGAINST_REDIS:
        assert info["db0"]["expires"] == 1
    else:  # ours does not count the keys with a TTL (docs/resp.md, "Differences from Redis")
        assert info["db0"]["expires"] == 0
    server = r.info("server")
    assert "redis_version" in server and "used_memory" not in server
    assert "connected_clients" in r.info("clients")
    assert "used_memory" in r.info("memory")
    assert "total_commands_processed" in r.info("stats")
    assert "loading" in r.info("persistence")
    # Redis's avg_ttl is re-estimated by its expire cycle (every 100 ms): a loaded machine sees it
    # change between two INFO calls. The rest of db0's line must not.
    keyspace = r.info("keyspace")
    assert list(keyspace) == ["db0"]
    assert {**keyspace["db0"], "avg_ttl": None} == {**info["db0"], "avg_ttl": None}


def test_info_empty_keyspace_and_unknown_section(r):
    assert r.info("keyspace") == {}
    assert raw(r, "INFO", "nosuchsection") == b""


def test_info_server_multiple_sections(r):
    both = r.info("server", "clients")
    assert "redis_version" in both and "connected_clients" in both


def test_config_get(r):
    got = r.config_get("maxmemory")
    assert list(got) == ["maxmemory"] and got["maxmemory"].isdigit()
    assert r.config_get("databases") == {"databases": "1"}
    assert isinstance(r.config_get("save")["save"], str)
    assert r.config_get("appendonly")["appendonly"] in ("yes", "no")
    assert r.config_get("nosuchparameter") == {}
    many = raw(r, "CONFIG", "GET", "maxmemory", "databases")
    assert sorted(many[::2]) == [b"databases", b"maxmemory"]


def test_flushall_flushdb(r):
    r.mset({"k:1": "a", "k:2": "b"})
    r.zadd("z:1", {"m": 1})
    assert r.flushall() is True
    assert r.dbsize() == 0 and r.zcard("z:1") == 0 and r.get("k:1") is None
    r.set("k:1", "a")
    r.zadd("z:1", {"m": 1})
    assert r.flushdb() is True
    assert r.exists("k:1", "z:1") == 0


def test_flushall_with_the_token_needs_auth(resp_server):
    srv = resp_server(token=TOKEN)
    admin = srv.client(password=TOKEN)
    admin.set("k:1", "v")
    admin.zadd("z:1", {"m": 1})
    with Wire(srv.resp_port) as w:
        for cmd in ("FLUSHALL", "FLUSHDB"):
            assert w.call(cmd) == ("-", b"NOAUTH Authentication required.")
        assert admin.get("k:1") == b"v" and admin.zcard("z:1") == 1  # a refused reset: nothing
        assert w.call("AUTH", "not-the-token-at-all")[0] == "-"
        assert w.call("FLUSHALL")[0] == "-"
        assert admin.get("k:1") == b"v"
        assert w.call("AUTH", TOKEN) == ("+", b"OK")
        assert w.call("FLUSHALL") == ("+", b"OK")
    assert admin.get("k:1") is None and admin.zcard("z:1") == 0


@ours_only("the token guards the reset only (Redis's requirepass guards every command)")
def test_the_token_guards_only_the_reset(resp_server):
    srv = resp_server(token=TOKEN)
    c = srv.client()
    assert c.set("k", "v") is True and c.get("k") == b"v"
    assert c.zadd("z", {"m": 1}) == 1
    with pytest.raises(redis.AuthenticationError):
        c.flushall()


@ours_only("a store without a token or --allow-reset refuses FLUSHALL, as POST /reset")
def test_flushall_with_a_store_is_refused_without_token_or_allow_reset(resp_server, tmp_path):
    srv = resp_server(store=tmp_path / "db")
    c = srv.client()
    c.set("k", "v")
    c.zadd("z", {"m": 1})
    for cmd in ("FLUSHALL", "FLUSHDB"):
        kind, text = wire(srv, cmd)
        assert kind == "-" and b"reset is disabled with a store" in text, text
    assert c.get("k") == b"v" and c.zcard("z") == 1


def test_flushall_with_a_store_and_allow_reset(resp_server, tmp_path):
    srv = resp_server(store=tmp_path / "db", allow_reset=True)
    c = srv.client()
    c.set("k", "v")
    c.zadd("z", {"m": 1})
    assert c.flushall() is True
    assert c.get("k") is None and c.zcard("z") == 0


def test_flushall_with_a_store_and_the_token(resp_server, tmp_path):
    srv = resp_server(store=tmp_path / "db", token=TOKEN)
    c = srv.client(password=TOKEN)
    c.set("k", "v")
    assert c.flushall() is True
    assert c.get("k") is None


# --- errors, as Redis words them --------------------------------------------------------------

ARITY = [
    (("GET",), "get"), (("GET", "a", "b"), "get"), (("SET", "k"), "set"),
    (("PING", "a", "b"), "ping"), (("ECHO",), "echo"), (("ECHO", "a", "b"), "echo"),
    (("SELECT",), "select"), (("AUTH",), "auth"), (("DBSIZE", "x"), "dbsize"),
    (("DEL",), "del"), (("UNLINK",), "unlink"), (("EXISTS",), "exists"), (("MGET",), "mget"),
    (("MSET", "a"), "mset"), (("MSET", "a", "1", "b"), "mset"), (("SETEX", "k", "10"), "setex"),
    (("GETDEL",), "getdel"), (("EXPIRE", "k"), "expire"), (("PEXPIRE", "k"), "pexpire"),
    (("TTL",), "ttl"), (("PTTL",), "pttl"), (("PERSIST",), "persist"), (("TYPE",), "type"),
    (("STRLEN",), "strlen"), (("ZADD", "z", "1"), "zadd"), (("ZINCRBY", "z", "1"), "zincrby"),
    (("ZSCORE", "z"), "zscore"), (("ZMSCORE", "z"), "zmscore"), (("ZCARD",), "zcard"),
    (("ZRANK", "z"), "zrank"), (("ZREVRANK", "z"), "zrevrank"), (("ZRANGE", "z", "0"), "zrange"),
    (("ZREVRANGE", "z", "0"), "zrevrange"), (("ZREM", "z"), "zrem"),
    (("CLIENT",), "client"), (("CLIENT", "SETNAME"), "client|setname"),
    (("CLIENT", "GETNAME", "x"), "client|getname"), (("CLIENT", "ID", "x"), "client|id"),
    (("CONFIG",), "config"), (("CONFIG", "GET"), "config|get"),
    (("COMMAND", "COUNT", "x"), "command|count"),
]


@pytest.mark.parametrize("args,name", ARITY, ids=[" ".join(a) for a, _ in ARITY])
def test_wrong_number_of_arguments(shared_resp, args, name):
    assert error_of(shared_resp, *args) == (
        f"ERR wrong number of arguments for '{name}' command".encode())


SYNTAX = [
    ("SET", "k", "v", "NX", "XX"), ("SET", "k", "v", "EX"), ("SET", "k", "v", "NOSUCH"),
    ("SET", "k", "v", "KEEPTTL", "EX", "10"), ("SET", "k", "v", "EX", "10", "PX", "100"),
    ("SET", "k", "v", "EX", "10", "EXAT", "99999999999"), ("ZADD", "z", "1", "a", "2"),
    ("ZRANGE", "z", "0", "1", "NOSUCH"), ("ZREVRANGE", "z", "0", "1", "REV"),
    ("ZREVRANGE", "z", "0", "1", "WITHSCORES", "x"), ("FLUSHALL", "x"),
]


@pytest.mark.parametrize("args", SYNTAX, ids=[" ".join(a) for a in SYNTAX])
def test_syntax_error(shared_resp, args):
    assert error_of(shared_resp, *args) == b"ERR syntax error"


NOT_AN_INTEGER = [
    ("SET", "k", "v", "EX", "x"), ("SET", "k", "v", "PX", "1.5"),
    ("SET", "k", "v", "EX", "9223372036854775808"), ("SETEX", "k", "x", "v"),
    ("EXPIRE", "k", "x"), ("PEXPIRE", "k", "1.5"), ("SELECT", "x"), ("ZRANGE", "z", "a", "1"),
    ("ZREVRANGE", "z", "0", "b"),
]


@pytest.mark.parametrize("args", NOT_AN_INTEGER, ids=[" ".join(a) for a in NOT_AN_INTEGER])
def test_not_an_integer(shared_resp, args):
    assert error_of(shared_resp, *args) == b"ERR value is not an integer or out of range"


INVALID_EXPIRE = [
    (("SET", "k", "v", "EX", "0"), "set"), (("SET", "k", "v", "PX", "-1"), "set"),
    (("SET", "k", "v", "EX", "9223372036854775807"), "set"), (("SETEX", "k", "0", "v"), "setex"),
    (("SETEX", "k", "-1", "v"), "setex"), (("EXPIRE", "k", "9223372036854775807"), "expire"),
    (("PEXPIRE", "k", "9223372036854775807"), "pexpire"),
]


@pytest.mark.parametrize("args,name", INVALID_EXPIRE, ids=[" ".join(a) for a, _ in INVALID_EXPIRE])
def test_invalid_expire_time(r, shared_resp, args, name):
    r.set("k", "v")
    assert error_of(shared_resp, *args) == f"ERR invalid expire time in '{name}' command".encode()
    assert r.get("k") == b"v"  # an error changes nothing


OPTION_ERRORS = [
    (("ZADD", "z", "x", "a"), b"ERR value is not a valid float"),
    (("ZADD", "z", "nan", "a"), b"ERR value is not a valid float"),
    (("ZINCRBY", "z", "x", "a"), b"ERR value is not a valid float"),
    (("ZADD", "z", "NX", "XX", "1", "a"), b"ERR XX and NX options at the same time are not compatible"),
    (("ZADD", "z", "GT", "LT", "1", "a"), b"ERR GT, LT, and/or NX options at the same time are not compatible"),
    (("ZADD", "z", "NX", "GT", "1", "a"), b"ERR GT, LT, and/or NX options at the same time are not compatible"),
    (("ZADD", "z", "INCR", "1", "a", "2", "b"), b"ERR INCR option supports a single increment-element pair"),
    (("EXPIRE", "k", "10", "NX", "XX"), b"ERR NX and XX, GT or LT options at the same time are not compatible"),
    (("EXPIRE", "k", "10", "NX", "GT"), b"ERR NX and XX, GT or LT options at the same time are not compatible"),
    (("EXPIRE", "k", "10", "GT", "LT"), b"ERR GT and LT options at the same time are not compatible"),
    (("PEXPIRE", "k", "10", "GT", "LT"), b"ERR GT and LT options at the same time are not compatible"),
    (("EXPIRE", "k", "10", "NOSUCH"), b"ERR Unsupported option NOSUCH"),
]


@pytest.mark.parametrize("args,text", OPTION_ERRORS, ids=[" ".join(a) for a, _ in OPTION_ERRORS])
def test_option_errors(r, shared_resp, args, text):
    r.set("k", "v")
    assert error_of(shared_resp, *args) == text
    assert r.zcard("z") == 0 and r.ttl("k") == -1


def test_unknown_command(shared_resp):
    assert error_of(shared_resp, "NOSUCH", "a", "b c") == (
        b"ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b c' ")
    assert error_of(shared_resp, "nosuch") == (
        b"ERR unknown command 'nosuch', with args beginning with: ")


def test_unknown_command_with_long_arguments(shared_resp):
    # Redis quotes 128 bytes of the name at most, and adds arguments while the quoted list is
    # under 128 bytes, each cut to what is left of the 128.
    text = error_of(shared_resp, "N" * 200, "a" * 100, "b" * 100, "c")
    want = ("ERR unknown command '" + "N" * 128 + "', with args beginning with: '" + "a" * 100
            + "' '" + "b" * 25 + "' ")
    assert text == want.encode()
    assert error_of(shared_resp, "X", "a" * 200) == (
        b"ERR unknown command 'X', with args beginning with: '" + b"a" * 128 + b"' ")
    assert error_of(shared_resp, "X", *["abcdefghij"] * 20) == (
        b"ERR unknown command 'X', with args beginning with: " + b"'abcdefghij' " * 10)


@ours_only("commands off docs/resp.md's list are unknown to us; Redis runs them")
@pytest.mark.parametrize("args", [("LPUSH", "l", "a"), ("KEYS", "*"), ("INCR", "k"),
                                  ("HSET", "h", "f", "v")], ids=lambda a: a[0])
def test_commands_off_the_list_are_unknown(shared_resp, args):
    quoted = "".join(f"'{a}' " for a in args[1:])
    assert error_of(shared_resp, *args) == (
        f"ERR unknown command '{args[0]}', with args beginning with: {quoted}".encode())


def test_an_error_leaves_the_connection_usable(shared_resp):
    with Wire(shared_resp.resp_port) as w:
        assert w.call("GET")[0] == "-"
        assert w.call("NOSUCH")[0] == "-"
        assert w.call("SET", "k", "v") == ("+", b"OK")
        assert w.call("GET", "k") == ("$", b"v")


# --- the protocol -----------------------------------------------------------------------------

def test_pipeline_of_100_commands_in_order(r):
    p = r.pipeline(transaction=False)
    for i in range(50):
        p.set(f"k:{i}", f"v{i}")
        p.get(f"k:{i}" if i % 5 else f"nope:{i}")
    got = p.execute()
    assert len(got) == 100
    for i in range(50):
        assert got[2 * i] is True
        assert got[2 * i + 1] == (f"v{i}".encode() if i % 5 else None)


def test_pipeline_mixes_keys_boards_and_errors_in_order(r):
    p = r.pipeline(transaction=False)
    for i in range(25):
        p.zadd("z:p", {f"m{i}": i})
        p.execute_command("GET")  # wrong arity: an error in its place
        p.set(f"k:{i}", str(i))
        p.zcard("z:p")
    got = p.execute(raise_on_error=False)
    assert len(got) == 100
    for i in range(25):
        assert got[4 * i] == 1
        assert isinstance(got[4 * i + 1], redis.ResponseError)
        assert got[4 * i + 2] is True
        assert got[4 * i + 3] == i + 1


def test_pipelined_bytes_in_one_write(shared_resp):
    with Wire(shared_resp.resp_port) as w:
        w.send_many([("SET", f"k:{i}", "x" * i) for i in range(200)]
                    + [("STRLEN", f"k:{i}") for i in range(200)])
        assert [w.read() for _ in range(200)] == [("+", b"OK")] * 200
        assert [w.read() for _ in range(200)] == [(":", i) for i in range(200)]


def test_a_request_split_across_writes(shared_resp):
    data = Wire.encode(("SET", "split", "value")) + Wire.encode(("GET", "split"))
    with Wire(shared_resp.resp_port) as w:
        for i in range(len(data)):
            w.sock.sendall(data[i:i + 1])
        assert w.read() == ("+", b"OK")
        assert w.read() == ("$", b"value")


def test_inline_commands(shared_resp):
    with Wire(shared_resp.resp_port) as w:
        w.sock.sendall(b"PING\r\nSET inline  value\r\nGET inline\nECHO \"two words\"\r\n")
        assert w.read() == ("+", b"PONG")
        assert w.read() == ("+", b"OK")
        assert w.read() == ("$", b"value")
        assert w.read() == ("$", b"two words")


# --- redis-cli ---------------------------------------------------------------------------------

def cli(srv, *args, flags=()):
    p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(srv.resp_port), *flags, *args],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_redis_cli_ping(shared_resp):
    assert cli(shared_resp, "PING") == "PONG\n"


def test_redis_cli_set_get(r, shared_resp):
    assert cli(shared_resp, "SET", "cli", "hello world") == "OK\n"
    assert cli(shared_resp, "GET", "cli") == "hello world\n"
    assert cli(shared_resp, "GET", "nope") == "\n"


def test_redis_cli_info_server(shared_resp):
    out = cli(shared_resp, "INFO", "server")
    assert out.startswith("# Server") and "redis_version:" in out
    assert f"tcp_port:{shared_resp.resp_port}" in out


def test_redis_cli_zrange_withscores_no_raw(r, shared_resp):
    r.zadd("z", {"alice": 10, "bob": 20.5})
    assert cli(shared_resp, "ZRANGE", "z", "0", "-1", "WITHSCORES", flags=["--no-raw"]) == (
        '1) "alice"\n2) "10"\n3) "bob"\n4) "20.5"\n')


def test_redis_cli_pipe(r, shared_resp):
    data = b"".join(Wire.encode(("SET", f"k:{i}", str(i))) for i in range(1000))
    p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(shared_resp.resp_port),
                        "--pipe"], input=data, capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert b"errors: 0, replies: 1000" in p.stdout
    assert r.get("k:999") == b"999"


# --- both fronts, one meaning -------------------------------------------------------------------

HTTP_ONLY = "needs our HTTP front"


def http(srv, method, path, body=b""):
    return rawhttp.exchange(srv.proc, method, path, body=body)


@ours_only(HTTP_ONLY)
@pytest.mark.parametrize("key,path", [("plain", "plain"), ("a b/\xfc", "a%20b%2F%C3%BC")])
def test_resp_set_reads_back_over_http(r, shared_resp, key, path):
    value = bytes(range(256)) * 3
    assert r.set(key, value) is True
    got = http(shared_resp, "GET", "/key/" + path)
    assert got.status == 200 and got.body == value


@ours_only(HTTP_ONLY)
def test_http_put_reads_back_over_resp(r, shared_resp):
    value = b"\x00\r\n" + bytes(range(256))
    assert http(shared_resp, "PUT", "/key/from-http", value).status in (201, 204)
    assert r.get("from-http") == value
    assert r.strlen("from-http") == len(value)
    assert http(shared_resp, "DELETE", "/key/from-http").status == 204
    assert r.get("from-http") is None


@ours_only(HTTP_ONLY)
def test_resp_ttl_is_the_http_ttl(r, shared_resp):
    assert http(shared_resp, "PUT", "/key/t?ttl=100", b"v").status in (201, 204)
    assert 98 <= r.ttl("t") <= 100
    r.set("t2", "v", ex=1)
    time.sleep(1.3)
    assert http(shared_resp, "GET", "/key/t2").status == 404


@ours_only(HTTP_ONLY)
def test_zadd_shows_in_the_http_top(r, shared_resp):
    r.zadd("lb", {"alice": 10, "bob": 20.5, "carol": 15})
    got = http(shared_resp, "GET", "/board/lb/top?n=10")
    assert got.status == 200
    assert json.loads(got.body) == {"board": "lb", "members": 3, "entries": [
        {"rank": 1, "member": "bob", "score": 20.5},
        {"rank": 2, "member": "carol", "score": 15},
        {"rank": 3, "member": "alice", "score": 10}]}
    r.zrem("lb", "bob")
    assert json.loads(http(shared_resp, "GET", "/board/lb/top").body)["members"] == 2


@ours_only(HTTP_ONLY)
def test_the_top_cache_keeps_each_fronts_rendering_and_follows_updates(r, shared_resp):
    """ZREVRANGE's top ranks are kept rendered in the board's top cache beside the HTTP top's
    JSON (boards/top_cache.hh: one entry per form): each front gets its own form, and an update
    within the kept ranks is seen at once by both."""
    r.zadd("lb", {f"m{i}": i for i in range(20)})
    top = http(shared_resp, "GET", "/board/lb/top?n=10")  # the JSON form, cached
    assert json.loads(top.body)["entries"][0] == {"rank": 1, "member": "m19", "score": 19}
    with Wire(shared_resp.resp_port) as w:
        for _ in range(2):  # rendered, then from the cache
            kind, items = w.call("ZREVRANGE", "lb", "0", "9", "WITHSCORES")
            assert [v for _, v in items[:4]] == [b"m19", b"19", b"m18", b"18"], items
            assert len(items) == 20
            assert w.call("ZREVRANGE", "lb", "0", "9")[1][:2] == [("$", b"m19"), ("$", b"m18")]
        assert w.call("HELLO", "3")[0] == "%"
        kind, items = w.call("ZREVRANGE", "lb", "0", "1", "WITHSCORES")
        assert items == [("*", [("$", b"m19"), (",", b"19")]), ("*", [("$", b"m18"), (",", b"18")])]
        assert w.call("HELLO", "2")[0] == "*"
        assert w.call("ZADD", "lb", "100", "m0") == (":", 0)  # m0 moves to the top
        assert w.call("ZREVRANGE", "lb", "0", "1", "WITHSCORES")[1] == [
            ("$", b"m0"), ("$", b"100"), ("$", b"m19"), ("$", b"19")]
        assert w.call("ZREVRANGE", "lb", "0", "9")[1][0] == ("$", b"m0")
    top = http(shared_resp, "GET", "/board/lb/top?n=10")
    assert json.loads(top.body)["entries"][0] == {"rank": 1, "member": "m0", "score": 100}


@ours_only(HTTP_ONLY)
def test_http_board_put_shows_in_zscore(r, shared_resp):
    assert http(shared_resp, "PUT", "/board/lb/member/dave", b"42").status == 201
    assert r.zscore("lb", "dave") == 42.0
    assert r.zrevrank("lb", "dave") == 0
    assert r.type("lb") == b"zset"
    assert http(shared_resp, "DELETE", "/board/lb").status == 204
    assert r.zcard("lb") == 0


@ours_only(HTTP_ONLY)
def test_flushall_empties_what_http_sees(r, shared_resp):
    r.set("k", "v")
    r.zadd("lb", {"m": 1})
    r.flushall()
    assert http(shared_resp, "GET", "/key/k").status == 404
    assert http(shared_resp, "GET", "/board/lb/top").status == 404


@ours_only("needs our store and our HTTP front")
def test_kill9_after_set_reads_back_over_http(resp_server, tmp_path):
    store = tmp_path / "db"
    srv = resp_server(store=store)
    c = srv.client()
    written = {f"durable:{i}": f"value {i} ".encode() * (i + 1) for i in range(50)}
    for k, v in written.items():
        assert c.set(k, v) is True  # +OK: durable (write-through)
    assert c.zadd("lb", {"m": 7}) == 1
    c.close()
    srv.proc.proc.send_signal(signal.SIGKILL)
    srv.proc.proc.wait(timeout=10)
    again = resp_server(store=store)
    for k, v in written.items():
        got = http(again, "GET", "/key/" + k.replace(":", "%3A"))
        assert got.status == 200 and got.body == v, k
    assert again.client().zscore("lb", "m") == 7.0
