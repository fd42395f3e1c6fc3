//! `lackpy profile`. (STUB)

/// Arguments of `lackpy profile`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy profile: not implemented yet");
    Ok(3)
}
