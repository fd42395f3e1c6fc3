//! `lackpy serve`: the long-running multi-client service (see `crate::serve`).

use crate::serve::{self, Shared};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
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
/// With --listen, the same tools are served over MCP's Streamable HTTP
/// transport at `/mcp`; HTTP clients are identified by bearer token
/// (`token_sha256` rules) and get the same caps and quotas.
///
/// SIGTERM/SIGINT: /readyz fails at once, stop accepting, let in-flight runs
/// finish for `drain_seconds`, kill the rest, exit 0. SIGHUP: reload the config.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example:\n  lackpy serve --socket /run/lackpy.sock --metrics-socket /run/lackpy-metrics.sock --config /etc/lackpy/serve.toml\n  curl --unix-socket /run/lackpy-metrics.sock http://x/metrics\n  lackpy serve --listen 127.0.0.1:8080 --metrics-listen 127.0.0.1:9090 --config serve.toml"
)]
pub struct Args {
    /// Unix socket to listen on (a stale socket file there is replaced).
    #[arg(long, value_name = "PATH", required_unless_present = "listen")]
    pub socket: Option<PathBuf>,
    /// TCP address for MCP over Streamable HTTP (endpoint `/mcp`).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// PEM certificate chain for HTTPS on --listen (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for HTTPS on --listen (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// TCP address serving `/healthz`, `/readyz` and `/metrics` (no auth: bind it privately).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
    /// Config file with a `[serve]` table (pool size, queue bound, client rules).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Workspace for the default client rule (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Second socket serving `/metrics` (Prometheus), `/healthz` and `/readyz`.
    #[arg(long, value_name = "PATH")]
    pub metrics_socket: Option<PathBuf>,
}

/// Run the service until SIGTERM/SIGINT.
///
/// # Errors
/// The async runtime could not be built.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let workspace = match super::common::server_workspace(args.workspace.as_deref()) {
        Ok(w) => w,
        Err(e) => return Ok(e.report("serve", false)),
    };
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

/// After the drain, how long the connections still open may write their
/// last replies before they are aborted.
const REPLY_SETTLE: Duration = Duration::from_millis(100);

/// Bind a TCP address given as HOST:PORT.
async fn bind_tcp(addr: &str) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("binding {addr}: {e}"))
}

/// Accept on the unix socket, or never (no --socket).
async fn accept_unix(
    l: &Option<UnixListener>,
) -> std::io::Result<(tokio::net::UnixStream, tokio::net::unix::SocketAddr)> {
    match l {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// What `serve` listens on besides its unix socket, bound (and the TLS
/// files loaded) before it serves anything.
struct Listeners {
    metrics_listener: Option<UnixListener>,
    metrics_tcp: Option<tokio::net::TcpListener>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    http_listener: Option<tokio::net::TcpListener>,
}

impl Listeners {
    /// Bind `--metrics-socket`, `--metrics-listen` and `--listen`, and load
    /// the TLS files (the flags win over `[serve.http]`) when `--listen` is
    /// given; the first failure.
    async fn bind(args: &Args, cfg: &serve::config::ServeConfig) -> Result<Listeners, String> {
        let metrics_listener = args
            .metrics_socket
            .as_deref()
            .map(|p| bind(p, 0o600))
            .transpose()?;
        let metrics_tcp = match &args.metrics_listen {
            Some(a) => Some(bind_tcp(a).await?),
            None => None,
        };
        let tls_files = match (&args.tls_cert, &args.tls_key) {
            (Some(c), Some(k)) => Some((c.clone(), k.clone())),
            _ => match (&cfg.http.tls_cert, &cfg.http.tls_key) {
                (Some(c), Some(k)) => Some((c.clone(), k.clone())),
                _ => None,
            },
        };
        let tls = match (&args.listen, tls_files) {
            (Some(_), Some((c, k))) => Some(serve::http::load_tls(&c, &k)?),
            _ => None,
        };
        let http_listener = match &args.listen {
            Some(a) => {
                if !cfg.has_token_rules() {
                    eprintln!("lackpy serve: warning: no [[serve.clients]] rule has token_sha256, so every HTTP request will get 401");
                }
                Some(bind_tcp(a).await?)
            }
            None => None,
        };
        Ok(Listeners {
            metrics_listener,
            metrics_tcp,
            tls,
            http_listener,
        })
    }
}

async fn run(args: Args, workspace: PathBuf, cfg: serve::config::ServeConfig) -> i32 {
    let own_uid = nix::unistd::geteuid().as_raw();
    // Only the owner can connect unless rules admit other users; peer
    // credentials decide either way.
    let mode = if cfg
        .clients
        .iter()
        .filter(|c| c.uid.is_some() || c.gid.is_some())
        .all(|c| c.uid == Some(own_uid))
    {
        0o600
    } else {
        0o666
    };
    let cleanup = |args: &Args| {
        if let Some(p) = &args.socket {
            let _ = std::fs::remove_file(p);
        }
    };
    let listener = match &args.socket {
        Some(p) => match bind(p, mode) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!("lackpy serve: {e}");
                return 3;
            }
        },
        None => None,
    };
    let Listeners {
        metrics_listener,
        metrics_tcp,
        tls,
        http_listener,
    } = match Listeners::bind(&args, &cfg).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("lackpy serve: {e}");
            cleanup(&args);
            return 3;
        }
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
        tokio::spawn(serve::health::serve_unix(ml, shared.clone()));
    }
    if let Some(ml) = metrics_tcp {
        if let Ok(a) = ml.local_addr() {
            eprintln!("lackpy serve: health and metrics on http://{a}");
        }
        tokio::spawn(serve::health::serve_tcp(ml, shared.clone()));
    }
    // Create every workspace's pool now: /readyz turns ready when they are warm.
    {
        let s = shared.clone();
        tokio::task::spawn_blocking(move || s.warm());
    }
    let (stop_http, stop_rx) = tokio::sync::watch::channel(false);
    let http = serve::http::HttpServer::new(shared.clone());
    let mut http_task = None;
    if let Some(l) = http_listener {
        let scheme = if tls.is_some() { "https" } else { "http" };
        if let Ok(a) = l.local_addr() {
            eprintln!(
                "lackpy serve: listening on {scheme}://{a}{}",
                serve::http::MCP_PATH
            );
        }
        http_task = Some(tokio::spawn(http.clone().serve(l, tls, stop_rx)));
    }
    // Keeps the server's RSS flat under load.
    crate::mcp::spawn_heap_trimmer(TRIM_EVERY);
    if let Some(p) = &args.socket {
        tracing::info!(socket = %p.display(), "lackpy serve: listening");
        eprintln!("lackpy serve: listening on {}", p.display());
    }
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = accept_unix(&listener) => match accepted {
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
    // Graceful shutdown: /readyz fails at once, stop accepting, drain,
    // then kill what is left.
    shared.start_draining();
    drop(listener);
    stop_http.send_replace(true);
    if let Some(t) = http_task {
        let _ = t.await;
    }
    cleanup(&args);
    let deadline = Instant::now() + Duration::from_secs(shared.config().drain_seconds);
    eprintln!(
        "lackpy serve: draining {} run(s) in flight",
        shared.in_flight()
    );
    // Runs in flight, and MCP POSTs still being answered: a run's reply
    // must be written before the sessions end, and a `tools/call` read
    // just before SIGTERM has not started its run yet.
    while (shared.in_flight() > 0 || shared.posts_open() > 0) && Instant::now() < deadline {
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
    if !conns.is_empty() {
        // A unix-socket run stops counting as in flight just before its
        // connection task writes the reply (microseconds later), and a
        // killed run still answers with its error. Those tasks are about
        // to be aborted: give the last replies a moment to go out first.
        // (Counting replies written instead cannot work: a cancelled run's
        // reply goes out before its run ends.)
        tokio::time::sleep(REPLY_SETTLE).await;
    }
    http.close(Duration::from_secs(1)).await;
    conns.abort_all();
    if let Some(p) = &args.metrics_socket {
        let _ = std::fs::remove_file(p);
    }
    eprintln!("lackpy serve: stopped");
    0
}
