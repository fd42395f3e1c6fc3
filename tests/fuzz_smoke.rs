//! Deterministic fuzz smoke: a few thousand mutated and generated programs
//! through the validator and the interpreter, and random IPC frames through
//! the frame decoder, in-process. No panic, no hang, bounded time.
//!
//! The generators are `tests/fuzz/src/gen.rs`, shared with the long-running
//! fuzz targets (`scripts/fuzz TARGET SECONDS`). A failure prints the seed and
//! the input; fixed crashes become cases in [`REGRESSIONS`] or files in
//! `tests/fuzz/regressions/TARGET/`, which [`fuzz_smoke_corpora`] replays
//! (with the committed corpora) through the fuzz targets themselves.

// The fuzz targets' bodies themselves (tests/fuzz/src/lib.rs), so the
// committed corpora and every minimized crash replay through exactly the
// code `scripts/fuzz` runs.
#[allow(dead_code)]
#[path = "fuzz/src/lib.rs"]
mod fuzzlib;

use fuzzlib::gen;

use gen::Rng;
use lackpy_policy::wire::{FlatData, FromWorker, Limits, Node};
use lackpy_policy::Namespace;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Seed of the whole smoke run (change it to explore; failures print theirs).
const SEED: u64 = 0x1ac4_b0f5_2026_1130;

/// Mutated programs through the validator (+ interpreter when they validate).
const MUTATED: usize = 2000;

/// Grammar-generated programs through validator and interpreter.
const GENERATED: usize = 600;

/// Random or mutated IPC payloads through the decoder.
const FRAMES: usize = 2000;

/// Inputs that once crashed or hung something; kept as regression tests.
const REGRESSIONS: &[&str] = &[
    // Found by this smoke: a format precision above 65535 hit Rust's
    // formatting limit and panicked the worker (exit 4). CPython formats it.
    "f\"{1.5:.70000f}\"",
    "f\"{1.5:.70000e}\"",
    "f\"{1.5:.70000g}\"",
    "f\"{1.5:.70000%}\"",
];

/// Panics already reported and listed in SECURITY.md ("Known gaps"), by a
/// substring of their message: counted and printed, not failed. Strict: a
/// known panic that no longer happens fails the test, so the entry is
/// removed with the fix.
const KNOWN_PANICS: &[(&str, &str)] = &[];

/// Small limits so thousands of programs finish in seconds in a debug build.
fn small_limits() -> Limits {
    Limits {
        wall_ms: 2_000,
        fuel: 20_000,
        memory_bytes: 8 << 20,
        stdout_bytes: 64 << 10,
        tool_calls: 50,
        result_bytes: 1 << 20,
        ..Limits::default()
    }
}

/// Validate and (if valid) interpret `src`; returns a panic message if either panicked.
fn exercise(src: &[u8], ns: &Namespace, limits: &Limits) -> Option<String> {
    let r = catch_unwind(AssertUnwindSafe(|| {
        fuzzlib::validate_and_run_with(src, ns, limits);
    }));
    r.err().map(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "non-string panic".to_string())
    })
}

/// Seed programs: the conformance corpus, the escape corpus and the built-ins.
fn seeds() -> Vec<String> {
    let mut v: Vec<String> = gen::SEEDS.iter().map(|s| s.to_string()).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut paths: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "py"))
            .collect();
        paths.sort();
        for p in paths {
            if let Ok(t) = std::fs::read_to_string(&p) {
                if t.len() < 4096 && !t.contains("# lackpy: skip") {
                    v.push(t);
                }
            }
        }
    }
    for c in crate::escapes::corpus() {
        if c.program.len() < 2048 && c.gen.is_none() {
            v.push(c.program.clone());
        }
    }
    v
}

/// Run `body` on a thread with an 8 MiB stack (a worker's main thread has at
/// least that) and fail if it does not finish within `budget`, naming the
/// input it was stuck on.
fn bounded(
    name: &str,
    budget: Duration,
    body: impl FnOnce(Arc<Mutex<String>>) -> Vec<String> + Send + 'static,
) {
    let current = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = mpsc::channel();
    let cur = Arc::clone(&current);
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(8 << 20)
        .spawn(move || {
            let failures = body(cur);
            let _ = tx.send(failures);
        })
        .expect("spawn fuzz thread");
    match rx.recv_timeout(budget) {
        Ok(failures) => assert!(
            failures.is_empty(),
            "{name}: {} failure(s):\n{}",
            failures.len(),
            failures.join("\n---\n")
        ),
        Err(_) => {
            let stuck = current.lock().map(|s| s.clone()).unwrap_or_default();
            panic!("{name}: no result within {budget:?}; stuck on input:\n{stuck}");
        }
    }
}

fn set(cur: &Mutex<String>, s: &str) {
    if let Ok(mut g) = cur.lock() {
        g.clear();
        g.push_str(s);
    }
}

#[test]
fn fuzz_smoke_programs() {
    bounded("programs", Duration::from_secs(300), |cur| {
        let ns = fuzzlib::namespace();
        let limits = small_limits();
        let seeds = seeds();
        let mut rng = Rng::new(SEED);
        let mut failures = Vec::new();
        let mut slowest = (Duration::ZERO, String::new());
        let mut known_hits = vec![0usize; KNOWN_PANICS.len()];
        let mut inputs: Vec<Vec<u8>> = REGRESSIONS.iter().map(|s| s.as_bytes().to_vec()).collect();
        for _ in 0..MUTATED {
            let base = rng.pick(&seeds).clone();
            inputs.push(gen::mutate(&mut rng, &base, &seeds).into_bytes());
        }
        for _ in 0..GENERATED {
            inputs.push(gen::grammar_program(&mut rng).into_bytes());
        }
        // A few raw byte strings (invalid UTF-8, NULs).
        for _ in 0..50 {
            inputs.push(gen::random_bytes(&mut rng, 200));
        }
        for (i, src) in inputs.iter().enumerate() {
            let shown = String::from_utf8_lossy(src)
                .chars()
                .take(2000)
                .collect::<String>();
            set(&cur, &format!("input #{i} (seed {SEED:#x}):\n{shown}"));
            let t = Instant::now();
            if let Some(msg) = exercise(src, &ns, &limits) {
                match KNOWN_PANICS.iter().position(|(m, _)| msg.contains(m)) {
                    Some(k) => known_hits[k] += 1,
                    None => failures.push(format!("input #{i} panicked: {msg}\n{shown}")),
                }
            }
            let el = t.elapsed();
            if el > slowest.0 {
                slowest = (el, shown.chars().take(200).collect());
            }
            // Bounded time per input: small limits must end small runs quickly,
            // even in a debug build on a loaded machine.
            if el > Duration::from_secs(10) {
                failures.push(format!("input #{i} took {el:?}\n{shown}"));
            }
        }
        for ((m, why), hits) in KNOWN_PANICS.iter().zip(&known_hits) {
            if *hits == 0 {
                failures.push(format!(
                    "known panic {m:?} ({why}) no longer happens: remove it from KNOWN_PANICS and SECURITY.md"
                ));
            } else {
                eprintln!("fuzz smoke: known gap, {hits} input(s) panic with {m:?}: {why}");
            }
        }
        eprintln!(
            "fuzz smoke: {} programs; slowest {:?}: {:?}",
            inputs.len(),
            slowest.0,
            slowest.1
        );
        failures
    });
}

#[test]
fn fuzz_smoke_ipc_decode() {
    use lackpy_worker::ipc::encode;
    bounded("ipc-decode", Duration::from_secs(120), |cur| {
        let (from, to) = fuzzlib::sample_messages();
        let mut encoded: Vec<Vec<u8>> = Vec::new();
        for m in &from {
            encoded.push(encode(m).expect("encode FromWorker"));
        }
        for m in &to {
            encoded.push(encode(m).expect("encode ToWorker"));
        }
        let mut rng = Rng::new(SEED ^ 0xf4a3e);
        let mut failures = Vec::new();
        let mut decoded_ok = 0usize;
        for i in 0..FRAMES {
            let bytes = if rng.one_in(3) {
                gen::random_bytes(&mut rng, 256)
            } else {
                let base = rng.pick(&encoded).clone();
                gen::mutate_bytes(&mut rng, &base)
            };
            set(&cur, &format!("frame #{i}: {bytes:02x?}"));
            let r = catch_unwind(AssertUnwindSafe(|| fuzzlib::ipc_decode(&bytes)));
            match r {
                Ok(n) => decoded_ok += n,
                Err(_) => failures.push(format!("frame #{i} panicked: {bytes:02x?}")),
            }
        }
        // Random node lists straight into the flat decoder.
        for i in 0..FRAMES / 2 {
            let n = rng.below(64);
            let nodes: Vec<Node> = (0..n)
                .map(|_| match rng.below(8) {
                    0 => Node::None,
                    1 => Node::Int(rng.next_u64() as i64),
                    2 => Node::Str("s".into()),
                    3 => Node::BigInt(if rng.one_in(2) {
                        "-12".into()
                    } else {
                        "1x".into()
                    }),
                    4 => Node::List(rng.below(4) as u32),
                    5 => Node::Tuple(if rng.one_in(8) {
                        u32::MAX
                    } else {
                        rng.below(3) as u32
                    }),
                    6 => Node::Dict(rng.below(3) as u32),
                    _ => Node::Set(rng.below(3) as u32),
                })
                .collect();
            let flat = FlatData(nodes);
            set(&cur, &format!("flat #{i}: {flat:?}"));
            if catch_unwind(AssertUnwindSafe(|| fuzzlib::check_flat(&flat))).is_err() {
                failures.push(format!("flat #{i} panicked: {flat:?}"));
            }
        }
        eprintln!("fuzz smoke: {FRAMES} frames, {decoded_ok} decoded as a message");
        failures
    });
}

/// Random chunk sequences over a real seqpacket socketpair: the framing layer
/// (length prefix, chunking, MSG_TRUNC, truncation, oversize) must answer
/// every sequence with a payload or an error, never a panic or a hang.
#[test]
fn fuzz_smoke_ipc_frames() {
    use lackpy_worker::ipc::{decode, socketpair, Channel, CHUNK_BYTES, MAX_FRAME_BYTES};
    bounded("ipc-frames", Duration::from_secs(120), |cur| {
        let mut rng = Rng::new(SEED ^ 0xc4a2);
        let mut failures = Vec::new();
        let (mut payloads, mut errors) = (0usize, 0usize);
        for i in 0..300 {
            let Ok((a, b)) = socketpair() else {
                failures.push("socketpair failed".to_string());
                break;
            };
            let (mut tx, mut rx) = (Channel::new(a), Channel::new(b));
            let mut chunks: Vec<Vec<u8>> = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let chunk = match rng.below(7) {
                    0 => gen::random_bytes(&mut rng, 64),
                    1 => Vec::new(),
                    2 => vec![0xAB; CHUNK_BYTES + 1 + rng.below(100)],
                    3 => {
                        let len = *rng.pick(&[0u32, 1, 3, 100, 65_532, 65_540, u32::MAX]);
                        let mut c = len.to_le_bytes().to_vec();
                        c.extend(gen::random_bytes(&mut rng, 32));
                        c
                    }
                    4 => {
                        let too_big = u32::try_from(MAX_FRAME_BYTES + 1).unwrap_or(u32::MAX);
                        too_big.to_le_bytes().to_vec()
                    }
                    _ => {
                        let m = FromWorker::Stdout("x".repeat(rng.below(70_000)));
                        let payload = lackpy_worker::ipc::encode(&m).unwrap_or_default();
                        let mut c = u32::try_from(payload.len())
                            .unwrap_or(0)
                            .to_le_bytes()
                            .to_vec();
                        let cut = payload.len().min(CHUNK_BYTES - 4);
                        c.extend_from_slice(&payload[..cut]);
                        chunks.push(c);
                        payload[cut..].to_vec()
                    }
                };
                chunks.push(chunk);
            }
            set(
                &cur,
                &format!(
                    "frame sequence #{i}: {} chunks, sizes {:?}",
                    chunks.len(),
                    chunks.iter().map(Vec::len).collect::<Vec<_>>()
                ),
            );
            let r = catch_unwind(AssertUnwindSafe(|| {
                let deadline = Some(Instant::now() + Duration::from_millis(200));
                for c in &chunks {
                    if tx.send_raw(c, deadline).is_err() {
                        break;
                    }
                }
                drop(tx);
                let t = Instant::now();
                let (mut ok, mut err) = (0, 0);
                for _ in 0..8 {
                    match rx.recv_payload(Some(Instant::now() + Duration::from_millis(200))) {
                        Ok(p) => {
                            ok += 1;
                            let _ = decode::<FromWorker>(&p);
                        }
                        Err(_) => {
                            err += 1;
                            break;
                        }
                    }
                }
                (ok, err, t.elapsed())
            }));
            match r {
                Ok((ok, err, el)) => {
                    payloads += ok;
                    errors += err;
                    if el > Duration::from_secs(2) {
                        failures.push(format!("frame sequence #{i} took {el:?}"));
                    }
                }
                Err(_) => failures.push(format!("frame sequence #{i} panicked")),
            }
        }
        eprintln!("fuzz smoke: 300 frame sequences, {payloads} payloads, {errors} errors");
        failures
    });
}

/// Every committed corpus entry and every minimized crash of every
/// `scripts/fuzz` target (`tests/fuzz/corpus/TARGET/*`,
/// `tests/fuzz/regressions/TARGET/*`) through the target itself, in-process:
/// no panic, no stack overflow, no hang.
#[test]
fn fuzz_smoke_corpora() {
    bounded("corpora", Duration::from_secs(300), |cur| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
        let mut failures = Vec::new();
        let mut counts = Vec::new();
        for (target, run) in fuzzlib::TARGETS {
            let files = files_in(["corpus", "regressions"].map(|d| root.join(d).join(target)));
            counts.push(format!("{target}: {}", files.len()));
            let slow = Duration::from_secs(10);
            failures.extend(replay(&cur, target, &files, *run, slow));
        }
        eprintln!("fuzz smoke: corpora replayed ({})", counts.join(", "));
        failures
    });
}

/// Inputs the `glob` target found before the walker was hardened
/// (`tests/fuzz/known/glob/*`): patterns of 60 bytes made of `*`, `**` and
/// `/` that, in the fuzz workspace (a `loop -> .` symlink and a `../..` link
/// back to the root), took more than libFuzzer's 10 s per input: the old
/// walk was bounded only by `MAX_VISITS` and never looked at the deadline.
/// With the hardened walker (bounded patterns, iterative, deadline checked)
/// and the target's run deadline, each ends within the bound below.
#[test]
fn fuzz_known_glob_gaps() {
    bounded("known-glob", Duration::from_secs(300), |cur| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/known/glob");
        // A 60-byte pattern over a dozen directories: well under a second
        // when bounded; 5 s is generous even in a debug build.
        let slow = Duration::from_secs(5);
        replay(&cur, "glob", &files_in([dir]), fuzzlib::glob, slow)
    });
}

/// The files in `dirs` (a missing directory has none), sorted.
fn files_in<const N: usize>(dirs: [PathBuf; N]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()))
        .collect();
    files.sort();
    files
}

/// Each file through `run` (the fuzz target `target`): a panic, an
/// unreadable file or a run longer than `slow` is a failure.
fn replay(
    cur: &Mutex<String>,
    target: &str,
    files: &[PathBuf],
    run: fuzzlib::Target,
    slow: Duration,
) -> Vec<String> {
    let mut failures = Vec::new();
    for f in files {
        let Ok(bytes) = std::fs::read(f) else {
            failures.push(format!("cannot read {}", f.display()));
            continue;
        };
        set(cur, &format!("{target}: {}", f.display()));
        let t = Instant::now();
        if catch_unwind(AssertUnwindSafe(|| run(&bytes))).is_err() {
            failures.push(format!("{target}: {} panicked", f.display()));
        }
        let el = t.elapsed();
        if el > slow {
            failures.push(format!("{target}: {} took {el:?}", f.display()));
        }
    }
    failures
}
