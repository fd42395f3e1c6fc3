#!/usr/bin/env python3
"""Reference runner for the lackpy conformance corpus (CPython side).

Reads a JSON list of ``{"name", "source", "workspace"}`` on stdin and writes a
JSON list of ``{"name", "ok", "repr", "data", "stdout", "exc_type", "exc_msg",
"exc_line", "lint"}``
on stdout, one entry per program, in input order.

Each program runs in a fresh namespace whose ``__builtins__`` holds only the
builtins lackpy allows (README.md, "The language") plus shims of the four file
tools and ``sort_by`` with the real ones' semantics, with the working directory
set to the program's workspace (a throwaway copy of ``fixture_ws/`` made by
the harness) when it has one.

The program's value follows the notebook-cell rule: when the last top-level
statement is an expression statement it is split off and evaluated on its
own; ``repr`` is its repr and ``data`` its shape as lackpy's ``wire::Data``
(null when it is not plain data). Otherwise both are null. ``exc_msg`` is
``str(exception)``, which is what lackpy reports as the error message.

Printed output goes to a strict UTF-8 text stream, as lackpy's stdout: a
lone surrogate cannot be printed (``UnicodeEncodeError``). Lone surrogates
left in the results (values, messages) are written as lackpy's placeholders
(U+10F800 + (cp - 0xD800), see ``policy/src/lang/surrogate.rs``), since the
Rust side reads this JSON with serde_json, which holds scalar values only.

``lint`` lists uses of constructs outside the lackpy subset, found by a
conservative AST walk. It keeps the corpus honest while the real validator is
being written; the Rust harness additionally runs ``lackpy_policy::validate``.
"""

import ast
import contextlib
import io
import json
import os
import pathlib
import sys

BUILTIN_NAMES = (
    "len range enumerate zip sorted reversed min max sum any all abs round str int "
    "float bool list dict set tuple isinstance print sort_by repr"
).split()
TOOL_NAMES = ["read_file", "find_files", "write_file", "edit_file"]
TYPE_NAMES = "str int float bool list dict set tuple".split()

METHODS = set(
    """
    capitalize casefold center count endswith expandtabs find index isalnum isalpha
    isascii isdecimal isdigit isidentifier islower isnumeric isspace istitle isupper
    join ljust lower lstrip partition removeprefix removesuffix replace rfind rindex
    rjust rpartition rsplit rstrip split splitlines startswith strip swapcase title
    upper zfill
    append clear copy count extend index insert pop remove reverse sort
    clear copy get items keys pop popitem setdefault update values
    add clear copy difference difference_update discard intersection
    intersection_update isdisjoint issubset issuperset pop remove
    symmetric_difference union update
    count index bit_length is_integer
    """.split()
)


# --- tool shims -------------------------------------------------------------


class ToolError(Exception):
    """Base of the shim tool failures; the class name is the tool error type."""


def _tool_error(type_name):
    return type(type_name, (ToolError,), {})


FileNotFound = _tool_error("FileNotFound")
IsADirectory = _tool_error("IsADirectory")
NotUtf8 = _tool_error("NotUtf8")
BadArgument = _tool_error("BadArgument")
PathOutsideWorkspace = _tool_error("PathOutsideWorkspace")


def _inside(path):
    """Refuse paths that leave the workspace (cwd), as the real tools do."""
    if not isinstance(path, str):
        raise BadArgument("path must be a str")
    root = os.path.realpath(".")
    full = os.path.realpath(os.path.join(root, path))
    if os.path.isabs(path) or not (full == root or full.startswith(root + os.sep)):
        raise PathOutsideWorkspace(f"path {path!r} is outside the workspace")
    return full


def read_file(path):
    full = _inside(path)
    if os.path.isdir(full):
        raise IsADirectory(f"{path} is a directory")
    if not os.path.exists(full):
        raise FileNotFound(f"{path} not found")
    with open(full, "rb") as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotUtf8(f"{path} is not UTF-8") from None


def find_files(pattern):
    if not isinstance(pattern, str):
        raise BadArgument("pattern must be a str")
    return sorted(str(p) for p in pathlib.Path(".").glob(pattern))


def write_file(path, content):
    full = _inside(path)
    if not isinstance(content, str):
        raise BadArgument("content must be a str")
    if os.path.isdir(full):
        raise IsADirectory(f"{path} is a directory")
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8", newline="") as fh:
        fh.write(content)
    return True


def edit_file(path, old_str, new_str):
    text = read_file(path)
    if not isinstance(old_str, str) or not isinstance(new_str, str):
        raise BadArgument("old_str and new_str must be str")
    if old_str not in text:
        return False
    full = _inside(path)
    with open(full, "w", encoding="utf-8", newline="") as fh:
        fh.write(text.replace(old_str, new_str, 1))
    return True


def sort_by(items, key, reverse=False):
    """lackpy's sort_by: key is a field name for dicts or an index for sequences;
    a missing one raises KeyError/IndexError; stable in both directions."""
    return sorted(items, key=lambda item: item[key], reverse=reverse)


def make_builtins():
    import builtins

    b = {name: getattr(builtins, name) for name in BUILTIN_NAMES if name != "sort_by"}
    b["sort_by"] = sort_by
    b["read_file"] = read_file
    b["find_files"] = find_files
    b["write_file"] = write_file
    b["edit_file"] = edit_file
    return b


# --- lint: constructs outside the lackpy subset -----------------------------

ALLOWED_NODES = (
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.For, ast.If, ast.Pass,
    ast.Break, ast.Continue, ast.Constant, ast.Name, ast.Attribute, ast.Subscript,
    ast.Slice, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Starred, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.comprehension, ast.Compare,
    ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.IfExp, ast.JoinedStr, ast.FormattedValue,
    ast.Call, ast.keyword, ast.Lambda, ast.arguments, ast.arg, ast.Load, ast.Store,
    ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, ast.Add, ast.Sub, ast.Mult, ast.Div,
    ast.FloorDiv, ast.Mod, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
    ast.Is, ast.IsNot, ast.In, ast.NotIn,
)


def lint(source):
    problems = []
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [f"SyntaxError: {e}"]
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    callables = set(BUILTIN_NAMES) | set(TOOL_NAMES)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if not isinstance(node, ALLOWED_NODES):
            problems.append(f"line {line}: {type(node).__name__} not allowed")
            continue
        if isinstance(node, ast.Name):
            if node.id.startswith("_"):
                problems.append(f"line {line}: name {node.id} starts with _")
            if node.id in callables:
                parent = parents.get(node)
                ok = isinstance(parent, ast.Call) and parent.func is node
                ok = ok or (isinstance(parent, ast.keyword) and parent.arg == "key")
                if node.id in TYPE_NAMES and isinstance(node.ctx, ast.Load):
                    # isinstance's second argument (alone or in tuple, list
                    # and set displays, nested), or any argument of a call with
                    # the wrong arity.
                    arg, p = node, parent
                    while isinstance(p, (ast.Tuple, ast.List, ast.Set)):
                        arg, p = p, parents.get(p)
                    if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "isinstance":
                        ok = len(p.args) != 2 or p.args[1] is arg
                if not ok:
                    problems.append(f"line {line}: {node.id} used as a value")
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                problems.append(f"line {line}: attribute {node.attr} starts with _")
            parent = parents.get(node)
            is_call = isinstance(parent, ast.Call) and parent.func is node
            is_key = isinstance(parent, ast.keyword) and parent.arg == "key"
            if not (is_call or is_key):
                problems.append(f"line {line}: bare attribute .{node.attr}")
            elif node.attr not in METHODS:
                problems.append(f"line {line}: method .{node.attr} not allowlisted")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id not in callables:
                problems.append(f"line {line}: call of non-builtin {node.func.id}")
        if isinstance(node, ast.Lambda):
            parent = parents.get(node)
            if not (isinstance(parent, ast.keyword) and parent.arg == "key"):
                problems.append(f"line {line}: lambda outside key=")
            a = node.args
            if len(a.args) != 1 or a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults:
                problems.append(f"line {line}: lambda must take one positional parameter")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            if isinstance(node.left, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(node.left, "value", ""), str):
                problems.append(f"line {line}: % on a string")
    return problems


# --- running ----------------------------------------------------------------


class NotData(Exception):
    """The value is not plain data (a range, a view, an iterator, a cycle...)."""


def to_data(value):
    """The value in the shape of lackpy's ``wire::Data`` (serde's external
    tagging), or None when it is not plain data. Floats travel as their repr
    so that inf and nan survive JSON."""

    def conv(v, stack):
        if v is None:
            return "None"
        if isinstance(v, bool):
            return {"Bool": v}
        if isinstance(v, int):
            if -(2 ** 63) <= v < 2 ** 63:
                return {"Int": v}
            try:
                return {"BigInt": str(v)}
            except ValueError:  # beyond the int->str digit limit
                raise NotData() from None
        if isinstance(v, float):
            return {"Float": repr(v)}
        if isinstance(v, str):
            return {"Str": v}
        if isinstance(v, (list, tuple, set, dict)):
            if id(v) in stack:
                raise NotData()
            stack.add(id(v))
            try:
                if isinstance(v, dict):
                    return {"Dict": [[conv(k, stack), conv(x, stack)] for k, x in v.items()]}
                tag = {list: "List", tuple: "Tuple", set: "Set"}[type(v)]
                return {tag: [conv(x, stack) for x in v]}
            finally:
                stack.discard(id(v))
        raise NotData()

    try:
        return conv(value, set())
    except NotData:
        return None


def error_line(exc, name):
    """Line of the innermost traceback frame that belongs to the program."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == name:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def run_one(name, source, workspace):
    result = {"name": name, "ok": False, "repr": None, "data": None, "stdout": "",
              "exc_type": None, "exc_msg": None, "exc_line": None, "lint": lint(source)}
    raw = io.BytesIO()
    buf = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline="\n")
    old_cwd = os.getcwd()
    try:
        tree = ast.parse(source, filename=name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, name, "exec")
        tail = compile(last, name, "eval") if last is not None else None
        env = {"__builtins__": make_builtins()}
        if workspace:
            os.chdir(workspace)
        # The program gets the recursion headroom it has as a script (the
        # default limit of 1000 above its own frame), not main()'s 10000,
        # which only serves to_data and the JSON dump of deep values.
        depth = 0
        frame = sys._getframe()
        while frame is not None:
            depth += 1
            frame = frame.f_back
        with contextlib.redirect_stdout(buf):
            sys.setrecursionlimit(1000 + depth)
            try:
                exec(body, env)
                if tail is not None:
                    value = eval(tail, env)
                    result["repr"] = repr(value)
            finally:
                sys.setrecursionlimit(10000)
            if tail is not None:
                result["data"] = to_data(value)
        result["ok"] = True
    except BaseException as e:  # noqa: BLE001 - every failure is data here
        result["exc_type"] = type(e).__name__
        result["exc_msg"] = str(e)
        result["exc_line"] = error_line(e, name)
    finally:
        os.chdir(old_cwd)
    buf.flush()
    result["stdout"] = raw.getvalue().decode("utf-8")
    return placeholders(result)


def placeholders(v):
    """``v`` with every lone surrogate in its strings replaced by lackpy's placeholder."""
    if isinstance(v, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in v):
            return "".join(chr(ord(c) - 0xD800 + 0x10F800) if 0xD800 <= ord(c) <= 0xDFFF else c for c in v)
        return v
    if isinstance(v, list):
        return [placeholders(x) for x in v]
    if isinstance(v, dict):
        return {placeholders(k): placeholders(x) for k, x in v.items()}
    return v


# Address space for the whole reference run. Why: a generated program that
# grows without bound (a fuzzing round met one at 24 GB) would otherwise take
# the machine's memory from everything else; with the cap it ends in
# MemoryError, which the harness reports as a difference like any other.
# The corpus needs well under 1 GiB.
MEMORY_CAP_BYTES = 4 << 30


def main():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))
    sys.setrecursionlimit(10000)
    programs = json.load(sys.stdin)
    out = [run_one(p["name"], p["source"], p.get("workspace")) for p in programs]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
