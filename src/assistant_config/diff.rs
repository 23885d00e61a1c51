//! The JSON diff `--apply` prints: the leaves that differ between two values (`Change`), as
//! `a.b[0].c` paths in key order, with secrets, tokens and header values flagged so they
//! print as `***`.
//!
//! It must not know the platform, its API or the transcriber's shape: any two JSON values.

use std::fmt;

use serde_json::Value;

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A leaf that differs between two JSON values, addressed by its path.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Change {
    path: String,
    old: Option<Value>,
    new: Option<Value>,
    /// Set when the path or either value is a credential: printed as `***`.
    masked: bool,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Value| {
            if self.masked {
                "***".to_owned()
            } else {
                v.to_string()
            }
        };
        match (&self.old, &self.new) {
            (Some(o), Some(n)) => write!(f, "~ {}: {} -> {}", self.path, show(o), show(n)),
            (Some(o), None) => write!(f, "- {}: {}", self.path, show(o)),
            (None, Some(n)) => write!(f, "+ {}: {}", self.path, show(n)),
            (None, None) => write!(f, "  {}", self.path),
        }
    }
}

/// The leaves that differ, as `a.b[0].c` paths in key order. Secrets, tokens and header
/// values are flagged for masking whichever side they are on.
pub(super) fn diff(old: &Value, new: &Value) -> Vec<Change> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    flatten(old, &mut Vec::new(), &mut a);
    flatten(new, &mut Vec::new(), &mut b);
    let mut paths: Vec<&Vec<Seg>> = a.iter().map(|(p, _)| p).collect();
    for (p, _) in &b {
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    let lookup = |side: &[(Vec<Seg>, Value)], p: &[Seg]| {
        side.iter()
            .find(|(q, _)| q.as_slice() == p)
            .map(|(_, v)| v.clone())
    };
    let mut changes: Vec<(Vec<Seg>, Change)> = Vec::new();
    for p in paths {
        let (o, n) = (lookup(&a, p), lookup(&b, p));
        if o == n {
            continue;
        }
        let masked = sensitive_path(p)
            || o.as_ref().is_some_and(sensitive_value)
            || n.as_ref().is_some_and(sensitive_value);
        changes.push((
            p.clone(),
            Change {
                path: render_path(p),
                old: o,
                new: n,
                masked,
            },
        ));
    }
    changes.sort_by(|x, y| cmp_path(&x.0, &y.0));
    changes.into_iter().map(|(_, c)| c).collect()
}

fn cmp_path(a: &[Seg], b: &[Seg]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (Seg::Key(x), Seg::Key(y)) => x.cmp(y),
            (Seg::Index(x), Seg::Index(y)) => x.cmp(y),
            (Seg::Key(_), Seg::Index(_)) => std::cmp::Ordering::Less,
            (Seg::Index(_), Seg::Key(_)) => std::cmp::Ordering::Greater,
        };
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Leaves of a value; `null` at the top stands for "no transcriber" and has none, empty
/// objects and arrays are leaves of their own.
fn flatten(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, Value)>) {
    match v {
        Value::Null if path.is_empty() => {}
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                path.push(Seg::Key(k.clone()));
                flatten(child, path, out);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, child) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                flatten(child, path, out);
                path.pop();
            }
        }
        leaf => out.push((path.clone(), leaf.clone())),
    }
}

fn render_path(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
            Seg::Key(k)
                if !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Key(k) => s.push_str(&format!("[{}]", Value::from(k.as_str()))),
        }
    }
    if s.is_empty() {
        "(whole)".to_owned()
    } else {
        s
    }
}

/// Credentials hide under many names (`secret`, `apiKey`, `authToken`, header values); a
/// false positive costs a `***`, a miss leaks a key into a terminal or CI log.
fn sensitive_path(path: &[Seg]) -> bool {
    path.iter().any(|seg| match seg {
        Seg::Key(k) => {
            let k = k.to_ascii_lowercase();
            k == "headers"
                || k.ends_with("key")
                || [
                    "secret",
                    "token",
                    "password",
                    "passwd",
                    "authorization",
                    "credential",
                    "cookie",
                    "api_key",
                    "api-key",
                ]
                .iter()
                .any(|w| k.contains(w))
        }
        Seg::Index(_) => false,
    })
}

fn sensitive_value(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.get(..7)
            .is_some_and(|p| p.eq_ignore_ascii_case("bearer "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_paths_and_masking() {
        let old = json!({"provider": "deepgram", "model": "nova-2",
                         "keywords": ["hark:2"],
                         "server": {"secret": "old-s"}});
        let new = json!({"provider": "custom-transcriber",
                         "server": {"url": "wss://x/api/custom-transcriber",
                                    "headers": {"Authorization": "Bearer new-t", "X-Region": "eu"}}});
        let lines: Vec<String> = diff(&old, &new).iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            vec![
                "- keywords[0]: \"hark:2\"",
                "- model: \"nova-2\"",
                "~ provider: \"deepgram\" -> \"custom-transcriber\"",
                "+ server.headers.Authorization: ***",
                "+ server.headers.X-Region: ***",
                "- server.secret: ***",
                "+ server.url: \"wss://x/api/custom-transcriber\"",
            ]
        );
        assert!(diff(&new, &new).is_empty());
        let from_nothing: Vec<String> = diff(&Value::Null, &json!({"apiKey": "k", "a b": 1}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(from_nothing, vec!["+ [\"a b\"]: 1", "+ apiKey: ***"]);
        // A bearer value is masked wherever it sits.
        let c = diff(&json!({"x": "Bearer abc"}), &json!({"x": 1}));
        assert_eq!(c[0].to_string(), "~ x: *** -> ***");
    }
}
