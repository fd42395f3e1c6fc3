//! `lackpy run`. (STUB)

/// Arguments of `lackpy run`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy run: not implemented yet");
    Ok(3)
}
