//! The layer matrix: every escape action of the test-only `probe` worker
//! role, attempted with the full jail and with each jail layer enabled
//! alone, printed as the markdown table that SECURITY.md holds.
//!
//! Built only with the `test-roles` feature. The generator is an ignored
//! test (it spawns ~170 workers as children of the test process, which would
//! confuse the leftover-process checks of `tests/jail.rs` running in
//! parallel); `scripts/layer-matrix` runs it alone. It fails when the table
//! it generates differs from the one SECURITY.md holds, unless
//! `scripts/layer-matrix --write` asked for the table to be spliced into
//! SECURITY.md (`LACKPY_LAYER_MATRIX_WRITE=1`). On every run, a cheap test
//! checks that SECURITY.md's table has one row per probe action, in order;
//! the probes under the full jail are asserted in `tests/jail.rs`.

#![cfg(feature = "test-roles")]

use lackpy_policy::config::ResolvedProfile;
use lackpy_policy::wire::Limits;
use lackpy_supervisor::spawn::ExeHandle;
use lackpy_supervisor::{JailLevel, RunRequest, Supervisor, SupervisorConfig};
use lackpy_worker::role::test_roles::probe_actions;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const LAYERS: [&str; 4] = ["namespaces", "rlimits", "landlock", "seccomp"];

/// What a probe saw.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// The action worked.
    Allowed(String),
    /// It failed with this errno.
    Denied(i32),
    /// The worker died (seccomp kill, rlimit kill, or it never reported).
    Killed(String),
}

impl Seen {
    /// Errnos that mean a layer refused the action. Others (EINVAL, EFAULT,
    /// ENOTTY, EBADF) mean the syscall was *reached* and only failed on the
    /// probe's own arguments, so they do not count as stopped.
    fn refused(e: i32) -> bool {
        [
            libc::EPERM,
            libc::EACCES,
            libc::ENOENT,
            libc::ENETUNREACH,
            libc::ESRCH,
            libc::EAGAIN,
            libc::ENOMEM,
            libc::EROFS,
            libc::EXDEV,
        ]
        .contains(&e)
    }

    fn killed_by_jail(m: &str) -> bool {
        m.contains("seccomp")
            || m.contains("SIGSYS")
            || m.contains("memory")
            || m.contains("signal")
    }

    fn cell(&self) -> String {
        match self {
            Seen::Allowed(_) => "**ALLOW**".to_string(),
            Seen::Denied(e) if Seen::refused(*e) => format!("deny ({})", errno_name(*e)),
            Seen::Denied(e) => format!("reached ({})", errno_name(*e)),
            Seen::Killed(m) if m.contains("seccomp") || m.contains("SIGSYS") => {
                "kill (SIGSYS)".to_string()
            }
            Seen::Killed(m) if Seen::killed_by_jail(m) => "kill".to_string(),
            Seen::Killed(_) => "**ran** (no report)".to_string(),
        }
    }

    fn stopped(&self) -> bool {
        match self {
            Seen::Allowed(_) => false,
            Seen::Denied(e) => Seen::refused(*e),
            Seen::Killed(m) => Seen::killed_by_jail(m),
        }
    }
}

fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EINVAL => "EINVAL",
        libc::ENOMEM => "ENOMEM",
        libc::ENOSYS => "ENOSYS",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ESRCH => "ESRCH",
        libc::EAGAIN => "EAGAIN",
        libc::EROFS => "EROFS",
        libc::ENOTTY => "ENOTTY",
        libc::EBADF => "EBADF",
        libc::EMFILE => "EMFILE",
        libc::EXDEV => "EXDEV",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EFAULT => "EFAULT",
        _ => return e.to_string(),
    };
    name.to_string()
}

fn probe(level: JailLevel, action: &str, arg: &str) -> Seen {
    let exe = ExeHandle::open(Path::new(env!("CARGO_BIN_EXE_lackpy"))).expect("open lackpy binary");
    let cfg = SupervisorConfig {
        exe,
        jail_level: level,
        pool_size: 0,
        worker_role: vec!["probe".into(), action.into(), arg.into()],
        trace_limits: Default::default(),
    };
    let sup = Supervisor::new(cfg).expect("supervisor");
    let ws = tempfile::tempdir().expect("tempdir");
    let r = sup.run(RunRequest {
        source: b"1".to_vec(),
        profile: ResolvedProfile {
            name: "probe".into(),
            tools: Default::default(),
            limits: Limits::default(),
        },
        workspace: ws.path().to_path_buf(),
        limits: Limits::default(),
    });
    match (&r.error, r.stdout.split_once(' ')) {
        (None, Some(("allowed", d))) => Seen::Allowed(d.to_string()),
        (None, Some(("denied", e))) => Seen::Denied(e.trim().parse().unwrap_or(-1)),
        (Some(e), _) => Seen::Killed(format!("{}: {}", e.type_name, e.message)),
        (None, _) => Seen::Killed(format!("no report: {:?}", r.stdout)),
    }
}

/// Column name → jail level.
fn columns() -> Vec<(String, JailLevel)> {
    let mut cols = vec![("full jail".to_string(), JailLevel::full())];
    for layer in LAYERS {
        let others: Vec<&str> = LAYERS.into_iter().filter(|l| *l != layer).collect();
        cols.push((
            format!("{layer} only"),
            JailLevel::lowered(&others).expect("level"),
        ));
    }
    cols.push((
        "none of the four".to_string(),
        JailLevel::lowered(&LAYERS).expect("level"),
    ));
    cols
}

/// Actions safe to attempt with every layer off (the baseline column shows
/// the probe is honest). Mount/chroot/unshare/setns/execve and friends are
/// not run unjailed on the test machine.
const SAFE_UNJAILED: &[&str] = &[
    "nothing",
    "read_file",
    "write_file",
    "list_root",
    "socket_inet",
    "socket_inet6",
    "socket_unix",
    "socket_netlink",
    "connect",
    "fork",
    "clone_thread",
    "kill",
    "raise_rlimit",
    "alloc",
    "proc_self_mem",
];

#[test]
#[ignore = "generator: run by scripts/layer-matrix (spawns ~170 workers)"]
fn layer_matrix() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let canary = scratch.path().join("canary.txt");
    std::fs::write(&canary, "LAYER-MATRIX-CANARY\n").expect("canary");
    // In /tmp (world-writable): workers of a root supervisor run as nobody,
    // and the baseline column must show that the write really works unjailed.
    let target =
        std::path::PathBuf::from(format!("/tmp/lackpy-layer-matrix-{}", std::process::id()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port().to_string();
    let cols = columns();
    let mut rows: BTreeMap<usize, (String, Vec<String>, usize)> = BTreeMap::new();
    let mut not_stopped_by_full = Vec::new();
    for (i, action) in probe_actions().iter().enumerate() {
        let mut cells = Vec::new();
        let mut alone = 0;
        for (ci, (name, level)) in cols.iter().enumerate() {
            let unjailed = ci == cols.len() - 1;
            if unjailed && !SAFE_UNJAILED.contains(action) {
                cells.push("—".to_string());
                continue;
            }
            // A fresh victim per attempt for `kill`.
            let mut victim = None;
            let arg = match *action {
                "read_file" => canary.display().to_string(),
                "write_file" => target.display().to_string(),
                "connect" => port.clone(),
                "alloc" => "1024".to_string(),
                "kill" => {
                    let v = std::process::Command::new("sleep")
                        .arg("30")
                        .spawn()
                        .expect("sleep");
                    let pid = v.id().to_string();
                    victim = Some(v);
                    pid
                }
                _ => String::new(),
            };
            let mut seen = probe(*level, action, &arg);
            if let Some(mut v) = victim {
                // The kill "worked" only if the victim actually died.
                if let Seen::Allowed(_) = seen {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                let _ = v.kill();
                let _ = v.wait();
            }
            if *action == "write_file" && target.exists() {
                let _ = std::fs::remove_file(&target);
                if !matches!(seen, Seen::Allowed(_)) {
                    seen = Seen::Allowed("file appeared".into());
                }
            }
            if ci == 0
                && !seen.stopped()
                && !matches!(*action, "nothing" | "list_root" | "clone_thread")
            {
                not_stopped_by_full.push(format!("{action}: {seen:?}"));
            }
            if ci > 0 && !unjailed && seen.stopped() {
                alone += 1;
            }
            eprintln!("{action:>16} | {name:<16} | {seen:?}");
            cells.push(seen.cell());
        }
        rows.insert(i, (action.to_string(), cells, alone));
    }
    drop(listener);

    let mut md = String::new();
    let _ = writeln!(
        md,
        "Generated by `scripts/layer-matrix` on Linux {} (landlock ABI {}), supervisor running as {}. \
         \"deny\": the action failed with an errno that means refusal; \"kill (SIGSYS)\": seccomp killed \
         the worker; \"reached (EINVAL)\": the syscall was reachable and failed only on the probe's own \
         arguments (not counted as stopped); \"**ran**\": the action worked (for `execve`, the worker was \
         replaced and never reported); \"—\": not attempted unjailed on the test machine. Every column keeps \
         step 4 (no new privileges, capabilities dropped, fds closed) and, for a root supervisor, the drop \
         to uid nobody.\n",
        kernel(),
        lackpy_worker::jail::landlock_abi(),
        if is_root() { "root (workers drop to nobody)" } else { "an unprivileged user" }
    );
    let _ = write!(md, "| probe |");
    for (name, _) in &cols {
        let _ = write!(md, " {name} |");
    }
    let _ = writeln!(md, " layers that stop it alone |");
    let _ = write!(md, "|---|");
    for _ in &cols {
        let _ = write!(md, "---|");
    }
    let _ = writeln!(md, "---:|");
    for (action, cells, alone) in rows.values() {
        let _ = writeln!(md, "| `{action}` | {} | {alone} |", cells.join(" | "));
    }
    println!("\n{md}");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/layer-matrix.md");
    std::fs::write(&out, &md).expect("write target/layer-matrix.md");
    assert!(
        not_stopped_by_full.is_empty(),
        "escapes under the full jail:\n{}",
        not_stopped_by_full.join("\n")
    );
    if std::env::var_os("LACKPY_LAYER_MATRIX_WRITE").is_none() {
        let (generated, documented) = (table_lines(&md), table_lines(&documented_matrix()));
        assert!(
            generated == documented,
            "SECURITY.md's layer matrix differs from the one generated here \
             (scripts/layer-matrix --write updates it):\n{}",
            line_diff(&documented, &generated)
        );
    }
}

/// The matrix SECURITY.md holds, between its `layer-matrix` markers.
fn documented_matrix() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("SECURITY.md");
    let text = std::fs::read_to_string(&path).expect("read SECURITY.md");
    let (begin, end) = ("<!-- layer-matrix:begin -->", "<!-- layer-matrix:end -->");
    let from = text
        .find(begin)
        .expect("SECURITY.md has the layer-matrix:begin marker");
    let to = text
        .find(end)
        .expect("SECURITY.md has the layer-matrix:end marker");
    assert!(
        from < to,
        "layer-matrix markers out of order in SECURITY.md"
    );
    text[from + begin.len()..to].to_string()
}

/// The table's lines (header, rule, rows): what the comparison covers. The
/// sentence above the table names the kernel and is not compared.
fn table_lines(md: &str) -> Vec<String> {
    md.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('|'))
        .map(String::from)
        .collect()
}

/// `-` lines of `old` missing from `new`, `+` lines of `new` missing from `old`.
fn line_diff(old: &[String], new: &[String]) -> String {
    let gone = old
        .iter()
        .filter(|l| !new.contains(l))
        .map(|l| format!("- {l}"));
    let added = new
        .iter()
        .filter(|l| !old.contains(l))
        .map(|l| format!("+ {l}"));
    gone.chain(added).collect::<Vec<_>>().join("\n")
}

/// SECURITY.md's matrix has one row per probe action, in the order the
/// generator writes them (it cannot silently describe another probe set).
#[test]
fn security_md_matrix_covers_every_probe_action() {
    let documented: Vec<String> = table_lines(&documented_matrix())
        .iter()
        .skip(2)
        .filter_map(|l| {
            l.trim_start_matches('|')
                .split('|')
                .next()
                .map(|c| c.trim().trim_matches('`').to_string())
        })
        .collect();
    let actions: Vec<String> = probe_actions().iter().map(|a| a.to_string()).collect();
    assert_eq!(
        documented, actions,
        "SECURITY.md's layer matrix rows differ from probe_actions() (scripts/layer-matrix --write)"
    );
    let header = &table_lines(&documented_matrix())[0];
    for (name, _) in columns() {
        assert!(
            header.contains(&name),
            "column {name:?} missing from SECURITY.md"
        );
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}
