//! The language's name tables, in one place: allowed builtins, type names,
//! the per-type method allowlist, and the names that are always forbidden
//! (with the hint each gets). The validator and the interpreter both read
//! these; change them here and nowhere else.

/// The names of the builtin tools, the ones the supervisor implements (the
/// file tools and code intelligence). Their specs (arguments, grades,
/// descriptions) are `default_tools.toml`, which names exactly these.
pub const BUILTIN_TOOLS: &[&str] = &[
    "read_file",
    "find_files",
    "write_file",
    "edit_file",
    "find_definitions",
    "find_callers",
];

/// Builtins a program may call (README.md, "The language"). Anything else that
/// Python would call a builtin is not available: the forbidden ones are in
/// [`FORBIDDEN_NAMES`]; the rest are reported as unknown names.
pub const BUILTINS: &[&str] = &[
    "len",
    "range",
    "enumerate",
    "zip",
    "sorted",
    "reversed",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "abs",
    "round",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "set",
    "tuple",
    "isinstance",
    "print",
    "sort_by",
    "repr",
];

/// Type names that may appear as a value only as `isinstance`'s second
/// argument (alone or in a tuple).
pub const TYPE_NAMES: &[&str] = &[
    "str", "int", "float", "bool", "list", "dict", "set", "tuple",
];

/// Per-type method allowlist (README.md, "The language"): methods may
/// only be *called*, and only these. The receiver's type is usually unknown
/// statically, so the validator checks a call against the union of all
/// lists, and against one type's list when the receiver is a literal,
/// display or f-string. The interpreter checks the exact type at run time.
///
/// Not on it, on purpose: `format`, `format_map` (attribute lookups driven by
/// data), `encode`/`decode` (no bytes type), `translate`, `maketrans`.
pub const METHODS: &[(&str, &[&str])] = &[
    (
        "str",
        &[
            "capitalize",
            "casefold",
            "center",
            "count",
            "endswith",
            "expandtabs",
            "find",
            "index",
            "isalnum",
            "isalpha",
            "isascii",
            "isdecimal",
            "isdigit",
            "isidentifier",
            "islower",
            "isnumeric",
            "isspace",
            "istitle",
            "isupper",
            "join",
            "ljust",
            "lower",
            "lstrip",
            "partition",
            "removeprefix",
            "removesuffix",
            "replace",
            "rfind",
            "rindex",
            "rjust",
            "rpartition",
            "rsplit",
            "rstrip",
            "split",
            "splitlines",
            "startswith",
            "strip",
            "swapcase",
            "title",
            "upper",
            "zfill",
        ],
    ),
    (
        "list",
        &[
            "append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove",
            "reverse", "sort",
        ],
    ),
    (
        "dict",
        &[
            "clear",
            "copy",
            "get",
            "items",
            "keys",
            "pop",
            "popitem",
            "setdefault",
            "update",
            "values",
        ],
    ),
    (
        "set",
        &[
            "add",
            "clear",
            "copy",
            "difference",
            "difference_update",
            "discard",
            "intersection",
            "intersection_update",
            "isdisjoint",
            "issubset",
            "issuperset",
            "pop",
            "remove",
            "symmetric_difference",
            "union",
            "update",
        ],
    ),
    ("tuple", &["count", "index"]),
    ("range", &["count", "index"]),
    ("int", &["bit_length"]),
    ("float", &["is_integer"]),
];

/// A cheap pre-filter over a name table: bit `len` of `by_first[c - 'a']`
/// is set when some entry starts with the lowercase ASCII letter `c` and has
/// `len` bytes (entries starting otherwise, or longer than 63 bytes, set
/// `other`). A name that fails the filter is not in the table, so lookups of
/// ordinary variable names skip the string comparisons entirely.
struct NameFilter {
    by_first: [u64; 26],
    other: bool,
}

impl NameFilter {
    const fn add(mut self, name: &str) -> Self {
        let b = name.as_bytes();
        if !b.is_empty() && b[0].is_ascii_lowercase() && b.len() < 64 {
            self.by_first[(b[0] - b'a') as usize] |= 1u64 << b.len();
        } else {
            self.other = true;
        }
        self
    }

    const fn of_names(names: &[&str]) -> Self {
        let mut f = NameFilter {
            by_first: [0; 26],
            other: false,
        };
        let mut i = 0;
        while i < names.len() {
            f = f.add(names[i]);
            i += 1;
        }
        f
    }

    /// `false` only if `name` is certainly not in the table.
    fn may_contain(&self, name: &str) -> bool {
        let b = name.as_bytes();
        match b.first() {
            Some(c) if c.is_ascii_lowercase() && b.len() < 64 => {
                self.by_first[usize::from(c - b'a')] & (1u64 << b.len()) != 0
            }
            _ => self.other,
        }
    }
}

const BUILTIN_FILTER: NameFilter = NameFilter::of_names(BUILTINS);

const METHOD_FILTER: NameFilter = {
    let mut f = NameFilter::of_names(&[]);
    let mut t = 0;
    while t < METHODS.len() {
        let ms = METHODS[t].1;
        let mut i = 0;
        while i < ms.len() {
            f = f.add(ms[i]);
            i += 1;
        }
        t += 1;
    }
    f
};

const FORBIDDEN_FILTER: NameFilter = {
    let mut f = NameFilter::of_names(&[]);
    let mut i = 0;
    while i < FORBIDDEN_NAMES.len() {
        f = f.add(FORBIDDEN_NAMES[i].0);
        i += 1;
    }
    f
};

/// Is `method` on `type_name`'s allowlist? (`type_name` is a Python type
/// name: `str list dict set tuple int float`; `bool` uses `int`'s list.)
pub fn method_allowed(type_name: &str, method: &str) -> bool {
    if !METHOD_FILTER.may_contain(method) {
        return false;
    }
    let type_name = if type_name == "bool" {
        "int"
    } else {
        type_name
    };
    METHODS
        .iter()
        .any(|(t, ms)| *t == type_name && ms.contains(&method))
}

/// Is `method` on any type's allowlist?
pub fn method_allowed_any(method: &str) -> bool {
    METHOD_FILTER.may_contain(method) && METHODS.iter().any(|(_, ms)| ms.contains(&method))
}

/// Is `name` an allowed builtin?
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_FILTER.may_contain(name) && BUILTINS.contains(&name)
}

const HINT_INTROSPECTION: &str =
    "introspection is not available; use dict keys (d[\"key\"]) and the listed tools instead";
const HINT_CODEGEN: &str = "code cannot be generated at run time; write the steps directly";

/// Names rejected wherever they appear (call, value or assignment target),
/// with the hint each gets.
pub const FORBIDDEN_NAMES: &[(&str, &str)] = &[
    ("eval", HINT_CODEGEN),
    ("exec", HINT_CODEGEN),
    ("compile", HINT_CODEGEN),
    (
        "__import__",
        "tools and builtins are already loaded; call them directly",
    ),
    (
        "open",
        "use read_file(path) to read a file (and write_file(path, content) to write one)",
    ),
    ("getattr", HINT_INTROSPECTION),
    ("setattr", HINT_INTROSPECTION),
    ("delattr", HINT_INTROSPECTION),
    ("hasattr", HINT_INTROSPECTION),
    ("globals", HINT_INTROSPECTION),
    ("locals", HINT_INTROSPECTION),
    ("vars", HINT_INTROSPECTION),
    ("dir", HINT_INTROSPECTION),
    ("type", "use isinstance(x, T) to check a value's type"),
    ("id", HINT_INTROSPECTION),
    ("object", HINT_INTROSPECTION),
    ("super", HINT_INTROSPECTION),
    ("callable", HINT_INTROSPECTION),
    ("issubclass", "use isinstance(x, T) to check a value's type"),
    (
        "classmethod",
        "write the steps inline; functions and classes cannot be defined",
    ),
    (
        "staticmethod",
        "write the steps inline; functions and classes cannot be defined",
    ),
    (
        "property",
        "write the steps inline; functions and classes cannot be defined",
    ),
    (
        "memoryview",
        "bytes are not available; work with str values",
    ),
    (
        "input",
        "programs cannot read input; get data from the listed tools",
    ),
    (
        "breakpoint",
        "debugging hooks are not available; use print(...) to show values",
    ),
    (
        "help",
        "the available tools and builtins are listed in the prompt; call them directly",
    ),
    (
        "exit",
        "the program ends after its last statement; its last expression is the result",
    ),
    (
        "quit",
        "the program ends after its last statement; its last expression is the result",
    ),
    ("iter", "iterate over a collection with a for loop"),
    (
        "next",
        "iterate over a collection with a for loop, or index it (items[0])",
    ),
    ("hash", HINT_INTROSPECTION),
    ("format", "use an f-string"),
];

/// Forbidden names that are also ordinary variable names in data-handling
/// code (`id = row["id"]`, `type = item["type"]`): a program that assigns
/// one of these may use it as a variable, as CPython allows (the language
/// forbids assigning only builtins and tools). Calling one stays an error
/// (only tools and builtins can be called), and a program that never
/// assigns it still gets the forbidden-name error and hint. Code-generation
/// and reflection names (`eval`, `open`, `getattr`, ...) are not here.
pub const VARIABLE_OK_NAMES: &[&str] = &[
    "id", "type", "format", "input", "object", "hash", "next", "iter", "dir", "vars", "help",
    "exit", "quit", "property", "callable",
];

/// The hint for a forbidden name, or `None` if the name is not forbidden.
pub fn forbidden_hint(name: &str) -> Option<&'static str> {
    if !FORBIDDEN_FILTER.may_contain(name) {
        return None;
    }
    FORBIDDEN_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, h)| *h)
}

/// Hints for names that are neither allowed nor forbidden but that authors
/// (small models especially) commonly reach for.
pub const UNKNOWN_NAME_HINTS: &[(&str, &str)] = &[
    ("map", "use a list comprehension: [f(x) for x in items]"),
    (
        "filter",
        "use a list comprehension: [x for x in items if cond]",
    ),
    ("pow", "multiply explicitly"),
    ("divmod", "use // and %"),
    ("frozenset", "use set(...)"),
    ("bytes", "bytes are not available; work with str values"),
    ("bytearray", "bytes are not available; work with str values"),
    (
        "chr",
        "character codes are not available; use string literals",
    ),
    (
        "ord",
        "character codes are not available; use string literals",
    ),
    ("os", "modules are not available; use the listed tools"),
    ("sys", "modules are not available; use the listed tools"),
    (
        "re",
        "modules are not available; use str methods such as split, find and replace",
    ),
    (
        "json",
        "modules are not available; tool results are already plain data",
    ),
    (
        "pathlib",
        "modules are not available; use read_file and find_files",
    ),
    ("glob", "use find_files(pattern) to find files"),
    ("true", "Python spells it True"),
    ("false", "Python spells it False"),
    ("null", "Python spells it None"),
    ("none", "Python spells it None"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tools_are_the_ones_default_tools_toml_declares() {
        let declared: Vec<String> = crate::config::Toolbox::builtin()
            .tools
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(declared, BUILTIN_TOOLS);
    }

    #[test]
    fn filters_pass_every_entry_and_lookups_match_the_tables() {
        for b in BUILTINS {
            assert!(is_builtin(b), "{b}");
        }
        for (n, h) in FORBIDDEN_NAMES {
            assert_eq!(forbidden_hint(n), Some(*h), "{n}");
        }
        for (t, ms) in METHODS {
            for m in *ms {
                assert!(method_allowed(t, m), "{t}.{m}");
                assert!(method_allowed_any(m), "{m}");
            }
        }
        for other in [
            "",
            "x",
            "files",
            "Len",
            "LEN",
            "_len",
            "lens",
            "appendx",
            "__import_",
            "ｅval",
            "é",
        ] {
            assert!(!is_builtin(other), "{other}");
            assert!(!method_allowed_any(other), "{other}");
            assert_eq!(forbidden_hint(other), None, "{other}");
        }
        assert!(method_allowed("bool", "bit_length"));
        assert!(!method_allowed("str", "append"));
    }
}
