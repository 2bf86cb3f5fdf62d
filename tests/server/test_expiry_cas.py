"""Expiry (TTL), ETags and conditional requests of the keys (issue 30; docs/api.md, "Expiry" and
"Versions and conditional requests"), against the real cache_server: one test per bullet of the
contract, the compare-and-set race of eight clients, and expired keys reclaimed without reads."""
import json
import re
import threading
import time

import pytest

from rawhttp import Reader, exchange

ETAG_RE = re.compile(r'^"[0-9a-f]{8}-[0-9a-f]{1,12}"$')
TEN_YEARS = 315_360_000


def put(server, key, value=b"v", query="", headers=None):
    return exchange(server, "PUT", f"/key/{key}{query}", body=value, headers=headers)


def get(server, key, headers=None):
    return exchange(server, "GET", f"/key/{key}", headers=headers)


def stats(server):
    return json.loads(exchange(server, "GET", "/stats").body)


def max_age(resp):
    cc = resp.headers.get("cache-control")
    if cc is None:
        return None
    m = re.fullmatch(r"max-age=(\d+)", cc)
    assert m, cc
    return int(m.group(1))


def wait_until(predicate, timeout_s, step_s=0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return predicate()


# --- Expiry -----------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["query", "max-age", "course-form", "both-agree"])
def test_a_ttl_is_set_and_read_back_as_max_age(server, how):
    if how == "query":
        r = put(server, "k", query="?ttl=100")
    elif how == "max-age":
        r = put(server, "k", headers={"Cache-Control": "no-store, max-age=100"})
    elif how == "course-form":
        r = exchange(server, "PUT", "/key/k/v?ttl=100")
    else:
        r = put(server, "k", query="?ttl=100", headers={"Cache-Control": "max-age=100"})
    assert r.status == 201, r
    g = get(server, "k")
    assert g.status == 200 and g.body == b"v"
    assert 98 <= max_age(g) <= 100, g.headers  # whole seconds left, rounded down
    h = exchange(server, "HEAD", "/key/k")
    assert h.status == 200 and 98 <= max_age(h) <= 100


def test_ten_years_is_the_longest_ttl(server):
    assert put(server, "k", query=f"?ttl={TEN_YEARS}").status == 201
    assert TEN_YEARS - 2 <= max_age(get(server, "k")) <= TEN_YEARS


@pytest.mark.parametrize("query,headers", [
    ("?ttl=0", None), ("?ttl=-1", None), ("?ttl=+5", None), ("?ttl=abc", None), ("?ttl=", None),
    ("?ttl", None), ("?ttl=1.5", None), ("?ttl=99999999999999999999999", None),
    (f"?ttl={TEN_YEARS + 1}", None), ("?ttl=5&ttl=6", None),
    ("", {"Cache-Control": "max-age=0"}), ("", {"Cache-Control": "max-age=x"}),
    ("", {"Cache-Control": "max-age"}), ("", {"Cache-Control": f"max-age={TEN_YEARS + 1}"}),
    ("?ttl=5", {"Cache-Control": "max-age=6"}),
], ids=lambda p: repr(p))
def test_a_bad_ttl_is_400_and_changes_nothing(server, query, headers):
    assert put(server, "k", b"old").status == 201
    sets = stats(server)["sets"]
    r = put(server, "k", b"new", query=query, headers=headers)
    assert r.status == 400, r
    assert "error" in r.json()
    g = get(server, "k")
    assert g.body == b"old" and max_age(g) is None
    assert stats(server)["sets"] == sets


def put_cache_control_lines(server, key, lines, value=b"v"):
    """A PUT with one Cache-Control field line per entry of `lines` (rawhttp's headers are a
    dict: one line per name)."""
    head = f"PUT /key/{key} HTTP/1.1\r\nHost: test\r\nContent-Length: {len(value)}\r\n"
    head += "".join(f"Cache-Control: {line}\r\n" for line in lines)
    with server.connect() as sock:
        sock.sendall(head.encode() + b"\r\n" + value)
        return Reader(sock).read()


@pytest.mark.parametrize("lines", [
    ["max-age=5", "max-age=6"],        # two values: refused, as on one line
    ["max-age=5", "max-age=x"],        # the bad one on the second line still counts
    ["no-store", "max-age=100"],       # max-age after another directive: the TTL
    ["no-store", "", "max-age=100"],   # an empty line adds nothing
    ["max-age=100", "max-age=100"],    # the same value twice agrees
], ids=lambda p: repr(p))
def test_cache_control_on_several_lines_means_the_lines_joined(server, lines):
    """Issue 44, RFC 9110 5.3: Cache-Control sent on several field lines is the one line with
    the values joined by ", " (empty ones dropped): the same status, the same TTL."""
    for key in ("one", "many"):
        exchange(server, "DELETE", f"/key/{key}")
    joined = ", ".join(line for line in lines if line)
    one = put(server, "one", headers={"Cache-Control": joined})
    many = put_cache_control_lines(server, "many", lines)
    assert (many.status, many.body) == (one.status, one.body), (one, many)
    if one.status == 400:
        assert get(server, "many").status == 404, "a refused PUT changes nothing"
    else:
        assert one.status == 201
        for key in ("one", "many"):  # whole seconds left: 100, or 99-98 a second or two later
            assert 98 <= (max_age(get(server, key)) or 0) <= 100, key


def test_no_ttl_means_no_expiry_and_clears_an_old_one(server):
    put(server, "plain")
    assert max_age(get(server, "plain")) is None
    put(server, "k", query="?ttl=1")
    assert put(server, "k", b"again").status == 204
    g = get(server, "k")
    assert max_age(g) is None
    time.sleep(1.3)
    assert get(server, "k").body == b"again"


def test_an_expired_key_is_never_served_and_counts_as_a_miss(server):
    put(server, "gone", query="?ttl=1")
    put(server, "gone2", query="?ttl=1")
    time.sleep(1.1)
    before = stats(server)
    assert get(server, "gone").status == 404
    assert exchange(server, "HEAD", "/key/gone").status == 404
    assert exchange(server, "DELETE", "/key/gone2").status == 404
    after = stats(server)
    assert after["misses"] - before["misses"] == 2
    assert after["hits"] == before["hits"]
    assert put(server, "gone", b"new").status == 201, "an expired key is created again"


def test_expired_keys_are_reclaimed_without_being_read(server):
    n = 200
    expired_before = stats(server)["expired"]  # a lifetime total: earlier tests' keys are in it
    for i in range(n):
        assert put(server, f"e{i}", b"x" * 100, query="?ttl=1").status == 201
    put(server, "keep", b"y")
    assert stats(server)["items"] == n + 1
    # Within about 1 s of expiring (the sweep looks at every slot once a second); 4 s of slack
    # for a sanitized build on a busy machine.
    assert wait_until(lambda: stats(server)["items"] == 1, timeout_s=5.0), stats(server)
    s = stats(server)
    assert s["expired"] - expired_before == n and s["space_used"] == len("keep") + 1
    metrics = exchange(server, "GET", "/metrics").body.decode()
    assert f"cache_server_expired_total {expired_before + n}" in metrics.splitlines()
    assert get(server, "keep").body == b"y"


# --- ETags and conditional requests ------------------------------------------------------------

def etag_of(resp):
    tag = resp.headers.get("etag")
    assert tag is not None and ETAG_RE.match(tag), resp.headers
    return tag


def test_every_200_and_every_write_carries_a_strong_etag_that_changes_on_each_write(server):
    t1 = etag_of(put(server, "k", b"same"))
    assert etag_of(get(server, "k")) == t1
    assert etag_of(exchange(server, "HEAD", "/key/k")) == t1
    assert etag_of(get(server, "k", headers={"Accept": "application/json"})) == t1
    t2 = etag_of(put(server, "k", b"same"))  # 204, same bytes: still a new ETag
    assert t2 != t1
    assert etag_of(get(server, "k")) == t2
    exchange(server, "DELETE", "/key/k")
    t3 = etag_of(put(server, "k", b"same"))
    assert t3 not in (t1, t2)


def test_if_none_match_with_the_current_etag_is_304_without_body(server):
    tag = etag_of(put(server, "k", b"body", query="?ttl=100"))
    for method in ("GET", "HEAD"):
        r = exchange(server, method, "/key/k", headers={"If-None-Match": tag})
        assert r.status == 304 and r.body == b"" and r.headers["etag"] == tag
        assert "content-length" not in r.headers
        assert 98 <= max_age(r) <= 100
    assert get(server, "k", headers={"If-None-Match": "W/" + tag}).status == 304  # weak compare
    assert get(server, "k", headers={"If-None-Match": f'"other", {tag}'}).status == 304
    assert get(server, "k", headers={"If-None-Match": "*"}).status == 304
    r = get(server, "k", headers={"If-None-Match": '"not-it"'})
    assert r.status == 200 and r.body == b"body"
    put(server, "k", b"body")
    r = get(server, "k", headers={"If-None-Match": tag})
    assert r.status == 200 and r.body == b"body", "a rewrite, even of the same bytes, is modified"
    before = stats(server)
    get(server, "k", headers={"If-None-Match": etag_of(r)})
    assert stats(server)["hits"] == before["hits"] + 1


def test_if_match_applies_a_put_or_delete_only_on_the_current_etag(server):
    old = etag_of(put(server, "k", b"one"))
    cur = etag_of(put(server, "k", b"two"))
    r = put(server, "k", b"three", headers={"If-Match": old})
    assert r.status == 412 and "error" in r.json()
    assert get(server, "k").body == b"two"
    assert exchange(server, "DELETE", "/key/k", headers={"If-Match": old}).status == 412
    assert get(server, "k").body == b"two"
    assert put(server, "k", b"three", headers={"If-Match": "W/" + cur}).status == 412, \
        "If-Match compares strongly"
    r = put(server, "k", b"three", headers={"If-Match": cur})
    assert r.status == 204
    new = etag_of(r)
    assert new != cur and etag_of(get(server, "k")) == new
    assert put(server, "k", b"four", headers={"If-Match": "*"}).status == 204
    assert exchange(server, "DELETE", "/key/k", headers={"If-Match": etag_of(get(server, "k"))}).status == 204
    assert get(server, "k").status == 404


def test_if_match_on_a_missing_key_is_always_412(server):
    assert put(server, "nope", headers={"If-Match": "*"}).status == 412
    assert put(server, "nope", headers={"If-Match": '"00000000-1"'}).status == 412
    assert exchange(server, "DELETE", "/key/nope", headers={"If-Match": "*"}).status == 412
    assert get(server, "nope").status == 404
    put(server, "short", query="?ttl=1")
    time.sleep(1.1)
    assert put(server, "short", headers={"If-Match": "*"}).status == 412, "expired is missing"


def test_if_none_match_star_on_put_creates_only(server):
    assert put(server, "k", b"first", headers={"If-None-Match": "*"}).status == 201
    assert put(server, "k", b"second", headers={"If-None-Match": "*"}).status == 412
    assert get(server, "k").body == b"first"


@pytest.mark.parametrize("header", ["If-Match", "If-None-Match"])
@pytest.mark.parametrize("value", ["", "abc", '"unterminated', 'W/', '"a"b"'])
def test_a_malformed_condition_is_400(server, header, value):
    put(server, "k", b"v")
    assert put(server, "k", b"x", headers={header: value}).status == 400
    assert get(server, "k").body == b"v"


def test_etags_from_another_process_never_match(start_server):
    a = start_server("-t", "1")
    tag = etag_of(put(a, "k", b"v"))
    b = start_server("-t", "1")
    assert etag_of(put(b, "k", b"v")) != tag
    assert put(b, "k", b"w", headers={"If-Match": tag}).status == 412


def run_compare_and_set(server, clients, increments, timeout_s=60):
    """clients threads each add 1 to a counter `increments` times by GET, then PUT with If-Match,
    retrying on 412. Returns the 412s retried; fails on any other answer or a timeout."""
    put(server, "counter", b"0")
    conflicts = []
    errors = []

    def client():
        done = retries = 0
        deadline = time.monotonic() + timeout_s
        while done < increments and time.monotonic() < deadline:
            g = get(server, "counter")
            r = put(server, "counter", str(int(g.body) + 1).encode(),
                    headers={"If-Match": g.headers["etag"]})
            if r.status == 204:
                done += 1
            elif r.status == 412:
                retries += 1
            else:
                errors.append((r.status, r.body))
                return
        conflicts.append(retries)
        if done < increments:
            errors.append("timed out")

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert int(get(server, "counter").body) == clients * increments
    return sum(conflicts)


def test_compare_and_set_loses_no_update_among_eight_clients(server):
    """Eight clients each add 1 to a counter 40 times: the counter ends at 320 (check and write
    are one step)."""
    print(f"412s retried: {run_compare_and_set(server, 8, 40)}")
