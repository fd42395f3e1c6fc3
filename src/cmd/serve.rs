//! `lackpy serve`: the long-running multi-client service (see `crate::serve`).

use crate::serve::{self, Shared};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio::signal::unix::{signal, SignalKind};

/// Arguments of `lackpy serve`.
///
/// Each connection to SOCKET is one MCP session (newline-delimited JSON-RPC,
/// exactly like `lackpy mcp` on stdio) with the same tools. Clients are
/// identified by SO_PEERCRED and matched against `[[serve.clients]]` rules of
/// the config file (uid/gid → workspace, profiles, quotas); without a config
/// file only the server's own uid may connect, on --workspace.
///
/// SIGTERM/SIGINT: stop accepting, let in-flight runs finish for
/// `drain_seconds`, kill the rest, exit 0. SIGHUP: reload the config.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  lackpy serve --socket /run/lackpy.sock --metrics-socket /run/lackpy-metrics.sock --config /etc/lackpy/serve.toml\n  curl --unix-socket /run/lackpy-metrics.sock http://x/metrics"
)]
pub struct Args {
    /// Unix socket to listen on (a stale socket file there is replaced).
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// Config file with a `[serve]` table (pool size, queue bound, client rules).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Workspace for the default client rule (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Second socket serving Prometheus metrics (`GET /metrics`) and a health check (`GET /health`).
    #[arg(long, value_name = "PATH")]
    pub metrics_socket: Option<PathBuf>,
}

/// Run the service until SIGTERM/SIGINT.
///
/// # Errors
/// The async runtime could not be built.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    if !workspace.is_dir() {
        eprintln!(
            "lackpy serve: workspace {} is not a directory",
            workspace.display()
        );
        return Ok(3);
    }
    let cfg = match serve::load_config(args.config.as_deref(), &workspace) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lackpy serve: config error: {e}");
            return Ok(3);
        }
    };
    lackpy_supervisor::spawn::limit_heap_arenas();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(128)
        .enable_all()
        .build()?;
    let code = rt.block_on(run(args, workspace, cfg));
    rt.shutdown_timeout(Duration::from_millis(200));
    Ok(code)
}

/// Bind `path`, replacing a stale socket file but never anything else.
fn bind(path: &Path, mode: u32) -> Result<UnixListener, String> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(format!(
                "{} exists and is not a socket; refusing to replace it",
                path.display()
            ));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(format!("{} is in use by a running server", path.display()));
        }
        std::fs::remove_file(path)
            .map_err(|e| format!("removing stale {}: {e}", path.display()))?;
    }
    let l = UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", path.display()))?;
    Ok(l)
}

/// How often a server gives freed heap back to the kernel.
/// Why 500 ms: a trim costs well under a millisecond; under load the arenas
/// regrow within seconds, so trimming rarely lets RSS creep.
const TRIM_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

async fn run(args: Args, workspace: PathBuf, cfg: serve::config::ServeConfig) -> i32 {
    let own_uid = nix::unistd::geteuid().as_raw();
    // Only the owner can connect unless rules admit other users; peer
    // credentials decide either way.
    let mode = if cfg.clients.iter().all(|c| c.uid == Some(own_uid)) {
        0o600
    } else {
        0o666
    };
    let listener = match bind(&args.socket, mode) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("lackpy serve: {e}");
            return 3;
        }
    };
    let metrics_listener = match &args.metrics_socket {
        Some(p) => match bind(p, 0o600) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!("lackpy serve: {e}");
                let _ = std::fs::remove_file(&args.socket);
                return 3;
            }
        },
        None => None,
    };
    let shared = Shared::new(cfg);
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        eprintln!("lackpy serve: cannot install signal handlers");
        return 4;
    };
    if let Some(ml) = metrics_listener {
        tokio::spawn(serve_metrics(ml, shared.clone()));
    }
    // Keeps the server's RSS flat under load.
    crate::mcp::spawn_heap_trimmer(TRIM_EVERY);
    tracing::info!(socket = %args.socket.display(), "lackpy serve: listening");
    eprintln!("lackpy serve: listening on {}", args.socket.display());
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let shared = shared.clone();
                    conns.spawn(serve::serve_connection(stream, shared));
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = hup.recv() => {
                match serve::load_config(args.config.as_deref(), &workspace) {
                    Ok(c) => { shared.reload(c); eprintln!("lackpy serve: config reloaded"); }
                    Err(e) => eprintln!("lackpy serve: reload failed, keeping the old config: {e}"),
                }
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    // Graceful shutdown: stop accepting, drain, then kill what is left.
    drop(listener);
    let _ = std::fs::remove_file(&args.socket);
    let deadline = Instant::now() + Duration::from_secs(shared.config().drain_seconds);
    eprintln!(
        "lackpy serve: draining {} run(s) in flight",
        shared.in_flight()
    );
    while shared.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if shared.in_flight() > 0 {
        eprintln!(
            "lackpy serve: drain deadline passed; killing {} run(s)",
            shared.in_flight()
        );
    }
    let s = shared.clone();
    let _ = tokio::task::spawn_blocking(move || s.kill_all()).await;
    conns.abort_all();
    if let Some(p) = &args.metrics_socket {
        let _ = std::fs::remove_file(p);
    }
    eprintln!("lackpy serve: stopped");
    0
}

/// Answer each metrics-socket connection with one HTTP/1.0 response:
/// `/health` → `ok`, anything else → the Prometheus text.
async fn serve_metrics(listener: UnixListener, shared: Arc<Shared>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let n = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf))
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]);
            let body = if req.starts_with("GET /health") {
                "ok\n".to_string()
            } else {
                let cfg = shared.config();
                shared
                    .metrics
                    .render(shared.pool_ready(), cfg.max_in_flight)
            };
            let resp = format!(
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(resp.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
