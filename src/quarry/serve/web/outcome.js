// quarry serve: a run's outcome (answer, refusal, clarification, stop) and the result view
// (SQL run, sorted, paged, copied and downloaded). After page.js, before app.js; every node is
// built with page.js's el, as text.
(() => {
  "use strict";

  const {
    PAGE_ROWS, SQL_MAX_ROWS, state, $, enc, el, button, clear, api, showError,
    num, basename, plural, cellText, cellNode, columnsOf, totalsText, stopHeading,
  } = window.quarryPage;

  // ---- outcome ----

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

  // `ask` starts the run that replies to a clarification (app.js's ask: true when it started).
  function renderOutcome(o, ask) {
    const box = $("outcome");
    clear(box);
    box.dataset.stopReason = o.stop_reason || "";
    if (o.answered) renderAnswer(box, o);
    else if (o.waiting && o.clarification) {
      renderClarification(box, o, ask);
    }
    else renderNotAnswer(box, o);
    if (Array.isArray(o.notes) && o.notes.length) {
      box.append(el("ul", { class: "notes" }, ...o.notes.map((n) => el("li", {}, `note: ${n}`))));
    }
    if (o.run_id && Array.isArray(o.glossary_offers)) {
      for (const offer of o.glossary_offers) box.append(glossaryOffer(o.run_id, offer));
    }
    if (o.totals) box.append(el("p", { class: "totals muted" }, totalsText(o.totals)));
    if (o.run_id) box.append(traceLink(o.run_id, true));
  }

  // A clarification reply the user may keep for later questions: written only on this click.
  function glossaryOffer(runId, offer) {
    const p = el("p", { class: "glossary-offer", "data-testid": "glossary-offer" });
    const keep = button(`Keep "${offer.text}" for later questions`,
      { class: "glossary-keep", "data-testid": "glossary-keep" }, async () => {
        keep.disabled = true;
        try {
          const r = await api("POST", `/api/runs/${enc(runId)}/remember`, { term: offer.term });
          p.replaceChildren(`Kept in the glossary (${r.kept}): later questions use it.`);
        } catch (e) {
          keep.disabled = false;
          showError(e);
        }
      });
    p.append(keep);
    return p;
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
    if (o.rests_on && o.rests_on.length) {
      box.append(el("h4", {}, "Rests on (knowledge files)"),
        el("ul", { class: "rests-on", "data-testid": "rests-on" },
          ...o.rests_on.map((r) => el("li", {}, r))));
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
    box.append(el("h3", {}, stopHeading(o)),
      text && el("p", { class: "plain outcome-text" }, text));
  }

  function renderClarification(box, o, ask) {
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

  // Text a spreadsheet would run as a formula (= + - @, tab or CR first) is prefixed with ', as
  // OWASP's CSV injection advice says, in a copy as in a download. Numbers are left alone.
  const defused = (value, isText) => (isText && /^[=+\-@\t\r]/.test(value) ? "'" + value : value);

  function toTsv() {
    const clean = (s) => s.replace(/[\t\r\n]+/g, " ");
    const lines = [state.result.columns.map((c) => clean(defused(c.name, true))).join("\t")];
    for (const row of sortedRows()) {
      lines.push(row.map((c) => clean(defused(exportText(c), typeof c !== "number"))).join("\t"));
    }
    return lines.join("\n") + "\n";
  }

  // RFC 4180 fields, defused.
  function csvField(value, isText) {
    const s = defused(value, isText);
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

  // The result view's own controls; app.js's wire calls this.
  function wireResult() {
    const on = (id, type, fn) => $(id).addEventListener(type, fn);
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

  window.quarryOutcome = Object.freeze({
    renderOutcome, groundedBadge, sqlBlock, traceLink, openSql, wireResult,
  });
})();
