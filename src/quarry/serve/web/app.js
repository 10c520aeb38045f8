// quarry serve: the browser side of the local web app. It talks only to the JSON API and the
// run event streams of the same origin, and puts every string it gets into the page as text
// (createElement + textContent), never as markup: cells, names and model text are data.
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
    result: null,  // the result view's table, see showResult
  };

  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
  let uid = 0;

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
      throw new Error(msg);
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

  // What happened, in words, for each stop that is not an answer. The trace's budget reasons
  // end in "_exhausted"; both spellings are accepted.
  const STOP_HEADINGS = {
    declined: "Declined — not an answer",
    final_answer_ungrounded: "Refused: the numbers were not found in any result",
    step_budget: "Stopped: step budget reached",
    cost_budget: "Stopped: cost budget reached",
    tool_call_budget: "Stopped: too many tool calls in one turn",
    repair_budget: "Stopped: the errors could not be repaired within the repair budget",
    interrupted: "Stopped by you",
    model_error: "Stopped: the model could not be reached or failed",
    execution_failed: "Stopped: a query failed",
    no_tool_call: "No answer: the model replied without using a tool",
    incomplete: "Incomplete: the run ended without an outcome",
    clarification_needed: "Waiting for your reply",
    running: "Still running",
  };
  const stopHeading = (reason) =>
    STOP_HEADINGS[String(reason).replace(/_exhausted$/, "")] || `No answer: ${reason}`;

  // ---- header and schema ----

  async function loadInfo() {
    const info = await api("GET", "/api/info");
    $("version").textContent = info.version ? `v${info.version}` : "";
    const list = el("ul", { class: "source-list" }, ...(info.sources || []).map((s) => {
      const tables = (s.tables || []).join(", ");
      return el("li", { class: "source", dataset: { id: s.id || "" } },
        el("strong", {}, s.name), ` (${s.kind})`, tables ? `: ${tables}` : "");
    }));
    const engine = `dialect ${info.dialect || "?"} · model ${info.model || "none"}` +
      (info.python ? " · python on" : "");
    $("sources").replaceChildren(list, el("p", { class: "muted engine" }, engine));
  }

  async function loadSchema() {
    const tables = (await api("GET", "/api/schema")).tables || [];
    const box = $("schema-cards");
    clear(box);
    if (!tables.length) box.append(el("p", { class: "muted" }, "No tables."));
    for (const t of tables) {
      const rows = typeof t.rows === "number" ? ` (${t.rows.toLocaleString("en-US")} rows)` : "";
      // One span a line, so that notes and quality warnings can be picked out.
      const pre = el("pre", { class: "schema-card" });
      for (const line of String(t.text || "").replace(/\n$/, "").split("\n")) {
        const head = line.trimStart();
        const cls = head.startsWith("warning:") ? "line line-warning"
          : head.startsWith("note:") ? "line line-note" : "line";
        pre.append(el("span", { class: cls }, line));
      }
      box.append(el("details", { class: "schema-table", dataset: { table: t.table } },
        el("summary", {}, t.table + rows), pre));
    }
  }

  // ---- threads sidebar ----

  // Lists can come back out of order (one after a run, one after a rename); only the latest
  // request's is drawn.
  let threadsSeq = 0;
  async function loadThreads() {
    const seq = ++threadsSeq;
    const threads = (await api("GET", "/api/threads")).threads || [];
    if (seq !== threadsSeq) return;
    const list = $("threads");
    clear(list);
    if (!threads.length) list.append(el("li", { class: "muted" }, "No threads yet."));
    for (const t of threads) list.append(threadRow(t));
  }
  const refreshThreads = () => loadThreads().catch(showError);

  // A thread's row: open, rename and delete. Rename and delete both happen in the row itself.
  function threadRow(t) {
    const li = el("li", { class: "thread", dataset: { name: t.name } });
    const show = (focusSel) => {
      li.replaceChildren(
        el("button", {
          type: "button", class: "thread-item", dataset: { name: t.name }, title: t.question || "",
          "aria-current": t.name === state.thread ? "true" : null,
          onclick: () => openThread(t.name).catch(showError),
        }, el("span", { class: "thread-name" }, t.name),
        el("span", { class: "thread-meta" }, `${plural(t.turns, "turn")} · ${t.status}`)),
        el("span", { class: "thread-actions" },
          button("Rename", { class: "thread-rename", "aria-label": `Rename ${t.name}` }, rename),
          button("Delete", { class: "thread-delete", "aria-label": `Delete ${t.name}` }, remove)));
      if (focusSel) focusIn(li, focusSel);
    };
    const rename = () => {
      const id = `rename-${++uid}`;
      const input = el("input",
        { class: "thread-rename-input", id, value: t.name, required: true });
      const form = el("form", { class: "thread-rename-form" },
        el("label", { class: "visually-hidden", for: id }, `New name for ${t.name}`), input,
        el("button", { type: "submit", class: "thread-rename-save" }, "Save"),
        button("Cancel", { class: "thread-rename-cancel" }, () => show(".thread-rename")));
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        const name = input.value.trim();
        if (!name || name === t.name) return show(".thread-rename");
        try {
          const r = await api("PATCH", `/api/threads/${enc(t.name)}`, { name });
          if (state.thread === t.name) setThread(r.name || name);
          await loadThreads();
        } catch (e) { showError(e); }
      });
      // Escape here cancels the rename, not the run.
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Escape") { ev.stopPropagation(); show(".thread-rename"); }
      });
      li.replaceChildren(form);
      input.focus();
      input.select();
    };
    const remove = () => {
      li.replaceChildren(el("span", { class: "thread-confirm" }, `Delete “${t.name}”?`),
        button("Delete", { class: "thread-delete-confirm" }, async () => {
          try {
            await api("DELETE", `/api/threads/${enc(t.name)}`);
            if (state.thread === t.name) newThread();
            await loadThreads();
          } catch (e) { showError(e); }
        }),
        button("Cancel", { class: "thread-delete-cancel" }, () => show(".thread-delete")));
      focusIn(li, ".thread-delete-cancel");
    };
    show();
    return li;
  }

  function setThread(name) {
    state.thread = name;
    $("thread-name").textContent = name ? `· ${name}` : "new thread";
    for (const b of document.querySelectorAll(".thread-item")) {
      if (b.dataset.name === name) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
  }

  function newThread() {
    if (state.run) return;  // a running turn stays on screen until it ends
    setThread(null);
    clear($("turns"));
    resetLive();
    $("question").focus();
  }

  // A stored thread: its turns as the server recorded them. A last turn still running is
  // followed live; one waiting on a clarification gets the reply controls.
  async function openThread(name) {
    if (state.run) throw new Error("a run is going: stop it or wait before opening a thread");
    const t = await api("GET", `/api/threads/${enc(name)}`);
    hideError();
    setThread(t.name || name);
    clear($("turns"));
    resetLive();
    const turns = t.turns || [];
    const last = turns[turns.length - 1];
    const waiting = last && last.status === "clarification_needed"
      ? (last.clarifications || []).filter((c) => !c.reply).pop() : null;
    const live = last && (last.status === "running" || waiting);
    for (const turn of live ? turns.slice(0, -1) : turns) $("turns").append(storedTurn(turn));
    if (!live) return;
    startLive(last.question, last.run_id);
    if (last.status === "running") return stream(last.run_id);
    endRun();  // nothing runs while quarry waits on the reply
    renderOutcome({ run_id: last.run_id, thread: state.thread, stop_reason: "clarification_needed",
      clarification: { question: waiting.question, choices: waiting.choices || [] } });
  }

  function storedTurn(turn) {
    const answered = turn.status === "answered";
    const box = el("div", { class: answered ? "turn-outcome" : "turn-outcome outcome-not-answer" });
    if (answered) {
      box.append(groundedBadge(turn.grounded), el("p", { class: "answer-text" }, turn.answer));
    } else {
      box.append(el("h3", {}, stopHeading(turn.status)));
      if (turn.answer) box.append(el("p", { class: "plain" }, turn.answer));
    }
    for (const c of turn.clarifications || []) {
      box.append(el("p", { class: "muted" }, `quarry asked: ${c.question}`,
        c.reply ? ` — you replied: ${c.reply}` : ""));
    }
    if (turn.sql) box.append(sqlBlock(turn.sql, false));
    if (turn.preview) box.append(el("pre", { class: "preview" }, turn.preview));
    if (turn.run_id) box.append(traceLink(turn.run_id, false));
    return el("li", { class: "turn", dataset: { runId: turn.run_id, stopReason: turn.status } },
      el("p", { class: "turn-question" }, turn.question), box);
  }

  // ---- asking, the live turn and its event stream ----

  function setRunning(running) {
    $("ask").disabled = running;
    $("stop").disabled = !running;
    $("stop").textContent = "Stop";
    $("new-thread").disabled = running;
    $("run-status").textContent = running ? "running…" : "";
  }

  // Starts a run (a new question, a follow-up or a clarification reply); false when refused.
  async function ask(question, thread) {
    question = question.trim();
    if (!question || state.run) return false;
    hideError();
    $("ask").disabled = true;
    try {
      const r = await api("POST", "/api/ask", thread ? { question, thread } : { question });
      setThread(r.thread || thread || null);
      retireLive();
      startLive(question, r.run_id);
      stream(r.run_id);
      return true;
    } catch (e) {
      showError(e);
      $("ask").disabled = !!state.run;
      return false;
    }
  }

  function resetLive() {
    clear($("steps"));
    clear($("outcome"));
    $("outcome").className = "outcome";
    $("outcome").removeAttribute("data-stop-reason");
    $("live-question").textContent = "";
    $("live-meta").textContent = "";
    $("live").hidden = true;
  }

  // The finished live turn moves into the conversation as it is (nodes keep their handlers);
  // its ids go, so that #steps, #outcome and #answer always mean the current turn.
  function retireLive() {
    if ($("live").hidden) return;
    const steps = [...$("steps").children];
    const outcome = el("div", { class: $("outcome").className }, ...$("outcome").childNodes);
    const li = el("li", { class: "turn", dataset: { runId: $("live").dataset.runId || "" } },
      el("p", { class: "turn-question" }, $("live-question").textContent),
      steps.length ? el("details", { class: "turn-steps" },
        el("summary", {}, plural(steps.length, "step")), el("ol", { class: "steps" }, ...steps))
        : null,
      outcome);
    if ($("outcome").dataset.stopReason) li.dataset.stopReason = $("outcome").dataset.stopReason;
    for (const n of li.querySelectorAll("[id]")) n.removeAttribute("id");
    // A clarification is answered once.
    for (const c of li.querySelectorAll(".clarification button, .clarification input")) {
      c.disabled = true;
    }
    $("turns").append(li);
    resetLive();
  }

  function startLive(question, runId) {
    resetLive();
    $("live").hidden = false;
    $("live").dataset.runId = runId || "";
    $("live-question").textContent = question || "";
    state.run = { id: runId, source: null, done: false, retries: 0 };
    setRunning(true);
    $("live").scrollIntoView({ block: "nearest" });
  }

  function stream(runId) {
    const run = state.run;
    if (!run || run.id !== runId || run.done) return;
    const source = new EventSource(`/api/runs/${enc(runId)}/events`);
    run.source = source;
    source.addEventListener("trace", (ev) => {
      const e = parseJson(ev.data);
      if (!e) return;
      run.retries = 0;
      if (e.event === "step") addStep(e);
      else if (e.event === "end") $("run-status").textContent = "finishing…";
      else if (e.event === "start") {
        $("live-meta").textContent =
          [e.model, e.provider && `via ${e.provider}`, e.dialect].filter(Boolean).join(" ");
      }
    });
    source.addEventListener("outcome", (ev) => {
      // The server ends the stream after the outcome; closing first keeps EventSource from
      // reconnecting and replaying the run.
      source.close();
      const o = parseJson(ev.data);
      if (o) finishRun(o);
      else recover(runId);
    });
    source.addEventListener("error", () => {
      if (run.done) return;
      source.close();
      recover(runId);
    });
  }

  // The stream broke before the outcome: ask how the run stands, then show its outcome or
  // stream it again (steps are keyed by index, so a replay does not duplicate them).
  async function recover(runId) {
    const run = state.run;
    if (!run || run.id !== runId || run.done) return;
    if (++run.retries > STREAM_RETRIES) {
      endRun();
      showError(new Error("lost the run's event stream; its trace page has the full record"));
      $("outcome").append(traceLink(runId, true));
      return;
    }
    try {
      const r = await api("GET", `/api/runs/${enc(runId)}`);
      if (r.outcome) return finishRun(r.outcome);
      if (r.running === false) throw new Error("the run ended without an outcome");
      setTimeout(() => stream(runId), 1000 * run.retries);
    } catch (e) {
      endRun();
      showError(e);
    }
  }

  function endRun() {
    if (state.run) {
      state.run.done = true;
      if (state.run.source) state.run.source.close();
    }
    state.run = null;
    setRunning(false);
  }

  function finishRun(outcome) {
    const runId = state.run ? state.run.id : outcome.run_id;
    endRun();
    if (outcome.thread) setThread(outcome.thread);
    renderOutcome({ run_id: runId, ...outcome });
    refreshThreads();
  }

  async function stopRun() {
    const run = state.run;
    if (!run || run.stopping) return;
    run.stopping = true;
    $("stop").disabled = true;
    $("stop").textContent = "Stopping…";
    try {
      await api("POST", `/api/runs/${enc(run.id)}/stop`, {});
    } catch (e) {
      run.stopping = false;
      setRunning(state.run === run);
      showError(e);
    }
  }

  // ---- steps ----

  const FAILED = new Set(["failed", "error", "rejected", "interrupted"]);
  const failureOf = (s) => (s.failure_class && s.failure_class !== "none" ? s.failure_class : "");

  function addStep(s) {
    const index = num(s.index);
    const status = s.status || "";
    const failure = failureOf(s);
    const classes = ["step"];
    if (FAILED.has(status) || failure) classes.push("step-error");
    if (s.repair) classes.push("step-repair");
    const li = el("li", {
      id: `step-${index}`, class: classes.join(" "), tabindex: "-1",
      dataset: { index, kind: s.kind || "", status, tool: s.tool || "" },
    }, el("div", { class: "step-head" },
      el("span", { class: "step-index" }, index),
      el("span", { class: "step-name" }, s.kind === "model" ? "model" : s.tool || s.kind),
      status && el("span", { class: `badge status-${status}` }, status),
      failure && el("span", { class: "badge status-failed" }, failure),
      s.repair && el("span", { class: "badge repair" }, "repair"),
      el("span", { class: "step-ms muted" }, `${num(s.duration_ms)} ms`)),
    ...(s.kind === "model" ? modelStepBody(s) : toolStepBody(s)));
    const old = $("steps").querySelector(`li.step[data-index="${index}"]`);
    if (old) old.replaceWith(li);
    else $("steps").append(li);
  }

  function modelStepBody(s) {
    const calls = (s.tool_calls || []).map((c) => c.name).filter(Boolean);
    const u = s.usage || {};
    const facts = [
      calls.length && `calls ${calls.join(", ")}`,
      u.input_tokens !== undefined && `${num(u.input_tokens)}+${num(u.output_tokens)} tokens`,
      s.cost_usd !== undefined && `$${num(s.cost_usd).toFixed(4)}`,
    ].filter(Boolean);
    return [
      s.content && el("p", { class: "step-text" }, truncate(String(s.content), MODEL_TEXT_CHARS)),
      el("p", { class: "muted" }, facts.join(" · ")),
    ];
  }

  function toolStepBody(s) {
    const detail = s.detail && typeof s.detail === "object" ? s.detail : {};
    const rows = Array.isArray(detail.rows) && detail.rows.length ? detail.rows : null;
    const out = [detail.sql && el("pre", { class: "sql" }, detail.sql)];
    // An ok query's observation opens with boilerplate; its rows say more.
    // A failure's whole first paragraph (its first line can end mid-sentence); else one line.
    const obs = FAILED.has(s.status) || failureOf(s)
      ? firstParagraph(s.observation) : firstLine(s.observation);
    if (obs && !(rows && s.status === "ok")) {
      const cls = FAILED.has(s.status) ? "step-obs step-obs-error" : "step-obs";
      out.push(el("p", { class: cls }, truncate(obs, 300)));
    }
    if (rows) {
      const count = typeof detail.row_count === "number" ? detail.row_count : rows.length;
      out.push(smallTable(columnsOf(detail), rows.slice(0, PREVIEW_ROWS)),
        el("p", { class: "muted" }, plural(count, "row") +
          (count > PREVIEW_ROWS ? `, first ${PREVIEW_ROWS} shown` : "")),
        detail.sql && button("Open in result view", { class: "sql-show" },
          () => openSql(detail.sql, true)));
    }
    return out;
  }

  // A value in an answer points at the step whose result holds it. The step is looked up in
  // the link's own turn, so links keep working after the turn is retired.
  function highlightStep(link) {
    const turn = link.closest(".turn");
    const step = turn && turn.querySelector(`li.step[data-index="${link.dataset.step}"]`);
    if (!step) return;
    const details = step.closest("details");
    if (details) details.open = true;
    for (const s of document.querySelectorAll(".step-highlight")) {
      s.classList.remove("step-highlight");
    }
    step.classList.add("step-highlight");
    step.scrollIntoView({ block: "center" });
    step.focus({ preventScroll: true });
  }

  // ---- outcome ----

  function renderOutcome(o) {
    const box = $("outcome");
    clear(box);
    box.dataset.stopReason = o.stop_reason || "";
    if (o.stop_reason === "answered") renderAnswer(box, o);
    else if (o.stop_reason === "clarification_needed" && o.clarification) {
      renderClarification(box, o);
    }
    else renderNotAnswer(box, o);
    if (Array.isArray(o.notes) && o.notes.length) {
      box.append(el("ul", { class: "notes" }, ...o.notes.map((n) => el("li", {}, `note: ${n}`))));
    }
    if (o.totals) box.append(el("p", { class: "totals muted" }, totalsText(o.totals)));
    if (o.run_id) box.append(traceLink(o.run_id, true));
  }

  const groundedBadge = (grounded) => el("span", {
    class: grounded ? "badge grounded" : "badge ungrounded", "data-testid": "grounded-badge",
  }, grounded ? "grounded: every value found in a result" : "not verified");

  function renderAnswer(box, o) {
    box.className = "outcome outcome-answer";
    // verify is {grounded, checks} in the brief and the checks array itself in OutcomeJson.
    const checks = Array.isArray(o.verify) ? o.verify : (o.verify && o.verify.checks) || [];
    box.append(el("h3", {}, "Answer ", groundedBadge(o.grounded)),
      answerParagraph(String(o.answer || ""), checks));
    if (o.assumptions && o.assumptions.length) {
      box.append(el("h4", {}, "Assumptions"),
        el("ul", { class: "assumptions" }, ...o.assumptions.map((a) => el("li", {}, a))));
    }
    if (o.sql) box.append(sqlBlock(o.sql, true));
    for (const f of o.figures || []) {
      const file = basename(f);
      box.append(el("img", { class: "figure", alt: `Chart ${file}`,
        src: `/api/runs/${enc(o.run_id)}/figures/${enc(file)}` }));
    }
  }

  // The answer as text, with each value the verify gate found in a step's result made a
  // button to that step. Numbers match however the model wrote them ("$17,968.90", 17968.9).
  function answerParagraph(text, checks) {
    const p = el("p", { id: "answer", "data-testid": "answer", class: "answer-text" });
    const spans = [];
    for (const c of checks) {
      if (!c || !c.grounded || !(c.step > 0)) continue;
      for (const [start, end] of findValue(text, String(c.value))) spans.push({ start, end, c });
    }
    spans.sort((a, b) => a.start - b.start || b.end - a.end);  // overlaps are dropped below
    let at = 0;
    for (const { start, end, c } of spans) {
      if (start < at) continue;
      p.append(text.slice(at, start), el("button", {
        type: "button", class: "value-link", dataset: { step: c.step },
        title: `found in step ${c.step}${c.column ? `, column ${c.column}` : ""}`,
        onclick: (ev) => highlightStep(ev.currentTarget),
      }, text.slice(start, end)));
      at = end;
    }
    p.append(text.slice(at));
    return p;
  }

  const NUMBER_IN_TEXT = /-?\d+(?:,\d{3})*(?:\.\d+)?/g;
  const isWordChar = (ch) => !!ch && /[\p{L}\p{N}_]/u.test(ch);
  function asNumber(s) {
    const t = s.replace(/[$€£,%\s]/g, "");
    return /^[-+]?\d+(\.\d+)?$/.test(t) ? Number(t) : null;
  }

  // [start, end) of each place `value` stands in `text`: numbers by value, the rest verbatim,
  // neither inside a longer word or number.
  function findValue(text, value) {
    const out = [];
    const v = value.trim();
    const n = v ? asNumber(v) : null;
    if (n !== null) {
      for (const m of text.matchAll(NUMBER_IN_TEXT)) {
        const start = m.index, end = start + m[0].length;
        const before = text[start - 1];
        if (isWordChar(before) || before === "." || isWordChar(text[end])) continue;
        const x = Math.abs(Number(m[0].replace(/,/g, "")));
        if (Math.abs(x - Math.abs(n)) <= 1e-9 * Math.max(1, Math.abs(n))) {
          out.push([m[0].startsWith("-") && n >= 0 ? start + 1 : start, end]);
        }
      }
    } else if (v) {
      for (let i = text.indexOf(v); i >= 0; i = text.indexOf(v, i + v.length)) {
        const end = i + v.length;
        if (!isWordChar(text[i - 1]) && !isWordChar(text[end])) out.push([i, end]);
      }
    }
    return out;
  }

  function renderNotAnswer(box, o) {
    box.className = "outcome outcome-not-answer";
    let text = o.text ||
      [o.declined, o.explanation, o.reply].map((x) => x && x.text).filter(Boolean).join("\n");
    // The text ends with the run's notes as "note: ..." lines; renderOutcome lists them below,
    // so they are taken out here rather than shown twice.
    for (const n of Array.isArray(o.notes) ? o.notes : []) {
      text = String(text).split(`note: ${n}\n`).join("");
    }
    text = String(text || "").trim();
    box.append(el("h3", {}, stopHeading(o.stop_reason || "unknown")),
      text && el("p", { class: "plain outcome-text" }, text));
  }

  function renderClarification(box, o) {
    box.className = "outcome outcome-clarification";
    const thread = o.thread || state.thread;
    const controls = () => box.querySelectorAll("button, input");
    const send = async (reply) => {
      if (!reply.trim()) return;
      for (const c of controls()) c.disabled = true;
      if (!(await ask(reply, thread))) for (const c of controls()) c.disabled = false;
    };
    const input = el("input", {
      id: "clarification-reply", "data-testid": "clarification-reply", type: "text", required: true,
    });
    const form = el("form", { class: "clarification-form" },
      el("label", { for: "clarification-reply" }, "Or type a reply"), input,
      el("button", {
        type: "submit", id: "clarification-send", "data-testid": "clarification-send",
      }, "Send reply"));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); send(input.value); });
    const choices = (o.clarification.choices || []).map((choice) =>
      button(choice, { class: "clarification-choice" }, () => send(choice)));
    box.append(el("div", { class: "clarification" },
      el("h3", {}, "quarry needs a clarification"),
      el("p", { id: "clarification-question", "data-testid": "clarification-question",
        class: "plain" }, o.clarification.question),
      el("div", { class: "choices" }, ...choices), form));
  }

  // SQL with the two ways into the result view; `live` gives it the current turn's ids.
  function sqlBlock(sql, live) {
    const testid = (name) => (live ? name : null);
    return el("div", { class: "sql-block" },
      el("pre", { class: "sql", id: testid("answer-sql"), "data-testid": testid("answer-sql") },
        sql),
      el("div", { class: "buttons" },
        button("Show result", { class: "sql-show", "data-testid": testid("show-result") },
          () => openSql(sql, true)),
        button("Edit & re-run", { class: "sql-edit", "data-testid": testid("edit-sql") },
          () => openSql(sql, false))));
  }

  const traceLink = (runId, live) => el("p", { class: "trace" }, el("a", {
    id: live ? "trace-link" : null, "data-testid": live ? "trace-link" : null,
    href: `/runs/${enc(runId)}/view`, target: "_blank", rel: "noopener noreferrer",
  }, "Full trace of this run"));

  // ---- result view ----

  // Show result runs the SQL at once; Edit & re-run puts it in the editor to change first.
  function openSql(sql, run) {
    $("sql-editor").value = String(sql).replace(/;\s*$/, "");
    $("result").scrollIntoView({ block: "start" });
    if (run) runSql();
    else $("sql-editor").focus();
  }

  async function runSql() {
    const sql = $("sql-editor").value.trim();
    if (!sql) return;
    $("sql-error").hidden = true;
    $("sql-run").disabled = true;
    $("sql-status").textContent = "running…";
    try {
      const r = await api("POST", "/api/sql", { sql, max_rows: SQL_MAX_ROWS });
      showResult(r);
      $("sql-status").textContent =
        `${plural(num(r.row_count), "row")} in ${num(r.elapsed_ms)} ms` +
        (r.truncated ? ` (cut at ${(r.rows || []).length})` : "");
    } catch (e) {
      $("sql-error").textContent = e.message;
      $("sql-error").hidden = false;
      $("sql-status").textContent = "";
    } finally {
      $("sql-run").disabled = false;
    }
  }

  function showResult(r) {
    const rows = Array.isArray(r.rows) ? r.rows : [];
    state.result = {
      columns: columnsOf(r), rows,
      order: rows.map((_, i) => i),  // row indices in display order
      sortCol: -1, sortDir: 1, page: 0,
    };
    for (const id of ["copy-result", "download-csv", "download-json"]) $(id).disabled = false;
    $("copy-status").textContent = "";
    renderResult();
  }

  // Numbers compare as numbers; NULLs go last whichever way the column is sorted.
  function sortResult(col) {
    const res = state.result;
    res.sortDir = res.sortCol === col ? -res.sortDir : 1;
    res.sortCol = col;
    const cmp = (a, b) => {
      const x = res.rows[a][col], y = res.rows[b][col];
      const xNull = x === null || x === undefined, yNull = y === null || y === undefined;
      if (xNull || yNull) return xNull === yNull ? 0 : xNull ? 1 : -1;
      if (typeof x === "number" && typeof y === "number") return res.sortDir * (x - y);
      return res.sortDir * cellText(x).localeCompare(cellText(y), undefined, { numeric: true });
    };
    res.order.sort((a, b) => cmp(a, b) || a - b);
    res.page = 0;
    renderResult();
  }

  function renderResult() {
    const res = state.result;
    const headers = res.columns.map((c, i) => {
      const sorted = res.sortCol === i;
      return el("th", { scope: "col",
        "aria-sort": sorted ? (res.sortDir > 0 ? "ascending" : "descending") : null },
      button(c.name, { class: "sort", title: c.type ? `${c.type}; sort` : "sort" },
        () => sortResult(i)),
      sorted && el("span", { class: "sort-mark", "aria-hidden": "true" },
        res.sortDir > 0 ? " ▲" : " ▼"));
    });
    const total = res.order.length;
    const first = res.page * PAGE_ROWS;
    const last = Math.min(total, first + PAGE_ROWS);
    const table = $("result-table");
    table.tHead.replaceChildren(el("tr", {}, ...headers));
    table.tBodies[0].replaceChildren(...res.order.slice(first, last).map((i) =>
      el("tr", {}, ...res.rows[i].map(cellNode))));
    $("page-label").textContent = total ? `rows ${first + 1}–${last} of ${total}` : "no rows";
    $("page-prev").disabled = res.page === 0;
    $("page-next").disabled = last >= total;
  }

  function turnPage(delta) {
    const res = state.result;
    if (!res) return;
    const pages = Math.max(1, Math.ceil(res.order.length / PAGE_ROWS));
    res.page = Math.min(pages - 1, Math.max(0, res.page + delta));
    renderResult();
  }

  // Exports carry every row in the order on screen, not just the page.
  const sortedRows = () => state.result.order.map((i) => state.result.rows[i]);
  const exportText = (cell) => (cell === null || cell === undefined ? ""
    : typeof cell === "object" && typeof cell.base64 === "string" ? cell.base64 : cellText(cell));

  function toTsv() {
    const clean = (s) => s.replace(/[\t\r\n]+/g, " ");
    const lines = [state.result.columns.map((c) => clean(c.name)).join("\t")];
    for (const row of sortedRows()) lines.push(row.map((c) => clean(exportText(c))).join("\t"));
    return lines.join("\n") + "\n";
  }

  // RFC 4180 fields; text a spreadsheet would run as a formula (= + - @, tab or CR first) is
  // prefixed with ' as OWASP's CSV injection advice says. Numbers are left alone.
  function csvField(value, isText) {
    const s = isText && /^[=+\-@\t\r]/.test(value) ? "'" + value : value;
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }
  function toCsv() {
    const lines = [state.result.columns.map((c) => csvField(c.name, true)).join(",")];
    for (const row of sortedRows()) {
      lines.push(row.map((c) => csvField(exportText(c), typeof c !== "number")).join(","));
    }
    return lines.join("\r\n") + "\r\n";
  }

  function download(name, type, text) {
    const url = URL.createObjectURL(new Blob([text], { type }));
    const a = el("a", { href: url, download: name, class: "visually-hidden" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  async function copyResult() {
    try {
      await navigator.clipboard.writeText(toTsv());
      $("copy-status").textContent = "copied";
    } catch (e) {
      $("copy-status").textContent = `copy failed: ${e.message}`;
    }
  }

  // ---- wiring ----

  function wire() {
    const on = (id, type, fn) => $(id).addEventListener(type, fn);
    on("error-dismiss", "click", hideError);
    on("ask-form", "submit", async (ev) => {
      ev.preventDefault();
      if (await ask($("question").value, state.thread)) $("question").value = "";
    });
    on("question", "keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    on("stop", "click", stopRun);
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && state.run) stopRun();
    });
    on("new-thread", "click", newThread);
    on("sql-form", "submit", (ev) => { ev.preventDefault(); runSql(); });
    on("sql-editor", "keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); runSql(); }
    });
    on("page-prev", "click", () => turnPage(-1));
    on("page-next", "click", () => turnPage(1));
    on("copy-result", "click", copyResult);
    on("download-csv", "click", () =>
      download("quarry-result.csv", "text/csv;charset=utf-8", toCsv()));
    on("download-json", "click", () => download("quarry-result.json", "application/json",
      JSON.stringify({ columns: state.result.columns, rows: sortedRows() }, null, 2) + "\n"));
  }

  wire();
  // The three loads are independent: one failing leaves the others, and the page, usable.
  loadInfo().catch(showError);
  loadSchema().catch((e) => { clear($("schema-cards")); showError(e); });
  refreshThreads();
})();
