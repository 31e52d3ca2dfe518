#!/usr/bin/env python3
"""A scripted stand-in for the model APIs of Claude Code and Codex CLI.

It speaks just enough of Anthropic's Messages API (POST .../v1/messages, SSE when
the request streams) and OpenAI's Responses API (POST .../responses, SSE) for a
real agent to run a fixed list of shell commands and then finish with a final
text.  The wire shapes are the ones docs/mediator.md "Real agents" describes.

Stepping is stateless: the step is the number of tool results in the request
that answer one of *our* tool calls (ids toolu_cairn_N / call_cairn_N).  Below
the script's length the answer is a tool call for commands[step]; at or past it,
the final text.  Retries and the agents' side requests (titles, summaries: any
request without a shell tool) cannot throw it out of step.

Every request is appended to the log as one JSON line (method, path, headers,
body) for the test's assertions.  The server writes its port to --port-file,
and stops by itself after --deadline seconds so that a failed test leaves
nothing running.

Usage: fake_model.py --script FILE --port-file FILE --log FILE [--deadline S]
"""

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = {"commands": [], "final": "done"}
LOG_LOCK = threading.Lock()
LOG_PATH = None


def log_request(method, path, headers, body):
    entry = {"method": method, "path": path, "headers": dict(headers.items()), "body": body}
    with LOG_LOCK, open(LOG_PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def sse(events):
    """events: (name, object) pairs -> one SSE body."""
    out = []
    for name, obj in events:
        out.append("event: %s\ndata: %s\n\n" % (name, json.dumps(obj)))
    return "".join(out).encode()


# -- Anthropic Messages ------------------------------------------------------

def anthropic_step(req):
    n = 0
    for msg in req.get("messages", []):
        content = msg.get("content")
        if msg.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if (isinstance(block, dict) and block.get("type") == "tool_result"
                    and str(block.get("tool_use_id", "")).startswith("toolu_cairn_")):
                n += 1
    return n


def anthropic_answer(req):
    """-> (content blocks, stop_reason)."""
    tools = [t.get("name") for t in req.get("tools", []) if isinstance(t, dict)]
    if "Bash" not in tools:
        return [{"type": "text", "text": "ok"}], "end_turn"
    step = anthropic_step(req)
    cmds = SCRIPT["commands"]
    if step < len(cmds):
        return [{"type": "tool_use", "id": "toolu_cairn_%d" % step, "name": "Bash",
                 "input": {"command": cmds[step], "description": "step %d" % step}}], "tool_use"
    return [{"type": "text", "text": SCRIPT["final"]}], "end_turn"


def anthropic_sse(req, blocks, stop):
    model = req.get("model", "fake-model")
    ev = [("message_start", {"type": "message_start", "message": {
        "id": "msg_cairn", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    for i, b in enumerate(blocks):
        if b["type"] == "tool_use":
            start = dict(b, input={})
            text = json.dumps(b["input"])
            half = len(text) // 2       # split, as a real stream splits it
            deltas = [{"type": "input_json_delta", "partial_json": text[:half]},
                      {"type": "input_json_delta", "partial_json": text[half:]}]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": b["text"]}]
        ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                           "content_block": start}))
        for d in deltas:
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": d}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": stop, "stop_sequence": None},
                                 "usage": {"output_tokens": 5}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return sse(ev)


# -- OpenAI Responses --------------------------------------------------------

def responses_step(req):
    n = 0
    items = req.get("input")
    if isinstance(items, list):
        for it in items:
            if (isinstance(it, dict) and it.get("type") == "function_call_output"
                    and str(it.get("call_id", "")).startswith("call_cairn_")):
                n += 1
    return n


def responses_tool(req):
    """The shell tool the request advertises -> (name, arguments for a command)."""
    names = set()
    for t in req.get("tools", []) or []:
        if isinstance(t, dict):
            names.add(t.get("name") or (t.get("function") or {}).get("name"))
    if "exec_command" in names:
        return "exec_command", lambda c: {"cmd": c}
    if "shell_command" in names:
        return "shell_command", lambda c: {"command": c}
    if "shell" in names:
        return "shell", lambda c: {"command": ["bash", "-lc", c]}
    return None, None


def responses_sse(req):
    name, args = responses_tool(req)
    step = responses_step(req)
    cmds = SCRIPT["commands"]
    if name is not None and step < len(cmds):
        item = {"type": "function_call", "id": "fc_cairn_%d" % step,
                "call_id": "call_cairn_%d" % step, "name": name,
                "arguments": json.dumps(args(cmds[step]))}
    else:
        text = SCRIPT["final"] if name is not None else "ok"
        item = {"type": "message", "role": "assistant", "id": "msg_cairn_%d" % step,
                "content": [{"type": "output_text", "text": text}]}
    rid = "resp_cairn_%d" % step
    return sse([
        ("response.created", {"type": "response.created", "response": {"id": rid}}),
        ("response.output_item.added", {"type": "response.output_item.added",
                                        "output_index": 0, "item": item}),
        ("response.output_item.done", {"type": "response.output_item.done",
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {
            "id": rid, "usage": {"input_tokens": 10, "input_tokens_details": None,
                                 "output_tokens": 5, "output_tokens_details": None,
                                 "total_tokens": 15}}}),
    ])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):      # the log file is the record
        pass

    def reply(self, status, body, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        log_request("HEAD", self.path, self.headers, None)
        self.reply(200, b"", "text/plain")

    def do_GET(self):                       # also refuses a WebSocket upgrade
        log_request("GET", self.path, self.headers, None)
        self.reply(404, b'{"error":"not found"}', "application/json")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            req = None
        log_request("POST", self.path, self.headers, req)
        path = self.path.split("?", 1)[0]
        if req is None or not isinstance(req, dict):
            self.reply(400, b'{"error":"bad json"}', "application/json")
        elif path.endswith("/count_tokens"):
            self.reply(200, b'{"input_tokens":10}', "application/json")
        elif path.endswith("/v1/messages"):
            blocks, stop = anthropic_answer(req)
            if req.get("stream"):
                self.reply(200, anthropic_sse(req, blocks, stop), "text/event-stream")
            else:
                msg = {"id": "msg_cairn", "type": "message", "role": "assistant",
                       "model": req.get("model", "fake-model"), "content": blocks,
                       "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": 10, "output_tokens": 5}}
                self.reply(200, json.dumps(msg).encode(), "application/json")
        elif path.endswith("/responses"):
            self.reply(200, responses_sse(req), "text/event-stream")
        else:
            self.reply(404, b'{"error":"not found"}', "application/json")


def main():
    global LOG_PATH, SCRIPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--deadline", type=float, default=300)
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as f:
        SCRIPT = json.load(f)
    LOG_PATH = a.log
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, a.port_file)             # the reader never sees half a number
    t = threading.Timer(a.deadline, srv.shutdown)
    t.daemon = True
    t.start()
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
