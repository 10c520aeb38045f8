// `quarry mcp` driven by the official MCP TypeScript SDK client over stdio, as Claude Code and
// other clients drive it: connect, ping, list tools, run SQL (structuredContent checked against
// the declared outputSchema), tool errors, and ask_database answered by a stand-in model
// provider on 127.0.0.1. Usage: node sdk_client_test.mjs QUARRY_BINARY SOURCE_DIR
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { standInProvider } from '../support/stand_in_provider.mjs';

const [binaryArg, sourceDir] = process.argv.slice(2);
if (!binaryArg || !sourceDir) {
  console.error('usage: node sdk_client_test.mjs QUARRY_BINARY SOURCE_DIR');
  process.exit(2);
}
// Absolute: the server starts in a temporary working directory.
const binary = path.resolve(binaryArg);
const chinook = path.join(sourceDir, 'data', 'chinook.sqlite');

// The SDK depends on ajv; validate with it directly when it resolves, else check by hand.
const require = createRequire(import.meta.url);
let Ajv = null;
try {
  const mod = require('ajv');
  Ajv = mod.default ?? mod;
} catch {
  Ajv = null;
}

function validateAgainst(schema, value) {
  if (Ajv) {
    const ajv = new Ajv({ strict: false, allErrors: true });
    const validate = ajv.compile(schema);
    assert.ok(validate(value), `structuredContent does not fit outputSchema: ${ajv.errorsText(validate.errors)}`);
    return;
  }
  assert.equal(typeof value, 'object');
  assert.ok(Array.isArray(value.columns) && value.columns.every((c) => typeof c === 'string'));
  assert.ok(Array.isArray(value.rows));
  for (const row of value.rows) {
    assert.ok(Array.isArray(row) && row.every((c) => c === null || ['string', 'number', 'boolean'].includes(typeof c) ||
                                                 (typeof c === 'object' && typeof c.base64 === 'string')));
  }
  assert.ok(Number.isInteger(value.row_count) && value.row_count >= 0);
  assert.equal(typeof value.truncated, 'boolean');
}

function text(result) {
  return result.content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

// Starts `quarry mcp` in a fresh working directory with only `env` (plus the SDK's default
// PATH/HOME/...): no model settings leak in from the machine running the test.
async function connect(env = {}) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-mcp-sdk-'));
  const transport = new StdioClientTransport({
    command: binary,
    args: ['mcp', '--runs-dir', path.join(cwd, 'runs'), chinook],
    env,
    cwd,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'quarry-sdk-test', version: '1.0.0' });
  const errors = [];
  client.onerror = (e) => errors.push(e);  // e.g. a stdout line that is not JSON-RPC
  try {
    await client.connect(transport, { timeout: 20000 });
  } catch (e) {
    await client.close();
    fs.rmSync(cwd, { recursive: true, force: true });
    throw new Error(`cannot connect to ${binary}: ${e.message}\n${stderr}`);
  }
  return {
    client,
    cwd,
    runs: path.join(cwd, 'runs'),
    stderr: () => stderr,
    errors,
    async close() {
      const started = Date.now();
      await client.close();
      const ms = Date.now() - started;
      fs.rmSync(cwd, { recursive: true, force: true });
      return ms;
    },
  };
}

test('tools, SQL and tool errors through the SDK client', async () => {
  const s = await connect();
  try {
    assert.deepEqual(s.client.getServerVersion(), { name: 'quarry', version: '0.1.0' });
    assert.deepEqual(await s.client.ping(), {});

    const { tools } = await s.client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['describe_schema', 'run_sql', 'ask_database', 'remember_clarification', 'make_chart']);
    for (const tool of tools) {
      // Only remember_clarification writes: the glossary, on the user's word, never the data.
      assert.equal(tool.annotations?.readOnlyHint, tool.name !== 'remember_clarification', `${tool.name}'s readOnlyHint`);
      assert.equal(typeof tool.title, 'string', `${tool.name} has no title`);
      assert.equal(tool.inputSchema.type, 'object');
    }
    const runSql = tools.find((t) => t.name === 'run_sql');
    assert.ok(runSql.outputSchema, 'run_sql declares no outputSchema');

    // callTool itself checks structuredContent against the outputSchema; check it again here.
    const count = await s.client.callTool({ name: 'run_sql', arguments: { sql: 'SELECT count(*) AS n FROM Genre' } });
    assert.equal(count.isError, false, text(count));
    validateAgainst(runSql.outputSchema, count.structuredContent);
    assert.deepEqual(count.structuredContent, { columns: ['n'], types: ['INTEGER'], rows: [[25]], row_count: 1, truncated: false });
    assert.match(text(count), /25/);

    // Typed cells: a real with all its digits, a marked BLOB, NULL, a wide integer as a string.
    const typed = await s.client.callTool({ name: 'run_sql', arguments: {
      sql: "SELECT 0.1 + 0.2 AS s, x'00FF41' AS b, NULL AS z, 9007199254740993 AS big, 'x' AS t" } });
    assert.equal(typed.isError, false, text(typed));
    validateAgainst(runSql.outputSchema, typed.structuredContent);
    assert.deepEqual(typed.structuredContent.rows, [[0.30000000000000004, { base64: 'AP9B' }, null, '9007199254740993', 'x']]);
    assert.deepEqual(typed.structuredContent.types, ['REAL', 'BLOB', 'NULL', 'INTEGER', 'TEXT']);

    const many = await s.client.callTool({ name: 'run_sql', arguments: { sql: 'SELECT TrackId, Composer FROM Track' } });
    validateAgainst(runSql.outputSchema, many.structuredContent);
    assert.equal(many.structuredContent.row_count, 3503);
    assert.equal(many.structuredContent.rows.length, 200);
    assert.equal(many.structuredContent.truncated, true);

    const drop = await s.client.callTool({ name: 'run_sql', arguments: { sql: 'DROP TABLE Genre' } });
    assert.equal(drop.isError, true);
    assert.match(text(drop), /guard/);

    const bad = await s.client.callTool({ name: 'run_sql', arguments: {} });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /sql/);

    const schema = await s.client.callTool({ name: 'describe_schema', arguments: { table: 'Genre' } });
    assert.equal(schema.isError, false);
    assert.match(text(schema), /Genre/);

    const noModel = await s.client.callTool({ name: 'ask_database', arguments: { question: 'How many genres are there?' } });
    assert.equal(noModel.isError, true);
    assert.match(text(noModel), /QUARRY_MODEL/);

    assert.deepEqual(s.errors, [], `client errors: ${s.errors.join('; ')}`);
  } finally {
    const ms = await s.close();
    // The SDK closes stdin and waits up to 2 s before SIGTERM: the server left on EOF.
    assert.ok(ms < 1900, `the server took ${ms} ms to exit after EOF`);
    assert.match(s.stderr(), /end of input/, s.stderr());
  }
});

test('ask_database answered through a stand-in provider', async () => {
  const provider = await standInProvider([
    { name: 'run_sql', arguments: { sql: 'SELECT count(*) AS n FROM Genre' } },
    { name: 'final_answer', arguments: { answer: 'There are 25 genres.', supporting_values: ['25'] } },
  ]);
  let s;
  try {
    s = await connect({
      QUARRY_BASE_URL: provider.baseUrl,
      QUARRY_MODEL: 'stand-in',
      QUARRY_API_KEY: 'not-a-real-key',
    });
    const result = await s.client.callTool({
      name: 'ask_database',
      arguments: { question: 'How many genres are there?', thread: 'sdk' },
    });
    const body = text(result);
    assert.equal(result.isError, false, body + '\n' + s.stderr());
    assert.match(body, /^There are 25 genres\./);
    assert.match(body, /SELECT count\(\*\) AS n FROM Genre/);
    const trace = body.match(/^trace: (.+)$/m);
    assert.ok(trace, `no trace path in: ${body}`);
    assert.ok(fs.existsSync(trace[1]), `${trace[1]} does not exist`);
    assert.ok(trace[1].startsWith(s.runs), `${trace[1]} is not under ${s.runs}`);
    const doc = JSON.parse(fs.readFileSync(trace[1], 'utf8'));
    assert.equal(doc.stop_reason, 'answered');
    assert.equal(typeof doc.answer === 'string' ? doc.answer : doc.answer?.text, 'There are 25 genres.');
    assert.equal(provider.requests.length, 2);
    assert.equal(provider.requests[0].path, '/v1/chat/completions');
    assert.deepEqual(s.errors, []);
  } finally {
    await s?.close();
    await provider.close();
  }
});
