//! Validate every `.py` file given on the command line with all four
//! builtin tools, printing the rejected ones (a false-positive check against
//! the conformance corpus).
//!
//! Run: `cargo run -p lackpy-policy --example check_corpus -- tests/conformance/*.py`

use lackpy_policy::config::Config;
use lackpy_policy::config::Kits;
use lackpy_policy::lang::validate_bytes;

fn main() {
    let tools: Vec<String> = ["read_file", "find_files", "write_file", "edit_file"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let profile = match Config::default().resolve(None, Some(&tools), &Kits::default()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(3);
        }
    };
    let ns = profile.namespace();
    let (mut ok, mut bad) = (0, 0);
    for path in std::env::args().skip(1) {
        let Ok(src) = std::fs::read(&path) else {
            continue;
        };
        match validate_bytes(&src, &ns, &profile.limits) {
            Ok(_) => {
                ok += 1;
                if std::env::var_os("SHOW_VALID").is_some() {
                    println!("VALID {path}");
                }
            }
            Err(errs) => {
                bad += 1;
                for e in errs.iter().take(3) {
                    println!(
                        "{path}:{}:{}: {}: {}",
                        e.line.unwrap_or(0),
                        e.col.unwrap_or(0),
                        e.type_name,
                        e.message
                    );
                }
            }
        }
    }
    println!("{ok} valid, {bad} rejected");
}
