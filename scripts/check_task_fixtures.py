#!/usr/bin/env python3
"""Replays every tasks/fixtures/<id>.json through `quarry ask --offline` and checks it.

  python3 scripts/check_task_fixtures.py QUARRY_BINARY

Per fixture: the run exits 0 (the verify gate accepted the answer, every number grounded);
a fixture with a repair (a failed query, then a fixed one) exits non-zero with
--no-self-correction, because that arm ends the run at the first failure; and the
answer gets the grade the fixture declares in "expected_grade" ("pass", or "fail" for the
deliberately wrong one) under a simple reading of the task's grader: numeric, every truth value
among the answer's numbers within tolerance; predicate, must_contain / must_not_contain on word
boundaries; judge, the majority of the scripted "judge_turns". This is a guard for the fixtures,
not the suite's grader (`quarry bench` grades with quarry's own number reader).
Exit 0 when every fixture behaves, 1 otherwise.
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


def numbers(text):
    return [float(m.group().replace(",", "")) for m in NUMBER.finditer(text)]


def contains(text, item):
    alternatives = item if isinstance(item, list) else [item]
    return any(re.search(r"(?<!\w)" + re.escape(a) + r"(?!\w)", text, re.IGNORECASE)
               for a in alternatives)


def grade(task, truth, answer, fixture):
    if task["grader"] == "numeric":
        tol = task["tolerance"]
        found = numbers(answer)
        for want in truth["values"]:
            limit = tol.get("abs", 0) + tol.get("rel", 0) * abs(want) + 1e-9
            if not any(abs(got - want) <= limit for got in found):
                return "fail"
        return "pass"
    if task["grader"] == "predicate":
        ok = all(contains(answer, i) for i in truth["must_contain"])
        ok = ok and not any(contains(answer, i) for i in truth.get("must_not_contain", []))
        return "pass" if ok else "fail"
    verdicts = [json.loads(t["content"])["verdict"] for t in fixture.get("judge_turns", [])]
    if len(verdicts) != 3:
        return "judge task fixture needs three judge_turns"
    return "pass" if verdicts.count("pass") >= 2 else "fail"


def ask(binary, task, runs, extra=()):
    cmd = [binary, "ask", "--offline", "--fixtures", str(ROOT / "tasks" / "fixtures"),
           "--runs-dir", runs, "--format", "json", *extra]
    for d in task["data"]:
        cmd += ["--data", d]
    cmd.append(task["question"])
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: python3 scripts/check_task_fixtures.py QUARRY_BINARY")
    suite = {t["id"]: t for t in json.loads((ROOT / "tasks" / "suite.json").read_text())["tasks"]}
    truth = json.loads((ROOT / "tasks" / "truth.json").read_text())["tasks"]
    problems, files = [], sorted((ROOT / "tasks" / "fixtures").glob("*.json"))
    with tempfile.TemporaryDirectory() as runs:
        for path in files:
            tid = path.stem
            fixture = json.loads(path.read_text())
            task = suite.get(tid)
            if task is None:
                problems.append(f"{tid}: no task of that id in tasks/suite.json")
                continue
            run = ask(argv[1], task, runs)
            if run.returncode != 0:
                problems.append(f"{tid}: quarry ask exited {run.returncode}: {run.stderr[-300:]}")
                continue
            result = json.loads(run.stdout)
            answer, repairs = result["answer"], result["totals"]["repair_attempts"]
            got, want = grade(task, truth[tid], answer, fixture), fixture.get("expected_grade")
            if got != want:
                problems.append(f"{tid}: graded {got}, fixture expects {want}: {answer!r}")
            if repairs and ask(argv[1], task, runs, ["--no-self-correction"]).returncode == 0:
                problems.append(f"{tid}: with --no-self-correction the repair fixture still "
                                "answered; its first query should fail and end the run")
            print(f"check_task_fixtures: {tid}: exit 0, {repairs} repair(s), graded {got}")
    for p in problems:
        print(f"check_task_fixtures: {p}", file=sys.stderr)
    if not files:
        problems.append("no fixtures")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
