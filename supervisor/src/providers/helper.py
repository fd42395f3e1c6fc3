# lackpy python-provider helper. Started by the supervisor, jailed
# (python3 -I -B -c HELPER [PYTHON_PATH...]) with the workspace as its cwd
# and an empty environment except what the config passes. The workspace is
# never on sys.path: tool modules of .lackpy/tools/ arrive as source text
# inside requests ("sources", read by the supervisor without following
# symlinks) and are served by an in-memory finder; PYTHON_PATH directories
# (outside the workspace, checked by the supervisor) are appended to sys.path. Protocol: one JSON request per line on the original stdin,
# one JSON reply per line on the original stdout:
#   request: {"id": N, "module": "m", "function": "f", "args": [tagged...],
#             "sources": {"name": {"source": S, "filename": F, "package": B}}?}
#            ("sources", when present, replaces the whole set of tool modules)
#   reply:   {"id": N, "ok": true, "value": tagged}
#         |  {"id": N, "ok": false, "error": {"type": T, "message": M}}
# Tagged values: null/bool/str/list as JSON; ints in the i64 range as JSON
# numbers, others {"$big": "digits"}; {"$float": repr}; {"$tuple": [...]};
# {"$set": [...]}; {"$dict": [[k, v], ...]}.
# The protocol streams are moved off fds 0/1 before any user code runs, so a
# tool's print() goes to stderr and input() sees /dev/null.
import importlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import sys

MAX_DEPTH = 100
I64_MIN, I64_MAX = -(2 ** 63), 2 ** 63 - 1

_proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
_proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
os.dup2(2, 1)
sys.stdin = open(os.devnull, "r")
sys.stdout = sys.stderr

# Isolated mode (-I) leaves the cwd off sys.path, and it stays off: a
# program may have written any file of the workspace.
for _p in sys.argv[1:]:
    sys.path.append(_p)

# Tool modules of .lackpy/tools/, by dotted name: {"source", "filename", "package"}.
_SOURCES = {}


class _ToolsLoader(importlib.abc.Loader):
    def __init__(self, entry):
        self.entry = entry

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        code = compile(self.entry["source"], self.entry["filename"], "exec", dont_inherit=True)
        exec(code, module.__dict__)


class _ToolsFinder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        entry = _SOURCES.get(name)
        if entry is None:
            return None
        return importlib.util.spec_from_loader(
            name, _ToolsLoader(entry), origin=entry["filename"], is_package=bool(entry["package"]))


sys.meta_path.insert(0, _ToolsFinder)


def set_sources(sources):
    """Replace the tool modules; forget loaded ones that changed or went away."""
    for name in list(sys.modules):
        old, new = _SOURCES.get(name), sources.get(name)
        if old is not None and old != new:
            del sys.modules[name]
    _SOURCES.clear()
    _SOURCES.update(sources)
    importlib.invalidate_caches()


class NotPlain(Exception):
    pass


def encode(v, depth=0, where="result"):
    if depth > MAX_DEPTH:
        raise NotPlain("the value nests deeper than %d levels (at %s)" % (MAX_DEPTH, where))
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        if I64_MIN <= v <= I64_MAX:
            return v
        return {"$big": str(v)}
    if t is float:
        return {"$float": repr(v)}
    if t is list:
        return [encode(x, depth + 1, "%s[%d]" % (where, i)) for i, x in enumerate(v)]
    if t is tuple:
        return {"$tuple": [encode(x, depth + 1, "%s[%d]" % (where, i)) for i, x in enumerate(v)]}
    if t is set or t is frozenset:
        return {"$set": [encode(x, depth + 1, where + " element") for x in v]}
    if t is dict:
        return {"$dict": [[encode(k, depth + 1, where + " key"),
                           encode(x, depth + 1, "%s[%r]" % (where, k))] for k, x in v.items()]}
    # Subclasses of the plain types (IntEnum, str enums, namedtuples,
    # OrderedDict, defaultdict, ...) become their plain base value, read
    # through the base type's own methods so no override runs.
    if isinstance(v, bool):
        return bool(int.__int__(v))
    if isinstance(v, int):
        return encode(int.__int__(v), depth, where)
    if isinstance(v, float):
        return encode(float.__float__(v), depth, where)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, list):
        return encode(list(list.__iter__(v)), depth, where)
    if isinstance(v, tuple):
        return encode(tuple(tuple.__iter__(v)), depth, where)
    if isinstance(v, (set, frozenset)):
        return encode(set(set.__iter__(v) if isinstance(v, set) else frozenset.__iter__(v)), depth, where)
    if isinstance(v, dict):
        return encode(dict(dict.items(v)), depth, where)
    raise NotPlain("tool returned a non-plain value of type '%s' (at %s); "
                   "tool results must be None, bool, int, float, str, list, tuple, dict or set"
                   % (t.__qualname__, where))


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if "$big" in v:
            return int(v["$big"])
        if "$float" in v:
            return float(v["$float"])
        if "$tuple" in v:
            return tuple(decode(x) for x in v["$tuple"])
        if "$set" in v:
            return set(decode(x) for x in v["$set"])
        if "$dict" in v:
            return {decode(k): decode(x) for k, x in v["$dict"]}
        raise ValueError("bad tagged value")
    return v


def reply(obj):
    data = json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8")
    _proto_out.write(data + b"\n")


# Python exception types that map onto the contract's tool error types.
ERROR_TYPES = {
    "FileNotFoundError": "FileNotFound",
    "IsADirectoryError": "IsADirectory",
    "UnicodeDecodeError": "NotUtf8",
    "TimeoutError": "Timeout",
}


_mtimes = {}


def load(name):
    """Import a tool module. Modules of .lackpy/tools/ are re-executed when
    their source changed (set_sources); others are re-imported when their
    file changed since (the helper outlives edits in a long-running
    `lackpy serve`/`mcp`)."""
    if name in _SOURCES:
        return importlib.import_module(name)
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError:
        importlib.invalidate_caches()  # the module may be new since start-up
        mod = importlib.import_module(name)
    path = getattr(mod, "__file__", None)
    if path:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            return mod
        seen = _mtimes.get(name)
        _mtimes[name] = mtime
        if seen is not None and seen != mtime:
            mod = importlib.reload(mod)
    return mod


def handle(req):
    rid = req.get("id")
    if isinstance(req.get("sources"), dict):
        set_sources(req["sources"])
    try:
        mod = load(req["module"])
    except BaseException as e:  # noqa: B036 - a tool module may raise anything
        return {"id": rid, "ok": False, "error": {
            "type": "ToolFailed",
            "message": "cannot import module %r: %s: %s" % (req["module"], type(e).__name__, e)}}
    fn = getattr(mod, req["function"], None)
    if fn is None or not callable(fn):
        return {"id": rid, "ok": False, "error": {
            "type": "ToolFailed",
            "message": "module %r has no function %r" % (req["module"], req["function"])}}
    args = decode(req.get("args", []))
    try:
        inspect.signature(fn).bind(*args)
    except TypeError as e:
        return {"id": rid, "ok": False, "error": {"type": "BadArgument", "message": str(e)}}
    except ValueError:
        pass  # no signature available (builtins); let the call decide
    try:
        value = fn(*args)
    except BaseException as e:  # noqa: B036 - SystemExit/KeyboardInterrupt are tool errors too
        name = type(e).__name__
        msg = str(e)
        return {"id": rid, "ok": False, "error": {
            "type": ERROR_TYPES.get(name, "ToolFailed"),
            "message": "%s: %s" % (name, msg) if msg else name}}
    try:
        return {"id": rid, "ok": True, "value": encode(value)}
    except NotPlain as e:
        return {"id": rid, "ok": False, "error": {"type": "ToolFailed", "message": str(e)}}
    except RecursionError:
        return {"id": rid, "ok": False, "error": {
            "type": "ToolFailed", "message": "the tool's result is recursive or nests too deeply"}}


def main():
    while True:
        line = _proto_in.readline()
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError as e:
            reply({"id": None, "ok": False, "error": {"type": "ToolFailed", "message": "bad request: %s" % e}})
            continue
        out = handle(req)
        try:
            reply(out)
        except (ValueError, UnicodeEncodeError) as e:
            reply({"id": out.get("id"), "ok": False, "error": {
                "type": "ToolFailed", "message": "cannot encode the result: %s" % e}})
        sys.stderr.flush()


main()
