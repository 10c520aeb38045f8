// quarry's MCP tools at `quarry serve`'s /mcp, driven by the official MCP TypeScript SDK's
// Streamable HTTP client: connect with the token, list and call tools, end the session; and the
// transport's rules checked with raw requests (no token, a foreign Origin, no or an unknown
// session, an unsupported protocol revision). Usage: node mcp_http_test.mjs QUARRY_BINARY SOURCE_DIR
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [binaryArg, sourceDir] = process.argv.slice(2);
const binary = binaryArg && path.resolve(binaryArg);
if (!binary || !sourceDir) {
  console.error('usage: node mcp_http_test.mjs QUARRY_BINARY SOURCE_DIR');
  process.exit(2);
}

let server;
let base;
let token;
let stderr = '';
const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-serve-mcp-'));

before(async () => {
  // No model settings from the machine running the test.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('QUARRY_')));
  server = spawn(binary, ['serve', '--data', path.join(sourceDir, 'data', 'chinook.sqlite'),
                          '--port', '0', '--runs-dir', path.join(cwd, 'runs')],
                 { cwd, env: { ...env, HOME: cwd }, stdio: ['ignore', 'pipe', 'pipe'] });
  server.stderr.on('data', (chunk) => { stderr += chunk; });
  const line = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL from quarry serve:\n${stderr}`)), 30000);
    server.once('error', (e) => { clearTimeout(timer); reject(e); });
    readline.createInterface({ input: server.stdout }).once('line', (l) => {
      clearTimeout(timer);
      resolve(l);
    });
  });
  const url = new URL(line);
  token = url.searchParams.get('token');
  base = url.origin;
  assert.match(token, /^[0-9a-f]{64}$/);
});

after(() => {
  server?.kill('SIGINT');
  fs.rmSync(cwd, { recursive: true, force: true });
});

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'quarry-http-test', version: '1.0.0' });
  await client.connect(transport, { timeout: 20000 });
  return { client, transport };
}

function text(result) {
  return result.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

test('the SDK client lists and calls the tools over Streamable HTTP', async () => {
  const { client, transport } = await connect();
  try {
    assert.ok(transport.sessionId, 'initialize gave a session id');
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
    assert.equal(client.getServerVersion().name, 'quarry');
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['ask_database', 'describe_schema', 'make_chart', 'remember_clarification', 'run_sql']);
    await client.ping();

    const result = await client.callTool({
      name: 'run_sql',
      arguments: { sql: 'SELECT count(*) AS n FROM Track' },
    });
    assert.equal(result.isError, false);
    assert.deepEqual(result.structuredContent.columns, ['n']);
    assert.deepEqual(result.structuredContent.rows, [[3503]]);
    assert.equal(result.structuredContent.row_count, 1);

    const refused = await client.callTool({
      name: 'run_sql',
      arguments: { sql: "SELECT * FROM Track; DELETE FROM Track" },
    });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /one statement|single/i);

    const schema = await client.callTool({ name: 'describe_schema', arguments: {} });
    assert.match(text(schema), /Invoice/);

    // The session ends with DELETE; the id is then unknown.
    const id = transport.sessionId;
    await transport.terminateSession();
    const after = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json',
                 Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': id },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }),
    });
    assert.equal(after.status, 404);
  } finally {
    await client.close();
  }
});

test('the transport refuses what the spec says to refuse', async () => {
  const post = (headers, body) => fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize',
                 params: { protocolVersion: '2025-11-25', capabilities: {},
                           clientInfo: { name: 'raw', version: '1' } } };
  const auth = { Authorization: `Bearer ${token}` };

  assert.equal((await post({}, init)).status, 401);
  assert.equal((await post({ Authorization: `Bearer ${'0'.repeat(64)}` }, init)).status, 401);
  // A page on another site cannot reach the tools (DNS rebinding and CSRF alike).
  assert.equal((await post({ ...auth, Origin: 'http://evil.example' }, init)).status, 403);
  assert.equal((await post({ ...auth, 'MCP-Protocol-Version': '1999-01-01' }, init)).status, 400);
  // A message outside a session.
  const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
  assert.equal((await post(auth, ping)).status, 400);
  assert.equal((await post({ ...auth, 'Mcp-Session-Id': 'f'.repeat(32) }, ping)).status, 404);

  const started = await post(auth, init);
  assert.equal(started.status, 200);
  const session = started.headers.get('mcp-session-id');
  assert.match(session, /^[0-9a-f]{32}$/);
  const body = await started.json();
  assert.equal(body.result.protocolVersion, '2025-11-25');
  // A notification is accepted without a body.
  const note = await post({ ...auth, 'Mcp-Session-Id': session },
                          { jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(note.status, 202);
  assert.equal(await note.text(), '');
  const pong = await post({ ...auth, 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' }, ping);
  assert.equal(pong.status, 200);
  assert.deepEqual((await pong.json()).result, {});
  // No server-to-client stream is offered, and no CORS header is ever sent.
  const get = await fetch(`${base}/mcp`, { headers: { ...auth, Accept: 'text/event-stream' } });
  assert.equal(get.status, 405);
  for (const r of [started, note, pong, get]) {
    for (const [name] of r.headers) assert.ok(!name.startsWith('access-control-'), name);
  }
});
