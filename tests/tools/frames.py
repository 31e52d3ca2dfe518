#!/usr/bin/env python3
"""Raw frames to the broker (docs/tools.md "The shim's protocol"), run in the
agent's sandbox by tests/tools/run.sh.  Each case prints one line:
`<case> <status or closed> <message>`.  Usage: frames.py SOCKET CASE..."""
import json
import os
import socket
import struct
import sys
import array

sock_path = sys.argv[1]


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(sock_path)
    return s


def frame(obj):
    b = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
    return struct.pack(">I", len(b)) + b


def spawn(argv, cwd="/", fg=False, version=1, extra=None):
    body = {"argv": argv, "cwd": cwd, "foreground": fg}
    if extra:
        body.update(extra)
    return {"version": version, "frame_type": "spawn", "body": body}


def send(s, data, fds=None):
    if fds is not None:
        s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        s.sendall(data)


def answer(s):
    try:
        hdr = b""
        while len(hdr) < 4:
            c = s.recv(4 - len(hdr))
            if not c:
                return "closed", ""
            hdr += c
        n = struct.unpack(">I", hdr)[0]
        body = b""
        while len(body) < n:
            c = s.recv(n - len(body))
            if not c:
                return "closed", ""
            body += c
        f = json.loads(body)
        b = f["body"]
        return str(b["status"]), b.get("message", "")
    except (socket.timeout, ConnectionResetError):
        return "closed", ""


def case(name):
    s = conn()
    std = [0, 1, 2]
    if name == "ok":
        send(s, frame(spawn(["git", "--version"], os.getcwd())), std)
    elif name == "version":
        send(s, frame(spawn(["git", "--version"], os.getcwd(), version=7)), std)
    elif name == "notjson":
        send(s, frame(b"{not json"), std)
    elif name == "unknown_key":
        send(s, frame(spawn(["git", "--version"], os.getcwd(), extra={"env": {}})), std)
    elif name == "oversize":
        send(s, struct.pack(">I", (1 << 20) + 1), std)
    elif name == "zero":
        send(s, struct.pack(">I", 0), std)
    elif name == "no_fds":
        send(s, frame(spawn(["git", "--version"], os.getcwd())))
    elif name == "two_fds":
        send(s, frame(spawn(["git", "--version"], os.getcwd())), [0, 1])
    elif name == "dir_stdin":
        d = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        send(s, frame(spawn(["git", "--version"], os.getcwd())), [d, 1, 2])
    elif name == "opath_stdout":
        d = os.open("/etc/hostname", os.O_PATH)
        send(s, frame(spawn(["git", "--version"], os.getcwd())), [0, d, 2])
    elif name == "not_found":
        send(s, frame(spawn(["nosuchtool", "x"], os.getcwd())), std)
    elif name == "slash_name":
        send(s, frame(spawn(["/usr/bin/git", "--version"], os.getcwd())), std)
    elif name == "relative_cwd":
        send(s, frame(spawn(["git", "--version"], "rel")), std)
    elif name == "signal_first":
        send(s, frame({"version": 1, "frame_type": "signal", "body": {"signal": 2}}))
    elif name == "truncated":
        send(s, struct.pack(">I", 100) + b'{"version":1', std)
        s.shutdown(socket.SHUT_WR)
    elif name == "silent":
        pass                            # nothing at all: the broker's 5 s timeout
    else:
        raise SystemExit("unknown case " + name)
    st, msg = answer(s)
    print(name, st, msg.replace("\n", " "))
    s.close()


def flood(n):
    held = []
    for _ in range(n):
        try:
            held.append(conn())
        except OSError as e:
            print("flood connect failed after", len(held), e)
            break
    print("flood held", len(held))
    return held


if __name__ == "__main__":
    args = sys.argv[2:]
    if args and args[0] == "flood":
        held = flood(int(args[1]))
        # a real call while they are held: it waits its turn, then runs
        # bash, not os.system's sh: sh is a tool in this box
        import subprocess
        subprocess.run(["bash", "-c", "git --version; echo flood-call=$?"])
        for s in held:
            s.close()
    else:
        for a in args:
            case(a)
