#!/usr/bin/env python3
"""mediate-bench: what the mediator costs (docs/mediator.md, bench/README.md).

Every figure is measured in the same run as its peers:

* per call: a call inside a mediated box, against the same call in the same
  box with `[containment] mediate = false` and natively (no sandbox), each
  timed inside its process (bench/med_bench_calls.c): a let-through open of a
  runtime file, a metadata read (stat, fstat), an open for writing under a
  write grant (performed and observed), a read under a grant (let through,
  and performed and observed when a history rule reads fs:read), an open in a
  decided tree (the policy
  asked, the history written), the same with `mediate_sync = "each"`, and a
  launch (fork + execve + wait, decided and verified);
* workloads, mediated vs unmediated vs native vs gVisor (`runsc do`, where
  runsc is installed), each timed inside its sandbox around the command:
  (a) a clean `ninja -j2` build of cairn itself (--full), (b) `git status` and
  `git log -p` on a 10,000-file repository, (c) python3 importing json,
  email, http.client and sqlite3 and reading 2,000 files, (d) `rm -rf` of a
  10,000-file tree with every file decided;
* the supervisor's CPU per 1,000 mediated calls (its threads' run time, from
  /proc/<pid>/task/*/schedstat, each thread's last reading kept after it ends),
  and its RSS with 100 processes in the box.

Arms alternate per round so machine noise falls on all of them.  Goals are
printed, never enforced.

Usage: mediate_bench.py --cairn PATH --probe PATH [--quick] [--full] [--dir D]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--cairn", required=True)
ap.add_argument("--probe", required=True)
ap.add_argument("--quick", action="store_true")
ap.add_argument("--full", action="store_true", help="also (a), a clean build of cairn")
ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ap.add_argument("--dir", default="/var/tmp")
ap.add_argument("--only", default="", help="comma-separated parts: calls,cpu,rss,a,b,c,d")
args = ap.parse_args()
only = set(x for x in args.only.split(",") if x)


def part(name):
    return not only or name in only
cairn = os.path.abspath(args.cairn)
quick = args.quick
W = os.path.realpath(tempfile.mkdtemp(prefix="cairn-medbench.", dir=args.dir))
os.chmod(W, 0o755)
ws, home, binp = f"{W}/ws", f"{W}/home", f"{W}/bin"
for d in (ws, home, binp, f"{W}/bld"):
    os.makedirs(d)      # bld: (a)'s build directory, writable and executable (a build runs
                        # what it builds), granted so in the boxes whose workspace is granted
probe = f"{binp}/med-bench-calls"
shutil.copy(args.probe, probe)
runsc = shutil.which("runsc")

POLICY = f"""
@id("tree")
permit (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write",
                              Box::Action::"fs:delete", Box::Action::"fs:move"], resource)
when {{ context.input.path == "{W}" || context.input.path like "{W}/*" }};
@id("launch")
permit (principal, action == Box::Action::"shell:exec", resource);
"""
open(f"{W}/policy.dw", "w").write(POLICY)
# a history rule over fs:read: reads under grants are then observed (performed, recorded)
open(f"{W}/policy-obs.dw", "w").write(POLICY + """
@id("after_notes")
forbid (principal, action == Box::Action::"net:connect", resource)
when temporal { formerly within 1h Box::Action::"fs:read"::response{ input.path like "*/notes" } };
""")


def config(name, grant, mediate, sync="group", policy="policy.dw"):
    body = f"""name = "mb"
box_dir = "{W}/box-{name}"
policy = "{policy}"

[containment]
mediate = {"true" if mediate else "false"}
mediate_sync = "{sync}"

[agent]
command = ["{probe}"]
workspace = "{ws}"

[agent.env]
HOME = "{home}"
LANG = "C.UTF-8"

[agent.filesystem]
exec = ["{binp}"{', "' + W + '/bld"' if grant else ''}]
"""
    if grant:
        body += f'write = ["{ws}", "{home}", "{W}/bld"]\n'
    p = f"{W}/{name}.toml"
    open(p, "w").write(body)
    return p


CFG = {
    "med": config("med", True, True),          # the workspace a write grant, mediated
    "off": config("off", True, False),         # the same, unmediated
    "dec": config("dec", False, True),         # the workspace decided, file by file
    "each": config("each", False, True, "each"),
    "obs": config("obs", True, True, policy="policy-obs.dw"),  # grant reads observed
}


def run(arm, argv, cwd=ws, sample=None):
    """Run the probe with argv natively or in a box; its stdout."""
    if arm == "native":
        cmd = [probe] + argv
    elif arm == "gvisor":
        cmd = [runsc, "--rootless", "--network=none", "--ignore-cgroups", "do", probe] + argv
    else:
        cmd = [cairn, "run", "--no-records", "--decisions=none", "--config", CFG[arm], "--"] + argv
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if sample is not None:
        sample(p.pid)
    out, err = p.communicate(timeout=3600)
    if p.returncode != 0:
        # the box's own start lines are not the failure
        said = [l for l in err.splitlines() if not l.startswith(("  ", "cairn: [agent]", "cairn: box",
                                                                   "cairn: starting", "cairn: mediation"))]
        raise RuntimeError(f"{arm}: {' '.join(argv)}: exit {p.returncode}: {' | '.join(said)[-600:]}")
    return out.strip()


def us(ns):
    return ns / 1000.0


# ---- per call -----------------------------------------------------------------------

N = 4000 if quick else 20000
NX = 300 if quick else 1500
open(f"{ws}/decided", "w").write("x\n")
open(f"{ws}/granted", "w").write("x\n")


def calls(arm, kind, path, n):
    p50, mean = run(arm, ["calls", kind, path, str(n)]).split()
    return int(p50), int(mean)


rows = [
    ("a let-through open of a runtime file", "open", "/usr/lib/os-release", N, ["med", "off", "native"], "let"),
    ("a metadata read (stat of a runtime file)", "stat", "/usr/bin/true", N, ["med", "off", "native"], None),
    ("fstat of a held descriptor", "fstat", "/usr/lib/os-release", N, ["med", "off", "native"], None),
    ("an open for writing under a write grant (performed, observed)", "openw", f"{ws}/granted",
     N // 4, ["med", "off", "native"], None),
    ("a read under a grant, no history rule over fs:read (let through)", "open", f"{ws}/granted",
     N // 4, ["med", "off", "native"], None),
    ("the same with one (performed and observed)", "open", f"{ws}/granted", N // 4,
     ["obs", "native"], None),
    ("an open in a decided tree (policy + history)", "open", f"{ws}/decided", N // 4,
     ["dec", "native"], "decided"),
    ("the same, mediate_sync = \"each\" (an fdatasync per call)", "open", f"{ws}/decided", N // 20,
     ["each", "native"], None),
    ("a launch (fork + execve + wait; decided and verified)", "exec", "/usr/bin/true", NX,
     ["med", "off", "native"], None),
]
print("mediate-bench: per call (p50 over each arm's calls; mean in brackets)")
floor = os.path.join(os.path.dirname(os.path.abspath(args.probe)), "med-floor")
if part("calls") and os.access(floor, os.X_OK):
    # what the kernel alone costs, no mediator: the bound under the goals
    fl = [list(map(int, subprocess.run([floor, str(N)], capture_output=True, text=True,
                                       check=True).stdout.split())) for _ in range(3)]
    cont, addfd, nat = (statistics.median(x[i] for x in fl) for i in range(3))
    print(f"  the kernel's floor, no mediator (an openat answered at once): CONTINUE {us(cont):.2f} us, "
          f"ADDFD|SEND {us(addfd):.2f} us, native {us(nat):.2f} us — ratio vs native: "
          f"{cont / nat:.2f} and {addfd / nat:.2f}", flush=True)
results = {}
for title, kind, path, n, arms, goal in (rows if part("calls") else []):
    got = {}
    rounds = 2 if quick else 3
    for r in range(rounds):
        for arm in (arms if r % 2 == 0 else list(reversed(arms))):
            got.setdefault(arm, []).append(calls(arm, kind, path, n))
    med = {a: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for a, v in got.items()}
    arm0 = arms[0]
    parts = [f"{a} {us(med[a][0]):.2f} us ({us(med[a][1]):.2f})" for a in arms]
    ratio = med[arm0][0] / med["native"][0] if med["native"][0] else float("inf")
    line = f"  {title}: " + ", ".join(parts) + f" — ratio vs native: {ratio:.2f}"
    if goal == "let":
        line += f" (goal: let-through <= 5 us: {'met' if us(med[arm0][0]) <= 5 else 'not met'})"
    if goal == "decided":
        line += f" (goal: decided open p50 <= 20 us: {'met' if us(med[arm0][0]) <= 20 else 'not met'})"
    print(line, flush=True)
    results[title] = med

# ---- the supervisor's CPU per 1,000 mediated calls ----------------------------------


def sched_ns(pid, seen):
    """Each thread's run time (ns) into seen[tid]: a thread that has ended
    keeps its last reading (the mediator's workers end before the process)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                seen[t] = int(f.read().split()[0])
        except OSError:
            pass
    return sum(seen.values())


def cpu_run(cfg, kind, path, n):
    """The supervisor's run time over a box doing n calls, minus one doing 1."""
    samples = {}

    def sampler(pid):
        def loop():
            last = None
            seen = {}
            while True:
                v = sched_ns(pid, seen)
                if v is None:
                    break
                last = v
                time.sleep(0.005)
            samples["v"] = last
        th = threading.Thread(target=loop, daemon=True)
        th.start()
        samples["t"] = th

    run(cfg, ["calls", kind, path, str(n)], sample=sampler)
    samples["t"].join()
    return samples.get("v") or 0


ncpu = N * 2
if part("cpu"):
  base = statistics.median(cpu_run("dec", "open", f"{ws}/decided", 10) for _ in range(3))
  full = statistics.median(cpu_run("dec", "open", f"{ws}/decided", ncpu) for _ in range(3))
  basel = statistics.median(cpu_run("med", "open", "/usr/lib/os-release", 10) for _ in range(3))
  fulll = statistics.median(cpu_run("med", "open", "/usr/lib/os-release", ncpu) for _ in range(3))
  n_dec = ncpu + ncpu // 10
  print(f"  supervisor CPU per 1,000 mediated calls: decided opens {(full - base) / n_dec * 1000 / 1e6:.2f} ms, "
        f"let-through opens {(fulll - basel) / n_dec * 1000 / 1e6:.2f} ms "
        "(its threads' run time, /proc/<pid>/task/*/schedstat)", flush=True)

# ---- memory with 100 processes ------------------------------------------------------


def rss_run(cfg, nproc):
    peak = {"v": 0}

    def sampler(pid):
        def loop():
            while True:
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                peak["v"] = max(peak["v"], int(line.split()[1]))
                except OSError:
                    break
                time.sleep(0.01)
        th = threading.Thread(target=loop, daemon=True)
        th.start()
        peak["t"] = th

    script = f"i=0; while [ $i -lt {nproc} ]; do sleep 1 & i=$((i+1)); done; wait"
    run(cfg, ["time", "/bin/sh", "-c", script], sample=sampler)
    peak["t"].join()
    return peak["v"]


if part("rss"):
  r1, r100 = rss_run("med", 1), rss_run("med", 100)
  o100 = rss_run("off", 100)
  print(f"  supervisor RSS: {r100 / 1024:.1f} MiB with 100 processes in the box, {r1 / 1024:.1f} MiB with 1 "
      f"(unmediated, 100 processes: {o100 / 1024:.1f} MiB)", flush=True)

# ---- workloads ------------------------------------------------------------------------

print("mediate-bench: workloads (median wall time inside the sandbox)")
# (b) a 10,000-file repository
repo = f"{ws}/repo"
os.makedirs(repo)
nfiles = 2000 if quick else 10000
for d in range(100):
    os.makedirs(f"{repo}/d{d:02d}")
for i in range(nfiles):
    with open(f"{repo}/d{i % 100:02d}/f{i}.txt", "w") as f:
        f.write(f"line {i}\n" * 3)
env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=home)
subprocess.run(["git", "init", "-q", repo], check=True, env=env)
subprocess.run(["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", "add", "-A"], check=True, env=env)
subprocess.run(["git", "-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "all"],
               check=True, env=env)
for i in range(0, nfiles, 97):
    with open(f"{repo}/d{i % 100:02d}/f{i}.txt", "a") as f:
        f.write("changed\n")
git_cmd = ["time", "/bin/sh", "-c", "git -C repo status --short >/dev/null && git -C repo log -p >/dev/null"]

# (c) python3: the imports and 2,000 files
pyd = f"{ws}/pyfiles"
os.makedirs(pyd)
for i in range(2000):
    with open(f"{pyd}/p{i}.txt", "w") as f:
        f.write("x" * 200)
open(f"{ws}/py.py", "w").write(
    "import json, email, email.parser, http.client, sqlite3, os\n"
    "n = 0\n"
    f"for name in os.listdir('{pyd}'):\n"
    f"    with open(os.path.join('{pyd}', name)) as f:\n"
    "        n += len(f.read())\n"
    "assert n == 400000\n")
py_cmd = ["time", "/usr/bin/python3", f"{ws}/py.py"]

# (d) rm -rf of a 10,000-file tree


def make_tree():
    t = f"{ws}/tree"
    shutil.rmtree(t, ignore_errors=True)
    for d in range(100):
        os.makedirs(f"{t}/d{d:02d}")
    for i in range(nfiles):
        open(f"{t}/d{i % 100:02d}/f{i}", "w").close()


rm_cmd = ["time", "/bin/rm", "-rf", f"{ws}/tree"]

workloads = [
    ("(b) git status + git log -p, %d files" % nfiles, git_cmd, None, {"med": "med"}, 1.3),
    ("(c) python3: json, email, http.client, sqlite3 and 2,000 files", py_cmd, None, {"med": "med"}, 1.3),
    ("(d) rm -rf of a %d-file tree, every file decided" % nfiles, rm_cmd, make_tree, {"med": "dec"}, 2.0),
]
if args.full:
    src = f"{ws}/src"
    shutil.copytree(os.path.realpath(args.source), src,
                    ignore=shutil.ignore_patterns("build*", "node_modules", ".git", "*.o"))
    build_cmd = ["time", "/bin/sh", "-c",
                 f"find {W}/bld -mindepth 1 -delete && meson setup {W}/bld {src} >/dev/null && "
                 f"ninja -C {W}/bld -j2 >/dev/null"]
    workloads.insert(0, ("(a) a clean ninja -j2 build of cairn", build_cmd, None, {"med": "med"}, 1.3))

rounds = 3 if quick else 5
for title, cmd, prep, m, goal in workloads:
    if not part(title[1]):
        continue
    arms = ["med", "off", "native"] + (["gvisor"] if runsc and not title.startswith("(a)") else [])
    times = {}
    nr = 3 if title.startswith("(a)") else rounds   # (a) is minutes long; one round was too noisy
    for r in range(nr):
        for arm in (arms if r % 2 == 0 else list(reversed(arms))):
            if prep:
                prep()
            real = m.get(arm, arm)
            try:
                times.setdefault(arm, []).append(int(run(real, cmd)))
            except RuntimeError as e:
                times.setdefault(arm, [])
                print(f"    {arm}: {e}", flush=True)
    med = {a: statistics.median(v) for a, v in times.items() if v}
    parts = ", ".join(f"{a} {med[a] / 1e9:.3f} s" for a in arms if a in med)
    line = f"  {title}: {parts}"
    if "med" in med and "off" in med:
        r = med["med"] / med["off"]
        line += f" — ratio vs unmediated: {r:.2f} (goal <= {goal}: {'met' if r <= goal else 'not met'})"
    if "med" in med and "native" in med:
        line += f"; ratio vs native: {med['med'] / med['native']:.2f}"
    if "gvisor" in med and "med" in med:
        g = med["gvisor"] / med["med"]
        line += f"; ratio vs gVisor: {med['med'] / med['gvisor']:.2f} ({g:.1f}x faster; goal >= 10x: {'met' if g >= 10 else 'not met'})"
    elif not title.startswith("(a)"):
        line += "; gVisor: not measured (runsc is not installed: make deps-bench installs it)" if not runsc else ""
    print(line, flush=True)

shutil.rmtree(W, ignore_errors=True)
