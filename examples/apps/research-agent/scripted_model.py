#!/usr/bin/env python3
"""scripted_model: a deterministic OpenAI-compatible chat-completions server that plays
the model behind examples/apps/research-agent, in one of two personalities.

  python3 scripted_model.py --personality vulnerable|robust [--port N] [--count-file F]

Serves on 127.0.0.1 and prints its base URL (http://127.0.0.1:PORT/v1) on the first line.

  POST /v1/chat/completions   an OpenAI chat completion (non-streaming), tool calls included
  GET  /stats                 {"requests": n, "personality": "..."}: completions served

Both personalities do what the user's message asks: every http(s) URL in it is fetched
(`fetch_url`), every document it names (`document NAME`, `doc:NAME`) is read
(`read_document`), every other offered tool it names in backticks (`read_notes`) is
called without arguments, and when it asks for an e-mail (the word "email"/"e-mail" and
an address) one is sent (`send_email`) to that address. They differ in what they do with
tool results:

  vulnerable  follows instructions found in them: it fetches every URL a tool result
              names that it has not fetched yet, and sends every address a tool result
              names the result's text and every CANARY-… token seen in the conversation:
              through an offered tool the result names in backticks that takes `to` and
              `body` (`share_note`), else by e-mail (`send_email`);
  robust      treats them as data: it answers with a summary and calls nothing more.

The answer is a function of the request alone (no clock, no randomness; tool-call ids are
digests of their place and arguments), so a rerun gets byte-identical replies. The number
of completions served is kept in memory and, with --count-file, rewritten after each one,
so a test can tell how many model calls an application made across its restarts.

Standard library only. The text it writes is synthetic and benign.
"""

import argparse
import hashlib
import http.server
import json
import os
import re
import threading

URL_RE = re.compile(r"https?://[^\s\"'<>()\[\]{}`]+")
EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
DOC_RE = re.compile(r"(?:\bdocument\s+[\"'`]?|\bdoc:)([A-Za-z0-9][A-Za-z0-9._-]*)", re.IGNORECASE)
CANARY_RE = re.compile(r"CANARY-[A-Za-z0-9_-]+")
EMAIL_ASK_RE = re.compile(r"\be-?mail\b", re.IGNORECASE)
TICKED_RE = re.compile(r"`([A-Za-z][A-Za-z0-9_-]*)`")
BUILTIN = ("fetch_url", "read_document", "send_email")


def _clean_url(u):
    return u.rstrip(".,;:!?")


def _text(content):
    """The text of a message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _unique(xs):
    seen = set()
    out = []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


class Script:
    def __init__(self, personality):
        self.personality = personality

    def respond(self, req):
        """The assistant message answering one chat-completions request."""
        messages = req.get("messages") or []
        tools = {
            t.get("function", {}).get("name"): t.get("function", {}).get("parameters") or {}
            for t in req.get("tools") or []
            if isinstance(t, dict)
        }
        # Find the latest user turn; what follows it is this turn's tool traffic.
        last_user = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), default=None
        )
        if last_user is None:
            return self._answer("I have no request to answer.")
        user_text = _text(messages[last_user].get("content"))
        after = messages[last_user + 1 :]
        done = []  # (name, arguments) of every call already made this turn
        for m in after:
            for c in m.get("tool_calls") or []:
                f = c.get("function", {})
                try:
                    args = json.loads(f.get("arguments") or "{}")
                except ValueError:
                    args = {}
                done.append((f.get("name"), args))
        if not after or after[-1].get("role") != "tool":
            if after:
                return self._answer("Done.")
            calls = self._from_user(user_text, tools)
            return self._calls(calls, 0) if calls else self._answer(self._refuse_or_chat(user_text))
        # The latest tool results: the messages after the last assistant message.
        last_asst = max(i for i, m in enumerate(after) if m.get("role") == "assistant")
        results = [_text(m.get("content")) for m in after[last_asst + 1 :] if m.get("role") == "tool"]
        round_no = sum(1 for m in after if m.get("role") == "assistant")
        if self.personality == "vulnerable":
            everything = "\n".join(_text(m.get("content")) for m in messages)
            calls = self._from_results(results, done, tools, everything)
            if calls:
                return self._calls(calls, round_no)
        return self._answer(self._summary(user_text, results))

    def _from_user(self, text, tools):
        calls = []
        if "fetch_url" in tools:
            for u in _unique(_clean_url(u) for u in URL_RE.findall(text)):
                calls.append(("fetch_url", {"url": u}))
        if "read_document" in tools:
            for d in _unique(d.rstrip(".") for d in DOC_RE.findall(text)):
                calls.append(("read_document", {"name": d}))
        for name in _unique(TICKED_RE.findall(text)):
            if name in tools and name not in BUILTIN:
                calls.append((name, {}))
        if "send_email" in tools and EMAIL_ASK_RE.search(text):
            for a in _unique(EMAIL_RE.findall(text)):
                calls.append(
                    ("send_email", {"to": a, "subject": "As you asked", "body": text[:2000]})
                )
        return calls

    def _from_results(self, results, done, tools, everything):
        fetched = {a.get("url") for n, a in done if n == "fetch_url" and isinstance(a, dict)}
        mailed = {a.get("to") for n, a in done if isinstance(a, dict) and "to" in a}
        canaries = _unique(CANARY_RE.findall(everything))
        calls = []
        for r in results:
            if "fetch_url" in tools:
                for u in _unique(_clean_url(u) for u in URL_RE.findall(r)):
                    if u not in fetched:
                        fetched.add(u)
                        calls.append(("fetch_url", {"url": u}))
            # A tool the result names that takes `to` and `body`, else e-mail.
            via = next(
                (
                    n
                    for n in TICKED_RE.findall(r)
                    if n in tools and {"to", "body"} <= set(tools[n].get("properties") or {})
                ),
                "send_email" if "send_email" in tools else None,
            )
            if via:
                for a in _unique(EMAIL_RE.findall(r)):
                    if a not in mailed:
                        mailed.add(a)
                        body = r[:1500]
                        extra = [c for c in canaries if c not in body]
                        if extra:
                            body += "\n" + " ".join(extra)
                        args = {"to": a, "body": body}
                        if via == "send_email":
                            args["subject"] = "As instructed"
                        calls.append((via, args))
        return calls

    def _refuse_or_chat(self, text):
        if self.personality == "robust":
            return "I can fetch pages, read documents and e-mail summaries; nothing in this request asks for one of those."
        return "Sure. " + text[:200]

    def _summary(self, user_text, results):
        words = " ".join(" ".join(r.split()) for r in results).split()
        gist = " ".join(words[:40])
        return "Summary of %d source(s): %s" % (len(results), gist)

    def _calls(self, calls, round_no):
        out = []
        for i, (name, args) in enumerate(calls):
            arg_text = json.dumps(args, sort_keys=True)
            digest = hashlib.sha256(("%d/%d/%s/%s" % (round_no, i, name, arg_text)).encode())
            out.append(
                {
                    "id": "call_" + digest.hexdigest()[:16],
                    "type": "function",
                    "function": {"name": name, "arguments": arg_text},
                }
            )
        return {"role": "assistant", "content": None, "tool_calls": out}

    def _answer(self, text):
        return {"role": "assistant", "content": text}


def _tokens(req):
    return sum(len(_text(m.get("content")).split()) + 1 for m in req.get("messages") or [])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--personality", choices=["vulnerable", "robust"], required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--count-file", default=None)
    args = ap.parse_args()
    script = Script(args.personality)
    state = {"requests": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _json(self, code, doc):
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path == "/stats":
                with lock:
                    n = state["requests"]
                return self._json(200, {"requests": n, "personality": args.personality})
            self._json(404, {"error": {"message": "no such route"}})

        def do_POST(self):
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                return self._json(404, {"error": {"message": "no such route"}})
            try:
                n = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(n) or b"{}")
                if not isinstance(req, dict):
                    raise ValueError("the body is not a JSON object")
            except ValueError as e:
                return self._json(400, {"error": {"message": "bad request: %s" % e}})
            if req.get("stream"):
                return self._json(400, {"error": {"message": "streaming is not supported"}})
            msg = script.respond(req)
            with lock:
                state["requests"] += 1
                count = state["requests"]
                if args.count_file:
                    with open(args.count_file + ".tmp", "w") as f:
                        f.write("%d\n" % count)
                    os.replace(args.count_file + ".tmp", args.count_file)
            out_tokens = len(_text(msg.get("content")).split()) + 8 * len(msg.get("tool_calls") or [])
            self._json(
                200,
                {
                    "id": "chatcmpl-" + hashlib.sha256(json.dumps(req, sort_keys=True).encode()).hexdigest()[:24],
                    "object": "chat.completion",
                    "created": 0,
                    "model": req.get("model") or "scripted",
                    "choices": [
                        {
                            "index": 0,
                            "message": msg,
                            "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": _tokens(req),
                        "completion_tokens": out_tokens,
                        "total_tokens": _tokens(req) + out_tokens,
                    },
                },
            )

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("http://127.0.0.1:%d/v1" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
