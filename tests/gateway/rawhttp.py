"""Raw HTTP/1.1 over sockets to the box's gateway (127.0.0.1:3128), for the
clients that run inside the box (box_py.py, abuse.py): CONNECT tunnels with
TLS checked against the box's CA (SSL_CERT_FILE), hand-written heads, and a
response reader that reports exactly what came back."""
import os
import socket
import ssl
import time

PROXY = ("127.0.0.1", 3128)


class Closed(Exception):
    """The peer closed (or reset) before a complete response."""


class Conn:
    """One connection with a read buffer; sock may be upgraded to TLS."""

    def __init__(self, sock=None, timeout=20):
        self.sock = sock or socket.create_connection(PROXY, timeout=timeout)
        self.sock.settimeout(timeout)
        self.buf = b""

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self):
        try:
            b = self.sock.recv(65536)
        except (ConnectionResetError, ssl.SSLError, BrokenPipeError) as e:
            raise Closed(str(e))
        if not b:
            raise Closed("EOF")
        self.buf += b

    def read_until(self, sep, limit=1 << 20):
        while sep not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("no %r within %d bytes" % (sep, limit))
            self._fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_to_eof(self):
        try:
            while True:
                self._fill()
        except Closed:
            pass
        out, self.buf = self.buf, b""
        return out

    def read_head(self):
        head = self.read_until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1])
        headers = []
        for ln in lines[1:]:
            if ln:
                k, _, v = ln.partition(":")
                headers.append((k.strip().lower(), v.strip()))
        return status, parts[2] if len(parts) > 2 else "", headers

    def read_response(self, method="GET", connect=False):
        """Skips 1xx (recorded in .interim); returns a Response."""
        interim = []
        while True:
            status, reason, headers = self.read_head()
            if 100 <= status < 200 and status != 101:
                interim.append(status)
                continue
            break
        r = Response(status, reason, headers, interim)
        if method == "HEAD" or status in (204, 304) or status == 101 or (connect and 200 <= status < 300):
            return r
        te = r.get("transfer-encoding")
        cl = r.get("content-length")
        if te and "chunked" in te.lower():
            body = b""
            while True:
                line = self.read_until(b"\r\n")
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.read_until(b"\r\n") != b"\r\n":
                        pass
                    break
                body += self.read_exact(size)
                self.read_exact(2)
            r.body = body
        elif cl is not None:
            r.body = self.read_exact(int(cl))
        else:
            r.body = self.read_to_eof()
        return r

    def closed_by_peer(self, wait=5.0):
        """True when the peer has closed (EOF or reset) within wait seconds."""
        self.sock.settimeout(wait)
        try:
            while True:
                b = self.sock.recv(65536)
                if not b:
                    return True
                self.buf += b
        except (ConnectionResetError, BrokenPipeError):
            return True
        except ssl.SSLError:
            return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Response:
    def __init__(self, status, reason, headers, interim=()):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.interim = list(interim)
        self.body = b""

    def get(self, name, default=None):
        for k, v in self.headers:
            if k == name.lower():
                return v
        return default

    def all(self, name):
        return [v for k, v in self.headers if k == name.lower()]

    def summary(self):
        return {"status": self.status, "headers": self.headers, "interim": self.interim,
                "body": self.body.decode("utf-8", "replace")}


def tls_context(verify=True):
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def connect_raw(authority, extra=""):
    """CONNECT authority; returns (Conn, Response)."""
    c = Conn()
    c.send("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (authority, authority, extra))
    return c, c.read_response(connect=True)


def tunnel(host, port, sni=None, verify=True, authority=None):
    """CONNECT host:port and TLS inside (SNI sni or host).  Raises on a non-200."""
    c, r = connect_raw(authority or "%s:%d" % (host, port))
    if r.status != 200:
        c.close()
        raise RuntimeError("CONNECT %s:%d answered %d" % (host, port, r.status))
    raw = c.sock
    s = tls_context(verify).wrap_socket(raw, server_hostname=sni or host)
    t = Conn(s)
    t.buf = c.buf
    return t


def request(conn, method, target, host, headers=(), body=b"", close=False):
    h = ["%s %s HTTP/1.1" % (method, target), "Host: " + host]
    h += ["%s: %s" % kv for kv in headers]
    if body and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in headers):
        h.append("Content-Length: %d" % len(body))
    if close:
        h.append("Connection: close")
    conn.send(("\r\n".join(h) + "\r\n\r\n").encode() + (body or b""))
    return conn.read_response(method)


def now():
    return time.monotonic()


class Tally:
    """ok / FAIL lines and the closing `N passed, N failed` count."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, what, detail=None):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what + ("" if detail is None else ": " + str(detail)[:600]), flush=True)
        return bool(cond)

    def eq(self, got, want, what):
        return self.check(got == want, what, "got %r, want %r" % (got, want))

    def denial(self, r, status, body, what, marker=True):
        """A gateway refusal: status, the marker, Connection: close, exact body."""
        self.eq(r.status, status, what + ": status")
        if marker:
            self.eq(r.get("x-strands-box-egress"), "refused", what + ": x-strands-box-egress")
        self.check("close" in (r.get("connection") or "").lower(), what + ": Connection: close",
                   r.headers)
        if body is not None:
            self.eq(r.body.decode("utf-8", "replace"), body, what + ": body")

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        return self.failed == 0
