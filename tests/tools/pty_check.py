#!/usr/bin/env python3
"""A tool at the agent's terminal (docs/tools.md "The leaf", stdio): cairn
runs under a pseudo-terminal; the agent calls tools that read the terminal
and that ^C interrupts.  Prints one `ok <what>` or `FAIL <what>: <why>` line
per check.  Usage: pty_check.py CAIRN BOX_TOML WORKSPACE"""
import os
import pty
import select
import sys
import time

cairn, cfg, ws = sys.argv[1:4]
script = ("echo ready-1; "
          "sh -c 'read x; echo tool-got:$x'; echo after-read=$?; "
          "sh -c 'echo tool-sleeping; sleep 60; echo tool-woke'; echo agent-alive=$?; "
          "echo agent-done")
pid, fd = pty.fork()
if pid == 0:
    os.chdir(ws)
    os.execv(cairn, [cairn, "run", "--decisions=none", "--config", cfg, "--", script])

buf = b""
failed = False


def expect(token, what, timeout=30):
    global buf, failed
    end = time.monotonic() + timeout
    while token.encode() not in buf:
        left = end - time.monotonic()
        if left <= 0:
            print(f"FAIL {what}: no '{token}' within {timeout} s; the terminal showed: "
                  f"{buf[-600:]!r}")
            failed = True
            return False
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                print(f"FAIL {what}: the terminal closed before '{token}': {buf[-600:]!r}")
                failed = True
                return False
            buf += chunk
    print(f"ok {what}")
    return True


if expect("ready-1", "the agent runs at the terminal"):
    time.sleep(0.3)   # the tool's leaf is starting; the line waits in the terminal either way
    os.write(fd, b"hello\n")
    expect("tool-got:hello", "a tool reads the agent's terminal")
    expect("after-read=0", "the agent goes on after the tool")
    if expect("tool-sleeping", "a second tool runs"):
        time.sleep(0.3)
        os.write(fd, b"\x03")
        expect("agent-alive=130", "^C ends the tool (130), not the agent")
        expect("agent-done", "the agent finishes after ^C")
        if b"tool-woke" in buf:
            print("FAIL ^C did not reach the tool: it woke")
            failed = True
        else:
            print("ok the tool did not run on after ^C")
# the box ends by itself, or it is a failure (and killed: nothing hangs)
code = None
end = time.monotonic() + 30
while code is None and time.monotonic() < end:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done == pid:
        code = os.waitstatus_to_exitcode(st)
    else:
        try:
            os.read(fd, 4096) if select.select([fd], [], [], 0.2)[0] else None
        except OSError:
            time.sleep(0.2)
if code is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    code = "none: still running after 30 s, killed"
print(("ok" if code == 0 else "FAIL") + f" cairn run exits 0 at the terminal (got {code})")
