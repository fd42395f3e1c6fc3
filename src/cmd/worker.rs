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

/// The supervisor's exact argv shape, `__worker ROLE --jail SPEC [ARGS...]`
/// (after the program name), parsed without building the whole command
/// line interface: every exec'd worker starts here, and clap's builder for
/// every subcommand was a measurable slice of a cold run. Anything else
/// (a person typing it) returns `None` and goes through clap.
pub fn fast_args(argv: &[std::ffi::OsString]) -> Option<Args> {
    let s = |i: usize| argv.get(i).and_then(|a| a.to_str());
    if s(0)? != "__worker" || s(2)? != "--jail" {
        return None;
    }
    let (role, jail) = (s(1)?, s(3)?);
    if role.starts_with('-') {
        return None;
    }
    let rest = argv
        .get(4..)?
        .iter()
        .map(|a| a.to_str().map(String::from))
        .collect::<Option<Vec<_>>>()?;
    Some(Args {
        role: role.to_string(),
        jail: jail.to_string(),
        rest,
    })
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

#[cfg(test)]
mod tests {
    use super::fast_args;
    use std::ffi::OsString;

    fn v(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_supervisors_argv_takes_the_fast_path() {
        let a = fast_args(&v(&["__worker", "zygote", "--jail", "ns=1", "executor"])).unwrap();
        assert_eq!((a.role.as_str(), a.jail.as_str()), ("zygote", "ns=1"));
        assert_eq!(a.rest, vec!["executor".to_string()]);
        let a = fast_args(&v(&["__worker", "executor", "--jail", "x"])).unwrap();
        assert!(a.rest.is_empty());
    }

    #[test]
    fn anything_else_goes_to_clap() {
        for argv in [
            &["run", "x"][..],
            &["__worker"],
            &["__worker", "executor"],
            &["__worker", "--help"],
            &["__worker", "executor", "--help"],
            &["__worker", "--jail", "x", "executor"],
        ] {
            assert!(fast_args(&v(argv)).is_none(), "{argv:?}");
        }
    }
}
