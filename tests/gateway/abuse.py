"""Runs inside the box (clients.sh's "abuse" run): hostile and broken input to
the gateway on 127.0.0.1:3128, on the listener and inside TLS tunnels.  Each
case asserts the exact status; throughout, healthy keep-alive connections (a
TLS tunnel and a plain-HTTP connection) keep making requests and must never
fail, and slowloris connections trickle heads the whole time.
Usage (in the box): python3 abuse.py PARAMS.json"""
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawhttp  # noqa: E402
from rawhttp import Closed, Conn, Tally, connect_raw, request, tunnel  # noqa: E402

prm = json.load(open(sys.argv[1]))
P, H = prm["P"], prm["H"]
AH = "api.test:%d" % P
HH = "api.test:%d" % H
T = Tally()
current = ["start"]
LOCK = threading.Lock()


# ---- the healthy connections ------------------------------------------------------

class Health(threading.Thread):
    """One kept-alive connection doing a request every 50 ms until stopped."""

    def __init__(self, kind):
        super().__init__(daemon=True)
        self.kind = kind
        self.ok = 0
        self.failures = []
        self.reconnects = 0
        self.stop = threading.Event()

    def open(self):
        if self.kind == "tls":
            return tunnel("api.test", P)
        return Conn()

    def one(self, c, i):
        if self.kind == "tls":
            return request(c, "GET", "/echo/health/tls/%d" % i, AH)
        return request(c, "GET", "http://%s/echo/health/plain/%d" % (HH, i), HH)

    def run(self):
        c = self.open()
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                r = self.one(c, i)
                if r.status == 200 and json.loads(r.body)["reqno"] > 0:
                    self.ok += 1
                else:
                    self.failures.append((current[0], r.status))
            except Exception as e:  # noqa: BLE001
                self.failures.append((current[0], repr(e)))
                try:
                    c.close()
                    c = self.open()
                    self.reconnects += 1
                except Exception as e2:  # noqa: BLE001
                    self.failures.append((current[0], "reopen: " + repr(e2)))
                    time.sleep(0.5)
            time.sleep(0.05)
        c.close()


class Slowloris(threading.Thread):
    """Trickles a request head one byte a second; records when the gateway
    closes the connection."""

    def __init__(self, n):
        super().__init__(daemon=True)
        self.n = n
        self.closed_after = None
        self.answer = b""
        self.stop = threading.Event()

    def run(self):
        head = ("GET http://%s/abuse/slowloris/%d HTTP/1.1\r\nHost: %s\r\nX-Pad: %s"
                % (HH, self.n, HH, "s" * 200)).encode()
        t0 = time.monotonic()
        try:
            s = socket.create_connection(rawhttp.PROXY, timeout=5)
        except OSError:
            self.closed_after = 0.0
            return
        s.settimeout(1.0)
        i = 0
        while not self.stop.is_set() and i < len(head):
            try:
                s.sendall(head[i:i + 1])
                i += 1
                b = s.recv(4096)  # waits up to 1 s: the trickle's pace
                if not b:
                    self.closed_after = time.monotonic() - t0
                    break
                self.answer += b
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                self.closed_after = time.monotonic() - t0
                break
        s.close()


health = [Health("tls"), Health("plain")]
for h in health:
    h.start()
slow = [Slowloris(i) for i in range(20)]
slow_t0 = time.monotonic()
for s in slow:
    s.start()
time.sleep(0.5)


# ---- the cases -------------------------------------------------------------------

def exchange(data, conn=None, timeout=10):
    c = conn or Conn(timeout=timeout)
    c.sock.settimeout(timeout)
    try:
        c.send(data)
    except OSError:
        pass
    try:
        r = c.read_response()
    except (Closed, OSError, ValueError) as e:
        return c, None, repr(e)
    return c, r, None


def expect(name, data, status, body=b"", tls=False, closed=True, marker=None):
    """Send data (on the listener, or in a fresh api.test tunnel) and check the
    answer: exact status, exact body (None: not checked), connection closed."""
    current[0] = name
    conn = tunnel("api.test", P) if tls else None
    c, r, err = exchange(data, conn)
    if r is None:
        T.check(False, "%s: no response" % name, err)
        c.close()
        return
    T.eq(r.status, status, name + ": status")
    if body is not None:
        T.eq(r.body, body, name + ": body")
    if marker is not None:
        T.eq(r.get("x-strands-box-egress"), marker, name + ": x-strands-box-egress")
    if closed:
        T.check(c.closed_by_peer(5), name + ": connection closed after the refusal")
    c.close()


def L(s):
    return s.replace("\n", "\r\n").encode()


# malformed request lines on the listener: 400 with an empty body, no marker
expect("garbage", b"GARBAGE\r\n\r\n", 400, marker=None)
expect("no version", L("GET http://%s/abuse/nv\n\n" % HH), 400)
expect("three tokens, junk version", L("GET http://%s/abuse/jv HTTP/x\nHost: %s\n\n" % (HH, HH)), 400)
expect("unsupported version", L("GET http://%s/abuse/v99 HTTP/9.9\nHost: %s\n\n" % (HH, HH)), 505)
expect("origin-form on the listener", L("GET /abuse/origin HTTP/1.1\nHost: %s\n\n" % HH), 400)
expect("https:// absolute-form", L("GET https://%s/abuse/https HTTP/1.1\nHost: %s\n\n" % (AH, AH)), 400)
expect("invalid method", L("G@T http://%s/abuse/method HTTP/1.1\nHost: %s\n\n" % (HH, HH)), 400)
expect("bare LF line ends", ("GET http://%s/abuse/lf HTTP/1.1\nHost: %s\n\n" % (HH, HH)).encode(), 400)
expect("NUL in the request line", L("GET http://%s/abuse/n\0ul HTTP/1.1\nHost: %s\n\n" % (HH, HH)), 400)
expect("request line too long", L("GET http://%s/abuse/%s HTTP/1.1\nHost: %s\n\n" % (HH, "a" * 9000, HH)), 414)
expect("CONNECT without a port", L("CONNECT api.test HTTP/1.1\nHost: api.test\n\n"), 400)
expect("userinfo in the target", L("GET http://u:p@%s/abuse/userinfo HTTP/1.1\nHost: %s\n\n" % (HH, HH)), 400)
expect("space before the colon", L("GET http://%s/abuse/sp HTTP/1.1\nHost : %s\n\n" % (HH, HH)), 400)
expect("obs-fold", L("GET http://%s/abuse/fold HTTP/1.1\nHost: %s\nX-A: a\n  folded\n\n" % (HH, HH)), 400)
expect("two Host fields", L("GET http://%s/abuse/hosts HTTP/1.1\nHost: %s\nHost: other.test\n\n" % (HH, HH)), 400)

# oversized heads: 431
pad = "".join("X-Pad-%d: %s\n" % (i, "p" * 1200) for i in range(60))
expect("head over 64 KiB", L("GET http://%s/abuse/big HTTP/1.1\nHost: %s\n%s\n" % (HH, HH, pad)), 431, body=None)
many = "".join("X-F%d: v\n" % i for i in range(101))
expect("101 header fields", L("GET http://%s/abuse/many HTTP/1.1\nHost: %s\n%s\n" % (HH, HH, many)), 431, body=None)
expect("one 70 kB field", L("GET http://%s/abuse/huge HTTP/1.1\nHost: %s\nX-Huge: %s\n\n" % (HH, HH, "h" * 70000)),
       431, body=None)

# framing that two parsers could read differently: 400 (501 for an unknown coding)
expect("Content-Length with Transfer-Encoding",
       L("GET http://%s/abuse/clte HTTP/1.1\nHost: %s\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\n\n"
         % (HH, HH)), 400)
expect("Transfer-Encoding with Content-Length",
       L("GET http://%s/abuse/tecl HTTP/1.1\nHost: %s\nTransfer-Encoding: chunked\nContent-Length: 5\n\n0\n\n"
         % (HH, HH)), 400)
expect("differing Content-Length values",
       L("GET http://%s/abuse/clcl HTTP/1.1\nHost: %s\nContent-Length: 5\nContent-Length: 6\n\nhello!" % (HH, HH)), 400)
expect("invalid Content-Length", L("GET http://%s/abuse/clneg HTTP/1.1\nHost: %s\nContent-Length: -1\n\n" % (HH, HH)), 400)
expect("chunked not the final coding",
       L("GET http://%s/abuse/tegz HTTP/1.1\nHost: %s\nTransfer-Encoding: chunked, gzip\n\n" % (HH, HH)), 400)
# RFC 9112 6.3: a request whose final coding is not chunked is a 400 ...
expect("Transfer-Encoding without chunked",
       L("GET http://%s/abuse/tex HTTP/1.1\nHost: %s\nTransfer-Encoding: gzip\n\n" % (HH, HH)), 400)
# ... and 6.1: a coding the server does not understand, 501
expect("unknown transfer coding",
       L("GET http://%s/abuse/texc HTTP/1.1\nHost: %s\nTransfer-Encoding: x-unknown, chunked\n\n0\n\n" % (HH, HH)),
       501, body=None)
expect("Transfer-Encoding in HTTP/1.0",
       L("GET http://%s/abuse/te10 HTTP/1.0\nHost: %s\nTransfer-Encoding: chunked\n\n0\n\n" % (HH, HH)), 400)

# invalid chunked bodies on a permitted request: 400, and nothing complete reaches upstream
for name, body in [("chunk size not hex", "zz\r\nhello\r\n0\r\n\r\n"),
                   ("chunk size overflows 64 bits", "1ffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
                   ("negative chunk size", "-5\r\nhello\r\n0\r\n\r\n"),
                   ("chunk data without its CRLF", "5\r\nhelloXX0\r\n\r\n"),
                   ("chunk line over 8 KiB", "5;" + "e" * 9000 + "\r\nhello\r\n0\r\n\r\n")]:
    slug = name.replace(" ", "-")
    expect(name + " (plain)", L("GET http://%s/abuse/chunk/%s HTTP/1.1\nHost: %s\nTransfer-Encoding: chunked\n\n"
                                % (HH, slug, HH)) + body.encode(), 400, body=None)
    expect(name + " (tunnel)", L("POST /abuse/chunk/t-%s HTTP/1.1\nHost: %s\nTransfer-Encoding: chunked\n\n"
                                 % (slug, AH)) + body.encode(), 400, body=None, tls=True)

# inside a tunnel
expect("garbage in a tunnel", b"GARBAGE\r\n\r\n", 400, tls=True)
expect("CL with TE in a tunnel",
       L("POST /abuse/t-clte HTTP/1.1\nHost: %s\nContent-Length: 5\nTransfer-Encoding: chunked\n\n0\n\n" % AH),
       400, tls=True)
expect("head over 64 KiB in a tunnel", L("GET /abuse/t-big HTTP/1.1\nHost: %s\n%s\n" % (AH, pad)), 431,
       body=None, tls=True)
expect("no Host in a tunnel", L("GET /abuse/t-nohost HTTP/1.1\n\n"), 400, tls=True)
expect("two Hosts in a tunnel", L("GET /abuse/t-2host HTTP/1.1\nHost: %s\nHost: %s\n\n" % (AH, AH)), 400, tls=True)
expect("absolute-form in a tunnel",
       L("GET https://other.test:%d/abuse/t-abs HTTP/1.1\nHost: other.test:%d\n\n" % (P, P)), 400, tls=True)
expect("CONNECT in a tunnel", L("CONNECT other.test:%d HTTP/1.1\nHost: other.test:%d\n\n" % (P, P)), 400, tls=True)
expect("Host differs from CONNECT", L("GET /abuse/t-authority HTTP/1.1\nHost: other.test:%d\n\n" % P), 403,
       body=b"request authority rejected", tls=True, marker="refused")

# CONNECT refusals: the policy's forbid first (no DNS, no socket); a literal
# private address is only tried once the policy is seen to refuse by host
current[0] = "CONNECT blocked.test"
c, r = connect_raw("blocked.test:%d" % P)
ok = T.check(r.status == 403 and r.body == ("policy denied this operation on 'blocked.test:%d' [policy: "
                                              "blocked_host]: This host is blocked." % P).encode(),
             "CONNECT blocked.test refused by its forbid", r.summary())
c.close()
if ok:
    expect("CONNECT a literal private address", L("CONNECT 10.255.255.1:443 HTTP/1.1\nHost: 10.255.255.1:443\n\n"),
           403, body=b"policy denied this operation on '10.255.255.1:443' [policy: no_private]: "
                     b"Private addresses are off limits.", marker="refused")
else:
    T.check(False, "CONNECT a literal private address: not tried (the forbid by host does not hold)")
expect("CONNECT the gateway's own port", L("CONNECT 127.0.0.1:3128 HTTP/1.1\nHost: 127.0.0.1:3128\n\n"), 403,
       body=None, marker="refused")

# a half-sent head then a reset, many times over; then a burst of idle connections
current[0] = "resets and a connection burst"
for i in range(100):
    s = socket.create_connection(rawhttp.PROXY)
    s.sendall(b"GET http://%s/abuse/reset HTTP/1.1\r\nHo" % HH.encode())
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
burst = []
for i in range(100):
    try:
        burst.append(socket.create_connection(rawhttp.PROXY, timeout=5))
    except OSError as e:
        T.check(False, "burst connection %d refused" % i, e)
        break
c = Conn()
r = request(c, "GET", "http://%s/echo/abuse/after-burst" % HH, HH)
T.eq(r.status, 200, "a new connection is served while 100 idle ones are open")
c.close()
for s in burst:
    s.close()

# ---- slowloris: other connections were unaffected; the gateway closes the slow ones
current[0] = "slowloris wait"
deadline = slow_t0 + 35
while time.monotonic() < deadline and any(s.closed_after is None for s in slow):
    time.sleep(0.5)
for s in slow:
    s.stop.set()
closed = [s.closed_after for s in slow if s.closed_after is not None]
print("slowloris: %d of %d closed by the gateway within %.0f s (after %s s); first answer: %r"
      % (len(closed), len(slow), time.monotonic() - slow_t0,
         ",".join("%.1f" % x for x in sorted(closed)[:3]) or "-", slow[0].answer[:60]))
T.eq(len(closed), len(slow), "slowloris connections closed by the gateway within 35 s")
T.check(all(not s.answer or s.answer.startswith(b"HTTP/1.1 408") or s.answer.startswith(b"HTTP/1.1 400")
            for s in slow), "slowloris answers (if any) are 408 or 400", slow[0].answer[:80])

for h in health:
    h.stop.set()
for h in health:
    h.join(10)
    print("health %s: %d requests served, failures %s" % (h.kind, h.ok, h.failures[:5]))
    T.eq(h.failures, [], "healthy %s keep-alive connection unaffected" % h.kind)
    T.check(h.ok >= 100, "healthy %s connection kept working (%d requests)" % (h.kind, h.ok))
    T.eq(h.reconnects, 0, "healthy %s connection never had to reconnect" % h.kind)

current[0] = "final"
t = tunnel("api.test", P)
T.eq(request(t, "GET", "/echo/abuse/final", AH).status, 200, "a fresh tunnel works after the abuse")
t.close()
sys.exit(0 if T.done() else 1)
