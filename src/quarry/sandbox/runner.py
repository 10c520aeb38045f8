# quarry's sandbox runner: runs INSIDE the isolated child as `python3 -I -c <this source>`.
# Reads one JSON request on stdin, applies the Python guard (the first, message-giving layer;
# the OS sandbox is the boundary), runs the code, and writes one JSON result to fd 3.
import ast
import builtins
import json
import linecache
import os
import re
import sys
import traceback

DEFAULT_ALLOWED = ["pandas", "numpy", "matplotlib", "json", "math", "datetime", "re",
                   "statistics", "collections", "itertools"]
FORBIDDEN_BUILTINS = {"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr",
                      "globals", "locals", "vars", "breakpoint", "input"}
# Attribute names that lead out of the allowlist: modules that allowed modules import (found by
# scanning pandas/numpy/matplotlib, e.g. pd.io.common.os, collections._sys, pickle_compat.pkl)
# and functions that exec, eval, import, getattr or spawn. The guard cannot know the receiver's
# type, so the name alone is refused (a column named like one is read with df['name']).
BLOCKED_ATTRS = {
    "os", "sys", "_sys", "subprocess", "builtins", "_builtins", "ctypes", "_ctypes", "ctypeslib",
    "importlib", "socket", "shutil", "pathlib", "pickle", "pkl", "marshal", "posix", "posixpath",
    "signal", "threading", "_thread", "multiprocessing", "urllib", "http", "glob", "tempfile",
    "runpy", "code", "pty", "resource", "gc", "inspect", "types", "sysconfig", "platform", "codecs",
    "_io", "distutils", "f2py", "asyncio", "_posixsubprocess", "mmap", "fcntl", "select",
    "selectors", "zipimport", "webbrowser", "shelve", "dbm", "pkgutil", "operator", "_operator",
    "typing", "dataclasses", "logging", "sqlite3", "pickle_compat",
    # Archive modules pandas imports: extractall makes links, devices and trees of any depth.
    "tarfile", "zipfile", "shutil_unpack",
    "runstring", "_create_fn", "get_type_hints", "ForwardRef", "_get_command_stdout",
    "attrgetter", "methodcaller", "get_field", "load_extension", "enable_load_extension"}
# Frame and code attributes reach the runner's globals without a single dunder.
FRAME_ATTRS = {"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "f_globals",
               "f_locals", "f_builtins", "f_back", "f_code", "tb_frame", "tb_next"}
READ_MODES = {"r", "rb", "rt"}
OPEN_KEYWORDS = {"mode", "encoding", "newline", "errors"}
QUERY_KEYWORDS = {"local_dict", "global_dict", "resolvers", "engine"}
# pandas methods that look a method up by its string name (df.agg("eval", ...)).
BY_NAME_METHODS = {"apply", "agg", "aggregate", "transform", "pipe", "map", "applymap"}
FORMAT_DUNDER = re.compile(r"\{[^{}]*(\.__|\.(?:%s)\b)" % "|".join(sorted(FRAME_ATTRS)))
# Pickle's entry points (any call by any name) and calls that write files on their own, past
# safe_open: what the model wants handed back goes through df.to_csv or plt.savefig, whose path
# the runtime guard checks (inside the work directory, no link followed).
PICKLE_NAMES = {"read_pickle", "read_array", "NpzFile", "read_hdf", "HDFStore", "Unpickler"}
WRITER_NAMES = {"savetxt", "tofile", "save", "savez", "savez_compressed", "dump", "memmap",
                "open_memmap", "write_array", "DataSource", "_datasource", "imsave", "to_pickle",
                "to_parquet", "to_feather", "to_hdf", "to_stata", "to_excel", "ExcelWriter",
                "to_orc", "to_clipboard", "to_sql", "get_handle", "to_filehandle", "open_file_cm",
                "json_dump", "write_to_compressed", "ensure_clean"}
# Everything the runner uses after user code may have run is taken now: user code can reach and
# rebind shared modules' attributes (json.loads, re.split, collections.deque), never these names.
_real_open = builtins.open
_dumps = json.dumps
_loads = json.loads
_isinstance, _str, _int, _bytes = isinstance, str, int, bytes


def is_dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def path_problem(path):
    """Why open() may not take `path` (shared by the guard and the runtime wrapper). Only str
    methods: a module function could have been rebound by the code."""
    if not path or "\x00" in path:
        return "the path is empty or contains a NUL byte"
    if path.startswith(("/", "~", "\\")):
        return "the path is absolute or starts with '~'; use a path relative to the work directory"
    if ".." in path.replace("\\", "/").split("/"):
        return "the path has a '..' component"
    return None


def is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def is_str(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def open_problem(call):
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return "its arguments must be written out (no *args or **kwargs)"
    if not call.args or not is_str(call.args[0]):
        return "the path must be a string literal, not an expression"
    if len(call.args) > 2:
        return "only the path and the mode may be positional"
    if path_problem(call.args[0].value):
        return path_problem(call.args[0].value) + f" (found {call.args[0].value!r})"
    mode = call.args[1] if len(call.args) == 2 else None
    for kw in call.keywords:
        if kw.arg not in OPEN_KEYWORDS or not isinstance(kw.value, ast.Constant):
            return f"the keyword '{kw.arg}' is not allowed (only mode, encoding, newline, errors, as literals)"
        mode = kw.value if kw.arg == "mode" else mode
    if mode is not None and not (isinstance(mode, ast.Constant) and mode.value in READ_MODES):
        shown = repr(mode.value) if isinstance(mode, ast.Constant) else "an expression"
        return f"the mode must be 'r', 'rb' or 'rt' (found {shown}); write files with pandas or matplotlib"
    return None


def query_problem(call):
    expr = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "expr"), None)
    if not is_str(expr):
        return "its expression must be a string literal"
    bad = [t for t in ("@", "__", "import", "`") if t in expr.value]
    if bad:
        return f"its expression may not contain {', '.join(map(repr, bad))}; use boolean indexing instead"
    for kw in call.keywords:
        if kw.arg is None or (kw.arg in QUERY_KEYWORDS and not is_literal(kw.value)):
            return f"the keyword '{kw.arg or '**'}' must be a literal"
    return None


def bound_names(tree):
    """Names bound other than by assignment: parameters, defs, except/match targets, non-pandas imports."""
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in n.names
                      if not (isinstance(n, ast.Import) and a.name == "pandas")}
    return names


def run_guard(tree, allowed):
    """All violations as (line, col, order, rule, text), sorted: the first is reported."""
    found, allowed_set, allowed_text = [], set(allowed), ", ".join(allowed)
    blocked = BLOCKED_ATTRS - allowed_set
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # pd.io is pandas' reader namespace; any other .io (pd.io.common.io.open) is the io module.
    # The exemption holds only for names never bound to anything else (pd = pd.io.parquet).
    pandas_names = {"pd", "pandas"} | {a.asname for n in ast.walk(tree) if isinstance(n, ast.Import)
                                       for a in n.names if a.name == "pandas" and a.asname}
    pandas_names -= bound_names(tree) | {n.id for n in ast.walk(tree)
                                         if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}

    def hit(node, rule, text):
        found.append((getattr(node, "lineno", 0) or 0, getattr(node, "col_offset", 0), len(found), rule, text))

    def name_rule(name):
        """The rule an attribute or imported name breaks, if any."""
        if is_dunder(name) or name in FRAME_ATTRS:
            return "dunder_access", f"'{name}' is not allowed (dunder and frame attributes expose interpreter internals)"
        if name in blocked:
            return "module_attribute", (f"'{name}' reaches a module outside the allowlist; allowed modules: "
                                        f"{allowed_text} (for a column named '{name}' use df['{name}'])")
        if name in PICKLE_NAMES:
            return "pickle_load", f"{name} can unpickle, which runs arbitrary code; read data with read_csv or read_json"
        if name in WRITER_NAMES:
            return "file_write", (f"'{name}' writes files on its own; write a table with df.to_csv('name.csv') "
                                  "or a figure with plt.savefig('name.png'), in the work directory")
        return None

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.level:
                hit(node, "import_allowlist", "relative imports are not allowed; allowed modules: " + allowed_text)
                continue
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for module in modules:
                parts = module.split(".")
                if parts[0] not in allowed_set:
                    hit(node, "import_allowlist", f"import of '{parts[0]}' is not allowed; allowed modules: {allowed_text}")
                elif any(name_rule(p) for p in parts[1:]):  # import numpy.ctypeslib as c
                    hit(node, *next(name_rule(p) for p in parts[1:] if name_rule(p)))
            for alias in node.names:
                if alias.asname and is_dunder(alias.asname):
                    hit(node, "dunder_access", f"binding the name '{alias.asname}' is not allowed")
                if isinstance(node, ast.Import) or parts[0] not in allowed_set:
                    continue
                if alias.name == "*":  # would bind whatever the module imported (pyplot's sys)
                    hit(node, "import_allowlist", f"'from {node.module} import *' is not allowed; import names explicitly")
                elif alias.name in ("eval", "query"):  # pandas.eval under another name
                    hit(node, "query_eval_literal", f"importing '{alias.name}' is not allowed; call "
                        f"df.{alias.name}(...) or pd.eval(...) directly with a literal expression")
                elif alias.name in FORBIDDEN_BUILTINS:
                    hit(node, "forbidden_builtin", f"importing '{alias.name}' is not allowed")
                elif name_rule(alias.name):
                    hit(node, *name_rule(alias.name))
                elif alias.name == "io" and node.module != "pandas":  # from pandas.io.parquet import io
                    hit(node, "module_attribute", f"importing 'io' from {node.module} reaches the io module; "
                        f"allowed modules: {allowed_text}")
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_BUILTINS and isinstance(node.ctx, ast.Load):
                hit(node, "forbidden_builtin", f"'{node.id}' is not available in the sandbox"
                    + ("; access attributes directly (obj.name)" if "attr" in node.id else ""))
            elif is_dunder(node.id) and node.id != "__name__":  # __name__ is only a string
                hit(node, "dunder_access", f"the name '{node.id}' is not allowed (dunder names are blocked)")
            elif node.id == "open" and id(node) not in called:
                hit(node, "open_literal", "open may only be called directly, as open('relative/path')")
        elif isinstance(node, ast.Attribute):
            value = node.value
            if name_rule(node.attr) and not (node.attr == "types" and isinstance(value, ast.Attribute)
                                             and value.attr == "api"):  # pd.api.types is pandas'
                hit(node, *name_rule(node.attr))
            elif node.attr == "io" and not (isinstance(value, ast.Name) and value.id in pandas_names):
                hit(node, "module_attribute", "'.io' is only allowed on pandas itself (pd.io, with pd never "
                    "reassigned); allowed modules: " + allowed_text)
            elif node.attr in ("query", "eval") and id(node) not in called:
                hit(node, "query_eval_literal", f".{node.attr} must be called directly with a literal expression")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open" and open_problem(node):
                hit(node, "open_literal", "open() needs a literal relative path and a read mode: " + open_problem(node))
            elif isinstance(func, ast.Attribute) and func.attr in ("query", "eval") and query_problem(node):
                hit(node, "query_eval_literal", f".{func.attr}() is restricted: {query_problem(node)}")
            elif isinstance(func, ast.Attribute) and func.attr in BY_NAME_METHODS:
                for arg in list(node.args) + [k.value for k in node.keywords]:
                    if is_str(arg) and arg.value in ("eval", "query"):
                        hit(node, "query_eval_literal", f"passing '{arg.value}' by name to .{func.attr}() is not allowed")
                    elif is_str(arg) and name_rule(arg.value):  # df.agg("__class__") is getattr
                        hit(node, *name_rule(arg.value))
            for kw in node.keywords:
                if kw.arg == "allow_pickle" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                    hit(node, "pickle_load", "allow_pickle can run arbitrary code; leave it False")
            # np.load(f, None, True): allow_pickle is also the third positional argument, and
            # *args/**kwargs could carry it unseen. (Any unpickling is also refused at run time.)
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name == "load" and (
                    len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args)
                    or any(k.arg is None for k in node.keywords)):
                hit(node, "pickle_load", ".load() takes at most (file, mmap_mode) here: allow_pickle stays False")
        elif isinstance(node, ast.MatchClass):  # case C(__class__=x) reads an attribute too
            for attr in node.kwd_attrs:
                if name_rule(attr):
                    hit(node, *name_rule(attr))
        elif is_str(node) and FORMAT_DUNDER.search(node.value):  # "{0.__class__}".format(x)
            hit(node, "dunder_access", "a format string may not reach dunder or frame attributes")
    return sorted(found)


def engine_kind(engine_type):
    """The pandas treatment of a DuckDB (or SQLite declared) column type."""
    t = (engine_type or "").upper().strip()
    base = t.split("(")[0].strip()
    if t.endswith("]") or base.startswith(("STRUCT", "MAP", "UNION", "LIST")):
        return "str"
    if "INT" in base and "INTERVAL" not in base and "POINT" not in base:  # SQLite's affinity rule
        return "int"
    for kind, prefixes in (("float", ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC")),
                           ("bool", ("BOOL",)), ("date", ("DATE", "TIMESTAMP"))):
        if base.startswith(prefixes):
            return kind
    return "str"


def convert(pd, series, kind):
    if kind == "int":
        return pd.to_numeric(series).astype("Int64")
    if kind == "float":
        # float() reads what the engines write for non-finite values ("nan", "inf", "-inf"),
        # which pandas' parsers refuse when NA words are off.
        return series.map(lambda v: float(v) if isinstance(v, str) else v).astype(float)
    if kind == "bool":
        words = {"true": True, "t": True, "1": True, "false": False, "f": False, "0": False}
        return series.map(lambda v: words.get(v.strip().lower(), v) if isinstance(v, str) else v).astype("boolean")
    if kind == "date":
        return pd.to_datetime(series)
    return series


def typed(pd, frame, kinds, label, notes):
    """Rebuilds `frame` with column i converted to kinds[i]; a column that does not convert stays as read."""
    columns = []
    for i in range(frame.shape[1]):
        series = frame.iloc[:, i]
        try:
            series = convert(pd, series, kinds[i])
        except (ValueError, TypeError, OverflowError) as e:
            notes.append(f"{label}: column {series.name!r} kept as read, not {kinds[i]}: {e}")
        columns.append(series)
    return pd.concat(columns, axis=1) if columns else frame


def load_tables(pd, specs, notes):
    tables = {}
    for spec in specs:
        name, path, fmt = spec.get("name", ""), spec.get("path", ""), spec.get("format", "csv")
        columns, header = spec.get("columns") or [], spec.get("header", True)
        kinds = {c[0]: engine_kind(c[1]) for c in columns}
        try:
            if fmt == "export":
                tables[name] = load_export(pd, spec, notes)
            elif fmt in ("csv", "tsv"):
                # VARCHAR columns stay text ("007" is not 7); the rest is converted from the engine's types.
                text_cols = {c: object for c, k in kinds.items() if k == "str"} if header else None
                frame = pd.read_csv(path, sep=spec.get("delimiter") or ("\t" if fmt == "tsv" else ","),
                                    header=0 if header else None, dtype=text_cols or None)
                if len(columns) == frame.shape[1]:  # the engine's names and types, by position
                    if not header:
                        frame.columns = [c[0] for c in columns]
                    frame = typed(pd, frame, [engine_kind(c[1]) for c in columns], f"table {name}", notes)
                tables[name] = frame
            elif fmt == "json":
                with _real_open(path, encoding="utf-8") as f:
                    text = f.read().strip()
                as_lines = text.startswith("{") and "\n" in text
                try:
                    frame = pd.read_json(path, lines=as_lines)
                except ValueError:
                    if not as_lines:
                        raise
                    frame = pd.read_json(path)  # a pretty-printed single document, not JSON lines
                tables[name] = typed(pd, frame, [kinds.get(str(c), "str") for c in frame.columns], f"table {name}", notes)
            elif fmt == "parquet":
                try:
                    tables[name] = pd.read_parquet(path)
                except ImportError:
                    notes.append(f"parquet table {name} is not available in Python: pyarrow is not installed; use run_sql")
            elif fmt == "sqlite":
                load_sqlite(pd, path, tables, notes)
            else:
                notes.append(f"{fmt} table {name} is not available in Python; use run_sql")
        except Exception as e:  # one unreadable table must not hide the others
            notes.append(f"table {name} could not be loaded in Python ({type(e).__name__}: {e}); use run_sql")
    return tables


def load_export(pd, spec, notes):
    """A table quarry copied out as CSV (engine.h, ExportTables), typed from the engine's column
    types: ints nullable Int64, dates datetimes, text stays text ('02134'), NULL kept apart."""
    name, columns = spec["name"], spec.get("columns") or []
    names, kinds = [c[0] for c in columns], [engine_kind(c[1]) for c in columns]
    dtypes = {"int": "Int64", "float": "float64", "bool": "boolean", "str": object, "date": object}
    options = dict(header=None, skiprows=1, names=range(len(columns)), na_values=[spec.get("null", "")],
                   keep_default_na=False, low_memory=False)
    try:
        frame = pd.read_csv(spec["path"], dtype={i: dtypes[k] for i, k in enumerate(kinds)}, **options)
        for i, kind in enumerate(kinds):
            if kind == "date":
                frame[i] = pd.to_datetime(frame[i])
        frame.columns = names  # after reading: SQL allows duplicate column names
    except (ValueError, TypeError, OverflowError):  # e.g. a UBIGINT past Int64: convert one by one
        frame = pd.read_csv(spec["path"], dtype=object, **options)
        frame.columns = names
        frame = typed(pd, frame, kinds, f"table {name}", notes)
    for (column, engine_type), kind in zip(columns, kinds):
        precision = re.match(r"\s*(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)", engine_type or "", re.I)
        if kind == "float" and precision and int(precision.group(1)) > 15:
            notes.append(f"table {name}: column {column!r} ({engine_type}) is a float64 in Python, which "
                         "keeps 15 to 17 significant digits; run_sql gives its values and sums exact")
        if kind == "str" and engine_kind(engine_type) == "str" and (
                engine_type.upper().endswith("]") or engine_type.upper().startswith(("STRUCT", "MAP", "UNION", "BLOB"))):
            notes.append(f"table {name}: column {column!r} ({engine_type}) is text in Python")
    notes.extend(n for n in spec.get("notes") or [] if isinstance(n, str))
    total, written = spec.get("row_count", len(frame)), spec.get("rows_written", len(frame))
    if written < total:
        notes.append(f"table {name}: Python holds only the first {written:,} of its {total:,} rows "
                     f"(the cap is {spec.get('max_rows', written):,}); use run_sql for figures over the whole table")
    return frame


def load_sqlite(pd, path, tables, notes):
    """Every table and view of the database, under its own name."""
    import sqlite3
    import urllib.parse
    uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
        conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1")
    except sqlite3.OperationalError:  # a WAL database on a read-only mount needs immutable=1
        conn = sqlite3.connect(uri + "&immutable=1", uri=True)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
                                     "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall():
            if table in tables:
                notes.append(f"sqlite table {table} skipped: a table of that name is already loaded")
                continue
            try:
                tables[table] = pd.read_sql_query('SELECT * FROM "%s"' % table.replace('"', '""'), conn)
            except Exception as e:  # a broken view must not hide the tables
                notes.append(f"sqlite table {table} could not be loaded in Python ({e}); use run_sql")
    finally:
        conn.close()


def load_last(pd, last, notes):
    columns, types, rows = last.get("columns") or [], last.get("types") or [], last.get("rows") or []
    kinds = [engine_kind(types[i] if i < len(types) else "") for i in range(len(columns))]
    try:
        raw = pd.DataFrame([list(r) for r in rows] or None, index=None if rows else pd.RangeIndex(0),
                           columns=range(len(columns)), dtype=object)
    except (ValueError, TypeError) as e:  # rows that do not match the columns
        notes.append(f"last could not be built: {e}")
        return None
    raw.columns = columns  # after construction: duplicate names are legal in SQL results
    return typed(pd, raw, kinds, "last", notes)


# Audit events refused while the guard is on: what only a module outside the allowlist can do.
REFUSED_EVENTS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                  "subprocess.", "ctypes.dlopen", "ctypes.dlsym", "socket.", "os.chmod", "os.chown",
                  "os.symlink", "os.link", "os.kill", "os.killpg", "sys.settrace", "sys.setprofile",
                  "sys._current_frames", "sys.addaudithook")


def install_runtime_guard():
    """The guard at run time, as an audit hook (which no Python code can remove): every file
    opened for writing, by any library and any route (numpy's savetxt opens its own file), must
    lie inside the work directory and not be a symlink; no unpickling that needs a global (every
    harmful pickle does), by np.load, read_array, read_pickle or any other route; no process,
    socket, ctypes, chmod or link. Only names taken now are used: the code may rebind module
    attributes before the hook runs."""
    import posixpath
    realpath, lexists, islink, fspath, getcwd = (posixpath.realpath, posixpath.lexists, posixpath.islink,
                                                 os.fspath, os.getcwd)
    root = realpath(getcwd())
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    isinstance_, str_, int_, bytes_, any_ = isinstance, str, int, bytes, any

    def refuse(rule, text):
        raise PermissionError(f"{rule}: {text} (refused in the sandbox)")

    def write_problem(path):
        if isinstance_(path, int_) or not isinstance_(path, (str_, bytes_)):
            return "only a named file in the work directory can be written"
        text = path.decode("utf-8", "replace") if isinstance_(path, bytes_) else path
        if "\x00" in text:
            return "the path contains a NUL byte"
        full = realpath(text)
        if not (full + "/").startswith(root + "/") or full == root:
            return "the file would lie outside the work directory"
        if lexists(text) and islink(text):
            return "the file is a symlink"
        return None

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writing = (isinstance_(mode, str_) and any_(c in mode for c in "wax+")) or (
                isinstance_(flags, int_) and flags & writes)
            if writing:
                try:
                    path = fspath(path) if not isinstance_(path, (str_, bytes_, int_)) else path
                except TypeError:
                    pass
                problem = write_problem(path)
                if problem:
                    refuse("file_write", f"writing {path!r}: {problem}")
        elif event == "pickle.find_class":
            refuse("pickle_load", "unpickling can run arbitrary code; read data with read_csv or read_json")
        elif event.startswith(REFUSED_EVENTS):
            refuse("module_attribute", f"{event} is not available")

    sys.addaudithook(hook)


def safe_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    """The user's open() while the guard is on: the guard's rule again, at run time, in case a
    path or mode ever reaches open() by a route the AST check did not foresee."""
    problem = path_problem(file) if _isinstance(file, _str) else "the path must be a string"
    if not problem and mode not in READ_MODES:
        problem = f"mode {mode!r} is not 'r', 'rb' or 'rt'; write files with pandas or matplotlib"
    if problem or not closefd or opener is not None:
        raise PermissionError(f"open_literal: open({file!r}) refused: {problem or 'closefd/opener are not allowed'}")
    return _real_open(file, mode, buffering, encoding, errors, newline)


def user_traceback(exc):
    """The traceback with only <analysis> frames, and the line of the innermost one."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<analysis>"]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.StackSummary.from_list(frames).format()
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip("\n"), (frames[-1].lineno if frames else None)


def cut_front(text, keep=40):
    lines = text.split("\n")
    if len(lines) > keep:
        lines = [f"... ({len(lines) - keep} earlier lines cut)"] + lines[-keep:]
    return "\n".join(lines)


def check_code(request, result, guard):
    """Parses and guards the code (when `guard`, which quarry set, never the request the code
    could have shaped). Returns the compiled code and its tree, or None with `result` set to the
    syntax_error or guard_violation."""
    code = request["code"]
    try:
        tree = ast.parse(code, "<analysis>")
        compiled = compile(tree, "<analysis>", "exec", dont_inherit=True)
    except SyntaxError as e:
        detail = f"\n    {e.text.rstrip()}" if e.text and e.text.strip() else ""
        result.update(status="syntax_error", line=e.lineno, message=f"syntax_error: line {e.lineno}: {e.msg}{detail}")
        return None
    except (ValueError, RecursionError, MemoryError) as e:  # NUL bytes, absurd nesting
        result.update(status="syntax_error", message=f"syntax_error: {e}")
        return None
    if guard:
        violations = run_guard(tree, request.get("allowed_modules") or DEFAULT_ALLOWED)
        if violations:
            line, _, _, rule, text = violations[0]
            result.update(status="guard_violation", rule=rule, line=line,
                          message=f"guard_violation ({rule}): line {line}: {text}")
            return None
    return compiled, tree


def import_libraries(with_pyplot):
    import logging
    mpl_log = logging.getLogger("matplotlib")
    level = mpl_log.level
    mpl_log.setLevel(logging.ERROR)  # no "config dir not writable" noise in the user's stderr
    plt = None
    if with_pyplot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    mpl_log.setLevel(level)
    return pd, np, plt


def load_all(pd, request, notes):
    import warnings
    with warnings.catch_warnings():  # DtypeWarning and the like are not the user's output
        warnings.simplefilter("ignore")
        return load_tables(pd, request.get("tables") or [], notes)


def load_last_quietly(pd, last, notes):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_last(pd, last, notes)


def new_scope(guard, pd, np, plt, tables, last):
    user_builtins = dict(vars(builtins))
    if guard:  # guard off is the whole Python layer off: the OS must hold alone
        user_builtins["open"] = safe_open
    scope = {"__name__": "__main__", "__builtins__": user_builtins,
             "pd": pd, "np": np, "tables": tables, "last": last}
    if plt is not None:
        scope["plt"] = plt
    if len(tables) == 1:
        scope["df"] = next(iter(tables.values()))
    return scope


def execute(compiled, code, scope, result):
    """Runs the user's code in `scope`; a failure becomes the result's runtime_error."""
    # Lets the traceback show the user's source lines.
    linecache.cache["<analysis>"] = (len(code), None, code.splitlines(True), "<analysis>")
    try:
        exec(compiled, scope)
    except BaseException as e:  # noqa: B902 - the user's KeyboardInterrupt etc. are results too
        if isinstance(e, SystemExit) and e.code in (None, 0):
            return
        text, line = user_traceback(e)
        sys.stderr.write(text + "\n")
        result.update(status="runtime_error", line=line, message="runtime_error: " + cut_front(text))


def flush_streams():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # with the guard off, the code may have closed or replaced it
            pass


def new_result():
    return {"status": "ok", "rule": None, "message": "", "line": None, "tables_loaded": [], "notes": []}


def main():
    try:  # opened before the user's code runs, which could otherwise close or take fd 3
        out, marker = os.fdopen(3, "w", encoding="utf-8"), ""
    except OSError:  # run by hand
        out, marker = sys.stderr, "QUARRY_RESULT "
    if os.environ.get("QUARRY_KERNEL") == "1":
        kernel(out)
    result = new_result()

    def finish(exit_code=0):
        flush_streams()
        # On a line of its own, so stray bytes the code wrote to fd 3 cannot corrupt it.
        out.write("\n" + marker + _dumps(result) + "\n")
        out.flush()
        os._exit(exit_code)  # leftover user threads or atexit hooks must not keep the child alive

    try:
        request = json.loads(sys.stdin.read())
        code = request["code"]
        if not isinstance(code, str) or request.get("mode", "run") not in ("run", "check"):
            raise ValueError("code must be a string and mode 'run' or 'check'")
    except (ValueError, KeyError, TypeError) as e:
        result.update(status="internal_error", message=f"runner: bad request: {e}")
        finish(2)

    guard = request.get("guard", True) is not False  # read before any user code runs
    checked = check_code(request, result, guard)
    if checked is None or request.get("mode", "run") == "check":
        finish()
    compiled, tree = checked

    notes = result["notes"]
    try:
        # pyplot costs ~0.3 s (font cache): imported only for code that names plt; pandas'
        # own .plot() imports it on demand (MPLBACKEND=Agg).
        pd, np, plt = import_libraries(any(isinstance(n, ast.Name) and n.id == "plt" for n in ast.walk(tree)))
        tables = load_all(pd, request, notes)
        last = load_last_quietly(pd, request["last"], notes) if request.get("last") else None
    except Exception as e:  # the environment, not the user's code: still exactly one result
        result.update(status="internal_error", message=f"runner: could not prepare Python: {type(e).__name__}: {e}")
        finish(2)
    result["tables_loaded"] = list(tables)
    scope = new_scope(guard, pd, np, plt, tables, last)
    if guard:
        install_runtime_guard()
    execute(compiled, code, scope, result)
    finish()


MAX_FRAME = 64 << 20


def read_frame(stream):
    """One '<length>\n<json>' frame, or None at EOF or on a malformed frame."""
    header = stream.readline(24)
    if not header.endswith(b"\n") or not header[:-1].isdigit() or int(header) > MAX_FRAME:
        return None
    body = stream.read(_int(header))
    try:
        message = _loads(body)
    except ValueError:
        return None
    return message if _isinstance(message, dict) else None


def kernel(out):
    """The warm kernel (sandbox/kernel.h): one process serves a run's calls over dedicated
    descriptors. Requests arrive as frames on what was fd 0, results leave as frames on what was
    fd 3; both are moved to private numbers first, so the user's stdin is /dev/null and a stray
    write to fd 3 reaches nothing. Variables persist in one scope between calls."""
    import gc
    import resource
    import signal
    # The guard is quarry's setting, fixed when the kernel starts; no request can turn it off.
    guard = os.environ.get("QUARRY_GUARD", "1") != "0"
    collect, setitimer, setsignal, settrace, setprofile = gc.collect, signal.setitimer, signal.signal, sys.settrace, sys.setprofile
    timers = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
    handlers = {}
    for number in signal.valid_signals():
        handler = signal.getsignal(number)
        if handler is not None and number not in (signal.SIGKILL, signal.SIGSTOP):
            handlers[number] = handler
    guard_installed = False

    def quiesce():
        """Ends what the call set up to run later in this thread: finalizers of its garbage run
        now, within the call; its timers and signal handlers and tracers go. (Its threads are
        the parent's check: a call that leaves one ends the kernel.)"""
        try:
            collect()
        except BaseException:  # a finalizer's error is the user's, not the kernel's end
            pass
        for timer in timers:
            setitimer(timer, 0)
        for number, handler in handlers.items():
            try:
                setsignal(number, handler)
            except (OSError, ValueError, TypeError):
                pass
        if not guard:  # with the guard on, the code cannot set these
            settrace(None)
            setprofile(None)

    requests = os.fdopen(os.dup(0), "rb")
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    results = os.fdopen(os.dup(out.fileno()), "wb")
    out.close()
    sys.stdin = open(os.devnull)

    def send(message):
        body = _dumps(message).encode("utf-8", "replace")
        results.write(str(len(body)).encode() + b"\n" + body)
        results.flush()

    pd = np = plt = None
    scope = None
    try:
        pd, np, plt = import_libraries(True)  # once, before the first call: the calls are what is timed
    except Exception as e:
        send({"kind": "loaded", "status": "internal_error", "message": f"runner: could not import: {type(e).__name__}: {e}",
              "tables_loaded": [], "notes": []})
        os._exit(2)
    while True:
        request = read_frame(requests)
        if request is None:
            os._exit(0)
        kind = request.get("kind")
        if kind == "load":
            notes = []
            tables = load_all(pd, request, notes)
            scope = new_scope(guard, pd, np, plt, tables, None)
            send({"kind": "loaded", "status": "ok", "tables_loaded": list(tables), "notes": notes})
        elif kind == "run" and scope is not None:
            result = new_result()
            result.update(kind="result", id=request.get("id"))
            checked = check_code(request, result, guard) if _isinstance(request.get("code"), _str) else None
            if checked is not None and request.get("mode", "run") == "run":
                if request.get("last"):
                    scope["last"] = load_last_quietly(pd, request["last"], result["notes"])
                # This call's CPU budget: the soft limit moves, the hard one is the kernel's whole.
                used = resource.getrusage(resource.RUSAGE_SELF)
                soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
                want = int(used.ru_utime + used.ru_stime) + 1 + int(request.get("cpu_seconds", 60))
                if hard != resource.RLIM_INFINITY:
                    want = min(want, hard)
                resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
                if guard and not guard_installed:
                    install_runtime_guard()
                    guard_installed = True
                execute(checked[0], request["code"], scope, result)
                quiesce()
                flush_streams()
            send(result)
        else:
            send({"kind": "result", "id": request.get("id"), "status": "internal_error",
                  "message": "runner: bad request", "tables_loaded": [], "notes": []})


main()
