#!/usr/bin/env python3
"""quarry's red-team regression: re-runs every attack of issue 22 end to end against the built
binary. Each tests/security/attack_*.py defines functions named attack_* taking a Context; an
attack that works raises AssertionError (the promise broke), one that is held returns.

    redteam.py --quarry build/quarry [--only attack_sandbox] [-k openat2]

Prints one line per attack and closes with 'N passed, N failed'. Exit 1 when any attack worked.
Only 127.0.0.1 is ever contacted: the model is a scripted OpenAI-compatible server started here.
"""
import argparse
import http.server
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


class ScriptedModel:
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers each chat request with the next
    scripted turn: {"tool": name, "args": {...}} for a tool call, or {"text": "..."}; after the
    last turn it repeats the last one. Requests are kept in `requests` for assertions."""

    def __init__(self, turns):
        self.turns = list(turns)
        self.requests = []
        self.lock = threading.Lock()
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, body):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with model.lock:
                    model.requests.append(body)
                    i = min(len(model.requests) - 1, len(model.turns) - 1)
                    turn = model.turns[i]
                message = {"role": "assistant", "content": turn.get("text")}
                finish = "stop"
                if "tool" in turn:
                    message["tool_calls"] = [{"id": f"call_{len(model.requests)}", "type": "function",
                                              "function": {"name": turn["tool"],
                                                           "arguments": json.dumps(turn.get("args", {}))}}]
                    finish = "tool_calls"
                self._send({"id": "x", "object": "chat.completion", "model": "scripted",
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Context:
    """What an attack gets: the binary, a fresh directory (the working directory of every run),
    and helpers that run quarry with a clean environment."""

    def __init__(self, quarry, workdir):
        self.quarry = quarry
        self.dir = pathlib.Path(workdir)
        self.repo = REPO
        self.models = []

    def env(self, model=None, extra=None):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.dir / "home"),
               "LANG": "C.UTF-8", "QUARRY_STREAM": "0"}
        (self.dir / "home").mkdir(exist_ok=True)
        if model is not None:
            env.update(QUARRY_BASE_URL=model.url, QUARRY_MODEL="scripted")
        env.update(extra or {})
        return env

    def model(self, turns):
        m = ScriptedModel(turns)
        self.models.append(m)
        return m

    def run(self, *args, model=None, env=None, input=None, timeout=120, cwd=None):
        """Runs quarry; returns CompletedProcess with text stdout/stderr (bytes decoded with
        replacement). A crash (exit >= 128 or a signal) is itself a failed attack."""
        p = subprocess.run([str(self.quarry), *map(str, args)], cwd=str(cwd or self.dir),
                           env=self.env(model, env), input=input, capture_output=True, timeout=timeout)
        p.stdout = p.stdout.decode("utf-8", "replace")
        p.stderr = p.stderr.decode("utf-8", "replace")
        assert p.returncode >= 0 and p.returncode < 128, \
            f"quarry {' '.join(map(str, args))[:200]} crashed: exit {p.returncode}\n{p.stderr[-2000:]}"
        return p

    def write(self, name, text, mode=0o644):
        path = self.dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        os.chmod(path, mode)
        return path

    def close(self):
        for m in self.models:
            m.close()


def load_attacks(only):
    attacks = []
    for file in sorted(HERE.glob("attack_*.py")):
        if only and file.stem not in only:
            continue
        spec = importlib.util.spec_from_file_location(file.stem, file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in sorted(dir(module)):
            if name.startswith("attack_") and callable(getattr(module, name)):
                attacks.append((file.stem, name, getattr(module, name)))
    return attacks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quarry", default=str(REPO / "build" / "quarry"))
    ap.add_argument("--only", action="append", help="an attack file's stem (repeatable)")
    ap.add_argument("-k", help="run only attacks whose name contains this")
    a = ap.parse_args()
    quarry = pathlib.Path(a.quarry).resolve()
    if not quarry.exists():
        sys.exit(f"redteam: {quarry} does not exist: build it first (cmake --build build --target quarry)")
    passed = failed = 0
    broken = []
    for stem, name, fn in load_attacks(a.only):
        if a.k and a.k not in name:
            continue
        tmp = tempfile.mkdtemp(prefix=f"quarry-redteam-{name}-")
        os.chmod(tmp, 0o700)
        ctx = Context(quarry, tmp)
        started = time.monotonic()
        try:
            fn(ctx)
            passed += 1
            print(f"held     {stem}.{name} ({time.monotonic() - started:.1f} s)", flush=True)
        except Exception:  # an AssertionError is a working attack; anything else is a broken test
            failed += 1
            print(f"BROKEN   {stem}.{name}\n" + traceback.format_exc(), flush=True)
            broken.append(f"{stem}.{name}: " + traceback.format_exc().strip().splitlines()[-1][:300])
        finally:
            ctx.close()
            shutil.rmtree(tmp, ignore_errors=True)
    # Again at the end, where a CI log's tail shows it.
    for line in broken:
        print("BROKEN   " + line)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
