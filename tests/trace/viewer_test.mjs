// The trace viewer in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core;
// no downloaded browser): a run whose data holds an <img onerror> payload is rendered by
// `quarry view`; the page shows every step, logs no console errors, and the payload stays text.
// Usage: node viewer_test.mjs QUARRY_BINARY SOURCE_DIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const [quarry, sourceDir] = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), 'quarry-viewer-'));
const payload = '<img src=x onerror="window.__pwned = 1; console.error(\'pwned\')">';
try {
  writeFileSync(join(dir, 'notes.csv'), `id,note\n1,"${payload.replaceAll('"', '""')}"\n2,plain\n`);
  const fixture = {
    source: 'scripted',
    question: 'What do the notes say?',
    data: ['notes.csv'],
    turns: [
      { content: 'Reading the notes.', tool_calls: [{ name: 'run_sql', arguments: { sql: 'SELECT id, note FROM notes ORDER BY id' } }],
        usage: { input_tokens: 300, output_tokens: 20 } },
      { content: '', tool_calls: [{ name: 'final_answer', arguments: { answer: 'There are 2 notes.', supporting_values: ['2'] } }],
        usage: { input_tokens: 400, output_tokens: 20 } },
    ],
  };
  writeFileSync(join(dir, 'fixture.json'), JSON.stringify(fixture));
  execFileSync(quarry, ['ask', '--replay', 'fixture.json', '--data', 'notes.csv', 'What do the notes say?'],
               { cwd: dir, stdio: 'pipe' });
  const html = execFileSync(quarry, ['view', 'latest'], { cwd: dir }).toString().trim();
  const trace = JSON.parse(readFileSync(join(dir, html.replace(/trace\.html$/, 'trace.json'))));
  assert.ok(!readFileSync(join(dir, html), 'utf8').includes('<img src=x'), 'payload written unescaped');

  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) problems.push('network: ' + r.url()); });
    await page.goto('file://' + join(dir, html));
    await page.waitForLoadState('load');
    assert.deepEqual(problems, [], 'console errors or network requests');
    assert.equal(await page.evaluate(() => window.__pwned), undefined, 'the payload ran');
    assert.equal(await page.locator('img').count(), 0, 'the payload became an element');
    const text = await page.locator('body').innerText();
    assert.ok(text.includes(payload), 'the payload is not shown as text');
    assert.ok(text.includes('There are 2 notes.'));
    for (const s of trace.steps) {
      assert.equal(await page.locator(`#step-${s.index}`).count(), 1, `step ${s.index} missing`);
    }
    assert.equal(trace.steps.length, 5);  // open_data, then two model turns and their tools
    assert.equal(trace.steps[0].tool, 'open_data');
    assert.ok(text.includes('grounded'));
    // The verify report names the step that grounded each value, as a link to it.
    assert.equal(trace.verify.checks[0].step, 3);
    assert.ok(await page.locator('table a[href="#step-3"]').count() >= 1, 'no link to the grounding step');
    assert.ok(text.includes('step 3 run_sql'), 'the verify report does not name the step');
    console.log(`viewer ok: ${trace.steps.length} steps shown, payload inert`);

    // The committed product page and example trace open from file:// with no network.
    for (const page_path of ['site/index.html', 'site/trace.html']) {
      const p = await browser.newPage();
      const issues = [];
      p.on('console', (m) => { if (m.type() === 'error') issues.push(m.text()); });
      p.on('pageerror', (e) => issues.push(String(e)));
      p.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) issues.push('network: ' + r.url()); });
      await p.goto('file://' + join(sourceDir, page_path));
      await p.waitForLoadState('load');
      assert.deepEqual(issues, [], page_path);
      const body = await p.locator('body').innerText();
      assert.ok(body.includes('North has the highest total revenue'), page_path);
    }
    const example = JSON.parse(readFileSync(join(sourceDir, 'runs/example/trace.json')));
    assert.equal(example.stop_reason, 'answered');
    assert.equal(example.verify.grounded, true);
    console.log('site pages ok');
  } finally {
    await browser.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
