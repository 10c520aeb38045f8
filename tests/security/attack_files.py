"""Issue 22, files: what quarry writes and reads on disk. Another local account that can write a
runs/ or cache directory, a trace someone sent, and run folders that pile up.

Tests run as root, so "another account" is a directory others can write (0777, 0770, 1777) or
files chown'ed to uid 65534."""
import base64
import json
import os
import pathlib
import shutil

VICTIM_TEXT = "export PATH=/usr/bin\n"
ANSWER = [{"tool": "run_sql", "args": {"sql": "SELECT region, sum(revenue) AS r FROM sales "
                                              "GROUP BY region ORDER BY r DESC LIMIT 1"}},
          {"tool": "final_answer", "args": {"answer": "North", "supporting_values": ["North"]}}]


def _victim(ctx):
    v = ctx.dir / "home" / ".bashrc"
    v.parent.mkdir(parents=True, exist_ok=True)
    v.write_text(VICTIM_TEXT)
    return v


def _sales(ctx):
    return shutil.copy(ctx.repo / "data" / "sales.csv", ctx.dir / "sales.csv")


def attack_shared_runs_dir_is_refused(ctx):
    """runs/ that other accounts can write: they could plant runs/<id> or links in it. quarry
    must refuse to write there (and say how to fix it), for every shape of shared."""
    victim = _victim(ctx)
    sales = _sales(ctx)
    for mode in (0o777, 0o770, 0o1777):
        runs = ctx.dir / "runs"
        shutil.rmtree(runs, ignore_errors=True)
        runs.mkdir()
        os.chmod(runs, mode)
        if mode == 0o770:  # a group others share (the user's own private group is theirs)
            os.chown(runs, -1, 65534)
        # The attacker's preparation: links under every name a run writes, in a planted folder.
        planted = runs / "planted"
        planted.mkdir()
        for name in ("trace.json.tmp", "events.jsonl", "trace.json"):
            os.symlink(victim, planted / name)
        p = ctx.run("ask", "--data", sales, "Which region sells most?", model=ctx.model(ANSWER))
        assert p.returncode != 0, f"mode {mode:o}: quarry wrote a run into a shared runs/"
        assert "refusing the runs directory runs" in p.stderr and "chmod 700" in p.stderr, p.stderr
        assert victim.read_text() == VICTIM_TEXT
        assert sorted(x.name for x in runs.iterdir()) == ["planted"], list(runs.iterdir())


def attack_runs_dir_of_another_uid_is_refused(ctx):
    if os.geteuid() != 0:
        return
    sales = _sales(ctx)
    runs = ctx.dir / "theirs"
    runs.mkdir(mode=0o755)
    os.chown(runs, 65534, 65534)
    p = ctx.run("ask", "--data", sales, "--runs-dir", runs, "Which region sells most?",
                model=ctx.model(ANSWER))
    assert p.returncode != 0 and "belongs to uid 65534" in p.stderr, p.stderr
    assert list(runs.iterdir()) == []


def attack_honest_runs_are_private(ctx):
    """The default path still works, and a trace (which holds data rows) is the user's alone."""
    sales = _sales(ctx)
    p = ctx.run("ask", "--data", sales, "Which region sells most?", model=ctx.model(ANSWER))
    assert p.returncode == 0, p.stderr
    runs = ctx.dir / "runs"
    assert (runs.stat().st_mode & 0o777) == 0o700
    [run] = [x for x in runs.iterdir() if x.is_dir()]
    assert (run.stat().st_mode & 0o777) == 0o700
    for name in ("trace.json", "events.jsonl"):
        assert ((run / name).stat().st_mode & 0o777) == 0o600, name


def attack_view_writes_no_link_planted_beside_a_trace(ctx):
    """`quarry view` of a run in someone else's folder writes trace.html beside it: a planted
    trace.html.tmp link must not redirect that write."""
    victim = _victim(ctx)
    sales = _sales(ctx)
    assert ctx.run("ask", "--data", sales, "Which region sells most?",
                   model=ctx.model(ANSWER)).returncode == 0
    shared = ctx.dir / "shared"
    shutil.copytree(ctx.dir / "runs", shared)
    os.chmod(shared, 0o777)
    [run] = [x for x in shared.iterdir() if x.is_dir()]
    os.chmod(run, 0o777)
    os.symlink(victim, run / "trace.html.tmp")
    p = ctx.run("view", run.name, "--runs-dir", shared)
    assert victim.read_text() == VICTIM_TEXT, "quarry view wrote through a planted link"
    assert p.returncode == 0, p.stderr
    assert not (run / "trace.html").is_symlink() and "<html" in (run / "trace.html").read_text()


def _cache_entries(d):
    return sorted(pathlib.Path(d).glob("*.duckdb"))


def attack_shared_cache_dir_is_refused(ctx):
    sales = _sales(ctx)
    for mode in (0o777, 0o770, 0o1777):
        cache = ctx.dir / f"cache-{mode:o}"
        cache.mkdir()
        os.chmod(cache, mode)
        if mode == 0o770:
            os.chown(cache, -1, 65534)
        p = ctx.run("cache", "build", sales, "--cache-dir", cache)
        assert p.returncode != 0 and "refusing the parse cache directory" in p.stderr, p.stderr
        q = ctx.run("sql", sales, "--cache-dir", cache, "SELECT count(*) FROM sales")
        assert q.returncode != 0 and "--cache-dir" in q.stderr, q.stderr
        for action in ("list", "clear"):
            r = ctx.run("cache", action, "--cache-dir", cache)
            assert r.returncode != 0 and "refusing the parse cache directory" in r.stderr, r.stderr
        assert list(cache.iterdir()) == []


def attack_forged_cache_entry_is_not_trusted(ctx):
    """The red team's poisoning: an entry under the key of sales.csv holding other rows and a
    made-up sha256. Planted files (another uid, writable by others, a link) are never used."""
    sales = _sales(ctx)
    forged_src = ctx.write("forged/sales.csv",
                           "order_id,order_date,region,revenue\n1,2024-01-01,North,1000000.0\n")
    mine, forge = ctx.dir / "cache", ctx.dir / "forge"
    assert ctx.run("cache", "build", sales, "--cache-dir", mine).returncode == 0
    assert ctx.run("cache", "build", forged_src, "--cache-dir", forge).returncode == 0
    [entry] = _cache_entries(mine)
    [fake] = _cache_entries(forge)
    meta = entry.with_suffix(".json")
    m = json.loads(meta.read_text())
    real_sha = m["sha256"]
    m["sha256"] = "f" * 64
    variants = ["mode"]
    if os.geteuid() == 0:
        variants += ["uid", "meta-uid"]
    variants.append("link")
    for v in variants:
        entry.unlink()
        meta.unlink()
        if v == "link":
            os.symlink(fake, entry)
        else:
            shutil.copy(fake, entry)
        meta.write_text(json.dumps(m))
        if v == "mode":
            os.chmod(entry, 0o666)
        elif v == "uid":
            os.chown(entry, 65534, 65534)
            os.chown(meta, 65534, 65534)
        elif v == "meta-uid":
            os.chown(meta, 65534, 65534)
        q = ctx.run("sql", sales, "--cache-dir", mine, "--format", "json",
                    "SELECT max(revenue) AS m FROM sales")
        assert q.returncode == 0, q.stderr
        assert "1000000" not in q.stdout, f"{v}: a forged cache entry was used: {q.stdout}"
        p = ctx.run("ask", "--data", sales, "--cache-dir", mine, "Which region sells most?",
                    model=ctx.model(ANSWER))
        assert p.returncode == 0, p.stderr
        [run] = sorted((ctx.dir / "runs").iterdir())[-1:]
        t = json.loads((run / "trace.json").read_text())
        assert t["sources"][0]["sha256"] == real_sha, f"{v}: {t['sources'][0]}"
        assert t["sources"][0]["cache"] == "miss", f"{v}: {t['sources'][0]}"


def attack_view_embeds_no_file_outside_the_run(ctx):
    """A trace someone sent names local images by absolute path (and by ../); a run folder with
    links out of it. `quarry view` embeds none of them."""
    secret = ctx.write("home/private/secret.svg",
                       "<svg xmlns='http://www.w3.org/2000/svg'><text>SECRET-4711</text></svg>")
    png = ctx.write("home/private/photo.png", b"\x89PNG\r\n\x1a\nSECRET-PNG")
    run = ctx.dir / "sent" / "20261129-120000-abcdef"
    (run / "workdir").mkdir(parents=True)
    os.symlink(secret, run / "link.svg")
    os.symlink(png, run / "workdir" / "wlink.png")
    trace = {"format_version": 1, "id": run.name, "question": "q", "steps": [],
             "artifacts": [str(secret), str(png), "../../home/private/secret.svg",
                           str(run / "link.svg"), str(run / "workdir" / "wlink.png")]}
    (run / "trace.json").write_text(json.dumps(trace))
    out = ctx.dir / "out.html"
    p = ctx.run("view", run / "trace.json", "--out", out)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    for data in (secret.read_bytes(), png.read_bytes()):
        assert base64.b64encode(data).decode() not in html, "a local file outside the run was embedded"
    assert "<figure>" not in html
    # workdir/ itself a link out of the run.
    shutil.rmtree(run / "workdir")
    os.symlink(secret.parent, run / "workdir")
    trace["artifacts"] = ["secret.svg", "photo.png"]
    (run / "trace.json").write_text(json.dumps(trace))
    assert ctx.run("view", run / "trace.json", "--out", out).returncode == 0
    assert "<figure>" not in out.read_text()


def attack_old_workdirs_are_pruned_but_runs_stay_viewable(ctx):
    """Retention: the sandbox's scratch in old runs' workdirs goes, their traces and figures
    stay; a link inside a workdir is removed, never followed."""
    sales = _sales(ctx)
    keep = ctx.write("home/keep.txt", "mine")
    runs = ctx.dir / "runs"
    old = runs / "20200101-120000-000001"
    (old / "workdir" / "sub").mkdir(parents=True)
    os.chmod(runs, 0o700)
    (old / "trace.json").write_text(json.dumps({"format_version": 1, "id": old.name,
                                                "question": "old", "steps": []}))
    (old / "workdir" / "fig.png").write_bytes(b"fig")
    (old / "workdir" / "big.parquet").write_bytes(b"x" * 65536)
    (old / "workdir" / "sub" / "a.txt").write_text("a")
    os.symlink(keep.parent, old / "workdir" / "out")
    env = {"QUARRY_KEEP_WORKDIRS": "1", "QUARRY_KEEP_WORKDIR_DAYS": "0"}
    p = ctx.run("ask", "--data", sales, "Which region sells most?", model=ctx.model(ANSWER), env=env)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in (old / "workdir").iterdir()) == ["fig.png"]
    assert keep.read_text() == "mine"
    assert ctx.run("trace", old.name).returncode == 0
    # The default keeps recent runs' workdirs: a fresh run's scratch survives the next run.
    p = ctx.run("ask", "--data", sales, "Which region sells most?", model=ctx.model(ANSWER))
    assert p.returncode == 0, p.stderr
    bad = ctx.run("ask", "--data", sales, "q", model=ctx.model(ANSWER),
                  env={"QUARRY_KEEP_WORKDIRS": "lots"})
    assert bad.returncode != 0 and "QUARRY_KEEP_WORKDIRS=lots" in bad.stderr, bad.stderr
