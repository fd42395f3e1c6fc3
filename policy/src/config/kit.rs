//! `.kit` files: the original lackpy's named tool sets.
//!
//! ```text
//! ---
//! name: filesystem
//! description: Read, write, and search files
//! docs: docs/kits/filesystem.md
//! ---
//! read_file
//! # a comment
//! find_files
//! ```
//! Each `---` line toggles the frontmatter (as the original does); lines
//! outside it are tool names, one per line, `#` starting a comment line.

use std::collections::BTreeMap;

/// A parsed kit file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kit {
    /// Name (the file stem; frontmatter `name:` is informational).
    pub name: String,
    /// Frontmatter `description:`.
    pub description: String,
    /// Frontmatter `docs:` (relative to the workspace).
    pub docs: Option<String>,
    /// Tool names, in file order.
    pub tools: Vec<String>,
}

/// Parse a kit file's text. Lenient like the original: unknown
/// frontmatter fields are ignored.
pub fn parse_kit(name: &str, text: &str) -> Kit {
    let mut kit = Kit {
        name: name.to_string(),
        ..Kit::default()
    };
    let mut in_front = false;
    for line in text.lines() {
        let s = line.trim();
        if s == "---" {
            in_front = !in_front;
            continue;
        }
        if in_front {
            if let Some((k, v)) = s.split_once(':') {
                let v = v.trim().trim_matches('"').trim_matches('\'').to_string();
                match k.trim() {
                    "description" => kit.description = v,
                    "docs" if !v.is_empty() => kit.docs = Some(v),
                    _ => {}
                }
            }
            continue;
        }
        if !s.is_empty() && !s.starts_with('#') {
            kit.tools.push(s.to_string());
        }
    }
    kit
}

/// Where named kits come from (the CLI reads `<ws>/.lackpy/kits/*.kit`).
pub trait KitSource {
    /// The kit of that name, if any.
    fn get(&self, name: &str) -> Option<Kit>;
    /// All kit names, sorted.
    fn names(&self) -> Vec<String>;
}

/// An in-memory set of kits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kits(pub BTreeMap<String, Kit>);

impl Kits {
    /// Add a kit parsed from `text`.
    pub fn insert_text(&mut self, name: &str, text: &str) {
        self.0.insert(name.to_string(), parse_kit(name, text));
    }
}

impl KitSource for Kits {
    fn get(&self, name: &str) -> Option<Kit> {
        self.0.get(name).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

/// Render a kit file (for `lackpy profile create`).
pub fn render_kit(kit: &Kit) -> String {
    let mut s = String::from("---\n");
    s.push_str(&format!("name: {}\n", kit.name));
    if !kit.description.is_empty() {
        s.push_str(&format!(
            "description: {}\n",
            kit.description.replace('\n', " ")
        ));
    }
    if let Some(d) = &kit.docs {
        s.push_str(&format!("docs: {d}\n"));
    }
    s.push_str("---\n");
    for t in &kit.tools {
        s.push_str(t);
        s.push('\n');
    }
    s
}
