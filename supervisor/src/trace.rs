//! Run traces: one JSON line per run, appended (`O_APPEND`, fsync'd) to
//! `<workspace>/.lackpy/traces/<YYYY-MM-DD>.jsonl` (rotated to
//! `<YYYY-MM-DD>_NNN.jsonl` when a file reaches its size cap). Failed runs
//! are traced too. The trace directory is the supervisor's, not the
//! program's: it is written by the supervisor beneath the workspace's
//! descriptor ([`lackpy_beneath`]), never through the tools, and never
//! through a symlink: a symlinked `.lackpy`, `traces/` or trace file is
//! refused and reported, not followed.
//!
//! What a trace keeps is bounded ([`TraceLimits`], the `[trace]` config
//! section): each argument up to `arg_bytes` (a longer one is kept as a
//! prefix, its size and its SHA-256), each run's calls up to `run_bytes`
//! (later calls keep their name, outcome and time, their arguments only
//! as size and digest), each file up to `file_bytes`, and the whole
//! directory up to `total_bytes` (the oldest files are removed).

use crate::spawn::Worker;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

use lackpy_beneath::{Dir, Kind};
pub use lackpy_policy::config::TraceLimits;

/// Directory holding a workspace's traces (for messages; it is always
/// opened beneath the workspace's descriptor, see [`traces_dir`]).
pub fn trace_dir(workspace: &Path) -> PathBuf {
    workspace.join(lackpy_beneath::CONTROL_DIR).join("traces")
}

/// Open `<workspace>/.lackpy/traces` beneath the workspace's descriptor,
/// refusing any symlink on the way (created when `create`; `None` when
/// absent and not created).
///
/// # Errors
/// [`lackpy_beneath::Error::Symlink`] for a symlinked `.lackpy` or
/// `traces`, other I/O errors.
pub fn traces_dir(workspace: &Path, create: bool) -> lackpy_beneath::Result<Option<Dir>> {
    match lackpy_beneath::open_control(workspace, create)? {
        Some(ctl) => ctl.subdir("traces", create),
        None => Ok(None),
    }
}

/// Check, without writing, that a trace of `workspace` can be written
/// without following a symlink: `.lackpy`, `traces/` and today's file
/// (when they exist) are real. The run's report carries the refusal as a
/// warning.
///
/// # Errors
/// What [`TraceFiles`] would refuse.
pub fn check_writable(workspace: &Path) -> lackpy_beneath::Result<()> {
    let Some(dir) = traces_dir(workspace, false)? else {
        return Ok(());
    };
    let day = &now_rfc3339()[..10];
    match dir.stamp(&format!("{day}.jsonl")) {
        Some(st) if st.kind == Kind::Symlink => Err(lackpy_beneath::Error::Symlink {
            path: dir.path().join(format!("{day}.jsonl")),
        }),
        Some(st) if st.kind != Kind::File => Err(lackpy_beneath::Error::NotRegular {
            path: dir.path().join(format!("{day}.jsonl")),
        }),
        _ => Ok(()),
    }
}

/// Append one record to today's file; fsync'd.
///
/// # Errors
/// I/O errors and refused symlinks (the caller warns and continues: a
/// read-only workspace must not fail runs).
pub fn append(workspace: &Path, rec: &TraceRecord) -> lackpy_beneath::Result<PathBuf> {
    append_many(workspace, &[rec], &TraceLimits::default())
}

/// Append records (in order) to their day's files, with one `fdatasync`
/// per file rather than per record (group commit): every record is on disk
/// when this returns. Returns the last file written.
///
/// # Errors
/// As [`append`] (records before the failing one may have been written).
pub fn append_many(
    workspace: &Path,
    recs: &[&TraceRecord],
    limits: &TraceLimits,
) -> lackpy_beneath::Result<PathBuf> {
    TraceFiles::default().append_many(workspace, recs, limits)
}

/// Most trace files [`TraceFiles`] keeps open (one per workspace and day).
const MAX_OPEN: usize = 16;
/// Most trace files (`*.jsonl`) a trace directory may hold before listing
/// it is refused (other entries are not counted: [`is_trace_file`]).
/// Why: `trace list` and the size cap read the listing; a directory a
/// program filled by other means must not make them unbounded.
const MAX_FILES: usize = 100_000;
/// Longest trace line read back, in bytes. Why: a record is bounded by the
/// source limit plus the run budget; a longer line was not written by us.
const MAX_LINE: u64 = 64 * 1024 * 1024;
/// Bytes of a reader's `max_bytes` that one JSON value of the records it
/// keeps counts for ([`read_latest`]: `max_bytes / BYTES_PER_VALUE`
/// values at most, counted before parsing). Why: a parsed value costs
/// far more than its bytes (a `0,` is two bytes, ~80 parsed and more
/// again as a reply is built), and trace files are control files a
/// cloned repository can hold: 12 MiB of records of `0,0,…` took `lackpy
/// trace list` to 461 MiB, one MCP `traces` call over 4 MiB of them
/// `lackpy mcp` to 316 MiB. Real records hold a value per 6 bytes or
/// more (a record's arguments are bounded by `run_bytes`).
pub const BYTES_PER_VALUE: usize = 16;
/// Rotation suffixes per day (`_001` … `_999`).
const MAX_ROTATIONS: u32 = 999;

/// One open trace file.
#[derive(Debug)]
struct Open {
    workspace: PathBuf,
    name: String,
    file: std::fs::File,
    size: u64,
}

/// Trace files kept open between appends, so a busy server does not open
/// and close a file for every batch of runs. Before each batch the
/// workspace's trace directory is opened again beneath the workspace (no
/// symlink followed) and each cached file is checked to still be the
/// file of that name there (same device and inode): a trace file that was
/// moved or deleted (rotated by the operator) is reopened by name.
#[derive(Debug, Default)]
pub struct TraceFiles {
    /// Most recently used last.
    open: Vec<Open>,
    /// Current rotation index per (workspace, day).
    rotation: Vec<(PathBuf, String, u32)>,
}

/// The file name of a day's `index`th file.
fn day_file(day: &str, index: u32) -> String {
    if index == 0 {
        format!("{day}.jsonl")
    } else {
        format!("{day}_{index:03}.jsonl")
    }
}

/// Whether a name in the traces directory is a trace file's: only these
/// are listed, counted against [`MAX_FILES`], capped and read. Why: a
/// directory with 100,001 other entries (a cloned repository's) made
/// every listing fail, so the total cap was never enforced (eight 600 KB
/// runs: 4.8 MB under `total_mb = 2`) and `lackpy trace list` showed
/// nothing (redteam-14).
fn is_trace_file(name: &str) -> bool {
    name.ends_with(".jsonl")
}

/// A trace file's modification time as its age: files are removed
/// oldest first and read newest first by it. A time in the future counts
/// as the oldest: lackpy never writes one, but an archive unpacked into
/// the workspace can carry one (a cloned repository's files get the time
/// of the clone), which would otherwise make a foreign file the newest
/// for good.
fn age_key(mtime_ns: i128) -> i128 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
    if mtime_ns > now {
        i128::MIN
    } else {
        mtime_ns
    }
}

/// The first rotation index of `day` with no file in `dir`, if any.
fn free_rotation(dir: &Dir, day: &str) -> Option<u32> {
    (0..=MAX_ROTATIONS).find(|&i| dir.stamp(&day_file(day, i)).is_none())
}

/// The day part of a record's time (`YYYY-MM-DD`), or `unknown` for a
/// time that is not one (records are ours, but the name must stay plain).
fn day_of(time: &str) -> &str {
    match time.get(..10) {
        Some(d) if d.bytes().all(|b| b.is_ascii_digit() || b == b'-') => d,
        _ => "unknown",
    }
}

impl TraceFiles {
    /// [`append_many`], reusing this cache's open files.
    ///
    /// # Errors
    /// As [`append_many`].
    pub fn append_many(
        &mut self,
        workspace: &Path,
        recs: &[&TraceRecord],
        limits: &TraceLimits,
    ) -> lackpy_beneath::Result<PathBuf> {
        let Some(dir) = traces_dir(workspace, true)? else {
            return Ok(trace_dir(workspace));
        };
        let mut last = dir.path().to_path_buf();
        let mut dirty: Vec<String> = Vec::new();
        let mut rotated = false;
        for rec in recs {
            let day = day_of(&rec.time).to_string();
            let mut line = serde_json::to_vec(rec).map_err(|e| lackpy_beneath::Error::Io {
                path: dir.path().to_path_buf(),
                source: std::io::Error::other(e),
            })?;
            line.push(b'\n');
            let mut index = self.rotation_index(workspace, &dir, &day);
            let mut f = self.file(workspace, &dir, &day_file(&day, index))?;
            // Rotate when this line would take the file past its cap (a
            // single line larger than the cap still goes to a fresh file).
            // Past the last suffix, the first free one is taken: a foreign
            // `<day>_999.jsonl` (a cloned repository's) made the day's
            // first record go there and stay, the file growing past
            // `file_bytes` and `total_bytes` with no rotation to enforce
            // either (redteam-14).
            while f.size > 0 && f.size + line.len() as u64 > limits.file_bytes {
                rotated = true;
                let next = if index < MAX_ROTATIONS {
                    Some(index + 1)
                } else {
                    free_rotation(&dir, &day)
                };
                let Some(next) = next else {
                    break; // every suffix taken: the total cap still applies
                };
                index = next;
                self.set_rotation(workspace, &day, index);
                f = self.file(workspace, &dir, &day_file(&day, index))?;
            }
            // One write call per record so concurrent appenders never interleave within a line.
            f.file
                .write_all(&line)
                .map_err(|source| lackpy_beneath::Error::Io {
                    path: dir.path().join(&f.name),
                    source,
                })?;
            f.size += line.len() as u64;
            if !dirty.contains(&f.name) {
                dirty.push(f.name.clone());
            }
            last = dir.path().join(&f.name);
        }
        let written = dirty.clone();
        for name in dirty {
            if let Some(o) = self
                .open
                .iter()
                .find(|o| o.workspace == workspace && o.name == name)
            {
                o.file
                    .sync_data()
                    .map_err(|source| lackpy_beneath::Error::Io {
                        path: dir.path().join(&name),
                        source,
                    })?;
            }
        }
        if rotated {
            self.enforce_total(workspace, &dir, limits.total_bytes, &written)?;
        }
        Ok(last)
    }

    /// The current rotation index of `day` in `workspace` (found by
    /// listing the directory the first time).
    fn rotation_index(&mut self, workspace: &Path, dir: &Dir, day: &str) -> u32 {
        if let Some((_, _, i)) = self
            .rotation
            .iter()
            .find(|(w, d, _)| w == workspace && d == day)
        {
            return *i;
        }
        let prefix = format!("{day}_");
        let index = dir
            .entries_where(MAX_FILES, is_trace_file)
            .unwrap_or_default()
            .iter()
            .filter_map(|(n, _)| {
                n.strip_prefix(&prefix)?
                    .strip_suffix(".jsonl")?
                    .parse::<u32>()
                    .ok()
            })
            .max()
            .unwrap_or(0)
            .min(MAX_ROTATIONS);
        self.set_rotation(workspace, day, index);
        index
    }

    fn set_rotation(&mut self, workspace: &Path, day: &str, index: u32) {
        self.rotation
            .retain(|(w, d, _)| !(w == workspace && d == day));
        if self.rotation.len() >= MAX_OPEN {
            self.rotation.remove(0);
        }
        self.rotation
            .push((workspace.to_path_buf(), day.to_string(), index));
    }

    /// The open file `name` of `dir`, opened if needed (never through a
    /// symlink), moved to the most-recently-used end of the cache.
    fn file(
        &mut self,
        workspace: &Path,
        dir: &Dir,
        name: &str,
    ) -> lackpy_beneath::Result<&mut Open> {
        use std::os::unix::fs::MetadataExt;
        let cached = self
            .open
            .iter()
            .position(|o| o.workspace == workspace && o.name == name)
            .map(|i| self.open.remove(i));
        let still_named = |o: &Open| match (dir.stamp(name), o.file.metadata()) {
            (Some(a), Ok(b)) => a.kind == Kind::File && a.dev == b.dev() && a.ino == b.ino(),
            _ => false,
        };
        let o = match cached {
            Some(o) if still_named(&o) => o,
            _ => {
                if self.open.len() >= MAX_OPEN {
                    self.open.remove(0);
                }
                let file = dir.open_append(name)?;
                let size = file.metadata().map(|m| m.len()).unwrap_or(0);
                Open {
                    workspace: workspace.to_path_buf(),
                    name: name.to_string(),
                    file,
                    size,
                }
            }
        };
        self.open.push(o);
        let last = self.open.len() - 1;
        Ok(&mut self.open[last])
    }

    /// Remove the oldest trace files until the directory holds at most
    /// `total` bytes, never one of `written` (the files this append just
    /// wrote). "Oldest" is by modification time (then name), which no
    /// program can set: trace files are control files a cloned repository
    /// can hold, and ordered by name, a foreign `9999-12-31.jsonl` larger
    /// than `total` was never removed (it sorted last, "the newest") while
    /// every rotation removed the user's traces, the file just written
    /// included, so the run's record was lost (redteam-14).
    fn enforce_total(
        &mut self,
        workspace: &Path,
        dir: &Dir,
        total: u64,
        written: &[String],
    ) -> lackpy_beneath::Result<()> {
        let mut files: Vec<(i128, String, u64)> = dir
            .entries_where(MAX_FILES, is_trace_file)?
            .into_iter()
            .filter(|(_, k)| *k == Kind::File)
            .filter_map(|(n, _)| {
                let st = dir.stamp(&n)?;
                Some((age_key(st.mtime_ns), n, st.size))
            })
            .collect();
        let mut sum: u64 = files.iter().map(|f| f.2).sum();
        files.retain(|(_, n, _)| !written.contains(n));
        files.sort();
        for (_, name, size) in &files {
            if sum <= total {
                break;
            }
            dir.remove(name)?;
            self.open
                .retain(|o| !(o.workspace == workspace && &o.name == name));
            sum = sum.saturating_sub(*size);
            tracing::info!("trace cap: removed {}", dir.path().join(name).display());
        }
        Ok(())
    }
}

/// Every record of the workspace, oldest first; unreadable lines are
/// skipped. A refused trace directory (a symlink) is warned about on
/// stderr and yields nothing.
pub fn read_all(workspace: &Path) -> Vec<TraceRecord> {
    match try_read_all(workspace) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("lackpy: warning: traces not read: {e}");
            Vec::new()
        }
    }
}

/// The newest `limit` records whose run id `keep` accepts, oldest first,
/// holding at most `max_bytes` of their trace lines and `max_bytes /`
/// [`BYTES_PER_VALUE`] JSON values, counted before they are parsed (older
/// matches beyond any bound are left out). Files are read newest first and reading
/// stops once enough are found; only matching records are parsed whole,
/// and only those kept are held. Why not [`read_all`] and a filter: it
/// holds every record of up to `total_mb` of traces, which a client of
/// `lackpy mcp`/`serve` can fill with its own runs; six concurrent
/// `traces(limit=1)` over 330 MB of traces took the server to 2.5 GiB.
/// A refused trace directory is warned about on stderr and yields nothing.
pub fn read_latest(
    workspace: &Path,
    limit: usize,
    max_bytes: usize,
    keep: impl Fn(&str) -> bool,
) -> Vec<TraceRecord> {
    read_latest_capped(workspace, limit, max_bytes, keep).0
}

/// [`read_latest`], and whether a matching record was left out for
/// `max_bytes` (not for `limit`): fewer than `limit` came back although
/// more were there.
pub fn read_latest_capped(
    workspace: &Path,
    limit: usize,
    max_bytes: usize,
    keep: impl Fn(&str) -> bool,
) -> (Vec<TraceRecord>, bool) {
    match try_read_latest(workspace, limit, max_bytes, keep) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("lackpy: warning: traces not read: {e}");
            (Vec::new(), false)
        }
    }
}

fn try_read_latest(
    workspace: &Path,
    limit: usize,
    max_bytes: usize,
    keep: impl Fn(&str) -> bool,
) -> lackpy_beneath::Result<(Vec<TraceRecord>, bool)> {
    use std::collections::VecDeque;
    /// A record's run id alone (the rest of the line is only scanned).
    #[derive(Deserialize)]
    struct RunId {
        run_id: String,
    }
    let Some(dir) = traces_dir(workspace, false)? else {
        return Ok((Vec::new(), false));
    };
    // Newest first by modification time, then name (day, then rotation),
    // as rotation removes them: ordered by name alone, a foreign
    // `9999-12-31.jsonl` (a cloned repository's) came first, and its
    // forged records were shown as the newest runs, hiding the real ones
    // or standing in for a run id (redteam-14).
    let mut names: Vec<(i128, String)> = trace_files(&dir)?
        .into_iter()
        .map(|n| (dir.stamp(&n).map_or(0, |s| age_key(s.mtime_ns)), n))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    let names = names.into_iter().map(|(_, n)| n);
    let mut capped = false;
    // The JSON values the kept lines hold, counted before they are parsed.
    let max_values = max_bytes / BYTES_PER_VALUE;
    // Matching lines, kept raw (parsed whole only once kept for good),
    // each with its count of values.
    let mut kept: VecDeque<Vec<u8>> = VecDeque::new();
    let (mut kept_bytes, mut kept_values) = (0usize, 0usize);
    for name in names {
        if kept.len() >= limit {
            break;
        }
        if kept_bytes >= max_bytes || kept_values >= max_values {
            capped = true;
            break;
        }
        // This file's newest matches, within what is left of the bounds.
        let room = limit - kept.len();
        let (room_bytes, room_values) = (max_bytes - kept_bytes, max_values - kept_values);
        let mut file: VecDeque<(Vec<u8>, usize)> = VecDeque::new();
        let (mut file_bytes, mut file_values) = (0usize, 0usize);
        each_line(&dir, &name, |line| {
            let Ok(id) = serde_json::from_slice::<RunId>(line) else {
                return;
            };
            if !keep(&id.run_id) {
                return;
            }
            let values = crate::providers::count_values(line);
            file_bytes += line.len();
            file_values = file_values.saturating_add(values);
            file.push_back((std::mem::take(line), values));
            while file.len() > room || file_bytes > room_bytes || file_values > room_values {
                capped |= file.len() <= room;
                let Some((old, n)) = file.pop_front() else {
                    break;
                };
                file_bytes = file_bytes.saturating_sub(old.len());
                file_values = file_values.saturating_sub(n);
            }
        })?;
        kept_bytes += file_bytes;
        kept_values += file_values;
        while let Some((x, _)) = file.pop_back() {
            kept.push_front(x);
        }
    }
    let mut out: Vec<TraceRecord> = kept
        .iter()
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect();
    out.sort_by(|a, b| a.time.cmp(&b.time));
    Ok((out, capped))
}

/// [`read_all`], with the refusal as an error.
///
/// # Errors
/// A symlinked `.lackpy`, `traces/` or trace file; I/O errors.
pub fn try_read_all(workspace: &Path) -> lackpy_beneath::Result<Vec<TraceRecord>> {
    let Some(dir) = traces_dir(workspace, false)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for name in trace_files(&dir)? {
        each_line(&dir, &name, |line| {
            if let Ok(rec) = serde_json::from_slice::<TraceRecord>(line) {
                out.push(rec);
            }
        })?;
    }
    // Files are read in name order (day, then rotation); keep time order.
    out.sort_by(|a, b| a.time.cmp(&b.time));
    Ok(out)
}

/// The trace files (`*.jsonl`) of the traces directory `dir`, in the
/// directory's order; a symlink, or anything but a regular file, among them
/// is refused (never followed).
fn trace_files(dir: &Dir) -> lackpy_beneath::Result<Vec<String>> {
    let mut names = Vec::new();
    for (name, kind) in dir.entries_where(MAX_FILES, is_trace_file)? {
        if kind != Kind::File {
            return Err(match kind {
                Kind::Symlink => lackpy_beneath::Error::Symlink {
                    path: dir.path().join(&name),
                },
                _ => lackpy_beneath::Error::NotRegular {
                    path: dir.path().join(&name),
                },
            });
        }
        names.push(name);
    }
    Ok(names)
}

/// Call `f` with each line of the trace file `name` of `dir`, in order
/// (a line longer than [`MAX_LINE`] comes in pieces of that size, which do
/// not parse as records); `f` may take the line's buffer. A file gone since
/// it was listed has no lines.
fn each_line(dir: &Dir, name: &str, mut f: impl FnMut(&mut Vec<u8>)) -> lackpy_beneath::Result<()> {
    use std::io::{BufRead, Read};
    let Some(file) = dir.open_read(name)? else {
        return Ok(());
    };
    let mut r = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut r)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|source| lackpy_beneath::Error::Io {
                path: dir.path().join(name),
                source,
            })?;
        if n == 0 {
            return Ok(());
        }
        f(&mut line);
    }
}

/// Bounds one run's trace entries: each argument and error message to
/// `arg_bytes`, the run's entries together to `run_bytes`.
#[derive(Debug)]
pub struct RunBudget {
    limits: TraceLimits,
    used: u64,
}

impl RunBudget {
    /// A fresh budget for one run.
    pub fn new(limits: &TraceLimits) -> Self {
        RunBudget {
            limits: *limits,
            used: 0,
        }
    }

    /// The traced form of one argument: the JSON value itself when its
    /// text fits `arg_bytes` and the run's budget, else
    /// `{"$truncated": {"prefix", "bytes", "sha256"}}` (a prefix of its JSON
    /// text, the full size and digest), or once the run's budget is used
    /// up `{"$omitted": {"bytes", "sha256"}}`.
    pub fn arg(&mut self, v: &lackpy_policy::wire::Data) -> serde_json::Value {
        let json = crate::json::to_json(v);
        let text = serde_json::to_string(&json).unwrap_or_default();
        self.bounded(json, &text)
    }

    /// The traced form of an error message (bounded like an argument, kept
    /// as text).
    pub fn message(&mut self, m: String) -> String {
        let cap = usize::try_from(self.limits.arg_bytes).unwrap_or(usize::MAX);
        if m.len() <= cap && self.take(m.len() as u64) {
            return m;
        }
        let keep = if self.take(cap as u64) { cap } else { 0 };
        format!(
            "{}… [{} bytes, sha256 {}]",
            prefix(&m, keep),
            m.len(),
            crate::sha256::hex(m.as_bytes())
        )
    }

    fn take(&mut self, n: u64) -> bool {
        if self.used.saturating_add(n) > self.limits.run_bytes {
            return false;
        }
        self.used += n;
        true
    }

    fn bounded(&mut self, json: serde_json::Value, text: &str) -> serde_json::Value {
        let len = text.len() as u64;
        // Too deep a value is kept as text: kept as JSON it would make the
        // whole record unreadable (and the run invisible to the readers).
        let shallow = depth_within(&json, MAX_TRACED_DEPTH);
        if shallow && len <= self.limits.arg_bytes && self.take(len) {
            return json;
        }
        let digest = crate::sha256::hex(text.as_bytes());
        let cap = usize::try_from(self.limits.arg_bytes).unwrap_or(usize::MAX);
        if self.take(cap as u64) {
            serde_json::json!({"$truncated": {"prefix": prefix(text, cap), "bytes": len, "sha256": digest}})
        } else {
            serde_json::json!({"$omitted": {"bytes": len, "sha256": digest}})
        }
    }
}

/// Deepest nesting of an argument kept as JSON in a record; deeper ones are
/// kept as a `$truncated` prefix of their text. Why 64: the readers parse a
/// record with serde_json, which refuses 128 levels; an argument sits 4
/// levels down (record, `calls`, entry, `args`), and a program passing a
/// 150-deep list to any tool made its whole run's record unreadable, so
/// `lackpy trace list`/`show` and the MCP `traces` tool never showed it.
pub const MAX_TRACED_DEPTH: usize = 64;

/// Whether `v` nests at most `max` levels of arrays and objects (counted
/// without recursion).
fn depth_within(v: &serde_json::Value, max: usize) -> bool {
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
            serde_json::Value::Array(a) => Box::new(a.iter()),
            serde_json::Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        if d >= max {
            return false;
        }
        stack.extend(children.map(|c| (c, d + 1)));
    }
    true
}

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
fn prefix(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
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

impl TraceRecord {
    /// The trace line of a finished run: its request, its report, when it
    /// started (`time`, RFC 3339) and how long it took.
    pub(crate) fn of_run(
        req: &crate::RunRequest,
        report: &crate::RunReport,
        time: String,
        took: Duration,
    ) -> TraceRecord {
        let error = report.error.as_ref();
        TraceRecord {
            run_id: report.run_id.clone(),
            time,
            program_sha256: crate::sha256::hex(&req.source),
            program: String::from_utf8_lossy(&req.source).into_owned(),
            profile: req.profile.name.clone(),
            grade: serde_json::to_value(report.grade).unwrap_or_default(),
            jail_level: report.jail_level.clone(),
            calls: report.trace.clone(),
            outcome: match error {
                None => "ok".into(),
                Some(e) => serde_json::to_value(e.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
            },
            error: error.and_then(|e| serde_json::to_value(e).ok()),
            limit_hit: error
                .filter(|e| e.kind == lackpy_policy::wire::ErrorKind::Limit)
                .map(|e| e.type_name.clone()),
            limits: serde_json::to_value(&req.limits).unwrap_or_default(),
            duration_us: took.as_micros() as u64,
        }
    }
}

/// Work done after a run returns: reaping its worker, writing its trace.
enum Job {
    Reap(Box<Worker>),
    Trace(PathBuf, Box<TraceRecord>, TraceLimits),
    /// Answer once every trace queued before this one is on disk.
    Flush(std::sync::mpsc::SyncSender<()>),
}

impl Job {
    fn run(self) {
        match self {
            Job::Reap(mut w) => {
                w.kill_and_reap();
            }
            Job::Trace(ws, rec, limits) => {
                if let Err(e) = append_many(&ws, &[&rec], &limits) {
                    trace_warning(&ws, &e);
                }
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Most jobs handled per batch of [`background_loop`].
const BG_BATCH: usize = 256;

/// How long [`background_loop`] waits for more runs' traces before writing a
/// batch. Why 10 ms: a busy server then pays one `fdatasync` (a disk flush,
/// and a VM exit on this kind of machine) and one wake-up of this thread
/// per ~20 back-to-back runs instead of per run or two, and a trace is
/// still on disk milliseconds after its run ended. Nobody waits on it:
/// results go out before their traces are written, a
/// [`crate::Supervisor::flush_traces`] ends the wait at once, and so does the
/// supervisor shutting down (`lackpy run` exits without waiting).
/// (`lackpy mcp`, 300 sequential calls, interleaved: 2 ms → 10 ms took this
/// thread from 1.19 to 0.44 context switches per call and p50 from
/// 0.71–0.90 to 0.68–0.70 ms on a loaded machine.)
const GROUP_COMMIT: Duration = Duration::from_millis(10);

/// Reaps and trace appends, off the runs' critical path. Jobs that queued
/// up meanwhile (and, when there are traces, those arriving within
/// [`GROUP_COMMIT`], a wait no new job interrupts) are handled as one
/// batch: the traces grouped by workspace in arrival order with one
/// `fdatasync` per file (group commit), then the flush requests are
/// answered, then the reaps.
fn background_loop(rx: std::sync::mpsc::Receiver<Job>) {
    use std::sync::mpsc::TryRecvError;
    let mut files = TraceFiles::default();
    let mut limits = TraceLimits::default();
    while let Ok(first) = rx.recv() {
        let since = Instant::now();
        let mut batch = vec![first];
        let mut closed = false;
        loop {
            while batch.len() < BG_BATCH {
                match rx.try_recv() {
                    Ok(j) => batch.push(j),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        closed = true;
                        break;
                    }
                }
            }
            let wait = !closed
                && batch.len() < BG_BATCH
                && batch.iter().any(|j| matches!(j, Job::Trace(..)))
                && !batch.iter().any(|j| matches!(j, Job::Flush(_)));
            let left = GROUP_COMMIT.saturating_sub(since.elapsed());
            if !wait || left.is_zero() {
                break;
            }
            // Sleep through the window without being woken by every run's
            // job (senders do not wake this thread): only a flush request
            // or the supervisor shutting down unparks it.
            std::thread::park_timeout(left);
        }
        let mut traces: Vec<(PathBuf, Vec<Box<TraceRecord>>)> = Vec::new();
        let mut flushes = Vec::new();
        let mut reaps = Vec::new();
        for job in batch {
            match job {
                Job::Trace(ws, rec, l) => {
                    limits = l;
                    match traces.iter_mut().find(|(w, _)| *w == ws) {
                        Some((_, recs)) => recs.push(rec),
                        None => traces.push((ws, vec![rec])),
                    }
                }
                Job::Flush(done) => flushes.push(done),
                reap => reaps.push(reap),
            }
        }
        for (ws, recs) in traces {
            let refs: Vec<&TraceRecord> = recs.iter().map(|r| &**r).collect();
            if let Err(e) = files.append_many(&ws, &refs, &limits) {
                trace_warning(&ws, &e);
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
        // Reaps last: a killed worker's exit (its namespaces torn down)
        // proceeds meanwhile, so the wait overlaps the trace's fdatasync
        // instead of coming before it (`lackpy run` waits for both).
        for reap in reaps {
            reap.run();
        }
    }
}

fn trace_warning(ws: &std::path::Path, e: &lackpy_beneath::Error) {
    tracing::warn!(
        "could not write the trace to {}: {e}",
        trace_dir(ws).display()
    );
    // A refused symlink was already reported with the run (stderr and the
    // report's warnings) by `check_writable`.
    if !e.is_symlink() {
        eprintln!(
            "lackpy: warning: trace not written ({}): {e}",
            trace_dir(ws).display()
        );
    }
}

/// The background thread of a [`crate::Supervisor`]: trace commits and
/// reaps, off the runs' critical path. Dropping it finishes every job
/// queued (traces on disk, workers reaped) and ends the thread.
pub(crate) struct Background {
    jobs: std::sync::Mutex<Option<std::sync::mpsc::Sender<Job>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Start the thread.
    pub(crate) fn start() -> std::io::Result<Self> {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lackpy-bg".into())
            .spawn(move || background_loop(rx))?;
        Ok(Background {
            jobs: std::sync::Mutex::new(Some(tx)),
            thread: Some(thread),
        })
    }

    /// Append `rec` to `workspace`'s traces (group-committed, in order).
    pub(crate) fn commit(&self, workspace: PathBuf, rec: TraceRecord, limits: TraceLimits) {
        self.submit(Job::Trace(workspace, Box::new(rec), limits));
    }

    /// Wait (up to 5 s) until every trace committed before is on disk.
    pub(crate) fn flush(&self) {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.submit(Job::Flush(tx));
        self.wake();
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }

    /// Get rid of a killed (or dead) worker. A forked worker is reaped by
    /// its zygote, so dropping it only closes its descriptors; our own
    /// child is waited for on the background thread.
    pub(crate) fn dispose(&self, worker: Worker) {
        if worker.is_forked() {
            drop(worker);
        } else {
            self.submit(Job::Reap(Box::new(worker)));
        }
    }

    /// End the thread's group-commit wait now.
    fn wake(&self) {
        if let Some(t) = self.thread.as_ref() {
            t.thread().unpark();
        }
    }

    /// Hand a job to the thread (or do it here if it is gone).
    fn submit(&self, job: Job) {
        let mut job = Some(job);
        if let Ok(tx) = self.jobs.lock() {
            if let Some(tx) = tx.as_ref() {
                if let Some(j) = job.take() {
                    if let Err(std::sync::mpsc::SendError(back)) = tx.send(j) {
                        job = Some(back);
                    }
                }
            }
        }
        if let Some(j) = job {
            j.run();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Finish pending traces and reaps.
        if let Ok(mut tx) = self.jobs.lock() {
            tx.take();
        }
        self.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
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
        let l = TraceLimits::default();
        let last = append_many(d.path(), &[&a, &b, &c], &l).unwrap();
        assert!(last.ends_with("2026-11-30.jsonl"), "{}", last.display());
        append_many(d.path(), &[], &l).unwrap();
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
        let l = TraceLimits::default();
        let path = files.append_many(d.path(), &[&mk("a")], &l).unwrap();
        files.append_many(d.path(), &[&mk("b")], &l).unwrap();
        assert_eq!(ids(&path), ["a", "b"]);
        // Rotated away: the next record starts a new file at the same path.
        let rotated = d.path().join("rotated.jsonl");
        std::fs::rename(&path, &rotated).unwrap();
        files.append_many(d.path(), &[&mk("c")], &l).unwrap();
        assert_eq!(ids(&rotated), ["a", "b"]);
        assert_eq!(ids(&path), ["c"]);
        // Deleted, directory and all: recreated.
        std::fs::remove_dir_all(trace_dir(d.path())).unwrap();
        files.append_many(d.path(), &[&mk("d")], &l).unwrap();
        assert_eq!(ids(&path), ["d"]);
    }

    #[test]
    fn symlinked_trace_paths_are_refused_not_followed() {
        use std::os::unix::fs::symlink;
        let rec = record("a", "2026-11-30T10:00:00Z");
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        // .lackpy itself, traces/, and the day's file, each a symlink.
        type Plant<'a> = &'a dyn Fn(&Path);
        let cases: [(&str, Plant); 3] = [
            (".lackpy", &|ws: &Path| {
                symlink(outside.path(), ws.join(".lackpy")).unwrap()
            }),
            ("traces", &|ws: &Path| {
                std::fs::create_dir(ws.join(".lackpy")).unwrap();
                symlink(outside.path(), ws.join(".lackpy/traces")).unwrap();
            }),
            ("file", &|ws: &Path| {
                std::fs::create_dir_all(ws.join(".lackpy/traces")).unwrap();
                symlink(&victim, ws.join(".lackpy/traces/2026-11-30.jsonl")).unwrap();
            }),
        ];
        for (what, plant) in cases {
            let d = tempfile::tempdir().unwrap();
            plant(d.path());
            let e = append(d.path(), &rec).unwrap_err();
            assert!(e.is_symlink(), "{what}: {e}");
            assert!(try_read_all(d.path()).is_err(), "{what}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep", "{what}");
            assert_eq!(
                std::fs::read_dir(outside.path()).unwrap().count(),
                1,
                "{what}"
            );
        }
    }

    #[test]
    fn files_rotate_and_the_total_is_capped() {
        let d = tempfile::tempdir().unwrap();
        let limits = TraceLimits {
            file_bytes: 2000,
            total_bytes: 5000,
            ..TraceLimits::default()
        };
        let mut files = TraceFiles::default();
        for i in 0..60 {
            let r = record(&format!("r{i:03}"), "2026-11-30T10:00:00Z");
            files.append_many(d.path(), &[&r], &limits).unwrap();
        }
        let dir = trace_dir(d.path());
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let total: u64 = names
            .iter()
            .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
            .sum();
        assert!(names.len() >= 2, "{names:?}");
        assert!(total <= 5000 + 2000, "{total} {names:?}");
        for n in &names {
            assert!(std::fs::metadata(dir.join(n)).unwrap().len() <= 2000, "{n}");
        }
        // The newest record survived, the oldest were dropped with their file.
        let ids: Vec<String> = read_all(d.path()).into_iter().map(|r| r.run_id).collect();
        assert_eq!(ids.last().map(String::as_str), Some("r059"));
        assert!(!ids.contains(&"r000".to_string()), "{ids:?}");
    }

    /// A foreign trace file (a cloned repository's) named to sort last
    /// and larger than the cap: ordered by name, it was "the newest" and
    /// never removed, and every rotation removed the files just written.
    #[test]
    fn a_foreign_file_named_to_sort_last_is_removed_first() {
        let d = tempfile::tempdir().unwrap();
        let dir = trace_dir(d.path());
        std::fs::create_dir_all(&dir).unwrap();
        let foreign = dir.join("9999-12-31.jsonl");
        std::fs::write(&foreign, "x\n".repeat(3000)).unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&foreign)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        let limits = TraceLimits {
            file_bytes: 2000,
            total_bytes: 5000,
            ..TraceLimits::default()
        };
        let mut files = TraceFiles::default();
        for i in 0..30 {
            let r = record(&format!("r{i:03}"), "2026-11-30T10:00:00Z");
            files.append_many(d.path(), &[&r], &limits).unwrap();
            let ids: Vec<String> = read_all(d.path()).into_iter().map(|r| r.run_id).collect();
            assert_eq!(ids.last(), Some(&format!("r{i:03}")), "{i}: {ids:?}");
        }
        assert!(!foreign.exists());
    }

    /// A foreign `<day>_999.jsonl` (the last suffix) made the day's
    /// records go there and stay: no rotation, so neither `file_bytes`
    /// nor `total_bytes` was enforced and the file grew without bound.
    #[test]
    fn a_foreign_last_rotation_cannot_disable_the_caps() {
        let d = tempfile::tempdir().unwrap();
        let dir = trace_dir(d.path());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("2026-11-30_999.jsonl"), "").unwrap();
        let limits = TraceLimits {
            file_bytes: 2000,
            total_bytes: 5000,
            ..TraceLimits::default()
        };
        let mut files = TraceFiles::default();
        for i in 0..60 {
            let r = record(&format!("r{i:03}"), "2026-11-30T10:00:00Z");
            files.append_many(d.path(), &[&r], &limits).unwrap();
        }
        let mut total = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let len = e.unwrap().metadata().unwrap().len();
            assert!(len <= 2000, "{len}");
            total += len;
        }
        assert!(total <= 5000 + 2000, "{total}");
        let ids: Vec<String> = read_all(d.path()).into_iter().map(|r| r.run_id).collect();
        assert!(ids.contains(&"r059".to_string()), "{ids:?}");
    }

    /// Readers take files newest first by modification time: a foreign
    /// file named to sort last (older than the real traces) no longer
    /// stands for the newest runs.
    #[test]
    fn readers_are_not_led_by_a_foreign_name() {
        let d = tempfile::tempdir().unwrap();
        let dir = trace_dir(d.path());
        std::fs::create_dir_all(&dir).unwrap();
        let forged = serde_json::to_string(&record("forged", "9999-12-31T00:00:00Z")).unwrap();
        let foreign = dir.join("9999-12-31.jsonl");
        std::fs::write(&foreign, format!("{forged}\n")).unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&foreign)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        let future = dir.join("9999-12-30.jsonl");
        std::fs::write(&future, format!("{forged}\n")).unwrap();
        let next_year = std::time::SystemTime::now() + std::time::Duration::from_secs(366 * 86400);
        std::fs::File::options()
            .write(true)
            .open(&future)
            .unwrap()
            .set_modified(next_year)
            .unwrap();
        let real = record("real", "2026-11-30T10:00:00Z");
        append(d.path(), &real).unwrap();
        let ids: Vec<String> = read_latest(d.path(), 1, 1 << 20, |_| true)
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        assert_eq!(ids, ["real"]);
    }

    #[test]
    fn arguments_are_bounded_per_call_and_per_run() {
        use lackpy_policy::wire::Data;
        let limits = TraceLimits {
            arg_bytes: 100,
            run_bytes: 1000,
            ..TraceLimits::default()
        };
        let mut b = RunBudget::new(&limits);
        assert_eq!(b.arg(&Data::Str("x".into())), serde_json::json!("x"));
        let big = Data::Str("y".repeat(200_000));
        let v = b.arg(&big);
        let t = &v["$truncated"];
        assert_eq!(t["bytes"], 200_002);
        assert_eq!(t["prefix"].as_str().unwrap().len(), 100);
        assert_eq!(t["sha256"].as_str().unwrap().len(), 64);
        for _ in 0..20 {
            b.arg(&big);
        }
        let v = b.arg(&big);
        assert!(v.get("$omitted").is_some(), "{v}");
        assert!(serde_json::to_string(&v).unwrap().len() < 200);
        let m = b.message("z".repeat(10_000));
        assert!(m.len() < 200, "{m}");
    }
}
