//! The MCP protocol layer: one [`LackpyServer`] per connection, answering
//! `tools/list` and `tools/call` over a [`Backend`].
//!
//! Every backend call runs on the blocking pool; runs are bounded by a
//! semaphore of the backend's pool size, so several calls are in flight at
//! once and a runaway program never delays the others. A failed program is a
//! tool result with `isError: true`, never a protocol error; only an unknown
//! tool name is one.

use crate::mcp::backend::{
    failed_run, failure, Backend, Cancel, RunRequest, ToolInfo, ValidateRequest,
};
use crate::mcp::render;
use crate::mcp::session::{self, SessionError, SessionStore};
use crate::mcp::tools::{
    self, ConfirmArgs, DelegateArgs, NameArg, NoArgs, PathArg, ProfileArg, QueryArg, RunArgs,
    TracesArg, ValidateArgs,
};
use lackpy_policy::wire::{ErrorInfo, ErrorKind};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Semaphore};

/// Search results `search_tools` returns at most.
const SEARCH_MAX: usize = 10;

/// Longest `search_tools` query, in bytes. Why: every word of the query is
/// compared with every word of every tool's name and description; a 1 MiB
/// query (340,000 words, within the request line cap) cost 19 s of CPU per
/// request with only the builtins, and more with every configured tool.
/// A search is "a few words".
const MAX_QUERY_BYTES: usize = 1024;

/// `traces` calls served at once by this process, all sessions and
/// clients together; the others wait their turn.
/// Why 2: one call reads up to 8 MiB of records and holds several copies
/// of them while it builds and renders its reply (~60 MiB); a client's
/// calls are otherwise bounded only by its in-flight requests (64 per
/// stream session; over HTTP, every connection): 64 at once took `lackpy
/// serve` to 1.2 GiB. Two keep the machine's cores busy.
const MAX_TRACE_READS: usize = 2;
static TRACE_READS: Semaphore = Semaphore::const_new(MAX_TRACE_READS);

/// What the server tells a client at `initialize`.
const INSTRUCTIONS: &str = "lackpy runs small programs (a strict subset of Python) that compose tools, \
in a jailed worker, and returns one structured result. Typical flow: list_tools (or search_tools / \
describe_tool) to learn the function names, then run_program with a program that calls them and ends \
in an expression whose value is the answer. validate checks a program without running it.";

/// One MCP connection's server.
#[derive(Clone)]
pub struct LackpyServer {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Arc<dyn Backend>,
    sessions: Mutex<SessionStore>,
    runs: Arc<Semaphore>,
    shutdown: watch::Receiver<bool>,
}

impl LackpyServer {
    /// A server over `backend`; `shutdown` turning `true` cancels every
    /// in-flight call (the transport closed).
    pub fn new(backend: Arc<dyn Backend>, shutdown: watch::Receiver<bool>) -> Self {
        let slots = backend.max_concurrent_runs().max(1);
        let (limits, budgets) = backend.session_policy();
        LackpyServer {
            inner: Arc::new(Inner {
                backend,
                sessions: Mutex::new(SessionStore::with_budgets(limits, budgets)),
                runs: Arc::new(Semaphore::new(slots)),
                shutdown,
            }),
        }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Backend) -> T + Send + 'static,
    ) -> Result<T, McpError> {
        let backend = self.inner.backend.clone();
        tokio::task::spawn_blocking(move || f(backend.as_ref()))
            .await
            .map_err(|e| McpError::internal_error(format!("backend task failed: {e}"), None))
    }

    async fn toolbox(&self) -> Vec<ToolInfo> {
        self.blocking(|b| b.toolbox())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    }

    async fn call(
        &self,
        name: &str,
        args: Map<String, Value>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        // Held by a `traces` call until its reply is rendered.
        let mut _trace_read = None;
        let value = match name {
            "run_program" => match parse::<RunArgs>(args) {
                Ok(a) => return Ok(self.run_program(a, ctx).await),
                Err(e) => failure(e),
            },
            "validate" => match parse::<ValidateArgs>(args) {
                Ok(a) => {
                    let req = ValidateRequest {
                        program: a.program,
                        profile: a.profile,
                        tools: a.tools,
                    };
                    let report = self.blocking(move |b| b.validate(req)).await?;
                    return Ok(result(report, render::render_run));
                }
                Err(e) => failure(e),
            },
            "list_profiles" => match parse::<NoArgs>(args) {
                Ok(_) => {
                    self.blocking(|b| match b.profiles() {
                        Ok(ps) => json!({
                            "ok": true,
                            "default": ps.iter().find(|p| p.is_default).map(|p| p.name.clone()),
                            "profiles": ps.iter().map(|p| json!({
                                "name": p.name,
                                "description": p.description,
                                "default": p.is_default,
                                "tools": p.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
                                "grade": grade_of(&p.tools),
                            })).collect::<Vec<_>>(),
                        }),
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "list_tools" => match parse::<ProfileArg>(args) {
                Ok(a) => {
                    self.blocking(move |b| match b.profile(a.profile.as_deref()) {
                        Ok(p) => json!({
                            "ok": true,
                            "profile": p.name,
                            "grade": grade_of(&p.tools),
                            "tools": p.tools.iter().map(ToolInfo::to_json).collect::<Vec<_>>(),
                        }),
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "docs_index" => match parse::<ProfileArg>(args) {
                Ok(a) => {
                    self.blocking(move |b| match b.profile(a.profile.as_deref()) {
                        Ok(p) => json!({
                            "ok": true,
                            "profile": p.name,
                            "docs": p.tools.iter().filter_map(|t| t.docs.as_ref().map(|d| json!({
                                "tool": t.name, "path": d, "description": t.description,
                            }))).collect::<Vec<_>>(),
                        }),
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "resolve_doc" => match parse::<PathArg>(args) {
                Ok(a) => {
                    let path = a.path;
                    self.blocking(move |b| match b.resolve_doc(&path) {
                        Ok(text) => json!({"ok": true, "path": path, "text": text}),
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "traces" => match parse::<TracesArg>(args) {
                Ok(a) => {
                    let limit = a
                        .limit
                        .unwrap_or(tools::TRACES_DEFAULT)
                        .clamp(1, tools::TRACES_MAX);
                    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                    _trace_read = TRACE_READS.acquire().await.ok();
                    self.blocking(move |b| match b.traces(limit) {
                        Ok(ts) => json!({"ok": true, "traces": ts}),
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "search_tools" => match parse::<QueryArg>(args) {
                Ok(a) if a.query.len() > MAX_QUERY_BYTES => failure(bad_argument(format!(
                    "the query is {} bytes; search_tools takes at most {MAX_QUERY_BYTES} (MAX_QUERY_BYTES): a few words such as \"read a file\"",
                    a.query.len()
                ))),
                Ok(a) => {
                    self.blocking(move |b| match b.toolbox() {
                        Ok(all) => {
                            let mut hits: Vec<(u32, &ToolInfo)> = all
                                .iter()
                                .map(|t| (tools::score(t, &a.query), t))
                                .filter(|(s, _)| *s > 0)
                                .collect();
                            hits.sort_by(|x, y| {
                                y.0.cmp(&x.0).then_with(|| x.1.name.cmp(&y.1.name))
                            });
                            json!({
                                "ok": true,
                                "query": a.query,
                                "total": hits.len(),
                                "matches": hits.iter().take(SEARCH_MAX).map(|(s, t)| json!({
                                    "name": t.name,
                                    "signature": t.signature(),
                                    "description": t.description,
                                    "score": s,
                                })).collect::<Vec<_>>(),
                            })
                        }
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "describe_tool" => match parse::<NameArg>(args) {
                Ok(a) => {
                    self.blocking(move |b| match b.toolbox() {
                        Ok(all) => match all.iter().find(|t| t.name == a.name) {
                            Some(t) => {
                                // Which profiles grant it, so the caller knows what to pass.
                                let granted: Vec<String> = b
                                    .profiles()
                                    .unwrap_or_default()
                                    .into_iter()
                                    .filter(|p| p.tools.iter().any(|x| x.name == t.name))
                                    .map(|p| p.name)
                                    .collect();
                                let mut tool = t.to_json();
                                if let Some(obj) = tool.as_object_mut() {
                                    obj.insert("profiles".into(), json!(granted));
                                }
                                json!({"ok": true, "tool": tool})
                            }
                            None => {
                                let mut e = ErrorInfo::new(
                                    ErrorKind::Validation,
                                    "UnknownTool",
                                    format!("no tool named {:?}", a.name),
                                );
                                e.hint = Some(
                                    "use search_tools or list_tools to find tool names".into(),
                                );
                                failure(e)
                            }
                        },
                        Err(e) => failure(e),
                    })
                    .await?
                }
                Err(e) => failure(e),
            },
            "delegate" => match parse::<DelegateArgs>(args) {
                Ok(a) => {
                    let report = self
                        .blocking(move |b| b.delegate(&a.intent, a.profile.as_deref()))
                        .await?;
                    return Ok(result(report, render::render_run));
                }
                Err(e) => failure(e),
            },
            "confirm_result" => match parse::<ConfirmArgs>(args) {
                Ok(a) => {
                    self.blocking(move |b| b.confirm_result(&a.run_id, a.correct))
                        .await?
                }
                Err(e) => failure(e),
            },
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ))
            }
        };
        Ok(result(value, render::render_generic))
    }

    async fn run_program(&self, a: RunArgs, ctx: &RequestContext<RoleServer>) -> CallToolResult {
        let session_id = a.session;
        if let Some(id) = &session_id {
            if let Err(e) = session::check_id(id) {
                return result(failed_run(bad_argument(e.to_string())), render::render_run);
            }
        }
        let initial_vars = match &session_id {
            Some(id) => match self.inner.sessions.lock() {
                // A new session over a shared budget is refused before it runs.
                Ok(mut st) => match st.check_new(id) {
                    Ok(()) => st.load(id),
                    Err(e) => return result(failed_run(session_limit(&e)), render::render_run),
                },
                Err(_) => Vec::new(),
            },
            None => Vec::new(),
        };
        let req = RunRequest {
            program: a.program,
            profile: a.profile,
            tools: a.tools,
            initial_vars: initial_vars.clone(),
            want_vars: session_id.is_some(),
        };
        let mut shutdown = self.inner.shutdown.clone();
        let cancelled = || {
            let mut e = ErrorInfo::new(
                ErrorKind::Internal,
                "Cancelled",
                "the run was cancelled before it finished",
            );
            e.hint = Some("the client cancelled the request or the server is shutting down".into());
            result(failed_run(e), render::render_run)
        };
        // Wait for a worker slot, unless the call is abandoned first.
        let permit = tokio::select! {
            p = self.inner.runs.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return cancelled(),
            },
            _ = ctx.ct.cancelled() => return cancelled(),
            _ = shutdown.wait_for(|s| *s) => return cancelled(),
        };
        let cancel = Cancel::new();
        let task_cancel = cancel.clone();
        let backend = self.inner.backend.clone();
        let task = tokio::task::spawn_blocking(move || {
            let out = backend.run_program(req, &task_cancel);
            drop(permit);
            out
        });
        let outcome = tokio::select! {
            r = task => r,
            _ = ctx.ct.cancelled() => {
                cancel.cancel();
                return cancelled();
            }
            _ = shutdown.wait_for(|s| *s) => {
                cancel.cancel();
                return cancelled();
            }
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                let err = ErrorInfo::new(
                    ErrorKind::Internal,
                    "InternalError",
                    format!("run task failed: {e}"),
                );
                return result(failed_run(err), render::render_run);
            }
        };
        let mut report = outcome.report;
        if let Some(id) = session_id {
            let info = match outcome.vars {
                Some(left) => {
                    let names: Vec<String> = left.iter().map(|(n, _)| n.clone()).collect();
                    let before: Vec<String> = initial_vars.iter().map(|(n, _)| n.clone()).collect();
                    let saved = match self.inner.sessions.lock() {
                        Ok(mut st) => Some(st.save(&id, initial_vars, left)),
                        Err(_) => None,
                    };
                    let mut info = match saved {
                        Some(Ok(saved)) => json!({
                            "id": id,
                            "variables": saved.vars.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                            "dropped": saved.dropped,
                        }),
                        // Over a shared budget: the run happened (its value
                        // and trace stay in the report) but its variables
                        // were not kept, and the result says so as an error.
                        Some(Err(e)) => {
                            if let Some(obj) = report.as_object_mut() {
                                obj.insert("ok".into(), json!(false));
                                obj.insert("error".into(), json!(session_limit(&e)));
                            }
                            json!({"id": id, "variables": before, "dropped": names})
                        }
                        None => json!({"id": id, "variables": [], "dropped": []}),
                    };
                    if !outcome.skipped_vars.is_empty() {
                        if let Some(o) = info.as_object_mut() {
                            o.insert("not_kept".into(), json!(outcome.skipped_vars));
                            o.insert(
                                "note".into(),
                                json!("variables in not_kept hold values that are not plain data (range, iterator, dict view) or are too large; convert them, e.g. list(r), to keep them"),
                            );
                        }
                    }
                    info
                }
                None => json!({
                    "id": id,
                    "variables": initial_vars.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                    "note": "this backend does not report variables; nothing new was kept",
                }),
            };
            if let Some(obj) = report.as_object_mut() {
                obj.insert("session".into(), info);
            }
        }
        result(report, render::render_run)
    }
}

/// The join of the tools' grades.
fn grade_of(tools: &[ToolInfo]) -> Value {
    let w = tools.iter().map(|t| t.grade_w).max().unwrap_or(0);
    let d = tools.iter().map(|t| t.effects_ceiling).max().unwrap_or(0);
    json!({"w": w, "d": d})
}

/// A session refused by a limit: kind `limit`, type `SessionLimit`, and a
/// hint naming the config key that raises it.
fn session_limit(e: &SessionError) -> ErrorInfo {
    if matches!(e, SessionError::BadId) {
        return bad_argument(e.to_string());
    }
    let mut info = ErrorInfo::new(ErrorKind::Limit, "SessionLimit", e.to_string());
    let key = e.key().unwrap_or("the session limits");
    info.hint = Some(match e {
        SessionError::TooLarge { .. } => format!(
            "rebind large session variables to smaller values (x = None), use fewer sessions, or close connections to free theirs; the operator raises the limit with {key}"
        ),
        _ => format!(
            "reuse an existing session id, or close connections to free their sessions; the operator raises the limit with {key}"
        ),
    });
    info
}

fn bad_argument(message: String) -> ErrorInfo {
    let mut e = ErrorInfo::new(ErrorKind::Validation, "BadArgument", message);
    e.hint = Some("check the tool's input schema in tools/list".into());
    e
}

fn parse<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, ErrorInfo> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| bad_argument(format!("bad arguments: {e}")))
}

/// Build the tool result: structured content as given, text bounded, and
/// `isError` when `ok` is false.
fn result(value: Value, text: fn(&Value) -> String) -> CallToolResult {
    let ok = value.get("ok").and_then(Value::as_bool).unwrap_or(false);
    // Not `CallToolResult::structured`: it also renders the whole value as
    // JSON text, which the bounded text below replaces anyway.
    let content = vec![ContentBlock::text(text(&value))];
    let mut r = if ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    r.structured_content = Some(value);
    r
}

impl ServerHandler for LackpyServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lackpy", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let toolbox = self.toolbox().await;
        Ok(ListToolsResult::with_all_items(tools::all(&toolbox)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        tracing::debug!(tool = %request.name, "tools/call");
        self.call(request.name.as_ref(), args, &context)
            .await
            .map(Into::into)
    }
}
