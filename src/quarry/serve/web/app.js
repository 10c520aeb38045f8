// quarry serve: the page's threads, the live run and its event stream, its steps, and the
// wiring. Runs last, after page.js and outcome.js; every node is built with page.js's el, as
// text, never as markup.
(() => {
  "use strict";

  const {
    PREVIEW_ROWS, MODEL_TEXT_CHARS, STREAM_RETRIES, state, $, enc, el, button, clear, focusIn,
    api, showError, hideError, parseJson, num, firstLine, firstParagraph, truncate, plural,
    columnsOf, smallTable, stopHeading,
  } = window.quarryPage;
  const { renderOutcome, groundedBadge, sqlBlock, traceLink, openSql, wireResult } =
    window.quarryOutcome;
  let uid = 0;

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
        el("span", { class: "thread-meta" }, `${plural(t.turns, "turn")} · ${t.heading || t.status || "no turns"}`)),
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
    const waiting = last && last.waiting
      ? (last.clarifications || []).filter((c) => !c.reply).pop() : null;
    const live = last && (last.running || waiting);
    for (const turn of live ? turns.slice(0, -1) : turns) $("turns").append(storedTurn(turn));
    if (!live) return;
    startLive(last.question, last.run_id);
    if (last.running) return stream(last.run_id);
    endRun();  // nothing runs while quarry waits on the reply
    renderOutcome({ run_id: last.run_id, thread: state.thread, stop_reason: last.status, waiting: true,
      clarification: { question: waiting.question, choices: waiting.choices || [] } }, ask);
  }

  function storedTurn(turn) {
    const answered = turn.answered;
    const box = el("div", { class: answered ? "turn-outcome" : "turn-outcome outcome-not-answer" });
    if (answered) {
      box.append(groundedBadge(turn.grounded), el("p", { class: "answer-text" }, turn.answer));
    } else {
      box.append(el("h3", {}, stopHeading(turn)));
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
    renderOutcome({ run_id: runId, ...outcome }, ask);
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
      if (e.status === 409) return;  // it finished meanwhile: its outcome is on its way
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
    wireResult();
  }

  wire();
  // The three loads are independent: one failing leaves the others, and the page, usable.
  loadInfo().catch(showError);
  loadSchema().catch((e) => { clear($("schema-cards")); showError(e); });
  refreshThreads();
})();
