"""Answers the store serves count against --max-inflight (docs/api.md, the --max-inflight flag
and "Errors"; issue 44): a read-through answer, rendered when the store has answered, is
charged to the budget at that moment, and one that does not fit is a 503 instead of the value,
as on the cache's path.

The load: 1 MiB values that are not UTF-8 (6 MiB each in JSON) in a write-through RocksDB store,
the cache emptied by `POST /reset?scope=cache` (open to anyone), then connections that pipeline
JSON GETs of them and never read their responses. Without the budget every answer was rendered
and kept (~6 MiB each: 8 connections of 64 GETs held ~3 GiB under --max-inflight 64M).
"""
import json
import os
import socket
import time

from procstat import rss_bytes
from rawhttp import Reader, request_bytes

MiB = 1 << 20
BUDGET = 64 * MiB
# What the server may hold beyond the budget: the values being read and the cache they fill
# (KEYS MiB each), the connections' fixed buffers, the allocator's slack.
SLACK = 96 * MiB
KEYS = 8
HOGS = 8          # connections that never read
PIPELINE = 64     # GETs each hog sends at once (kMaxQueuedResponses: all of them are taken)
STABLE_S = 2.0    # the RSS counts as settled once it has not grown for this long
READ_DELAY = "200ms"
# Resident memory means nothing under the sanitizers (tests/server/CMakeLists.txt sets it).
SANITIZED = (os.environ.get("LIMITS_SANITIZED", "0") == "1"
             or bool(os.environ.get("STORE_TEST_SANITIZED")))
# Every wait below is bounded by this. Under TSan, rendering the 512 answers of 6 MiB of JSON
# beside the rest of the suite (ctest -j 3 on two cores) once took more than 60 s.
DEADLINE_S = 120 if SANITIZED else 60
INFLIGHT_FULL = "server busy: --max-inflight bytes are held for connections, retry later"


def value_of(i):
    """Key i's 1 MiB value: a tag, then bytes 0x80..0xFF (no valid UTF-8: 6 bytes each in JSON)."""
    tag = b"%08d" % i
    return tag + (bytes(range(128, 256)) * (MiB // 128))[len(tag):]


def key_of(i):
    return f"big{i}"


def connect(srv, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    if rcvbuf is not None:  # before connect(), so the window the server sees is small
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect(("127.0.0.1", srv.port))
    return s


def one(srv, method, path, headers=None, body=b""):
    with connect(srv) as s:
        s.sendall(request_bytes(method, path, headers, body))
        return Reader(s).read()


def stats(srv, timeout=10):
    with connect(srv) as s:
        s.settimeout(timeout)
        s.sendall(request_bytes("GET", "/stats"))
        r = Reader(s).read()
    assert r.status == 200
    return r.json()


def json_get(key):
    return request_bytes("GET", "/key/" + key, headers={"Accept": "application/json"})


def check_answer(r, key, value, json_form):
    """A big value's answer: the value (of that key: answers are in request order) or the 503."""
    if r.status == 503:
        assert r.json() == {"error": INFLIGHT_FULL}, r
        return False
    assert r.status == 200, r
    if json_form:
        doc = json.loads(r.body)
        assert doc["key"] == key, f"answer for {doc['key']} where {key} was asked"
        assert doc["value"].encode("utf-8", "surrogateescape") == value
    else:
        assert r.body == value
    return True


def wait_settled(srv, pid, answered):
    """Waits until the server has taken `answered` requests besides the polls and its RSS has
    stopped growing (bounded by DEADLINE_S); returns the highest RSS seen."""
    deadline = time.monotonic() + DEADLINE_S
    polls, peak, grew_at = 0, rss_bytes(pid), time.monotonic()
    while True:
        polls += 1
        # A worker busy rendering the flood answers late: the poll waits as long as the
        # deadline allows.
        left = max(10.0, deadline - time.monotonic())
        done = stats(srv, timeout=left)["requests"] >= answered + polls
        now_rss = rss_bytes(pid)
        if now_rss > peak + MiB:
            grew_at = time.monotonic()
        peak = max(peak, now_rss)
        if done and time.monotonic() - grew_at >= STABLE_S:
            return peak
        assert time.monotonic() < deadline, f"not settled in {DEADLINE_S} s (done={done})"
        time.sleep(0.25)


def wait_until(what, predicate):
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_read_through_answers_to_readers_that_never_read_stay_within_the_budget(
        start_server, tmp_path):
    # The store's reads are held READ_DELAY (--store-faults read-delay, RocksDB's real reads
    # otherwise) so that every hog's GETs are taken, all misses, before the first read fills
    # the cache: every answer below is one the store served.
    srv = start_server("--store", f"rocksdb:{tmp_path / 'db'}", "--write-mode", "through",
                       "--store-faults", f"read-delay={READ_DELAY}", "--max-inflight", "64M",
                       "-t", "2", "--idle-timeout", "60")
    pid = srv.proc.pid
    with connect(srv) as s:
        for i in range(KEYS):
            s.sendall(request_bytes("PUT", "/key/" + key_of(i), body=value_of(i)))
            assert Reader(s).read().status == 201
        s.sendall(request_bytes("PUT", "/key/small", body=b"s" * 100))
        assert Reader(s).read().status == 201
    assert one(srv, "POST", "/reset?scope=cache").status == 204
    base = rss_bytes(pid)
    answered = stats(srv)["requests"]

    hogs = [connect(srv, rcvbuf=4096) for _ in range(HOGS)]
    try:
        flood = [b"".join(json_get(key_of((c + j) % KEYS)) for j in range(PIPELINE))
                 for c in range(HOGS)]
        for s, requests in zip(hogs, flood):
            s.sendall(requests)  # and never read
        peak = wait_settled(srv, pid, answered + HOGS * PIPELINE)
        held = peak - base
        during = stats(srv)
        print(f"\n{HOGS} connections x {PIPELINE} pipelined JSON GETs read through the store, "
              f"never read: RSS +{held / MiB:.1f} MiB, inflight "
              f"{during['inflight_bytes'] / MiB:.1f} MiB (high water "
              f"{during['inflight_high_water'] / MiB:.1f} MiB), "
              f"store_reads {during['store_reads']}, misses {during['misses']}")
        assert during["misses"] == HOGS * PIPELINE and during["store_reads"] == KEYS
        if not SANITIZED:
            assert held <= BUDGET + SLACK, f"RSS grew {held / MiB:.1f} MiB"
        assert during["inflight_high_water"] <= BUDGET + 8 * MiB  # one rendering may overshoot

        # A client that reads, while the hogs hold the budget: its answers come in request
        # order; a JSON rendering that the store serves (6 MiB) does not fit (503), a raw
        # 1 MiB value may (the value, of the key asked), a small one always does.
        assert one(srv, "POST", "/reset?scope=cache").status == 204
        assert stats(srv)["inflight_bytes"] > BUDGET - 6 * MiB  # a 6 MiB rendering cannot fit
        asked = []
        with connect(srv) as s:
            wire = b""
            for j in range(2 * KEYS):
                if j % 2:
                    asked.append(("small", None, False))
                    wire += request_bytes("GET", "/key/small")
                else:
                    i = j // 2
                    json_form = i % 2 == 0
                    asked.append((key_of(i), value_of(i), json_form))
                    wire += json_get(key_of(i)) if json_form else request_bytes(
                        "GET", "/key/" + key_of(i))
            s.sendall(wire)
            rd = Reader(s)
            for key, value, json_form in asked:
                r = rd.read()
                if value is None:
                    assert r.status == 200 and r.body == b"s" * 100, r
                elif check_answer(r, key, value, json_form):
                    assert not json_form, f"{key} was served past a full --max-inflight"
    finally:
        for s in hogs:
            s.close()

    # Once the hogs are gone, their charge is given back (nothing leaks) and the values are
    # served again, from the store and then from the cache.
    wait_until("the budget to empty", lambda: stats(srv)["inflight_bytes"] == 0)
    assert one(srv, "POST", "/reset?scope=cache").status == 204
    with connect(srv) as s:
        rd = Reader(s)
        for _ in range(2):  # read through, then hits
            s.sendall(b"".join(json_get(key_of(i)) for i in range(KEYS)))
            for i in range(KEYS):
                assert check_answer(rd.read(), key_of(i), value_of(i), True)
    assert stats(srv)["inflight_bytes"] == 0
