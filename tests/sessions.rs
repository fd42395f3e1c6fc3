//! MCP sessions (notebook variables across cells) and cancellation through
//! the real `lackpy mcp` binary and its jailed workers.

use crate::util;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Start `lackpy mcp` and return the client and the server's pid.
async fn connect(ws: &std::path::Path) -> (RunningService<RoleClient, ()>, u32) {
    let transport = crate::mcp::spawn_server(ws, &[]);
    let pid = transport.id().expect("server pid");
    (().serve(transport).await.expect("MCP initialize"), pid)
}

async fn run(c: &RunningService<RoleClient, ()>, a: Value) -> CallToolResult {
    let Value::Object(m) = a else {
        panic!("arguments must be an object")
    };
    c.call_tool(CallToolRequestParams::new("run_program").with_arguments(m))
        .await
        .expect("tools/call")
}

/// Run `program` as a cell of notebook session `session`.
async fn cell(c: &RunningService<RoleClient, ()>, session: &str, program: &str) -> CallToolResult {
    run(c, json!({"program": program, "session": session})).await
}

fn sc(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(String::from))
        .collect()
}

#[tokio::test]
async fn variables_carry_over_within_a_session_only() {
    let ws = util::workspace(&[]);
    let (c, _) = connect(ws.path()).await;
    let a = cell(&c, "s1", "x = 41\nys = [1, 2]").await;
    assert_eq!(a.is_error, Some(false), "{}", sc(&a));
    assert_eq!(sc(&a)["session"]["id"], json!("s1"));
    let vars = names(&sc(&a)["session"]["variables"]);
    assert!(vars.contains(&"x".to_string()), "{}", sc(&a));

    let b = cell(&c, "s1", "ys.append(x)\nx + 1").await;
    assert_eq!(sc(&b)["value"], json!(42), "{}", sc(&b));
    let d = cell(&c, "s1", "ys").await;
    assert_eq!(sc(&d)["value"], json!([1, 2, 41]), "{}", sc(&d));

    // Another session, and no session at all, do not see x.
    for extra in [json!({"session": "s2"}), json!({})] {
        let mut a = json!({"program": "x + 1"});
        if let (Some(o), Some(e)) = (a.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        let r = run(&c, a).await;
        assert_eq!(r.is_error, Some(true), "{}", sc(&r));
        assert_eq!(sc(&r)["error"]["type"], json!("UnknownName"), "{}", sc(&r));
    }

    // A failing cell keeps what it assigned before the error; the session
    // still holds the earlier variables.
    let f = cell(&c, "s1", "z = 5\n1 // 0").await;
    assert_eq!(f.is_error, Some(true));
    let g = cell(&c, "s1", "[x, z]").await;
    assert_eq!(sc(&g)["value"], json!([41, 5]), "{}", sc(&g));
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn non_plain_variables_are_not_kept_and_say_so() {
    let ws = util::workspace(&[]);
    let (c, _) = connect(ws.path()).await;
    let a = cell(
        &c,
        "np",
        "r = range(3)\nks = {'a': 1}.keys()\nok = list(range(3))",
    )
    .await;
    assert_eq!(a.is_error, Some(false), "{}", sc(&a));
    let s = &sc(&a)["session"];
    assert_eq!(names(&s["not_kept"]), vec!["r", "ks"], "{s}");
    assert!(
        s["note"].as_str().is_some_and(|n| n.contains("list(")),
        "{s}"
    );
    assert!(names(&s["variables"]).contains(&"ok".to_string()), "{s}");
    let b = cell(&c, "np", "r").await;
    assert_eq!(sc(&b)["error"]["type"], json!("UnknownName"), "{}", sc(&b));
    let d = cell(&c, "np", "ok").await;
    assert_eq!(sc(&d)["value"], json!([0, 1, 2]), "{}", sc(&d));
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn session_size_is_capped() {
    let ws = util::workspace(&[]);
    let (c, _) = connect(ws.path()).await;
    // Each cell reports at most result_bytes (1 MiB by default) of
    // variables; the session keeps at most 8 MiB in total.
    let mut dropped = Vec::new();
    for i in 0..12 {
        let program = format!("v{i} = 'x' * 900000");
        let r = run(&c, json!({"program": program, "session": "big"})).await;
        assert_eq!(r.is_error, Some(false), "{}", sc(&r));
        dropped.extend(names(&sc(&r)["session"]["dropped"]));
    }
    assert!(!dropped.is_empty(), "nothing was dropped beyond the cap");
    let ok = cell(&c, "big", "len(v0)").await;
    assert_eq!(sc(&ok)["value"], json!(900000), "{}", sc(&ok));
    c.cancel().await.expect("close");
}

/// Pids of the `__worker` processes descended from `root`, with their CPU
/// ticks (user + system).
fn workers_under(root: u32) -> Vec<(u32, u64)> {
    let mut parent = std::collections::HashMap::new();
    let mut info = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the `(comm)` field: state ppid ... utime(12) stime(13).
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.first() == Some(&"Z") {
            continue;
        }
        let ppid = f.get(1).and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
        let ticks = f.get(11).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        parent.insert(pid, ppid);
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains("__worker") {
            info.push((pid, ticks));
        }
    }
    info.into_iter()
        .filter(|(pid, _)| {
            let mut p = *pid;
            for _ in 0..64 {
                match parent.get(&p) {
                    Some(&pp) if pp == root => return true,
                    Some(&pp) if pp > 1 => p = pp,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

#[tokio::test]
async fn cancelling_a_run_kills_its_worker() {
    let ws = util::workspace(&[]);
    let (c, server) = connect(ws.path()).await;
    let runaway = "n = 0\nfor i in range(100000000):\n    n += 1\nn";
    // The call runs until a busy worker (one that has used CPU) is seen
    // under the server; then dropping the call future sends
    // notifications/cancelled. (Found first, cancelled second: looking
    // only after a fixed wait and the cancel raced the kill, and on a
    // loaded machine the worker could be gone before it was looked for.)
    let mut call = Box::pin(run(&c, json!({"program": runaway, "session": "c1"})));
    let t0 = Instant::now();
    let busy: Vec<u32> = loop {
        tokio::select! {
            r = &mut call => panic!("the runaway finished: {:?}", sc(&r)),
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let busy: Vec<u32> = workers_under(server)
            .into_iter()
            .filter(|(_, ticks)| *ticks >= 20)
            .map(|(p, _)| p)
            .collect();
        if !busy.is_empty() {
            break busy;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no busy worker found under the server within 10 s"
        );
    };
    drop(call);
    let cancelled_at = Instant::now();
    loop {
        let alive: Vec<u32> = workers_under(server)
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| busy.contains(p))
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(2),
            "worker(s) {alive:?} still alive {:?} after the cancel",
            cancelled_at.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // No worker under the server keeps burning CPU.
    let before: Vec<(u32, u64)> = workers_under(server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (pid, ticks) in workers_under(server) {
        if let Some((_, t)) = before.iter().find(|(p, _)| *p == pid) {
            assert!(ticks.saturating_sub(*t) < 10, "worker {pid} still busy");
        }
    }
    // The server still serves, and the cancelled cell left nothing behind.
    let next = run(&c, json!({"program": "sum(range(10))"})).await;
    assert_eq!(sc(&next)["value"], json!(45), "{}", sc(&next));
    let s = cell(&c, "c1", "x = 1").await;
    assert_eq!(names(&sc(&s)["session"]["variables"]), vec!["x"]);
    assert!(t0.elapsed() < Duration::from_secs(20));
    c.cancel().await.expect("close");
}
