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
import argparse
import json
import socket
import sys
import threading
import time
import urllib.parse


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


def handle(conn, store, args):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = bytearray()  # amortized appends: requests may carry values of megabytes
    gets = 0
    answered = 0
    stalled = False
    unsent = []  # responses not yet written: flushed before the next blocking read

    def receive():
        if unsent:
            conn.sendall(b"".join(unsent))
            unsent.clear()
        return conn.recv(65536)
    with store.lock:
        store.counters["connections"] += 1
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                chunk = receive()
                if not chunk:
                    return
                buf += chunk
            head, _, buf = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _version = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            while len(buf) < length:
                chunk = receive()
                if not chunk:
                    return
                buf += chunk
            body = bytes(buf[:length])
            del buf[:length]
            if stalled and args.delay_ms:
                time.sleep(args.delay_ms / 1000)
            with store.lock:
                store.counters["requests"] += 1
                if target.startswith("/key/"):
                    key = urllib.parse.unquote(target[5:])
                    if method in ("GET", "HEAD"):
                        value = store.data.get(key)
                        if value is None:
                            store.counters["misses"] += 1
                            out = reply(404, "Not Found", head=method == "HEAD")
                        else:
                            store.counters["hits"] += 1
                            gets += 1
                            if args.corrupt and gets % args.corrupt == 0 and value:
                                value = bytes([value[0] ^ 0xFF]) + value[1:]
                            if args.short and gets % args.short == 0 and value:
                                value = value[:-1]
                            out = reply(200, "OK", value, head=method == "HEAD")
                    elif method == "PUT":
                        existed = key in store.data
                        store.data[key] = body
                        store.counters["sets"] += 1
                        out = reply(204, "No Content") if existed else reply(201, "Created")
                    elif method == "DELETE":
                        store.counters["deletes"] += 1
                        out = reply(204, "No Content") if store.data.pop(key, None) is not None else reply(404, "Not Found")
                    else:
                        out = reply(405, "Method Not Allowed")
                elif target == "/reset" and method == "POST":
                    store.data.clear()
                    out = reply(204, "No Content")
                elif target == "/stats" and method == "GET" and not args.no_stats:
                    stats = dict(items=len(store.data), space_used=sum(len(k) + len(v) for k, v in store.data.items()),
                                 maxmem=1 << 30, evictions=0, threads=0, evictor="none",
                                 uptime_s=round(time.time() - store.started, 3), **store.counters)
                    out = reply(200, "OK", json.dumps(stats).encode(), "application/json")
                else:
                    out = reply(404, "Not Found")
            unsent.append(out)
            answered += 1
            if args.stall_after and answered == args.stall_after:
                conn.sendall(b"".join(unsent))
                unsent.clear()
                time.sleep(args.stall_ms / 1000)
                stalled = True
            if args.close_after and answered >= args.close_after:
                conn.sendall(b"".join(unsent))
                return
    except (ConnectionError, OSError):
        return
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-p", "--port", type=int, default=8080)
    parser.add_argument("--no-stats", action="store_true")
    parser.add_argument("--corrupt", type=int, default=0)
    parser.add_argument("--short", type=int, default=0)
    parser.add_argument("--close-after", type=int, default=0)
    parser.add_argument("--rcvbuf", type=int, default=0)
    parser.add_argument("--stall-after", type=int, default=0)
    parser.add_argument("--stall-ms", type=int, default=0)
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args()
    store = Store()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.rcvbuf:  # set before listen(): accepted sockets inherit it (and its window scale)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(256)
    print(f"listening on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn, store, args), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
