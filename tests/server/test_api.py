"""The HTTP API contract of cache_server, route by route and error by error (docs/api.md)."""
import json
import os
import socket
import subprocess
import time

import pytest

from rawhttp import Reader, exchange, raw_exchange, request_bytes


def put(server, key, value, **kw):
    return exchange(server, "PUT", "/key/" + key, body=value, **kw)


def assert_json_error(resp, status):
    assert resp.status == status, resp
    assert resp.headers["content-type"] == "application/json"
    doc = resp.json()
    assert set(doc) == {"error"} and isinstance(doc["error"], str) and doc["error"]


# --- GET --------------------------------------------------------------------------------------

def test_get_hit_returns_raw_value(server):
    assert put(server, "k1", b"hello").status == 201
    r = exchange(server, "GET", "/key/k1")
    assert r.status == 200
    assert r.body == b"hello"
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-length"] == "5"


def test_get_miss_is_404_json(server):
    assert_json_error(exchange(server, "GET", "/key/absent"), 404)


def test_get_json_tuple(server):
    put(server, "jk", b'say "hi"\n')
    r = exchange(server, "GET", "/key/jk", headers={"Accept": "application/json"})
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"key": "jk", "value": 'say "hi"\n'}
    assert r.body.startswith(b'{"key": "jk", "value": ')


def test_get_json_escapes_non_utf8_reversibly(server):
    value = bytes(range(256))
    put(server, "bin%FF%C3%A9", value)
    r = exchange(server, "GET", "/key/bin%FF%C3%A9", headers={"Accept": "text/html, application/json;q=0.9"})
    assert r.status == 200
    doc = json.loads(r.body.decode("ascii" if r.body.isascii() else "utf-8"))
    assert doc["value"].encode("utf-8", "surrogateescape") == value
    assert doc["key"].encode("utf-8", "surrogateescape") == b"bin\xff\xc3\xa9"
    assert "\\udcff" in r.body.decode("utf-8")


def test_get_json_miss_is_404(server):
    r = exchange(server, "GET", "/key/nothing", headers={"Accept": "application/json"})
    assert_json_error(r, 404)


# --- PUT --------------------------------------------------------------------------------------

def test_put_created_then_replaced(server):
    assert put(server, "p", b"1").status == 201
    r = put(server, "p", b"22")
    assert r.status == 204 and r.body == b""
    assert exchange(server, "GET", "/key/p").body == b"22"


def test_put_chunked_body(server):
    body = b"5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n"
    r = exchange(server, "PUT", "/key/ch", headers={"Transfer-Encoding": "chunked"}, body=body)
    assert r.status == 201
    assert exchange(server, "GET", "/key/ch").body == b"hello world"


def test_put_course_form_path_value(server):
    assert exchange(server, "PUT", "/key/cf/a%20b%2Fc").status == 201
    assert exchange(server, "GET", "/key/cf").body == b"a b/c"
    assert exchange(server, "PUT", "/key/cf/x").status == 204
    assert exchange(server, "GET", "/key/cf").body == b"x"


def test_put_course_form_bad_encoding_is_400(server):
    assert_json_error(exchange(server, "PUT", "/key/cf/a%2"), 400)


def test_empty_value(server):
    assert exchange(server, "PUT", "/key/empty", headers={"Content-Length": "0"}).status == 201
    r = exchange(server, "GET", "/key/empty")
    assert r.status == 200 and r.body == b"" and r.headers["content-length"] == "0"
    assert exchange(server, "PUT", "/key/empty2/").status == 201
    assert exchange(server, "HEAD", "/key/empty2").headers["content-length"] == "0"


def test_binary_value_round_trip(server):
    value = bytes(range(256)) * 40 + b"\r\n\r\n\x00"
    assert put(server, "bin", value).status == 201
    assert exchange(server, "GET", "/key/bin").body == value


def test_put_expect_100_continue(server):
    with server.connect() as s:
        s.sendall(request_bytes("PUT", "/key/cont", {"Content-Length": "4", "Expect": "100-continue"}))
        r = Reader(s)
        interim = r.read(skip_continue=False)
        assert interim.status == 100
        s.sendall(b"data")
        assert r.read().status == 201
    assert exchange(server, "GET", "/key/cont").body == b"data"


# --- DELETE / HEAD / reset / stats ------------------------------------------------------------

def test_delete(server):
    put(server, "d", b"x")
    r = exchange(server, "DELETE", "/key/d")
    assert r.status == 204 and r.body == b""
    assert_json_error(exchange(server, "DELETE", "/key/d"), 404)
    assert exchange(server, "GET", "/key/d").status == 404


def test_head_key_and_root_carry_space_used(server):
    put(server, "hk", b"12345")
    r = exchange(server, "HEAD", "/key/hk")
    assert r.status == 200 and r.headers["content-length"] == "5"
    assert r.headers["space-used"] == "7"
    miss = exchange(server, "HEAD", "/key/none")
    assert miss.status == 404 and miss.headers["space-used"] == "7"
    root = exchange(server, "HEAD", "/")
    assert root.status == 200 and root.headers["space-used"] == "7"
    bad = exchange(server, "HEAD", "/key/")
    assert bad.status == 400 and bad.headers["space-used"] == "7"


def test_head_sends_no_body_on_keepalive(server):
    put(server, "hb", b"abc")
    with server.connect() as s:
        s.sendall(request_bytes("HEAD", "/key/hb") + request_bytes("GET", "/key/hb"))
        r = Reader(s)
        assert r.read(head_request=True).status == 200
        second = r.read()
        assert second.status == 200 and second.body == b"abc"


def test_reset(server):
    put(server, "r1", b"x")
    put(server, "r2", b"y")
    r = exchange(server, "POST", "/reset")
    assert r.status == 204
    assert exchange(server, "GET", "/key/r1").status == 404
    assert exchange(server, "HEAD", "/").headers["space-used"] == "0"


# --- the admin route: POST /reset with --admin-token-file (docs/server.md, "Security model") -----

ADMIN_TOKEN = "0123456789abcdef-admin-token"


def admin_server(start_server, tmp_path, *flags):
    """A server whose --admin-token-file holds ADMIN_TOKEN (with trailing whitespace to trim)."""
    path = tmp_path / "admin.token"
    path.write_text(ADMIN_TOKEN + " \t\n\n")
    return start_server("--admin-token-file", path, *flags)


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def test_reset_with_a_token_needs_it(start_server, tmp_path):
    srv = admin_server(start_server, tmp_path)
    assert " reset=token " in srv.config_line
    assert ADMIN_TOKEN not in b"\n".join(srv.stdout_lines).decode()  # never printed
    put(srv, "kept", b"v")
    r = exchange(srv, "POST", "/reset")
    assert_json_error(r, 401)
    assert r.headers["www-authenticate"] == "Bearer"
    for auth in (f"Basic {ADMIN_TOKEN}", "Bearer", ADMIN_TOKEN):  # other schemes: no credentials
        r = exchange(srv, "POST", "/reset", headers={"Authorization": auth})
        assert r.status == 401 and r.headers["www-authenticate"] == "Bearer", auth
    for wrong in ("nope", ADMIN_TOKEN[:-1], ADMIN_TOKEN + "x", ADMIN_TOKEN.upper(),
                  ADMIN_TOKEN + " \t\n"[:1] + "x"):
        r = exchange(srv, "POST", "/reset", headers=bearer(wrong))
        assert_json_error(r, 403)
        assert r.json()["error"] == "wrong admin token"
    # Neither refusal changed anything.
    assert exchange(srv, "GET", "/key/kept").body == b"v"
    assert exchange(srv, "POST", "/reset?scope=all").status == 401
    assert exchange(srv, "GET", "/key/kept").status == 200
    # The right token, its scheme in any case: 204, and the data is gone.
    r = exchange(srv, "POST", "/reset", headers={"Authorization": f"bearer {ADMIN_TOKEN}"})
    assert r.status == 204, r
    assert exchange(srv, "GET", "/key/kept").status == 404
    put(srv, "again", b"v")
    assert exchange(srv, "POST", "/reset?scope=all", headers=bearer(ADMIN_TOKEN)).status == 204
    assert exchange(srv, "GET", "/key/again").status == 404


def test_reset_scope_cache_stays_open_with_a_token(start_server, tmp_path):
    srv = admin_server(start_server, tmp_path)
    put(srv, "c", b"v")
    assert exchange(srv, "POST", "/reset?scope=cache").status == 204  # no token needed
    assert exchange(srv, "GET", "/key/c").status == 404  # memory only: the cache was all there was
    assert exchange(srv, "POST", "/reset?scope=bogus").status == 400  # scope first, then the token


def test_reset_is_open_without_a_store_or_a_token(start_server):
    srv = start_server()
    assert " reset=open " in srv.config_line
    put(srv, "k", b"v")
    assert exchange(srv, "POST", "/reset").status == 204
    assert exchange(srv, "GET", "/key/k").status == 404


def test_stats_and_metrics_stay_open_with_a_token(start_server, tmp_path):
    srv = admin_server(start_server, tmp_path)
    assert exchange(srv, "GET", "/stats").status == 200
    assert exchange(srv, "GET", "/metrics").status == 200


@pytest.mark.parametrize("content,why", [
    (None, "cannot read --admin-token-file"),                        # missing
    ("", "is empty"),
    (" \n\t\n", "is empty"),                                          # whitespace only
    ("a" * 15 + "\n", "holds a token of 15 bytes: too short"),
    ("0123456789 abcdef", "whitespace, control or non-ASCII"),       # a header could not carry it
    ("\n0123456789abcdef", "whitespace, control or non-ASCII"),      # leading whitespace is kept
    ("a" * 4097, "too long"),
    ("dir", "Is a directory"),                                        # unreadable
])
def test_a_bad_token_file_is_a_start_up_error(server_bin, tmp_path, content, why):
    path = tmp_path / "admin.token"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    p = subprocess.run([server_bin, "-p", "0", "--admin-token-file", path], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 1, p
    assert p.stderr.startswith(f"cache_server: ") and why in p.stderr, p.stderr
    assert str(path) in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stdout == ""  # refused before binding


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode (the "
                    "directory case of test_a_bad_token_file_is_a_start_up_error covers it)")
def test_an_unreadable_token_file_is_a_start_up_error(server_bin, tmp_path):
    path = tmp_path / "admin.token"
    path.write_text(ADMIN_TOKEN)
    path.chmod(0)
    p = subprocess.run([server_bin, "-p", "0", "--admin-token-file", path], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 1 and "Permission denied" in p.stderr, p


def test_a_token_of_16_bytes_is_enough(start_server, tmp_path):
    path = tmp_path / "admin.token"
    path.write_text("x" * 16)
    srv = start_server("--admin-token-file", path)
    assert exchange(srv, "POST", "/reset", headers=bearer("x" * 16)).status == 204


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666, 0o622], ids=lambda m: f"{m:04o}")
def test_a_token_file_group_or_others_may_write_is_a_start_up_error(server_bin, tmp_path, mode):
    """Issue 44: whoever may write the file may change the token: refused at start-up (exit
    2), the message naming the file and its mode, before anything is bound."""
    path = tmp_path / "admin.token"
    path.write_text(ADMIN_TOKEN)
    path.chmod(mode)
    p = subprocess.run([server_bin, "-p", "0", "--admin-token-file", path], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2, p
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith("cache_server: "), p.stderr
    assert f"'{path}'" in p.stderr and f"mode {mode:04o}" in p.stderr, p.stderr
    assert "write" in p.stderr and ADMIN_TOKEN not in p.stderr, p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o400, 0o600], ids=lambda m: f"{m:04o}")
def test_a_token_file_group_or_others_may_read_starts_with_a_warning(start_server, tmp_path,
                                                                     mode):
    """Issue 44: readable by group or others: the server starts, with one warning on stderr
    naming the file and its mode; 0600 (or stricter) starts silently."""
    path = tmp_path / "admin.token"
    path.write_text(ADMIN_TOKEN)
    path.chmod(mode)
    srv = start_server("--admin-token-file", path)
    assert " reset=token " in srv.config_line
    assert exchange(srv, "POST", "/reset", headers=bearer(ADMIN_TOKEN)).status == 204
    code, _, err = srv.stop()
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "--admin-token-file" in line]
    if mode & 0o044:
        assert len(warnings) == 1, err
        assert warnings[0].startswith("cache_server: warning: "), err
        assert f"'{path}'" in warnings[0] and f"mode {mode:04o}" in warnings[0], err
        assert "read" in warnings[0] and ADMIN_TOKEN not in err, err
    else:
        assert warnings == [], err


def test_allow_reset_takes_no_value(server_bin):
    p = subprocess.run([server_bin, "-p", "0", "--allow-reset=yes"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 1 and "--allow-reset takes no value" in p.stderr, p


WARNING = "not a loopback address, without --admin-token-file"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_no_warning_on_loopback(start_server, host):
    srv = start_server("-s", host)
    code, _, err = srv.stop()
    assert code == 0 and WARNING not in err, err


def test_warning_when_listening_beyond_loopback_without_a_token(start_server, tmp_path):
    """0.0.0.0 on an ephemeral port, stopped at once: nothing from outside connects to it."""
    srv = start_server("-s", "0.0.0.0")
    assert srv.alive  # a warning, not an error
    code, _, err = srv.stop()
    assert code == 0, err
    lines = [line for line in err.splitlines() if WARNING in line]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"cache_server: warning: listening on 0.0.0.0:{srv.port}, ")
    assert "POST /reset" in lines[0]  # without a store, reset is open too
    # With a token: no warning.
    srv = admin_server(start_server, tmp_path, "-s", "0.0.0.0")
    code, _, err = srv.stop()
    assert code == 0 and WARNING not in err, err


def test_stats(server):
    put(server, "s1", b"abc")
    exchange(server, "GET", "/key/s1")
    exchange(server, "GET", "/key/nope")
    exchange(server, "DELETE", "/key/s1")
    r = exchange(server, "GET", "/stats")
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    for field in ("items", "space_used", "maxmem", "hits", "misses", "sets", "deletes",
                  "evictions", "requests", "connections", "threads", "uptime_s"):
        assert isinstance(doc[field], (int, float)), field
    assert isinstance(doc["evictor"], str) and doc["evictor"]
    assert doc["items"] == 0 and doc["space_used"] == 0
    assert doc["maxmem"] == 64 << 20 and doc["threads"] == 2
    assert doc["hits"] >= 1 and doc["misses"] >= 1 and doc["sets"] >= 1 and doc["deletes"] >= 1
    assert doc["requests"] >= 5 and doc["connections"] >= 1


def test_stats_counts_exactly(start_server):
    srv = start_server("-e", "lru")
    put(srv, "a", b"1")
    put(srv, "a", b"2")
    for _ in range(3):
        exchange(srv, "GET", "/key/a")
    exchange(srv, "GET", "/key/b")
    exchange(srv, "DELETE", "/key/a")
    doc = exchange(srv, "GET", "/stats").json()
    assert (doc["sets"], doc["hits"], doc["misses"], doc["deletes"]) == (2, 3, 1, 1)
    assert doc["requests"] == 8 and doc["evictor"] == "lru" and doc["threads"] == 1
    for _ in range(100):  # the server may not have seen the last client's close yet
        if doc["connections"] == 1:
            break
        time.sleep(0.02)
        doc = exchange(srv, "GET", "/stats").json()
    assert doc["connections"] == 1  # only the /stats connection is open


def test_evictions_counted(start_server):
    srv = start_server("-m", "1K", "--max-value", "500", "-e", "fifo")
    for i in range(10):
        assert put(srv, f"e{i}", b"v" * 200).status == 201
    doc = exchange(srv, "GET", "/stats").json()
    assert doc["evictions"] == 5 and doc["items"] == 5  # 5 entries of 202 bytes fit in 1 KiB
    assert doc["space_used"] == 1010 and doc["maxmem"] == 1024


# --- keys --------------------------------------------------------------------------------------

def test_percent_encoded_slash_in_key(server):
    assert put(server, "a%2Fb", b"slash").status == 201
    assert exchange(server, "GET", "/key/a%2fb").body == b"slash"
    assert exchange(server, "GET", "/key/a/b").status == 405  # two segments: PUT-only route
    assert exchange(server, "GET", "/key/a%252Fb").status == 404  # literal "a%2Fb"


def test_utf8_key(server):
    key = "ключ-€".encode()
    enc = "".join(f"%{b:02X}" for b in key)
    assert put(server, enc, b"utf8").status == 201
    assert exchange(server, "GET", b"/key/" + key).body == b"utf8"  # raw bytes decode the same
    r = exchange(server, "GET", "/key/" + enc, headers={"Accept": "application/json"})
    assert r.json()["key"] == "ключ-€"


def test_key_length_limits(server):
    assert put(server, "k" * 250, b"v").status == 201
    assert exchange(server, "GET", "/key/" + "k" * 250).body == b"v"
    assert_json_error(put(server, "k" * 251, b"v"), 414)
    assert_json_error(exchange(server, "GET", "/key/" + "%41" * 251), 414)
    assert exchange(server, "GET", "/key/" + "%6B" * 250).body == b"v"


def test_empty_key_is_400(server):
    assert_json_error(exchange(server, "GET", "/key/"), 400)
    assert_json_error(exchange(server, "PUT", "/key//v"), 400)
    assert_json_error(exchange(server, "DELETE", "/key/"), 400)


@pytest.mark.parametrize("key", ["%", "a%2", "%zz", "%G1", "ab%-1"])
def test_invalid_percent_encoding_is_400(server, key):
    assert_json_error(exchange(server, "GET", "/key/" + key), 400)


# --- limits -------------------------------------------------------------------------------------

def test_value_over_max_value_is_413(start_server):
    srv = start_server("--max-value", "1K")
    assert put(srv, "ok", b"x" * 1024).status == 201
    resp, closed = raw_exchange(srv, request_bytes("PUT", "/key/big", body=b"x" * 1025))
    assert_json_error(resp, 413)
    assert closed
    chunked = b"400\r\n" + b"y" * 1024 + b"\r\n1\r\nz\r\n0\r\n\r\n"
    resp, _ = raw_exchange(srv, request_bytes("PUT", "/key/big", {"Transfer-Encoding": "chunked"}, chunked))
    assert_json_error(resp, 413)
    assert_json_error(exchange(srv, "PUT", "/key/big/" + "v" * 1025), 413)
    assert exchange(srv, "GET", "/key/big").status == 404


def test_large_body_over_limit_is_answered_not_reset(start_server):
    srv = start_server("--max-value", "1K")
    with srv.connect() as s:
        s.sendall(request_bytes("PUT", "/key/huge", {"Content-Length": str(4 << 20)}))
        try:
            s.sendall(b"z" * (256 << 10))
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert_json_error(Reader(s).read(), 413)


def test_value_larger_than_maxmem_is_413(start_server):
    srv = start_server("-m", "2K", "--max-value", "2K")  # key + value over maxmem, value not
    assert_json_error(put(srv, "big", b"v" * 2048), 413)
    assert put(srv, "fits", b"v" * 1000).status == 201


def test_max_value_default_is_1m(server):
    assert put(server, "m", b"v" * (1 << 20)).status == 201
    assert len(exchange(server, "GET", "/key/m").body) == 1 << 20
    resp, _ = raw_exchange(server, request_bytes("PUT", "/key/m2", body=b"v" * ((1 << 20) + 1)))
    assert resp.status == 413


def test_no_space_with_evictor_none_is_507(start_server):
    srv = start_server("-m", "1K", "-e", "none")
    assert put(srv, "a", b"v" * 900).status == 201
    assert_json_error(put(srv, "b", b"v" * 900), 507)


# --- routing errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/key", "/keys/a", "/key/a/b/c", "/nothing", "/stats/x"])
def test_unknown_path_is_404(server, path):
    method = "POST" if path == "/" else "GET"
    r = exchange(server, method, path)
    if path == "/":
        assert r.status == 405 and r.headers["allow"] == "HEAD"
    else:
        assert_json_error(r, 404)


@pytest.mark.parametrize("method,path,allow", [
    ("POST", "/key/a", "GET, PUT, DELETE, HEAD"),
    ("PATCH", "/key/a", "GET, PUT, DELETE, HEAD"),
    ("GET", "/key/a/b", "PUT"),
    ("DELETE", "/key/a/b", "PUT"),
    ("GET", "/", "HEAD"),
    ("GET", "/reset", "POST"),
    ("PUT", "/stats", "GET"),
])
def test_wrong_method_is_405_with_allow(server, method, path, allow):
    r = exchange(server, method, path)
    assert_json_error(r, 405)
    assert r.headers["allow"] == allow


def test_unknown_method_is_501(server):
    assert_json_error(exchange(server, "BREW", "/key/a"), 501)
    assert_json_error(exchange(server, "FROB", "/nowhere"), 501)


def test_headers_over_8k_is_431(server):
    resp, closed = raw_exchange(server, request_bytes("GET", "/key/a", {"X-Big": "x" * 9000}))
    assert_json_error(resp, 431)
    assert closed
    many = {f"X-H{i}": "v" * 10 for i in range(600)}
    resp, _ = raw_exchange(server, request_bytes("GET", "/key/a", many))
    assert_json_error(resp, 431)


def test_headers_just_under_8k_are_fine(server):
    assert exchange(server, "GET", "/key/a", headers={"X-Big": "x" * 7000}).status == 404


@pytest.mark.parametrize("data", [
    b"GET /key/a HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
    b"PUT /key/a HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
    b"PUT /key/a HTTP/1.1\r\nContent-Length: 184467440737095516160\r\n\r\n",
    b"PUT /key/a HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n",
    b"GET /key/a HTTP/1.2.3\r\n\r\n",
    b"GET /key/a HTTPS/1.1\r\n\r\n",
    b"GET /key/a HTTP/3.0\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET /key/a HTTP/1.1\r\nNo-Colon-Here\r\n\r\n",
    b"GET /key/a HTTP/1.1\r\n Folded: header\r\n\r\n",
    b"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",
    b"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc",
    b"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"PUT /key/a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    b"PUT /key/a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
], ids=["cl+te", "te+cl", "negative-cl", "overflow-cl", "bad-cl", "bad-version", "bad-proto",
        "http3", "tls-hello", "no-target", "bad-field", "obs-fold", "bad-chunk", "te-not-chunked",
        "te-chunked-not-final", "te-twice", "te-http10", "cl-conflict"])
def test_malformed_request_is_400_then_close(server, data):
    resp, closed = raw_exchange(server, data)
    assert_json_error(resp, 400)
    assert resp.headers.get("connection") == "close"
    assert closed


def test_unknown_transfer_coding_is_501_then_close(server):
    data = b"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    resp, closed = raw_exchange(server, data)
    assert_json_error(resp, 501)
    assert closed
    assert exchange(server, "GET", "/key/a").status == 404


def test_server_survives_malformed_input(server):
    for data in (b"\x00" * 1000, b"\r\n" * 5000, b"GET " + b"/" * 20000, bytes(range(256)) * 10):
        with server.connect() as s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                for _ in range(100):
                    if not s.recv(65536):
                        break
            except (ConnectionResetError, BrokenPipeError):
                pass
    assert exchange(server, "HEAD", "/").status == 200


# --- Date (RFC 9110 §6.6.1) -------------------------------------------------------------------

def test_every_response_carries_a_current_date(server):
    """200, 201, 204, 404, 400, 405 and /stats responses all carry one IMF-fixdate Date header
    within a few seconds of this machine's clock."""
    from email.utils import parsedate_to_datetime

    responses = [
        put(server, "d", b"v"),
        exchange(server, "GET", "/key/d"),
        exchange(server, "HEAD", "/key/d"),
        exchange(server, "GET", "/key/absent"),
        exchange(server, "GET", "/key/%zz"),
        exchange(server, "PATCH", "/key/d"),
        exchange(server, "GET", "/stats"),
        exchange(server, "DELETE", "/key/d"),
    ]
    for resp in responses:
        raw = resp.raw_head.decode("latin-1")
        assert raw.count("\r\nDate: ") == 1, raw
        value = resp.headers["date"]
        assert len(value) == 29 and value.endswith(" GMT"), value
        when = parsedate_to_datetime(value).timestamp()
        assert abs(when - time.time()) < 5, (value, time.time())
