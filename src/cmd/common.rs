//! Pieces shared by subcommands: choosing the workspace and profile, reading
//! the program, loading config from disk. (STUB: the policy work fills it in.)

use std::path::PathBuf;

/// `--profile NAME | --tools a,b` and `--workspace DIR`, shared by `run`,
/// `validate` and others.
#[derive(clap::Args, Debug, Clone)]
pub struct Select {
    /// Profile to use (a `[profiles.NAME]` table or `.lackpy/kits/NAME.kit`).
    #[arg(long, conflicts_with = "tools")]
    pub profile: Option<String>,
    /// Ad-hoc tool list instead of a profile, comma-separated (`read_file,find_files`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Workspace directory the file tools act in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}
