//! Text that came from outside hark (a client's URL path or start frame, a provider's error
//! message or close reason) on its way into a log line, a metric or an error message.
//!
//! Shown as it is, such text can forge log lines (a `\n` in a URL path writes a line of its
//! own: OWASP's logging cheat sheet, "CRLF injection") or flood the log and the client (a
//! 1 MB string echoed back). So it is only ever shown quoted, with control characters
//! escaped, and cut to a few dozen characters. Repeated refusals are logged within a budget.

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Characters of untrusted text shown; the rest is summarised by its length.
pub const MAX_CHARS: usize = 64;

/// `text` quoted, escaped and cut to [`MAX_CHARS`] characters, for a log field or a message.
pub fn quote(text: &str) -> Quoted<'_> {
    Quoted(text)
}

/// Display of untrusted text: `"…"` with every control and non-printable character escaped
/// (`\n`, `\u{1b}`), never longer than [`MAX_CHARS`] characters of the original plus a note
/// of how much was left out.
#[derive(Clone, Copy)]
pub struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        let mut chars = self.0.char_indices();
        for (_, c) in chars.by_ref().take(MAX_CHARS) {
            write!(f, "{}", c.escape_debug())?;
        }
        f.write_str("\"")?;
        if let Some((at, _)) = chars.next() {
            write!(f, "… ({} more bytes)", self.0.len() - at)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `text` cut to [`MAX_CHARS`] characters (and a note of how much was left out), unquoted:
/// for a log field given as a `&str`, which the text log shows quoted and escaped and the
/// JSON log as one JSON string (a [`Quoted`] there would be quoted twice).
pub fn cut(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => format!("{}… ({} more bytes)", &text[..at], text.len() - at).into(),
        None => text.into(),
    }
}

/// The same as an owned string, for error messages that outlive the text.
pub fn quoted(text: &str) -> String {
    quote(text).to_string()
}

/// How many lines of one kind may be logged per window; past that they are counted and the
/// next line allowed says how many were left out. A refusal answered to a client without
/// credentials costs the attacker one request, and must not cost the operator one log line.
pub struct LogBudget {
    lines: u32,
    window: Duration,
    state: Mutex<Window>,
}

struct Window {
    started: Option<Instant>,
    logged: u32,
    suppressed: u64,
}

impl LogBudget {
    pub const fn new(lines: u32, window: Duration) -> Self {
        Self {
            lines,
            window,
            state: Mutex::new(Window {
                started: None,
                logged: 0,
                suppressed: 0,
            }),
        }
    }

    /// `Some(n)` when a line may be logged now (`n` lines were left out before it), `None`
    /// when this one is to be left out.
    pub fn allow(&self) -> Option<u64> {
        let now = Instant::now();
        // A poisoned lock only means a panic elsewhere held it: the counts are still usable.
        let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if w.started
            .is_none_or(|s| now.duration_since(s) >= self.window)
        {
            w.started = Some(now);
            w.logged = 0;
        }
        if w.logged < self.lines {
            w.logged += 1;
            Some(std::mem::take(&mut w.suppressed))
        } else {
            w.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_text_cut() {
        let forged = "x\n2026-11-24T00:00:00Z  INFO session{profile=admin}: call started";
        let shown = quote(forged).to_string();
        assert!(!shown.contains('\n'), "{shown}");
        assert!(shown.starts_with("\"x\\n2026"), "{shown}");
        assert_eq!(
            quote("a\r\u{1b}[31m\"b").to_string(),
            r#""a\r\u{1b}[31m\"b""#
        );
        let long = "é".repeat(100_000);
        let shown = quoted(&long);
        assert!(shown.len() < 200, "{}", shown.len());
        assert!(
            shown.ends_with(&format!("… ({} more bytes)", 2 * (100_000 - MAX_CHARS))),
            "{shown}"
        );
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(
            quoted(&"a".repeat(MAX_CHARS)),
            format!("\"{}\"", "a".repeat(MAX_CHARS))
        );
    }

    /// A log field's text is cut but not quoted: the log's formatter quotes and escapes a
    /// `&str` field itself.
    #[test]
    fn a_field_is_cut_unquoted() {
        assert_eq!(cut("dgg"), "dgg");
        let long = "é".repeat(MAX_CHARS + 10);
        let shown = cut(&long);
        assert!(shown.starts_with(&"é".repeat(MAX_CHARS)), "{shown}");
        assert!(shown.ends_with("… (20 more bytes)"), "{shown}");
        assert!(!shown.contains('"'), "{shown}");
    }

    #[test]
    fn a_budget_lets_some_lines_through_then_counts_the_rest() {
        let budget = LogBudget::new(3, Duration::from_millis(200));
        assert_eq!(budget.allow(), Some(0));
        assert_eq!(budget.allow(), Some(0));
        assert_eq!(budget.allow(), Some(0));
        for _ in 0..1000 {
            assert_eq!(budget.allow(), None);
        }
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(budget.allow(), Some(1000));
        assert_eq!(budget.allow(), Some(0));
    }
}
