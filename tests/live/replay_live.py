#!/usr/bin/env python3
"""Replays the recorded live runs (shared/corpus/live, issue 23) against the built quarry and
counts how often the verify gate sent an honest answer back. Every answer in that corpus is
honest, so each send-back is a false reject.

    replay_live.py --quarry build/quarry [--corpus ../shared/corpus/live] [--max-send-backs N]

Prints one line per run and closes with 'N passed, N failed' (a run fails when it does not end
'answered' or when it had more send-backs than --max-send-backs, default 0). Exit 0 with a note
when the corpus is not there (a checkout without shared/).
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


def send_backs(trace):
    """final_answer calls that were not accepted."""
    return sum(1 for s in trace.get("steps", [])
               if s.get("kind") == "tool" and s.get("tool") == "final_answer"
               and s.get("observation") != "accepted")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quarry", default=str(REPO / "build" / "quarry"))
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus" / "live"))
    ap.add_argument("--max-send-backs", type=int, default=0)
    a = ap.parse_args()
    corpus = pathlib.Path(a.corpus)
    if not (corpus / "manifest.json").exists():
        print(f"replay_live: no corpus at {corpus}; nothing replayed")
        print("0 passed, 0 failed")
        return 0
    manifest = json.loads((corpus / "manifest.json").read_text())
    # Each file as the recordings saw it (readings.json says why).
    readings = json.loads((pathlib.Path(__file__).parent / "readings.json").read_text())["readings"]
    passed = failed = total_send_backs = 0
    with tempfile.TemporaryDirectory(prefix="quarry-live-") as runs:
        for entry in manifest:
            trace_in = corpus / entry["trace"]
            args = [a.quarry, "ask", "--replay", str(trace_in), "--runs-dir", runs]
            for d in entry["data"]:
                args += ["--data", str(REPO / d) + readings.get(d, {}).get("options", "")]
            args.append(entry["question"])
            p = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
            run_dir = None
            for line in (p.stdout + p.stderr).splitlines():
                if "trace:" in line:
                    run_dir = line.split("trace:", 1)[1].strip().split()[0]
            traces = sorted(pathlib.Path(runs).glob("*/trace.json"), key=lambda f: f.stat().st_mtime)
            trace = json.loads(traces[-1].read_text()) if traces else {}
            n = send_backs(trace)
            total_send_backs += n
            ok = p.returncode == 0 and trace.get("stop_reason") == "answered" and n <= a.max_send_backs
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {entry['trace']}: exit {p.returncode}, "
                  f"{trace.get('stop_reason', 'no trace')}, send-backs {n} "
                  f"(recorded {entry.get('send_backs_when_recorded', '?')})"
                  + ("" if ok else "\n" + p.stderr[-1500:]), flush=True)
    print(f"replay_live: {total_send_backs} send-back(s) over {len(manifest)} honest runs "
          f"(false-reject rate {total_send_backs / max(1, len(manifest)):.3f} per run)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
