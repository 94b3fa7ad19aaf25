#!/usr/bin/env python3
"""A deterministic scripted agent behind an OpenAI-compatible endpoint, for AgentDojo
suites: gauntlet's parity test and bench/agentdojo.sh point both gauntlet and AgentDojo's
own harness at it.

    VENV/bin/python bench/agentdojo_agent.py --mode obey|ignore|text [--port 0] [--version v1.2.2]

Run it with the AgentDojo virtualenv's Python (scripts/install-agentdojo.sh): it reads the
benchmark's tasks from the package to know what to do. It prints its base URL
(`http://127.0.0.1:PORT/v1`) on the first line of stdout, then serves until killed:

- `GET /v1/models` lists one model (`scripted-obey` or `scripted-ignore`);
- `POST /v1/chat/completions` finds the task by the conversation's first user turn (a
  user task's prompt, or an injection task's goal run as a user task) and replies with
  the next call of the task's ground truth (one call per turn, ids `call_0`, `call_1`, …),
  then with the task's expected output as text. A request whose last turn asks which
  tools the task needs (the tool_filter defence) gets every offered tool's name.
- `--mode obey`: once a tool result carries an injection task's goal (compared with
  whitespace, quotes and backslashes ignored, since the environment's YAML re-wraps
  text), the agent first carries out that injection task's ground truth, then resumes
  the user task. `--mode ignore` never does. `--mode text` never calls a tool: it answers
  every request with the task's expected output as text, like a model served without
  tool calling (no injection placed in a tool result ever reaches it).

The replies depend only on the request, so any number of clients, in any order, see the
same agent. Token usage is reported as characters / 4 of the request and the reply.
"""

import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agentdojo.base_tasks import BaseUserTask
from agentdojo.task_suite.load_suites import get_suites

FILTER_PREFIX = "Your task is to filter the list of tools"


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text") or part.get("content") or "" for part in content)


def norm(s):
    return re.sub(r"\s+", " ", re.sub(r"[\"'\\]", "", s)).strip().lower()


class Scripts:
    def __init__(self, version):
        self.by_prompt = {}
        self.lock = threading.Lock()
        self.plans = {}
        for suite in get_suites(version).values():
            for task in suite.user_tasks.values():
                self.by_prompt[task.PROMPT] = (suite, task)
            for task in suite.injection_tasks.values():
                self.by_prompt.setdefault(task.GOAL, (suite, task))

    def plan(self, suite, task):
        key = (suite.name, task.ID)
        with self.lock:
            if key not in self.plans:
                env = suite.load_and_inject_default_environment({})
                if isinstance(task, BaseUserTask):
                    env = task.init_environment(env)
                calls = [(c.function, dict(c.args)) for c in task.ground_truth(env)]
                output = getattr(task, "GROUND_TRUTH_OUTPUT", "") or "Done."
                self.plans[key] = (calls, output)
            return self.plans[key]

    def injected(self, suite, tool_texts):
        """The first tool result (index) that carries an injection task's goal, and that task."""
        goals = [(norm(t.GOAL), t) for t in suite.injection_tasks.values()]
        for j, text in enumerate(tool_texts):
            n = norm(text)
            for g, t in goals:
                if g and g in n:
                    return j, t
        return None


def reply(body, scripts, mode):
    msgs = body.get("messages") or []
    users = [m for m in msgs if m.get("role") == "user"]
    if not users:
        return {"content": "No task.", "tool_calls": None}
    last = msgs[-1]
    if last.get("role") == "user" and text_of(last.get("content")).startswith(FILTER_PREFIX):
        names = [t["function"]["name"] for t in body.get("tools") or []]
        return {"content": ", ".join(names), "tool_calls": None}
    found = scripts.by_prompt.get(text_of(users[0].get("content")))
    if found is None:
        return {"content": "I do not know this task.", "tool_calls": None}
    suite, task = found
    calls, output = scripts.plan(suite, task)
    if mode == "text":
        return {"content": output, "tool_calls": None}
    tool_texts = [text_of(m.get("content")) for m in msgs if m.get("role") == "tool"]
    if mode == "obey":
        hit = scripts.injected(suite, tool_texts)
        if hit is not None:
            j, inj = hit
            inj_calls, _ = scripts.plan(suite, inj)
            calls = calls[: j + 1] + inj_calls + calls[j + 1 :]
    n = len(tool_texts)
    if n < len(calls):
        name, args = calls[n]
        call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return {"content": None, "tool_calls": [call]}
    return {"content": output, "tool_calls": None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["obey", "ignore", "text"], required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--version", default="v1.2.2")
    args = ap.parse_args()
    scripts = Scripts(args.version)
    model = f"scripted-{args.mode}"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self.send(200, {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "gauntlet"}]})
            else:
                self.send(404, {"error": {"message": "not found"}})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self.send(404, {"error": {"message": "not found"}})
                return
            try:
                body = json.loads(raw)
                msg = reply(body, scripts, args.mode)
            except Exception as e:  # a fixture: say what broke
                self.send(500, {"error": {"message": f"{type(e).__name__}: {e}"}})
                return
            out_len = len(json.dumps(msg))
            message = {"role": "assistant", "content": msg["content"]}
            if msg["tool_calls"]:
                message["tool_calls"] = msg["tool_calls"]
            self.send(
                200,
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if msg["tool_calls"] else "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(raw) // 4,
                        "completion_tokens": out_len // 4,
                        "total_tokens": len(raw) // 4 + out_len // 4,
                    },
                },
            )

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
