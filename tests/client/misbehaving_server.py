#!/usr/bin/env python3
"""A server that speaks broken HTTP, for bench_client's hostile-server tests.

It owns nothing but the wire: it reads requests (request line, headers, Content-Length body) and
answers the measured requests with the responses of CYCLE, in order, round-robin over all
connections (a "GET /stats" probe gets a plain 404 and does not advance the cycle). Each entry is
(name, raw response bytes, what bench_client must make of it, whether the connection is closed
after it). The test imports CYCLE to know how many parse errors, closed connections, timeouts and
reconnections a run of N requests must show. Prints "listening on HOST:PORT" when ready.

Options: -p PORT (0 = a free port); --mode cycle (the default) | garbage (every response is a
garbage status line) | stall-after:N (answer N requests well, then never answer again);
--stall-ms MS (how long a "stall" entry withholds its answer before closing, default 1500).
GET /_counts answers {"connections": N, "requests": N, "by_name": {...}} as JSON.
"""
import threading
import time

import wire

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

# (name, response, outcome, server closes after it). outcome: "ok" (a 200 the client completes),
# "parse" (a parse error: the request is lost, the client re-opens the connection), "closed"
# (the connection ends mid-response), "timeout" (no answer within the client's --timeout).
CYCLE = [
    ("ok", OK, "ok", False),
    ("chunk_2^64-1", CHUNKED_HEAD + b"ffffffffffffffff\r\nab\r\n0\r\n\r\n", "parse", False),
    ("ok", OK, "ok", False),
    ("chunk_2^64-2", CHUNKED_HEAD + b"fffffffffffffffe\r\nab\r\n0\r\n\r\n", "parse", False),
    ("ok_chunked", CHUNKED_HEAD + b"2\r\nok\r\n0\r\n\r\n", "ok", False),
    ("chunk_2^64", CHUNKED_HEAD + b"10000000000000000\r\nab\r\n0\r\n\r\n", "parse", False),
    ("ok", OK, "ok", False),
    ("duplicate_length",
     b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", "parse", False),
    ("ok", OK, "ok", False),
    ("conflicting_length",
     b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\nokokoko", "parse", False),
    ("ok_interim", b"HTTP/1.1 100 Continue\r\n\r\n" + OK, "ok", False),
    ("garbage_status", b"HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok", "parse", False),
    ("ok", OK, "ok", False),
    ("garbage_protocol", b"SSH-2.0-OpenSSH_9.2\r\n\r\n", "parse", False),
    ("ok", OK, "ok", False),
    ("closed_mid_body", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", "closed", True),
    ("connection_closed_token", b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 2\r\n\r\nok",
     "ok", False),
    ("connection_xclose_token", b"HTTP/1.1 200 OK\r\nConnection: xclose\r\nContent-Length: 2\r\n\r\nok",
     "ok", False),
    ("connection_keep_alive_close",
     b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok", "ok", True),
    ("stall", b"", "timeout", True),
]

GARBAGE = b"HTTP/1.1 ??? garbage\r\n\r\n"


class State:
    def __init__(self, mode, stall_s):
        self.lock = threading.Lock()
        self.mode = mode
        self.stall_s = stall_s
        self.next = 0
        self.connections = 0
        self.requests = 0
        self.by_name = {}

    def pick(self):
        """The next measured response: (name, bytes, close_after, stall)."""
        with self.lock:
            n = self.requests
            self.requests += 1
            if self.mode == "garbage":
                entry = ("garbage", GARBAGE, "parse", False)
            elif self.mode.startswith("stall-after:"):
                limit = int(self.mode.split(":", 1)[1])
                entry = ("ok", OK, "ok", False) if n < limit else ("stall_forever", b"", "timeout", False)
            else:
                entry = CYCLE[self.next % len(CYCLE)]
                self.next += 1
            self.by_name[entry[0]] = self.by_name.get(entry[0], 0) + 1
        return entry


def serve(conn, state):
    with state.lock:
        state.connections += 1
    for _, path, _ in wire.requests(lambda: conn.recv(65536)):
        if path == "/stats":
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            continue
        if path == "/_counts":
            with state.lock:
                conn.sendall(wire.json_answer(dict(connections=state.connections,
                                                   requests=state.requests,
                                                   by_name=state.by_name)))
            continue
        name, response, outcome, close_after = state.pick()
        if outcome == "timeout":
            if name == "stall_forever":
                while conn.recv(65536):  # never answer; wait for the client to give up
                    pass
                return
            time.sleep(state.stall_s)  # past the client's --timeout, then give up
            return
        conn.sendall(response)
        if close_after:
            return


def main():
    ap = wire.options()
    ap.add_argument("--mode", default="cycle")
    ap.add_argument("--stall-ms", type=int, default=1500)
    args = ap.parse_args()
    wire.serve_forever(args.port, serve, State(args.mode, args.stall_ms / 1000.0))


if __name__ == "__main__":
    wire.run(main)
