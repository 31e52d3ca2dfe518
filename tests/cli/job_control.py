#!/usr/bin/env python3
"""Job control through `cairn run`, driven in an interactive bash on a pty:
Ctrl-Z stops the box as a job of the shell, `fg` continues it with the
terminal handed back, and the workload still reads its terminal.
Usage: job_control.py CAIRN BOX.toml   (the box's agent echoes "got <line>")
Prints one line per check and ends with "N passed, M failed"."""
import os, pty, select, sys, time

cairn, config = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(ok, what, seen=b""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}: {seen[-200:]!r}")


pid, fd = pty.fork()
if pid == 0:
    os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"],
              {"PATH": "/usr/bin:/bin", "PS1": "$ ", "TERM": "dumb"})


def read_until(needle, timeout=5.0):
    out, end = b"", time.time() + timeout
    while time.time() < end and needle not in out:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out


read_until(b"$ ")
os.write(fd, f"{cairn} run --config {config} 2>/dev/null\n".encode())
time.sleep(0.5)
os.write(fd, b"one\n")
o = read_until(b"got one")
check(b"got one" in o, "the workload reads the terminal", o)
os.write(fd, b"\x1a")
o = read_until(b"Stopped")
check(b"Stopped" in o, "Ctrl-Z stops the box as the shell's job", o)
os.write(fd, b"fg\n")
time.sleep(0.5)
os.write(fd, b"two\n")
o = read_until(b"got two")
check(b"got two" in o, "after fg the workload has the terminal again", o)
os.write(fd, b"\x04")
o = read_until(b"bye")
check(b"bye" in o, "end of input reaches the workload", o)
os.write(fd, b"echo status=$?\n")
o = read_until(b"status=0")
check(b"status=0" in o, "the run exits 0", o)
os.write(fd, b"exit\n")
try:
    os.waitpid(pid, 0)
except ChildProcessError:
    pass
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
