"""AWS Signature Version 4 (AWS4-HMAC-SHA256, header form), written for the
gateway suite from AWS's published rules with hashlib/hmac only, and checked
against AWS's own test vectors (`python3 sigv4.py` runs them).

The upstream (upstream.py) verifies with it what the gateway signed; clients
inside the box sign with it using the box's stand-in keys.

Canonical URI: the path as it travels on the wire.  Every service but s3:
dot segments removed, runs of '/' collapsed, then URI-encoded once more (so
a wire "%3A" becomes "%253A": AWS's "encode twice"; the test suite's literal
paths are unencoded, so they come out encoded once).  s3: no normalisation;
%XX decoded and the bytes encoded once.
"""
import datetime
import hashlib
import hmac
import re
import sys
import urllib.parse

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _enc(s, safe="-_.~"):
    if isinstance(s, str):
        s = s.encode()
    return urllib.parse.quote(s, safe=safe)


def _remove_dot_segments(path):
    out = []
    segs = path.split("/")
    for i, seg in enumerate(segs):
        if seg == ".":
            if i == len(segs) - 1:
                out.append("")
            continue
        if seg == "..":
            if len(out) > 1:
                out.pop()
            if i == len(segs) - 1:
                out.append("")
            continue
        out.append(seg)
    r = "/".join(out)
    return r if r.startswith("/") else "/" + r


def canonical_uri(service, path):
    if path == "":
        path = "/"
    if service == "s3":
        return _enc(urllib.parse.unquote_to_bytes(path), safe="/-_.~")
    p = _remove_dot_segments(path)
    p = re.sub(r"/{2,}", "/", p)
    return _enc(p, safe="/-_.~")


def canonical_query(query):
    if not query:
        return ""
    pairs = []
    for piece in query.split("&"):
        if piece == "":
            continue
        k, _, v = piece.partition("=")
        k = urllib.parse.unquote_to_bytes(k.replace("+", " "))
        v = urllib.parse.unquote_to_bytes(v.replace("+", " "))
        pairs.append((_enc(k), _enc(v)))
    pairs.sort()
    return "&".join(k + "=" + v for k, v in pairs)


def _trim(v):
    return re.sub(r"[ \t]+", " ", v.strip(" \t"))


def canonical_headers(headers, signed):
    """headers: list of (name, value) in wire order; signed: lower-case names."""
    joined = {}
    for name, value in headers:
        n = name.lower()
        if n in signed:
            joined.setdefault(n, []).append(_trim(value))
    missing = [n for n in signed if n not in joined]
    if missing:
        raise ValueError("signed header(s) not in the request: " + ",".join(missing))
    return "".join(n + ":" + ",".join(joined[n]) + "\n" for n in sorted(signed))


def signing_key(secret, date8, region, service):
    k = hmac.new(("AWS4" + secret).encode(), date8.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def canonical_request(method, path, query, headers, signed, payload_hash, service):
    return "\n".join([
        method,
        canonical_uri(service, path),
        canonical_query(query),
        canonical_headers(headers, signed),
        ";".join(sorted(signed)),
        payload_hash,
    ])


def signature(secret, amz_date, region, service, creq):
    scope = "%s/%s/%s/aws4_request" % (amz_date[:8], region, service)
    sts = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])
    return hmac.new(signing_key(secret, amz_date[:8], region, service), sts.encode(),
                    hashlib.sha256).hexdigest()


def sign(method, path, query, headers, body, key_id, secret, region, service, amz_date=None,
         payload_hash=None, signed=None):
    """Return the Authorization value for a request whose headers (list of
    pairs) already carry Host and X-Amz-Date (added here when absent)."""
    headers = list(headers)
    names = {n.lower() for n, _ in headers}
    if amz_date is None:
        amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    if "x-amz-date" not in names:
        headers.append(("X-Amz-Date", amz_date))
    if payload_hash is None:
        payload_hash = hashlib.sha256(body or b"").hexdigest()
    if signed is None:
        signed = sorted({n.lower() for n, _ in headers})
    creq = canonical_request(method, path, query, headers, signed, payload_hash, service)
    sig = signature(secret, amz_date, region, service, creq)
    return headers, "%s Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s" % (
        ALGORITHM, key_id, amz_date[:8], region, service, ";".join(sorted(signed)), sig)


AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([^/,\s]+)/([^/,\s]+)/aws4_request,\s*"
                     r"SignedHeaders=([a-z0-9;_.-]+),\s*Signature=([0-9a-f]{64})$")


def verify(method, path, query, headers, body_sha256, keys, now=None, skew=900):
    """Check a request as it arrived.  keys: {access key id: secret}.
    Returns a dict: valid (bool), reason, and the parts read."""
    hmap = {}
    for n, v in headers:
        hmap.setdefault(n.lower(), []).append(v)
    auth = hmap.get("authorization", [])
    r = {"valid": False}
    if len(auth) != 1:
        r["reason"] = "%d Authorization fields" % len(auth)
        return r
    m = AUTH_RE.match(auth[0])
    if not m:
        r["reason"] = "Authorization is not AWS4-HMAC-SHA256 header form"
        return r
    key_id, date8, region, service, signed_s, sig = m.groups()
    signed = signed_s.split(";")
    r.update(access_key=key_id, region=region, service=service, signed_headers=signed_s)
    if key_id not in keys:
        r["reason"] = "unknown access key " + key_id
        return r
    if signed != sorted(signed) or len(set(signed)) != len(signed):
        r["reason"] = "SignedHeaders not sorted and unique"
        return r
    for need in ("host", "x-amz-date"):
        if need not in signed:
            r["reason"] = "SignedHeaders lacks " + need
            return r
    dates = hmap.get("x-amz-date", [])
    if len(dates) != 1 or not re.match(r"^\d{8}T\d{6}Z$", dates[0]):
        r["reason"] = "bad X-Amz-Date"
        return r
    amz_date = dates[0]
    if amz_date[:8] != date8:
        r["reason"] = "credential date differs from X-Amz-Date"
        return r
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if abs((now - when).total_seconds()) > skew:
        r["reason"] = "X-Amz-Date too far from now"
        return r
    declared = hmap.get("x-amz-content-sha256")
    if service == "s3":
        if not declared or len(declared) != 1:
            r["reason"] = "s3 request without one x-amz-content-sha256"
            return r
        payload = declared[0]
        if payload not in ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER") and payload != body_sha256:
            r["reason"] = "x-amz-content-sha256 differs from the body's hash"
            return r
    else:
        payload = body_sha256
        if declared and declared[0] != body_sha256:
            r["reason"] = "x-amz-content-sha256 differs from the body's hash"
            return r
    r["payload_hash"] = payload
    try:
        creq = canonical_request(method, path, query, headers, signed, payload, service)
    except ValueError as e:
        r["reason"] = str(e)
        return r
    r["canonical_request"] = creq
    want = signature(keys[key_id], amz_date, region, service, creq)
    if not hmac.compare_digest(want, sig):
        r["reason"] = "signature mismatch"
        return r
    r["valid"] = True
    r["reason"] = "ok"
    return r


# ---- AWS's published vectors ---------------------------------------------------------

SUITE_KEY = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SUITE_DATE = "20150830T123600Z"
HOST = ("Host", "example.amazonaws.com")
# (name, method, path, query, extra headers, body, expected signature), from the
# Signature Version 4 test suite (region us-east-1, service "service").
VECTORS = [
    ("get-vanilla", "GET", "/", "", [], b"",
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("post-vanilla", "POST", "/", "", [], b"",
     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ("get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", [], b"",
     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    ("post-vanilla-query", "POST", "/", "Param1=value1", [], b"",
     "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
    ("get-header-key-duplicate", "GET", "/", "",
     [("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1")], b"",
     "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"),
    ("get-utf8", "GET", "/\u1234", "", [], b"",
     "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
]


def selftest():
    fails = 0
    for name, method, path, query, extra, body, want in VECTORS:
        hdrs = [HOST] + extra + [("X-Amz-Date", SUITE_DATE)]
        _, auth = sign(method, path, query, hdrs, body, SUITE_KEY[0], SUITE_KEY[1], "us-east-1",
                       "service", amz_date=SUITE_DATE)
        got = auth.rsplit("Signature=", 1)[1]
        if got != want:
            print("FAIL: sigv4 vector %s: %s (want %s)" % (name, got, want))
            fails += 1
        when = datetime.datetime(2015, 8, 30, 12, 36, tzinfo=datetime.timezone.utc)
        v = verify(method, path, query, hdrs + [("Authorization", auth)],
                   hashlib.sha256(body).hexdigest(), {SUITE_KEY[0]: SUITE_KEY[1]}, now=when)
        if not v["valid"]:
            print("FAIL: sigv4 vector %s does not verify: %s" % (name, v["reason"]))
            fails += 1
    # The S3 GetObject example of the S3 API reference (signed payload header, Range).
    s3_hdrs = [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
               ("x-amz-content-sha256", EMPTY_SHA256), ("x-amz-date", "20130524T000000Z")]
    _, auth = sign("GET", "/test.txt", "", s3_hdrs, b"", "AKIAIOSFODNN7EXAMPLE",
                   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3",
                   amz_date="20130524T000000Z", payload_hash=EMPTY_SHA256)
    want = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    if not auth.endswith("Signature=" + want):
        print("FAIL: sigv4 S3 GetObject example: %s (want %s)" % (auth, want))
        fails += 1
    # The IAM ListUsers example of the SigV4 documentation.
    iam_hdrs = [("Host", "iam.amazonaws.com"),
                ("Content-Type", "application/x-www-form-urlencoded; charset=utf-8"),
                ("X-Amz-Date", "20150830T123600Z")]
    _, auth = sign("GET", "/", "Action=ListUsers&Version=2010-05-08", iam_hdrs, b"",
                   "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "iam",
                   amz_date="20150830T123600Z")
    want = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
    if not auth.endswith("Signature=" + want):
        print("FAIL: sigv4 IAM ListUsers example: %s (want %s)" % (auth, want))
        fails += 1
    # A wrong secret, a changed header, a changed body must not verify.
    hdrs, auth = sign("POST", "/x", "", [("Host", "h.amazonaws.com"), ("X-Foo", "a")], b"body",
                      "AKID", "sekrit", "us-east-1", "bedrock")
    full = hdrs + [("Authorization", auth)]
    good = verify("POST", "/x", "", full, hashlib.sha256(b"body").hexdigest(), {"AKID": "sekrit"})
    if not good["valid"]:
        print("FAIL: sigv4 round trip: " + good["reason"])
        fails += 1
    for what, args in [
        ("wrong secret", ("POST", "/x", "", full, hashlib.sha256(b"body").hexdigest(), {"AKID": "other"})),
        ("changed body", ("POST", "/x", "", full, hashlib.sha256(b"bodY").hexdigest(), {"AKID": "sekrit"})),
        ("changed header", ("POST", "/x", "", [(n, "b" if n == "X-Foo" else v) for n, v in full],
                            hashlib.sha256(b"body").hexdigest(), {"AKID": "sekrit"})),
        ("changed path", ("POST", "/y", "", full, hashlib.sha256(b"body").hexdigest(), {"AKID": "sekrit"})),
    ]:
        if verify(*args)["valid"]:
            print("FAIL: sigv4 verified a request with a " + what)
            fails += 1
    n = len(VECTORS) * 2 + 2 + 1 + 4
    print("%d passed, %d failed" % (n - fails, fails))
    return fails == 0


if __name__ == "__main__":
    sys.exit(0 if selftest() else 1)
