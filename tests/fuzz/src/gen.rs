//! Input generation shared by the fuzz targets (`tests/fuzz`) and the
//! deterministic fuzz smoke test (`tests/fuzz_smoke.rs`, which includes this
//! file with `#[path]`). Pure `std`, no dependencies: a seeded PRNG, a
//! mutator for program text, a small grammar of lackpy programs, and a
//! mutator for byte strings (IPC frames).
//!
//! Everything is deterministic for a given seed, so a failure found by the
//! smoke test is reproduced by re-running with the seed it prints.

#![allow(dead_code)]

/// SplitMix64: tiny, fast, good enough to drive a fuzzer.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// A random element of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Tokens the text mutator splices in: lackpy's own syntax, everything the
/// validator must refuse, and things that stress parsers and limits.
#[rustfmt::skip]
pub const TOKENS: &[&str] = &[
    "(", ")", "[", "]", "{", "}", ":", ",", ".", ";", "=", "==", "+", "-", "*", "/", "//", "%",
    "**", "<<", "&", "|", "^", "~", "@", "<", ">", "!=", "not ", " and ", " or ", " if ",
    " else ", " for ", " in ", "lambda v: ", "lambda: ", ":=", "*", "**", "\n", "\n    ", "\t",
    "\\\n", "#", "'", "\"", "'''", "f\"{", "}\"", "{x!r:>{9}}", "__class__", "__subclasses__()",
    "__globals__", "_", "__import__('os')", "eval", "exec", "open", "getattr", "import os",
    "def f():", "class A:", "while True:", "try:", "except:", "yield", "await ", "async ",
    "global x", "del x", "assert 0", "with x:", "raise", "return", "match x:", "case 1:",
    "print", "len", "range", "sorted", "sort_by", "isinstance", "repr", "str", "int", "dict",
    "list", "set", "tuple", "enumerate", "zip", "min", "max", "sum", "any", "all", "abs",
    "round", "reversed", "bool", "float", "read_file", "find_files", "write_file", "edit_file",
    ".upper()", ".split(',')", ".join(x)", ".append(1)", ".get('k')", ".items()", ".format(1)",
    ".bit_length()", "key=", "key=len", "reverse=True", "0", "1", "-1", "1.5", "1e308",
    "1e-308", "999999999999999999999999", "0x10", "0o7", "0b1", "1_000", "1j", "None", "True",
    "False", "x", "y", "i", "\"a\" * 100000", "[0] * 100000", "range(1000000)", "\"\\x00\"",
    "\"\\ud800\"", "\"\\N{DASH}\"", "ｅｖａｌ", "\u{202e}", "\u{200d}", "\u{feff}", "é",
    "\u{10ffff}", "...", "[:]", "[::-1]", "[1:2:0]",
];

/// Valid lackpy programs used as mutation seeds when no corpus is at hand.
pub const SEEDS: &[&str] = &[
    "x = 1\ny = x + 2\ny",
    "counts = {}\nfor w in \"a b a\".split():\n    counts[w] = counts.get(w, 0) + 1\nsorted(counts.items(), key=lambda kv: -kv[1])",
    "[i * i for i in range(10) if i % 2]",
    "s = \"Hello, World\"\nf\"{s.lower()!r:>20} {len(s)}\"",
    "d = {\"a\": [1, 2], \"b\": (3,)}\n{k: len(v) for k, v in d.items()}",
    "total = 0\nfor i, c in enumerate(\"abc\"):\n    if c == \"b\":\n        continue\n    total += i\nelse:\n    total -= 1\ntotal",
    "a, *b = [1, 2, 3]\nprint(a, b, sep=\"|\")\nb",
    "x = [3, 1, 2]\nx.sort(reverse=True)\nx[0] if x else None",
    "sort_by([{\"n\": 2}, {\"n\": 1}], \"n\")",
    "isinstance(1.5, (int, float)) and not isinstance(\"\", list)",
    "t = read_file(\"a.txt\")\nlen(t.splitlines())",
    "files = find_files(\"**/*.txt\")\n[f for f in files if f.endswith(\".txt\")]",
    "min([4, 2, 8], key=lambda v: -v), max(\"abc\"), sum(range(5)), any([]), all([])",
    "n = 10 // 3 + 10 % 3 - 7 / 2\nround(n, 2)",
    "set([1, 2]).union({3}), tuple(reversed([1, 2])), dict(zip(\"ab\", [1, 2]))",
    "s = \"x\"\nfor i in range(3):\n    s += s\nrepr(s)",
    "int(\"42\") + int(float(\"1.5\")) + abs(-3)",
    "\"-\".join(str(i) for i in range(5))",
    "x = {**{\"a\": 1}, \"b\": 2}\nlist(x.keys())",
    "y = [[1, 2], [3]]\n[v for row in y for v in row]",
];

/// Mutate program `text` with 1–4 random edits.
pub fn mutate(rng: &mut Rng, text: &str, other_seeds: &[String]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        let len = chars.len();
        let at = rng.below(len + 1);
        match rng.below(9) {
            0..=1 => {
                let tok: Vec<char> = rng.pick(TOKENS).chars().collect();
                chars.splice(at..at, tok);
            }
            2 => {
                let end = (at + 1 + rng.below(8)).min(len);
                if at < end {
                    chars.drain(at..end);
                }
            }
            3 => {
                // Duplicate a span, sometimes many times (nesting, size).
                let end = (at + 1 + rng.below(16)).min(len);
                if at < end {
                    let span: Vec<char> = chars[at..end].to_vec();
                    let times = if rng.one_in(8) { 1 + rng.below(300) } else { 1 };
                    for _ in 0..times {
                        chars.splice(at..at, span.iter().copied());
                    }
                }
            }
            4 => {
                if at < len {
                    chars[at] = random_char(rng);
                }
            }
            5 => {
                // Splice in part of another seed.
                if !other_seeds.is_empty() {
                    let other: Vec<char> = rng.pick(other_seeds).chars().collect();
                    let s = rng.below(other.len() + 1);
                    let e = (s + rng.below(40)).min(other.len());
                    chars.splice(at..at, other[s..e].iter().copied());
                }
            }
            6 => {
                // Wrap a span in brackets many times (deep nesting).
                let max = if rng.one_in(4) { 500 } else { 5 };
                let depth = 1 + rng.below(max);
                let (o, c) =
                    *rng.pick(&[("(", ")"), ("[", "]"), ("{", "}"), ("-", ""), ("not ", "")]);
                let end = (at + rng.below(10)).min(len);
                let mut inner: Vec<char> = Vec::new();
                for _ in 0..depth {
                    inner.extend(o.chars());
                }
                inner.extend(chars[at..end].iter().copied());
                for _ in 0..depth {
                    inner.extend(c.chars());
                }
                chars.splice(at..end, inner);
            }
            7 => chars.truncate(at),
            _ => {
                // Swap two lines.
                let text: String = chars.iter().collect();
                let mut lines: Vec<&str> = text.split('\n').collect();
                if lines.len() > 1 {
                    let i = rng.below(lines.len());
                    let j = rng.below(lines.len());
                    lines.swap(i, j);
                }
                chars = lines.join("\n").chars().collect();
            }
        }
    }
    chars.into_iter().collect()
}

fn random_char(rng: &mut Rng) -> char {
    match rng.below(6) {
        0 => char::from(b" \n\t()[]{}:,.=+-*/%<>'\"_#\\"[rng.below(25)]),
        1 => char::from(b'a' + (rng.below(26) as u8)),
        2 => char::from(b'0' + (rng.below(10) as u8)),
        3 => char::from_u32(0x80 + rng.below(0x800) as u32).unwrap_or('?'),
        4 => *rng.pick(&[
            '\u{0}',
            '\u{7f}',
            '\u{200b}',
            '\u{202e}',
            '\u{2028}',
            '\u{ff45}',
            '\u{1d41e}',
            '\u{e0001}',
        ]),
        _ => char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('\u{fffd}'),
    }
}

/// A random program from a small grammar of lackpy: assignments, `for`,
/// `if`, and expressions over the builtins, the allowlisted methods and the
/// file tools. Mostly valid, occasionally not (unassigned names, wrong types),
/// which exercises runtime errors.
pub fn grammar_program(rng: &mut Rng) -> String {
    let mut g = Grammar {
        rng,
        vars: vec!["x".to_string()],
    };
    let mut out = String::from("x = 1\n");
    let n = 1 + g.rng.below(8);
    for _ in 0..n {
        g.stmt(&mut out, 0);
    }
    let e = g.expr(0);
    out.push_str(&e);
    out.push('\n');
    out
}

struct Grammar<'a> {
    rng: &'a mut Rng,
    vars: Vec<String>,
}

impl Grammar<'_> {
    fn stmt(&mut self, out: &mut String, indent: usize) {
        let pad = "    ".repeat(indent);
        match self.rng.below(if indent > 2 { 3 } else { 6 }) {
            0..=1 => {
                let name = format!("v{}", self.rng.below(6));
                let e = self.expr(0);
                out.push_str(&format!("{pad}{name} = {e}\n"));
                self.vars.push(name);
            }
            2 => {
                let e = self.expr(0);
                let op = self.rng.pick(&["+=", "-=", "*=", "//=", "%="]);
                let v = self.var();
                out.push_str(&format!("{pad}{v} {op} {e}\n"));
            }
            3 => {
                let it = self.iterable();
                out.push_str(&format!("{pad}for i in {it}:\n"));
                self.vars.push("i".to_string());
                self.stmt(out, indent + 1);
                if self.rng.one_in(3) {
                    out.push_str(&format!("{pad}    if i == 2:\n{pad}        break\n"));
                }
            }
            4 => {
                let c = self.expr(0);
                out.push_str(&format!("{pad}if {c}:\n"));
                self.stmt(out, indent + 1);
                out.push_str(&format!("{pad}else:\n"));
                self.stmt(out, indent + 1);
            }
            _ => {
                let e = self.expr(0);
                out.push_str(&format!("{pad}print({e})\n"));
            }
        }
    }

    fn var(&mut self) -> String {
        self.rng.pick(&self.vars).clone()
    }

    fn iterable(&mut self) -> String {
        match self.rng.below(5) {
            0 => format!("range({})", self.rng.below(20)),
            1 => "\"abc\"".to_string(),
            2 => "[1, 2, 3]".to_string(),
            3 => "find_files(\"*\")".to_string(),
            _ => {
                let v = self.var();
                format!("enumerate(str({v}))")
            }
        }
    }

    fn expr(&mut self, depth: usize) -> String {
        if depth > 4 {
            return self.atom();
        }
        let d = depth + 1;
        match self.rng.below(16) {
            0..=2 => self.atom(),
            3 => {
                let (a, b) = (self.expr(d), self.expr(d));
                let op = self.rng.pick(&[
                    "+", "-", "*", "/", "//", "%", "==", "<", "!=", " and ", " or ", " in ",
                ]);
                format!("({a}{op}{b})")
            }
            4 => format!("(not {})", self.expr(d)),
            5 => format!("(-{})", self.expr(d)),
            6 => {
                let f = self.rng.pick(&[
                    "len", "str", "repr", "int", "float", "bool", "list", "sorted", "tuple", "set",
                    "abs", "sum", "min", "max", "any", "all", "reversed", "dict",
                ]);
                let a = self.expr(d);
                format!("{f}({a})")
            }
            7 => {
                let (a, b) = (self.expr(d), self.expr(d));
                format!("[{a}, {b}]")
            }
            8 => {
                let (a, b) = (self.atom(), self.expr(d));
                format!("{{{a}: {b}}}")
            }
            9 => {
                let m = self.rng.pick(&[
                    "upper()",
                    "lower()",
                    "split()",
                    "strip()",
                    "count(\"a\")",
                    "find(\"b\")",
                    "replace(\"a\", \"bb\")",
                    "startswith(\"x\")",
                    "zfill(5)",
                    "center(7)",
                    "get(1)",
                    "keys()",
                    "items()",
                    "copy()",
                    "index(1)",
                    "append(1)",
                    "pop()",
                    "bit_length()",
                    "is_integer()",
                    "join([\"a\", \"b\"])",
                ]);
                let a = self.expr(d);
                format!("({a}).{m}")
            }
            10 => {
                let (a, c) = (self.expr(d), self.expr(d));
                let it = self.iterable();
                format!("[{a} for i in {it} if {c}]")
            }
            11 => {
                let (a, i) = (self.expr(d), self.expr(d));
                format!("({a})[{i}]")
            }
            12 => {
                let a = self.expr(d);
                let spec = self
                    .rng
                    .pick(&["", "!r", ":>8", ":.3", ":,", "=", "!a:^{5}"]);
                format!("f\"<{{{a}{spec}}}>\"")
            }
            13 => {
                let (c, a, b) = (self.expr(d), self.expr(d), self.expr(d));
                format!("({a} if {c} else {b})")
            }
            14 => {
                let a = self.expr(d);
                format!("sorted({a}, key=lambda v: repr(v))")
            }
            _ => {
                let p = self
                    .rng
                    .pick(&["\"a.txt\"", "\"sub/b.txt\"", "\"../x\"", "\"missing\""]);
                let f = self.rng.pick(&["read_file", "find_files"]);
                format!("{f}({p})")
            }
        }
    }

    fn atom(&mut self) -> String {
        match self.rng.below(8) {
            0 => self.rng.below(1000).to_string(),
            1 => format!("-{}", self.rng.next_u64()),
            2 => self
                .rng
                .pick(&["1.5", "0.1", "1e308", "-0.0", "2.5e-3"])
                .to_string(),
            3 => self
                .rng
                .pick(&["\"\"", "\"abc\"", "\"a,b\"", "\"é\\n\"", "\"{}\""])
                .to_string(),
            4 => self
                .rng
                .pick(&["None", "True", "False", "[]", "()", "{}"])
                .to_string(),
            _ => self.var(),
        }
    }
}

/// Mutate a byte string (an encoded IPC frame) with 1–4 random edits.
pub fn mutate_bytes(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(7) {
            0 => {
                if at < b.len() {
                    b[at] ^= 1 << rng.below(8);
                }
            }
            1 => {
                if at < b.len() {
                    b[at] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xfb, 0xfc, 0xfd, 0xfe, 0xff]);
                }
            }
            2 => b.truncate(at),
            3 => {
                let n = rng.below(9);
                for _ in 0..n {
                    b.insert(at.min(b.len()), rng.next_u64() as u8);
                }
            }
            4 => {
                // A huge varint length.
                const HUGE: [&[u8]; 3] = [
                    &[0xfb, 0xff, 0xff],
                    &[0xfc, 0xff, 0xff, 0xff, 0xff],
                    &[0xfd; 9],
                ];
                let huge = *rng.pick(&HUGE);
                b.splice(at..at, huge.iter().copied());
            }
            5 => {
                let end = (at + rng.below(16)).min(b.len());
                b.drain(at..end);
            }
            _ => {
                let end = (at + 1 + rng.below(16)).min(b.len());
                if at < end {
                    let span = b[at..end].to_vec();
                    b.splice(at..at, span);
                }
            }
        }
    }
    b
}

/// Random bytes of random length up to `max`.
pub fn random_bytes(rng: &mut Rng, max: usize) -> Vec<u8> {
    let n = rng.below(max + 1);
    (0..n).map(|_| rng.next_u64() as u8).collect()
}
