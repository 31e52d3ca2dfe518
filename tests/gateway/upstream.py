#!/usr/bin/env python3
"""The gateway suite's upstream: threaded HTTPS and plain-HTTP servers on
ephemeral 127.0.0.1 ports (stdlib only).  Every request is logged, as it
arrived, as one JSON line (what reached the upstream, for assertions).

Usage: upstream.py --dir DIR --cert leaf.pem --key leaf.key [--rogue-cert C --rogue-key K]
                   [--secrets secrets.json] [--git-root DIR] [--https-port N]
(`make run`'s demo serves its forge with it: scripts/demo.sh.)
Writes DIR/ports.json ({"https": N, "http": M}) once both listen, logs to
DIR/requests.jsonl, and runs until killed.

Endpoints (by first path segment; anything else echoes):
  (a first segment bearer/xkey/basic/query/cred/always is a credential route's
   prefix: /bearer/gzip is /gzip)
  /echo/...          JSON: method, path, query, headers, body_len, body_sha256, conn,
                     sni; ?status=NNN answers that status
  /chunked?n=&size=  a chunked response of n chunks of size bytes; x-body-sha256
  /big?bytes=N[&chunked=1]  N bytes streamed (Content-Length or chunked); x-body-sha256
  /close?bytes=N     a close-delimited response (no length, no chunking)
  /drip              chunked: "first\\n", 1.5 s pause, "second\\n"
  /marker            a response carrying x-strands-box-egress (the gateway strips it)
  /gzip              a gzip-encoded echo (Content-Encoding: gzip)
  /status/NNN        that status, a short body
  /redirect?to=URL   302 to URL
  /badresp/{clte,status,empty}  a response head with CL and TE, a bad status line, nothing
  /ws                WebSocket echo (RFC 6455): text/binary echoed, ping answered, close
  /git/...           git smart HTTP (git-http-backend as CGI) over --git-root
  /auth-git/...      the same, but only with Authorization: Bearer <secrets.git>
  /basic-git/...     the same, but only with Basic auth of <secrets.basic_git> ("user:pass")
  hosts *.amazonaws.com: SigV4 verification against secrets.aws ({key id: secret});
                     200 JSON {"sigv4": "valid", ...} or 403 {"sigv4": "invalid", "reason": ...}
"""
import argparse
import base64
import gzip
import hashlib
import http.server
import json
import os
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sigv4  # noqa: E402

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PATTERN = bytes((i * 7 + 3) & 0xFF for i in range(65536))

LOG_LOCK = threading.Lock()
LOG = None
SECRETS = {}
GIT_ROOT = None
CONN_IDS = iter(range(1, 1 << 62))
CONN_LOCK = threading.Lock()
_SHA_CACHE = {}
# first path segments the suite binds credential routes to; the endpoint is the next one
CRED_PREFIXES = ("bearer", "xkey", "basic", "query", "cred", "always")


def log(rec):
    rec["t"] = time.time()
    line = json.dumps(rec, sort_keys=True)
    with LOG_LOCK:
        LOG.write(line + "\n")
        LOG.flush()


def pattern_sha(n):
    if n not in _SHA_CACHE:
        h = hashlib.sha256()
        left = n
        while left:
            k = min(left, len(PATTERN))
            h.update(PATTERN[:k])
            left -= k
        _SHA_CACHE[n] = h.hexdigest()
    return _SHA_CACHE[n]


def pattern_chunks(n, size=65536):
    """The first n bytes of PATTERN repeated, in pieces of at most size."""
    off = 0
    while off < n:
        i = off % len(PATTERN)
        k = min(n - off, size, len(PATTERN) - i)
        yield PATTERN[i:i + k]
        off += k


class BodyError(Exception):
    pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "cairn-test-upstream/1"
    timeout = 60

    def setup(self):
        super().setup()
        with CONN_LOCK:
            self.conn_id = next(CONN_IDS)
        self.reqno = 0
        self.sni = getattr(self.server, "sni_by_sock", {}).pop(id(self.request), None)

    def log_message(self, fmt, *args):  # quiet
        pass

    # ---- bodies ---------------------------------------------------------------

    def read_body(self, sink=None):
        """Read the request body (Content-Length or chunked), streaming; return
        (length, sha256 hex, complete, bytes if sink is a list)."""
        h = hashlib.sha256()
        n = 0
        te = self.headers.get_all("Transfer-Encoding") or []
        cl = self.headers.get_all("Content-Length") or []
        try:
            if te:
                if [t.strip().lower() for t in ",".join(te).split(",")] != ["chunked"]:
                    raise BodyError("unsupported Transfer-Encoding " + ",".join(te))
                while True:
                    line = self.rfile.readline(8200)
                    if not line.endswith(b"\r\n"):
                        raise BodyError("bad chunk-size line %r" % line[:40])
                    size_s = line[:-2].split(b";", 1)[0].strip()
                    try:
                        size = int(size_s, 16)
                    except ValueError:
                        raise BodyError("bad chunk size %r" % size_s[:40])
                    if size == 0:
                        while True:  # trailers
                            t = self.rfile.readline(8200)
                            if t in (b"\r\n", b""):
                                break
                        break
                    left = size
                    while left:
                        b = self.rfile.read(min(left, 1 << 16))
                        if not b:
                            raise BodyError("body ended inside a chunk")
                        h.update(b)
                        n += len(b)
                        left -= len(b)
                        if sink is not None:
                            sink.append(b)
                    if self.rfile.read(2) != b"\r\n":
                        raise BodyError("chunk not followed by CRLF")
            elif cl:
                if len(set(cl)) != 1:
                    raise BodyError("differing Content-Length")
                left = int(cl[0])
                while left:
                    b = self.rfile.read(min(left, 1 << 16))
                    if not b:
                        raise BodyError("body ended early (%d of %s)" % (n, cl[0]))
                    h.update(b)
                    n += len(b)
                    left -= len(b)
                    if sink is not None:
                        sink.append(b)
        except BodyError as e:
            return n, h.hexdigest(), str(e)
        except (OSError, ssl.SSLError) as e:
            return n, h.hexdigest(), "read error: %s" % e
        return n, h.hexdigest(), None

    def send_body(self, status, body, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-upstream-conn", str(self.conn_id))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # ---- dispatch ----------------------------------------------------------------

    def handle_one_request(self):
        # like the base class, but every method goes to dispatch()
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.send_error(414)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self.dispatch()
            self.wfile.flush()
        except (TimeoutError, socket.timeout, ConnectionError, ssl.SSLError, BrokenPipeError):
            self.close_connection = True

    def handle_expect_100(self):
        self.expect_answered = True
        return super().handle_expect_100()

    def dispatch(self):
        self.reqno += 1
        u = urllib.parse.urlsplit(self.path)
        path, query = u.path, u.query
        if not self.path.startswith("/"):  # absolute-form reached us: record it
            path = self.path
        host = (self.headers.get("Host") or "").lower()
        hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host
        segs = path.split("/") if path.startswith("/") else ["", ""]
        seg = segs[1]
        if seg in CRED_PREFIXES and len(segs) > 2:  # /bearer/gzip is /gzip behind a route
            seg = segs[2]
        rec = {
            "server": self.server.kind, "conn": self.conn_id, "reqno": self.reqno, "sni": self.sni,
            "method": self.command, "target": self.path, "path": path, "query": query,
            "version": self.request_version, "headers": [[k, v] for k, v in self.headers.items()],
            "expect_answered": getattr(self, "expect_answered", False),
        }
        self.expect_answered = False
        if seg == "ws":
            return self.websocket(rec)
        if seg in ("git", "auth-git", "basic-git"):
            return self.git(rec, path, query, seg)
        sink = [] if seg == "gzip" else None
        n, sha, err = self.read_body(sink)
        rec.update(body_len=n, body_sha256=sha, body_error=err)
        if err:
            log(rec)
            self.close_connection = True
            return
        q = urllib.parse.parse_qs(query)
        if hostname.endswith(".amazonaws.com"):
            v = sigv4.verify(self.command, path, query, list(self.headers.items()), sha,
                             SECRETS.get("aws", {}))
            rec["sigv4"] = {k: v.get(k) for k in ("valid", "reason", "access_key", "region",
                                                   "service", "signed_headers", "payload_hash")}
            log(rec)
            out = dict(rec["sigv4"], sigv4="valid" if v["valid"] else "invalid", path=path,
                       body_len=n, body_sha256=sha)
            return self.send_body(200 if v["valid"] else 403, json.dumps(out).encode())
        log(rec)
        if seg == "chunked":
            k = int(q.get("n", ["5"])[0])
            size = int(q.get("size", ["1000"])[0])
            return self.stream(k * size, chunked=True, size=size)
        if seg == "big":
            return self.stream(int(q.get("bytes", [str(50 << 20)])[0]),
                               chunked=q.get("chunked", ["0"])[0] == "1")
        if seg == "close":
            n = int(q.get("bytes", ["100000"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("x-body-sha256", pattern_sha(n))
            self.send_header("Connection", "close")
            self.end_headers()
            for c in pattern_chunks(n):
                self.wfile.write(c)
            self.close_connection = True
            return
        if seg == "drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"6\r\nfirst\n\r\n")
            self.wfile.flush()
            time.sleep(1.5)
            self.wfile.write(b"7\r\nsecond\n\r\n0\r\n\r\n")
            return
        if seg == "marker":
            return self.send_body(200, b"upstream says hi\n", "text/plain",
                                  [("x-strands-box-egress", "refused"), ("x-other", "kept")])
        if seg == "gzip":
            body = gzip.compress(json.dumps(self.echo(rec)).encode())
            return self.send_body(200, body, "application/json", [("Content-Encoding", "gzip")])
        if seg == "status":
            st = int(segs[segs.index("status") + 1])
            return self.send_body(st, b"status %d\n" % st, "text/plain")
        if seg == "badresp":  # a broken response head, or none at all
            raw = {"clte": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                   "status": b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
                   "empty": b""}[segs[2]]
            self.wfile.write(raw)
            self.wfile.flush()
            self.close_connection = True
            return
        if seg == "redirect":
            return self.send_body(302, b"", "text/plain", [("Location", q.get("to", ["/"])[0])])
        st = int(q.get("status", ["200"])[0])
        return self.send_body(st, json.dumps(self.echo(rec)).encode())

    def echo(self, rec):
        hd = {}
        for k, v in self.headers.items():
            hd.setdefault(k.lower(), []).append(v)
        return {"method": rec["method"], "path": rec["path"], "query": rec["query"],
                "headers": {k: v[0] if len(v) == 1 else v for k, v in hd.items()},
                "body_len": rec["body_len"], "body_sha256": rec["body_sha256"],
                "conn": self.conn_id, "reqno": self.reqno, "sni": self.sni,
                "server": self.server.kind}

    def stream(self, n, chunked, size=65536):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("x-body-sha256", pattern_sha(n))
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(n))
        self.end_headers()
        for c in pattern_chunks(n, size):
            if chunked:
                self.wfile.write(b"%x\r\n" % len(c) + c + b"\r\n")
            else:
                self.wfile.write(c)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    # ---- WebSocket ----------------------------------------------------------------

    def websocket(self, rec):
        key = self.headers.get("Sec-WebSocket-Key")
        up = (self.headers.get("Upgrade") or "").lower()
        conn = (self.headers.get("Connection") or "").lower()
        if self.command != "GET" or up != "websocket" or "upgrade" not in conn or not key:
            rec["ws"] = "bad handshake"
            log(rec)
            return self.send_body(400, b"not a websocket handshake\n", "text/plain")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        msgs = 0
        rec["ws"] = "open"
        try:
            while True:
                fin_op = self.rfile.read(2)
                if len(fin_op) < 2:
                    break
                b0, b1 = fin_op
                op = b0 & 0x0F
                masked = b1 & 0x80
                ln = b1 & 0x7F
                if ln == 126:
                    ln = struct.unpack("!H", self.rfile.read(2))[0]
                elif ln == 127:
                    ln = struct.unpack("!Q", self.rfile.read(8))[0]
                mask = self.rfile.read(4) if masked else b"\0\0\0\0"
                data = bytearray(self.rfile.read(ln))
                for i in range(len(data)):
                    data[i] ^= mask[i % 4]
                if not masked:
                    rec["ws_unmasked_frame"] = True
                if op == 0x8:
                    self.ws_send(0x8, bytes(data[:2]) or b"\x03\xe8")
                    break
                if op == 0x9:
                    self.ws_send(0xA, bytes(data))
                    continue
                if op in (0x1, 0x2):
                    msgs += 1
                    self.ws_send(op, bytes(data))
        except (OSError, ssl.SSLError, struct.error):
            rec["ws_error"] = True
        rec["ws_messages"] = msgs
        rec["ws"] = "closed"
        log(rec)
        self.close_connection = True

    def ws_send(self, op, data):
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x80 | op, n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | op, 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | op, 127, n)
        self.wfile.write(head + data)
        self.wfile.flush()

    # ---- git smart HTTP (CGI) ----------------------------------------------------

    def git(self, rec, path, query, seg):
        chunks = []
        n, sha, err = self.read_body(chunks)
        rec.update(body_len=n, body_sha256=sha, body_error=err)
        if err:
            log(rec)
            self.close_connection = True
            return
        if seg == "auth-git":
            want = "Bearer " + SECRETS.get("git", "\0")
            if self.headers.get("Authorization") != want:
                rec["git"] = "unauthorized"
                log(rec)
                return self.send_body(401, b"authorization required\n", "text/plain",
                                      [("WWW-Authenticate", 'Bearer realm="git"')])
        if seg == "basic-git":
            cred = SECRETS.get("basic_git", "\0").encode()
            if self.headers.get("Authorization") != "Basic " + base64.b64encode(cred).decode():
                rec["git"] = "unauthorized"
                log(rec)
                return self.send_body(401, b"authorization required\n", "text/plain",
                                      [("WWW-Authenticate", 'Basic realm="git"')])
        env = {
            "GIT_PROJECT_ROOT": GIT_ROOT, "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command, "PATH_INFO": path[len(seg) + 1:],
            "QUERY_STRING": query, "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE":
            self.headers.get("Content-Type", ""), "PATH": "/usr/bin:/bin",
            "GIT_CONFIG_NOSYSTEM": "1", "HOME": GIT_ROOT,
            # receive-pack is served (a push is then refused by policy, not here)
            "REMOTE_USER": "tester",
        }
        if n:
            env["CONTENT_LENGTH"] = str(n)
        for k, v in self.headers.items():
            env["HTTP_" + k.upper().replace("-", "_")] = v
        p = subprocess.run(["/usr/lib/git-core/git-http-backend"], input=b"".join(chunks),
                           env=env, capture_output=True, timeout=60)
        head, _, body = p.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, body = p.stdout.partition(b"\n\n")
        status = 200
        hdrs = []
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k:
                hdrs.append((k.strip(), v.strip()))
        rec["git"] = status
        log(rec)
        self.send_response(status)
        for k, v in hdrs:
            if k.lower() not in ("content-length",):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, kind, ctx, port=0):
        self.kind = kind
        self.ctx = ctx
        self.sni_by_sock = {}
        super().__init__(("127.0.0.1", port), Handler)

    def finish_request(self, request, client_address):
        if self.ctx is not None:
            request.settimeout(20)
            try:
                request = self.ctx.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError) as e:
                log({"server": self.kind, "tls_error": str(e)})
                request.close()
                return
            request.settimeout(None)
            self.sni_by_sock[id(request)] = getattr(request, "_cairn_sni", None)
        self.RequestHandlerClass(request, client_address, self)

    def handle_error(self, request, client_address):
        pass


def main():
    global LOG, SECRETS, GIT_ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--rogue-cert")
    ap.add_argument("--rogue-key")
    ap.add_argument("--secrets")
    ap.add_argument("--git-root")
    ap.add_argument("--https-port", type=int, default=0, help="0: an ephemeral one")
    a = ap.parse_args()
    LOG = open(os.path.join(a.dir, "requests.jsonl"), "a")
    if a.secrets:
        with open(a.secrets) as f:
            SECRETS = json.load(f)
    GIT_ROOT = a.git_root

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    ctx.set_alpn_protocols(["http/1.1"])
    rogue = None
    if a.rogue_cert:
        rogue = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        rogue.load_cert_chain(a.rogue_cert, a.rogue_key)

    def sni(sslsock, name, _ctx):
        try:
            sslsock._cairn_sni = name
        except AttributeError:
            pass
        if name == "untrusted.test" and rogue is not None:
            sslsock.context = rogue
        return None

    ctx.sni_callback = sni
    https = Server("https", ctx, a.https_port)
    plain = Server("http", None)
    for s in (https, plain):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    tmp = os.path.join(a.dir, "ports.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"https": https.server_address[1], "http": plain.server_address[1]}, f)
    os.rename(tmp, os.path.join(a.dir, "ports.json"))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
