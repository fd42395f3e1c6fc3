//! Protocol-layer tests: a real rmcp client talks to [`serve`] over an
//! in-process duplex pipe, with the [`fake`] backend behind it.

#[path = "../../tests/mcp_util.rs"]
mod mcp_util;

use super::fake::{Fake, Stats};
use super::serve;
use mcp_util::{args, listed, text, timed};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Harness {
    client: RunningService<RoleClient, ()>,
    stats: Arc<Stats>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn start(slots: usize) -> Harness {
    let stats = Arc::new(Stats::default());
    let backend = Arc::new(Fake {
        stats: stats.clone(),
        slots,
    });
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server_io);
    let server = tokio::spawn(serve(backend, r, w));
    let client = ().serve(client_io).await.expect("client initialize");
    Harness {
        client,
        stats,
        server,
    }
}

async fn call(h: &Harness, name: &'static str, a: Value) -> CallToolResult {
    h.client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args(a)))
        .await
        .expect("tools/call")
}

fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structured content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_tools_with_schemas_and_annotations() {
    let h = start(2).await;
    let tools = h.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names.len(), 11, "{names:?}");
    let run = listed(&tools, "run_program");
    assert_eq!(run.input_schema.get("required"), Some(&json!(["program"])));
    let ann = run.annotations.as_ref().expect("annotations");
    // The fake toolbox has write_file (d=3).
    assert_eq!(ann.read_only_hint, Some(false));
    assert_eq!(ann.destructive_hint, Some(true));
    let v = listed(&tools, "validate");
    let read_only = v.annotations.as_ref().and_then(|a| a.read_only_hint);
    assert_eq!(read_only, Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_program_ok_and_failing() {
    let h = start(2).await;
    let ok = call(&h, "run_program", json!({"program": "abc"})).await;
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(structured(&ok)["value"], json!(3));
    assert!(text(&ok).starts_with("ok"), "{}", text(&ok));

    let bad = call(&h, "run_program", json!({"program": "boom"})).await;
    assert_eq!(bad.is_error, Some(true));
    let s = structured(&bad);
    assert_eq!(s["ok"], json!(false));
    assert_eq!(s["error"]["kind"], json!("runtime"));
    assert_eq!(s["error"]["type"], json!("NameError"));
    assert!(
        text(&bad).contains("NameError (line 1, col 1)"),
        "{}",
        text(&bad)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_tool_errors_and_unknown_tools_protocol_errors() {
    let h = start(2).await;
    let r = call(&h, "run_program", json!({"prgram": "x"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(structured(&r)["error"]["type"], json!("BadArgument"));

    let e = h
        .client
        .call_tool(CallToolRequestParams::new("no_such_tool"))
        .await;
    assert!(e.is_err(), "{e:?}");
    // The server is still alive afterwards.
    let ok = call(&h, "list_profiles", json!({})).await;
    assert_eq!(ok.is_error, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_and_discovery_tools() {
    let h = start(2).await;
    let v = call(&h, "validate", json!({"program": "read_file('a')"})).await;
    assert_eq!(v.is_error, Some(false));
    assert_eq!(structured(&v)["calls"], json!(["read_file"]));
    let v = call(&h, "validate", json!({"program": "import os"})).await;
    assert_eq!(v.is_error, Some(true));
    assert_eq!(structured(&v)["error"]["kind"], json!("validation"));

    let p = call(&h, "list_profiles", json!({})).await;
    assert_eq!(structured(&p)["default"], json!("(default)"));
    let t = call(&h, "list_tools", json!({"profile": "edit"})).await;
    assert_eq!(structured(&t)["tools"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        structured(&t)["tools"][0]["signature"],
        json!("read_file(path: str) -> str")
    );
    let t = call(&h, "list_tools", json!({"profile": "nope"})).await;
    assert_eq!(t.is_error, Some(true));

    let d = call(&h, "docs_index", json!({})).await;
    assert_eq!(
        structured(&d)["docs"][0]["path"],
        json!("docs/read_file.md")
    );
    let r = call(&h, "resolve_doc", json!({"path": "docs/read_file.md"})).await;
    assert!(structured(&r)["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("# read_file")));
    let r = call(&h, "resolve_doc", json!({"path": "../etc/passwd"})).await;
    assert_eq!(r.is_error, Some(true));

    let s = call(&h, "search_tools", json!({"query": "write a file"})).await;
    assert_eq!(structured(&s)["matches"][0]["name"], json!("write_file"));
    let d = call(&h, "describe_tool", json!({"name": "find_files"})).await;
    assert_eq!(structured(&d)["tool"]["args"][0]["name"], json!("pattern"));
    assert_eq!(
        structured(&d)["tool"]["profiles"],
        json!(["(default)", "edit"])
    );
    let d = call(&h, "describe_tool", json!({"name": "open"})).await;
    assert_eq!(d.is_error, Some(true));

    let tr = call(&h, "traces", json!({"limit": 2})).await;
    assert_eq!(structured(&tr)["traces"].as_array().map(Vec::len), Some(2));

    let dg = call(&h, "delegate", json!({"intent": "count files"})).await;
    assert_eq!(dg.is_error, Some(true));
    assert_eq!(
        structured(&dg)["error"]["type"],
        json!("NoInferenceProvider")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_bounded_structured_is_complete() {
    let h = start(2).await;
    let r = call(&h, "run_program", json!({"program": "big"})).await;
    assert_eq!(structured(&r)["value"].as_array().map(Vec::len), Some(5000));
    let t = text(&r);
    assert!(t.len() <= crate::mcp::render::MAX_TEXT_BYTES, "{}", t.len());
    assert!(t.contains("4975 more (5000 items)"), "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_carry_variables() {
    let h = start(2).await;
    let a = call(
        &h,
        "run_program",
        json!({"program": "vars", "session": "s1"}),
    )
    .await;
    assert_eq!(structured(&a)["value"], json!([]));
    assert_eq!(structured(&a)["session"]["variables"], json!(["v0"]));
    let b = call(
        &h,
        "run_program",
        json!({"program": "vars", "session": "s1"}),
    )
    .await;
    assert_eq!(structured(&b)["value"], json!(["v0"]));
    let c = call(
        &h,
        "run_program",
        json!({"program": "vars", "session": "other"}),
    )
    .await;
    assert_eq!(structured(&c)["value"], json!([]));
    let bad = call(
        &h,
        "run_program",
        json!({"program": "vars", "session": "../x"}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    // Without a session nothing is reported.
    let d = call(&h, "run_program", json!({"program": "vars"})).await;
    assert!(structured(&d).get("session").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_runs_share_the_pool() {
    let h = start(4).await;
    let start = Instant::now();
    let nap = || call(&h, "run_program", json!({"program": "nap"}));
    let (a, b, c, d) = tokio::join!(nap(), nap(), nap(), nap());
    let results = [a, b, c, d];
    assert!(results.iter().all(|r| r.is_error == Some(false)));
    assert_eq!(h.stats.max_in_flight.load(Ordering::SeqCst), 4);
    assert!(
        start.elapsed() < Duration::from_millis(700),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_does_not_block_other_calls() {
    let h = start(2).await;
    let runaway = call(&h, "run_program", json!({"program": "sleep"}));
    let quick = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        timed(call(&h, "run_program", json!({"program": "x"}))).await
    };
    tokio::select! {
        _ = runaway => panic!("runaway finished first"),
        (r, took) = quick => {
            assert_eq!(r.is_error, Some(false));
            assert!(took < Duration::from_millis(500), "{took:?}");
        }
    }
    // The abandoned runaway is cancelled, not left to run out its clock.
    let t = Instant::now();
    while h.stats.cancelled.load(Ordering::SeqCst) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "runaway not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_the_backend() {
    let h = start(2).await;
    let fut = call(&h, "run_program", json!({"program": "sleep"}));
    // Dropping the request future makes the client send notifications/cancelled.
    let _ = tokio::time::timeout(Duration::from_millis(100), fut).await;
    let t = Instant::now();
    while h.stats.cancelled.load(Ordering::SeqCst) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "run was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eof_ends_the_server_and_cancels_runs() {
    let h = start(2).await;
    let peer = h.client.peer().clone();
    let inflight = tokio::spawn(async move {
        peer.call_tool(
            CallToolRequestParams::new("run_program")
                .with_arguments(args(json!({"program": "sleep"}))),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    drop(h.client);
    let done = tokio::time::timeout(Duration::from_secs(1), h.server).await;
    assert!(matches!(done, Ok(Ok(Ok(())))), "{done:?}");
    assert!(t.elapsed() < Duration::from_secs(1));
    assert_eq!(h.stats.shutdowns.load(Ordering::SeqCst), 1);
    let t = Instant::now();
    while h.stats.cancelled.load(Ordering::SeqCst) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "in-flight run not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    inflight.abort();
}
