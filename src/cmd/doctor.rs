//! `lackpy doctor`. (STUB)

/// Arguments of `lackpy doctor`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy doctor: not implemented yet");
    Ok(3)
}
