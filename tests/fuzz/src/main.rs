//! `lackpy-fuzz TARGET SECONDS [SEED]`: a built-in mutation fuzzer for the
//! stable toolchain (`scripts/fuzz` uses it when cargo-fuzz is unavailable).
//!
//! Seeds: `tests/conformance/*.py`, the programs of `tests/escapes/*.toml`
//! (crudely extracted) and the built-in seeds; for `ipc_frame`, encodings of
//! sample messages. Each iteration mutates a seed (or generates a program
//! from the grammar) and runs the target under `catch_unwind`. The input in
//! flight is written to `artifacts/TARGET/current` first, so a crash that
//! cannot be caught (stack overflow, abort) still leaves its input behind;
//! a caught panic is saved as `artifacts/TARGET/crash-N` and ends the run
//! with status 1.

use lackpy_fuzz::gen::{self, Rng};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lackpy_fuzz::TARGETS;

fn usage() -> ! {
    let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    eprintln!("usage: lackpy-fuzz {} SECONDS [SEED]", names.join("|"));
    std::process::exit(3);
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn program_seeds() -> Vec<String> {
    let mut v: Vec<String> = gen::SEEDS.iter().map(|s| s.to_string()).collect();
    if let Ok(rd) = std::fs::read_dir(root().join("tests/conformance")) {
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "py") {
                if let Ok(t) = std::fs::read_to_string(e.path()) {
                    v.push(t);
                }
            }
        }
    }
    // Programs of the escape corpus: the text between ''' quotes.
    if let Ok(rd) = std::fs::read_dir(root().join("tests/escapes")) {
        for e in rd.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path()) {
                for (i, part) in t.split("'''").enumerate() {
                    if i % 2 == 1 && part.len() < 4096 {
                        v.push(part.to_string());
                    }
                }
            }
        }
    }
    v
}

fn frame_seeds() -> Vec<Vec<u8>> {
    use lackpy_worker::ipc::encode;
    let (from, to) = lackpy_fuzz::sample_messages();
    let mut v: Vec<Vec<u8>> = from.iter().filter_map(|m| encode(m).ok()).collect();
    v.extend(to.iter().filter_map(|m| encode(m).ok()));
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(target), Some(secs)) = (
        args.first(),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
    ) else {
        usage()
    };
    let seed = args
        .get(2)
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let Some(run) = TARGETS.iter().find(|(n, _)| n == target).map(|(_, f)| *f) else {
        usage()
    };
    let art = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("artifacts")
        .join(target);
    if let Err(e) = std::fs::create_dir_all(&art) {
        eprintln!("lackpy-fuzz: cannot create {}: {e}", art.display());
        std::process::exit(3);
    }
    let programs = program_seeds();
    let mut frames = frame_seeds();
    let byte_target = !matches!(target.as_str(), "parse_validate" | "interp");
    if target != "ipc_frame" {
        frames.clear();
    }
    // The committed corpus of the target (all of it for the byte targets).
    if let Ok(rd) = std::fs::read_dir(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target),
    ) {
        for e in rd.flatten() {
            if let Ok(b) = std::fs::read(e.path()) {
                frames.push(b);
            }
        }
    }
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut iters, mut crashes, mut slowest) = (0u64, 0u64, Duration::ZERO);
    eprintln!(
        "lackpy-fuzz {target}: {secs}s, seed {seed}, {} program seeds",
        programs.len()
    );
    while Instant::now() < deadline {
        let input: Vec<u8> = match target.as_str() {
            _ if byte_target => {
                if rng.one_in(4) || frames.is_empty() {
                    gen::random_bytes(&mut rng, 512)
                } else {
                    let base = rng.pick(&frames).clone();
                    gen::mutate_bytes(&mut rng, &base)
                }
            }
            _ if rng.one_in(4) => gen::grammar_program(&mut rng).into_bytes(),
            _ => {
                let base = rng.pick(&programs).clone();
                gen::mutate(&mut rng, &base, &programs).into_bytes()
            }
        };
        let _ = std::fs::write(art.join("current"), &input);
        let t = Instant::now();
        // The default panic hook prints the message; the input is saved below.
        if catch_unwind(AssertUnwindSafe(|| run(&input))).is_err() {
            crashes += 1;
            let p = art.join(format!("crash-{seed}-{iters}"));
            let _ = std::fs::write(&p, &input);
            eprintln!("lackpy-fuzz: crash saved to {}", p.display());
        }
        slowest = slowest.max(t.elapsed());
        iters += 1;
    }
    let _ = std::fs::remove_file(art.join("current"));
    eprintln!("lackpy-fuzz {target}: {iters} inputs, {crashes} crash(es), slowest {slowest:?}, seed {seed}");
    std::process::exit(i32::from(crashes > 0));
}
