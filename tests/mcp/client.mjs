#!/usr/bin/env node
// A generic MCP client driver built with the official TypeScript SDK (Client),
// for org-agent's MCP server tests.  Prints ONE JSON object on stdout per run.
//
//   client.mjs [--timeout SECONDS] http URL TOKEN COMMAND...   (TOKEN "-": no Authorization)
//   client.mjs [--timeout SECONDS] stdio -- CMD ARG... -- COMMAND...
//   client.mjs [--timeout SECONDS] raw URL TOKEN               (hostile requests, plain fetch)
//
// COMMAND:
//   info                        {"serverInfo","protocolVersion","capabilities","instructions"}
//   list                        {"tools":[{"name","description","inputSchema"}...]}
//   call TOOL JSONARGS          {"result": CallToolResult}
//   resources                   {"resources":[...],"resourceTemplates":[...]}
//   read URI                    {"result": ReadResourceResult}
//   prompts                     {"prompts":[...]}
//   prompt NAME JSONARGS        {"result": GetPromptResult}
//   timing TOOL JSONARGS N      {"ms":[...],"median":M}  (N calls, round-trip latency)
// Any failure of the peer (connection refused, HTTP 401, timeout, JSON-RPC
// error, server died) prints {"error": "message", "code": N|null, "kind": "..."}
// and still exits 0.  Errors the transport reported on the side (e.g. a line
// that is not JSON) are added as "transport_errors": [...].  Exit 2: bad usage; other non-zero: the driver broke.
// Each request times out after --timeout seconds (default: $MCP_CLIENT_TIMEOUT,
// else 30; for raw, each check, default 20).
// The stdio CMD inherits this process's environment (e.g. MCP_TEST_HOSTILE).
import { require } from './peers.mjs';

const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const USAGE = `usage:
  client.mjs [--timeout SECONDS] http URL TOKEN COMMAND...
  client.mjs [--timeout SECONDS] stdio -- CMD ARG... -- COMMAND...
  client.mjs [--timeout SECONDS] raw URL TOKEN
COMMAND: info | list | call TOOL JSONARGS | resources | read URI | prompts
         | prompt NAME JSONARGS | timing TOOL JSONARGS N
`;

function usage(msg) {
  process.stderr.write((msg ? `client.mjs: ${msg}\n` : '') + USAGE);
  process.exit(2);
}

// Print the one JSON object, then exit once stdout has taken it.
function emit(obj, code = 0) {
  process.stdout.write(JSON.stringify(obj) + '\n', () => process.exit(code));
}

function errorObject(e) {
  const code = e && (typeof e.code === 'number' || typeof e.code === 'string') ? e.code : null;
  let message = e && e.message ? e.message : String(e);
  if (e && e.cause) message += `: ${e.cause.code || e.cause.message || e.cause}`;
  const out = { error: message, code, kind: e && e.constructor ? e.constructor.name : typeof e };
  if (e && e.data !== undefined) out.data = e.data;
  return out;
}

function parseJson(s, what) {
  try { return JSON.parse(s); } catch (e) { usage(`${what} is not JSON: ${e.message}`); }
}

let args = process.argv.slice(2);
let timeoutSec = process.env.MCP_CLIENT_TIMEOUT ? Number(process.env.MCP_CLIENT_TIMEOUT) : null;
if (args[0] === '--timeout') {
  timeoutSec = Number(args[1]);
  args = args.slice(2);
}
const mode = args.shift();
// raw: 20 s per check unless told; the others: 30 s per request unless told.
if (timeoutSec === null) timeoutSec = mode === 'raw' ? 20 : 30;
if (!(timeoutSec > 0)) usage('the timeout must be a positive number of seconds');
const timeout = Math.round(timeoutSec * 1000);

let transport;
let command;
let url;
let token;

if (mode === 'http' || mode === 'raw') {
  if (args.length < 2) usage();
  [url, token] = args.splice(0, 2);
  try { new URL(url); } catch { usage(`not a URL: ${url}`); }
  command = args;
} else if (mode === 'stdio') {
  if (args[0] !== '--') usage('stdio wants: stdio -- CMD ARG... -- COMMAND...');
  const end = args.lastIndexOf('--');
  if (end < 2) usage('stdio wants: stdio -- CMD ARG... -- COMMAND...');
  const [cmd, ...cmdArgs] = args.slice(1, end);
  command = args.slice(end + 1);
  transport = new StdioClientTransport({ command: cmd, args: cmdArgs, env: { ...process.env }, stderr: 'inherit' });
} else {
  usage();
}

// The driver must never hang its caller: a watchdog above the per-request timeouts.
function watchdog(ms) {
  setTimeout(() => {
    process.stderr.write(`client.mjs: watchdog fired after ${ms} ms\n`);
    emit({ error: `client.mjs watchdog: no answer within ${ms} ms`, code: null, kind: 'Watchdog' }, 1);
  }, ms).unref();
}

if (mode === 'raw') {
  watchdog(9 * (timeout + 1000) + 15000);
  emit(await rawChecks(url, token, timeout));
} else {
  await runClient();
}

async function runClient() {
  const [verb, ...rest] = command;
  if (!verb) usage('no COMMAND');
  const need = { info: 0, list: 0, call: 2, resources: 0, read: 1, prompts: 0, prompt: 2, timing: 3 };
  if (!(verb in need)) usage(`unknown COMMAND ${verb}`);
  if (rest.length !== need[verb]) usage(`${verb} takes ${need[verb]} argument(s)`);
  const calls = verb === 'timing' ? Number(rest[2]) : 1;
  if (verb === 'timing' && !(Number.isInteger(calls) && calls > 0)) usage('timing wants N > 0');
  watchdog(timeout * (calls + 3) + 10000);

  if (mode === 'http') {
    const headers = token === '-' ? {} : { Authorization: `Bearer ${token}` };
    transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  }
  const client = new Client({ name: 'org-agent-test-client', version: '1.0.0' }, { capabilities: {} });
  // Lines the transport could not parse (garbage from the server) end up here.
  const transportErrors = [];
  client.onerror = (e) => transportErrors.push(errorObject(e).error);
  // The Client keeps the negotiated protocol version to itself; catch it on its way to the transport.
  let negotiated = null;
  const setVersion = transport.setProtocolVersion ? transport.setProtocolVersion.bind(transport) : null;
  transport.setProtocolVersion = (v) => { negotiated = v; if (setVersion) setVersion(v); };
  const opts = { timeout };
  let out;
  try {
    await client.connect(transport, opts);
    out = await runVerb(client, verb, rest, opts, () => negotiated);
  } catch (e) {
    out = errorObject(e);
  }
  if (transportErrors.length) out.transport_errors = transportErrors.slice(0, 20);
  await closeQuietly(client);
  emit(out);
}

async function runVerb(client, verb, rest, opts, negotiated) {
  switch (verb) {
    case 'info':
      return {
        serverInfo: client.getServerVersion(),
        protocolVersion: negotiated(),
        capabilities: client.getServerCapabilities(),
        instructions: client.getInstructions() ?? null,
      };
    case 'list': {
      const tools = [];
      let cursor;
      do {
        const r = await client.listTools(cursor ? { cursor } : {}, opts);
        for (const t of r.tools) tools.push({ name: t.name, description: t.description, inputSchema: t.inputSchema });
        cursor = r.nextCursor;
      } while (cursor);
      return { tools };
    }
    case 'call':
      return { result: await client.callTool({ name: rest[0], arguments: parseJson(rest[1], 'JSONARGS') }, undefined, opts) };
    case 'resources': {
      const caps = client.getServerCapabilities() || {};
      if (!caps.resources) return { resources: [], resourceTemplates: [] };
      const r = await client.listResources({}, opts);
      let templates = [];
      try { templates = (await client.listResourceTemplates({}, opts)).resourceTemplates; } catch { /* optional */ }
      return { resources: r.resources, resourceTemplates: templates };
    }
    case 'read':
      return { result: await client.readResource({ uri: rest[0] }, opts) };
    case 'prompts':
      return { prompts: (await client.listPrompts({}, opts)).prompts };
    case 'prompt':
      return { result: await client.getPrompt({ name: rest[0], arguments: parseJson(rest[1], 'JSONARGS') }, opts) };
    case 'timing': {
      const params = { name: rest[0], arguments: parseJson(rest[1], 'JSONARGS') };
      const ms = [];
      for (let i = 0; i < Number(rest[2]); i++) {
        const t0 = performance.now();
        const r = await client.callTool(params, undefined, opts);
        ms.push(Math.round((performance.now() - t0) * 1000) / 1000);
        if (r.isError) return { error: `call ${i} returned isError`, code: null, kind: 'ToolError', result: r, ms };
      }
      const sorted = [...ms].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
      return { ms, median };
    }
  }
}

async function closeQuietly(client) {
  const cap = (p) => Promise.race([p.catch(() => {}), new Promise((r) => setTimeout(r, 5000).unref())]);
  if (mode === 'http' && transport.sessionId) await cap(transport.terminateSession());
  await cap(client.close());
}

// ---- raw: requests a well-behaved client never makes ----------------------

async function rawChecks(url, token, RAW_TIMEOUT) {
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const auth = token === '-' ? {} : { authorization: `Bearer ${token}` };
  let session = null;
  const withSession = (h) => (session ? { ...h, 'mcp-session-id': session } : h);
  const checks = [];

  async function check(name, body, headers, method = 'POST') {
    const out = { name, status: null, error: null, body: '' };
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new Error(`timeout after ${RAW_TIMEOUT / 1000} s`)), RAW_TIMEOUT);
    const t0 = performance.now();
    let res;
    try {
      res = await fetch(url, { method, headers, body, signal: ac.signal });
      out.status = res.status;
      out.content_type = res.headers.get('content-type');
      // Read at most ~300 characters: an SSE answer may stay open.
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let text = '';
      try {
        while (text.length < 300) {
          const { done, value } = await reader.read();
          if (done) break;
          text += dec.decode(value, { stream: true });
        }
      } catch (e) {
        out.error = `reading body: ${errorObject(ac.signal.reason || e).error}`;
      }
      reader.cancel().catch(() => {});
      out.body = text.slice(0, 300);
    } catch (e) {
      out.error = errorObject(ac.signal.aborted ? ac.signal.reason : e).error;
    } finally {
      clearTimeout(timer);
      out.ms = Math.round(performance.now() - t0);
    }
    checks.push(out);
    return res;
  }

  const rpc = (id, method, params) => JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });

  // A proper initialize first, so the hostile requests reach a live session.
  const init = await check('initialize', rpc(0, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'org-agent-raw-checks', version: '1.0.0' },
  }), { ...base, ...auth });
  session = init && init.headers.get('mcp-session-id');
  await check('initialized', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    withSession({ ...base, ...auth }));

  await check('not-json', 'this is not json {{{', withSession({ ...base, ...auth }));
  await check('bad-method-shape', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 42, params: 'x' }),
    withSession({ ...base, ...auth }));
  await check('bad-params', rpc(2, 'tools/call', { name: 123, arguments: 'nope' }), withSession({ ...base, ...auth }));
  await check('no-token', rpc(3, 'tools/list'), withSession(base));
  await check('wrong-token', rpc(4, 'tools/list'),
    withSession({ ...base, authorization: `Bearer wrong-${Math.random().toString(36).slice(2)}` }));
  const huge = 64 * 1024 * 1024;
  await check('oversized-64MB',
    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"' +
      'a'.repeat(huge) + '"}}}',
    withSession({ ...base, ...auth }));
  await check('batch-1000',
    JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({ jsonrpc: '2.0', id: 100 + i, method: 'ping' }))),
    withSession({ ...base, ...auth }));

  if (session) {
    // Leave no session behind; not a check.
    await fetch(url, { method: 'DELETE', headers: withSession({ ...auth }), signal: AbortSignal.timeout(5000) })
      .catch(() => {});
  }
  return { session, checks };
}
