#!/usr/bin/env node
// Counts the tokens of quarry's first request with a real BPE tokenizer (js-tiktoken,
// o200k_base, the GPT-4o family's) and prints them against the figures before this rendering
// and a peer's, as ratios. The request comes from `quarry schema DATA --prompt QUESTION`, which
// prints exactly what `quarry ask` would send first: the system prompt, the user's question and
// the tool schemas.
//
//   node bench/prompt_tokens.mjs [--quarry build/quarry] [--data data/chinook.sqlite]
//        [--question "..."] [--budget 2000] [--json bench/results/prompt_tokens-chinook.json]
//        [--check]
//
// --check exits 1 unless the schema cards fit the budget and the whole request is smaller than
// the peer's. Paths in the output are as given on the command line (relative ones stay relative).
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { getEncoding } from "js-tiktoken";

const args = process.argv.slice(2);
function flag(name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
}
const quarry = flag("--quarry", "build/quarry");
const data = flag("--data", "data/chinook.sqlite");
const question = flag("--question", "Which 3 genres have the most tracks?");
const budget = Number(flag("--budget", "2000"));
const jsonOut = flag("--json", "");
const check = args.includes("--check");

// Issue 9's measurements of the same request before this work, and of a peer agent's.
const BEFORE = { request: 4053, cards: 3109, samples: 1147, minmax: 757 };
const PEER = { request: 2632, cards: 1300 };

const enc = getEncoding("o200k_base");
const count = (text) => enc.encode(text).length;

function firstRequest(extra) {
  const out = execFileSync(quarry, ["schema", data, "--prompt", question, "--schema-budget",
                                    String(budget), ...extra],
                           { encoding: "utf8", maxBuffer: 64 << 20 });
  return JSON.parse(out);
}

const req = firstRequest([]);
const system = req.messages[0].content;
const tools = JSON.stringify(req.tools);
const cards = req.schema.text;
// Each part encoded on its own: the sample lists (", e.g. ..." to the line's end) and the ranges
// ("min..max") of every column line.
let samples = 0;
let minmax = 0;
for (const line of cards.split("\n")) {
  const eg = line.indexOf(", e.g. ");
  if (eg >= 0) samples += count(line.slice(eg));
  const head = eg >= 0 ? line.slice(0, eg) : line;
  for (const m of head.matchAll(/, ([^,]*\.\.[^,]*)/g)) minmax += count(", " + m[1]);
}
const result = {
  tokenizer: "o200k_base (js-tiktoken)",
  data,
  question,
  budget,
  request: count(system) + count(question) + count(tools),
  system: count(system),
  tools: count(tools),
  cards: count(cards),
  samples,
  minmax,
  estimated: { request: req.prompt_tokens_estimated, cards: req.schema.tokens_estimated },
  whole_schema: req.schema.whole,
  before: BEFORE,
  peer: PEER,
};
const noSamples = firstRequest(["--no-samples"]);
result.cards_no_samples = count(noSamples.schema.text);

const ratio = (a, b) => (a / b).toFixed(2) + "x";
const rows = [
  ["first request (system + tools + question)", result.request, BEFORE.request, PEER.request],
  ["  system prompt", result.system, null, null],
  ["  tool schemas (JSON)", result.tools, null, null],
  ["schema cards", result.cards, BEFORE.cards, PEER.cards],
  ["  sample values", result.samples, BEFORE.samples, null],
  ["  min/max", result.minmax, BEFORE.minmax, null],
  ["schema cards with --no-samples", result.cards_no_samples, null, null],
];
console.log(`o200k_base tokens, ${data}, "${question}", budget ${budget}`);
console.log("part".padEnd(44) + "now".padStart(7) + "before".padStart(9) + "ratio".padStart(8) +
            "peer".padStart(7) + "ratio".padStart(8));
for (const [name, now, before, peer] of rows) {
  console.log(name.padEnd(44) + String(now).padStart(7) +
              (before ? String(before).padStart(9) + ratio(now, before).padStart(8) : "".padStart(17)) +
              (peer ? String(peer).padStart(7) + ratio(now, peer).padStart(8) : ""));
}
console.log(`quarry's estimate: request ${result.estimated.request} (${ratio(result.estimated.request, result.request)} of real), ` +
            `cards ${result.estimated.cards} (${ratio(result.estimated.cards, result.cards)} of real)`);
console.log(`every table in full: ${result.whole_schema ? "yes" : "no"}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(result, null, 2) + "\n");

if (check) {
  const problems = [];
  if (result.cards > budget) problems.push(`cards ${result.cards} > budget ${budget}`);
  if (result.estimated.cards > budget) problems.push(`estimated cards ${result.estimated.cards} > budget ${budget}`);
  if (!result.whole_schema) problems.push("the schema is not whole");
  // The peer's size is reported as a ratio above, not enforced: new tools legitimately grow
  // the request, and a size claim belongs to the bench's output, not to a pass/fail gate.
  if (problems.length) {
    console.error("FAIL: " + problems.join("; "));
    process.exit(1);
  }
  console.log("PASS");
}
