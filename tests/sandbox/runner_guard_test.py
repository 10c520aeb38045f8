# Tests for src/quarry/sandbox/runner.py, run as the sandbox parent runs it: a child
# `python3 -I -c <runner source>` with the request on stdin. Without fd 3 the runner writes its
# result to stderr after "QUARRY_RESULT ". Run: python3 tests/sandbox/runner_guard_test.py
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "src", "quarry", "sandbox", "runner.py")
# The sandbox runs Debian's python3 (with python3-pandas); a pyenv python3 first on PATH lacks it.
PYTHON = os.environ.get("QUARRY_PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)

with open(RUNNER, encoding="utf-8") as f:
    RUNNER_SOURCE = f.read()


def run_runner(request, cwd=None, timeout=60):
    """Returns (result, stdout, stderr-without-the-result-line, exit code)."""
    proc = subprocess.run([PYTHON, "-I", "-c", RUNNER_SOURCE], input=json.dumps(request), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
    results = [l for l in proc.stderr.splitlines() if l.startswith("QUARRY_RESULT ")]
    if len(results) != 1:
        raise AssertionError(f"expected one QUARRY_RESULT line, stderr was:\n{proc.stderr}")
    stderr = "\n".join(l for l in proc.stderr.splitlines() if not l.startswith("QUARRY_RESULT "))
    return json.loads(results[0][len("QUARRY_RESULT "):]), proc.stdout, stderr, proc.returncode


def check(code, **extra):
    return run_runner(dict({"mode": "check", "code": code}, **extra))[0]


# (test name, forbidden code, rule, line, allowed twins). One test method each.
GUARD_CASES = [
    # import_allowlist
    ("import_os", "import os", "import_allowlist", 1,
     ["import pandas as pd", "from collections import Counter", "import matplotlib.pyplot as plt",
      "# import os\nx = 1", "s = 'import os'\nt = \"\"\"\nimport os\n\"\"\""]),
    ("import_os_path_as", "import os.path as p", "import_allowlist", 1, ["import numpy.linalg as la"]),
    ("from_os_import_system", "from os import system", "import_allowlist", 1, ["from math import sqrt"]),
    ("import_subprocess", "import json\nimport subprocess", "import_allowlist", 2, ["import json"]),
    ("relative_import", "from . import x", "import_allowlist", 1, ["from datetime import date"]),
    ("import_importlib", "import importlib", "import_allowlist", 1, ["import itertools"]),
    ("star_import", "from matplotlib.pyplot import *", "import_allowlist", 1,
     ["from matplotlib.pyplot import subplots"]),
    ("from_pandas_submodule_import_os", "from pandas.io.common import os", "module_attribute", 1,
     ["from pandas import json_normalize"]),
    ("import_numpy_ctypeslib", "import numpy.ctypeslib as c", "module_attribute", 1, ["import numpy.random as rnd"]),
    # forbidden_builtin
    ("eval_call", "eval('1 + 1')", "forbidden_builtin", 1, ["evaluation = 3\nprint(evaluation)"]),
    ("eval_reference", "f = eval", "forbidden_builtin", 1, ["f = print"]),
    ("exec_call", "exec('x = 1')", "forbidden_builtin", 1, ["executor = 1"]),
    ("compile_call", "compile('1', 'f', 'eval')", "forbidden_builtin", 1, ["import re\np = re.compile('a+')"]),
    ("dunder_import_call", "__import__('os')", "forbidden_builtin", 1, ["imported = 1"]),
    ("getattr_call", "getattr(pd, 'io')", "forbidden_builtin", 1, ["df.describe()"]),
    ("setattr_call", "setattr(df, 'x', 1)", "forbidden_builtin", 1, ["df['x'] = 1"]),
    ("delattr_call", "delattr(df, 'x')", "forbidden_builtin", 1, ["del df['x']"]),
    ("globals_call", "globals()", "forbidden_builtin", 1, ["global_total = 1"]),
    ("locals_call", "locals()", "forbidden_builtin", 1, ["local_rows = 1"]),
    ("vars_call", "vars()", "forbidden_builtin", 1, ["variables = []"]),
    ("breakpoint_call", "breakpoint()", "forbidden_builtin", 1, ["for i in range(3):\n    break"]),
    ("input_call", "input('name? ')", "forbidden_builtin", 1, ["input_rows = 3\nprint(input_rows)"]),
    # dunder_access
    ("subclasses_chain", "().__class__.__bases__[0].__subclasses__()", "dunder_access", 1,
     ["obj = df._values", "x = df._private"]),
    ("builtins_name", "print(__builtins__)", "dunder_access", 1, ["if __name__ == '__main__':\n    print(1)"]),
    ("dict_attribute", "x.__dict__", "dunder_access", 1, ["x.to_dict()"]),
    ("lambda_globals", "(lambda: 0).__globals__", "dunder_access", 1, ["(lambda: 0)()"]),
    ("generator_frame", "g = (i for i in [1])\nprint(g.gi_frame.f_back)", "dunder_access", 2,
     ["g = (i for i in [1])\nprint(next(g))"]),
    ("format_string_dunder", "'{0.__class__}'.format(1)", "dunder_access", 1, ["'{0:.2f} {1[a]}'.format(1.5, {'a': 1})"]),
    ("match_class_dunder", "match x:\n    case object(__class__=c):\n        pass", "dunder_access", 2,
     ["match x:\n    case {'a': 1}:\n        pass"]),
    ("dunder_alias", "import pandas as __builtins__", "dunder_access", 1, ["import pandas as pandas_"]),
    # module_attribute
    ("pandas_io_common_os", "pd.io.common.os.system('id')", "module_attribute", 1, ["s = pd.io.json.dumps({'a': 1})"]),
    ("numpy_npyio_os", "np.lib.npyio.os", "module_attribute", 1, ["np.linalg.norm([3, 4])"]),
    ("matplotlib_cbook_sys", "import matplotlib\nmatplotlib.cbook.sys.modules", "module_attribute", 2,
     ["import matplotlib\nmatplotlib.rcParams['figure.dpi'] = 100"]),
    ("numpy_ctypeslib", "np.ctypeslib", "module_attribute", 1, ["np.float64(1)"]),
    ("numpy_testing_runstring", "np.testing.runstring('x = 1', {})", "module_attribute", 1,
     ["np.testing.assert_allclose(1.0, 1.0)"]),
    ("column_attribute_named_like_a_module", "df.code.value_counts()", "module_attribute", 1,
     ["df['code'].value_counts()"]),
    ("collections_private_sys", "import collections\ncollections._sys.modules['os']", "module_attribute", 2,
     ["import collections\ncollections.Counter('ab')"]),
    ("io_module_behind_pandas", "pd.io.common.io.open('/tmp/x', 'w')", "module_attribute", 1,
     ["pd.io.json.read_json('a.json')", "import pandas as pandas_lib\npandas_lib.io.json.read_json('a.json')"]),
    ("io_module_after_rebinding_pd", "pd = pd.io.parquet\npd.io.open('x', 'w')", "module_attribute", 1,
     ["import pandas as pandas_lib\nframe = pandas_lib.io.json.read_json('a.json')"]),
    ("io_module_through_parameter", "def f(pd):\n    return pd.io.open('x', 'w')", "module_attribute", 2,
     ["def f(frame):\n    return pd.io.json.read_json('a.json')"]),
    ("from_submodule_import_io", "from pandas.io.parquet import io", "module_attribute", 1, ["from pandas import io"]),
    ("stdlib_types_module", "x.types.FunctionType", "module_attribute", 1, ["pd.api.types.is_numeric_dtype(df['a'])"]),
    ("dataclasses_exec_gadget", "pd.core.frame.dataclasses._create_fn('f', [], ['return 1'])", "module_attribute", 1,
     ["from pandas.core.frame import DataFrame"]),
    ("uuid_subprocess_gadget", "from pandas.core.common import uuid\nuuid._get_command_stdout('sh', '-c', 'id')",
     "module_attribute", 2, ["from pandas.core.common import flatten"]),
    ("agg_dunder_by_name", "df.agg('__class__')", "dunder_access", 1, ["df.agg('sum')"]),
    # open_literal
    ("open_absolute", "open('/etc/passwd')", "open_literal", 1, ["open('notes.txt')"]),
    ("open_home", "open('~/.ssh/id_rsa')", "open_literal", 1, ["open('sub/notes.txt')"]),
    ("open_parent", "open('../x')", "open_literal", 1, ["open('x..y.txt')"]),
    ("open_write", "open('out.txt', 'w')", "open_literal", 1, ["open('data.csv', 'rb')"]),
    ("open_variable", "name = 'a.txt'\nopen(name)", "open_literal", 2, ["open('notes.txt', encoding='utf-8')"]),
    ("open_mode_keyword_append", "open('a.txt', mode='a')", "open_literal", 1, ["open('a.txt', mode='rt')"]),
    ("open_other_keyword", "open('a.txt', opener=o)", "open_literal", 1, ["open('a.txt', newline='')"]),
    ("open_reference", "f = open", "open_literal", 1, ["with open('a.txt') as f:\n    text = f.read()"]),
    # query_eval_literal
    ("query_variable", "df.query(expr)", "query_eval_literal", 1, ["df.query('age > 30')"]),
    ("query_at_attribute_chain", "df.query(\"@pd.io.common.os.system('id')\")", "query_eval_literal", 1,
     ["df.query('age > 30 and region == \"north\"')"]),
    ("pd_eval_dunder_import", "pd.eval(\"__import__('os')\")", "query_eval_literal", 1, ["df.eval('c = a + b')"]),
    ("eval_method_variable", "df.eval(s)", "query_eval_literal", 1, ["pd.eval('1 + 2')"]),
    ("query_local_dict", "df.query('a > 1', local_dict=d)", "query_eval_literal", 1,
     ["df.query('a > 1', engine='python')"]),
    ("query_backtick", "df.query('`a b` > 1')", "query_eval_literal", 1, ["df.query('a > 1', inplace=True)"]),
    ("query_reference", "q = df.query", "query_eval_literal", 1, ["q = df.query('a > 1')"]),
    ("apply_by_name_eval", "df.apply('eval', expr='a')", "query_eval_literal", 1, ["df.apply('sum')"]),
    ("from_pandas_import_eval", "from pandas import eval as pe", "query_eval_literal", 1, ["from pandas import concat"]),
    # pickle_load
    ("read_pickle", "pd.read_pickle('x.pkl')", "pickle_load", 1, ["df.to_csv('x.csv')"]),
    ("allow_pickle", "np.load('x.npy', allow_pickle=True)", "pickle_load", 1, ["np.load('x.npy', allow_pickle=False)"]),
    # issue 22: allow_pickle is read_array's second positional argument
    ("read_array_positional", "f = open('x.npy', 'rb')\nnp.lib.format.read_array(f, True)", "pickle_load", 2,
     ["np.load('x.npy')"]),
    ("read_array_imported", "from numpy.lib.format import read_array as r", "pickle_load", 1,
     ["from numpy.lib.format import header_data_from_array_1_0"]),
    ("npzfile", "np.lib.npyio.NpzFile(open('x.npz', 'rb'), False, True)", "pickle_load", 1, ["np.load('x.npz')"]),
    ("read_hdf", "pd.read_hdf('x.h5')", "pickle_load", 1, ["pd.read_csv('x.csv')"]),
    ("load_star_args", "a = ['x.npy', None, True]\nnp.load(*a)", "pickle_load", 2, ["np.load('x.npy', 'r')"]),
    # file_write: library calls that open their own files
    ("savetxt_latin1", "np.savetxt('x.npy', [1], fmt='%s', encoding='latin-1', newline='')", "file_write", 1,
     ["print(np.array2string(np.arange(3)))"]),
    ("savetxt_imported", "from numpy import savetxt as s", "file_write", 1, ["from numpy import arange"]),
    ("tofile", "np.arange(3).tofile('x.bin')", "file_write", 1, ["np.arange(3).tolist()"]),
    ("np_save", "np.save('x.npy', np.arange(3))", "file_write", 1, ["np.sum(np.arange(3))"]),
    ("ndarray_dump", "np.arange(3).dump('x.pkl')", "file_write", 1, ["np.arange(3).copy()"]),
    ("open_memmap", "np.lib.format.open_memmap('x.npy', mode='w+', dtype='u1', shape=(9,))", "file_write", 1,
     ["np.zeros(9, dtype='u1')"]),
    ("memmap", "np.memmap('x.bin', mode='w+', shape=(9,))", "file_write", 1, ["np.zeros(9)"]),
    ("to_pickle", "df.to_pickle('x.pkl')", "file_write", 1, ["df.to_csv('x.csv')"]),
    ("to_parquet", "df.to_parquet('x.parquet')", "file_write", 1, ["df.to_json()"]),
    ("imsave", "plt.imsave('x.png', [[1]])", "file_write", 1, ["plt.savefig('x.png')"]),
    ("get_handle", "pd.io.common.get_handle('x', 'w')", "file_write", 1, ["pd.io.json.read_json"]),
]


class GuardTest(unittest.TestCase):
    def assert_violation(self, code, rule, line):
        result = check(code)
        self.assertEqual(result["status"], "guard_violation", f"{code!r} passed the guard: {result}")
        self.assertEqual(result["rule"], rule, result["message"])
        self.assertEqual(result["line"], line, result["message"])
        self.assertTrue(result["message"].startswith(f"guard_violation ({rule}): line {line}: "), result["message"])

    def assert_allowed(self, code):
        result = check(code)
        self.assertEqual(result["status"], "ok", f"{code!r} was refused: {result['message']}")

    def test_import_message_names_the_allowlist(self):
        self.assertEqual(check("import os")["message"],
                         "guard_violation (import_allowlist): line 1: import of 'os' is not allowed; allowed modules: "
                         "pandas, numpy, matplotlib, json, math, datetime, re, statistics, collections, itertools")

    def test_allowlist_comes_from_the_request(self):
        self.assertEqual(check("import math", allowed_modules=["pandas"])["rule"], "import_allowlist")
        self.assertEqual(check("import os", allowed_modules=["os"])["status"], "ok")

    def test_first_violation_by_line_is_reported(self):
        result = check("x = 1\nf = eval\nimport os\n")
        self.assertEqual((result["rule"], result["line"]), ("forbidden_builtin", 2))
        result = check("import subprocess; y = exec")
        self.assertEqual((result["rule"], result["line"]), ("import_allowlist", 1))

    def test_guard_off_skips_the_guard(self):
        self.assertEqual(check("import os", guard=False)["status"], "ok")

    def test_check_mode_reports_syntax_error_with_line(self):
        result = check("x = 1\ny = = 2\n")
        self.assertEqual((result["status"], result["line"]), ("syntax_error", 2))
        self.assertTrue(result["message"].startswith("syntax_error: line 2: "), result["message"])
        result = check("return 5")  # rejected by compile(), not by ast.parse()
        self.assertEqual((result["status"], result["line"]), ("syntax_error", 1))

    def test_result_goes_to_fd_3_when_open(self):
        read_end, write_end = os.pipe()
        proc = subprocess.run([PYTHON, "-I", "-c", RUNNER_SOURCE], input=json.dumps({"mode": "check", "code": "import os"}),
                              capture_output=True, text=True, timeout=60, close_fds=False,
                              preexec_fn=lambda: os.dup2(write_end, 3))
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            written = pipe.read()
        self.assertEqual(proc.returncode, 0)
        self.assertNotIn("QUARRY_RESULT", proc.stderr)
        self.assertEqual(json.loads(written)["rule"], "import_allowlist")

    def test_open_wrapper_refuses_what_the_guard_refuses(self):
        # The runner's definitions without its main(): safe_open is what the code gets as open().
        scope = {}
        exec(RUNNER_SOURCE[:RUNNER_SOURCE.rindex("\nmain()")], scope)
        safe_open = scope["safe_open"]
        for args, kwargs in [(("out.txt", "w"), {}), (("a.txt", "a"), {}), (("a.txt", "r+"), {}),
                             (("/etc/hostname",), {}), (("../x",), {}), (("~/x",), {}), ((3,), {}),
                             (("a\x00b",), {}), (("a.txt",), {"opener": lambda p, f: 0}), (("a.txt",), {"closefd": False})]:
            with self.subTest(args=args, kwargs=kwargs), self.assertRaises(PermissionError) as caught:
                safe_open(*args, **kwargs)
            self.assertIn("open_literal", str(caught.exception))
        with tempfile.TemporaryDirectory() as tmp:
            here = os.getcwd()
            os.chdir(tmp)
            try:
                with open("notes.txt", "w") as f:
                    f.write("ok")
                with safe_open("notes.txt", "rt", encoding="utf-8") as f:
                    self.assertEqual(f.read(), "ok")
            finally:
                os.chdir(here)

    def test_bad_request_is_an_internal_error(self):
        proc = subprocess.run([PYTHON, "-I", "-c", RUNNER_SOURCE], input="not json", capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn('"status": "internal_error"', proc.stderr)


def _make_guard_test(code, rule, line, twins):
    def test(self):
        self.assert_violation(code, rule, line)
        for twin in twins:
            self.assert_allowed(twin)
    return test


for _name, _code, _rule, _line, _twins in GUARD_CASES:
    setattr(GuardTest, "test_guard_" + _name, _make_guard_test(_code, _rule, _line, _twins))


class RunTest(unittest.TestCase):
    """Run mode: these import pandas in the child (about a second each)."""

    @classmethod
    def setUpClass(cls):
        probe = subprocess.run([PYTHON, "-I", "-c", "import pandas, numpy, matplotlib"], capture_output=True, text=True)
        if probe.returncode != 0:
            raise AssertionError(f"{PYTHON} cannot import pandas/numpy/matplotlib (Debian: python3-pandas "
                                 f"python3-numpy python3-matplotlib): {probe.stderr.strip()}")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="quarry-runner-test-")
        self.addCleanup(shutil.rmtree, self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_csv_table_loads_with_engine_types(self):
        path = self.write("sales.csv", "id,price,day,region,paid\n1,2.50,2024-01-02,north,true\n,3,2024-01-03,007,false\n")
        table = {"name": "sales", "path": path, "format": "csv", "delimiter": ",", "header": True,
                 "columns": [["id", "BIGINT"], ["price", "DECIMAL(10,2)"], ["day", "DATE"], ["region", "VARCHAR"],
                             ["paid", "BOOLEAN"]]}
        code = ("print(df is tables['sales'])\nprint(dict(df.dtypes.astype(str)))\n"
                "print(df['region'].tolist(), df['price'].sum(), df['id'].isna().sum())")
        result, out, err, _ = run_runner({"mode": "run", "code": code, "tables": [table]}, cwd=self.dir)
        self.assertEqual(result["status"], "ok", result["message"] + err)
        self.assertEqual(result["tables_loaded"], ["sales"])
        self.assertEqual(out.splitlines(), [
            "True",
            "{'id': 'Int64', 'price': 'float64', 'day': 'datetime64[ns]', 'region': 'object', 'paid': 'boolean'}",
            "['north', '007'] 5.5 1"])

    def test_other_formats_load_or_explain(self):
        tsv = self.write("plain.tsv", "a\t1\nb\t2\n")
        events = self.write("events.json", '{"kind": "x", "n": 1}\n{"kind": "y", "n": 2}\n')
        self.write("t.parquet", "not really parquet")
        db = os.path.join(self.dir, "shop.sqlite")
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE orders (id INTEGER, total REAL)")
            conn.execute("INSERT INTO orders VALUES (1, 9.5), (2, 0.5)")
        conn.close()
        tables = [
            {"name": "plain", "path": tsv, "format": "tsv", "delimiter": "\t", "header": False,
             "columns": [["column0", "VARCHAR"], ["column1", "BIGINT"]]},
            {"name": "events", "path": events, "format": "json", "columns": [["kind", "VARCHAR"], ["n", "BIGINT"]]},
            {"name": "t", "path": os.path.join(self.dir, "t.parquet"), "format": "parquet", "columns": []},
            {"name": "shop", "path": db, "format": "sqlite", "columns": []},
            {"name": "wh", "path": db, "format": "duckdb", "columns": []},
        ]
        code = ("try:\n    df\nexcept NameError:\n    print('no df')\n"
                "print(sorted(tables))\nprint(tables['plain'].columns.tolist(), tables['plain']['column1'].sum())\n"
                "print(tables['events']['n'].sum(), tables['orders']['total'].sum())")
        result, out, err, _ = run_runner({"mode": "run", "code": code, "tables": tables}, cwd=self.dir)
        self.assertEqual(result["status"], "ok", result["message"] + err)
        self.assertEqual(out.splitlines(), ["no df", "['events', 'orders', 'plain']", "['column0', 'column1'] 3", "3 10.0"])
        notes = "\n".join(result["notes"])
        try:
            import importlib.util
            has_pyarrow = importlib.util.find_spec("pyarrow") is not None and PYTHON == sys.executable
        except ImportError:
            has_pyarrow = False
        if not has_pyarrow:
            self.assertIn("parquet table t is not available in Python: pyarrow is not installed; use run_sql", notes)
        self.assertIn("duckdb table wh is not available in Python; use run_sql", notes)

    def test_last_is_built_from_the_rows(self):
        last = {"columns": ["region", "n", "avg", "first_day"], "types": ["VARCHAR", "BIGINT", "DOUBLE", "DATE"],
                "rows": [["north", "3", "1.5", "2024-01-01"], [None, None, None, None], ["south", "4", "2.5", "2024-02-01"]]}
        code = ("print(last['n'].sum(), last['avg'].mean(), last['region'].tolist())\n"
                "print(dict(last.dtypes.astype(str)))\nraise SystemExit(0)\nprint('not reached')")
        result, out, err, _ = run_runner({"mode": "run", "code": code, "last": last})
        self.assertEqual(result["status"], "ok", result["message"] + err)
        self.assertEqual(out.splitlines(), [
            "7 2.0 ['north', None, 'south']",
            "{'region': 'object', 'n': 'Int64', 'avg': 'float64', 'first_day': 'datetime64[ns]'}"])

    def test_runtime_error_shows_only_user_frames(self):
        # 30 nested calls make a traceback longer than the 40 lines kept.
        chain = "".join(f"def f{i}(d):\n    return f{i + 1}(d)\n" for i in range(30))
        code = chain + "def f30(d):\n    return d['missing']\n\nf0(pd.DataFrame({'a': [1]}))\n"
        result, out, err, _ = run_runner({"mode": "run", "code": code})
        self.assertEqual(result["status"], "runtime_error")
        self.assertEqual(result["line"], 62)
        message = result["message"]
        self.assertTrue(message.startswith("runtime_error: ... ("), message[:80])
        self.assertIn("earlier lines cut)", message.splitlines()[0])
        self.assertEqual(message.splitlines()[-1], "KeyError: 'missing'")
        self.assertLessEqual(len(message.splitlines()), 41)
        for text in (message, err):
            files = [l for l in text.splitlines() if l.strip().startswith("File ")]
            self.assertTrue(files)
            self.assertTrue(all('"<analysis>"' in l for l in files), files)
        self.assertTrue(err.startswith("Traceback (most recent call last):"), err[:80])
        self.assertEqual(err.splitlines()[-1], "KeyError: 'missing'")
        self.assertEqual(out, "")

    def test_open_reads_with_guard_on_and_is_plain_with_guard_off(self):
        self.write("in.txt", "hello")
        result, out, err, _ = run_runner({"mode": "run", "code": "print(open('in.txt').read())"}, cwd=self.dir)
        self.assertEqual((result["status"], out), ("ok", "hello\n"), result["message"] + err)
        # Guard off is the Python layer off (the escape corpus proves the OS layer alone): plain open().
        code = "name = 'out.txt'\nopen(name, 'w').write('x')\nprint('written')"
        result, out, err, _ = run_runner({"mode": "run", "code": code, "guard": False}, cwd=self.dir)
        self.assertEqual((result["status"], out), ("ok", "written\n"), result["message"] + err)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "out.txt")))

    def test_runtime_guard_refuses_unpickling_by_any_route(self):
        # A pickle that would run print('PWNED') when loaded, reached past the AST guard through
        # a positional argument handed over by pandas' apply (args=...).
        import pickle
        class Evil:
            def __reduce__(self):
                return (print, ("PWNED",))
        with open(os.path.join(self.dir, "x.pkl"), "wb") as f:
            pickle.dump(Evil(), f)
        code = "s = pd.Series(['x.pkl'])\nprint(s.apply(np.load, args=(None, True)))"
        result, out, err, _ = run_runner({"mode": "run", "code": code}, cwd=self.dir)
        self.assertNotIn("PWNED", out)
        self.assertEqual(result["status"], "runtime_error", result)
        # numpy re-raises the hook's refusal as "Failed to interpret file 'x.pkl' as a pickle".
        self.assertIn("pickle", result["message"])

    def test_runtime_guard_keeps_writes_in_the_work_directory(self):
        os.symlink("/tmp/quarry-runner-outside", os.path.join(self.dir, "link.csv"))
        code = ("df = pd.DataFrame({'a': [1, 2]})\n"
                "df.to_csv('out.csv', index=False)\n"
                "plt.plot([1, 2]); plt.savefig('fig.png')\n"
                "for target in ['/tmp/quarry-runner-outside.csv', 'link.csv', '../escape.csv']:\n"
                "    try:\n"
                "        df.to_csv(target)\n"
                "        print('wrote', target)\n"
                "    except PermissionError as e:\n"
                "        print('refused', target, 'file_write' in str(e))\n")
        result, out, err, _ = run_runner({"mode": "run", "code": code}, cwd=self.dir)
        self.assertEqual(result["status"], "ok", result["message"] + err)
        self.assertEqual(out.splitlines(), ["refused /tmp/quarry-runner-outside.csv True", "refused link.csv True",
                                            "refused ../escape.csv True"])
        with open(os.path.join(self.dir, "out.csv")) as f:
            self.assertEqual(f.read(), "a\n1\n2\n")
        self.assertTrue(os.path.getsize(os.path.join(self.dir, "fig.png")) > 1000)
        self.assertFalse(os.path.exists("/tmp/quarry-runner-outside"))
        self.assertFalse(os.path.exists("/tmp/quarry-runner-outside.csv"))

    def test_the_request_cannot_turn_the_kernel_guard_off(self):
        # The kernel reads its guard from QUARRY_GUARD at start; a request's "guard": false is ignored.
        env = dict(os.environ, QUARRY_KERNEL="1")
        frames = b""
        for message in ({"kind": "load", "tables": []},
                        {"kind": "run", "id": 1, "code": "import os", "guard": False}):
            body = json.dumps(message).encode()
            frames += str(len(body)).encode() + b"\n" + body
        proc = subprocess.run([PYTHON, "-I", "-c", RUNNER_SOURCE], input=frames, cwd=self.dir, env=env,
                              capture_output=True, timeout=60, pass_fds=())
        # Without fd 3 the kernel writes frames to stderr's marker stream: find the result.
        text = proc.stderr.decode("utf-8", "replace")
        self.assertIn('"status": "guard_violation"', text, text[-2000:])

    def test_run_mode_stops_at_syntax_error(self):
        result, _, _, _ = run_runner({"mode": "run", "code": "print(1)\nif x\n"})
        self.assertEqual((result["status"], result["line"]), ("syntax_error", 2))
        self.assertTrue(result["message"].startswith("syntax_error: line 2: "), result["message"])


if __name__ == "__main__":
    program = unittest.main(exit=False, verbosity=1)
    outcome = program.result
    failed = len(outcome.failures) + len(outcome.errors)
    print(f"{outcome.testsRun - failed - len(outcome.skipped)} passed, {failed} failed")
    sys.exit(1 if failed or not outcome.wasSuccessful() else 0)
