//! `lackpy __worker ROLE --jail SPEC [ARGS...]`: the hidden entry point of a
//! re-exec'd worker. Only the supervisor starts it (with the IPC socket on
//! fd 3, an empty environment and /dev/null stdio). The `probe` and
//! `hostile` roles exist only in builds with the `test-roles` feature.

use lackpy_worker::jail::JailSpec;

/// Arguments of `lackpy __worker`.
#[derive(clap::Args)]
pub struct Args {
    /// Role: `executor`, `inferencer`, `zygote` (its ARGS are the role its
    /// forked workers serve), and in test builds `probe` or `hostile`.
    role: String,
    /// The jail spec the supervisor built (see `JailSpec::to_arg`).
    #[arg(long)]
    jail: String,
    /// Role arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Run the worker role; the exit status is the worker's.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let spec = match JailSpec::from_arg(&args.jail) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("lackpy worker: {e}");
            return Ok(lackpy_worker::role::EXIT_SETUP);
        }
    };
    let _ = &args.rest;
    Ok(match args.role.as_str() {
        "executor" => lackpy_worker::role::executor(&spec),
        "inferencer" => lackpy_inferencer::worker::role(&spec),
        "zygote" => lackpy_worker::zygote::run(&spec, &args.rest),
        #[cfg(feature = "test-roles")]
        "probe" => lackpy_worker::role::test_roles::probe(&spec, &args.rest),
        #[cfg(feature = "test-roles")]
        "hostile" => lackpy_worker::role::test_roles::hostile(&spec, &args.rest),
        other => {
            eprintln!("lackpy worker: unknown role {other:?}");
            lackpy_worker::role::EXIT_SETUP
        }
    })
}
