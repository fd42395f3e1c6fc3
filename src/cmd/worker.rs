//! `lackpy worker`. (STUB)

/// Arguments of `lackpy worker`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy worker: not implemented yet");
    Ok(3)
}
