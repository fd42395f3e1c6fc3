//! `lackpy trace`. (STUB)

/// Arguments of `lackpy trace`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy trace: not implemented yet");
    Ok(3)
}
