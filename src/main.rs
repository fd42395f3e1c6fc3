//! `lackpy`: the one binary. Parses the command line and dispatches; every
//! subcommand lives in `cmd/`. Hidden worker roles re-enter here too.

mod cmd;
mod mcp;
mod serve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// A secure runtime for tool-composing programs written in a strict subset of Python.
///
/// Programs are validated against a whitelist, graded, and run in a single-use
/// jailed worker; every tool call is authorized by the supervisor and traced.
#[derive(Parser)]
#[command(name = "lackpy", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate and run a program in a jailed worker.
    Run(cmd::run::Args),
    /// Validate a program and show its grade and tool calls, without running it.
    Validate(cmd::validate::Args),
    /// Generate a program from an intent (templates, rules, a model), validate and run it.
    Delegate(cmd::delegate::Args),
    /// List the tools of the toolbox (builtins plus config-defined).
    Tools(cmd::tools::Args),
    /// List, inspect and create profiles.
    Profile(cmd::profile::Args),
    /// Read the run traces of a workspace.
    Trace(cmd::trace::Args),
    /// Show which jail layers this kernel supports.
    Doctor(cmd::doctor::Args),
    /// Serve lackpy's tools over MCP on stdin/stdout.
    Mcp(cmd::mcp::Args),
    /// Serve MCP sessions to many local clients on a unix socket (hardened service).
    Serve(cmd::serve::Args),
    /// Internal: a jailed worker role. Not for direct use.
    #[command(name = "__worker", hide = true)]
    Worker(cmd::worker::Args),
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(args) = cmd::worker::fast_args(&argv) {
        return exit_code(cmd::worker::main(args));
    }
    // `lackpy run` starts its worker before the command line is parsed
    // (building clap's command tree is most of the front end's start-up),
    // when nothing on the line changes the worker's jail.
    let early = cmd::run::prestart(&argv);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 3 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    if !matches!(cli.command, Command::Worker(_)) {
        init_logging();
    }
    let result = match cli.command {
        Command::Run(a) => cmd::run::main(a, early),
        Command::Validate(a) => cmd::validate::main(a),
        Command::Delegate(a) => cmd::delegate::main(a),
        Command::Tools(a) => cmd::tools::main(a),
        Command::Profile(a) => cmd::profile::main(a),
        Command::Trace(a) => cmd::trace::main(a),
        Command::Doctor(a) => cmd::doctor::main(a),
        Command::Mcp(a) => cmd::mcp::main(a),
        Command::Serve(a) => cmd::serve::main(a),
        Command::Worker(a) => cmd::worker::main(a),
    };
    exit_code(result)
}

fn exit_code(result: anyhow::Result<i32>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(4)),
        Err(e) => {
            eprintln!("lackpy: error: {e:#}");
            ExitCode::from(4)
        }
    }
}

/// Logs go to stderr only: stdout belongs to results and the MCP protocol.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LACKPY_LOG")
        // rmcp's client worker logs a remote MCP server's failure as an
        // ERROR with the request's details; lackpy's own warning says why
        // the server's tools are unavailable (LACKPY_LOG shows it again).
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp::transport::worker=off"));
    // Colour only for a person at a terminal: a log file, a journal or an
    // MCP client's stderr pipe gets plain text, not escape sequences.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
