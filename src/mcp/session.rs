//! Notebook-style sessions: the plain-data variables a `run_program` cell
//! leaves, kept supervisor-side and handed to the next cell of the same
//! session. Each cell still runs in a fresh single-use worker; only data
//! (never anything callable) carries over.
//!
//! The store belongs to one MCP connection (one client), is capped in count
//! and size, and forgets a session after it has been idle for
//! [`SessionLimits::idle`].

use lackpy_policy::wire::Data;
use std::collections::HashMap;
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

/// Why a session id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Empty, too long or with characters outside `[A-Za-z0-9_.:-]`.
    #[error("session id must be 1-128 characters of A-Z a-z 0-9 _ . : -")]
    BadId,
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
    last_used: Instant,
}

/// Per-connection session variables.
pub struct SessionStore {
    limits: SessionLimits,
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

/// Approximate in-memory size of a value, without recursion.
pub fn approx_size(d: &Data) -> usize {
    let mut total = 0usize;
    let mut stack = vec![d];
    while let Some(d) = stack.pop() {
        total = total.saturating_add(16);
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

impl SessionStore {
    /// An empty store.
    pub fn new(limits: SessionLimits) -> Self {
        SessionStore {
            limits,
            sessions: HashMap::new(),
        }
    }

    fn expire(&mut self, now: Instant) {
        let idle = self.limits.idle;
        self.sessions
            .retain(|_, e| now.saturating_duration_since(e.last_used) < idle);
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
    /// stay, the new ones replace them; variables beyond the size cap are
    /// dropped (and named in the result).
    pub fn save(
        &mut self,
        id: &str,
        before: Vec<(String, Data)>,
        left: Vec<(String, Data)>,
    ) -> Saved {
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
            let size = approx_size(&value).saturating_add(name.len());
            if used.saturating_add(size) <= self.limits.max_bytes {
                used += size;
                kept.push((name, value));
            } else {
                dropped.push(name);
            }
        }
        if !self.sessions.contains_key(id) && self.sessions.len() >= self.limits.max_sessions {
            if let Some(oldest) = self
                .sessions
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            {
                self.sessions.remove(&oldest);
            }
        }
        self.sessions.insert(
            id.to_string(),
            Entry {
                vars: kept.clone(),
                last_used: now,
            },
        );
        Saved {
            vars: kept,
            dropped,
        }
    }

    /// Number of live sessions.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.sessions.len()
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
        );
        let before = st.load("a");
        assert_eq!(before.len(), 2);
        st.save("a", before, vec![("x".into(), Data::Int(2))]);
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
        let saved = st.save(
            "a",
            vec![],
            vec![
                ("small".into(), Data::Int(1)),
                ("big".into(), s(&"z".repeat(500))),
            ],
        );
        assert_eq!(saved.dropped, vec!["big".to_string()]);
        assert_eq!(st.load("a").len(), 1);
    }

    #[test]
    fn count_cap_and_expiry() {
        let mut st = SessionStore::new(SessionLimits {
            max_sessions: 2,
            ..SessionLimits::default()
        });
        st.save("a", vec![], vec![]);
        st.save("b", vec![], vec![]);
        st.save("c", vec![], vec![]);
        assert_eq!(st.len(), 2);
        let mut st = SessionStore::new(SessionLimits {
            idle: Duration::ZERO,
            ..SessionLimits::default()
        });
        st.save("a", vec![], vec![("x".into(), Data::Int(1))]);
        assert!(st.load("a").is_empty());
    }
}
