// A stand-in for an OpenAI-compatible model provider on 127.0.0.1, for tests that run quarry
// against scripted model turns (tools really execute on the data; only the model is scripted).
// It answers POST /v1/chat/completions from a queue of turns and records every request body.
//
//   const provider = await standInProvider([
//     { name: 'run_sql', arguments: { sql: 'SELECT 1' } },              // one tool call
//     { tool_calls: [{ name, arguments }, ...], content: 'text' },       // several, with text
//     { content: 'plain text, no tool call' },                           // finish_reason "stop"
//     { delayMs: 20000, name: 'final_answer', arguments: {...} },        // replies late
//     (request) => ({ name: ..., arguments: ... }),                      // built from the request
//   ]);
//   provider.baseUrl      // http://127.0.0.1:PORT/v1
//   provider.requests     // [{path, body}] in order
//   provider.script(...)  // replaces the queue (e.g. per test case on one shared provider)
//   provider.pending()    // replies being delayed right now
//   await provider.close()
//
// A delayed reply ends early, without a body, when the client goes away (quarry stopped the run)
// or when the provider closes, so no test waits out a delay it no longer needs.
import http from 'node:http';

function completion(turn, n) {
  const calls = turn.tool_calls ?? (turn.name ? [{ name: turn.name, arguments: turn.arguments ?? {} }] : []);
  const message = { role: 'assistant', content: turn.content ?? null };
  if (calls.length) {
    message.tool_calls = calls.map((c, i) => ({
      id: `call_${n}_${i}`,
      type: 'function',
      function: {
        name: c.name,
        arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}),
      },
    }));
  }
  return {
    id: `chatcmpl-${n}`,
    object: 'chat.completion',
    created: 1700000000,
    model: 'stand-in',
    choices: [{ index: 0, message, finish_reason: calls.length ? 'tool_calls' : 'stop' }],
    usage: turn.usage ?? { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
  };
}

export async function standInProvider(turns = []) {
  let queue = [...turns];
  const requests = [];
  const delayed = new Set();  // {timer, res} of replies waiting out their delay
  let closed = false;

  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      let parsed = {};
      try { parsed = JSON.parse(body || '{}'); } catch { parsed = { unparsed: body }; }
      const request = { path: req.url, body: parsed };
      requests.push(request);
      let turn = queue.shift();
      if (typeof turn === 'function') turn = turn(request);
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions' || !turn || closed) {
        res.writeHead(400, { 'content-type': 'application/json', connection: 'close' });
        res.end(JSON.stringify({ error: { message: 'stand-in: no scripted response left' } }));
        return;
      }
      const n = requests.length;
      const send = () => {
        if (res.destroyed || res.writableEnded) return;
        res.writeHead(turn.status ?? 200, { 'content-type': 'application/json', connection: 'close' });
        res.end(JSON.stringify(turn.status && turn.status !== 200
          ? { error: { message: turn.error ?? 'stand-in: scripted error' } }
          : completion(turn, n)));
      };
      if (!turn.delayMs) return send();
      const entry = { res };
      entry.timer = setTimeout(() => { delayed.delete(entry); send(); }, turn.delayMs);
      delayed.add(entry);
      // The client gave up (a stopped run closes its connection): stop waiting for it.
      res.on('close', () => {
        clearTimeout(entry.timer);
        delayed.delete(entry);
      });
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    requests,
    script(...next) { queue = next.flat(); },
    remaining: () => queue.length,
    pending: () => delayed.size,
    close() {
      closed = true;
      for (const entry of delayed) {
        clearTimeout(entry.timer);
        entry.res.destroy();
      }
      delayed.clear();
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      });
    },
  };
}
