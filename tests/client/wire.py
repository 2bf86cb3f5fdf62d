"""What the Python stand-in servers of the bench_client tests (fake_cache_server.py,
misbehaving_server.py, wrong_board_server.py) share: their -p PORT option, reading a request off
the wire, a JSON answer, and serving every connection on its own thread once "listening on
127.0.0.1:PORT" is printed, as cache_server prints it."""
import argparse
import json
import socket
import sys
import threading


def options(port: int = 0) -> argparse.ArgumentParser:
    """A stand-in's options: -p/--port PORT (0: a free one) so far."""
    ap = argparse.ArgumentParser()
    ap.add_argument("-p", "--port", type=int, default=port)
    return ap


def read_request(receive, buf):
    """One request read off the wire with `receive()` (a recv: b"" at EOF) after what `buf`
    (a bytearray) already holds: (method, target, body), consumed from `buf`; None at EOF."""
    while b"\r\n\r\n" not in buf:
        chunk = receive()
        if not chunk:
            return None
        buf += chunk
    end = buf.index(b"\r\n\r\n")
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    del buf[:end + 4]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(buf) < length:
        chunk = receive()
        if not chunk:
            return None
        buf += chunk
    body = bytes(buf[:length])
    del buf[:length]
    words = lines[0].split(" ")
    return words[0], words[1] if len(words) > 1 else "", body


def requests(receive):
    """The requests of a connection, (method, target, body) each, read with `receive()` until
    the client closes it."""
    buf = bytearray()  # amortized appends: requests may carry values of megabytes
    while (request := read_request(receive, buf)) is not None:
        yield request


def json_answer(obj) -> bytes:
    """A 200 whose body is `obj` as JSON."""
    body = json.dumps(obj).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def serve_forever(port: int, handler, *args, rcvbuf: int = 0, backlog: int = 128,
                  nodelay: bool = True) -> None:
    """Listens on 127.0.0.1:PORT (0: a free one; SO_RCVBUF `rcvbuf` when given, inherited by
    every accepted socket), prints the listening line, then runs handler(conn, *args) on a
    thread of its own for every connection; the connection is closed when the handler returns
    or fails on it (OSError: the client went away)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:  # set before listen(): accepted sockets inherit it (and its window scale)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    listener.bind(("127.0.0.1", port))
    listener.listen(backlog)
    print(f"listening on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
    while True:
        conn, _ = listener.accept()
        if nodelay:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve, args=(handler, conn, args), daemon=True).start()


def _serve(handler, conn, args) -> None:
    try:
        handler(conn, *args)
    except OSError:
        pass
    finally:
        conn.close()


def run(main) -> None:
    """Runs a stand-in's main(); Ctrl-C ends it with status 0."""
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
