//! Differential tests against CPython (`python3`), plus limit and
//! hostile-input tests that need no reference.

use super::*;
use lackpy_policy::wire::Limits;
use std::process::Command;

struct FakeTools;

impl ToolHost for FakeTools {
    fn call(&mut self, name: &str, args: Vec<Data>, _kw: Kwargs) -> Result<Data, ToolFailure> {
        match name {
            "echo" => Ok(args.into_iter().next().unwrap_or(Data::None)),
            "fail" => Err(ToolFailure {
                type_name: "FileNotFound".into(),
                message: "no such file: x".into(),
            }),
            _ => Err(ToolFailure {
                type_name: "ToolFailed".into(),
                message: "unknown".into(),
            }),
        }
    }
}

fn run_prog(src: &str) -> RunResult {
    let mut out = String::new();
    let mut r = run_source(
        src,
        &["echo", "fail"],
        &mut FakeTools,
        &mut out,
        &Limits::default(),
    );
    // Stash stdout in the repr slot for comparison when there is no error.
    if r.error.is_none() {
        r.repr = Some(format!(
            "{}|{}",
            r.repr.unwrap_or_else(|| "<none>".into()),
            out
        ));
    }
    r
}

const PY_DRIVER: &str = r#"
import ast, sys, io, json, contextlib
progs = json.load(sys.stdin)
res = []
for src in progs:
    buf = io.StringIO()
    g = {"sort_by": lambda items, key, reverse=False: sorted(items, key=(key if callable(key) else (lambda it: it[key])), reverse=reverse)}
    try:
        tree = ast.parse(src)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        with contextlib.redirect_stdout(buf):
            exec(compile(tree, "<p>", "exec"), g)
            v = eval(compile(last, "<p>", "eval"), g) if last is not None else None
        r = repr(v) if last is not None else "<none>"
        res.append({"ok": r + "|" + buf.getvalue()})
    except Exception as e:
        res.append({"err": [type(e).__name__, str(e) if not isinstance(e, KeyError) else repr(e.args[0])]})
print(json.dumps(res))
"#;

/// CPython's result for each program, or why there is none.
fn python(progs: &[&str]) -> Result<Vec<serde_json::Value>, String> {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PY_DRIVER)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start python3: {e}"))?;
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().ok_or("no stdin pipe")?;
        let input = serde_json::to_string(progs).map_err(|e| e.to_string())?;
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("writing to python3: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for python3: {e}"))?;
    if !out.status.success() {
        return Err(format!("python3 exited with {}", out.status));
    }
    let res: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("python3's output is not a JSON list: {e}"))?;
    if res.len() != progs.len() {
        return Err(format!(
            "python3 answered {} of {} programs",
            res.len(),
            progs.len()
        ));
    }
    Ok(res)
}

/// Run each program under lackpy and CPython and require the same repr and
/// stdout, or the same exception type and message. Fails (never skips)
/// without a working `python3`: these tests are the reference.
fn differential(progs: &[&str]) {
    let expect = python(progs)
        .unwrap_or_else(|e| panic!("python3 is required for the differential tests: {e}"));
    let mut failures = Vec::new();
    for (src, want) in progs.iter().zip(expect.iter()) {
        let got = run_prog(src);
        if let Some(ok) = want.get("ok").and_then(|v| v.as_str()) {
            if got.error.is_some() || got.repr.as_deref() != Some(ok) {
                failures.push(format!(
                    "PROGRAM:\n{src}\n  want: {ok:?}\n  got:  {:?} {:?}",
                    got.repr, got.error
                ));
            }
        } else if let Some(err) = want.get("err").and_then(|v| v.as_array()) {
            let ty = err.first().and_then(|v| v.as_str()).unwrap_or("");
            let msg = err.get(1).and_then(|v| v.as_str()).unwrap_or("");
            match &got.error {
                Some(e) if e.type_name == ty && e.message == msg => {}
                _ => failures.push(format!(
                    "PROGRAM:\n{src}\n  want error: {ty}: {msg}\n  got: {:?} {:?}",
                    got.repr, got.error
                )),
            }
        } else {
            failures.push(format!("PROGRAM:\n{src}\n  python3 gave no result: {want}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        progs.len(),
        failures.join("\n")
    );
}

#[test]
fn basics() {
    differential(&[
        "1 + 2",
        "x = 5\ny = x * 2\ny",
        "7 // 2, -7 // 2, 7 % 3, -7 % 3, 7.5 // -2, -7.5 % 2, 1 / 3, 10 / 4",
        "a = []\nb = a\nb.append(1)\na",
        "a = []\na.append(a)\na",
        "d = {}\nd['a'] = d\nd",
        "1e16, 1e-5, 0.0001, 123456789012345.0, 1.2345678901234567e16, -0.0, 0.1 + 0.2",
        "a = int('1' + '0' * 300)\nb = int('1' + '0' * 599)\n[1 / a, a / b, 10 / -(a * b), 7 / (a * a), a * a * a / 3, (a * 10) / 7]",
        "[562949953421312.25, 562949953421312.75, 900719925474099.25, 700000000000000.75, 0.5, 2.5e-5, 1.7976931348623157e308, 5e-324]",
        "12345678901234567890 * 98765432109876543210",
        "4611686018427387904 + 4611686018427387904",
        "-9223372036854775808 // -1",
        "1000000000000000000000000000000 / 7",
        "1 == 1.0 == True, {1: 'a', 1.0: 'b', True: 'c'}",
        "print('hi', 1, None, [1, 'a'])",
        "print('a', 'b', sep='-', end='!')\nprint()",
        "'abc'[1], 'abc'[-1], 'héllo'[1:3], [1,2,3,4,5][::2], [1,2,3,4,5][::-1], (1,2,3)[1:], 'abcdef'[-2:]",
        "xs = [1,2,3,4,5]\nxs[1:3] = ['a']\nxs",
        "xs = [1,2,3,4,5,6]\nxs[::2] = [0,0,0]\nxs",
        "a, *b, c = range(5)\n(a, b, c)",
        "a, (b, c) = 1, (2, 3)\na + b + c",
        "x = [1]\nx += (2, 3)\nx += 'ab'\nx",
        "s = 'a'\ns += 'b'\ns *= 3\ns",
        "d = {'a': 1}\nd['a'] += 5\nd",
        "for i in range(3):\n    print(i)\nelse:\n    print('done')",
        "for i in range(10):\n    if i == 3:\n        break\nelse:\n    print('no')\ni",
        "r = []\nfor i in range(10):\n    if i % 2:\n        continue\n    r.append(i)\nr",
        "[x * y for x in range(3) for y in range(3) if x != y]",
        "x = 10\n[x for x in range(3)]\nx",
        "{k: v for k, v in zip('abc', range(3))}",
        "{x % 3 for x in range(10)}",
        "g = (x * 2 for x in range(5))\nlist(g), list(g)",
        "1 < 2 < 3, 1 < 3 < 2, 'a' < 'b', [1, 2] < [1, 3], (1, 2) >= (1, 2)",
        "0 or 'x', 1 and 'y', None or [] or 0, not 0",
        "3 if 0 else 4",
        "x = 5\nf'{x} {x!r} {x:>4} {x=} {\"s\"!r} {3.14159:.2f} {1234567:,} {255:#x} {\"ab\":*^6}'",
        "w = 10\np = 3\nf'{3.14159:{w}.{p}f}|'",
        "f'{\"a\"!a} {\"é\"!a} {None} {[1,2]!s}'",
        "isinstance(1, int), isinstance(True, int), isinstance(1, (str, float)), isinstance([], list)",
        "sorted([3, 1, 2]), sorted('bca', reverse=True), sorted([(1, 'b'), (0, 'a'), (1, 'a')], key=lambda t: t[0])",
        "sorted(['bb', 'a', 'ccc'], key=len)",
        "xs = [(i * 37) % 11 for i in range(40)]\n(sorted(range(40), key=lambda i: (xs[i] % 3, -xs[i])), sorted(range(40), key=lambda i: xs[i] % 4, reverse=True), sorted([str(x) for x in xs], reverse=True), sorted(xs, key=lambda x: -x), sorted(['b', 'A', 'é', 'a']))",
        "counts = {'a': 3, 'b': 1, 'c': 2}\nsorted(counts, key=counts.get)",
        "min([3, 1, 2]), max([3, 1, 2]), min(3, 1, 2), max('abc'), min([], default=7), max([1, -5], key=abs)",
        "sum([1, 2, 3]), sum([0.1] * 10), sum([[1], [2]], []), sum(range(101), 10)",
        "any(x > 2 for x in [1, 2, 3]), all([]), any([]), all([1, 0])",
        "abs(-5), abs(-2.5), round(2.5), round(3.5), round(-0.5), round(1.25, 1), round(2.675, 2), round(1234, -2), round(1250, -2), round(15.0, -1)",
        "int('42'), int(' -7 '), int('1_000'), int('ff', 16), int('0x1f', 0), int(3.9), int(-3.9), int(True), float('1e5'), float(' 1.5 '), float('inf'), float('-nan')",
        "str(1.0), str(None), str([1, 'a']), repr('a\\'b'), repr(\"a'b\"), repr('a\\nb\\t\\x01'), str(True)",
        "list('abc'), tuple([1, 2]), set([1, 2, 1]), dict([('a', 1)]), dict(a=1, b=2), dict({'x': 1}, y=2), list(range(10, 0, -3))",
        "list(enumerate('ab')), list(enumerate('ab', 1)), list(zip('ab', [1, 2, 3])), list(reversed([1, 2, 3])), list(reversed(range(5)))",
        "len('héllo'), len([1]), len({}), len(range(0, 10, 3)), len({1, 2})",
        "range(5), range(1, 10, 2), range(10)[2:5], range(10)[-1], 3 in range(5), 5 in range(0, 10, 2)",
        "d = {'a': 1, 'b': 2}\nd.keys(), d.values(), d.items(), 'a' in d.keys(), ('a', 1) in d.items(), len(d.items())",
        "set(), {1, 2} - {2}, {1, 2} == {2, 1}, {1} < {1, 2}",
        "(1,), (), [], {}, [[]], ([],)",
        "True + True, True * 3, -True, 3 / True",
        "x = None\nx is None, x is not None, [] is [], 1 is 1",
        "x = 5\ny = 'a'\nf'{x = }|{x=:>4}|{y=!s}|{y=}|{x * 2 = }|{3.0=}'",
        "d = {'a': 3, 'b': 1}\n(max(d, key=d.get), sorted(d.items(), key=lambda kv: kv[1]), min(d.values()), list(d), [k for k in d if d[k] > 1])",
        "xs = [[1, 2], [3]]\n[y for x in xs for y in x], [[y * 2 for y in x] for x in xs], {x: [y for y in range(x)] for x in range(3)}",
        "i = 'outer'\n[i for i in range(3)], i, [j for j in [i]]",
        "total = 0\nfor k, v in {'a': 1, 'b': 2}.items():\n    total += v\ntotal",
        "s = 'hello world'\n{c: s.count(c) for c in sorted(set(s)) if c != ' '}",
        "print(*[1, 2], sep=', ')\nprint(*'ab')\nprint('x', end='')\nprint()",
        "a = [3, 1, 2]\nb = a\na = a + [4]\n(a, b)",
        "r = range(10)\n(r[::-1], r[1:8:3], list(r[::-3]), len(r[5:]), r.count(3) if False else 0)",
        "'%' in 'a%b', 'abc'[::-1], 'a' 'b', \"it's\", 'say \"hi\"', 'both \\' \"'",
        "int('  -0b101  ', 0), int('0o17', 0), int('z', 36), float('1_000.5'), float('-.5e-3'), int(-0.9), round(-2.5), round(0.125, 2), round(-1.5)",
    ]);
}

#[test]
fn more_basics() {
    differential(&["x = 1"]);
}

#[test]
fn string_methods() {
    differential(&[
        "'a,b,,c'.split(','), 'a b  c '.split(), '  a b '.split(None, 1), 'a,b,c'.rsplit(',', 1), ' a b c '.rsplit(None, 1), 'abc'.split('b', 0)",
        "'a\\nb\\r\\nc\\rd\\n'.splitlines(), 'a\\nb\\n'.splitlines(True), ''.splitlines(), 'x'.split()",
        "'  xx  '.strip(), 'xxhixx'.strip('x'), '  a'.lstrip(), 'a  '.rstrip(), 'abc'.rstrip('c')",
        "'a-b-c'.partition('-'), 'a-b-c'.rpartition('-'), 'abc'.partition('x'), 'abc'.rpartition('x')",
        "'hello'.find('l'), 'hello'.rfind('l'), 'hello'.find('l', 3), 'hello'.find('z'), 'hello'.index('e'), 'hello'.count('l'), ''.count(''), 'abc'.count(''), 'hello'.find('', 10), 'hello'.find('', 5)",
        "'hello world'.title(), \"they're bill's\".title(), 'hello'.capitalize(), 'HeLLo'.swapcase(), 'ß'.casefold(), 'ABC'.lower(), 'straße'.upper()",
        "'5'.zfill(3), '-5'.zfill(4), '+5'.zfill(4), 'abc'.zfill(2), 'ab'.center(7, '*'), 'ab'.center(6), 'abc'.center(6), 'a'.ljust(3, '.'), 'a'.rjust(3)",
        "'a\\tb'.expandtabs(), 'a\\tbc\\td'.expandtabs(4), 'abc'.removeprefix('ab'), 'abc'.removesuffix('bc'), 'abc'.removeprefix('x')",
        "'abc'.isalpha(), 'abc1'.isalnum(), '123'.isdigit(), '12.3'.isdecimal(), ' \\t'.isspace(), ''.isspace(), 'Abc'.istitle(), 'ABC'.isupper(), 'abc'.islower(), 'a1'.isidentifier(), '1a'.isidentifier(), 'é'.isascii(), '½'.isnumeric()",
        "'-'.join(['a', 'b', 'c']), ''.join([]), ', '.join(str(i) for i in range(3)), 'aaa'.replace('a', 'b', 2), 'abc'.replace('', '-'), 'hello'.startswith('he'), 'hello'.endswith(('lo', 'x')), 'hello'.startswith('l', 2)",
        "'abc' * 3, 3 * 'ab', 'a' + 'b', 'x' * -1, 'b' in 'abc', 'abc' < 'abd'",
        "[1, 2, 3].index(2), [1, 2, 1].count(1), (1, 2, 1).count(1), (1, 2).index(2)",
        "xs = [3, 1, 2]\nxs.sort()\nys = xs.copy()\nys.reverse()\nxs.insert(0, 9)\nxs.insert(-1, 8)\nxs.extend([7])\np = xs.pop()\nq = xs.pop(0)\nxs.remove(8)\n(xs, ys, p, q)",
        "xs = ['b', 'A', 'c']\nxs.sort(key=lambda s: s.lower(), reverse=True)\nxs",
        "d = {'a': 1}\nd.update({'b': 2}, c=3)\nd.update([('d', 4)])\n(d.get('a'), d.get('z'), d.get('z', 0), d.pop('a'), d.pop('z', None), d.setdefault('e', 5), d.setdefault('b', 9), d.popitem(), d)",
        "s = {1, 2}\ns.add(3)\ns.discard(1)\ns.remove(2)\nt = s.union([4, 5])\n(s, t, t.intersection({4, 9}), t.difference([3]), sorted(t.symmetric_difference({3, 9})), t.issubset({3, 4, 5, 6}), t.issuperset({3}), t.isdisjoint({8}))",
        "(255).bit_length(), (0).bit_length(), (-8).bit_length(), (1.0).is_integer(), (1.5).is_integer()",
        "sort_by([{'n': 2}, {'n': 1}], 'n'), sort_by([(1, 'b'), (0, 'a')], 0, reverse=True), sort_by([[2, 'x'], [1, 'y'], [2, 'a']], 0)",
    ]);
}

#[test]
fn formats() {
    differential(&[
        "f'{1234:010,}|{-1234:010,}|{1234:x<10,}|{255:#010x}|{-255:#x}|{12:08_b}|{1234567:_d}'",
        "f'{12345.678:015,.2f}|{1e5:.3}|{12.0:.3}|{1.5e-7:#g}|{1.0:#.3g}|{0.5:%}|{-0.0:z.1f}|{1234.5:,}|{1e16:,}'",
        "f'{0.0:g}|{100.0:g}|{1.0:e}|{123.456:g}|{1e20:g}|{1e-4:g}|{1180591620717411303424:,}|{3:.2f}|{True}|{True:>5}'",
        "f'{\"abc\":^7}|{\"ab\":05}|{\"abc\":.2}|{\"x\":>3}|{65:c}|{3.0:n}|{1234:n}|{0.000012345:.3e}|{1e100:.2E}'",
        "f'{float(\"inf\"):010.2f}|{float(\"nan\"):+f}|{-1.5:+.1f}|{1.5: .1f}|{42:+d}|{42: d}|{-42:=8d}|{42:^8}'",
        "f'{1.23456789e-5}|{123456789.0:.12g}|{0.1:.20f}|{1/3:.15}|{2/3:10.4}|{1e15:.1f}'",
        "[f'{x:.{p}}' for p in [1, 2, 3, 4] for x in [0.5, 1.0, 9.99, 12.0, 123.456, 99.99, 1e5, 0.0001, 0.00001234]]",
        "f'{\"a\":d}'",
        "f'{1.5:d}'",
        "f'{\"a\":+}'",
        "f'{1:.2d}'",
        "f'{1:,x}'",
        "f'{None:5}'",
    ]);
}

/// The interpreter's fast paths (ASCII split/upper/lower/replace, literal
/// numeric format specs, presized comprehensions, cached str hashes) against
/// CPython, including the edges where they must hand over to the general path.
#[test]
fn fast_paths_match_cpython() {
    differential(&[
        "s = 'éaé€b'\n(s.startswith('é'), s.startswith('a', 1), s.startswith(('x', 'é€'), 2), s.endswith('€', 0, 4), s.endswith(('b', 'q'), -1), s.startswith('', 5), s.startswith('', 6), s.endswith('é', 1, 1), s.endswith(('',), 3, 2), s.startswith('éa', -9, 99))",
        "x = 7\ng = (x for x in range(3))\n(' '.join(str(y) for y in g), x, list(g))",
        "sum(10 // (2 - x) for x in range(5))",
        "g = (x for x in range(6))\nz = list(zip(g, range(2)))\n(z, list(g), list(g))",
        "g = (x for x in range(5))\n([y for y in g if y > 1][:0], sorted(x * x for x in range(4)), max(x % 3 for x in range(10)), ''.join(c.upper() for c in 'abc' if c != 'b'), list(x + y for x in range(3) for y in range(x)))",
        "g = (list(g) for x in range(2))\nlist(g)",
        "g = (' '.join(str(i % 7) for i in range(j)) for j in range(4))\nlist(g)",
        "('alpha beta  gamma\\t\\n delta \\x1c eps\\x1f' * 3).split(), ' a b c '.split(None, 1), ' a b c '.split(None, 0), ''.split(), '   '.split(), 'a\\x85b c'.split(), 'é b'.split()",
        "s = 'abc'\n(s.replace('x', 'y') is s, s.replace('a', 'b', 0) is s, s.replace('', '-', 0) is s, 'aXbXc'.replace('X', '--'), 'aXbXc'.replace('X', ''), 'aXbXc'.replace('X', 'é'), 'éXa'.replace('X', 'y'), 'aaa'.replace('a', 'b', 2), 'aaa'.replace('a', 'b', -1))",
        "('Hello World 1'.upper(), 'Hello World 1'.lower(), 'straße'.upper(), 'ÀB'.lower(), ''.upper(), len('abc'.upper()), 'abc'.upper()[1])",
        "(('ab' * 20).upper(), ('AB' * 20).lower(), ('x' * 30).replace('x', 'yy'), ('x' * 11).replace('x', 'yy'), ('x' * 12).replace('x', 'yy'), 'axbxc'.replace('x', 'é'), '-'.join(('a', 'b')), '-'.join(['a', 'bc', '']), ''.join(x for x in 'abc'), ', '.join([]), ('ab' * 15) + ('cd' * 5), 'ab' + 'c' * 20, str(-9223372036854775807 - 1), str(0), str(-5))",
        "'-'.join(['a', 1])",
        "'-'.join(('a', None))",
        "s = 'x' * 22\nt = 'y' * 23\n(s.upper(), t.upper(), s.lower() is s, s.replace('x', 'ab'), s.replace('x', ''), ('a' * 11).replace('a', 'bc'), ('a' * 12).replace('a', 'bc'), t.replace('y', 'z'), t.replace('q', 'z') is t, s.replace('x', 'z', 1), 'aé'.replace('a', 'b'), 'ab'.replace('a', 'é'), 'ab'.replace('\\x80', 'c'), ''.replace('a', 'b'), 'abc'.upper().lower())",
        "f = 1\nfor i in range(1, 60):\n    f = f * i\ng = -f\n[(f % k, g % k, f % -k, g % -k, f * k, g * -k, f // k, g // k, f + k, g - k) for k in (1, 2, 7, 10, 97, 2147483647, 4294967295, 4294967296, 4294967297, 9223372036854775807)]",
        "f = 1267650600228229401496703205376\n(f % 0)",
        "s = 'ab'\nt = s + 'c'\nu = str(12) + ':' + str(34) + 'é' + ''\nv = str(5) + 'x' * 30\nw = ('x' * 20) + 'yz' + 'q'\nd = {u: 1}\nd[str(12) + ':34é'] = 2\n(s, t, s is t, u, len(u), v, w, len(w), d, u in d, {u} == {'12:34é'}, ('' + s) == s, str(7) + '' + str(8))",
        "str(1) + ':' + 2",
        "x = 'aXa'\ny = x.replace('X', 'y')\nd = {'ABC': 1, 'xbc': 2}\n(x, y, x.upper().replace('A', 'q'), str(12).replace('1', '9'), ('a' + 'bc').upper(), d[('a' + 'bc').upper()], d[('A' + 'BC').lower().replace('a', 'x')], ('ab' * 12).upper().replace('A', 'z'), ('é' + 'a').upper().replace('A', 'b'), (str(1) + 'a').upper().replace('A', 'bb'), (str(1) + 'aa').replace('a', 'b', 1), (str(1) + 'a').replace('q', 'r'), (str(1) + 'a').upper().lower().upper())",
        "g = (x for x in range(10))\nh = (x for x in range(10))\nk = (x for x in range(5))\nm = (x for x in range(3))\nn = (sum(m) for y in range(2))\n(any(g), list(g), all(h), list(h), sum(k), sum(k), list(k), list(n), sum(sum(y for y in range(x)) for x in range(5)), sum((x for x in [[1], [2]]), []), sum(x for x in [1.5, 2, 3]), any(x > 3 for x in []), all(x for x in []), sum(x for x in range(0)), sum((x for x in range(3)), 10))",
        "sum(1 / (2 - x) for x in range(5))",
        "sum(x for x in [1, 'a'])",
        "any(1 / (2 - x) for x in range(5))",
        "all(1 / (2 - x) for x in range(5))",
        "(str(1) + 'a').upper(1)",
        "(str(1) + 'a').replace('a', 5)",
        "(str(1) + 'a').replace('a')",
        "'abc'.upper(1)",
        "'abc'.lower(x=1)",
        "'abc'.replace('a')",
        "'abc'.replace('a', 1)",
        "'abc'.replace(1, 'a')",
        "'abc'.replace('a', 'b', 'c')",
        "'abc'.startswith()",
        "'abc'.startswith(('a', 1))",
        "'abc'.endswith(['c'])",
        "' \\t a\\x0bb\\x0c\\rc  d\\n'.split(), ('w ' * 40).split()[-2:], len(('word ' * 1000).split()), 'one'.split(), 'é a'.split()",
        // split() scans 64-byte blocks: words and whitespace runs across,
        // ending at and starting at the block edges; every ASCII byte.
        "[(n, k, ('x' * n + ' ' * k + 'y' * n).split(), ('x' * n).split(), (' ' * n + 'z').split(), ('q' * n + ' ').split()) for n in (0, 1, 62, 63, 64, 65, 127, 128, 129) for k in (1, 2, 64)]",
        "s = '\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f !\\x22#$%&\\x27()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\x5c]^_`abcdefghijklmnopqrstuvwxyz{|}~\\x7f' * 3\n(s.split(), [len(w) for w in (s + 'abc').split()], (s[5:] + s[:70]).split())",
        "[(('ab cd\\x1c' * 30)[i:]).split() for i in range(0, 70, 3)]",
        "[f'{i:05d}|{i / 7:.3f}|{-i:4}|{i:0}|{-i:06d}|{i * 1.5:8.1f}|{-i / 3:09.2f}|{i:d}' for i in range(-3, 40)]",
        "[f'{x:.0f}|{x:.1f}|{x:.2f}|{x:.18f}|{x:5.3f}' for x in [0.5, 1.5, 2.5, -0.5, -0.0, 0.0, 2.675, 1e16, 9.99e16, 1e17, 1e300, 5e-324, 0.1, 1/3, float('inf'), float('nan'), -float('inf')]]",
        "[f'{n:05d}|{n:3}|{n:0}' for n in [0, -1, 1000000000000000000, -1000000000000000000, 9223372036854775807, -9223372036854775808, 18446744073709551616, -1180591620717411303424]]",
        "xs = [i * 2 + 1 for i in range(1000)]\nys = [x for x in xs]\nzs = [x for x in (1, 2, 3)]\nws = [x for x in xs if x % 3]\n(len(xs), xs[-1], ys[:3], zs, len(ws))",
        "d = {}\nfor i in range(200):\n    k = str(i % 37) + ':' + str(i % 11)\n    d[k] = d.get(k, 0) + i\nks = list(d)\n(len(d), sum(d.values()), d[ks[5]], ks[5] in d, (ks[5] + '') in d, {k: 1 for k in ks}[ks[7]])",
        // Method calls on a variable with constant arguments (the receiver
        // read in place, the constants borrowed) and one-argument builtins
        // of a variable.
        "w = 'éaé€b'\na = 'alpha'\nl = 'x' * 30\ne = ''\n(w.startswith('é'), w.startswith('a', 1), w.startswith(('x', 'é€'), 2), w.endswith('€', 0, 4), w.endswith(('b', 'q'), -1), w.startswith('', 5), w.startswith('', 6), a.startswith(('a', 'b', 'g')), a.endswith('ha'), a.startswith(()), e.startswith(''), e.endswith(('',)), l.startswith('x' * 30), l.endswith('x' * 31), a.startswith('l', 1, 2), a.startswith('l', 1, 1), a.startswith('', 9))",
        "w = 'éaé'\na = 'Alpha 1'\nl = 'xY' * 20\nn = 'x' * 22\nm = 'x' * 23\n(w.upper(), w.lower(), a.upper(), a.lower(), l.upper(), l.lower(), n.upper(), m.upper(), a.upper() is a, a.lower().upper(), a.replace('A', 'x'), a.replace('Q', 'x') is a, a.upper().replace('A', 'x'), n.upper().replace('X', 'yy'), w.upper().replace('A', 'x'), a.find('p'), a.count('a'), a.split(' '), a.strip('A1'), a.center(11, '*'), a.zfill(9), a.partition(' '))",
        "d = {'a': 1, 2: 'b', (1, 2): 3}\nk = 'a'\n(d.get('a'), d.get('q'), d.get('q', 0), d.get(2, 5), d.get((1, 2)), d.get(k, 9), d.get('a', None), d.keys() == {'a', 2, (1, 2)}, d.copy(), [1, 2, 1].count(1), (1, 2).index(2), [3, 1].copy(), {1, 2}.union({3}))",
        "s = 'abc'\nl = [1, 2]\nt = (1,)\nd = {1: 2}\ne = set()\ni = -5\nf = -2.5\nz = 0\n(len(s), len(l), len(t), len(d), len(e), str(s), str(i), str(f), int(i), float(i), float(f), bool(s), bool(e), bool(z), abs(i), abs(f), len('é' * 3), str(s) is s)",
        "n = 5\nn.startswith('a')",
        "x.upper()\nx = 's'",
        "l = [1]\nl.upper()",
        "w = 'abc'\nw.startswith()",
        "w = 'abc'\nw.startswith('a', 1, 2, 3)",
        "w = 'abc'\nw.startswith(('a', 1))",
        "w = 'abc'\nw.endswith(['c'])",
        "w = 'abc'\nw.startswith(1)",
        "w = 'abc'\nw.startswith('a', 'b')",
        "w = 'abc'\nw.upper(1)",
        "w = 'abc'\nw.lower('a', 'b')",
        "d = {}\nd.get([1])",
        "d = {}\nd.get()",
        "d = {}\nd.get(1, 2, 3)",
        "n = 3\nlen(n)",
        "n = None\nabs(n)",
        // Joins of generators (collected into a vector sized from a range,
        // list or tuple when there is one `for` and no `if`), joined bytes.
        "g = (str(i) for i in range(10))\nz = list(zip(g, range(3)))\n(z, '-'.join(g), '-'.join(g), '-'.join(str(x) for x in [1, 2, 3]), '-'.join(s for s in ('a', 'é', '')), '-'.join(str(i) for i in range(9) if i % 2), ','.join(str(i) for i in range(0)), 'é'.join(c for c in 'aéb'), ''.join(str(i) + str(j) for i in range(3) for j in range(i)), '€'.join(['x' * 30, 'é' * 12, '']))",
        "xs = ['a', 'b']\ng = (x for x in xs)\n('-'.join(g), xs)",
        "'-'.join(x for x in ['a', 1])",
        "'-'.join(str(1 // (2 - i)) for i in range(4))",
        // One-`for` generators driven in a loop: conditions, early stops,
        // resumption, an error in the condition, a consumed iterator.
        "g = (x for x in range(10) if x % 3)\nh = (x * 2 for x in [5, 6, 7, 8])\n(any(x > 3 for x in g), list(g), sum(x for x in range(5) if x != 2), all(x < 14 for x in h), list(h), sum(h), '-'.join(w for w in 'a b c'.split() if w != 'b'), sum(len(w) for w in ['ab', 'cde']), max(x for x in (3, 9, 4)))",
        "sum(x for x in range(5) if 1 // (3 - x))",
        "xs = [1, 2, 3]\ng = (x for x in xs)\nfor y in g:\n    xs.append(y) if y < 3 and len(xs) < 6 else None\n(xs, sum(g), sum(x for x in xs))",
        // Str equality and dict keys across the ways a str is built (inline
        // texts compare whole buffers): concatenation, in-place append and
        // case mapping, split pieces, str(int), slices, joins, f-strings,
        // at the inline/heap boundary (22 bytes) and one byte either side.
        "ks = ['12:34', 'AB', 'x' * 21, 'x' * 22, 'x' * 23, 'é' * 11, '']\nbuilt = [str(12) + ':' + str(34), 'ab'.upper(), ('x' * 20) + 'x', 'x' * 11 + 'x' * 11, ('x' * 22) + 'x', 'é' * 5 + 'é' * 6, ''.join([])]\nmore = ['a 12:34 b'.split()[1], 'xABx'[1:3], ('y' * 21).replace('y', 'x'), '-'.join(['x' * 10, 'x' * 11]).replace('-', 'x'), f'{\"x\" * 23}', str(1234)[:0]]\nd = {k: i for i, k in enumerate(ks)}\n([b == k for b, k in zip(built, ks)], [d.get(b) for b in built], [d.get(m) for m in more], [m in ks for m in more], 'x' * 21 == 'x' * 22, ('x' * 21 + 'y') == 'x' * 22, str(12) + ':' + str(35) == '12:34', sorted(set(built + more + ks)))",
    ]);
}

#[test]
fn runtime_errors() {
    differential(&[
        "x = 1 if False else y\ny = 2",
        "1 / 0",
        "1 // 0",
        "1 % 0",
        "1.0 / 0",
        "1.0 // 0",
        "1.0 % 0",
        "[1][5]",
        "(1,)[5]",
        "'abc'[5]",
        "{}['a']",
        "{}[(1, 2)]",
        "1 + 'a'",
        "'a' + 1",
        "[1] + (1,)",
        "'a' * 1.5",
        "5[0]",
        "x = None\nx.upper()",
        "x = []\nx.upper()",
        "int('x')",
        "float('x')",
        "int('12', 1)",
        "a, b, c = [1, 2]",
        "a, b = [1, 2, 3]",
        "a, b = 1",
        "a, *b, c = [1]",
        "1 < 'a'",
        "max([])",
        "min(())",
        "[].pop()",
        "[1].pop(5)",
        "{}.popitem()",
        "set().pop()",
        "{1}.remove(2)",
        "[1].index(2)",
        "[1].remove(2)",
        "'a'.index('b')",
        "(1,).index(2)",
        "dict([1])",
        "dict([(1, 2, 3)])",
        "list(5)",
        "range(1.5)",
        "range(0, 1, 0)",
        "'a'.join([1])",
        "'a'.split('')",
        "{[]: 1}",
        "{[1]}",
        "'ab'.center(5, 'xy')",
        "list(zip([1, 2], [1], strict=True))",
        "len(5)",
        "1 in 5",
        "1 in 'a'",
        "int(float('inf'))",
        "int(float('nan'))",
        "float(int('1' * 400))",
        "int('1' * 5000)",
        "str(int('9' * 4300) * 10)",
        "abs('a')",
        "sum(['a'])",
        "sum([1], 'a')",
        "-'a'",
        "[1, 2].sort(key=5) if False else sorted([1, 'a'])",
        "'x'.startswith(1)",
        "'a'.upper(1)",
        "print(1, sepx=2)",
        "len()",
        "d = {'a': 1}\nfor k in d:\n    d['b'] = 2",
        "{}.get()",
        "{}.get([1])",
        "{}.get([1], 0)",
        "{}.get(1, 2, 3)",
        "x = {}.get(y, 0)\ny = 1",
        "x = {}.get(1, y)\ny = 1",
        "x = 'abc'\nx.get(1, 2)",
        "x = [1]\nx.get(1)",
        "d = {1: 'a', (1, [2]): 3}",
        "d = {}\nd[1.0] = 2\n(d.get(1), d.get(True, 5), d.get(1.5, 'no'), d.get((1, 2)), d.get('a', None))",
        "d = {'a': [1]}\nx = d.get('a', 0)\nx.append(2)\n(d, d.get('b'), d.get('b', d))",
        "s = {1}\ns.get(1)",
        "'a'.zfill('x')",
        "'abc'[1:2:0]",
        "[1, 2][1.0]",
        "'a'['b']",
        "xs = [1, 2, 3]\nxs[::2] = [1]",
        "t = (1, 2)\nt[0] = 5",
        "'abc'.find('b', 'x')",
        "round(1.5, 'a')",
        "int(1.5, 2)",
        "isinstance(1, 5) if False else [].append()",
    ]);
}

fn lim(fuel: u64, mem: u64) -> Limits {
    Limits {
        fuel,
        memory_bytes: mem,
        ..Limits::default()
    }
}

fn run_lim(src: &str, l: &Limits) -> RunResult {
    let mut out = String::new();
    run_source(src, &["echo"], &mut FakeTools, &mut out, l)
}

fn err_type(r: &RunResult) -> String {
    r.error
        .as_ref()
        .map(|e| format!("{:?}:{}", e.kind, e.type_name))
        .unwrap_or_default()
}

#[test]
fn sorting_accounts_its_working_memory() {
    // Keys, permutation, slots and result (and flattened tuple keys) are
    // preflighted: a sort that fits only because they went uncounted stops.
    let l = lim(50_000_000, 16 << 20);
    assert_eq!(
        err_type(&run_lim(
            "x = [(1, 2, 3, 4, 5, 6, 7, 8)] * 150000\nlen(sorted(x))",
            &l
        )),
        "Limit:memory"
    );
    assert_eq!(
        err_type(&run_lim(
            "x = list(range(250000))\nlen(sorted(x, key=lambda v: -v))",
            &l
        )),
        "Limit:memory"
    );
    assert_eq!(
        err_type(&run_lim(
            "d = {'n': 1}\nx = [d] * 200000\nlen(sort_by(x, 'n'))",
            &l
        )),
        "Limit:memory"
    );
    // Small sorts are unaffected.
    let r = run_lim("x = list(range(1000))\nsorted(x, key=lambda v: -v)[:2]", &l);
    assert_eq!(err_type(&r), "");
}

#[test]
fn split_results_are_preflighted_and_exact() {
    // Preflighted before any piece is built...
    let l = lim(50_000_000, 16 << 20);
    for src in [
        "s = ',' * 1000000\nlen(s.split(','))",
        "s = ',' * 1000000\nlen(s.rsplit(',', 5000000))",
        "s = ' a' * 500000\nlen(s.split())",
        "s = '\\u3000a' * 500000\nlen(s.rsplit())",
        "s = '\\n' * 1000000\nlen(s.splitlines(True))",
        "s = 'é' * 6000000\nlen(s[::-1])",
    ] {
        assert_eq!(err_type(&run_lim(src, &l)), "Limit:memory", "{src}");
    }
}

#[test]
fn limits_hold() {
    let l = lim(1_000_000, 64 << 20);
    assert_eq!(
        err_type(&run_lim("for i in range(1000000000):\n    pass", &l)),
        "Limit:fuel"
    );
    assert_eq!(err_type(&run_lim("'a' * 1000000000", &l)), "Limit:memory");
    assert_eq!(err_type(&run_lim("[0] * 2000000000", &l)), "Limit:memory");
    assert_eq!(
        err_type(&run_lim("s = 'ab'\nfor i in range(60):\n    s = s + s", &l)),
        "Limit:memory"
    );
    let r = err_type(&run_lim(
        "x = int('9' * 4000)\nfor i in range(30):\n    x = x * x",
        &l,
    ));
    assert!(r == "Limit:memory" || r == "Limit:fuel", "{r}");
    assert_eq!(
        err_type(&run_lim("list(range(1000000000))", &l)),
        "Limit:memory"
    );
    assert_eq!(
        err_type(&run_lim(
            "x = [1] * 1000\ny = [x] * 1000\nz = [y] * 1000\nz",
            &Limits {
                fuel: 50_000_000,
                ..l.clone()
            }
        )),
        "Limit:result"
    );
    // Deep data: no stack overflow anywhere.
    let deep = "a = []\nfor i in range(100000):\n    a = [a]\nb = len(a)\nb";
    let r = run_lim(deep, &Limits::default());
    assert_eq!(r.repr.as_deref(), Some("1"), "{:?}", r.error);
    for (src, want) in [
        (
            "a = []\nfor i in range(100000):\n    a = [a]\na",
            "Runtime:RecursionError",
        ),
        (
            "a = []\nfor i in range(100000):\n    a = [a]\nb = []\nfor i in range(100000):\n    b = [b]\na == b",
            "Runtime:RecursionError",
        ),
        (
            "a = []\nfor i in range(100000):\n    a = [a]\necho(a)",
            "Limit:depth",
        ),
        (
            "g = range(3)\nfor i in range(100000):\n    g = enumerate(g)\nlist(g)",
            "Limit:depth",
        ),
        (
            "g = [1]\nfor i in range(100000):\n    g = (x for x in g)\nlist(g)",
            "Limit:depth",
        ),
        (
            "for i in range(100):\n    print('x' * 100000)",
            "Limit:output",
        ),
        ("for i in range(20000):\n    echo(i)", "Limit:tool_calls"),
    ] {
        assert_eq!(err_type(&run_lim(src, &Limits::default())), want, "{src}");
    }
}

#[test]
fn tools_and_positions() {
    let r = run_lim("x = echo([1, (2, 3), {'a': None}])\nx", &Limits::default());
    assert_eq!(r.repr.as_deref(), Some("[1, (2, 3), {'a': None}]"));
    let r = run_lim("echo(range(3))", &Limits::default());
    assert_eq!(err_type(&r), "Runtime:TypeError");
    let mut out = String::new();
    let r = run_source(
        "x = 1\ny = 2\nfail('a')",
        &["fail"],
        &mut FakeTools,
        &mut out,
        &Limits::default(),
    );
    let e = r
        .error
        .unwrap_or_else(|| ErrorInfo::new(ErrorKind::Internal, "none", ""));
    assert_eq!((e.type_name.as_str(), e.line), ("FileNotFound", Some(3)));
    let r = run_lim(
        "x = 1\nif x:\n    y = [1,\n         2][5]",
        &Limits::default(),
    );
    assert_eq!(r.error.and_then(|e| e.line), Some(3));
    let r = run_lim("x = 1\nx = 2", &Limits::default());
    assert_eq!((r.value, r.repr, r.error), (None, None, None));
    let r = run_lim("print(1)", &Limits::default());
    assert_eq!(r.repr.as_deref(), Some("None"));
}

#[test]
fn lazy_generators_short_circuit() {
    let mut out = String::new();
    let r = run_source(
        "any(echo(x) > 1 for x in [1, 2, 3, 4])",
        &["echo"],
        &mut Counting(0),
        &mut out,
        &Limits::default(),
    );
    assert_eq!(r.repr.as_deref(), Some("True"));
}

struct Counting(u32);

impl ToolHost for Counting {
    fn call(&mut self, _name: &str, args: Vec<Data>, _kw: Kwargs) -> Result<Data, ToolFailure> {
        self.0 += 1;
        assert!(self.0 <= 2, "generator was not lazy");
        Ok(args.into_iter().next().unwrap_or(Data::None))
    }
}

#[test]
fn method_allowlist_tables_agree_with_dispatch() {
    let samples = [
        (Value::str("x"), allowlist("str")),
        (Value::list(vec![]), allowlist("list")),
        (Value::dict(value::Dict::new()), allowlist("dict")),
        (Value::set(value::Dict::new()), allowlist("set")),
        (Value::tuple(vec![]), allowlist("tuple")),
        (
            Value::Range(std::rc::Rc::new(value::RangeV {
                start: 0,
                stop: 3,
                step: 1,
            })),
            allowlist("range"),
        ),
        (Value::Int(1), allowlist("int")),
        (Value::Float(1.0), allowlist("float")),
    ];
    let all: Vec<&str> = lackpy_policy::lang::METHODS
        .iter()
        .flat_map(|(_, m)| m.iter().copied())
        .collect();
    for (v, table) in samples {
        assert!(!table.is_empty(), "no allowlist for {}", v.type_name());
        for name in table.iter() {
            let m = methods::Method::from_name(name);
            assert!(
                m.is_some_and(|m| methods::has_method(&v, m)),
                "{name} on {}",
                v.type_name()
            );
        }
        for name in all.iter().filter(|n| !table.contains(n)) {
            let m = methods::Method::from_name(name);
            assert!(
                m.is_some_and(|m| !methods::has_method(&v, m)),
                "{name} must not be on {}",
                v.type_name()
            );
        }
    }
}

/// The validator's per-type allowlist: the one table both sides use.
fn allowlist(type_name: &str) -> &'static [&'static str] {
    lackpy_policy::lang::METHODS
        .iter()
        .find(|(t, _)| *t == type_name)
        .map_or(&[][..], |(_, m)| *m)
}

#[test]
fn hostile_programs_end_with_limits() {
    let quick = Limits {
        wall_ms: 200,
        fuel: u64::MAX / 2,
        ..Limits::default()
    };
    assert_eq!(
        err_type(&run_lim("for i in range(1000000000):\n    pass", &quick)),
        "Limit:timeout"
    );
    let d = Limits::default();
    let big = "n = int('1' + '0' * 18)\n";
    assert_eq!(
        err_type(&run_lim(&format!("{big}'x'.center(n)"), &d)),
        "Limit:memory"
    );
    assert_eq!(
        err_type(&run_lim(&format!("{big}'x'.zfill(n)"), &d)),
        "Limit:memory"
    );
    assert_eq!(
        err_type(&run_lim(&format!("{big}a = [1]\na *= n"), &d)),
        "Limit:memory"
    );
    assert_eq!(err_type(&run_lim("f'{1:99999999}'", &d)), "Limit:memory");
    assert_eq!(
        err_type(&run_lim("'ab\\tc'.expandtabs(2000000000)", &d)),
        "Limit:memory"
    );
    // Beyond a C int the tab size is CPython's OverflowError, not a limit.
    assert_eq!(
        err_type(&run_lim("'ab\\tc'.expandtabs(1000000000000)", &d)),
        "Runtime:OverflowError"
    );
    let r = run_lim(&format!("{big}(len([] * n), len(() * n), len('' * n))"), &d);
    assert_eq!(r.repr.as_deref(), Some("(0, 0, 0)"), "{:?}", r.error);
    let r = run_lim("x = int('1' * 4000)\ny = x * x\ny % 7", &d);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(
        err_type(&run_lim("x = int('1' * 4000)\nstr(x * x)", &d)),
        "Runtime:ValueError"
    );
    // Many keys: no quadratic blow-up, no panic.
    let r = run_lim(
        "d = {}\nfor i in range(200000):\n    d[i * 4096] = i\nlen(d)",
        &d,
    );
    assert_eq!(r.repr.as_deref(), Some("200000"), "{:?}", r.error);
    // Self-referencing generator.
    let r = run_lim("g = None\ng = (x for x in [1, 2] if list(g))\nlist(g)", &d);
    assert_eq!(err_type(&r), "Runtime:ValueError");
    // i64 edge cases never panic.
    let r = run_lim("m = -9223372036854775807 - 1\n(m // -1, m * -1, abs(m), -m, m / 3, [1, 2, 3][::m], m % -1)", &d);
    assert!(r.error.is_none(), "{:?}", r.error);
}

#[path = "../../tests/rng.rs"]
mod rng;
use rng::Rng;

#[test]
fn property_float_repr_matches_cpython() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut floats = Vec::new();
    for _ in 0..400 {
        let f = f64::from_bits(rng.next());
        if f.is_finite() {
            floats.push(f);
        }
        // Also "ordinary" magnitudes and short decimals.
        floats.push((rng.next() % 10_000_000) as f64 / 10f64.powi((rng.next() % 12) as i32));
    }
    // Express each float exactly via its bits, so both sides see the same value.
    let lits: Vec<String> = floats.iter().map(|f| format!("{:e}", f)).collect();
    let prog = format!("[{}]", lits.join(", "));
    differential(&[prog.as_str()]);
}

#[test]
fn property_arithmetic_and_comparisons_match_cpython() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let atoms = [
        "0",
        "1",
        "-1",
        "7",
        "-7",
        "3",
        "2.5",
        "-0.5",
        "0.1",
        "1e300",
        "-1e-300",
        "9007199254740993",
        "-9223372036854775808",
        "9223372036854775807",
        "123456789012345678901234567890",
        "-98765432109876543210",
        "True",
        "False",
        "1e16",
        "0.0",
        "-0.0",
        "4.0",
    ];
    let ops = [
        "+", "-", "*", "/", "//", "%", "<", "<=", "==", "!=", ">", ">=",
    ];
    let mut progs = Vec::new();
    for _ in 0..300 {
        let a = rng.pick(&atoms);
        let b = rng.pick(&atoms);
        let c = rng.pick(&atoms);
        let o1 = rng.pick(&ops);
        let o2 = rng.pick(&["+", "-", "*", "/", "//", "%"]);
        progs.push(format!("({a}) {o1} (({b}) {o2} ({c}))"));
    }
    let refs: Vec<&str> = progs.iter().map(String::as_str).collect();
    differential(&refs);
}

#[test]
fn property_string_methods_match_cpython() {
    let mut rng = Rng(0xA076_1D64_78BD_642F);
    let strs = [
        "''",
        "'abc'",
        "'  a b  '",
        "'a,b,,c'",
        "'ÉtÉ ß'",
        "'x\\ty\\nz'",
        "'ΣΑΣ'",
        "'aaa'",
        "'Hello World'",
        "'-12'",
    ];
    let calls = [
        "split()",
        "split(',')",
        "rsplit(None, 1)",
        "strip()",
        "strip('a')",
        "upper()",
        "lower()",
        "title()",
        "capitalize()",
        "swapcase()",
        "casefold()",
        "find('a')",
        "rfind('a', 1)",
        "count('a')",
        "replace('a', 'xy')",
        "center(9, '*')",
        "zfill(6)",
        "partition(',')",
        "rpartition(' ')",
        "splitlines()",
        "expandtabs(4)",
        "isalpha()",
        "isdigit()",
        "istitle()",
        "startswith('a')",
        "endswith(('c', 'z'))",
        "removeprefix('a')",
        "ljust(7, '.')",
        "index('a')",
    ];
    let mut progs = Vec::new();
    for _ in 0..200 {
        let s = rng.pick(&strs);
        let c = rng.pick(&calls);
        progs.push(format!("{s}.{c}"));
    }
    let refs: Vec<&str> = progs.iter().map(String::as_str).collect();
    differential(&refs);
}

#[test]
fn memory_is_given_back() {
    // Appending and popping forever must not look like growth.
    // A generous wall clock: this asserts memory accounting, not speed, and
    // a loaded machine must not turn it into a timeout.
    let l = Limits {
        memory_bytes: 1 << 20,
        wall_ms: 300_000,
        ..Limits::default()
    };
    let r = run_lim("s = []\nd = {}\nfor i in range(200000):\n    s.append(i)\n    s.pop()\n    d[i] = i\n    d.pop(i)\nfor i in range(200000):\n    t = 'x' * 100\nlen(s) + len(d)", &l);
    assert_eq!(r.repr.as_deref(), Some("0"), "{:?}", r.error);
    let r = run_lim("s = set(range(100000))\nfor i in range(100000):\n    s.pop()\nd = {}\nfor i in range(100000):\n    d[i] = 1\n    d.pop(i)\nlen(s) + len(d)", &Limits { wall_ms: 300_000, ..Limits::default() });
    assert_eq!(r.repr.as_deref(), Some("0"), "{:?}", r.error);
}

/// `str.split()` charges its strs in one batch: exactly what they give back
/// when dropped (the accounted memory returns to where it was after the
/// run), and the peak counts every one of them, short (inline) and long.
#[test]
fn split_charges_what_its_strs_give_back() {
    let before = super::value::mem_used();
    mem_peak_reset();
    let r = run_prog(
        "w = ('ab cdefghijklmnopqrstuvwxyz0123456789 ' * 500 + 'tail').split()\n(len(w), w[-1])",
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.repr.as_deref(), Some("(1001, 'tail')|"));
    assert_eq!(super::value::mem_used(), before);
    let strs = 1001 * super::value::OBJ as i64 + 500 * 38 + 4;
    assert!(mem_peak() >= strs, "peak {} < {strs}", mem_peak());
}

/// A method call on a variable with constant arguments (receiver read in
/// place, constants borrowed) costs the fuel of the general path: each pair
/// differs only in an argument being a variable instead of a constant, which
/// takes the general path at no fuel of its own (or in an unpacked `*x`,
/// at one tick).
#[test]
fn borrowed_method_calls_cost_the_general_fuel() {
    let pre = "w = 'alpha' * 40\ns = 'beta'\np = ('a', 'b')\nq = 'a'\none = 1\nz = 0\ne = ()\nd = {'a': 1}\nk = 'a'\nr = 'A'\n";
    let pairs = [
        ("w.startswith(('a', 'b'))", "w.startswith(p)"),
        ("w.endswith('a', 1)", "w.endswith(q, one)"),
        ("s.startswith('a')", "s.startswith(q)"),
        ("s.upper()", "s.upper(*e)"),
        ("w.upper()", "w.upper(*e)"),
        ("s.lower().upper()", "s.lower(*e).upper(*e)"),
        ("s.upper().replace('A', 'x')", "s.upper().replace(r, 'x')"),
        ("w.replace('a', 'x')", "w.replace(q, 'x')"),
        ("d.get('a', 0)", "d.get(k, z)"),
        ("d.get('a')", "d.get(k)"),
        ("len(w)", "len(*[w])"),
    ];
    for (fast, general) in pairs {
        let loop_of = |call: &str| format!("{pre}for i in range(50):\n    x = {call}\nx");
        let a = run_prog(&loop_of(fast));
        let b = run_prog(&loop_of(general));
        assert!(
            a.error.is_none() && b.error.is_none(),
            "{fast}: {a:?} {b:?}"
        );
        assert_eq!(a.repr, b.repr, "{fast} vs {general}");
        // Each `*x` unpacking costs one tick per run of the loop.
        let extra = 50 * general.matches('*').count() as u64;
        assert_eq!(
            a.fuel_used + extra,
            b.fuel_used,
            "fuel of {fast} vs {general}"
        );
    }
}

/// Sets follow CPython's table order while small; one that grows past
/// `MAX_MODEL_KEYS` keeps insertion order, so large sets cost the memory
/// they did before the model (a 2-million-element union fits the default
/// limit) and the model's memory is accounted while it exists.
#[test]
fn set_order_model_is_bounded_and_accounted() {
    let r = run_prog("list({3, 1, 2}) + list(set([10, 3, 8]))");
    assert_eq!(r.repr.as_deref(), Some("[1, 2, 3, 8, 10, 3]|"), "{r:?}");
    let n = super::value::MAX_MODEL_KEYS + 10;
    let r = run_prog(&format!("s = set(range({n}, 0, -1))\nlist(s)[:3]"));
    assert_eq!(
        r.repr.as_deref(),
        Some(format!("[{n}, {}, {}]|", n - 1, n - 2).as_str()),
        "{r:?}"
    );
    let r = run_prog("s = {i * 3 for i in range(2000000)}\nt = s.union(range(10))\nlen(t)");
    assert_eq!(r.repr.as_deref(), Some("2000006|"), "{r:?}");
    // The model's table is charged while it exists: reading the set in
    // order (which builds it) raises the run's peak.
    let peak = |src: &str| {
        super::mem_peak_reset();
        let r = run_prog(src);
        assert!(r.error.is_none(), "{r:?}");
        super::mem_peak()
    };
    // A str among the ints: no order to model, the same list is built.
    let unmodelled = peak("s = set(range(40000))\ns.add('x')\nlen(list(s))");
    let modelled = peak("s = set(range(40000))\nlen(list(s))");
    assert!(
        modelled > unmodelled + 40000 * 16,
        "peak with the model {modelled} vs without {unmodelled}"
    );
}

/// Keys whose CPython hashes collide (multiples of 2**61 - 1 all hash to
/// 0) make the order model probe long, as they make CPython: that work is
/// charged as fuel, so it ends in a fuel limit like any other.
#[test]
fn colliding_cpython_hashes_cost_fuel() {
    let prog = |factor: &str| {
        format!(
            "s = {{1, 2, 3}}\ns.discard(1)\nfor k in range(6000):\n    s.add(k * {factor})\nlen(s)"
        )
    };
    let l = lim(300_000, 64 << 20);
    let spread = run_lim(&prog("7"), &l);
    assert!(spread.error.is_none(), "{spread:?}");
    let colliding = run_lim(&prog("2305843009213693951"), &l);
    assert_eq!(err_type(&colliding), "Limit:fuel", "{colliding:?}");
}

/// Removing and adding the same keys over and over keeps the order model's
/// memory flat (CPython reuses the deleted slots; so does the model's key
/// list once compacted).
#[test]
fn set_churn_keeps_the_model_small() {
    super::mem_peak_reset();
    let r = run_prog(
        "s = set(range(50))\nlist(s)\nfor i in range(200000):\n    s.discard(i % 50)\n    s.add(i % 50)\nlist(s)[:3]",
    );
    assert_eq!(r.repr.as_deref(), Some("[0, 1, 2]|"), "{r:?}");
    assert!(super::mem_peak() < 1 << 20, "peak {}", super::mem_peak());
}
