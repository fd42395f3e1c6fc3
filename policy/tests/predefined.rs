//! Names predefined by a session (variables from earlier cells).

use lackpy_policy::lang::{
    is_predefinable, validate, validate_with_predefined, Grade, Namespace, ToolEntry,
};
use lackpy_policy::wire::Limits;

fn ns() -> Namespace {
    Namespace {
        tools: vec![ToolEntry::new("read_file", &["path"], Grade { w: 1, d: 1 })],
    }
}

fn first_type(src: &str, predefined: &[&str]) -> Option<String> {
    let p: Vec<String> = predefined.iter().map(|s| s.to_string()).collect();
    match validate_with_predefined(src, &ns(), &Limits::default(), &p) {
        Ok(_) => None,
        Err(e) => e.first().map(|e| e.type_name.clone()),
    }
}

#[test]
fn predefined_names_may_be_read() {
    assert!(validate("x + 1", &ns(), &Limits::default()).is_err());
    assert_eq!(first_type("x + 1", &["x"]), None);
    assert_eq!(first_type("y = [x, x]\ny", &["x"]), None);
    assert_eq!(first_type("z + 1", &["x"]).as_deref(), Some("UnknownName"));
}

#[test]
fn predefined_names_follow_the_naming_rules() {
    // A predefined name that could not be a variable stays unknown/forbidden.
    assert!(first_type("_x", &["_x"]).is_some());
    assert!(first_type("__builtins__", &["__builtins__"]).is_some());
    assert_eq!(
        first_type("len", &["len"]).as_deref(),
        Some("BuiltinAsValue")
    );
    assert_eq!(
        first_type("read_file", &["read_file"]).as_deref(),
        Some("BuiltinAsValue")
    );
    // A predefined variable is still not callable.
    assert_eq!(first_type("x()", &["x"]).as_deref(), Some("UnknownName"));
}

#[test]
fn predefinable() {
    let ns = ns();
    assert!(is_predefinable("x", &ns));
    assert!(is_predefinable("total_2", &ns));
    assert!(is_predefinable("café", &ns));
    for bad in [
        "",
        "_x",
        "__class__",
        "len",
        "print",
        "read_file",
        "1x",
        "a-b",
        "for",
        "None",
        "ｘ",
        "a b",
    ] {
        assert!(!is_predefinable(bad, &ns), "{bad:?} accepted");
    }
}
