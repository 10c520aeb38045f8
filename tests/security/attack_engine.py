"""Issue 22, engines: data that attacks while it is opened, SQL hidden in strings, DuckDB's
./.tmp, and work that no timeout could stop. Each attack raises AssertionError when it works."""
import json
import os
import select
import signal
import sqlite3
import subprocess
import time


def _sqlite(ctx, name, script):
    path = ctx.dir / name
    db = sqlite3.connect(path)
    db.executescript(script)
    db.commit()
    db.close()
    return path


ENDLESS = ("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1), (2);"
           "CREATE VIEW endless AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
           "SELECT i FROM r;")


def attack_sqlite_endless_view_hangs_schema(ctx):
    """A view with an endless recursive CTE hung `quarry schema` for good."""
    db = _sqlite(ctx, "endless.sqlite", ENDLESS)
    started = time.monotonic()
    p = ctx.run("schema", "--timeout-ms", "1500", db, timeout=60)
    took = time.monotonic() - started
    assert p.returncode == 0, f"schema failed: {p.returncode} {p.stderr[-500:]}"
    assert took < 10, f"quarry schema took {took:.1f} s against a 1.5 s limit"
    assert "endless" in p.stdout and "took longer than 1500 ms" in p.stdout + p.stderr, \
        "the view that timed out is not noted:\n" + p.stdout[-1500:]


def attack_sqlite_endless_view_ignores_sigterm(ctx):
    """While opening such a view quarry ignored SIGTERM (it ran ~10 min until SIGKILL)."""
    db = _sqlite(ctx, "endless.sqlite", ENDLESS)
    proc = subprocess.Popen([str(ctx.quarry), "schema", "--timeout-ms", "600000", str(db)],
                            cwd=str(ctx.dir), env=ctx.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("quarry schema ignored SIGTERM while opening an endless view")
    assert proc.returncode != 0, "an interrupted open reported success"


def attack_sqlite_huge_strings_outrun_the_timeout(ctx):
    """900 MB strings: 10.5 GB of RSS and 80 s against a 10 s timeout."""
    db = _sqlite(ctx, "t.sqlite", "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1);")
    for sql in ["SELECT length(replace(hex(zeroblob(450000000)), '0', '00')) FROM t",
                "WITH RECURSIVE s(x, n) AS (SELECT 'x', 0 UNION ALL SELECT x || x, n + 1 FROM s "
                "WHERE n < 40) SELECT max(length(x)) FROM s"]:
        started = time.monotonic()
        p = ctx.run("sql", "--timeout-ms", "10000", db, sql, timeout=120)
        took = time.monotonic() - started
        assert p.returncode != 0, f"{sql} succeeded"
        assert took < 10, f"{sql} ran {took:.1f} s, past its 10 s timeout"
        assert "too big" in p.stdout + p.stderr, (p.stdout + p.stderr)[-500:]


def attack_duckdb_repeat_outruns_the_timeout(ctx):
    """repeat('x', 1e9) ran 90 s at 6.9 GB; its timeout was reported only at the end."""
    csv = ctx.write("t.csv", "a\n1\n2\n")
    for sql in ["SELECT repeat('x', 1e9)", "SELECT lpad('x', 1000000000, 'y')",
                "SELECT repeat(repeat('x', 100000), 10000) FROM t",
                "SELECT system.main.repeat('x', 1000000000)",
                "SELECT printf('%900000000d', 1)"]:
        started = time.monotonic()
        p = ctx.run("sql", "--timeout-ms", "10000", csv, sql, timeout=120)
        took = time.monotonic() - started
        assert p.returncode != 0, f"{sql} succeeded"
        assert took < 5, f"{sql} ran {took:.1f} s against a 10 s timeout"


def attack_query_in_a_string_reads_through_dot_tmp(ctx):
    """query('... read_text(''.tmp/...'') ...') passed the guard, and DuckDB's default temp
    directory ./.tmp is always readable: a bundle shipping `.tmp -> /` made every file readable."""
    os.symlink("/", ctx.dir / ".tmp")
    ctx.write("note.txt", "TOP-SECRET-NOTE\n")
    csv = ctx.write("t.csv", "a\n1\n")
    target = ".tmp" + str(ctx.dir / "note.txt")
    for sql in [f"SELECT * FROM query('SELECT content FROM read_text(''{target}'')')",
                f"SELECT * FROM query_table('{target}')",
                f"SELECT * FROM \"query\"('SELECT content FROM read_text(''{target}'')')",
                "SELECT * FROM json_execute_serialized_sql(json_serialize_sql("
                f"'SELECT content FROM read_text(''{target}'')'))"]:
        p = ctx.run("sql", csv, sql)
        assert "TOP-SECRET-NOTE" not in p.stdout + p.stderr, f"{sql} read the note"
        assert p.returncode != 0, f"{sql} succeeded"


def attack_mcp_endless_view_never_initializes(ctx):
    """`quarry mcp FILE` opened such a file with no bound at all: initialize was never answered
    (10 minutes here, then killed); then six such views cost 10 s each (a minute). Opening is
    bounded by the per-query timeout (10 s), the views share it, and their cards say why they
    have no statistics."""
    views = "".join(f"CREATE VIEW endless{k} AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL "
                    f"SELECT i + 1 FROM r) SELECT i FROM r;" for k in range(5))
    db = _sqlite(ctx, "endless.sqlite",
                 ENDLESS.replace("SELECT i FROM r", "SELECT count(*) AS n FROM r") + views)
    proc = subprocess.Popen([str(ctx.quarry), "mcp", str(db)], cwd=str(ctx.dir), env=ctx.env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        started = time.monotonic()
        send = lambda msg: (proc.stdin.write((json.dumps(msg) + "\n").encode()), proc.stdin.flush())
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "redteam", "version": "1"}}})
        ready, _, _ = select.select([proc.stdout], [], [], 45)
        assert ready, "initialize not answered within 45 s"
        first = json.loads(proc.stdout.readline())
        took = time.monotonic() - started
        assert first.get("id") == 0 and "result" in first, first
        assert took < 30, f"initialize took {took:.1f} s"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "describe_schema", "arguments": {}}})
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready, "describe_schema not answered"
        text = json.dumps(json.loads(proc.stdout.readline()))
        assert "endless" in text, text[:1500]
        assert text.count("share one opening budget") >= 4, text[:3000]
    finally:
        proc.kill()
        proc.wait()
