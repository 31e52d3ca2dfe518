"""Runs inside the box (clients.sh's "python" run): python3's urllib through
the proxy environment, and raw sockets for what urllib cannot show (CONNECT
refusal bodies, WebSocket, 100-continue, pipelining, streaming timing).
Checks what it can see itself; clients.sh checks history and the upstream.
Usage (in the box): python3 box_py.py PARAMS.json"""
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawhttp  # noqa: E402
import sigv4  # noqa: E402
from rawhttp import Tally, request, tunnel, connect_raw  # noqa: E402

prm = json.load(open(sys.argv[1]))
P, H = prm["P"], prm["H"]
A = "https://api.test:%d" % P
AH = "api.test:%d" % P
T = Tally()
DEFAULT_DENY = "[default-deny]: No permit policy matched this request."
NO_ADMIN = "[policy: no_admin]: The admin area is closed."


def gate(resource, tail):
    return "http:request gate: policy denied this operation on '%s' %s" % (resource, tail)


def case(fn):
    try:
        fn()
    except Exception as e:  # one case's crash is that case's failure
        T.check(False, fn.__name__ + " raised", repr(e))


def urlopen(req, timeout=30):
    try:
        r = urllib.request.urlopen(req, timeout=timeout)
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict((k.lower(), v) for k, v in e.headers.items()), e.read()


# ---- urllib ----------------------------------------------------------------------

@case
def urllib_get():
    st, h, body = urlopen(A + "/echo/py/get?x=1")
    T.eq(st, 200, "urllib GET status")
    d = json.loads(body)
    T.eq((d["method"], d["path"], d["query"]), ("GET", "/echo/py/get", "x=1"), "urllib GET echo")
    T.eq(d["headers"].get("host"), AH, "urllib GET: Host upstream")
    T.eq(d["sni"], "api.test", "urllib GET: SNI upstream")


@case
def urllib_post():
    data = json.dumps({"n": list(range(1000))}).encode()
    req = urllib.request.Request(A + "/echo/py/post", data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    st, h, body = urlopen(req)
    T.eq(st, 200, "urllib POST status")
    d = json.loads(body)
    T.eq((d["body_len"], d["body_sha256"]), (len(data), hashlib.sha256(data).hexdigest()),
         "urllib POST body upstream")


@case
def urllib_denied():
    st, h, body = urlopen(urllib.request.Request(A + "/echo/py/del", method="DELETE"))
    T.eq(st, 403, "urllib DELETE denied: status")
    T.eq(h.get("x-strands-box-egress"), "refused", "urllib DELETE denied: marker")
    T.eq(body.decode(), gate(AH + "/echo/py/del", DEFAULT_DENY), "urllib DELETE denied: body")
    st, h, body = urlopen(A + "/admin/py?q=1")
    T.eq((st, body.decode()), (403, gate(AH + "/admin/py",
                                         "[policy: no_admin]: The admin area is closed.")),
         "urllib forbid: status and body")


@case
def urllib_connect_denied():
    try:
        urllib.request.urlopen("https://blocked.test:%d/echo/py" % P, timeout=20)
        T.check(False, "urllib to blocked.test was not refused")
    except urllib.error.URLError as e:
        T.check("403" in str(e.reason), "urllib CONNECT denied names 403", e.reason)


@case
def urllib_plain():
    st, h, body = urlopen("http://api.test:%d/echo/py/plain" % H)
    T.eq(st, 200, "urllib plain GET status")
    d = json.loads(body)
    T.eq((d["server"], d["path"], d["headers"].get("host")), ("http", "/echo/py/plain", "api.test:%d" % H),
         "urllib plain GET echo")


# ---- raw: refusal bodies, authority binding, keep-alive, pipelining ---------------

@case
def raw_connect_denied():
    c, r = connect_raw("blocked.test:%d" % P)
    T.denial(r, 403, "policy denied this operation on 'blocked.test:%d' "
             "[policy: blocked_host]: This host is blocked." % P, "CONNECT blocked.test")
    c.close()


@case
def raw_keepalive_pipeline():
    t = tunnel("api.test", P)
    conns = set()
    for i in range(3):
        r = request(t, "GET", "/echo/py/ka%d" % i, AH)
        T.eq(r.status, 200, "keep-alive request %d" % i)
        conns.add(json.loads(r.body)["conn"])
    T.eq(len(conns), 1, "keep-alive: one upstream connection for one tunnel")
    # two requests in one write: answered in order
    t.send(("GET /echo/py/pipe1 HTTP/1.1\r\nHost: %s\r\n\r\n"
            "GET /echo/py/pipe2 HTTP/1.1\r\nHost: %s\r\n\r\n" % (AH, AH)).encode())
    r1 = t.read_response()
    r2 = t.read_response()
    T.eq((r1.status, json.loads(r1.body)["path"], r2.status, json.loads(r2.body)["path"]),
         (200, "/echo/py/pipe1", 200, "/echo/py/pipe2"), "pipelined requests answered in order")
    # a body and the next request in one write: the next one is decided on its own
    t.send(("POST /echo/py/pipe-body HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello"
            "GET /admin/py-pipe HTTP/1.1\r\nHost: %s\r\n\r\n" % (AH, AH)).encode())
    r1 = t.read_response("POST")
    r2 = t.read_response()
    T.eq((r1.status, json.loads(r1.body)["body_len"]), (200, 5), "pipelined POST with a body")
    T.denial(r2, 403, gate(AH + "/admin/py-pipe", NO_ADMIN), "a denied request pipelined after a body")
    t.close()
    # a denial in the middle of a kept-alive tunnel answers and closes it
    t = tunnel("api.test", P)
    T.eq(request(t, "GET", "/echo/py/ka3", AH).status, 200, "keep-alive request before a denial")
    r = request(t, "GET", "/admin/py-ka", AH)
    T.denial(r, 403, gate(AH + "/admin/py-ka", "[policy: no_admin]: The admin area is closed."),
             "denial inside a kept-alive tunnel")
    T.check(t.closed_by_peer(5), "tunnel closed after a denial")
    t.close()


@case
def raw_authority():
    t = tunnel("api.test", P)
    r = request(t, "GET", "/echo/py/authority", "other.test:%d" % P)
    T.denial(r, 403, "request authority rejected", "Host other.test inside an api.test tunnel")
    t.close()
    t = tunnel("api.test", P)
    r = request(t, "GET", "/echo/py/authority-port", "api.test:1")
    T.denial(r, 403, "request authority rejected", "Host port differs from CONNECT")
    t.close()
    t = tunnel("api.test", P)
    r = request(t, "GET", "/echo/py/authority-case", "API.Test.:%d" % P)
    T.eq(r.status, 200, "Host differing only in case and a trailing dot is the same authority")
    t.close()


@case
def raw_http10():
    t = tunnel("api.test", P)
    t.send("GET /echo/py/http10 HTTP/1.0\r\nHost: %s\r\n\r\n" % AH)
    r = t.read_response()
    T.eq(r.status, 200, "HTTP/1.0 request inside a tunnel")
    T.check(t.closed_by_peer(5), "HTTP/1.0 without keep-alive: closed after the response")
    t.close()


@case
def body_after_head():
    # http.client (urllib, requests) writes the head and the body separately:
    # the body can arrive in a later read than the head, here 0.3 s later
    for kind, head, parts in (
            ("Content-Length", "Content-Length: 10\r\n", [b"0123456789"]),
            ("chunked", "Transfer-Encoding: chunked\r\n", [b"5\r\n01234\r\n", b"5\r\n56789\r\n0\r\n\r\n"])):
        t = tunnel("api.test", P)
        t.sock.settimeout(8)
        t.send("POST /echo/py/later-%s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (kind, AH, head))
        for part in parts:
            time.sleep(0.3)
            t.send(part)
        try:
            r = t.read_response("POST")
            d = json.loads(r.body)
            T.eq((r.status, d["body_len"], d["body_sha256"]),
                 (200, 10, hashlib.sha256(b"0123456789").hexdigest()),
                 "a %s body sent after the head is forwarded" % kind)
        except Exception as e:  # noqa: BLE001
            T.check(False, "a %s body sent 0.3 s after the head is forwarded" % kind, repr(e))
        t.close()


@case
def head_then_get():
    # HEAD: a response with a Content-Length and no body; the next response
    # on the connection must still parse
    t = tunnel("api.test", P)
    r = request(t, "HEAD", "/echo/py/head", AH)
    T.eq((r.status, r.body), (200, b""), "HEAD: status, no body")
    r = request(t, "GET", "/echo/py/after-head", AH)
    T.eq((r.status, json.loads(r.body)["path"]), (200, "/echo/py/after-head"), "GET after HEAD on one tunnel")
    t.close()


@case
def bad_upstream_responses():
    for kind in ("clte", "status", "empty"):
        t = tunnel("api.test", P)
        try:
            r = request(t, "GET", "/badresp/%s/py" % kind, AH)
            T.eq((r.status, r.body), (502, b""), "upstream response %s: 502 with an empty body" % kind)
        except rawhttp.Closed as e:
            T.check(False, "upstream response %s: the gateway closed without an answer (want 502)" % kind, e)
        t.close()
    t = tunnel("api.test", P)
    T.eq(request(t, "GET", "/echo/py/after-badresp", AH).status, 200, "a new tunnel works after bad responses")
    t.close()


# ---- Expect: 100-continue ---------------------------------------------------------

@case
def raw_expect():
    body = os.urandom(100000)
    t = tunnel("api.test", P)
    t.send("PUT /echo/py/expect HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n"
           "Expect: 100-continue\r\n\r\n" % (AH, len(body)))
    st, _, _ = t.read_head()
    T.eq(st, 100, "Expect: 100-continue answered with 100 before the body")
    t.send(body)
    r = t.read_response("PUT")
    T.eq(r.status, 200, "Expect: final status")
    d = json.loads(r.body)
    T.eq((d["body_len"], d["body_sha256"]), (len(body), hashlib.sha256(body).hexdigest()),
         "Expect: body upstream")
    t.close()
    # refused: the 403 comes without waiting for (or forwarding) the body
    t = tunnel("api.test", P)
    t0 = time.monotonic()
    t.send("PUT /admin/py-expect HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n"
           "Expect: 100-continue\r\n\r\n" % (AH, len(body)))
    r = t.read_response("PUT")
    T.denial(r, 403, gate(AH + "/admin/py-expect", "[policy: no_admin]: The admin area is closed."),
             "Expect to a denied path")
    T.check(not r.interim, "no 100 Continue before a denial", r.interim)
    T.check(time.monotonic() - t0 < 3, "denial of an Expect request is immediate")
    t.close()


# ---- streaming ------------------------------------------------------------------

@case
def drip():
    t = tunnel("api.test", P)
    t0 = time.monotonic()
    t.send("GET /drip/py HTTP/1.1\r\nHost: %s\r\n\r\n" % AH)
    st, _, hdrs = t.read_head()
    line = t.read_until(b"\r\n")
    first = t.read_exact(int(line.strip(), 16))
    t1 = time.monotonic() - t0
    t.read_exact(2)
    rest = b""
    while True:
        n = int(t.read_until(b"\r\n").strip(), 16)
        if n == 0:
            t.read_until(b"\r\n")
            break
        rest += t.read_exact(n)
        t.read_exact(2)
    t2 = time.monotonic() - t0
    T.eq((st, first, rest), (200, b"first\n", b"second\n"), "drip: chunks relayed")
    T.check(t1 < 1.0 and t2 >= 1.4, "drip: the first chunk arrives before the upstream finishes "
            "(streamed, not buffered)", "first after %.2fs, end after %.2fs" % (t1, t2))
    t.close()


# ---- WebSocket --------------------------------------------------------------------

def ws_frame(op, data):
    mask = os.urandom(4)
    n = len(data)
    if n < 126:
        head = struct.pack("!BB", 0x80 | op, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | op, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | op, 0x80 | 127, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def ws_read(t):
    b0, b1 = t.read_exact(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", t.read_exact(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", t.read_exact(8))[0]
    mask = t.read_exact(4) if b1 & 0x80 else None
    data = t.read_exact(n)
    if mask:
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return b0 & 0x0F, data


@case
def websocket():
    t = tunnel("api.test", P)
    key = base64.b64encode(os.urandom(16)).decode()
    t.send("GET /ws/py HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (AH, key))
    st, _, hdrs = t.read_head()
    h = dict(hdrs)
    want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode())
                            .digest()).decode()
    T.eq(st, 101, "WebSocket: 101 Switching Protocols")
    T.eq(h.get("sec-websocket-accept"), want, "WebSocket: Sec-WebSocket-Accept")
    T.eq((h.get("upgrade") or "").lower(), "websocket", "WebSocket: Upgrade header")
    t.send(ws_frame(0x1, b"hello cairn"))
    T.eq(ws_read(t), (0x1, b"hello cairn"), "WebSocket: text echo")
    blob = os.urandom(200000)
    t.send(ws_frame(0x2, blob))
    T.eq(ws_read(t), (0x2, blob), "WebSocket: 200 kB binary echo")
    t.send(ws_frame(0x9, b"p1"))
    T.eq(ws_read(t), (0xA, b"p1"), "WebSocket: ping answered with pong")
    t.send(ws_frame(0x8, b"\x03\xe8"))
    op, _ = ws_read(t)
    T.eq(op, 0x8, "WebSocket: close answered")
    t.close()


@case
def websocket_denied():
    t = tunnel("api.test", P)
    t.send("GET /admin/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % AH)
    r = t.read_response()
    T.denial(r, 403, gate(AH + "/admin/ws", "[policy: no_admin]: The admin area is closed."),
             "WebSocket upgrade to a denied path")
    t.close()


# ---- SigV4 from a client that signs with the box's stand-in keys ------------------

def aws_call(host, method, path, query, body, extra=()):
    kid = os.environ.get("AWS_ACCESS_KEY_ID", "")
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
    svc, region = ("s3", "us-east-1") if host.startswith("s3.") else ("bedrock", "us-west-2")
    hdrs = [("Host", "%s:%d" % (host, P))] + list(extra)
    if svc == "s3":
        hdrs.append(("x-amz-content-sha256", hashlib.sha256(body).hexdigest()))
    hdrs, auth = sigv4.sign(method, path, query, hdrs, body, kid, secret, region, svc)
    hdrs.append(("Authorization", auth))
    url = "https://%s:%d%s%s" % (host, P, path, "?" + query if query else "")
    req = urllib.request.Request(url, data=body or None, method=method,
                                 headers={k: v for k, v in hdrs if k != "Host"})
    st, h, b = urlopen(req)
    try:
        return st, json.loads(b)
    except ValueError:
        return st, {"body": b.decode("utf-8", "replace")}


@case
def aws_clients():
    T.eq(os.environ.get("AWS_ACCESS_KEY_ID"), "AKIAIOSFODNN7EXAMPLE", "box AWS_ACCESS_KEY_ID is the stand-in")
    T.eq(os.environ.get("AWS_SECRET_ACCESS_KEY"), "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         "box AWS_SECRET_ACCESS_KEY is the stand-in")
    st, d = aws_call("s3.us-east-1.amazonaws.com", "GET", "/cairn-bucket/py/key.txt",
                     "prefix=x%2Fy&list-type=2", b"")
    got = (st, d.get("sigv4"), d.get("service"), d.get("region"), d.get("access_key"))
    T.check(got == (200, "valid", "s3", "us-east-1", prm["aws_key_id"]),
            "s3 GET signed with the stand-in keys, re-signed by the gateway", d)
    body = json.dumps({"prompt": "hello", "max_tokens": 10}).encode()
    st, d = aws_call("bedrock-runtime.us-west-2.amazonaws.com", "POST",
                     "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke", "", body,
                     [("Content-Type", "application/json"), ("X-Amz-Security-Token", "box-made-up-token")])
    got = (st, d.get("sigv4"), d.get("service"), d.get("region"), d.get("access_key"))
    T.check(got == (200, "valid", "bedrock", "us-west-2", prm["aws_key_id"]),
            "bedrock POST signed with the stand-in keys, re-signed by the gateway", d)


# ---- SNI that disagrees with CONNECT -------------------------------------------------

@case
def sni_mismatch():
    # An SNI naming another host than CONNECT: refusing the handshake is a
    # correct answer; so is a handshake after which no request goes anywhere
    # but the CONNECT destination (and, with the names disagreeing, none at all).
    for host_field, what in (("other.test:%d" % P, "SNI and Host other.test"),
                             (AH, "SNI other.test, Host api.test")):
        c, r = connect_raw(AH)
        T.eq(r.status, 200, "CONNECT api.test for the SNI check")
        ctx = rawhttp.tls_context(True)
        ctx.check_hostname = False
        try:
            s = ctx.wrap_socket(c.sock, server_hostname="other.test")
        except (ssl.SSLError, OSError):
            T.check(True, "")
            c.close()
            continue
        t = rawhttp.Conn(s)
        r = request(t, "GET", "/echo/py/sni", host_field)
        if r.status == 200:
            d = json.loads(r.body)
            T.eq((d["sni"], d["headers"].get("host")), ("api.test", AH), what + ": reached api.test only")
        else:
            T.denial(r, 403, "request authority rejected", what + " in an api.test tunnel")
        t.close()


for k in ("API_TOKEN", "XKEY_TOKEN", "BASIC_CRED", "QUERY_KEY"):
    v = os.environ.get(k, "")
    T.check(v.startswith("strands_box_") and len(v) == 12 + 64 and
            all(ch in "0123456789abcdef" for ch in v[12:]), "%s inside the box is a phantom" % k, v)

sys.exit(0 if T.done() else 1)
