//! What the MCP tests share, on both sides of the binary: the protocol-layer
//! unit tests (`src/mcp/tests.rs`, which include this file by path) and the
//! integration tests of `lackpy mcp` (`tests/mcp.rs`).

use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value};

/// A JSON object as tool arguments (anything else: no arguments).
pub(crate) fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The text content of a tool result, one line per text block.
pub(crate) fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The listed tool named `name`.
pub(crate) fn listed<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    let found = tools.iter().find(|t| t.name == name);
    found.unwrap_or_else(|| panic!("{name} is not listed"))
}

/// What `fut` gives and how long it took.
pub(crate) async fn timed<T>(
    fut: impl std::future::Future<Output = T>,
) -> (T, std::time::Duration) {
    let t0 = std::time::Instant::now();
    let out = fut.await;
    (out, t0.elapsed())
}
