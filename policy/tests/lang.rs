//! Table-driven tests of the validator: rejections (type, position, hint),
//! acceptance of every allowed construct, grades, and parser bombs.

use lackpy_policy::lang::{validate, validate_bytes, Grade, Namespace, ToolEntry};
use lackpy_policy::wire::{ErrorInfo, Limits};

fn ns() -> Namespace {
    let t = |name: &str, w, d| ToolEntry::new(name, &[], Grade { w, d });
    Namespace {
        tools: vec![
            t("read_file", 1, 1),
            t("find_files", 1, 1),
            t("write_file", 3, 3),
            t("edit_file", 3, 3),
            t("search", 0, 0),
        ],
    }
}

fn errors(src: &str) -> Vec<ErrorInfo> {
    match validate(src, &ns(), &Limits::default()) {
        Ok(_) => Vec::new(),
        Err(e) => e,
    }
}

/// (program, error type, line, col, hint substring) — the FIRST error.
const REJECT: &[(&str, &str, u32, u32, &str)] = &[
    // --- forbidden statements ---
    ("import os", "ForbiddenSyntax", 1, 1, "already loaded"),
    (
        "from os import path",
        "ForbiddenSyntax",
        1,
        1,
        "already loaded",
    ),
    (
        "import os.path as p",
        "ForbiddenSyntax",
        1,
        1,
        "already loaded",
    ),
    (
        "x = 1\nimport sys",
        "ForbiddenSyntax",
        2,
        1,
        "already loaded",
    ),
    (
        "def f():\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "functions cannot be defined",
    ),
    (
        "async def f():\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "functions cannot be defined",
    ),
    (
        "@dec\ndef f():\n    pass",
        "ForbiddenSyntax",
        1,
        2,
        "functions cannot be defined",
    ),
    (
        "class A:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "classes cannot be defined",
    ),
    (
        "class A(object):\n    x = 1",
        "ForbiddenSyntax",
        1,
        1,
        "classes",
    ),
    (
        "while True:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "iterate over a finite collection",
    ),
    ("x = 1\nwhile x:\n    x = 0", "ForbiddenSyntax", 2, 1, "for"),
    (
        "try:\n    x = 1\nexcept Exception:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "errors propagate",
    ),
    (
        "try:\n    x = 1\nfinally:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "check values with if",
    ),
    (
        "raise ValueError('x')",
        "ForbiddenSyntax",
        1,
        1,
        "cannot be raised",
    ),
    ("raise", "ForbiddenSyntax", 1, 1, "cannot be raised"),
    (
        "with x as y:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "read_file",
    ),
    ("global x", "ForbiddenSyntax", 1, 1, "one scope"),
    ("nonlocal x", "SyntaxError", 1, 1, "one scope"),
    ("assert 1 == 1", "ForbiddenSyntax", 1, 1, "with if"),
    ("x = 1\ndel x", "ForbiddenSyntax", 2, 1, "reassign"),
    (
        "match x:\n    case 1:\n        pass",
        "ForbiddenSyntax",
        1,
        1,
        "if/elif/else",
    ),
    ("return 1", "SyntaxError", 1, 1, "last expression"),
    ("x: int = 1", "ForbiddenSyntax", 1, 1, "drop the annotation"),
    (
        "async for x in y:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "plain for",
    ),
    (
        "async with x:\n    pass",
        "ForbiddenSyntax",
        1,
        1,
        "read_file",
    ),
    (
        "for x in range(3):\n    while x:\n        pass",
        "ForbiddenSyntax",
        2,
        5,
        "for",
    ),
    (
        "if True:\n    import json",
        "ForbiddenSyntax",
        2,
        5,
        "already loaded",
    ),
    // --- forbidden expressions ---
    ("x = (y := 1)", "ForbiddenSyntax", 1, 6, "own line"),
    ("x = 2 ** 8", "ForbiddenSyntax", 1, 5, "multiply explicitly"),
    (
        "x = 2\nx **= 2",
        "ForbiddenSyntax",
        2,
        1,
        "multiply explicitly",
    ),
    ("x = 1 | 2", "ForbiddenSyntax", 1, 5, "union"),
    ("x = 1 & 2", "ForbiddenSyntax", 1, 5, "intersection"),
    ("x = 1 ^ 2", "ForbiddenSyntax", 1, 5, "bit operators"),
    ("x = 1 << 2", "ForbiddenSyntax", 1, 5, "multiply"),
    ("x = 8 >> 2", "ForbiddenSyntax", 1, 5, "//"),
    ("x = ~1", "ForbiddenSyntax", 1, 5, "bit operators"),
    ("x = 1\nx |= 2", "ForbiddenSyntax", 2, 1, "bit operators"),
    ("a = [1]\nx = a @ a", "ForbiddenSyntax", 2, 5, "multiply"),
    ("f = lambda x: x", "ForbiddenSyntax", 1, 5, "sort_by"),
    (
        "x = sorted([1], cmp=lambda a: a)",
        "ForbiddenSyntax",
        1,
        21,
        "key=",
    ),
    ("x = [lambda: 1]", "ForbiddenSyntax", 1, 6, "sort_by"),
    (
        "x = sorted([1], key=lambda v, f=open: f(v))",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    (
        "x = sorted([1], key=lambda a, b: a)",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    (
        "x = sorted([1], key=lambda: 1)",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    (
        "x = sorted([1], key=lambda *a: a)",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    (
        "x = sorted([1], key=lambda **k: 1)",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    (
        "x = sorted([1], key=lambda a=1: a)",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    (
        "x = sorted([1], key=lambda a, *, b: a)",
        "ForbiddenSyntax",
        1,
        21,
        "one parameter",
    ),
    ("x = 'a %s' % 1", "ForbiddenSyntax", 1, 5, "f-string"),
    ("x = 1\ny = f'{x}' % 2", "ForbiddenSyntax", 2, 5, "f-string"),
    ("x = b'abc'", "ForbiddenSyntax", 1, 5, "str"),
    ("x = 1j", "ForbiddenSyntax", 1, 5, "int and float"),
    ("x = ...", "ForbiddenSyntax", 1, 5, "pass"),
    ("x = [1]\nx[0]()", "ForbiddenSyntax", 2, 1, "only tools"),
    ("len(1)()", "ForbiddenSyntax", 1, 1, "only tools"),
    ("x = {}\nx.a = 1", "ForbiddenSyntax", 2, 1, "dict"),
    (
        "x = [i async for i in y]",
        "ForbiddenSyntax",
        1,
        18,
        "plain for",
    ),
    ("x = await y", "SyntaxError", 1, 5, "directly"),
    ("x = (yield 1)", "SyntaxError", 1, 6, "build a list"),
    // CPython's scopes: a comprehension's, from its first target on, and a
    // key= lambda's (where `yield` is valid Python, so only the subset refuses it).
    (
        "x = [(yield) for y in z]",
        "SyntaxError",
        1,
        7,
        "build a list",
    ),
    (
        "x = [y for y in (yield)]",
        "SyntaxError",
        1,
        18,
        "build a list",
    ),
    (
        "x = {1: (yield) for y in z}",
        "SyntaxError",
        1,
        10,
        "build a list",
    ),
    ("x = [await v for y in z]", "SyntaxError", 1, 5, "directly"),
    (
        "a = []\nx = sorted(a, key=lambda v: (yield))",
        "ForbiddenSyntax",
        2,
        30,
        "build a list",
    ),
    (
        "x = sorted(a, key=lambda v: await v)",
        "SyntaxError",
        1,
        29,
        "directly",
    ),
    // --- forbidden names ---
    ("eval('1')", "ForbiddenName", 1, 1, "cannot be generated"),
    ("exec('x=1')", "ForbiddenName", 1, 1, "cannot be generated"),
    (
        "compile('1', 'f', 'eval')",
        "ForbiddenName",
        1,
        1,
        "cannot be generated",
    ),
    ("open('x')", "ForbiddenName", 1, 1, "read_file(path)"),
    ("x = open", "ForbiddenName", 1, 5, "read_file(path)"),
    ("open = 1", "ForbiddenName", 1, 1, "read_file(path)"),
    ("getattr(1, 'real')", "ForbiddenName", 1, 1, "introspection"),
    ("setattr(1, 'a', 2)", "ForbiddenName", 1, 1, "introspection"),
    ("delattr(1, 'a')", "ForbiddenName", 1, 1, "introspection"),
    ("hasattr(1, 'a')", "ForbiddenName", 1, 1, "introspection"),
    ("globals()", "ForbiddenName", 1, 1, "introspection"),
    ("locals()", "ForbiddenName", 1, 1, "introspection"),
    ("vars()", "ForbiddenName", 1, 1, "introspection"),
    ("dir()", "ForbiddenName", 1, 1, "introspection"),
    ("type(1)", "ForbiddenName", 1, 1, "isinstance"),
    // A data-ish forbidden name assigned in the program is a variable, but
    // still cannot be called; reflection names stay forbidden as targets.
    ("type = 'csv'\ntype(1)", "UnknownName", 2, 1, "read_file"),
    (
        "id = 1\nx = eval",
        "ForbiddenName",
        2,
        5,
        "cannot be generated",
    ),
    ("getattr = 1", "ForbiddenName", 1, 1, "introspection"),
    ("x = id", "ForbiddenName", 1, 5, "introspection"),
    ("id(1)", "ForbiddenName", 1, 1, "introspection"),
    ("input()", "ForbiddenName", 1, 1, "cannot read input"),
    ("breakpoint()", "ForbiddenName", 1, 1, "print"),
    ("memoryview(1)", "ForbiddenName", 1, 1, "str"),
    ("object()", "ForbiddenName", 1, 1, "introspection"),
    ("super()", "ForbiddenName", 1, 1, "introspection"),
    ("help()", "ForbiddenName", 1, 1, "listed"),
    ("exit()", "ForbiddenName", 1, 1, "last statement"),
    ("quit()", "ForbiddenName", 1, 1, "last statement"),
    ("callable(len)", "ForbiddenName", 1, 1, "introspection"),
    ("issubclass(int, int)", "ForbiddenName", 1, 1, "isinstance"),
    ("classmethod(1)", "ForbiddenName", 1, 1, "cannot be defined"),
    (
        "staticmethod(1)",
        "ForbiddenName",
        1,
        1,
        "cannot be defined",
    ),
    ("property(1)", "ForbiddenName", 1, 1, "cannot be defined"),
    ("iter([1])", "ForbiddenName", 1, 1, "for loop"),
    ("next(x)", "ForbiddenName", 1, 1, "for loop"),
    ("hash(1)", "ForbiddenName", 1, 1, "introspection"),
    ("format(1, 'x')", "ForbiddenName", 1, 1, "f-string"),
    ("x = [eval]", "ForbiddenName", 1, 6, "cannot be generated"),
    (
        "for open in [1]:\n    pass",
        "ForbiddenName",
        1,
        5,
        "read_file",
    ),
    (
        "x = sorted([1], key=getattr)",
        "ForbiddenName",
        1,
        21,
        "introspection",
    ),
    // --- unicode look-alikes (NFKC) ---
    ("ｏｐｅｎ('x')", "ForbiddenName", 1, 1, "read_file(path)"),
    (
        "ｅｖａｌ('1')",
        "ForbiddenName",
        1,
        1,
        "cannot be generated",
    ),
    ("x = 𝐨𝐩𝐞𝐧", "ForbiddenName", 1, 5, "read_file"),
    (
        "ｘ = 1\nx.ｆｏｒｍａｔ()",
        "MethodNotAllowed",
        2,
        1,
        "f-string",
    ),
    // --- underscore names / attributes ---
    ("__import__('os')", "ForbiddenName", 1, 1, "already loaded"),
    ("_x = 1", "UnderscoreName", 1, 1, "'_'"),
    ("x = _", "UnderscoreName", 1, 5, "'_'"),
    ("x = __builtins__", "UnderscoreName", 1, 5, "'_'"),
    ("x = ''.__class__", "UnderscoreName", 1, 5, "dict keys"),
    (
        "x = ''.__class__.__mro__[1].__subclasses__()",
        "UnderscoreName",
        1,
        5,
        "dict keys",
    ),
    ("x = [].__len__()", "UnderscoreName", 1, 5, "dict keys"),
    ("x = 1\ny = x._secret", "UnderscoreName", 2, 5, "dict keys"),
    (
        "for _ in range(3):\n    pass",
        "UnderscoreName",
        1,
        5,
        "instead of '_'",
    ),
    ("x = [_ for _ in range(3)]", "UnderscoreName", 1, 6, "'_'"),
    ("print(1, _end='')", "UnderscoreName", 1, 15, "'_'"),
    (
        "x = sorted([1], key=lambda _v: _v)",
        "UnderscoreName",
        1,
        28,
        "'_'",
    ),
    (
        "ｘ = 1\nx.__ｃｌａｓｓ__",
        "UnderscoreName",
        2,
        1,
        "dict keys",
    ),
    ("x = f'{().__class__}'", "UnderscoreName", 1, 8, "dict keys"),
    // --- unknown names ---
    ("read('a.txt')", "UnknownName", 1, 1, "read_file"),
    (
        "x = read_files('a')",
        "UnknownName",
        1,
        5,
        "did you mean read_file",
    ),
    ("x = y + 1", "UnknownName", 1, 5, "available tools"),
    (
        "print(undefined_var)",
        "UnknownName",
        1,
        7,
        "available tools",
    ),
    (
        "x = map(str, [1])",
        "UnknownName",
        1,
        5,
        "list comprehension",
    ),
    (
        "x = filter(None, [1])",
        "UnknownName",
        1,
        5,
        "list comprehension",
    ),
    ("x = pow(2, 3)", "UnknownName", 1, 5, "multiply"),
    ("glob('*.py')", "UnknownName", 1, 1, "find_files"),
    ("x = chr(65)", "UnknownName", 1, 5, "string literals"),
    ("x = true", "UnknownName", 1, 5, "True"),
    ("x = os.path", "UnknownName", 1, 5, "modules"),
    ("x = json.loads('1')", "UnknownName", 1, 5, "modules"),
    ("x = 1\nx()", "UnknownName", 2, 1, "available tools"),
    ("x = lenn([1])", "UnknownName", 1, 5, "did you mean len"),
    // --- methods and attributes ---
    ("x = 'a{}'.format(1)", "MethodNotAllowed", 1, 5, "f-string"),
    (
        "x = 'a'\ny = x.format(1)",
        "MethodNotAllowed",
        2,
        5,
        "f-string",
    ),
    (
        "x = 'a'\ny = x.format_map({})",
        "MethodNotAllowed",
        2,
        5,
        "f-string",
    ),
    ("x = 'a'\ny = x.encode()", "MethodNotAllowed", 2, 5, "bytes"),
    (
        "x = 'a'\ny = x.translate({})",
        "MethodNotAllowed",
        2,
        5,
        "replace",
    ),
    (
        "x = 'a'\ny = x.maketrans('a', 'b')",
        "MethodNotAllowed",
        2,
        5,
        "replace",
    ),
    ("x = [1].upper()", "MethodNotAllowed", 1, 5, "allowlisted"),
    ("x = 'abc'.append(1)", "MethodNotAllowed", 1, 5, ""),
    (
        "x = 'a'\ny = x.startsWith('a')",
        "MethodNotAllowed",
        2,
        5,
        "startswith",
    ),
    ("x = [1]\nx.push(2)", "MethodNotAllowed", 2, 1, "append"),
    (
        "x = 'a'\ny = x.contains('a')",
        "MethodNotAllowed",
        2,
        5,
        "in",
    ),
    ("x = {}\ny = x.has_key('a')", "MethodNotAllowed", 2, 5, "in"),
    ("x = 1\ny = x.conjugate()", "MethodNotAllowed", 2, 5, ""),
    ("x = (1).real", "AttributeNotAllowed", 1, 5, "call a method"),
    (
        "x = 'a'.upper",
        "AttributeNotAllowed",
        1,
        5,
        "call a method",
    ),
    (
        "x = [1]\ny = x.append",
        "AttributeNotAllowed",
        2,
        5,
        "call it",
    ),
    ("x = {}.keys", "AttributeNotAllowed", 1, 5, "call a method"),
    // --- builtins and tools as values / assignment targets ---
    ("print(read_file)", "BuiltinAsValue", 1, 7, "read_file(...)"),
    ("f = len", "BuiltinAsValue", 1, 5, "len(...)"),
    ("x = [print]", "BuiltinAsValue", 1, 6, "print(...)"),
    (
        "x = isinstance(1, len)",
        "BuiltinAsValue",
        1,
        19,
        "len(...)",
    ),
    (
        "x = sorted([1], key=read_file)",
        "BuiltinAsValue",
        1,
        21,
        "read_file(...)",
    ),
    ("x = str", "BuiltinAsValue", 1, 5, "str(...)"),
    (
        "x = sorted(['a'], key=str.lower)",
        "BuiltinAsValue",
        1,
        23,
        "lambda v: v.lower()",
    ),
    ("x = str.lower('A')", "BuiltinAsValue", 1, 5, "str(...)"),
    ("len = 3", "AssignToBuiltin", 1, 1, "another variable name"),
    (
        "read_file = 3",
        "AssignToBuiltin",
        1,
        1,
        "another variable name",
    ),
    (
        "for print in [1]:\n    pass",
        "AssignToBuiltin",
        1,
        5,
        "another variable name",
    ),
    (
        "x, list = 1, 2",
        "AssignToBuiltin",
        1,
        4,
        "another variable name",
    ),
    (
        "x = [sum for sum in [1]]",
        "BuiltinAsValue",
        1,
        6,
        "sum(...)",
    ),
    (
        "for x in [1]:\n    sum = x",
        "AssignToBuiltin",
        2,
        5,
        "another",
    ),
    (
        "x = sorted([1], key=lambda len: len)",
        "AssignToBuiltin",
        1,
        28,
        "another",
    ),
    (
        "x = 'abc'\nsorted(['a'], key=x.format)",
        "MethodNotAllowed",
        2,
        19,
        "f-string",
    ),
    (
        "x = 'abc'\nsorted(['a'], key=x.__len__)",
        "UnderscoreName",
        2,
        19,
        "dict keys",
    ),
    // --- syntax, loops, literals ---
    ("None = 1", "SyntaxError", 1, 1, ""),
    ("True = 1", "SyntaxError", 1, 1, ""),
    ("*a = [1]", "SyntaxError", 1, 1, ""),
    ("a = *[1]", "SyntaxError", 1, 5, ""),
    ("*a, *b = [1, 2]", "SyntaxError", 1, 1, ""),
    ("x = 1\nx + 1 = 2", "SyntaxError", 2, 1, ""),
    ("len([1]) = 1", "SyntaxError", 1, 1, ""),
    ("for 1 in [1]:\n    pass", "SyntaxError", 1, 5, ""),
    ("x = [1]\nfor *a in x:\n    pass", "SyntaxError", 2, 5, ""),
    ("x, y = 1, 2\nx, y += 1", "SyntaxError", 2, 1, ""),
    ("print(x for x in [1], 1)", "SyntaxError", 1, 7, ""),
    ("print(x for x in [1], )", "SyntaxError", 1, 7, ""),
    (
        "print(x for x in [1]  # a comment\n ,)",
        "SyntaxError",
        1,
        7,
        "",
    ),
    ("print((x) for x in [1], 1)", "SyntaxError", 1, 8, ""),
    ("print(1, (x) for x in [1])", "SyntaxError", 1, 11, ""),
    (
        "x = sorted((x, y) for x in [1] for y in ')',)",
        "SyntaxError",
        1,
        12,
        "",
    ),
    ("x = [2 for 1 in [1]]", "SyntaxError", 1, 12, ""),
    ("x = (", "SyntaxError", 1, 5, "Python 3.11"),
    ("x = [1,\n  2,\ny = 3", "SyntaxError", 1, 5, "Python 3.11"),
    ("x = [1)", "SyntaxError", 1, 7, "Python 3.11"),
    ("x = 1)", "SyntaxError", 1, 6, "Python 3.11"),
    ("x = = 1", "SyntaxError", 1, 5, "Python 3.11"),
    ("if x\n    pass", "SyntaxError", 1, 5, "Python 3.11"),
    ("break", "SyntaxError", 1, 1, ""),
    ("continue", "SyntaxError", 1, 1, ""),
    (
        "for x in [1]:\n    pass\nelse:\n    break",
        "SyntaxError",
        4,
        5,
        "",
    ),
    ("x = 1\0", "SyntaxError", 1, 6, ""),
    // malformed number literals: CPython's tokenizer errors and carets
    ("x = 0777", "SyntaxError", 1, 5, ""),
    ("x = 1\ny = [0b102, 2]", "SyntaxError", 2, 10, ""),
    ("x = 0xz", "SyntaxError", 1, 6, ""),
    ("x = 1_", "SyntaxError", 1, 6, ""),
    ("x = 1.bit_length()", "SyntaxError", 1, 6, ""),
    // characters that cannot be in a name: CPython's "invalid character"
    // at the character (rustpython-parser takes an emoji for a name)
    ("\u{23e9} = 1", "SyntaxError", 1, 1, ""),
    ("x = [1, \u{23e9}]", "SyntaxError", 1, 9, ""),
    ("print(\u{23e9}=1)", "SyntaxError", 1, 7, ""),
    ("x = [1]\nx.\u{23e9}", "SyntaxError", 2, 3, ""),
    ("x = a\u{23e9} + 1", "SyntaxError", 1, 6, ""),
    ("x\u{20ac} = 1", "SyntaxError", 1, 2, ""),
    // a letter of Unicode 15 (Nag Mundari), unknown to CPython 3.11, and a
    // Unicode 14 combining mark at the start of a name
    ("x\u{1e4d0} = 1", "SyntaxError", 1, 2, ""),
    ("\u{1ac1}x = 1", "SyntaxError", 1, 1, ""),
    ("x = a\u{a0}+ 1", "SyntaxError", 1, 6, ""),
    // A SyntaxError is the first error even after an earlier subset
    // violation: it is CPython's answer for the program.
    ("x = y\nbreak", "SyntaxError", 2, 1, ""),
    ("x = 1 @ 2\n[v for 0 in [1]]", "SyntaxError", 2, 8, ""),
    ("print(open)\nprint(sep=1, sep=2)", "SyntaxError", 2, 14, ""),
    // --- lone surrogates: accepted (surrogate mode); a real placeholder
    // character (U+10F800..U+10FFFF) beside one is refused, and columns after
    // a rewritten escape are those of the program as written ---
    (
        "x = '\\ud800' + '\u{10FFFF}'",
        "ForbiddenSyntax",
        1,
        17,
        "private-use",
    ),
    (
        "x = '\\U0010f800'\ny = '\\udfff'",
        "ForbiddenSyntax",
        1,
        6,
        "private-use",
    ),
    ("x = '\\ud800\\udc00' + y", "UnknownName", 1, 22, ""),
    (
        "x = 'é\\ud800'; y = r'\\ud800' + zz",
        "UnknownName",
        1,
        32,
        "",
    ),
    ("x = ('\\udfff'\n     + q)", "UnknownName", 2, 8, ""),
    ("x = f'{a}\\ud800'", "UnknownName", 1, 8, ""),
    (
        "x = '\\ud800' + b'\\ud800'",
        "ForbiddenSyntax",
        1,
        16,
        "bytes",
    ),
    // --- isinstance: type names only in its second argument's displays ---
    ("x = isinstance(1, {int: 1})", "BuiltinAsValue", 1, 20, ""),
    (
        "x = isinstance(1, [int] + [str])",
        "BuiltinAsValue",
        1,
        20,
        "",
    ),
    // --- \N{...} names CPython 3.11 (Unicode 14.0) does not know (caret after the string) ---
    (
        "x = 'ab\\N{SHAKING FACE}'",
        "SyntaxError",
        1,
        25,
        "Unicode 14.0",
    ),
    (
        "x = 1\ny = f'{x}\\N{PINK HEART}'",
        "SyntaxError",
        2,
        25,
        "Unicode 14.0",
    ),
    (
        "x = '\\N{CJK UNIFIED IDEOGRAPH-31350}'",
        "SyntaxError",
        1,
        38,
        "Unicode 14.0",
    ),
    (
        "x = '\\N{hangul syllable GAG}'",
        "SyntaxError",
        1,
        30,
        "Unicode 14.0",
    ),
    (
        "x = '\\N{CJK UNIFIED IDEOGRAPH-4e00}'",
        "SyntaxError",
        1,
        37,
        "Unicode 14.0",
    ),
];

#[test]
fn rejection_table() {
    assert!(REJECT.len() >= 120, "only {} rejection cases", REJECT.len());
    let mut failures = Vec::new();
    for (src, ty, line, col, hint) in REJECT {
        let errs = errors(src);
        let Some(e) = errs.first() else {
            failures.push(format!("{src:?}: accepted, expected {ty}"));
            continue;
        };
        let got_hint = e.hint.clone().unwrap_or_default();
        if e.type_name != *ty
            || e.line != Some(*line)
            || e.col != Some(*col)
            || !got_hint.contains(hint)
            || e.kind != lackpy_policy::wire::ErrorKind::Validation
        {
            failures.push(format!(
                "{src:?}: expected {ty} {line}:{col} hint~{hint:?}; got {} {:?}:{:?} {:?} hint {:?}",
                e.type_name, e.line, e.col, e.message, e.hint
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const ACCEPT: &[&str] = &[
    "x = '\u{23e9}' + f'{1}\u{23e9}'  # \u{23e9}\nx",
    "\u{2118} = 1\n\u{2118}",
    // indentation CPython measures as consistent: a tab after a space, a
    // block at one tab holding one at nine spaces
    "if 1:\n \tx = 1\n \tif x:\n\t         y = 2",
    // letters added in Unicode 11-14 (CPython 3.11 has Unicode 14.0):
    // Georgian Mtavruli, U+A7BA, CJK extension G, Toto, and a Unicode 14
    // combining mark after the first character
    "\u{1c90}\u{1c91} = 1\n\u{a7ba} = 2\n\u{30000} = 3\n\u{1e290}x\u{1ac1} = 4",
    // generator expressions: parenthesized ones may have company
    "print((x for x in [1]), )",
    "print((x) for x in [1])",
    "print(((x) for x in [1]), 1)",
    "xs = sorted((x, y) for x in [1] for y in '(')",
    "print(x for x in [1]  # one, two\n)",
    "x = 1",
    "id = 1\ntype = 'csv'\nformat = 'json'\nnext = id + 1\n[id, type, format, next]",
    "rows = [{'id': 1}]\nfor row in rows:\n    id = row['id']\nid",
    "x = 1\nx",
    "x = -1.5e3 + +2 - 3 * 4 / 5 // 6 % 7",
    "x = 'a' 'b' \"c\" '''d'''",
    "x = r'\\d' + u'x'",
    "x = None\ny = True and False or not x",
    "x = [1, 2, *[3]]\ny = (1,)\nz = {1: 2, **{3: 4}}\nw = {1, 2}\nv = ()",
    "a, b = 1, 2\n[c, d] = [3, 4]\n(e, *f) = [1, 2, 3]",
    "x = y = 3",
    "x = [1, 2]\nx[0] = 5\nx[1:] = [3]",
    "d = {}\nd['k'] = 1\nd['k'] += 1",
    "x = 1\nx += 1\nx -= 1\nx *= 2\nx /= 2\nx //= 1\nx %= 3",
    "for i in range(3):\n    if i == 1:\n        continue\n    elif i == 2:\n        break\n    else:\n        pass\nelse:\n    pass",
    "for i, v in enumerate([1]):\n    print(i, v)",
    "for k, v in {1: 2}.items():\n    print(k, v)",
    "x = 1 < 2 <= 3 != 4 == 4 > 0 >= 0",
    "x = 1 in [1] and 2 not in [1] and None is None and 1 is not None",
    "x = [i * 2 for i in range(10) if i % 2 for j in range(2)]",
    "x = {i: i for i in range(3)}\ny = {i for i in range(3)}\nz = sum(i for i in range(3))",
    "x = 1 if True else 2",
    "x = [1, 2, 3]\ny = x[0] + x[-1] + len(x[1:2]) + len(x[::2]) + len(x[:])",
    "n = 3.14159\nx = f'{n:.2f} {n!r} {n!s} {n!a} {n=} {n:>{10}} {{literal}}'",
    "x = f'{\"nested\"}' + f\"{'a' + f'{1}'}\"",
    "print('a', 'b', sep=', ', end='')",
    "x = sorted([3, 1], key=lambda v: -v, reverse=True)",
    "x = sorted(['a'], key=len)",
    "counts = {'a': 1}\nx = sorted(counts, key=counts.get)",
    "x = max([1], key=lambda v: v)\ny = min([1], key=abs)",
    "x = [[1, 2]]\nx.sort(key=lambda r: r[1])",
    "x = sort_by([{'a': 1}], 'a')\ny = sort_by([[1]], 0, reverse=True)",
    "x = isinstance(1, int)\ny = isinstance(1, (int, float, str, bool, list, dict, set, tuple))",
    "x = len([1]) + abs(-1) + round(1.5) + sum([1]) + int('1') + float('1') + bool(1)",
    "x = str(1) + repr(1)\ny = list(range(3)) + list(reversed([1])) + list(zip([1], [2]))",
    "x = dict(a=1)\ny = set([1])\nz = tuple([1])\nw = any([1]) or all([1])",
    "x = 'a,b'.split(',')\ny = ' '.join(x).upper().strip()",
    "x = 'abc'\ny = x.replace('a', 'b').startswith('b') and x.endswith('c')",
    "x = [1]\nx.append(2)\nx.extend([3])\nx.insert(0, 0)\nx.pop()\nx.remove(0)\nx.reverse()\nx.sort()\nx.clear()",
    "d = {}\nd.get('a')\nd.setdefault('a', 1)\nd.update({'b': 2})\nlist(d.keys())\nd.pop('a')\nd.popitem()\nd.values()",
    "s = set()\ns.add(1)\ns.discard(1)\ns.union({1}).intersection({1}).difference({2})",
    "x = (1, 2).count(1) + (1,).index(1) + (5).bit_length()\ny = (1.0).is_integer()",
    "x = read_file('a.txt')\nfiles = find_files('*.py')\nlen(files)",
    "for f in find_files('**/*.py'):\n    content = read_file(f)\n    if 'TODO' in content:\n        print(f\"TODO in {f}\")",
    "x = {**{'a': 1}, 'b': 2}\nprint(*[1, 2], **{'sep': '-'})",
    "x = 10\nif x > 5: y = 1\nelse: y = 2",
    "x = '__class__'\ny = {'__init__': 1}['__init__']",
    "x = [1][0]\ny = -x\nz = +x\nw = not x",
    "x = 1; y = 2; z = x + y",
    "# comment only\nx = 1  # trailing\n",
    "x = (\n    1 +\n    2\n)",
    "x = 1 + \\\n    2",
    "pass",
    "",
    "x = [n for n in [1, 2] if n > 1]\nn = 0",
    "ｘ = 1\nprint(x)",
    "x = 0x1F + 0o7 + 0b1 + 1_000",
    "x = sorted({'b': 1, 'a': 2}.items(), key=lambda kv: kv[1])",
    "x = 'a' * 3 + 'b'\ny = [0] * 3",
    "x = 5 % 3\ny = 'abc'[1]",
    "tools = search('x')\ntools",
    "a, *b = [1, 2, 3]\n[c, *d] = 'xy'\nfor e, *f in [[1, 2]]:\n    pass",
    "print(*[1], *[2])\nx = [*[1], *(2,)]\ny = {*[1]}\nz = (*[1],)",
    "x = sum(v for v in [1])\ny = sorted((v for v in [2]), reverse=True)",
    "x = r'\\ud800' + '\\\\ud800' + '\\ufffd' + '\u{fffd}' + '\\U0001f600' + '\\N{BULLET}'",
    "x = isinstance(1)\ny = isinstance(int)\nz = isinstance(1, int, (str, int))",
    // nested tuples (valid in CPython), a list of types (CPython's TypeError when called)
    "x = isinstance(1, (list, (tuple, str)), [int, (float,)])\ny = isinstance(1, [int, 2])",
    "x = isinstance(1, {int})\ny = isinstance(1, (str, {int, (float, 2)}))",
    "x = range(3).index(1) + range(3).count(2)",
    "x = '\\ud800' + '\\U0000dfff' + f'{1}\\udc00' + '\\ud83d\\ude00'",
    "x = r'\\ud800' + '\\\\ud800' + '\u{10FFFF}'",
    "x = 0 or'\\ud800'",
    "x = '\\N{bullet}\\N{NULL}\\N{BOM}\\N{HANGUL SYLLABLE GAG}\\N{CJK UNIFIED IDEOGRAPH-4E00}' + r'\\N{SHAKING FACE}'",
];

#[test]
fn acceptance_table() {
    let failures: Vec<String> = ACCEPT
        .iter()
        .map(|src| (src, errors(src)))
        .filter(|(_, errs)| !errs.is_empty())
        .map(|(src, errs)| format!("{src:?}: {errs:?}"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn reports_all_violations_in_order() {
    let errs = errors("import os\nx = open('a')\nwhile True:\n    pass\ny = 2 ** 3\n");
    let got: Vec<(&str, Option<u32>)> = errs
        .iter()
        .map(|e| (e.type_name.as_str(), e.line))
        .collect();
    assert_eq!(
        got,
        vec![
            ("ForbiddenSyntax", Some(1)),
            ("ForbiddenName", Some(2)),
            ("ForbiddenSyntax", Some(3)),
            ("ForbiddenSyntax", Some(5)),
        ]
    );
    // Deterministic: same input, same output.
    assert_eq!(
        errs,
        errors("import os\nx = open('a')\nwhile True:\n    pass\ny = 2 ** 3\n")
    );
}

#[test]
fn bracket_messages_are_cpythons() {
    let m = |src: &str| errors(src)[0].message.clone();
    assert_eq!(m("x = ("), "'(' was never closed");
    assert_eq!(
        m("x = [1)"),
        "closing parenthesis ')' does not match opening parenthesis '['"
    );
    assert_eq!(
        m("x = [1,\n2)"),
        "closing parenthesis ')' does not match opening parenthesis '[' on line 1"
    );
    assert_eq!(m("x = 1)"), "unmatched ')'");
    assert_eq!(
        m("x = 'abc\ny = 1"),
        "unterminated string literal (detected at line 1)"
    );
    assert_eq!(
        m("x = 1\ny = \"\"\"abc\n\n"),
        "unterminated triple-quoted string literal (detected at line 3)"
    );
    assert_eq!(
        (errors("x = f'abc")[0].line, errors("x = f'abc")[0].col),
        (Some(1), Some(5))
    );
    // Brackets inside strings and comments do not count.
    assert_eq!(m("x = '(' + \n"), errors("x = '(' + \n")[0].message);
    assert!(errors("x = ')'  # (\ny = \"[\"").is_empty());
}

/// CPython 3.11's own wording, line and column (`compile()`'s `msg`,
/// `lineno`, `offset`) for the commonest mistakes.
const CPYTHON_SYNTAX: &[(&str, &str, u32, u32)] = &[
    ("for i in range(3)\n    print(i)", "expected ':'", 1, 18),
    ("x = 5\nif x > 3\n    x", "expected ':'", 2, 9),
    ("if x:\n    pass\nelse\n    pass", "expected ':'", 3, 5),
    ("if x:\n    pass\nelif y\n    pass", "expected ':'", 3, 7),
    (
        "for x in y:\n    pass\nelse\n    pass",
        "expected ':'",
        3,
        5,
    ),
    (
        "if x = 1:\n    pass",
        "invalid syntax. Maybe you meant '==' or ':=' instead of '='?",
        1,
        4,
    ),
    (
        "while x = 1:\n    pass",
        "invalid syntax. Maybe you meant '==' or ':=' instead of '='?",
        1,
        7,
    ),
    (
        "x = [a = 1]",
        "invalid syntax. Maybe you meant '==' or ':=' instead of '='?",
        1,
        6,
    ),
    (
        "if x.y = 1:\n    pass",
        "cannot assign to attribute here. Maybe you meant '==' instead of '='?",
        1,
        4,
    ),
    (
        "if x[0] = 1:\n    pass",
        "cannot assign to subscript here. Maybe you meant '==' instead of '='?",
        1,
        4,
    ),
    (
        "if x % 2 = 0:\n    pass",
        "cannot assign to expression here. Maybe you meant '==' instead of '='?",
        1,
        4,
    ),
    (
        "if len(x) = 2:\n    pass",
        "cannot assign to function call here. Maybe you meant '==' instead of '='?",
        1,
        4,
    ),
    (
        "if 1 = x:\n    pass",
        "cannot assign to literal here. Maybe you meant '==' instead of '='?",
        1,
        4,
    ),
    ("if x = y = 1:\n    pass", "invalid syntax", 1, 6),
    ("if x == 1 or y = 2:\n    pass", "invalid syntax", 1, 16),
    (
        "print('a' 'b' c)",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        7,
    ),
    (
        "x = [1, 2 3]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        9,
    ),
    (
        "x = (a b)",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        6,
    ),
    (
        "f(a=b c)",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        5,
    ),
    (
        "x = {a: b c}",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        9,
    ),
    (
        "x = [a.b(1)[2] c]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        6,
    ),
    (
        "x = [1 not 2]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        6,
    ),
    ("x = [c d]", "invalid syntax", 1, 8),
    ("x = [a 'b']", "invalid syntax", 1, 8),
    ("x = [y for y in z q]", "invalid syntax", 1, 19),
    (
        "f(x) = 1",
        "cannot assign to function call here. Maybe you meant '==' instead of '='?",
        1,
        1,
    ),
    (
        "x + 1 = 2",
        "cannot assign to expression here. Maybe you meant '==' instead of '='?",
        1,
        1,
    ),
    (
        "a, f(x) = 1, 2",
        "cannot assign to function call here. Maybe you meant '==' instead of '='?",
        1,
        4,
    ),
    ("x = f() = 3", "cannot assign to function call", 1, 5),
    (
        "1 = x",
        "cannot assign to literal here. Maybe you meant '==' instead of '='?",
        1,
        1,
    ),
    (
        "for i in range(3):\nprint(i)",
        "expected an indented block after 'for' statement on line 1",
        2,
        1,
    ),
    (
        "if x:\n    pass\nelse:\nz",
        "expected an indented block after 'else' statement on line 3",
        4,
        1,
    ),
    (
        "while x:\ny",
        "expected an indented block after 'while' statement on line 1",
        2,
        1,
    ),
    (
        "if x:\n    if y:\nz",
        "expected an indented block after 'if' statement on line 2",
        3,
        0,
    ),
    ("x = 1 +", "invalid syntax", 1, 8),
    (
        "x = {'a': 1, 'b'}",
        "':' expected after dictionary key",
        1,
        16,
    ),
    (
        "x = {'a': 1, 'b' 2}",
        "':' expected after dictionary key",
        1,
        16,
    ),
    (
        "x = {'a': 1, f(x)}",
        "':' expected after dictionary key",
        1,
        17,
    ),
    ("x = 1 if y", "expected 'else' after 'if' expression", 1, 5),
    (
        "x = [1 if y]",
        "expected 'else' after 'if' expression",
        1,
        6,
    ),
    (
        "x = 1 if y + 2",
        "expected 'else' after 'if' expression",
        1,
        5,
    ),
    ("x += 1 = 2", "invalid syntax", 1, 8),
    ("x = 1\n  y = 2", "unexpected indent", 2, 2),
    // An ASCII character no token starts with: the parser's error, at it.
    ("x = $", "invalid syntax", 1, 5),
    // A chained assignment with an invalid target whose second target has
    // a lower precedence than `bitwise_or`: invalid_named_expression.
    ("x = a < b = 1", "invalid syntax. Maybe you meant '==' or ':=' instead of '='?", 1, 1),
    ("x = a if b else c = 1", "invalid syntax. Maybe you meant '==' or ':=' instead of '='?", 1, 1),
    ("x, y = a and b = 1", "invalid syntax. Maybe you meant '==' or ':=' instead of '='?", 1, 4),
    ("x[0] = a < b = 1", "cannot assign to subscript here. Maybe you meant '==' instead of '='?", 1, 1),
    ("(x) = a < b = 1", "cannot assign to name here. Maybe you meant '==' instead of '='?", 1, 2),
    ("x = (a < b) = 1", "cannot assign to comparison", 1, 6),
    ("x = y = a < b = 1", "cannot assign to comparison", 1, 9),
    // A backslash continuing the last line into the end of the text.
    ("x = 1 \\\n", "unexpected EOF while parsing", 1, 8),
    ("x = 1 \\", "unexpected EOF while parsing", 1, 8),
    ("x = 1\ny = 2 + \\\n", "unexpected EOF while parsing", 2, 10),
    ("if x: \\\n", "unexpected EOF while parsing", 1, 8),
    ("x = 1 +  # \\\n", "invalid syntax", 1, 10),
    ("x = \"abc\\\n", "unterminated string literal (detected at line 1)", 1, 5),
    ("x = \"a\\\nb", "unterminated string literal (detected at line 2)", 1, 5),
    // A lone CR ends a line, as in CPython's tokenizer.
    ("x = 1\ry = $", "invalid syntax", 2, 5),
    ("x = 1\r\ny = $", "invalid syntax", 2, 5),
    // CPython's SyntaxErrors come phase by phase: parser, symbol table
    // (its walk, then its analysis), compiler.
    ("break\nx = [(yield) for i in y]", "'yield' inside list comprehension", 2, 7),
    ("continue\nnonlocal x", "nonlocal declaration not allowed at module level", 2, 1),
    ("nonlocal x\nx = [(yield) for i in y]", "'yield' inside list comprehension", 2, 7),
    ("break\n1 = x", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 2, 1),
    ("*a = 1\nnonlocal q", "nonlocal declaration not allowed at module level", 2, 1),
    // A repeated keyword is the compiler's (rustpython's parser refuses it).
    ("f(x=1, x=2)\ny = [(yield) for i in z]", "'yield' inside list comprehension", 2, 7),
    ("break\nf(a=1, a=2)", "'break' outside loop", 1, 1),
    ("f(a=1, a=2)\nbreak", "keyword argument repeated: a", 1, 8),
    ("f(a=1, a=2, a=3, b=4, b=5)", "keyword argument repeated: a", 1, 8),
    ("print(sep=1, sep=2)\nx = 1 +", "invalid syntax", 2, 8),
    ("print(a=1, a=2)\nnonlocal x", "nonlocal declaration not allowed at module level", 2, 1),
    (
        "print(a=1, a=2)\nx = '\\N{SHAKING FACE}'",
        "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-15: unknown Unicode character name",
        2,
        23,
    ),
    ("f(a, *b, c=1, **d, e)", "positional argument follows keyword argument unpacking", 1, 21),
    ("f(**d, c=1, e)", "positional argument follows keyword argument unpacking", 1, 14),
    ("f(c=2**3, e, **d)", "positional argument follows keyword argument", 1, 17),
    ("x = {a: *b}", "cannot use a starred expression in a dictionary value", 1, 9),
    ("x = {1: 2, a: *b, 3: 4}", "cannot use a starred expression in a dictionary value", 1, 15),
    ("x = {**a, b: *c}", "cannot use a starred expression in a dictionary value", 1, 14),
    ("x = a ? b : c", "invalid syntax", 1, 7),
    ("x = `a`", "invalid syntax", 1, 5),
    ("x = 1 <> 2", "invalid syntax", 1, 7),
    ("if a <> b:\n    pass", "invalid syntax", 1, 6),
    ("x = [1,\n  2 $ 3]", "invalid syntax", 2, 5),
    // A TabError has no column in CPython: its caret is at the line's start.
    ("if 1:\n\tx = 1\n        y = 2", "inconsistent use of tabs and spaces in indentation", 3, 1),
    ("if 1:\n        x = 1\n\ty = 2", "inconsistent use of tabs and spaces in indentation", 3, 1),
    // Measured as CPython does (tabs to multiples of 8, and as one column).
    ("if 1:\n \tx = 1\n\t y = 2", "inconsistent use of tabs and spaces in indentation", 3, 1),
    ("if 1:\n    if 2:\n\tx = 1", "inconsistent use of tabs and spaces in indentation", 3, 1),
    ("if 1:\n\tx = 1\n  y = 2", "unindent does not match any outer indentation level", 3, 8),
    ("if 1:\n\tx = 1\n        y = 2 +", "inconsistent use of tabs and spaces in indentation", 3, 1),
    ("x = 1 +\nif 1:\n\tx = 1\n        y = 2", "invalid syntax", 1, 8),
    ("x = 1\n    y = 2", "unexpected indent", 2, 4),
    // An unclosed bracket is CPython's error only when its parser read to
    // the end, or past the bracket's line; the innermost one is named.
    ("x = [(1,", "'(' was never closed", 1, 6),
    ("for n in [1, 2:\n    pass", "invalid syntax", 1, 15),
    (
        "if (a and\n        b:\n    pass",
        "'(' was never closed",
        1,
        4,
    ),
    ("xs = [0, 0\nxs[0] = 1", "'[' was never closed", 1, 6),
    ("d['a' = 2\nd['m'] = 3", "'[' was never closed", 1, 2),
    (
        "if x:\n    y = 2\n  z = 3",
        "unindent does not match any outer indentation level",
        3,
        8,
    ),
    (
        "x = [m[0] d]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        7,
    ),
    ("x = [c d]", "invalid syntax", 1, 8),
    (
        "x = [a if b else e q]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        18,
    ),
    (
        "x = [y for y q]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        12,
    ),
    (
        "x = [s, s[], 1]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        9,
    ),
    (
        "x = [(5,) {'k': 1}]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        6,
    ),
    (
        "x = [*a b]",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        7,
    ),
    ("x = [a, *b c]", "invalid syntax", 1, 12),
    (
        "print('x' not 'y')",
        "invalid syntax. Perhaps you forgot a comma?",
        1,
        7,
    ),
    (
        "x = {1: 2, 3:}",
        "expression expected after dictionary key and ':'",
        1,
        13,
    ),
    ("if a:\n    pass\nelse c = 2", "expected ':'", 3, 6),
    ("try x", "expected ':'", 1, 5),
    (
        "print 'hello'",
        "Missing parentheses in call to 'print'. Did you mean print(...)?",
        1,
        1,
    ),
    ("x == 1 = 2", "cannot assign to comparison", 1, 1),
    ("x = (a, key=lambda v: 1)", "invalid syntax", 1, 12),
    (
        "x = [1 if y]",
        "expected 'else' after 'if' expression",
        1,
        6,
    ),
    (
        "x = 1 if 0== else 3",
        "expected 'else' after 'if' expression",
        1,
        5,
    ),
    ("xs = [0]\nxs[xs.pop = 'a'\n", "'[' was never closed", 2, 3),
    ("s = 'abc'\ns[True = 'x'", "invalid syntax", 2, 8),
    ("x = [a for a in b if a == ]", "invalid syntax", 1, 27),
    // A tokenizer error anywhere after the parser's error wins.
    ("x = 1 +\ny = 0777", "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers", 2, 5),
    ("x = [1 2]\ny = 1abc", "invalid decimal literal", 2, 5),
    ("x = 1 +\ny = \u{1f600}", "invalid character '\u{1f600}' (U+1F600)", 2, 5),
    ("x = 1 +\ny = 'abc", "unterminated string literal (detected at line 2)", 2, 5),
    ("print(\u{201c}hello\u{201d})", "invalid character '\u{201c}' (U+201C)", 1, 7),
    ("x = [1, 2\ny = \u{1f600}", "invalid character '\u{1f600}' (U+1F600)", 2, 5),
    // ... but not after an unexpected indent or a lexer error.
    ("x = 1\n  y = 2\nz = 0777", "unexpected indent", 2, 2),
    ("if x:\n    y = 1\n  z = 2\nw = 0777", "unindent does not match any outer indentation level", 3, 8),
    ("if x:\npass\nz = 0777", "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers", 3, 5),
    // f-string errors: the caret is on the token after the string(s).
    ("x = f\"{}\"", "f-string: empty expression not allowed", 1, 10),
    ("x = f\"{}\" + 'abc'", "f-string: empty expression not allowed", 1, 11),
    ("x = (f\"{}\"\n     \"abc\")", "f-string: empty expression not allowed", 2, 11),
    ("x = f\"{a\"", "f-string: expecting '}'", 1, 10),
    ("x = f\"a{b!}\"", "f-string: invalid conversion character: expected 's', 'r', or 'a'", 1, 13),
    ("x = f\"{a)}\"", "f-string: unmatched ')'", 1, 12),
    ("x = f\"}\"", "f-string: single '}' is not allowed", 1, 9),
    ("try:\n    x = 1\ny = 2", "expected 'except' or 'finally' block", 3, 1),
    ("x = {'a': 1, **}", "invalid syntax", 1, 16),
    // A trailing comment: CPython's NEWLINE token starts at the `#`.
    ("if x  # c\n    pass", "expected ':'", 1, 7),
    ("for j# in []:\n    pass", "invalid syntax", 1, 6),
    ("x = 1 +  # c\ny = 2", "invalid syntax", 1, 10),
    ("if x:  # c", "expected an indented block after 'if' statement on line 1", 1, 11),
    ("for x in y:\n    if x:\n", "expected an indented block after 'if' statement on line 2", 2, 10),
    ("x = '''abc\ndef\n", "unterminated triple-quoted string literal (detected at line 2)", 1, 5),
    ("x = a if b else c if d", "expected 'else' after 'if' expression", 1, 17),
    ("f(x=1, 2, 3)", "positional argument follows keyword argument", 1, 12),
    ("f(x=1,\n 2\n)", "positional argument follows keyword argument", 3, 1),
    ("x = f'{:,x}'", "f-string: expression required before ':'", 1, 13),
    ("x = f'{ !r}'", "f-string: expression required before '!'", 1, 13),
    ("x = [f'{5#06b}', 1]", "f-string expression part cannot include '#'", 1, 16),
    // A field's expression that does not parse: CPython compiles `(expr)`
    // alone, so the column is the caret's position in that text.
    ("x = f\"{1 +}\"", "f-string: invalid syntax", 1, 5),
    ("x = f\"{a} {b c}\"", "f-string: invalid syntax. Perhaps you forgot a comma?", 1, 2),
    ("x = f\"{ a  b}\"", "f-string: invalid syntax. Perhaps you forgot a comma?", 1, 3),
    ("\n\ny = 1;  x = f\"{a b}\"", "f-string: invalid syntax. Perhaps you forgot a comma?", 3, 2),
    ("x = f\"\"\"\n\n {1 +}\"\"\"", "f-string: invalid syntax", 3, 5),
    ("x = f\"{lambda x: 1}\"", "f-string: invalid syntax", 1, 10),
    ("x = f\"{a:>{b c}}\"", "f-string: invalid syntax. Perhaps you forgot a comma?", 1, 2),
    ("x = f\"{x if y}\"", "f-string: expected 'else' after 'if' expression", 1, 2),
    ("x = f\"{f'{a b}'}\"", "f-string: invalid syntax. Perhaps you forgot a comma?", 1, 2),
    ("x = f\"{a # b}\"", "f-string expression part cannot include '#'", 1, 15),
    // ... whose own tokenizer errors are worded as at top level.
    ("x = f'{5.2d}'", "invalid decimal literal", 1, 4),
    ("x = f'{\"x\"\u{1f600}>3}'", "invalid character '\u{1f600}' (U+1F600)", 1, 5),
    // A backslash in a field: the caret is after the string(s), too.
    ("x = f\"{'\\n'}\"", "f-string expression part cannot include a backslash", 1, 14),
    ("x = f\"{\\n}\"", "f-string expression part cannot include a backslash", 1, 12),
    ("x = (f\"{'\\n'}\"\n     \"tail\")", "f-string expression part cannot include a backslash", 2, 12),
    // A bad escape: the decoder's positions (non-ASCII characters count
    // ten bytes, f-strings are decoded piece by piece), caret after the
    // string(s); it wins over a later parser error, not over a tokenizer error.
    ("x = \"\\U0001F60\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-8: truncated \\UXXXXXXXX escape", 1, 16),
    ("x = \"\\U00110000\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-9: illegal Unicode character", 1, 17),
    ("x = 1\ny = \"abc\\u00\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 3-6: truncated \\uXXXX escape", 2, 14),
    ("x = \"\u{e9}\u{1f600}\\x4\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 20-22: truncated \\xXX escape", 1, 12),
    ("x = f\"a{x}b{{c\\x4\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 1-3: truncated \\xXX escape", 1, 19),
    ("x = \"ok\" \"\\N{NOPE}\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-7: unknown Unicode character name", 1, 20),
    ("x = \"\\N\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-1: malformed \\N character escape", 1, 9),
    ("x = \"\"\"abc\n\\x4\"\"\"", "(unicode error) 'unicodeescape' codec can't decode bytes in position 4-6: truncated \\xXX escape", 2, 7),
    ("x = \"\\x4\" 1 +", "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-2: truncated \\xXX escape", 1, 11),
    ("x = 1 +\ny = \"\\x4\"", "invalid syntax", 1, 8),
    ("x = \"\\x4\"\ny = 1abc", "invalid decimal literal", 2, 5),
    ("x = [a, b for a, b in y]", "did you forget parentheses around the comprehension target?", 1, 6),
    ("print({a, b for a in y})", "did you forget parentheses around the comprehension target?", 1, 8),
    ("x = [*a for a in y]", "iterable unpacking cannot be used in comprehension", 1, 6),
    ("f(*a for a in y)", "iterable unpacking cannot be used in comprehension", 1, 3),
    ("x = {**a for a in y}", "dict unpacking cannot be used in dict comprehension", 1, 6),
    // A parser-phase error rustpython-parser accepts, before the line the
    // parser fails on: CPython's first pass fails at it, so its second pass
    // raises it (a tokenizer error anywhere, or a bad escape before it,
    // still wins; a compiler error does not count).
    ("1 = 2\nx = 1 +", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("1 = 2\nx = (", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("f(a for a in b, c)\nx = 1 +", "Generator expression must be parenthesized", 1, 3),
    ("for x in y:\n    1 = 2\nelse\n    pass", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 2, 5),
    ("1 = 2\nif x:\ny = 1", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("1 = 2\n  y = 1", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("1 = 2\nif x:\n    a\n  b", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("1 = 2\nif x:\n\ta\n        b", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("[x for x in y] = 1\nz = (", "cannot assign to list comprehension here. Maybe you meant '==' instead of '='?", 1, 1),
    ("x = [*a for a in b]\ny = 1 +", "iterable unpacking cannot be used in comprehension", 1, 6),
    ("1 = 2\nx = f'{a b}'", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("1 = 2\nx = '\\x4'\ny = 1 +", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    ("x = '\\x4'\n1 = 2\ny = 1 +", "(unicode error) 'unicodeescape' codec can't decode bytes in position 0-2: truncated \\xXX escape", 1, 10),
    ("1 = 2\nx = 1abc", "invalid decimal literal", 2, 5),
    ("1 = 2\nx = )", "unmatched ')'", 2, 5),
    ("break\nx = 1 +", "invalid syntax", 2, 8),
    ("*b = 1\ny = 1 +", "invalid syntax", 2, 8),
    ("x = 1\nf(**a, b)\n1 = 2\nz = 1 +", "positional argument follows keyword argument unpacking", 2, 9),
    // A text given in memory is read with CRLF as LF; a final CRLF becomes
    // two line ends (translate_newlines adds one, as to a text without).
    ("x = '''abc\r\ny\r\n", "unterminated triple-quoted string literal (detected at line 3)", 1, 5),
    ("(\r\n'''\r\n", "unterminated triple-quoted string literal (detected at line 3)", 2, 1),
    ("x = 'abc\\\r\ndef\r\n", "unterminated string literal (detected at line 2)", 1, 5),
    ("x = 'a\\\r\nb", "unterminated string literal (detected at line 2)", 1, 5),
    ("x = 1 +\r\n", "invalid syntax", 1, 8),
    ("if x\r\n  pass\r\n", "expected ':'", 1, 5),
    ("if x:\r\n", "expected an indented block after 'if' statement on line 1", 2, 1),
    ("1 = 2\r\nx = 1 +\r\n", "cannot assign to literal here. Maybe you meant '==' instead of '='?", 1, 1),
    // A header at the end of the text: the caret is at the end of its last
    // line (CPython's ENDMARKER), blank or not.
    ("if x:\n\n", "expected an indented block after 'if' statement on line 1", 2, 1),
    ("for a in b:\n\n  \n", "expected an indented block after 'for' statement on line 1", 3, 3),
    ("if x:  # c\n\n", "expected an indented block after 'if' statement on line 1", 2, 1),
    ("if x:   \n", "expected an indented block after 'if' statement on line 1", 1, 9),
    ("if x:\n    # c\n", "expected an indented block after 'if' statement on line 1", 2, 8),
    // `...` is an atom; a number has one `.` at most, before its exponent;
    // a call's `*a b` / `**a b` anywhere in its arguments.
    ("x = [set()..., 1]", "invalid syntax. Perhaps you forgot a comma?", 1, 6),
    ("x = [1 ...]", "invalid syntax. Perhaps you forgot a comma?", 1, 6),
    ("x = (... a)", "invalid syntax. Perhaps you forgot a comma?", 1, 6),
    ("x = [1, -2.500.0, 3]", "invalid syntax. Perhaps you forgot a comma?", 1, 9),
    ("x = [0x1.5]", "invalid syntax. Perhaps you forgot a comma?", 1, 6),
    ("x = [1.5e3.2, 2]", "invalid syntax. Perhaps you forgot a comma?", 1, 6),
    ("print('a', *ex tra)", "invalid syntax. Perhaps you forgot a comma?", 1, 13),
    ("f(**a b)", "invalid syntax. Perhaps you forgot a comma?", 1, 5),
    ("f(a, *b c, d)", "invalid syntax. Perhaps you forgot a comma?", 1, 7),
    // An annotation's target: CPython's parser fails at the `:` after a
    // target that is not a single one when no expression follows, and
    // raises invalid_assignment's messages once one does.
    ("ford in y:\n    pass", "invalid syntax", 1, 10),
    ("x = 1\nford in y:\n    x", "invalid syntax", 2, 10),
    ("whilex > 0:\n    pass", "invalid syntax", 1, 11),
    ("f():\n", "invalid syntax", 1, 4),
    ("'abc':\n", "invalid syntax", 1, 6),
    ("ifx == 0: y = 1", "illegal target for annotation", 1, 1),
    ("print(x): 1 2", "illegal target for annotation", 1, 1),
    ("f(): not x y", "illegal target for annotation", 1, 1),
    ("(a, b): int", "only single target (not tuple) can be annotated", 1, 1),
    ("((a, b)): int", "only single target (not tuple) can be annotated", 1, 2),
    ("((a, b)): int 2", "only single target (not tuple) can be annotated", 1, 2),
    ("[a, b]: int 2", "only single target (not list) can be annotated", 1, 1),
    ("x, y: int", "only single target (not tuple) can be annotated", 1, 1),
    ("*a, b: int", "only single target (not tuple) can be annotated", 1, 1),
    ("*a: int", "invalid syntax", 1, 3),
    ("x = lambda: )", "unmatched ')'", 1, 13),
    // An assignment that fails to parse after an `=` with a non-target
    // before it: invalid_assignment's "cannot assign to X" at the first
    // invalid target, or invalid_named_expression's wording for the element
    // just before the only `=` when an operand follows it.
    ("f() =", "cannot assign to function call", 1, 1),
    ("print(x) =\n", "cannot assign to function call", 1, 1),
    ("x = True =", "cannot assign to True", 1, 5),
    ("x = 1\nif x:\n    y =True =", "cannot assign to True", 3, 8),
    ("x = f() = 1 +", "cannot assign to function call", 1, 5),
    ("f() = 1 +", "cannot assign to function call here. Maybe you meant '==' instead of '='?", 1, 1),
    ("f() = - 1 +", "cannot assign to function call here. Maybe you meant '==' instead of '='?", 1, 1),
    ("f() = -", "cannot assign to function call", 1, 1),
    ("a, f() = 1 +", "cannot assign to function call here. Maybe you meant '==' instead of '='?", 1, 4),
    ("[a, 1] =", "cannot assign to literal", 1, 5),
    ("a < b = 2 +", "cannot assign to comparison", 1, 1),
    ("a if b else c =", "cannot assign to conditional expression", 1, 1),
    ("f(), a = 1 +", "invalid syntax. Maybe you meant '==' or ':=' instead of '='?", 1, 6),
    ("f(), a.b = 1 +", "cannot assign to attribute here. Maybe you meant '==' instead of '='?", 1, 6),
    ("x, y = 1 +", "invalid syntax", 1, 11),
    // Never closed: CPython's second pass reads a second expression after
    // a first one whole (invalid_expression, at statement level too) and
    // one token more, so a bracket it leaves open to the end is reported;
    // a `;` or `->` that fails stops it.
    ("t{ext.splitlines(True, keepends=True)\n", "'{' was never closed", 1, 2),
    ("a = set([76, 75]a.update([11, 33])\nx = list(a)\n", "'(' was never closed", 1, 8),
    ("x = (a, b c\n", "'(' was never closed", 1, 5),
    ("x = 1\nx = 'one'{ = [x]\nx\n", "invalid syntax", 2, 10),
    ("[5].index(5, ;", "invalid syntax", 1, 14),
    ("'a'.ljust(5, ->\n", "invalid syntax", 1, 14),
    // A call argument that is an expression other than a name, then `=`:
    // invalid_kwarg, whatever follows the `=`.
    ("f(a.b=1)", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 3),
    ("f('ok'=)", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 3),
    ("range(0, 2=, 3)", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 10),
    ("f(1 =", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 3),
    ("f(x=1, a.b=2)", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 8),
    ("g(f(a.b=1))", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 5),
    ("f(((a.b))=1)", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 5),
    ("f(lambda: 1 = 2)", "expression cannot contain assignment, perhaps you meant \"==\"?", 1, 3),
    ("f(True=1)", "cannot assign to True", 1, 3),
    ("f(a, b=1 for x in y)", "invalid syntax. Maybe you meant '==' or ':=' instead of '='?", 1, 6),
    ("f(a=b=1)", "invalid syntax", 1, 6),
    ("f(x for x in y = 1)", "invalid syntax", 1, 16),
    // An f-string's fields are parsed as soon as its group of strings is
    // read, before a mistake further on (3.12's quotes inside a field:
    // `f'{d['key']}'` is `f'{d['`, `key`, `']}'` to 3.11); a field's
    // expression that runs to the string's end inside a bracket or a quote
    // is "unmatched" or "unterminated string".
    ("x = f'{d['key']}'", "f-string: unmatched '['", 1, 11),
    ("print(f'{d['key']}')", "f-string: unmatched '['", 1, 13),
    ("x0 = f'{['b', 'a']:_}'", "f-string: unmatched '['", 1, 16),
    ("[f'{('a', 'b'):.2}']", "f-string: unmatched '('", 1, 7),
    ("x = f'{'a'}'", "f-string: expecting '}'", 1, 9),
    ("y = 1\nx = [f'{'abc':05}', 2]", "f-string: expecting '}'", 2, 10),
    ("x = f'{a}{d['k']}'", "f-string: unmatched '['", 1, 14),
    ("x = (f'{d['k']}'\n  'more')", "f-string: unmatched '['", 1, 12),
    ("x = f'{('", "f-string: unmatched '('", 1, 10),
    ("x = 1\ny = (f'a'\n     f'{d['k']}')", "f-string: unmatched '['", 3, 12),
    ("x = f'{d[\"k'", "f-string: unterminated string", 1, 13),
    ("x = f'{a!r:>{b'", "f-string: expecting '}'", 1, 16),
    // A backslash that does not end its line: CPython's error when its
    // parser fetches that token; else its scan for tokenizer errors stops
    // there, and nothing after it counts.
    ("x = (1 \\ 2", "unexpected character after line continuation character", 1, 9),
    ("print('a', bse', sep='\\udfff')", "unexpected character after line continuation character", 1, 24),
    ("d = {}{\n\\xd += {'a': 1}\n", "unexpected character after line continuation character", 2, 2),
    ("x = [1, 2 3, \\u]", "invalid syntax. Perhaps you forgot a comma?", 1, 9),
    ("x0 = f'{'x\\x00':r}'", "f-string: expecting '}'", 1, 10),
    // invalid_kvpair: after a pair and a `,`, a key that is not followed
    // by `:` (a keyword, `:=`, or an operator that finds no operand).
    ("d = {'a': 1, 'b' + : 2}", "':' expected after dictionary key", 1, 16),
    ("d = {'a': 1, 'b' and : 2}", "':' expected after dictionary key", 1, 16),
    ("d = {'a': 1, 'b' as : 2}", "':' expected after dictionary key", 1, 16),
    ("d = {'a': 1, 'b' := 2}", "':' expected after dictionary key", 1, 16),
    ("d = {'a': 1, 'b' if : 2}", "':' expected after dictionary key", 1, 16),
    ("d = {'a': 1, 'b' . : 2}", "':' expected after dictionary key", 1, 16),
    ("d = {'a': 1, 'b' else: 2}", "':' expected after dictionary key", 1, 16),
    ("x = {k: len(v) for k, v in g.%items()}", "invalid syntax", 1, 30),
    // `~` only begins an expression: after one, a second expression.
    ("sortd([1], e~verse='yes')", "invalid syntax. Perhaps you forgot a comma?", 1, 12),
    ("x = [len~(w), w]", "invalid syntax. Perhaps you forgot a comma?", 1, 6),
    ("len(obj~=[1])", "invalid syntax", 1, 8),
    ("x = [2~, 5]", "invalid syntax", 1, 7),
];

/// CPython's SyntaxError subclass for an indentation message.
fn syntax_type(msg: &str) -> &'static str {
    if msg == "inconsistent use of tabs and spaces in indentation" {
        "TabError"
    } else if msg.starts_with("expected an indented block")
        || msg == "unexpected indent"
        || msg == "unindent does not match any outer indentation level"
    {
        "IndentationError"
    } else {
        "SyntaxError"
    }
}

/// The table above is CPython's own answer: every row is compiled by
/// `python3` (3.11) and its type, `msg`, `lineno` and `offset` must be the
/// row's. A row written by hand that CPython disagrees with fails here, so
/// the table stays a differential test, not a list of beliefs.
#[test]
fn syntax_table_is_what_cpython_says() {
    let python = std::env::var("CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let script = r#"
import json, sys
out = []
for src in json.load(sys.stdin):
    try:
        compile(src, "<program>", "exec")
        out.append(None)
    except SyntaxError as e:
        out.append([type(e).__name__, e.msg, e.lineno, e.offset])
print(json.dumps([sys.version_info[:2], out]))
"#;
    let sources: Vec<&str> = CPYTHON_SYNTAX.iter().map(|r| r.0).collect();
    let mut child = std::process::Command::new(&python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{python} is required for this test: {e}"));
    let input = serde_json::to_string(&sources).expect("json");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), input.as_bytes())
        .expect("write");
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("python3's json");
    assert_eq!(
        v[0],
        serde_json::json!([3, 11]),
        "CPython 3.11 is the reference"
    );
    let mut failures = Vec::new();
    for ((src, msg, line, col), got) in CPYTHON_SYNTAX.iter().zip(v[1].as_array().expect("list")) {
        let want = serde_json::json!([syntax_type(msg), msg, line, col]);
        if *got != want {
            failures.push(format!("{src:?}: table says {want}, CPython says {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn syntax_errors_are_worded_as_cpython() {
    let mut failures = Vec::new();
    for (src, msg, line, col) in CPYTHON_SYNTAX {
        let errs = errors(src);
        let got = errs
            .first()
            .map(|e| (e.type_name.as_str(), e.message.as_str(), e.line, e.col));
        // CPython raises its indentation errors as SyntaxError's subclasses.
        let ty = syntax_type(msg);
        if got != Some((ty, msg, Some(*line), Some(*col))) {
            failures.push(format!(
                "{src:?}: expected {msg:?} {line}:{col}, got {got:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // rustpython-parser's own wording never shows.
    for src in [
        "x = 1 +",
        "x += 1 = 2",
        "for x in y z:\n    pass",
        "x = (1 2 3",
    ] {
        let m = errors(src)[0].message.clone();
        assert!(!m.contains("Got "), "{src:?}: {m}");
    }
}

#[test]
fn grades_and_calls() {
    let g = |src: &str| {
        let p = validate(src, &ns(), &Limits::default()).expect("valid");
        (p.grade, p.calls)
    };
    assert_eq!(g("x = 1"), (Grade { w: 0, d: 0 }, vec![]));
    assert_eq!(
        g("search('a')"),
        (Grade { w: 0, d: 0 }, vec!["search".to_string()])
    );
    assert_eq!(
        g("read_file('a')"),
        (Grade { w: 1, d: 1 }, vec!["read_file".to_string()])
    );
    assert_eq!(
        g("x = read_file('a')\nwrite_file('b', x)\nread_file('c')\nfind_files('*')"),
        (
            Grade { w: 3, d: 3 },
            vec![
                "read_file".to_string(),
                "write_file".to_string(),
                "find_files".to_string()
            ]
        )
    );
    // A tool only named inside a branch that never runs still counts.
    assert_eq!(
        g("if False:\n    edit_file('a', 'b', 'c')").0,
        Grade { w: 3, d: 3 }
    );
    // Calls inside comprehensions, f-strings and key= lambdas count.
    assert_eq!(
        g("x = [read_file(f) for f in ['a']]").1,
        vec!["read_file".to_string()]
    );
    assert_eq!(
        g("x = f'{read_file(\"a\")}'").1,
        vec!["read_file".to_string()]
    );
    assert_eq!(
        g("x = sorted(['a'], key=lambda p: len(read_file(p)))").1,
        vec!["read_file".to_string()]
    );
}

#[test]
fn aliases_grade_by_alias_entry() {
    let ns = Namespace {
        tools: vec![ToolEntry {
            name: "r".into(),
            target: "read_file".into(),
            args: vec!["path".into()],
            grade: Grade { w: 1, d: 0 },
        }],
    };
    let p = validate("r('a')", &ns, &Limits::default()).expect("valid");
    assert_eq!(p.calls, vec!["r".to_string()]);
    assert_eq!(p.grade, Grade { w: 1, d: 0 });
    let e = validate("read_file('a')", &ns, &Limits::default()).expect_err("not in profile");
    assert_eq!(e[0].type_name, "UnknownName");
    assert!(e[0]
        .hint
        .as_deref()
        .unwrap_or("")
        .contains("does not grant"));
    assert!(e[0]
        .hint
        .as_deref()
        .unwrap_or("")
        .contains("available tools: r"));
}

#[test]
fn identifiers_are_nfkc_normalised_in_the_tree() {
    let p = validate("ｘ = 1\nｘ", &ns(), &Limits::default()).expect("valid");
    let dbg = format!("{:?}", p.body);
    assert!(dbg.contains("Identifier(\"x\")"), "{dbg}");
    assert!(!dbg.contains('ｘ'));
}

#[test]
fn size_and_encoding() {
    let limits = Limits {
        source_bytes: 10,
        ..Limits::default()
    };
    let e = validate("x = 1234567890", &ns(), &limits).expect_err("too large");
    assert_eq!(e[0].type_name, "SourceTooLarge");
    assert!(e[0].message.contains("10"));
    let e = validate_bytes(b"x = 1\ny = '\xff'", &ns(), &Limits::default()).expect_err("bad utf-8");
    assert_eq!(e[0].type_name, "EncodingError");
    assert_eq!((e[0].line, e[0].col), (Some(2), Some(6)));
    let big = vec![b'x'; 5 * 1024 * 1024];
    let e = validate_bytes(&big, &ns(), &Limits::default()).expect_err("too large");
    assert_eq!(e[0].type_name, "SourceTooLarge");
    assert!(validate_bytes("x = 'é'".as_bytes(), &ns(), &Limits::default()).is_ok());
    assert!(validate("\u{feff}x = 1", &ns(), &Limits::default()).is_ok());
}

#[test]
fn int_literal_digit_limit() {
    let ok = format!("x = {}", "7".repeat(4300));
    assert!(validate(&ok, &ns(), &Limits::default()).is_ok());
    let bad = format!("x = {}", "7".repeat(4301));
    let e = validate(&bad, &ns(), &Limits::default()).expect_err("too many digits");
    assert_eq!(e[0].type_name, "SyntaxError");
    assert!(e[0].message.contains("4300"));
}

/// Run `f` on a thread with a small stack: proves no deep recursion.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    on_stack(256 * 1024, f)
}

fn on_stack<T: Send + 'static>(bytes: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(bytes)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no stack overflow")
}

fn bomb(src: String) -> Vec<ErrorInfo> {
    small_stack(move || {
        let t = std::time::Instant::now();
        let r = validate(&src, &ns(), &Limits::default());
        assert!(t.elapsed().as_secs() < 2, "slow: {:?}", t.elapsed());
        r.err().unwrap_or_default()
    })
}

#[test]
fn parser_bombs_are_clear_errors() {
    let cases: Vec<String> = vec![
        format!("x = {}1{}", "(".repeat(5000), ")".repeat(5000)),
        format!("x = {}1{}", "[".repeat(5000), "]".repeat(5000)),
        format!("x = {}", "{".repeat(5000)),
        format!("x = {}1", "not ".repeat(5000)),
        format!("x = {}1", "-".repeat(30000)),
        format!("x = 1{}", "+x".repeat(20000)),
        format!("x = 1{}", " if a else 1".repeat(3000)),
        format!("x = {}1", "lambda: ".repeat(3000)),
        format!("x = a{}", ".b".repeat(20000)),
        format!("x = f{}", "()".repeat(20000)),
        format!("x = a{}", "[0]".repeat(15000)),
        format!("x = f'{{{}1{}}}'", "(".repeat(3000), ")".repeat(3000)),
        (0..150)
            .map(|d| format!("{}if x:\n", " ".repeat(d)))
            .collect::<String>()
            + &" ".repeat(150)
            + "pass\n",
    ];
    for src in cases {
        let head: String = src.chars().take(30).collect();
        let errs = bomb(src);
        assert_eq!(errs.len(), 1, "{head:?}: {errs:?}");
        assert_eq!(errs[0].type_name, "NestingTooDeep", "{head:?}: {errs:?}");
        assert!(errs[0]
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("intermediate"));
    }
}

#[test]
fn huge_max_depth_is_capped() {
    let errs = small_stack(|| {
        let limits = Limits {
            max_depth: 1_000_000,
            ..Limits::default()
        };
        let src = format!("x = {}1{}", "(".repeat(5000), ")".repeat(5000));
        validate(&src, &ns(), &limits).err().unwrap_or_default()
    });
    assert_eq!(errs[0].type_name, "NestingTooDeep");
    // Just under the cap validates on a 1 MiB stack (the parser itself
    // recurses per bracket level: ~1.5 KiB per level in debug builds).
    let errs = on_stack(1024 * 1024, || {
        let limits = Limits {
            max_depth: 1_000_000,
            ..Limits::default()
        };
        let src = format!("x = {}1{}", "[".repeat(190), "]".repeat(190));
        validate(&src, &ns(), &limits).err().unwrap_or_default()
    });
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn big_flat_programs_are_fine() {
    // 64 KiB of ordinary statements validates quickly.
    let mut src = String::new();
    let mut i = 0;
    while src.len() < 60 * 1024 {
        src.push_str(&format!("v{i} = [x * 2 for x in range({i}) if x % 3]\n"));
        i += 1;
    }
    let errs = bomb(src);
    assert!(errs.is_empty(), "{errs:?}");
    // A long string literal and a long flat list.
    let s = format!("x = '{}'", "a\\n".repeat(20000));
    assert!(bomb(s).is_empty());
    let l = format!(
        "x = [{}]",
        (0..8000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(bomb(l).is_empty());
}

#[test]
fn moderate_nesting_is_fine() {
    let src = format!("x = {}1{}", "(".repeat(50), ")".repeat(50));
    assert!(errors(&src).is_empty());
    let src = format!("x = {}1{}", "[".repeat(40), "]".repeat(40));
    assert!(errors(&src).is_empty());
}

/// A tiny deterministic PRNG (xorshift) for the robustness test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
}

#[test]
fn random_token_soup_never_panics() {
    #[rustfmt::skip]
    const TOKENS: &[&str] = &[
        "(", ")", "[", "]", "{", "}", ",", ":", ".", "=", "+", "-", "*", "**", "/", "//", "%",
        "@", "|", "&", "^", "~", "<", ">", "==", "!=", " ", " ", "\n", "\n    ", "\t", "\\\n",
        "'", "\"", "'''", "f'", "f\"{", "rb'", "#", "x", "y", "read_file", "open", "__class__",
        "_", "lambda", "if", "else", "for", "in", "not", "and", "or", "while", "def", "import",
        "yield", "await", "1", "0x1f", "1e5", "1j", "...", "key=", "ｏｐｅｎ", "é", "\u{feff}",
        "\0", "*", ":=", "print(", "sorted(", "isinstance(", "str", "True", "None", "async",
        "match", "case", "try:", "except", "with", "del", "global", "return", "break",
        "continue", "pass", "\r\n",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut programs = Vec::new();
    let count: usize = std::env::var("LACKPY_SOUP_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    for _ in 0..count {
        let n = 1 + (rng.next() % 40) as usize;
        let p: String = (0..n).map(|_| rng.pick(TOKENS)).collect();
        programs.push(p);
    }
    small_stack(move || {
        for p in programs {
            if let Err(errs) = validate(&p, &ns(), &Limits::default()) {
                assert!(!errs.is_empty(), "{p:?}");
                for e in errs {
                    assert!(e.line.is_some() && e.col.is_some(), "{p:?}: {e:?}");
                }
            }
        }
    });
}

/// Tool calls are checked against the tool's declared arguments.
#[test]
fn tool_calls_match_declared_arguments() {
    let t = |name: &str, args: &[&str]| ToolEntry::new(name, args, Grade { w: 1, d: 0 });
    let ns = Namespace {
        tools: vec![
            t("read_file", &["path"]),
            t("find_files", &["pattern"]),
            t("edit_file", &["path", "old_str", "new_str"]),
            t("custom", &["a", "b"]),
        ],
    };
    let first = |src: &str| match validate(src, &ns, &Limits::default()) {
        Ok(_) => None,
        Err(e) => e.into_iter().next().map(|e| (e.type_name, e.message)),
    };
    for (src, want) in [
        ("find_files('a', 'b')", "takes 1 argument but 2 were given"),
        ("read_file()", "missing 1 required argument: 'path'"),
        ("read_file(name='a')", "unexpected keyword argument 'name'"),
        (
            "read_file('a', path='b')",
            "multiple values for argument 'path'",
        ),
        (
            "edit_file('a', 'b')",
            "missing 1 required argument: 'new_str'",
        ),
        ("custom(1, 2, 3)", "takes 2 arguments but 3 were given"),
    ] {
        match first(src) {
            Some((ty, msg)) => {
                assert_eq!(ty, "ArgumentError", "{src}");
                assert!(msg.contains(want), "{src}: {msg}");
            }
            None => panic!("{src} validated"),
        }
    }
    for ok in [
        "read_file('a')",
        "read_file(path='a')",
        "p = 'x'\nread_file(p)",
        "edit_file('a', old_str='b', new_str='c')",
        "custom(1)",
        "custom(b=2)",
        "args = ['a']\nread_file(*args)",
        // Literal types are the tools' run-time check (see tests/escapes).
        "read_file(3)",
    ] {
        assert!(first(ok).is_none(), "{ok}: {:?}", first(ok));
    }
}
