//! `lackpy validate`. (STUB)

/// Arguments of `lackpy validate`.
#[derive(clap::Args)]
pub struct Args {}

/// Run the subcommand.
pub fn main(_args: Args) -> anyhow::Result<i32> {
    eprintln!("lackpy validate: not implemented yet");
    Ok(3)
}
