"""Runs inside the box (clients.sh's "floor" run, `[gateway] destination_floor`
left on and net:connect permitted to everything): loopback, link-local and
metadata destinations are refused with 403 and the marker before any socket,
however they are spelt; a name the resolver puts on loopback is refused at
its address; a name a `[gateway] hosts` entry maps to loopback (api.test) is
the operator's opt-in and reaches the loopback upstream, but not on the
gateway's own port, and a hosts entry to a metadata address (meta.test) stays
refused.  Usage (in the box): python3 box_floor.py PARAMS.json"""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawhttp import Tally, connect_raw  # noqa: E402

prm = json.load(open(sys.argv[1]))
P, H = prm["P"], prm["H"]
T = Tally()


def refused(authority, what):
    c, r = connect_raw(authority)
    ok = T.eq(r.status, 403, "floor: CONNECT %s (%s)" % (authority, what))
    T.eq(r.get("x-strands-box-egress"), "refused", "floor: CONNECT %s carries the marker" % authority)
    print("floor: CONNECT %s -> %d %r" % (authority, r.status, r.body[:200]))
    c.close()
    return ok


loop_ok = refused("127.0.0.1:%d" % P, "loopback literal")
refused("localhost:%d" % P, "loopback name")
LOOP = prm.get("LOOPNAME")
if LOOP:
    refused("%s:%d" % (LOOP, P), "a name the host's resolver puts on loopback, no hosts entry")
else:
    T.check(False, "floor: no name other than localhost resolves to loopback on this host (/etc/hosts), "
            "so a name resolved into loopback cannot be tried")
refused("api.test:3128", "a [gateway] hosts name on the gateway's own port")
refused("[::1]:%d" % P, "IPv6 loopback")
refused("[::ffff:127.0.0.1]:%d" % P, "IPv4-mapped loopback")
refused("2130706433:%d" % P, "loopback as one decimal number")
refused("127.1:%d" % P, "loopback shorthand")
refused("0.0.0.0:%d" % P, "unspecified address")
refused("metadata.google.internal:80", "metadata name, refused before DNS")
# Only once the floor is seen to hold for loopback: never send a packet to a
# metadata address from a machine that may have one.
if loop_ok:
    refused("169.254.169.254:80", "metadata address")
    refused("meta.test:80", "a [gateway] hosts entry to the metadata address")
    refused("[fd00:ec2::254]:80", "EC2 IPv6 metadata address")
else:
    T.check(False, "floor: metadata addresses not tried (loopback was not refused)")

# plain HTTP meets the same floor
try:
    urllib.request.urlopen("http://127.0.0.1:%d/echo/floor/plain" % H, timeout=10)
    T.check(False, "floor: plain http to 127.0.0.1 was not refused (NO_PROXY has 127.0.0.1, so this "
            "went direct; the box must have no route but the gateway)")
except urllib.error.HTTPError as e:
    T.check(False, "floor: plain http to 127.0.0.1 got %d (a direct route exists?)" % e.code)
except (urllib.error.URLError, OSError):
    T.check(True, "")

# the opt-in: curl reaches the loopback upstream by its [gateway] hosts name, the floor on
r = subprocess.run(["curl", "-sS", "--max-time", "30", "-w", "\n%{http_code}",
                    "https://api.test:%d/echo/optin/curl" % P], capture_output=True, text=True)
out = r.stdout.rsplit("\n", 1)
T.eq((r.returncode, out[-1]), (0, "200"), "floor: curl https://api.test (hosts entry to 127.0.0.1), floor on")
T.check("/echo/optin/curl" in out[0], "floor: curl got the upstream's echo", r.stdout[:300] + r.stderr[:300])
try:
    with urllib.request.urlopen("http://api.test:%d/echo/optin/plain" % H, timeout=10) as resp:
        T.eq(resp.status, 200, "floor: plain http to api.test (hosts entry to 127.0.0.1), floor on")
except (urllib.error.URLError, OSError) as e:
    T.check(False, "floor: plain http to api.test (hosts entry to 127.0.0.1) failed: %r" % e)
sys.exit(0 if T.done() else 1)
