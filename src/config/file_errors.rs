//! A config file's errors as its user reads them: the key named by its full dotted path
//! (`backends.x.url`) and its line, what was expected in words ("a whole number", not
//! `u64`), and the value found, except under keys that hold secrets (`auth.*`, a backend's
//! `metadata`), whose values are never shown.
//!
//! serde reports a value of the wrong type only as a message (`invalid_type` renders what
//! it found and expected into a string), so the rewording below reads that message: the
//! one place hark reads an error's text, a library's wording with no typed form.

use std::fmt;

use toml::de::{DeTable, DeValue};

use super::{BackendConfig, Config, MASK};

/// One step of a key's path: a table's key or a list's index.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

struct KeyPath<'a>(&'a [Step]);

impl fmt::Display for KeyPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(k) if i == 0 => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Parses a config file's text, or says everything that is wrong in it and where, one
/// problem a line: each key found wrong is taken out and the rest read again, so the
/// second wrong type is named in the same run as the first.
/// The error is text because it is read, not matched: `check-config` and `serve` print it.
pub(super) fn parse(text: &str) -> Result<Config, String> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| syntax(text, &e))?;
    let mut problems: Vec<String> = Vec::new();
    // Each round removes a key or a section, so this ends; the bound is for a file of
    // thousands of wrong keys.
    for _ in 0..100 {
        let e = match serde_path_to_error::deserialize::<_, Config>(table.clone()) {
            Ok(config) if problems.is_empty() => return Ok(config),
            Ok(_) => break,
            Err(e) => e,
        };
        let (problem, path) = describe(text, &table, &e);
        if !problems.contains(&problem) {
            problems.push(problem);
        }
        if !remove(&mut table, &path) {
            break;
        }
    }
    // In the file's order, as its reader goes through it (serde finds them section by section).
    problems.sort_by_key(|p| {
        p.strip_prefix("line ")
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(usize::MAX)
    });
    Err(problems.join("\n"))
}

/// The known key `key` is most likely a typo of: at most two edits (a swap counts as one)
/// and fewer than half its letters.
pub(crate) fn closest<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(key, k), k.as_str()))
        .filter(|(d, k)| *d <= 2 && *d * 2 < k.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Takes the key at `path` (or, where there is none, the nearest table above it that there
/// is) out of `table`; false when nothing could be taken.
fn remove(table: &mut toml::Table, path: &[Step]) -> bool {
    let mut path = path.to_vec();
    while !path.is_empty() {
        if remove_at(table, &path) {
            return true;
        }
        path.pop();
    }
    false
}

fn remove_at(table: &mut toml::Table, path: &[Step]) -> bool {
    let Some((Step::Key(last), parents)) = path.split_last() else {
        return false;
    };
    let mut at = table;
    for step in parents {
        let next = match step {
            Step::Key(k) => at.get_mut(k.as_str()),
            Step::Index(_) => return false,
        };
        match next.and_then(toml::Value::as_table_mut) {
            Some(t) => at = t,
            None => return false,
        }
    }
    at.remove(last.as_str()).is_some()
}

/// One deserialisation error as its user reads it, and the key's full path.
fn describe(
    text: &str,
    table: &toml::Table,
    e: &serde_path_to_error::Error<toml::de::Error>,
) -> (String, Vec<Step>) {
    let mut path = steps(e.path());
    let mut message = e.inner().message().to_string();
    // serde reads a backend section's `type` first and holds the rest meanwhile, so an
    // error inside the section comes without its key: the section read as its type finds it.
    if let [Step::Key(backends), Step::Key(name)] = path.as_slice()
        && backends == "backends"
        && let Some(section) = table
            .get("backends")
            .and_then(|b| b.get(name.as_str()))
            .and_then(toml::Value::as_table)
        && let Some(kind) = section.get("type").and_then(toml::Value::as_str)
    {
        let mut rest = section.clone();
        rest.remove("type");
        if let Some(Err(inner)) = BackendConfig::read_as(kind, rest) {
            path.extend(steps(inner.path()));
            message = inner.inner().message().to_string();
        }
    }
    // A `type` there is no backend of.
    if let [Step::Key(backends), Step::Key(_)] = path.as_slice()
        && backends == "backends"
        && message.starts_with("unknown variant")
    {
        path.push(Step::Key("type".into()));
    }
    let secret = is_secret(&path);
    let (key, what) = explain(&message, secret);
    // serde_path_to_error already ends the path with an unknown key; not a missing one.
    if let Some(key) = key
        && path.last() != Some(&Step::Key(key.clone()))
    {
        path.push(Step::Key(key));
    }
    let place = line_of(text, &path).map_or_else(String::new, |line| format!("line {line}, "));
    (format!("{place}{}: {what}", KeyPath(&path)), path)
}

fn steps(path: &serde_path_to_error::Path) -> Vec<Step> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|s| match s {
            Segment::Map { key } => Some(Step::Key(key.clone())),
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

/// Keys whose values are credentials: `[auth]` and a backend's gRPC `metadata`.
fn is_secret(path: &[Step]) -> bool {
    let key = |i: usize| match path.get(i) {
        Some(Step::Key(k)) => Some(k.as_str()),
        _ => None,
    };
    key(0) == Some("auth") || (key(0) == Some("backends") && key(2) == Some("metadata"))
}

/// serde's message in a user's words: the key it adds to the path (an unknown or missing
/// key is named in the message, below the table the error is about), and what is wrong.
fn explain(message: &str, secret: bool) -> (Option<String>, String) {
    let m = message.trim();
    let ticked = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    if let Some(rest) = m.strip_prefix("unknown field `") {
        let (field, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let known = ticked(tail);
        let what = if known.is_empty() {
            "unknown key (this table takes none)".to_string()
        } else {
            let hint = match closest(field, &known) {
                Some(k) => format!("; did you mean {k}?"),
                None => String::new(),
            };
            format!("unknown key (known here: {}){hint}", known.join(", "))
        };
        return (Some(field.to_string()), what);
    }
    if let Some(rest) = m.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        return (
            Some(field.to_string()),
            "missing: this key is required here".into(),
        );
    }
    if let Some(rest) = m.strip_prefix("duplicate field `") {
        let field = rest.split('`').next().unwrap_or(rest);
        return (Some(field.to_string()), "set twice".into());
    }
    if let Some(rest) = m.strip_prefix("unknown variant `") {
        let (variant, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let value = if secret {
            format!("\"{MASK}\"")
        } else {
            format!("\"{}\"", cut(variant))
        };
        return (
            None,
            format!("{value} is not one of: {}", ticked(tail).join(", ")),
        );
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = m.strip_prefix(prefix)
            && let Some((found, expected)) = rest.rsplit_once(", expected ")
        {
            return (
                None,
                format!(
                    "expected {}, got {}",
                    expected_words(expected),
                    found_words(found, secret)
                ),
            );
        }
    }
    if let Some(rest) = m.strip_prefix("invalid length ")
        && let Some((_, expected)) = rest.split_once(", expected ")
    {
        return (None, format!("expected {}", expected_words(expected)));
    }
    if m.contains("did not match any variant of untagged enum") {
        return (None, "expected a string or a list of strings".into());
    }
    if m == "invalid socket address syntax" {
        return (
            None,
            format!("expected {}", expected_words("socket address")),
        );
    }
    (None, if secret { masked(m) } else { m.to_string() })
}

/// serde's name of what it expected, in words.
fn expected_words(expected: &str) -> String {
    let e = expected.trim();
    match e {
        "u8" => "a whole number from 0 to 255".into(),
        "u16" => "a whole number from 0 to 65535".into(),
        "u32" => "a whole number from 0 to 4294967295".into(),
        "u64" | "u128" | "usize" => "a whole number (0 or more)".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" | "a borrowed string" | "a character" | "path string" => "a string".into(),
        "a sequence" => "a list".into(),
        "a map" => "a table".into(),
        "socket address" => "an IP:PORT address such as \"127.0.0.1:8080\" or \"0.0.0.0:8080\" \
                             (host names are not looked up)"
            .into(),
        _ if e.starts_with("struct ") || e.starts_with("a map") => "a table".into(),
        _ if e.starts_with("one of ") || e.starts_with('`') => {
            let names: Vec<&str> = e.split('`').skip(1).step_by(2).collect();
            format!("one of: {}", names.join(", "))
        }
        _ => e.to_string(),
    }
}

/// serde's name of what it found, in words; a secret's value is never shown.
fn found_words(found: &str, secret: bool) -> String {
    let f = found.trim();
    let value = |v: &str| if secret { MASK.to_string() } else { cut(v) };
    if let Some(s) = f.strip_prefix("string ") {
        // serde writes it as a Rust string literal, quotes and escapes included.
        let inner = s.strip_prefix('"').and_then(|s| s.strip_suffix('"'));
        return format!("the string \"{}\"", value(inner.unwrap_or(s)));
    }
    let ticked = |prefix: &str| {
        f.strip_prefix(prefix)
            .and_then(|v| v.strip_prefix('`'))
            .and_then(|v| v.strip_suffix('`'))
            .map(str::to_string)
    };
    if let Some(n) = ticked("integer ").or_else(|| ticked("floating point ")) {
        return format!("the number {}", value(&n));
    }
    if let Some(b) = ticked("boolean ") {
        return value(&b);
    }
    if let Some(c) = ticked("character ") {
        return format!("the string \"{}\"", value(&c));
    }
    match f {
        "sequence" => "a list".into(),
        "map" => "a table".into(),
        _ => f.to_string(),
    }
}

/// At most 64 characters of a value, control characters escaped.
fn cut(value: &str) -> String {
    let mut out: String = value
        .chars()
        .take(64)
        .flat_map(char::escape_default)
        .collect();
    if value.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// Every quoted part of a message as `***`.
fn masked(message: &str) -> String {
    let mut out = String::new();
    for (i, part) in message.split('"').enumerate() {
        if i % 2 == 1 {
            out.push('"');
            out.push_str(MASK);
            out.push('"');
        } else {
            out.push_str(part);
        }
    }
    out
}

/// The line of the last key of `path` that the file holds.
fn line_of(text: &str, path: &[Step]) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let mut at = None;
    // None: the document's root table.
    let mut current: Option<&DeValue<'_>> = None;
    for step in path {
        let found = match (step, current) {
            (Step::Key(k), None) => find(doc.get_ref(), k),
            (Step::Key(k), Some(DeValue::Table(t))) => find(t, k),
            (Step::Index(i), Some(DeValue::Array(a))) => a.get(*i).map(|v| (v.span().start, v)),
            _ => None,
        };
        let Some((pos, value)) = found else { break };
        at = Some(pos);
        current = Some(value.get_ref());
    }
    at.map(|pos| line_at(text, pos))
}

/// A key of a table: where it is written, and its value.
fn find<'a, 'i>(
    table: &'a DeTable<'i>,
    key: &str,
) -> Option<(usize, &'a toml::Spanned<DeValue<'i>>)> {
    table
        .iter()
        .find(|(k, _)| AsRef::<str>::as_ref(k.get_ref()) == key)
        .map(|(k, v)| (k.span().start, v))
}

fn line_at(text: &str, pos: usize) -> usize {
    text.get(..pos).unwrap_or(text).matches('\n').count() + 1
}

/// A file that is not TOML: where, the key (its table's path and the key on that line),
/// and the parser's message, its quoted parts masked unless the key is known to hold no
/// secret.
fn syntax(text: &str, e: &toml::de::Error) -> String {
    let span = e.span().unwrap_or(0..0);
    let start = span.start.min(text.len());
    let line = line_at(text, start);
    let line_start = text
        .get(..start)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1);
    let column = text.get(line_start..start).map_or(0, |t| t.chars().count()) + 1;
    let this_line = text[line_start..].lines().next().unwrap_or("");
    let message = e.message().trim();
    let (path, what) = match header(this_line) {
        // The error is in a table header: `[backends.x]` twice, or a broken one.
        Some(name) => (
            Some(name),
            if message == "duplicate key" {
                "this table is defined twice".to_string()
            } else {
                message.to_string()
            },
        ),
        None => {
            let table = text[..line_start].lines().rev().find_map(header);
            let key = if message == "duplicate key" {
                text.get(span.clone()).map(|k| k.trim().to_string())
            } else {
                this_line
                    .split_once('=')
                    .map(|(k, _)| k.trim().to_string())
                    .filter(|k| is_key(k))
            };
            let path = match (table, key) {
                (Some(t), Some(k)) => Some(format!("{t}.{k}")),
                (None, Some(k)) => Some(k),
                (Some(t), None) => Some(format!("[{t}]")),
                (None, None) => None,
            };
            let what = if message == "duplicate key" {
                "set twice".to_string()
            } else {
                message.to_string()
            };
            (path, what)
        }
    };
    let secret = path
        .as_deref()
        .is_none_or(|p| p.starts_with("auth") || p.starts_with("[auth") || p.contains("metadata"));
    let what = if secret { masked(&what) } else { what };
    let what = what.replace('\n', "; ");
    match path {
        Some(p) => format!("line {line}, column {column}, {p}: {what}"),
        None => format!("line {line}, column {column}: {what}"),
    }
}

/// The table a header line opens (`[a.b]`, `[[a.b]]`), spaces around dots removed.
fn header(line: &str) -> Option<String> {
    let l = line.trim();
    let l = l.split('#').next().unwrap_or(l).trim();
    let inner = l.strip_prefix('[')?.strip_suffix(']')?;
    let inner = inner.trim_start_matches('[').trim_end_matches(']');
    let name: Vec<&str> = inner.split('.').map(str::trim).collect();
    let name = name.join(".");
    is_key(&name).then_some(name)
}

/// Whether text reads as a (dotted) key: no value can hide in it.
fn is_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | ' '))
}
