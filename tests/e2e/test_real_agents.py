#!/usr/bin/env python3
"""Real agents in a mediated box: Claude Code and Codex CLI, driven by a
scripted fake model (fake_model.py) behind the egress gateway.

Each agent runs five commands in its own box: `cat README.md`, `rm -rf build`
(Codex: `rm -r build`, its own check refuses -f) with a forbid on build/keep/,
a python3 that reads README.md and then a file the policy forbids, a git init +
add + commit, and a curl to a host no rule names.  The assertions are on
specific records (the records file and the history), on the files left on disk
and on what reached the model: never on totals, since both agents start helper
processes of their own (docs/mediator.md "Real agents").

Usage: test_real_agents.py CAIRN AGENTS_DIR [claude|codex ...]
Prints `N passed, N failed`.
"""

import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
passed = 0
failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s%s" % (what, (": " + detail) if detail else ""))
    return cond


SCRIPT = [
    "cat README.md",
    "rm -rf build",
    "python3 -c \"print(open('README.md').read().upper()); open('secret.txt')\"",
    "git init -q && git add README.md && git -c user.name=t -c user.email=t@t commit -qm first"
    " && git log --oneline",
    "curl -sS --max-time 5 https://api.example.test/",
]
FINAL = "FINAL_TEXT: all steps done"

POLICY = """\
@id("workspace")
permit (principal, action in [Box::Action::"fs:read", Box::Action::"fs:write",
                              Box::Action::"fs:delete", Box::Action::"fs:move"], resource)
when { context.input.path == "WS" || context.input.path like "WS/*" };

@id("no_delete_keep")
@description("build/keep is not the agent's to delete.")
forbid (principal, action == Box::Action::"fs:delete", resource)
when { context.input.path like "WS/build/keep/*" };

@id("no_secret")
@description("secret.txt stays unread.")
forbid (principal, action == Box::Action::"fs:read", resource)
when { context.input.path like "*/secret.txt" };

// startup noise (git, rg, ps, lsb_release, shell snapshots) must pass
@id("launches")
permit (principal, action == Box::Action::"shell:exec", resource);

@id("model")
permit (principal, action in [Box::Action::"net:connect", Box::Action::"http:request"], resource)
when { context.input.host == "model.cairn.test" };
"""


def claude_agent(agents, port, home):
    d = os.path.join(agents, "node_modules/@anthropic-ai/claude-code-linux-x64")
    cmd = [os.path.join(d, "claude"), "-p", "run the steps", "--allowedTools", "Bash",
           "--output-format", "stream-json", "--verbose"]
    env = {
        "ANTHROPIC_BASE_URL": "http://model.cairn.test:%d" % port,
        "ANTHROPIC_API_KEY": "sk-ant-phantom-e2e",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    return d, cmd, env, list(SCRIPT)


def codex_agent(agents, port, home):
    d = os.path.join(agents, "node_modules/@openai/codex-linux-x64/vendor/"
                     "x86_64-unknown-linux-musl/bin")
    provider = ('{name="fake",base_url="http://model.cairn.test:%d/v1",wire_api="responses",'
                'env_key="FAKE_OPENAI_KEY",supports_websockets=false,request_max_retries=0,'
                'stream_max_retries=0}' % port)
    cmd = [os.path.join(d, "codex"), "exec", "--json", "--skip-git-repo-check", "--ephemeral",
           "--dangerously-bypass-approvals-and-sandbox", "-m", "fake-model",
           "-c", 'model_provider="fake"', "-c", "model_providers.fake=" + provider,
           "-c", "features.plugins=false", "-c", "analytics.enabled=false", "run the steps"]
    env = {"CODEX_HOME": os.path.join(home, ".codex"), "FAKE_OPENAI_KEY": "sk-phantom-e2e"}
    # Codex refuses `rm -f` style commands itself, bypass or not
    return d, cmd, env, [c.replace("rm -rf", "rm -r") for c in SCRIPT]


AGENTS = {"claude": claude_agent, "codex": codex_agent}


def toml_str(s):
    return json.dumps(s)        # a JSON string is a TOML basic string here


def flat_records(path):
    """The policy records as flat dicts (Box's tutorial recipe, in Python)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            for rl in doc.get("resourceLogs", []):
                for sl in rl.get("scopeLogs", []):
                    if sl.get("scope", {}).get("name") != "strands-box.policy":
                        continue
                    for rec in sl.get("logRecords", []):
                        a = {}
                        for kv in rec.get("attributes", []):
                            v = kv["value"]
                            a[kv["key"]] = v.get("stringValue", v.get("intValue", v))
                        out.append(a)
    return out


def history(cairn, box_dir):
    r = subprocess.run([cairn, "history", "show", box_dir], capture_output=True, text=True)
    return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]


def run_agent(cairn, agents, name):
    tag = "[%s] " % name
    work = tempfile.mkdtemp(prefix="cairn-e2e-%s-" % name, dir="/var/tmp")
    ws, home = os.path.join(work, "ws"), os.path.join(work, "home")
    for d in (os.path.join(ws, "build/keep"), os.path.join(home, ".codex")):
        os.makedirs(d)
    files = {"README.md": "hello from the readme\n", "build/a.o": "a\n",
             "build/keep/b.o": "b\n", "secret.txt": "s3cr3t\n"}
    for rel, text in files.items():
        with open(os.path.join(ws, rel), "w") as f:
            f.write(text)

    port_file, log = os.path.join(work, "port"), os.path.join(work, "model.log")
    script = os.path.join(work, "script.json")
    bindir, cmd, env, commands = AGENTS[name](agents, 0, home)
    with open(script, "w") as f:
        json.dump({"commands": commands, "final": FINAL}, f)
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_model.py"),
                               "--script", script, "--port-file", port_file, "--log", log,
                               "--deadline", "240"])
    for _ in range(200):
        if os.path.exists(port_file):
            break
        time.sleep(0.05)
    if not check(os.path.exists(port_file), tag + "the fake model server started"):
        server.kill()
        return
    port = int(open(port_file).read())
    bindir, cmd, env, _ = AGENTS[name](agents, port, home)
    env["HOME"] = home

    with open(os.path.join(work, "policy.dw"), "w") as f:
        f.write(POLICY.replace("WS", ws))
    box_dir = os.path.join(work, "box")
    with open(os.path.join(work, "box.toml"), "w") as f:
        f.write('name = "e2e-%s"\nbox_dir = %s\npolicy = %s\n\n' %
                (name, toml_str(box_dir), toml_str(os.path.join(work, "policy.dw"))))
        f.write("[agent]\ncommand = [%s]\nworkspace = %s\n\n" %
                (", ".join(toml_str(c) for c in cmd), toml_str(ws)))
        f.write("[agent.env]\n")
        for k, v in env.items():
            f.write("%s = %s\n" % (k, toml_str(v)))
        # the workspace is decided (not granted); the agent's home a direct grant
        f.write("\n[agent.filesystem]\nwrite = [%s]\nexec = [%s]\n\n" %
                (toml_str(home), toml_str(bindir)))
        f.write('[gateway]\nhosts = { "model.cairn.test" = "127.0.0.1" }\n'
                "destination_floor = false\n")

    t0 = time.monotonic()
    try:
        r = subprocess.run(["timeout", "-k", "5", "150", cairn, "run", "--config",
                            os.path.join(work, "box.toml")], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        rc, out, err = r.returncode, r.stdout, r.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    print("%srun took %.1f s" % (tag, time.monotonic() - t0))
    check(server.returncode is not None, tag + "the fake model server is gone")

    # 7. the agent finished, and said so
    check(rc == 0, tag + "agent exit 0", "exit %d; stderr: %s" % (rc, err[-1500:]))
    check(FINAL in out, tag + "output holds the final text", out[-800:])
    check("cairn: mediation on:" in err, tag + "the start lines say mediation is on")

    reqs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
    posts = [q for q in reqs if q["method"] == "POST"]
    recs_path = os.path.join(box_dir, "private/telemetry/records.jsonl")
    recs = flat_records(recs_path) if os.path.exists(recs_path) else []
    check(recs, tag + "the records file has policy records")

    def rec(action, resource=None, pred=None):
        for a in recs:
            if a.get("strands.box.policy.action") != action:
                continue
            if resource is not None and a.get("strands.box.policy.resource") != resource:
                continue
            if pred is None or pred(a):
                return a
        return None

    def verdict(a):
        return a and (a.get("strands.box.policy.verdict"), a.get("strands.box.policy.rule"))

    # 1. the permitted command ran, and its output came back
    a = rec("shell:exec", "cat README.md")
    check(verdict(a) == ("permit", "launches"), tag + "shell:exec cat README.md: permit", str(a))

    # 2. rm: permitted, one fs:delete per file, the forbidden one refused and kept
    rm_cmd = commands[1]
    a = rec("shell:exec", rm_cmd)
    check(verdict(a) == ("permit", "launches"), tag + "shell:exec %s: permit" % rm_cmd, str(a))
    a = rec("fs:delete", os.path.join(ws, "build/a.o"))
    check(verdict(a) == ("permit", "workspace"), tag + "fs:delete build/a.o: permit", str(a))
    a = rec("fs:delete", os.path.join(ws, "build/keep/b.o"))
    check(verdict(a) == ("deny", "no_delete_keep")
          and a.get("strands.box.policy.cause") == "forbidden",
          tag + "fs:delete build/keep/b.o: deny, cause forbidden, rule no_delete_keep", str(a))
    check(not os.path.exists(os.path.join(ws, "build/a.o")), tag + "build/a.o is gone")
    check(os.path.exists(os.path.join(ws, "build/keep/b.o")), tag + "build/keep/b.o stayed")

    # 3. python3: its read decided, the forbidden one a PermissionError
    a = rec("shell:exec", None, lambda a: a.get("strands.box.policy.resource", "")
            .startswith("python3 -c "))
    check(verdict(a) == ("permit", "launches"), tag + "shell:exec python3: permit", str(a))
    a = rec("fs:read", os.path.join(ws, "README.md"))
    check(verdict(a) == ("permit", "workspace"), tag + "fs:read README.md: permit", str(a))
    a = rec("fs:read", os.path.join(ws, "secret.txt"))
    check(verdict(a) == ("deny", "no_secret"), tag + "fs:read secret.txt: deny", str(a))

    # 4. git commit: decided and done
    a = rec("shell:exec", None, lambda a: " commit " in a.get("strands.box.policy.resource", ""))
    check(verdict(a) == ("permit", "launches"), tag + "shell:exec git commit: permit", str(a))
    g = subprocess.run(["git", "-C", ws, "log", "--format=%s"], capture_output=True, text=True)
    check(g.stdout.strip() == "first", tag + "the commit is in the workspace", g.stdout + g.stderr)

    # the exit statuses are in the history, for the next rule
    hist = history(cairn, box_dir)

    def status_of(command):
        for e in hist:
            lg = e.get("logged", {})
            inp = lg.get("input", {})
            if (e.get("kind") == "response" and e.get("action") == 'Box::Action::"shell:exec"'
                    and inp.get("command") == command):
                return lg.get("output", {}).get("status")
        return None
    st = status_of(rm_cmd)
    check(st == 1, tag + "history: %s exited 1" % rm_cmd, str(st))
    st = status_of("git -c user.name=t -c user.email=t@t commit -qm first")
    check(st == 0, tag + "history: git commit exited 0", str(st))

    # 5. egress: the unnamed host refused at connect, never requested
    a = rec("net:connect", "api.example.test:443")
    check(verdict(a) == ("deny", "<default-deny>"), tag + "net:connect api.example.test: deny",
          str(a))
    check(rec("http:request", None, lambda a: "api.example.test" in
              a.get("strands.box.policy.resource", "")) is None,
          tag + "no http:request to api.example.test")
    others = sorted({a.get("strands.box.policy.resource") for a in recs
                     if a.get("strands.box.policy.action") == "net:connect"} -
                    {"model.cairn.test:%d" % port, "api.example.test:443"})
    check(not others, tag + "no connection to any other host", str(others))

    # 6. every model request went through the gateway, decided
    http = [a for a in recs if a.get("strands.box.policy.action") == "http:request"
            and a.get("strands.box.policy.resource", "").startswith("model.cairn.test:")]
    check(http and all(verdict(a) == ("permit", "model") for a in http),
          tag + "http:request to the model: permit")
    check(len(http) == len(posts) and len(posts) >= len(commands) + 1,
          tag + "one http:request record per model request",
          "%d records, %d POSTs" % (len(http), len(posts)))

    # the denials reached the model, in Box's words
    last = json.dumps(posts[-1]["body"]) if posts else ""
    want = ("cairn: policy denied this operation on '%s' [policy: no_delete_keep]: "
            "build/keep is not the agent's to delete." % os.path.join(ws, "build/keep/b.o"))
    check(json.dumps(want)[1:-1] in last,
          tag + "the rm denial reached the model", last[-1500:])
    check("PermissionError" in last and "secret.txt" in last,
          tag + "python3's PermissionError reached the model")
    check("HELLO FROM THE README" in last, tag + "python3's output reached the model")
    check(re.search(r"[0-9a-f]{7} first", last) is not None,
          tag + "git log's output reached the model")

    if failed == 0 and not os.environ.get("E2E_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("%skept %s" % (tag, work))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    cairn, agents = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    for name in sys.argv[3:] or sorted(AGENTS):
        run_agent(cairn, agents, name)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
