//! Run traces: one JSON line per run, appended (`O_APPEND`, fsync'd) to
//! `<workspace>/.lackpy/traces/<YYYY-MM-DD>.jsonl`. Failed runs are traced
//! too. The trace directory is the supervisor's, not the program's: it is
//! written by path from the supervisor, never through the tools.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// One tool call, as the contract's `trace` array shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// Tool name as the program wrote it.
    pub tool: String,
    /// Positional arguments, as JSON.
    pub args: Vec<serde_json::Value>,
    /// Whether the call succeeded.
    pub ok: bool,
    /// Wall time the supervisor spent executing the call.
    pub duration_us: u64,
    /// `"Type: message"` when it failed.
    pub error: Option<String>,
    /// Bytes of the encoded result (trace file only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub result_bytes: Option<u64>,
}

/// One line of a trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// Unique run id.
    pub run_id: String,
    /// RFC 3339 UTC time the run started.
    pub time: String,
    /// SHA-256 of the program text.
    pub program_sha256: String,
    /// The program text (lossy UTF-8).
    pub program: String,
    /// Profile name.
    pub profile: String,
    /// The program's grade.
    pub grade: serde_json::Value,
    /// `full` or `lowered(-layer,...)`.
    pub jail_level: String,
    /// Every tool call, in order.
    pub calls: Vec<TraceEntry>,
    /// `ok` or the error kind.
    pub outcome: String,
    /// The contract error object, if any.
    pub error: Option<serde_json::Value>,
    /// The limit that ended the run, if one did.
    pub limit_hit: Option<String>,
    /// The run's limits.
    pub limits: serde_json::Value,
    /// Whole run, microseconds.
    pub duration_us: u64,
}

/// Directory holding a workspace's traces.
pub fn trace_dir(workspace: &Path) -> PathBuf {
    workspace.join(".lackpy").join("traces")
}

/// Append one record to today's file; fsync'd.
///
/// # Errors
/// I/O errors (the caller warns and continues: a read-only workspace must not fail runs).
pub fn append(workspace: &Path, rec: &TraceRecord) -> std::io::Result<PathBuf> {
    append_many(workspace, &[rec])
}

/// Append records (in order) to their day's files, with one `fdatasync`
/// per file rather than per record (group commit): every record is on disk
/// when this returns. Returns the last file written.
///
/// # Errors
/// I/O errors (records before the failing one may have been written).
pub fn append_many(workspace: &Path, recs: &[&TraceRecord]) -> std::io::Result<PathBuf> {
    TraceFiles::default().append_many(workspace, recs)
}

/// Most trace files [`TraceFiles`] keeps open (one per workspace and day).
const MAX_OPEN: usize = 16;

/// Trace files kept open between appends, so a busy server does not open
/// and close a file for every batch of runs. Before each use the path is
/// checked to still name the open file (same device and inode): a trace file
/// that was moved or deleted (rotated by the operator) is reopened by path.
#[derive(Debug, Default)]
pub struct TraceFiles {
    /// Most recently used last.
    open: Vec<(PathBuf, std::fs::File)>,
}

impl TraceFiles {
    /// [`append_many`], reusing this cache's open files.
    ///
    /// # Errors
    /// I/O errors (records before the failing one may have been written).
    pub fn append_many(
        &mut self,
        workspace: &Path,
        recs: &[&TraceRecord],
    ) -> std::io::Result<PathBuf> {
        let dir = trace_dir(workspace);
        let mut last = dir.clone();
        let mut dirty: Vec<PathBuf> = Vec::new();
        for rec in recs {
            let day = rec.time.get(..10).unwrap_or("unknown");
            let path = dir.join(format!("{day}.jsonl"));
            let mut line = serde_json::to_vec(rec).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let f = self.file(&dir, &path)?;
            // One write call per record so concurrent appenders never interleave within a line.
            f.write_all(&line)?;
            if !dirty.contains(&path) {
                dirty.push(path.clone());
            }
            last = path;
        }
        for path in dirty {
            if let Some((_, f)) = self.open.iter().find(|(p, _)| *p == path) {
                f.sync_data()?;
            }
        }
        Ok(last)
    }

    /// The open file for `path`, opened (and `dir` created) if needed, and
    /// moved to the most-recently-used end of the cache.
    fn file(&mut self, dir: &Path, path: &Path) -> std::io::Result<&mut std::fs::File> {
        use std::os::unix::fs::MetadataExt;
        let cached = self
            .open
            .iter()
            .position(|(p, _)| p == path)
            .map(|i| self.open.remove(i).1);
        let still_named = |f: &std::fs::File| match (std::fs::metadata(path), f.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        let f = match cached {
            Some(f) if still_named(&f) => f,
            _ => {
                std::fs::create_dir_all(dir)?;
                if self.open.len() >= MAX_OPEN {
                    self.open.remove(0);
                }
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?
            }
        };
        self.open.push((path.to_path_buf(), f));
        let last = self.open.len() - 1;
        Ok(&mut self.open[last].1)
    }
}

/// Every record of the workspace, oldest first; unreadable lines are skipped.
pub fn read_all(workspace: &Path) -> Vec<TraceRecord> {
    let Ok(rd) = std::fs::read_dir(trace_dir(workspace)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        out.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<TraceRecord>(l).ok()),
        );
    }
    out
}

/// RFC 3339 UTC timestamp with microseconds.
pub fn now_rfc3339() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (y, m, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A fresh run id: time plus 48 random bits.
pub fn new_run_id() -> String {
    let mut r = [0u8; 6];
    // SAFETY: getrandom fills the 6-byte buffer it is given.
    let n = unsafe { libc::getrandom(r.as_mut_ptr().cast(), r.len(), 0) };
    if n != 6 {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        r.copy_from_slice(&t.to_le_bytes()[..6]);
    }
    let ts: String = now_rfc3339()
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    format!(
        "{ts}-{}",
        r.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_422), (2025, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    /// A minimal record with this id and time.
    fn record(id: &str, time: &str) -> TraceRecord {
        TraceRecord {
            run_id: id.into(),
            time: time.into(),
            program_sha256: "00".into(),
            program: "1+1".into(),
            profile: "(default)".into(),
            grade: serde_json::json!({"w": 0, "d": 0}),
            jail_level: "full".into(),
            calls: vec![],
            outcome: "ok".into(),
            error: None,
            limit_hit: None,
            limits: serde_json::json!({}),
            duration_us: 1,
        }
    }

    #[test]
    fn append_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let rec = record(&new_run_id(), &now_rfc3339());
        append(d.path(), &rec).unwrap();
        append(d.path(), &rec).unwrap();
        let all = read_all(d.path());
        assert_eq!(all, vec![rec.clone(), rec]);
        assert_eq!(new_run_id().len(), 14 + 1 + 12);
    }

    #[test]
    fn append_many_keeps_order_across_day_files() {
        let d = tempfile::tempdir().unwrap();
        let mk = |id: &str, time: &str| TraceRecord {
            jail_level: "lowered(-seccomp)".into(),
            ..record(id, time)
        };
        let a = mk("a", "2026-11-29T23:59:59Z");
        let b = mk("b", "2026-11-30T00:00:00Z");
        let c = mk("c", "2026-11-30T00:00:01Z");
        let last = append_many(d.path(), &[&a, &b, &c]).unwrap();
        assert!(last.ends_with("2026-11-30.jsonl"), "{}", last.display());
        append_many(d.path(), &[]).unwrap();
        let ids: Vec<String> = read_all(d.path()).into_iter().map(|r| r.run_id).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn cached_files_follow_rotation_and_deletion() {
        let d = tempfile::tempdir().unwrap();
        let mk = |id: &str| record(id, "2026-11-30T10:00:00Z");
        let ids = |p: &Path| -> Vec<String> {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<TraceRecord>(l).ok())
                .map(|r| r.run_id)
                .collect()
        };
        let mut files = TraceFiles::default();
        let path = files.append_many(d.path(), &[&mk("a")]).unwrap();
        files.append_many(d.path(), &[&mk("b")]).unwrap();
        assert_eq!(ids(&path), ["a", "b"]);
        // Rotated away: the next record starts a new file at the same path.
        let rotated = d.path().join("rotated.jsonl");
        std::fs::rename(&path, &rotated).unwrap();
        files.append_many(d.path(), &[&mk("c")]).unwrap();
        assert_eq!(ids(&rotated), ["a", "b"]);
        assert_eq!(ids(&path), ["c"]);
        // Deleted, directory and all: recreated.
        std::fs::remove_dir_all(trace_dir(d.path())).unwrap();
        files.append_many(d.path(), &[&mk("d")]).unwrap();
        assert_eq!(ids(&path), ["d"]);
    }
}
