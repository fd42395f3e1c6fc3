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
//! What a writable MCP server's `write_paths` name outside the workspace is
//! program-writable too; those paths are not known to the providers at
//! call time (see SECURITY.md, "Known gaps").

use std::path::{Path, PathBuf};

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
    inside(&written) || std::fs::canonicalize(path).is_ok_and(|c| inside(&c))
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
#[allow(clippy::unwrap_used)]
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
    }
}
