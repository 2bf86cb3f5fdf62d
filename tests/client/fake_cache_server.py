#!/usr/bin/env python3
"""A tiny stand-in for cache_server, used by the bench_client end-to-end tests.

Implements the cache server's HTTP API (GET/PUT/DELETE/HEAD /key/{k}, POST /reset, GET /stats)
with HTTP/1.1 keep-alive, one thread per connection, and prints "listening on HOST:PORT" when
ready, like the real server. Options: -p PORT (0 = pick a free port), --no-stats (answer 404 on
/stats, like a non-cache server), --corrupt N (every Nth GET hit returns a flipped byte),
--short N (every Nth GET hit returns its value without the last byte, well framed),
--close-after N (close each connection abruptly after answering N requests, dropping any
pipelined requests it has already received), --rcvbuf BYTES (SO_RCVBUF of every connection, so
that a client's large write blocks as soon as the server stops reading), --stall-after N with
--stall-ms MS (after answering N requests on a connection, send the answers, then stop reading
for MS ms before carrying on) and --delay-ms MS (after such a stall, wait MS ms before answering
each further request). Responses to pipelined requests that arrived together are sent together,
with one write, before the next read.
"""
import json
import threading
import time
import urllib.parse

import wire


class Store:
    def __init__(self):
        self.lock = threading.Lock()
        self.data = {}
        self.counters = dict(hits=0, misses=0, sets=0, deletes=0, requests=0, connections=0)
        self.started = time.time()


def reply(status, reason, body=b"", content_type="application/octet-stream", head=False):
    headers = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
    if body or status == 200:
        headers += f"Content-Type: {content_type}\r\n"
    out = headers.encode() + b"\r\n"
    return out if head else out + body


def answer_key(store, args, method, key, body, gets):
    """The answer to METHOD /key/KEY (store.lock held); `gets` counts this connection's GET hits
    (a list of one int), for --corrupt and --short."""
    if method in ("GET", "HEAD"):
        value = store.data.get(key)
        if value is None:
            store.counters["misses"] += 1
            return reply(404, "Not Found", head=method == "HEAD")
        store.counters["hits"] += 1
        gets[0] += 1
        if args.corrupt and gets[0] % args.corrupt == 0 and value:
            value = bytes([value[0] ^ 0xFF]) + value[1:]
        if args.short and gets[0] % args.short == 0 and value:
            value = value[:-1]
        return reply(200, "OK", value, head=method == "HEAD")
    if method == "PUT":
        existed = key in store.data
        store.data[key] = body
        store.counters["sets"] += 1
        return reply(204, "No Content") if existed else reply(201, "Created")
    if method == "DELETE":
        store.counters["deletes"] += 1
        found = store.data.pop(key, None) is not None
        return reply(204, "No Content") if found else reply(404, "Not Found")
    return reply(405, "Method Not Allowed")


def answer(store, args, method, target, body, gets):
    """The answer to one request (counted)."""
    with store.lock:
        store.counters["requests"] += 1
        if target.startswith("/key/"):
            return answer_key(store, args, method, urllib.parse.unquote(target[5:]), body, gets)
        if target == "/reset" and method == "POST":
            store.data.clear()
            return reply(204, "No Content")
        if target == "/stats" and method == "GET" and not args.no_stats:
            stats = dict(items=len(store.data),
                         space_used=sum(len(k) + len(v) for k, v in store.data.items()),
                         maxmem=1 << 30, evictions=0, threads=0, evictor="none",
                         uptime_s=round(time.time() - store.started, 3), **store.counters)
            return reply(200, "OK", json.dumps(stats).encode(), "application/json")
        return reply(404, "Not Found")


def handle(conn, store, args):
    gets = [0]
    answered = 0
    stalled = False
    unsent = []  # responses not yet written: flushed before the next blocking read

    def flush():
        conn.sendall(b"".join(unsent))
        unsent.clear()

    def receive():
        if unsent:
            flush()
        return conn.recv(65536)
    with store.lock:
        store.counters["connections"] += 1
    for request in wire.requests(receive):
        if stalled and args.delay_ms:
            time.sleep(args.delay_ms / 1000)
        unsent.append(answer(store, args, *request, gets))
        answered += 1
        if args.stall_after and answered == args.stall_after:
            flush()
            time.sleep(args.stall_ms / 1000)
            stalled = True
        if args.close_after and answered >= args.close_after:
            flush()
            return


def main():
    parser = wire.options(port=8080)
    parser.add_argument("--no-stats", action="store_true")
    parser.add_argument("--corrupt", type=int, default=0)
    parser.add_argument("--short", type=int, default=0)
    parser.add_argument("--close-after", type=int, default=0)
    parser.add_argument("--rcvbuf", type=int, default=0)
    parser.add_argument("--stall-after", type=int, default=0)
    parser.add_argument("--stall-ms", type=int, default=0)
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args()
    wire.serve_forever(args.port, handle, Store(), args, rcvbuf=args.rcvbuf, backlog=256)


if __name__ == "__main__":
    wire.run(main)
