#!/usr/bin/env node
// otel-plain (Node.js): a tool-using application instrumented with nothing but the
// OpenTelemetry JS SDK (@opentelemetry/sdk-trace-node) and its OTLP/HTTP exporter
// (@opentelemetry/exporter-trace-otlp-http, which sends the JSON encoding), driven by
// gauntlet's `http` target.
//
//   node app.cjs [--port N] [--docs DIR] [--log PATH]
//     prints its URL (http://127.0.0.1:PORT) on the first stdout line, then serves
//     POST /v1/chat {"message": "..."}  (header traceparent: continued)
//       -> {"reply": "...", "trace_id": "32 hex", "tool_calls": ["fetch_url", …]}
//
// Its planner is a fixed set of rules (no model), the same as the Python one's:
//   every http(s) URL in the message -> fetch_url(url): a real HTTP GET
//   "document NAME"                  -> read_document(name) from --docs
//   every e-mail address             -> send_email(to, subject, body): a honeypot; the
//                                       body is the message's first 'quoted text'
//
// Spans, written by hand with the SDK's tracer (GenAI semantic conventions):
//   invoke_agent otel-plain-node   gen_ai.operation.name = invoke_agent
//     execute_tool <name>          gen_ai.operation.name = execute_tool, gen_ai.tool.name,
//                                  gen_ai.tool.call.id, gen_ai.tool.call.arguments (JSON),
//                                  gen_ai.tool.call.result
//       GET                        kind CLIENT: http.request.method, url.full,
//                                  server.address, server.port, http.response.status_code
//
// The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
// --log PATH keeps the application's own record: one JSON line per tool call
// ({"event": "tool_call", "trace_id", "tool", "arguments", "result"}) and per HTTP request
// ({"event": "http_request", "trace_id", "method", "url"}).
//
// Install its pinned packages with scripts/install-otel-plain.sh and run it with
// NODE_PATH=<dir>/node/node_modules (the script prints <dir>).
'use strict';

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

// --- the lines an application adds to export its traces -------------------------------
const { context, propagation, trace, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
const { resourceFromAttributes } = require('@opentelemetry/resources');

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'otel-plain-node' }),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
provider.register(); // the async context manager and the W3C trace-context propagator
// ----------------------------------------------------------------------------------------

const tracer = trace.getTracer('otel-plain-node');
const MAX_PAGE = 4096;
const MAX_RESULT = 1024;

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const PORT = Number(arg('--port', '0'));
const DOCS = arg('--docs', '') ? path.resolve(arg('--docs', '')) : '';
const LOG = arg('--log', '');

function log(doc) {
  if (!LOG) return;
  const sorted = {};
  for (const k of Object.keys(doc).sort()) sorted[k] = doc[k];
  fs.appendFileSync(LOG, JSON.stringify(sorted) + '\n');
}

function sortKeys(o) {
  const out = {};
  for (const k of Object.keys(o).sort()) out[k] = o[k];
  return out;
}

/** The tool calls a message asks for, in the order of the rules. */
function plan(message) {
  const steps = [];
  for (const m of message.matchAll(/https?:\/\/[^\s'"<>]+/g)) {
    steps.push(['fetch_url', { url: m[0].replace(/[.,;)]+$/, '') }]);
  }
  for (const m of message.matchAll(/\bdocument\s+([\w.-]+)/g)) {
    steps.push(['read_document', { name: m[1].replace(/[.,;]+$/, '') }]);
  }
  const quoted = message.match(/'([^']*)'/);
  const body = quoted ? quoted[1] : message;
  for (const m of message.matchAll(/\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g)) {
    steps.push(['send_email', { to: m[0], subject: 'as requested', body }]);
  }
  return steps;
}

function get(url, traceId) {
  return tracer.startActiveSpan('GET', { kind: SpanKind.CLIENT }, (span) => {
    const u = new URL(url);
    span.setAttribute('http.request.method', 'GET');
    span.setAttribute('url.full', url);
    span.setAttribute('server.address', u.hostname);
    if (u.port) span.setAttribute('server.port', Number(u.port));
    log({ event: 'http_request', trace_id: traceId, method: 'GET', url });
    const headers = { 'user-agent': 'otel-plain-node/1' };
    propagation.inject(context.active(), headers);
    return new Promise((resolve) => {
      const done = (text, error) => {
        if (error) {
          span.setAttribute('error.type', error);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
        resolve(text);
      };
      const req = http.get(url, { headers, timeout: 10000 }, (res) => {
        span.setAttribute('http.response.status_code', res.statusCode);
        const chunks = [];
        let n = 0;
        res.on('data', (c) => {
          if (n < MAX_PAGE) chunks.push(c);
          n += c.length;
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).subarray(0, MAX_PAGE).toString('utf8');
          if (res.statusCode >= 400) done(`fetch failed: HTTP ${res.statusCode}`, String(res.statusCode));
          else done(text);
        });
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e) => done(`fetch failed: ${e.message}`, e.code || 'Error'));
    });
  });
}

function readDocument(name) {
  if (!DOCS) return 'no document store is configured';
  const p = path.resolve(DOCS, name);
  if (!p.startsWith(DOCS + path.sep) || !fs.existsSync(p) || !fs.statSync(p).isFile()) {
    return `no such document: ${name}`;
  }
  return fs.readFileSync(p, 'utf8').slice(0, MAX_PAGE);
}

let calls = 0;

async function runTool(name, args, traceId) {
  calls += 1;
  return tracer.startActiveSpan(`execute_tool ${name}`, async (span) => {
    span.setAttribute('gen_ai.operation.name', 'execute_tool');
    span.setAttribute('gen_ai.tool.name', name);
    span.setAttribute('gen_ai.tool.call.id', `call_${calls}`);
    span.setAttribute('gen_ai.tool.call.arguments', JSON.stringify(sortKeys(args)));
    let result;
    if (name === 'fetch_url') result = await get(args.url, traceId);
    else if (name === 'read_document') result = readDocument(args.name);
    else result = `sent to ${args.to}`; // a honeypot: nothing is sent
    result = result.slice(0, MAX_RESULT);
    span.setAttribute('gen_ai.tool.call.result', result);
    span.end();
    log({ event: 'tool_call', trace_id: traceId, tool: name, arguments: args, result });
    return result;
  });
}

async function turn(message, headers) {
  const ctx = propagation.extract(context.active(), headers);
  const parent = trace.getSpanContext(ctx);
  const traceId = parent ? parent.traceId : '';
  const tools = [];
  const done = await context.with(ctx, () =>
    tracer.startActiveSpan('invoke_agent otel-plain-node', async (span) => {
      span.setAttribute('gen_ai.operation.name', 'invoke_agent');
      span.setAttribute('gen_ai.agent.name', 'otel-plain-node');
      const out = [];
      for (const [name, args] of plan(message)) {
        tools.push(name);
        const r = await runTool(name, args, traceId);
        out.push(`${name} -> ${r.slice(0, 80)}`);
      }
      span.end();
      return out;
    }),
  );
  // Export this request's spans before answering.
  await provider.forceFlush();
  return {
    reply: done.length ? done.join('; ') : 'Nothing to do for that request.',
    trace_id: traceId,
    tool_calls: tools,
  };
}

function send(res, code, doc) {
  const body = JSON.stringify(doc);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/v1/chat') return send(res, 404, { error: 'no such route' });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    let message;
    try {
      message = JSON.parse(Buffer.concat(chunks).toString('utf8')).message;
      if (typeof message !== 'string') throw new Error('message must be a string');
    } catch (e) {
      return send(res, 400, { error: `bad request: ${e.message}` });
    }
    try {
      send(res, 200, await turn(message, req.headers));
    } catch (e) {
      send(res, 500, { error: `failed: ${e.message}` });
    }
  });
});
server.listen(PORT, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}\n`);
});
