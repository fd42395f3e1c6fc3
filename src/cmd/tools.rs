//! `lackpy tools`. (STUB)

/// Arguments of `lackpy tools`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy tools: not implemented yet");
    Ok(3)
}
