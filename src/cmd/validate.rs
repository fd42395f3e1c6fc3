//! `lackpy validate [FILE|-] [--profile NAME | --tools a,b] [--workspace DIR] [--json]`:
//! check a program against the language whitelist and the profile's
//! namespace, and show its grade and tool calls, without running it.

use super::common::{self, ProgramArgs};
use super::escape;
use lackpy_policy::lang::{validate_bytes, Program};
use lackpy_policy::wire::ErrorInfo;
use lackpy_supervisor::providers::Providers;

/// Arguments of `lackpy validate`.
///
/// Exit status: 0 valid, 2 invalid (validation errors), 3 usage or
/// configuration error (unknown profile or tool, bad config file, missing
/// workspace or input file). On exit 3 the message goes to stderr, and
/// with `--json` stdout still carries one object: `ok` false and an
/// `error` of kind `config` (type `ConfigError` or `UsageError`).
///
/// With `--json`, stdout carries one object:
/// `{"ok": bool, "grade": {"w", "d"} | null, "calls": [tool, ...],
///   "error": <first error object> | null, "errors": [every error]}`
/// where each error is the contract's `{"kind": "validation", "type",
/// "message", "line", "col", "hint"}`. `grade` is null when invalid.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 valid, 2 invalid, 3 usage or configuration error.\n--json prints {\"ok\", \"grade\": {\"w\", \"d\"}, \"calls\", \"error\", \"errors\"}; each error is\n{\"kind\": \"validation\", \"type\", \"message\", \"line\", \"col\", \"hint\"}.\n\nExamples:\n  lackpy validate prog.py\n  echo 'read_file(\"a.txt\")' | lackpy validate --json\n  lackpy validate prog.py --tools read_file,write_file"
)]
pub struct Args {
    #[command(flatten)]
    program: ProgramArgs,
}

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let mut loaded = match common::load(&args.program.select, &Providers::new()) {
        Ok(l) => l,
        Err(e) => return Ok(e.report("validate", args.program.json)),
    };
    let limits = &loaded.profile.limits;
    let src = match args.program.source.read(limits.source_bytes) {
        Ok(s) => s,
        Err(e) => return Ok(e.report("validate", args.program.json)),
    };
    let ns = loaded.profile.namespace();
    let mut result = validate_bytes(&src, &ns, limits);
    if let Err(errs) = &mut result {
        common::explain_unknown_tools(errs, &mut loaded);
    }
    let text = String::from_utf8_lossy(&src);
    if args.program.json {
        let obj = report_json(&result);
        println!("{obj}");
    } else {
        match &result {
            Ok(p) => {
                let calls = if p.calls.is_empty() {
                    "(none)".to_string()
                } else {
                    // Tool names the program called: escaped like all program text.
                    escape::line(&p.calls.join(", ")).into_owned()
                };
                println!("ok: grade w={} d={}, calls: {calls}", p.grade.w, p.grade.d);
            }
            Err(errs) => {
                let mut out = String::new();
                for e in errs {
                    out.push_str(&common::render_error(&text, e));
                }
                out.push_str(&summary(errs));
                eprint!("{out}");
            }
        }
    }
    Ok(match result {
        Ok(_) => 0,
        Err(errs) => errs.first().map_or(2, ErrorInfo::exit_code),
    })
}

/// The `--json` object for a validation result (the contract's
/// `{"ok", "grade", "calls", "error"}` plus `"errors"`).
pub fn report_json(result: &Result<Program, Vec<ErrorInfo>>) -> serde_json::Value {
    match result {
        Ok(p) => serde_json::json!({
            "ok": true,
            "grade": {"w": p.grade.w, "d": p.grade.d},
            "calls": p.calls,
            "error": null,
            "errors": [],
        }),
        Err(errs) => serde_json::json!({
            "ok": false,
            "grade": null,
            "calls": [],
            "error": errs.first(),
            "errors": errs,
        }),
    }
}

fn summary(errs: &[ErrorInfo]) -> String {
    let n = errs.len();
    format!("invalid: {n} error{}\n", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lackpy_policy::config::{Config, Kits};

    fn check(src: &str, tools: &[&str]) -> serde_json::Value {
        let tools: Vec<String> = tools.iter().map(|s| s.to_string()).collect();
        let p = Config::default()
            .resolve(None, Some(&tools), &Kits::default())
            .expect("profile");
        report_json(&validate_bytes(src.as_bytes(), &p.namespace(), &p.limits))
    }

    #[test]
    fn json_contract_shape() {
        let ok = check(
            "x = read_file('a')\nwrite_file('b', x)",
            &["read_file", "write_file"],
        );
        assert_eq!(
            ok,
            serde_json::json!({"ok": true, "grade": {"w": 3, "d": 3}, "calls": ["read_file", "write_file"], "error": null, "errors": []})
        );
        let bad = check("import os\nopen('x')", &["read_file"]);
        assert_eq!(bad["ok"], false);
        assert_eq!(bad["grade"], serde_json::Value::Null);
        assert_eq!(bad["error"]["kind"], "validation");
        assert_eq!(bad["error"]["type"], "ForbiddenSyntax");
        assert_eq!(bad["error"]["line"], 1);
        assert_eq!(bad["error"]["col"], 1);
        assert_eq!(bad["errors"][1]["type"], "ForbiddenName");
        assert_eq!(bad["errors"][1]["line"], 2);
        assert!(bad["errors"][1]["hint"]
            .as_str()
            .unwrap_or("")
            .contains("read_file"));
        let none = check("read_file('a')", &[]);
        assert_eq!(none["error"]["type"], "UnknownName");
    }
}
