//! Trusted code and the program-writable set.
//!
//! The *program-writable set* is everything a program can change through
//! any tool of any profile: the workspace (minus its control directory
//! `.lackpy/`, which no program and no child jail can write). Nothing lackpy
//! executes, imports or trusts (command programs and scripts, MCP server
//! programs and scripts, python tool modules and interpreters) may lie in
//! that set or be reachable from it through a symlink: a program could
//! rewrite it and have lackpy run its code with the tool's rights. Such a
//! configuration is refused, naming the file.
//!
//! What a writable MCP server's `write_paths` name is program-writable too:
//! the front end registers them when it loads the configuration
//! ([`register_write_paths`]).

use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// `write_paths` of the configured MCP servers, per workspace.
static WRITE_PATHS: RwLock<Vec<(PathBuf, Vec<PathBuf>)>> = RwLock::new(Vec::new());

/// Record the `write_paths` of `workspace`'s configured MCP servers
/// (absolute, as the servers' jails resolve them): they belong to the
/// program-writable set of that workspace.
pub fn register_write_paths(workspace: &Path, paths: Vec<PathBuf>) {
    let mut g = WRITE_PATHS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    g.retain(|(w, _)| w != workspace);
    if !paths.is_empty() {
        g.push((workspace.to_path_buf(), paths));
    }
}

/// Whether `path` lies in the program-writable set of `workspace`: the
/// path as written (a symlink in the workspace can be retargeted by a
/// program) or the file it resolves to is inside the workspace but not
/// inside its control directory. `workspace` must be canonical.
pub fn in_writable_set(path: &Path, workspace: &Path) -> bool {
    let control = workspace.join(lackpy_beneath::CONTROL_DIR);
    let inside = |p: &Path| p.starts_with(workspace) && !p.starts_with(&control);
    let written = if path.is_absolute() {
        lexical(path)
    } else {
        lexical(&workspace.join(path))
    };
    let canonical = std::fs::canonicalize(path).ok();
    if inside(&written) || canonical.as_deref().is_some_and(inside) {
        return true;
    }
    let g = WRITE_PATHS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    g.iter()
        .filter(|(w, _)| w == workspace)
        .flat_map(|(_, roots)| roots)
        .any(|root| {
            let canon_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
            written.starts_with(root)
                || written.starts_with(&canon_root)
                || canonical
                    .as_deref()
                    .is_some_and(|c| c.starts_with(root) || c.starts_with(&canon_root))
        })
}

/// `p` with `.` and `..` components folded away (no filesystem access).
fn lexical(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The error for trusted code found in the program-writable set.
pub fn refusal(what: &str, path: &Path, workspace: &Path) -> String {
    format!(
        "configuration error: {what} {} lies in the workspace {} (or is reached through a symlink there), \
         which programs can write: lackpy never runs or imports code from it. Move it outside the workspace \
         or into {}/tools/ (python tool modules)",
        path.display(),
        workspace.display(),
        workspace.join(lackpy_beneath::CONTROL_DIR).display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_the_workspace_minus_its_control_dir() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".lackpy/tools")).unwrap();
        std::fs::write(ws.join("evil.sh"), "").unwrap();
        std::fs::write(ws.join(".lackpy/tools/ok.py"), "").unwrap();
        assert!(in_writable_set(&ws.join("evil.sh"), &ws));
        assert!(in_writable_set(Path::new("evil.sh"), &ws));
        assert!(!in_writable_set(&ws.join(".lackpy/tools/ok.py"), &ws));
        assert!(!in_writable_set(Path::new("/usr/bin/env"), &ws));
        // A symlink in the control dir pointing into the workspace.
        std::os::unix::fs::symlink(ws.join("evil.sh"), ws.join(".lackpy/tools/l.sh")).unwrap();
        assert!(in_writable_set(&ws.join(".lackpy/tools/l.sh"), &ws));
        // A symlink in the workspace pointing outside: retargetable.
        std::os::unix::fs::symlink("/usr/bin/env", ws.join("env")).unwrap();
        assert!(in_writable_set(&ws.join("env"), &ws));
        assert!(in_writable_set(&ws.join("sub/../evil.sh"), &ws));
        // A write-mode MCP server's write_paths join the set.
        let other = tempfile::tempdir().unwrap();
        let tool = other.path().join("tool.sh");
        std::fs::write(&tool, "").unwrap();
        assert!(!in_writable_set(&tool, &ws));
        register_write_paths(&ws, vec![other.path().to_path_buf()]);
        assert!(in_writable_set(&tool, &ws));
        register_write_paths(&ws, vec![]);
        assert!(!in_writable_set(&tool, &ws));
    }
}
