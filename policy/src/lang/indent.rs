//! Indentation holding tabs, measured as CPython 3.11's tokenizer does.
//!
//! Why: rustpython-parser's lexer counts a line's tabs and spaces and
//! compares the pairs, and refuses any tab after a space; CPython measures
//! each indentation twice, with tabs to the next multiple of 8 (`col`) and
//! as one column (`altcol`), and only requires the two measures to agree
//! (`tok_get` in `Parser/tokenizer.c`). So ` \tx` as a block's indentation,
//! or a block at `\t` holding one at nine spaces, run in CPython and were
//! refused here, and where both refuse, the line and wording differed.
//!
//! [`check`] runs CPython's rule over the text's logical lines (outside
//! strings, brackets and backslash continuations; blank and comment-only
//! lines do not count). When it holds, every tab of a line's leading
//! whitespace becomes a space: the same bytes and columns, and indentation
//! that rustpython-parser reads as CPython does (counting spaces, it
//! measures `altcol`, which orders the lines as `col` does when the rule
//! holds). When it fails on a line, the lines before it are rewritten the
//! same way and the caller reports CPython's error for that line unless
//! the parser fails before it. Linear; no tab, no work.

use super::numlit::skip_string;

/// CPython's tab size (`col`); `altcol` counts a tab as one column.
const TABSIZE: usize = 8;

/// What CPython's tokenizer makes of the text's indentation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Indent {
    /// No tab in any line's indentation: nothing to do.
    Unchanged,
    /// CPython accepts it: the text with the tabs of every line's leading
    /// whitespace as spaces.
    Rewritten(String),
    /// CPython refuses the indentation of the line starting at byte
    /// `line_start`: a `TabError` (`tab`) or `unindent does not match any
    /// outer indentation level`. `text` has the tabs of the lines before it
    /// as spaces.
    Error {
        text: String,
        line_start: usize,
        tab: bool,
    },
}

/// CPython's indentation rule over `src` (see the module doc).
pub(crate) fn check(src: &str) -> Indent {
    let b = src.as_bytes();
    if !b.contains(&b'\t') {
        return Indent::Unchanged;
    }
    // (col, altcol) of each open block.
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let mut tabs: Vec<usize> = Vec::new();
    let mut level = 0usize;
    let mut at_bol = true;
    let mut failed: Option<(usize, bool)> = None;
    let mut i = 0usize;
    while i < b.len() {
        if at_bol {
            at_bol = false;
            let line_start = i;
            let (mut col, mut alt) = (0usize, 0usize);
            let first_tab = tabs.len();
            loop {
                match b.get(i) {
                    Some(b' ') => {
                        col += 1;
                        alt += 1;
                    }
                    Some(b'\t') => {
                        col = (col / TABSIZE + 1) * TABSIZE;
                        alt += 1;
                        tabs.push(i);
                    }
                    // Form feed: "for Emacs users", the count starts over.
                    Some(0x0c) => {
                        col = 0;
                        alt = 0;
                    }
                    _ => break,
                }
                i += 1;
            }
            let blank = matches!(b.get(i), None | Some(b'#' | b'\n' | b'\r'));
            if !blank && level == 0 {
                let (top_col, top_alt) = stack.last().copied().unwrap_or((0, 0));
                let problem = if col == top_col {
                    (alt != top_alt).then_some(true)
                } else if col > top_col {
                    stack.push((col, alt));
                    (alt <= top_alt).then_some(true)
                } else {
                    while stack.len() > 1 && stack.last().is_some_and(|&(c, _)| col < c) {
                        stack.pop();
                    }
                    let (c, a) = stack.last().copied().unwrap_or((0, 0));
                    if col != c {
                        Some(false)
                    } else {
                        (alt != a).then_some(true)
                    }
                };
                if let Some(tab) = problem {
                    tabs.truncate(first_tab);
                    failed = Some((line_start, tab));
                    break;
                }
            }
            continue;
        }
        match b[i] {
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n' && c != b'\r') {
                    i += 1;
                }
                continue;
            }
            b'\'' | b'"' => {
                i = skip_string(b, i);
                continue;
            }
            b'(' | b'[' | b'{' => level += 1,
            b')' | b']' | b'}' => level = level.saturating_sub(1),
            // A backslash continuation: the next line is no new line.
            b'\\' => {
                i += match (b.get(i + 1), b.get(i + 2)) {
                    (Some(b'\r'), Some(b'\n')) => 3,
                    _ => 2,
                };
                continue;
            }
            b'\n' => at_bol = true,
            b'\r' if b.get(i + 1) != Some(&b'\n') => at_bol = true,
            _ => {}
        }
        i += 1;
    }
    if tabs.is_empty() && failed.is_none() {
        return Indent::Unchanged;
    }
    let mut text = src.as_bytes().to_vec();
    for t in tabs {
        if let Some(c) = text.get_mut(t) {
            *c = b' ';
        }
    }
    // Only ASCII tabs became ASCII spaces: still UTF-8.
    let text = String::from_utf8(text).unwrap_or_else(|_| src.to_string());
    match failed {
        Some((line_start, tab)) => Indent::Error {
            text,
            line_start,
            tab,
        },
        None => Indent::Rewritten(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(s: &str) -> Option<String> {
        match check(s) {
            Indent::Rewritten(t) => Some(t),
            _ => None,
        }
    }

    #[test]
    fn consistent_tabs_become_spaces() {
        // A tab after a space, and a block at one tab holding nine spaces.
        assert_eq!(
            rewritten("if 1:\n \tx = 1\n \ty = 2\n").as_deref(),
            Some("if 1:\n  x = 1\n  y = 2\n")
        );
        assert_eq!(
            rewritten("if 1:\n\tif 2:\n         x = 1\n").as_deref(),
            Some("if 1:\n if 2:\n         x = 1\n")
        );
        // Tabs in strings, comments and brackets are left alone (only a
        // line's leading whitespace changes).
        assert_eq!(
            rewritten("x = '''\n\ta'''  # \t\ny = (1,\n\t2)\n").as_deref(),
            Some("x = '''\n\ta'''  # \t\ny = (1,\n 2)\n")
        );
        assert_eq!(check("x = 1\n"), Indent::Unchanged);
        assert_eq!(check("x = '\t'\n"), Indent::Unchanged);
    }

    #[test]
    fn inconsistent_lines_are_found() {
        let err = |s: &str| match check(s) {
            Indent::Error {
                line_start, tab, ..
            } => Some((line_start, tab)),
            _ => None,
        };
        // col 8 both, altcol 1 and 8.
        assert_eq!(err("if 1:\n\tx = 1\n        y = 2\n"), Some((13, true)));
        // Indent by col, not by altcol.
        assert_eq!(
            err("if 1:\n    x = 1\n    if 2:\n\ty = 2\n"),
            Some((26, true))
        );
        // A dedent to a column no block has.
        assert_eq!(err("if 1:\n\tx = 1\n  y = 2\n"), Some((13, false)));
        // Inside brackets and after a continuation, no rule (and a
        // continuation line's whitespace is no indentation).
        assert_eq!(
            check("x = (1,\n\t2,\n        3)\ny = 1 + \\\n\t2\n"),
            Indent::Rewritten("x = (1,\n 2,\n        3)\ny = 1 + \\\n\t2\n".to_string())
        );
    }
}
