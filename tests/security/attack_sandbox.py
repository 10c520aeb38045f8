"""Issue 22, the Python sandbox area: setuid files by openat2, the scrub's chmod redirected by a
thread that outlives a warm-kernel call, the guard's unpickling and file-writing routes, and a
warm kernel that reads its guard from what user code can rebind. Each attack raises
AssertionError when it works. quarry runs as root here, so a setuid file it leaves is
setuid-root on the host."""
import json
import os
import pathlib
import stat


def _sales(ctx):
    return ctx.repo / "data" / "sales.csv"


def _setid_files(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(p)
    return found


OPENAT2 = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
for name, nr, args in [("f_openat2", 437, None), ("f_fchmodat2", 452, None)]:
    if nr == 437:
        how = How(os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o4777, 0)
        print(name, libc.syscall(437, -100, name.encode(), ctypes.byref(how), ctypes.sizeof(how)))
    else:
        open(name, "w").close()
        print(name, libc.syscall(452, -100, name.encode(), 0o4777, 0))
os.mkdir("d_sgid", 0o2777)
print("done")
"""


def attack_openat2_setuid_file(ctx):
    # The OS layer alone (ctypes is what a guard bypass gives): quarry python with the guard on
    # refuses ctypes, so this goes through the kernel with a script that only the OS must stop.
    # Here the one-shot CLI path: its guard refuses the import, and nothing is left behind.
    script = ctx.write("s.py", OPENAT2)
    runs = ctx.dir / "runs"
    p = ctx.run("python", "--runs-dir", runs, _sales(ctx), script)
    assert "import_allowlist" in p.stdout + p.stderr, p.stdout + p.stderr
    assert not _setid_files(runs), _setid_files(runs)


# The red team's chain, in one run_python call: unpickle through read_array's positional
# allow_pickle, from a file np.savetxt wrote byte for byte.
READ_ARRAY = ("import numpy as np\n"
              "payload = b'\\x93NUMPY\\x01\\x00v\\x00' + b'{\"descr\": \"|O\", \"fortran_order\": False, \"shape\": (1,), }'"
              ".ljust(118) + b'\\n'\n"
              "np.savetxt('x.npy', [payload.decode('latin-1')], fmt='%s', encoding='latin-1', newline='')\n"
              "f = open('x.npy', 'rb')\n"
              "print(np.lib.format.read_array(f, True))\n")


def attack_guard_read_array_positional_and_savetxt(ctx):
    script = ctx.write("s.py", READ_ARRAY)
    p = ctx.run("python", "--runs-dir", ctx.dir / "runs", _sales(ctx), script)
    out = p.stdout + p.stderr
    assert "guard_violation" in out and ("file_write" in out or "pickle_load" in out), out[-1500:]
    # Each half alone is refused too.
    for code, rule in (("import numpy as np\nf = open('x.npy', 'rb')\nnp.lib.format.read_array(f, True)\n",
                        "pickle_load"),
                       ("import numpy as np\nnp.savetxt('y.txt', ['a'], fmt='%s', encoding='latin-1')\n",
                        "file_write"),
                       ("import numpy as np\nnp.arange(3).tofile('z.bin')\n", "file_write"),
                       ("df.to_pickle('t.pkl')\n", "file_write")):
        s = ctx.write("one.py", code)
        q = ctx.run("python", "--runs-dir", ctx.dir / "runs", _sales(ctx), s)
        assert f"guard_violation ({rule})" in q.stdout + q.stderr, (code, q.stdout + q.stderr)


def attack_unpickle_past_the_ast_guard(ctx):
    # allow_pickle=True handed over by pandas' apply(args=...), which the AST cannot see.
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("PWNED-BY-PICKLE",))

    data = ctx.dir / "evil.pkl"
    data.write_bytes(pickle.dumps(Evil()))
    script = ctx.write("s.py", f"import numpy as np\ns = pd.Series([{str(data)!r}])\n"
                               "print(s.apply(np.load, args=(None, True)))\n")
    p = ctx.run("python", "--runs-dir", ctx.dir / "runs", _sales(ctx), data, script)
    assert "PWNED-BY-PICKLE" not in p.stdout, p.stdout[-1500:]


def _ask(ctx, codes, answer="done"):
    turns = [{"tool": "run_python", "args": {"code": c}} for c in codes]
    turns.append({"tool": "final_answer", "args": {"answer": answer, "supporting_values": [],
                                                   "assumptions": []}})
    m = ctx.model(turns)
    p = ctx.run("ask", "--runs-dir", ctx.dir / "runs", "--data", _sales(ctx), "What is the total?",
                model=m, timeout=240)
    observations = [msg.get("content") or "" for req in m.requests for msg in req.get("messages", [])
                    if msg.get("role") == "tool"]
    return p, observations


def attack_kernel_json_loads_turns_the_guard_off(ctx):
    p, obs = _ask(ctx, ["import json\nreal = json.loads\n"
                        "json.loads = lambda s, *a, **k: dict(real(s), guard=False)\nprint('rebound')",
                        "import os\nprint('OS', os.getpid())"])
    last = obs[-1] if obs else ""
    assert "OS " not in last, last[-1500:]
    assert "import_allowlist" in last, (obs, p.stdout[-1500:])


def attack_kernel_deque_empties_the_ast_walk(ctx):
    p, obs = _ask(ctx, ["import collections\nclass E:\n    def __init__(self, *a): pass\n"
                        "    def __bool__(self): return False\ncollections.deque = E\nprint('rebound')",
                        "import os\nprint('OS', os.getpid())"])
    last = obs[-1] if obs else ""
    assert "OS " not in last and "import_allowlist" in last, (obs, p.stdout[-1500:])


def attack_host_file_chmod_through_the_scrub(ctx):
    # The race needs code in the kernel between calls; the guard refuses threading, and the
    # scrub acts by descriptor. A root-owned 0600 host file must keep its mode whatever runs.
    secret = ctx.write("secret.txt", "x", mode=0o600)
    race = ("import os\nfor i in range(200):\n"
            "    try:\n        os.symlink(%r, 'l%%d' %% i)\n    except Exception as e:\n        pass\n"
            "print('linked')" % str(secret))
    p, obs = _ask(ctx, [race, "print(1)"])
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600, oct(os.stat(secret).st_mode)
    assert not _setid_files(ctx.dir / "runs"), _setid_files(ctx.dir / "runs")


# The outside red team: 70 nested directories (made by tarfile, reached as pd.io.common.tarfile)
# hid 601 MB from the quota, whose walk stopped at depth 64. Now the archive modules are refused
# by name; what lies deeper than the walk counts as past the quota (ScrubTest, in C++).
def attack_deep_directories_hide_files_from_the_quota(ctx):
    data = ctx.write("sales.csv", "region,amount\nNorth,1\n")
    script = ctx.write("tar.py", "tf = pd.io.common.tarfile\nprint(tf)\n")
    p = ctx.run("python", "--runs-dir", ctx.dir / "runs", data, script, timeout=120)
    assert "guard_violation" in (p.stdout + p.stderr), "tarfile was reachable:\n" + p.stderr[-1500:]
