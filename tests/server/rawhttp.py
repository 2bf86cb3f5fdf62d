"""Minimal raw-socket HTTP/1.1 client for the integration tests: exact bytes out, strict
parsing in, and a timeout on every socket operation (set on the socket by the fixtures)."""
import json


class Response:
    def __init__(self, status, reason, headers, body, raw_head):
        self.status = status
        self.reason = reason
        self.headers = headers  # lower-case name -> value (last wins)
        self.body = body
        self.raw_head = raw_head

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"Response({self.status}, {self.headers}, {self.body[:200]!r})"


class Reader:
    """Reads responses from a socket, keeping bytes that belong to the next response."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by server")
        self.buf += chunk

    def _take_line_block(self):
        for _ in range(100000):
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                head, self.buf = self.buf[:end], self.buf[end + 4:]
                return head
            self._fill()
        raise AssertionError("header never ended")

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read(self, head_request=False, skip_continue=True):
        while True:
            head = self._take_line_block()
            lines = head.split(b"\r\n")
            version, status, reason = lines[0].split(b" ", 2)
            assert version == b"HTTP/1.1", lines[0]
            headers = {}
            for line in lines[1:]:
                name, value = line.split(b":", 1)
                headers[name.decode().lower()] = value.strip().decode()
            status = int(status)
            if status == 100 and skip_continue:
                continue
            break
        body = b""
        if not head_request and status not in (100, 204, 304):
            body = self._take(int(headers.get("content-length", "0")))
        return Response(status, reason.decode(), headers, body, head)

    def at_eof(self):
        """True if the server closed the connection (after any buffered bytes)."""
        if self.buf:
            return False
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


def request_bytes(method, path, headers=None, body=b"", version="HTTP/1.1"):
    if isinstance(path, str):
        path = path.encode()
    out = method.encode() + b" " + path + b" " + version.encode() + b"\r\nHost: test\r\n"
    hdrs = dict(headers or {})
    if body and "Content-Length" not in hdrs and "Transfer-Encoding" not in hdrs:
        hdrs["Content-Length"] = str(len(body))
    for k, v in hdrs.items():
        out += f"{k}: {v}\r\n".encode()
    return out + b"\r\n" + body


def exchange(server, method, path, headers=None, body=b"", version="HTTP/1.1"):
    """One request on a fresh connection; returns the Response."""
    with server.connect() as s:
        s.sendall(request_bytes(method, path, headers, body, version))
        return Reader(s).read(head_request=(method == "HEAD"))


def raw_exchange(server, data):
    """Sends raw bytes, returns (first Response, connection closed afterwards?)."""
    with server.connect() as s:
        s.sendall(data)
        r = Reader(s)
        resp = r.read()
        return resp, r.at_eof()


# --- the cache's API, one request each (the store tests' vocabulary) ---------------------------

def put(srv, key, value, **kw):
    return exchange(srv, "PUT", "/key/" + key, body=value, **kw)


def get(srv, key, **kw):
    return exchange(srv, "GET", "/key/" + key, **kw)


def delete(srv, key):
    return exchange(srv, "DELETE", "/key/" + key)


def stats(srv):
    """GET /stats, which must answer 200, as JSON."""
    r = exchange(srv, "GET", "/stats")
    assert r.status == 200
    return r.json()


def reset(srv, scope=None):
    return exchange(srv, "POST", "/reset" + (f"?scope={scope}" if scope else ""))
