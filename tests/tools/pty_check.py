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


def finish(pid, fd):
    """cairn's exit code; a box still running after 30 s is killed (nothing hangs)."""
    end = time.monotonic() + 30
    while time.monotonic() < end:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(st)
        try:
            os.read(fd, 4096) if select.select([fd], [], [], 0.2)[0] else None
        except OSError:
            time.sleep(0.2)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "none: still running after 30 s, killed"


code = finish(pid, fd)
print(("ok" if code == 0 else "FAIL") + f" cairn run exits 0 at the terminal (got {code})")

# Job control, in an interactive shell: ^Z stops the tool (and its shim, so
# the shell sees a stopped job), fg continues it where it was.
pid, fd = pty.fork()
if pid == 0:
    os.chdir(ws)
    os.execv(cairn, [cairn, "run", "--decisions=none", "--config", cfg, "--",
                     "PS1='PROMPT> ' exec bash --norc --noprofile -i"])
buf = b""
if expect("PROMPT> ", "an interactive shell as the agent"):
    # the output is computed, so the terminal's echo of the command is not it
    os.write(fd, b"sh -c 'echo tool-$((1+1))start; sleep 3; echo tool-$((2+2))end'\n")
    if expect("tool-2start", "a tool in the foreground"):
        time.sleep(0.3)
        os.write(fd, b"\x1a")
        expect("Stopped", "^Z stops the tool's job")
        buf = buf[buf.index(b"Stopped"):]
        expect("PROMPT> ", "the shell has its terminal back")
        time.sleep(3.5)         # a tool still running would finish meanwhile
        try:
            while select.select([fd], [], [], 0.2)[0]:
                buf += os.read(fd, 4096)
        except OSError:
            pass
        if b"tool-4end" in buf:
            print("FAIL ^Z did not stop the tool: it ran on")
        else:
            print("ok the stopped tool does not run")
        os.write(fd, b"fg; echo fg-rc=$?\n")
        expect("tool-4end", "fg continues the tool")
        expect("fg-rc=0", "the continued tool's status")
    os.write(fd, b"exit\n")
code = finish(pid, fd)
print(("ok" if code == 0 else "FAIL") + f" the interactive box exits 0 (got {code})")
