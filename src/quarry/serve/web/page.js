// quarry serve: the browser side of the local web app, in three scripts run in order: page.js
// (this: constants, shared state, the DOM helpers, the API call, formatting), outcome.js (a run's
// outcome and the result view) and app.js (threads, the live run, steps, wiring). The page talks
// only to the JSON API and the run event streams of the same origin, and puts every string it
// gets into the page as text (createElement + textContent), never as markup: cells, names and
// model text are data.
(() => {
  "use strict";

  const PAGE_ROWS = 50;
  const SQL_MAX_ROWS = 10000;
  const PREVIEW_ROWS = 8;  // rows of a run_sql step's preview in the step list
  const MODEL_TEXT_CHARS = 280;
  const STREAM_RETRIES = 5;

  const state = {
    thread: null,  // the thread follow-ups go to; null starts a new one
    run: null,     // {id, source, done, retries, stopping} while a run streams
    result: null,  // the result view's table, see showResult in outcome.js
  };

  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;

  // ---- DOM helpers: the only way nodes are made, so text never becomes markup ----

  // el("p", {class: "x", dataset: {step: 3}, onclick: f}, "text", childNode): attributes are
  // set with setAttribute, children appended as nodes or as text.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  const button = (text, attrs, onclick) =>
    el("button", { type: "button", ...attrs, onclick }, text);
  const clear = (node) => node.replaceChildren();
  const focusIn = (root, sel) => { const n = root.querySelector(sel); if (n) n.focus(); };

  // ---- API ----

  // Every state-changing call sends a JSON body with its Content-Type, even an empty one, so
  // the server can refuse anything a plain cross-site form could send.
  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body === undefined ? {} : body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      throw new Error(`cannot reach the quarry server (${e.message})`);
    }
    let data = null;
    try { data = await res.json(); } catch (_) { /* an empty or non-JSON body */ }
    if (!res.ok) {
      let msg = data && typeof data.error === "string" ? data.error
        : `${method} ${path}: HTTP ${res.status}`;
      if (res.status === 503 || res.status === 429) msg += " — try again in a moment.";
      const err = new Error(msg);
      err.status = res.status;
      throw err;
    }
    return data || {};
  }

  function showError(err) {
    $("error-text").textContent = err && err.message ? err.message : String(err);
    $("error").hidden = false;
  }
  const hideError = () => { $("error").hidden = true; };
  const parseJson = (text) => { try { return JSON.parse(text); } catch (_) { return null; } };

  // ---- formatting ----

  const num = (n) => (typeof n === "number" && isFinite(n) ? n : 0);
  const firstLine = (s) => String(s || "").split("\n", 1)[0];
  // The first paragraph of a failed tool's observation. quarry wraps its messages at a fixed
  // width, so a line break inside a sentence becomes a space; a list item ("- x: why") keeps its
  // own line.
  const firstParagraph = (s) => String(s || "").split(/\n[ \t]*\n/, 1)[0].trim()
    .replace(/[ \t]*\n[ \t]*(?![-*] )/g, " ");
  const truncate = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const basename = (p) => String(p).split(/[\\/]/).pop();
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

  function cellText(cell) {
    if (cell === null || cell === undefined) return "NULL";
    if (typeof cell === "object" && typeof cell.base64 === "string") {
      return `<blob ${(cell.base64.length * 3) >> 2} bytes>`;
    }
    return typeof cell === "object" ? JSON.stringify(cell) : String(cell);
  }

  function cellNode(cell) {
    const td = el("td", {}, cellText(cell));
    if (cell === null || cell === undefined) td.className = "null";
    else if (typeof cell === "number") td.className = "num";
    return td;
  }

  // Columns come as [{name, type}] from /api/sql, and as names plus a "types" list in a
  // run_sql step's detail.
  function columnsOf(detail) {
    const cols = Array.isArray(detail.columns) ? detail.columns : [];
    const types = Array.isArray(detail.types) ? detail.types : [];
    return cols.map((c, i) => (c && typeof c === "object")
      ? { name: String(c.name), type: String(c.type || "") }
      : { name: String(c), type: String(types[i] || "") });
  }

  function smallTable(columns, rows) {
    const head = el("tr", {}, ...columns.map((c) => el("th", { scope: "col" }, c.name)));
    const body = rows.map((r) => el("tr", {}, ...r.map(cellNode)));
    return el("div", { class: "table-wrap" },
      el("table", { class: "grid small" }, el("thead", {}, head), el("tbody", {}, ...body)));
  }

  // The brief's names (steps, duration_ms) or the trace's (model_turns, wall_ms).
  const totalsText = (t) => [
    `steps ${num(t.steps ?? t.model_turns)}`,
    `tool calls ${num(t.tool_calls)}`,
    `tokens ${num(t.input_tokens)}+${num(t.output_tokens)}`,
    `cost $${num(t.cost_usd).toFixed(4)}`,
    `${num(t.duration_ms ?? t.wall_ms)} ms`,
  ].join(" · ");

  // What happened, in words: the server's heading for the stop (trace::StopHeading), never a
  // vocabulary of the page's own.
  const stopHeading = (o) => (o && o.heading) || `No answer: ${(o && (o.stop_reason || o.status)) || "unknown"}`;

  // What outcome.js and app.js use; state is shared by reference and changed in place.
  window.quarryPage = Object.freeze({
    PAGE_ROWS, SQL_MAX_ROWS, PREVIEW_ROWS, MODEL_TEXT_CHARS, STREAM_RETRIES, state,
    $, enc, el, button, clear, focusIn, api, showError, hideError, parseJson,
    num, firstLine, firstParagraph, truncate, basename, plural,
    cellText, cellNode, columnsOf, smallTable, totalsText, stopHeading,
  });
})();
