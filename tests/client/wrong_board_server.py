#!/usr/bin/env python3
"""A board server whose top-N answers are wrong, for bench_client's --verify tests (issue 29).

It owns nothing but the wire: every GET /board/<b>/top?n=N is answered 200 with a well-framed
JSON top-N of a board of --members members (ranks 1..n, scores descending), except the answers
the fault picks, which are wrong in one way:
  order      two adjacent entries' scores swapped (a top-N out of order)
  rank       the second entry's rank is 3 instead of 2 (a wrong rank)
  truncated  the body cut in half, its Content-Length saying so (a truncated body, well framed)
  none       no answer is wrong (the control: the same run must then pass)
--every K: the faulty answers are the 1st, (K+1)th, (2K+1)th, ... of each connection (default 1:
all). --first-only: only the first answer of each connection is wrong. /stats answers 404 (no
stats), anything else 404. GET /_counts answers {"connections", "tops", "wrong", "per_connection":
[top-N answers of each connection, in accept order]} as JSON.
Prints "listening on 127.0.0.1:PORT" when ready.
"""
import json
import threading

import wire


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.connections = 0
        self.tops = 0
        self.wrong = 0
        self.per_connection = []


def top_body(board, n, members, fault):
    count = min(n, members)
    entries = [{"rank": i + 1, "member": f"m{i}", "score": float(1000 * (count - i))}
               for i in range(count)]
    if fault == "order" and count >= 2:
        entries[0]["score"], entries[1]["score"] = entries[1]["score"], entries[0]["score"]
    if fault == "rank" and count >= 2:
        entries[1]["rank"] = 3
    body = json.dumps({"board": board, "members": members, "entries": entries}).encode()
    if fault == "truncated":
        body = body[: len(body) // 2]
    return body


def answer(path, index, state):
    """The response to one request; index counts this connection's top-N answers from 0."""
    if not (path.startswith("/board/") and "/top?n=" in path):
        return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", False
    board = path[len("/board/"):path.index("/top?")]
    n = int(path.split("n=", 1)[1])
    a = state.args
    wrong = a.fault != "none" and (index == 0 if a.first_only else index % a.every == 0)
    body = top_body(board, n, a.members, a.fault if wrong else "none")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    return head % len(body) + body, wrong


def serve(conn, state):
    with state.lock:
        state.connections += 1
        slot = len(state.per_connection)
        state.per_connection.append(0)
    index = 0
    for _, path, _ in wire.requests(lambda: conn.recv(65536)):
        if path == "/_counts":
            with state.lock:
                conn.sendall(wire.json_answer(dict(
                    connections=state.connections, tops=state.tops, wrong=state.wrong,
                    per_connection=state.per_connection)))
            continue
        response, wrong = answer(path, index, state)
        if "/top?" in path:
            index += 1
            with state.lock:
                state.tops += 1
                state.wrong += wrong
                state.per_connection[slot] += 1
        conn.sendall(response)


def main():
    ap = wire.options()
    ap.add_argument("--fault", choices=["order", "rank", "truncated", "none"], default="none")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--first-only", action="store_true")
    ap.add_argument("--members", type=int, default=500)
    state = State(ap.parse_args())
    wire.serve_forever(state.args.port, serve, state)


if __name__ == "__main__":
    wire.run(main)
