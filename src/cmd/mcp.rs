//! `lackpy mcp`: serve lackpy's tools over MCP on stdin/stdout.

use crate::mcp;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `lackpy mcp`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Workspace directory the file tools act in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Profile used by calls that name neither a profile nor a tool list.
    #[arg(long)]
    pub profile: Option<String>,
}

/// Run the server until stdin closes. Exit status 0 after a clean EOF, 3
/// for a bad workspace, 4 when the supervisor or transport cannot start.
///
/// # Errors
/// The async runtime could not be built.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let workspace = match super::common::server_workspace(args.workspace.as_deref()) {
        Ok(w) => w,
        Err(e) => return Ok(e.report("mcp", false)),
    };
    let backend: Arc<dyn mcp::backend::Backend> =
        match mcp::real::RealBackend::new(&workspace, args.profile) {
            Ok(b) => Arc::new(b),
            Err(e) => {
                eprintln!("lackpy mcp: {e:#}");
                return Ok(4);
            }
        };
    lackpy_supervisor::spawn::limit_heap_arenas();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        // A session can last days: give freed heap back now and then.
        let trim = mcp::spawn_heap_trimmer(Duration::from_secs(2));
        let r = mcp::serve_stdio(backend).await;
        trim.abort();
        r
    });
    // Blocking tasks still waiting on a worker must not hold the exit: the
    // process is about to end, and its workers die with it (PDEATHSIG).
    rt.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("lackpy mcp: {e:#}");
            Ok(4)
        }
    }
}
