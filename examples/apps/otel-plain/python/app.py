#!/usr/bin/env python3
"""otel-plain (Python): a tool-using application instrumented with nothing but the
OpenTelemetry SDK and its OTLP/HTTP exporter (protobuf), driven by gauntlet's `command`
target.

It speaks gauntlet-command/1 on stdin/stdout: one JSON request per line, one
{"id", "reply"} line back. Each request's `traceparent` field is continued with the W3C
propagator, so the request's spans are one trace below gauntlet's span. Its planner is
a fixed set of rules (no model): the point of this application is the exporter path, so
what it does for a request is known in advance.

  every http(s) URL in the request  -> fetch_url(url): a real HTTP GET
  "document NAME"                   -> read_document(name) from --docs
  every e-mail address              -> send_email(to, subject, body): a honeypot; the
                                       body is the request's first 'quoted text'

Spans, written by hand with the SDK's tracer (the GenAI semantic conventions):

  invoke_agent otel-plain-python    gen_ai.operation.name = invoke_agent
    execute_tool <name>             gen_ai.operation.name = execute_tool,
                                    gen_ai.tool.name, gen_ai.tool.call.id,
                                    gen_ai.tool.call.arguments (JSON),
                                    gen_ai.tool.call.result
      GET                           kind CLIENT: http.request.method, url.full,
                                    server.address, server.port,
                                    http.response.status_code (fetch_url only; the
                                    request carries the traceparent onwards)

The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
(gauntlet's command target sets both) and OTEL_SDK_DISABLED. --log PATH keeps the
application's own record, one JSON line per tool call ({"event": "tool_call",
"trace_id", "tool", "arguments", "result"}) and per HTTP request ({"event":
"http_request", "trace_id", "method", "url"}).

The command target resolves its program's path, which takes a virtualenv's python out
of its virtualenv: start it as [/usr/bin/env, VENV/bin/python, app.py, …].
"""

import argparse
import json
import pathlib
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

MAX_PAGE = 4096
MAX_RESULT = 1024
URL = re.compile(r"https?://[^\s'\"<>]+")
ADDRESS = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
DOCUMENT = re.compile(r"\bdocument\s+([\w.-]+)")
QUOTED = re.compile(r"'([^']*)'")

PROPAGATOR = TraceContextTextMapPropagator()


# --- the lines an application adds to export its traces --------------------------------
def setup_tracing():
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-plain-python"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider
# ---------------------------------------------------------------------------------------


class Log:
    def __init__(self, path):
        self.path = path

    def write(self, doc):
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(doc, sort_keys=True) + "\n")


class App:
    def __init__(self, args):
        self.provider = setup_tracing()
        self.tracer = trace.get_tracer("otel-plain-python")
        self.log = Log(args.log)
        self.docs = pathlib.Path(args.docs).resolve() if args.docs else None
        self.trace_id = ""
        self.calls = 0

    def plan(self, message):
        """The tool calls a request asks for, in the order of the rules."""
        steps = [("fetch_url", {"url": u.rstrip(".,;)")}) for u in URL.findall(message)]
        steps += [("read_document", {"name": n.rstrip(".,;")}) for n in DOCUMENT.findall(message)]
        quoted = QUOTED.search(message)
        body = quoted.group(1) if quoted else message
        steps += [("send_email", {"to": a, "subject": "as requested", "body": body})
                  for a in ADDRESS.findall(message)]
        return steps

    def fetch(self, url):
        parts = urllib.parse.urlsplit(url)
        with self.tracer.start_as_current_span("GET", kind=SpanKind.CLIENT) as span:
            span.set_attribute("http.request.method", "GET")
            span.set_attribute("url.full", url)
            span.set_attribute("server.address", parts.hostname or "")
            if parts.port:
                span.set_attribute("server.port", parts.port)
            self.log.write({"event": "http_request", "trace_id": self.trace_id,
                            "method": "GET", "url": url})
            headers = {"User-Agent": "otel-plain-python/1"}
            PROPAGATOR.inject(headers)
            try:
                req = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(req, timeout=10) as r:
                    span.set_attribute("http.response.status_code", r.status)
                    return r.read(MAX_PAGE).decode("utf-8", "replace")
            except urllib.error.HTTPError as e:
                span.set_attribute("http.response.status_code", e.code)
                span.set_status(trace.StatusCode.ERROR)
                return "fetch failed: HTTP %d" % e.code
            except (urllib.error.URLError, OSError, ValueError) as e:
                span.set_attribute("error.type", type(e).__name__)
                span.set_status(trace.StatusCode.ERROR)
                return "fetch failed: %s" % e

    def read_document(self, name):
        if self.docs is None:
            return "no document store is configured"
        path = (self.docs / name).resolve()
        if self.docs not in path.parents or not path.is_file():
            return "no such document: %s" % name
        return path.read_text(encoding="utf-8", errors="replace")[:MAX_PAGE]

    def run_tool(self, name, arguments):
        self.calls += 1
        with self.tracer.start_as_current_span("execute_tool " + name) as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", name)
            span.set_attribute("gen_ai.tool.call.id", "call_%d" % self.calls)
            span.set_attribute("gen_ai.tool.call.arguments", json.dumps(arguments, sort_keys=True))
            if name == "fetch_url":
                result = self.fetch(arguments["url"])
            elif name == "read_document":
                result = self.read_document(arguments["name"])
            else:
                result = "sent to %s" % arguments["to"]  # a honeypot: nothing is sent
            result = result[:MAX_RESULT]
            span.set_attribute("gen_ai.tool.call.result", result)
        self.log.write({"event": "tool_call", "trace_id": self.trace_id, "tool": name,
                        "arguments": arguments, "result": result})
        return result

    def turn(self, message, traceparent):
        ctx = PROPAGATOR.extract({"traceparent": traceparent} if traceparent else {})
        parent = trace.get_current_span(ctx).get_span_context()
        self.trace_id = "%032x" % parent.trace_id if parent.is_valid else ""
        token = context.attach(ctx)
        try:
            with self.tracer.start_as_current_span("invoke_agent otel-plain-python") as span:
                span.set_attribute("gen_ai.operation.name", "invoke_agent")
                span.set_attribute("gen_ai.agent.name", "otel-plain-python")
                done = ["%s -> %s" % (n, self.run_tool(n, a)[:80]) for n, a in self.plan(message)]
        finally:
            context.detach(token)
        # Export this request's spans before answering (bounded: an unreachable collector
        # must not hold the reply for long).
        self.provider.force_flush(5000)
        return "; ".join(done) if done else "Nothing to do for that request."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", default="", help="the document store: a directory")
    ap.add_argument("--log", default="", help="JSONL file of the tool calls and HTTP requests")
    args = ap.parse_args()
    app = App(args)
    for line in sys.stdin:
        req = json.loads(line)
        rid = req.get("id")
        try:
            tp = req.get("traceparent")
            reply = app.turn(req.get("prompt") or "", tp if isinstance(tp, str) else None)
            doc = {"id": rid, "reply": reply}
        except Exception as e:  # the caller's error outcome
            doc = {"id": rid, "error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
