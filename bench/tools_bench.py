#!/usr/bin/env python3
"""tools-bench: what a tool call costs (docs/tools.md, bench/README.md "Tools").

All arms in the same run, each timed inside its process by the probe
(bench/med_bench_calls.c `run` and `par`: fork + execve + wait, stdout on
/dev/null):

* tool: `git --version` through its shim in a box whose [tool.git] runs it:
  the shim connects, the broker decides shell:spawn, a leaf sandbox is
  launched with the shim's descriptors, the status recorded and returned;
* agent: the same `/usr/bin/git --version` exec'd in the agent's own sandbox
  (a box with no tool table; mediated, so shell:exec decided and verified);
* bwrap: `bwrap ... /usr/bin/git --version`, with the namespaces and the view
  sandbox-bench gives it, started from outside any box;
* throughput: 100 `git --version` started at once, through the shim in the
  box, against 100 bwraps started at once outside.

Rounds alternate the arms so machine noise falls on all of them.  Goals are
printed, never enforced: <= 10 ms added p50 per tool call (tool - agent), and
<= 1.5x bwrap's p50.

Usage: tools_bench.py --cairn PATH --probe PATH [--quick] [--dir D]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--cairn", required=True)
ap.add_argument("--probe", required=True)
ap.add_argument("--quick", action="store_true")
ap.add_argument("--dir", default="/var/tmp")
args = ap.parse_args()
cairn = os.path.abspath(args.cairn)
bwrap = shutil.which("bwrap")
git = os.path.realpath(shutil.which("git") or "/usr/bin/git")
if bwrap is None:
    print("tools-bench: bwrap not installed (Debian package bubblewrap), the peer", file=sys.stderr)
    sys.exit(2)

W = os.path.realpath(tempfile.mkdtemp(prefix="cairn-toolsbench.", dir=args.dir))
os.chmod(W, 0o755)
ws, home, binp = f"{W}/ws", f"{W}/home", f"{W}/bin"
for d in (ws, home, binp):
    os.makedirs(d)
probe = f"{binp}/med-bench-calls"
shutil.copy(args.probe, probe)
open(f"{W}/policy.dw", "w").write(f"""
@id("files")
permit (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write"], resource)
when {{ context.input.path == "{W}" || context.input.path like "{W}/*" }};
@id("launch")
permit (principal, action == Box::Action::"shell:exec", resource);
@id("git")
permit (principal, action == Box::Action::"shell:spawn", resource)
when {{ context.input.program == "git" }};
""")


def config(name, tool):
    body = f"""name = "tb"
box_dir = "{W}/box-{name}"
policy = "policy.dw"

[agent]
command = ["{probe}"]
workspace = "{ws}"

[agent.env]
HOME = "{home}"

[agent.filesystem]
exec = ["{binp}"]
"""
    if tool:
        body += f"""
[tool.git]
command = ["{git}"]
[tool.git.env]
HOME = "{home}"
[tool.git.filesystem]
read = ["{ws}"]
"""
    p = f"{W}/{name}.toml"
    open(p, "w").write(body)
    return p


CFG = {"tool": config("tool", True), "agent": config("agent", False)}
BWRAP = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
         "--unshare-uts", "--unshare-cgroup", "--die-with-parent",
         "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
         "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
         "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
         "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
         "--ro-bind", ws, ws, "--chdir", ws, "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]


def run(arm, argv):
    """The probe's output, run in the arm's box (or outside: bwrap)."""
    if arm == "bwrap":
        cmd = [probe] + argv
    else:
        cmd = [cairn, "run", "--no-records", "--decisions=none", "--config", CFG[arm], "--"] + argv
    p = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        said = [l for l in p.stderr.splitlines() if not l.startswith("  ") and "runs " not in l]
        raise SystemExit(f"tools-bench: {arm}: exit {p.returncode}: {' | '.join(said)[-800:]}")
    return p.stdout.split()


def target(arm):
    if arm == "tool":
        return [f"{W}/box-tool/bin/git", "--version"]
    if arm == "agent":
        return [git, "--version"]
    return BWRAP + [git, "--version"]


rounds = 3 if args.quick else 5
n = 40 if args.quick else 100
lat = {a: [] for a in ("tool", "agent", "bwrap")}
p90 = {a: [] for a in lat}
par = {a: [] for a in ("tool", "bwrap")}
for r in range(rounds):
    order = ["tool", "agent", "bwrap"] if r % 2 == 0 else ["bwrap", "agent", "tool"]
    for a in order:
        v = run(a, ["run", str(n)] + target(a))
        lat[a].append(int(v[0]))
        p90[a].append(int(v[2]))
    for a in (["tool", "bwrap"] if r % 2 == 0 else ["bwrap", "tool"]):
        par[a].append(int(run(a, ["par", "100"] + target(a))[0]))


def ms(ns):
    return ns / 1e6


t, ag, bw = (statistics.median(lat[a]) for a in ("tool", "agent", "bwrap"))
added = t - ag
print(f"tools-bench: one tool call (`git --version`, p50 of {n} calls, median of {rounds} rounds)")
print(f"  through the shim and a leaf: {ms(t):.2f} ms (p90 {ms(statistics.median(p90['tool'])):.2f})"
      f" | exec in the agent's sandbox: {ms(ag):.2f} ms | bwrap: {ms(bw):.2f} ms")
print(f"  added per tool call: {ms(added):.2f} ms (goal <= 10 ms: {'met' if added <= 10e6 else 'not met'})")
print(f"  ratio vs bwrap: {t / bw:.2f} (tool call / bwrap, p50; lower is better; "
      f"goal <= 1.5: {'met' if t / bw <= 1.5 else 'not met'})")
print(f"  ratio vs agent exec: {t / ag:.2f}")
tp, bp = statistics.median(par["tool"]), statistics.median(par["bwrap"])
print(f"tools-bench: 100 concurrent tool calls (median of {rounds} rounds)")
print(f"  through the shims: {ms(tp):.0f} ms ({100 / (tp / 1e9):.0f} calls/s) | "
      f"100 bwraps at once: {ms(bp):.0f} ms ({100 / (bp / 1e9):.0f} calls/s)")
print(f"  ratio vs bwrap: {tp / bp:.2f} (wall time for 100; lower is better)")
shutil.rmtree(W, ignore_errors=True)
