//! The official TypeScript MCP SDK's client (`@modelcontextprotocol/sdk`,
//! what most desktop and IDE MCP hosts embed) against `lackpy mcp` over
//! stdio and `lackpy serve --listen` over streamable HTTP: tool listing,
//! runs, a failing run's `isError`, notebook sessions, a reply long enough
//! to come as SSE, validate, an unknown tool, session termination and a
//! missing token. The SDK comes from the npm install `scripts/test-deps`
//! makes in `target/test-deps/npm` (the test fails, naming the script,
//! without it).

use crate::serve_http::{config, Server, TOKEN_A};
use crate::util::workspace;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// `target/test-deps/npm`, holding `node_modules/@modelcontextprotocol/sdk`.
fn npm_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-deps/npm");
    let sdk = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "{} is missing: run scripts/test-deps (needs npm); scripts/test does",
        sdk.display()
    );
    dir
}

/// Run the client fixture with `args`; its JSON report.
fn ts_client(args: &[&str]) -> Value {
    let dir = npm_dir();
    // Node resolves the SDK from the script's own directory upwards, so the
    // fixture runs from a copy beside node_modules (one per call: tests run
    // in parallel).
    let script = dir.join(format!(
        "lackpy-ts-client-{}-{}.mjs",
        std::process::id(),
        args.first().copied().unwrap_or("")
    ));
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_ts_client.mjs");
    std::fs::copy(&src, &script).expect("copy the TS client fixture");
    let out = Command::new("node")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (scripts/test-deps installs npm): {e}"));
    let _ = std::fs::remove_file(&script);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{args:?}: the TS client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// What every transport must show the client.
fn check_runs(v: &Value) {
    for t in [
        "run_program",
        "validate",
        "delegate",
        "list_tools",
        "traces",
    ] {
        assert!(
            v["tools"].as_array().is_some_and(|a| a.contains(&json!(t))),
            "{t} not listed: {v}"
        );
    }
    assert_eq!(v["len"]["isError"], json!(false), "{v}");
    assert_eq!(v["len"]["value"], json!(6), "{v}");
    assert!(
        v["len"]["text"].as_str().is_some_and(|t| t.contains('6')),
        "{v}"
    );
    assert_eq!(v["bad"]["isError"], json!(true), "{v}");
    assert_eq!(v["bad"]["kind"], json!("validation"), "{v}");
    assert_eq!(v["cell"], json!(42), "{v}");
    assert_eq!(v["slow"], json!(4499998500000i64), "{v}");
    assert_eq!(v["validate"]["ok"], json!(true), "{v}");
    assert!(
        v["unknown"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_tool")),
        "{v}"
    );
}

#[test]
fn ts_sdk_client_over_stdio() {
    let ws = workspace(&[("a.txt", "hello\n")]);
    let bin = crate::util::bin();
    let v = ts_client(&[
        "stdio",
        &bin.to_string_lossy(),
        &ws.path().to_string_lossy(),
    ]);
    check_runs(&v);
}

#[test]
fn ts_sdk_client_over_streamable_http() {
    let ws = workspace(&[("a.txt", "hello\n")]);
    let srv = Server::start(&config(ws.path(), "", ""));
    let v = ts_client(&["http", &srv.url(), TOKEN_A]);
    check_runs(&v);
    assert!(v["session"].is_string(), "no Mcp-Session-Id: {v}");
    let v = ts_client(&["noauth", &srv.url()]);
    assert!(
        v["refused"]
            .as_str()
            .is_some_and(|m| m.contains("bearer token")),
        "let in without a token: {v}"
    );
}
