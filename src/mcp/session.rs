//! Notebook-style sessions: the plain-data variables a `run_program` cell
//! leaves, kept supervisor-side and handed to the next cell of the same
//! session. Each cell still runs in a fresh single-use worker; only data
//! (never anything callable) carries over.
//!
//! The store belongs to one MCP connection (one client), is capped in count
//! and size, and forgets a session after it has been idle for
//! [`SessionLimits::idle`]. A long-running server (`lackpy serve`) also
//! charges every store to shared [`Budget`]s — one per client and one for
//! the whole server — so that many connections of one client, or many
//! clients, cannot grow the server's memory without bound: a session that
//! would go over a budget is refused with [`SessionError::TooMany`] or
//! [`SessionError::TooLarge`], naming the limit and the config key that
//! raises it.

use lackpy_policy::wire::Data;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Caps of a [`SessionStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions kept at once; the least recently used is dropped beyond it. Default 64.
    pub max_sessions: usize,
    /// Approximate bytes of variables one session may keep. Default 8 MiB
    /// (the default result cap: a cell could return that much anyway).
    pub max_bytes: usize,
    /// Idle time after which a session is forgotten. Default 30 minutes.
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: 64,
            max_bytes: 8 * 1024 * 1024,
            idle: Duration::from_secs(30 * 60),
        }
    }
}

/// Sessions and bytes kept now, shared by every store charged to it (one
/// client's connections, or the whole server).
#[derive(Debug, Default)]
pub struct Usage {
    sessions: AtomicUsize,
    bytes: AtomicUsize,
}

impl Usage {
    /// Sessions kept now.
    pub fn sessions(&self) -> usize {
        self.sessions.load(Ordering::SeqCst)
    }
    /// Approximate bytes of variables kept now.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::SeqCst)
    }
}

/// Which budget refused a session, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Over a budget's session count.
    Sessions,
    /// Over a budget's bytes.
    Bytes,
}

/// One shared cap: a [`Usage`] with its bounds and the words a refusal uses.
#[derive(Clone)]
pub struct Budget {
    /// The shared usage.
    pub usage: Arc<Usage>,
    /// Sessions at most.
    pub max_sessions: usize,
    /// Approximate bytes at most.
    pub max_bytes: usize,
    /// Who the budget is for, in a message: "this client", "the server".
    pub scope: String,
    /// Config key that raises `max_sessions`.
    pub sessions_key: String,
    /// Config key that raises `max_bytes`.
    pub bytes_key: String,
    /// Called once per refusal (metrics).
    pub on_refuse: Option<Arc<dyn Fn(Refusal) + Send + Sync>>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("scope", &self.scope)
            .field("max_sessions", &self.max_sessions)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl Budget {
    fn refused(&self, what: Refusal) {
        if let Some(f) = &self.on_refuse {
            f(what);
        }
    }

    fn too_many(&self) -> SessionError {
        self.refused(Refusal::Sessions);
        SessionError::TooMany {
            scope: self.scope.clone(),
            max: self.max_sessions,
            key: self.sessions_key.clone(),
        }
    }

    /// Take one session slot.
    fn take_session(&self) -> Result<(), SessionError> {
        let u = &self.usage.sessions;
        if u.fetch_add(1, Ordering::SeqCst) >= self.max_sessions {
            u.fetch_sub(1, Ordering::SeqCst);
            return Err(self.too_many());
        }
        Ok(())
    }

    /// Take `n` more bytes.
    fn take_bytes(&self, n: usize) -> Result<(), SessionError> {
        let u = &self.usage.bytes;
        let before = u.fetch_add(n, Ordering::SeqCst);
        if before.saturating_add(n) > self.max_bytes {
            u.fetch_sub(n, Ordering::SeqCst);
            self.refused(Refusal::Bytes);
            return Err(SessionError::TooLarge {
                scope: self.scope.clone(),
                max: self.max_bytes,
                used: before,
                need: n,
                key: self.bytes_key.clone(),
            });
        }
        Ok(())
    }

    fn release(&self, sessions: usize, bytes: usize) {
        self.usage.sessions.fetch_sub(sessions, Ordering::SeqCst);
        self.usage.bytes.fetch_sub(bytes, Ordering::SeqCst);
    }
}

/// Why a session was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Empty, too long or with characters outside `[A-Za-z0-9_.:-]`.
    #[error("session id must be 1-128 characters of A-Z a-z 0-9 _ . : -")]
    BadId,
    /// A new session would go over a budget's session count.
    #[error("session limit: {scope} already keeps {max} notebook sessions (the maximum, {key}); a new session is refused")]
    TooMany {
        /// Who the budget is for.
        scope: String,
        /// The bound.
        max: usize,
        /// Config key that raises it.
        key: String,
    },
    /// Keeping the cell's variables would go over a budget's bytes.
    #[error("session limit: {scope} keeps {used} bytes of session variables; {need} more would go over the maximum of {max} bytes ({key}); the variables of this cell were not kept")]
    TooLarge {
        /// Who the budget is for.
        scope: String,
        /// The bound.
        max: usize,
        /// Bytes kept before.
        used: usize,
        /// Bytes the cell needed on top.
        need: usize,
        /// Config key that raises it.
        key: String,
    },
}

impl SessionError {
    /// The config key that raises the limit, when a limit refused it.
    pub fn key(&self) -> Option<&str> {
        match self {
            SessionError::BadId => None,
            SessionError::TooMany { key, .. } | SessionError::TooLarge { key, .. } => Some(key),
        }
    }
}

/// What a stored session kept from its last cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    /// Variables, in the order the cell left them.
    pub vars: Vec<(String, Data)>,
    /// Names dropped because they would not fit in the size cap.
    pub dropped: Vec<String>,
}

struct Entry {
    vars: Vec<(String, Data)>,
    /// What this entry charges to the budgets.
    bytes: usize,
    last_used: Instant,
}

/// Per-connection session variables.
pub struct SessionStore {
    limits: SessionLimits,
    budgets: Vec<Budget>,
    sessions: HashMap<String, Entry>,
}

/// Check a client-chosen session id.
///
/// # Errors
/// [`SessionError::BadId`] when it is empty, longer than 128 bytes, or has
/// other characters than `[A-Za-z0-9_.:-]`.
pub fn check_id(id: &str) -> Result<(), SessionError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(SessionError::BadId)
    }
}

/// Approximate in-memory size of a value, without recursion: every node
/// costs its `Data` cell (as it sits in a `Vec`), strings their bytes too.
pub fn approx_size(d: &Data) -> usize {
    let node = std::mem::size_of::<Data>();
    let mut total = 0usize;
    let mut stack = vec![d];
    while let Some(d) = stack.pop() {
        total = total.saturating_add(node);
        match d {
            Data::BigInt(s) | Data::Str(s) => total = total.saturating_add(s.len()),
            Data::List(v) | Data::Tuple(v) | Data::Set(v) => stack.extend(v.iter()),
            Data::Dict(v) => {
                for (k, val) in v {
                    stack.push(k);
                    stack.push(val);
                }
            }
            Data::None | Data::Bool(_) | Data::Int(_) | Data::Float(_) => {}
        }
    }
    total
}

/// Bytes one kept variable costs: its value, its name and the slot.
fn var_size(name: &str, value: &Data) -> usize {
    approx_size(value)
        .saturating_add(name.len())
        .saturating_add(std::mem::size_of::<(String, Data)>())
}

impl SessionStore {
    /// An empty store.
    #[cfg(test)]
    pub fn new(limits: SessionLimits) -> Self {
        Self::with_budgets(limits, Vec::new())
    }

    /// An empty store whose sessions are also charged to `budgets` (shared
    /// with other stores); over one of them a session is refused.
    pub fn with_budgets(limits: SessionLimits, budgets: Vec<Budget>) -> Self {
        SessionStore {
            limits,
            budgets,
            sessions: HashMap::new(),
        }
    }

    fn release(&self, e: &Entry) {
        for b in &self.budgets {
            b.release(1, e.bytes);
        }
    }

    fn expire(&mut self, now: Instant) {
        let idle = self.limits.idle;
        let old: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.last_used) >= idle)
            .map(|(k, _)| k.clone())
            .collect();
        for k in old {
            if let Some(e) = self.sessions.remove(&k) {
                self.release(&e);
            }
        }
    }

    /// Whether a cell of `id` may run: an existing session always may; a
    /// new one only while every budget has room for one more session.
    ///
    /// # Errors
    /// [`SessionError::TooMany`] naming the budget that is full.
    pub fn check_new(&mut self, id: &str) -> Result<(), SessionError> {
        self.expire(Instant::now());
        if self.sessions.contains_key(id) {
            return Ok(());
        }
        match self
            .budgets
            .iter()
            .find(|b| b.usage.sessions() >= b.max_sessions)
        {
            Some(b) => Err(b.too_many()),
            None => Ok(()),
        }
    }

    /// The variables to start the next cell of `id` with (empty for a new session).
    pub fn load(&mut self, id: &str) -> Vec<(String, Data)> {
        let now = Instant::now();
        self.expire(now);
        match self.sessions.get_mut(id) {
            Some(e) => {
                e.last_used = now;
                e.vars.clone()
            }
            None => Vec::new(),
        }
    }

    /// Keep what a cell of `id` left: earlier variables it did not rebind
    /// stay, the new ones replace them; variables beyond the per-session
    /// size cap are dropped (and named in the result).
    ///
    /// # Errors
    /// A shared budget has no room for a new session, or for the bytes the
    /// session grows by; the session is then left as it was.
    pub fn save(
        &mut self,
        id: &str,
        before: Vec<(String, Data)>,
        left: Vec<(String, Data)>,
    ) -> Result<Saved, SessionError> {
        let now = Instant::now();
        self.expire(now);
        let mut merged: Vec<(String, Data)> = before
            .into_iter()
            .filter(|(n, _)| !left.iter().any(|(m, _)| m == n))
            .collect();
        merged.extend(left);
        let mut kept = Vec::with_capacity(merged.len());
        let mut dropped = Vec::new();
        let mut used = 0usize;
        for (name, value) in merged {
            let size = var_size(&name, &value);
            if used.saturating_add(size) <= self.limits.max_bytes {
                used += size;
                kept.push((name, value));
            } else {
                dropped.push(name);
            }
        }
        let bytes = used.saturating_add(id.len());
        let old_bytes = self.sessions.get(id).map(|e| e.bytes);
        // Charge the budgets first: a refusal leaves everything as it was.
        let mut charged = Vec::new();
        let mut outcome = Ok(());
        for (i, b) in self.budgets.iter().enumerate() {
            let r = match old_bytes {
                None => b
                    .take_session()
                    .and_then(|()| b.take_bytes(bytes).inspect_err(|_| b.release(1, 0))),
                Some(old) if bytes > old => b.take_bytes(bytes - old),
                Some(_) => Ok(()),
            };
            if let Err(e) = r {
                outcome = Err(e);
                break;
            }
            charged.push(i);
        }
        if let Err(e) = outcome {
            for i in charged {
                if let Some(b) = self.budgets.get(i) {
                    match old_bytes {
                        None => b.release(1, bytes),
                        Some(old) => b.release(0, bytes.saturating_sub(old)),
                    }
                }
            }
            return Err(e);
        }
        if let Some(old) = old_bytes {
            if old > bytes {
                for b in &self.budgets {
                    b.release(0, old - bytes);
                }
            }
        }
        if old_bytes.is_none() && self.sessions.len() >= self.limits.max_sessions {
            if let Some(oldest) = self
                .sessions
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            {
                if let Some(e) = self.sessions.remove(&oldest) {
                    self.release(&e);
                }
            }
        }
        self.sessions.insert(
            id.to_string(),
            Entry {
                vars: kept.clone(),
                bytes,
                last_used: now,
            },
        );
        Ok(Saved {
            vars: kept,
            dropped,
        })
    }

    /// Number of live sessions.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.sessions.len()
    }
}

impl Drop for SessionStore {
    /// The connection ended: give its sessions back to the shared budgets.
    fn drop(&mut self) {
        for e in self.sessions.values() {
            self.release(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Data {
        Data::Str(x.into())
    }

    #[test]
    fn ids_are_checked() {
        assert!(check_id("cell-1.a:b_c").is_ok());
        for bad in ["", "a b", "../x", &"x".repeat(129), "é"] {
            assert_eq!(check_id(bad), Err(SessionError::BadId), "{bad:?}");
        }
    }

    #[test]
    fn variables_carry_over_and_merge() {
        let mut st = SessionStore::new(SessionLimits::default());
        assert!(st.load("a").is_empty());
        st.save(
            "a",
            vec![],
            vec![("x".into(), Data::Int(1)), ("y".into(), s("y"))],
        )
        .expect("save");
        let before = st.load("a");
        assert_eq!(before.len(), 2);
        st.save("a", before, vec![("x".into(), Data::Int(2))])
            .expect("save");
        let now = st.load("a");
        assert_eq!(now, vec![("y".into(), s("y")), ("x".into(), Data::Int(2))]);
        assert!(st.load("b").is_empty());
    }

    #[test]
    fn size_cap_drops_and_names() {
        let mut st = SessionStore::new(SessionLimits {
            max_bytes: 100,
            ..SessionLimits::default()
        });
        let saved = st
            .save(
                "a",
                vec![],
                vec![
                    ("small".into(), Data::Int(1)),
                    ("big".into(), s(&"z".repeat(500))),
                ],
            )
            .expect("save");
        assert_eq!(saved.dropped, vec!["big".to_string()]);
        assert_eq!(st.load("a").len(), 1);
    }

    #[test]
    fn count_cap_and_expiry() {
        let mut st = SessionStore::new(SessionLimits {
            max_sessions: 2,
            ..SessionLimits::default()
        });
        for id in ["a", "b", "c"] {
            st.save(id, vec![], vec![]).expect("save");
        }
        assert_eq!(st.len(), 2);
        let mut st = SessionStore::new(SessionLimits {
            idle: Duration::ZERO,
            ..SessionLimits::default()
        });
        st.save("a", vec![], vec![("x".into(), Data::Int(1))])
            .expect("save");
        assert!(st.load("a").is_empty());
    }

    fn budget(max_sessions: usize, max_bytes: usize) -> Budget {
        Budget {
            usage: Arc::new(Usage::default()),
            max_sessions,
            max_bytes,
            scope: "this client".into(),
            sessions_key: "k.max_sessions".into(),
            bytes_key: "k.max_session_bytes".into(),
            on_refuse: None,
        }
    }

    #[test]
    fn shared_budget_refuses_sessions_across_stores_and_frees_on_drop() {
        let b = budget(2, 1 << 20);
        let mut one = SessionStore::with_budgets(SessionLimits::default(), vec![b.clone()]);
        let mut two = SessionStore::with_budgets(SessionLimits::default(), vec![b.clone()]);
        one.save("a", vec![], vec![]).expect("first");
        two.save("a", vec![], vec![]).expect("second (other store)");
        let e = two.check_new("b").unwrap_err();
        assert!(matches!(&e, SessionError::TooMany { max: 2, .. }), "{e:?}");
        assert!(e.to_string().contains("k.max_sessions"), "{e}");
        assert_eq!(e.key(), Some("k.max_sessions"));
        assert!(two.save("b", vec![], vec![]).is_err());
        // An existing session may go on.
        assert!(two.check_new("a").is_ok());
        assert_eq!(b.usage.sessions(), 2);
        drop(one);
        assert_eq!(b.usage.sessions(), 1);
        assert!(two.check_new("b").is_ok());
        drop(two);
        assert_eq!((b.usage.sessions(), b.usage.bytes()), (0, 0));
    }

    #[test]
    fn shared_budget_refuses_bytes_and_keeps_the_old_state() {
        let b = budget(10, 4000);
        let mut st = SessionStore::with_budgets(SessionLimits::default(), vec![b.clone()]);
        st.save("a", vec![], vec![("x".into(), s(&"z".repeat(1000)))])
            .expect("fits");
        let before = st.load("a");
        let e = st
            .save("a", before, vec![("y".into(), s(&"z".repeat(5000)))])
            .unwrap_err();
        assert!(
            matches!(&e, SessionError::TooLarge { max: 4000, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("k.max_session_bytes"), "{e}");
        assert_eq!(st.load("a").len(), 1, "unchanged after a refusal");
        let used = b.usage.bytes();
        assert!(used > 1000 && used < 2000, "{used}");
        // Shrinking always fits and gives the bytes back.
        st.save("a", vec![], vec![("x".into(), Data::None)])
            .expect("shrink");
        assert!(b.usage.bytes() < 200, "{}", b.usage.bytes());
        // A new session over the bytes is refused and holds no slot.
        let e = st
            .save("b", vec![], vec![("y".into(), s(&"z".repeat(5000)))])
            .unwrap_err();
        assert!(matches!(e, SessionError::TooLarge { .. }));
        assert_eq!(b.usage.sessions(), 1);
    }
}
