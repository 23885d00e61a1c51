//! `--apply` through the platform's REST API: the API key from the environment, the
//! blocking HTTP client (no redirects, every failure a message naming the request, the key
//! redacted from every message and error body shown), and `apply`, which reads an
//! assistant's transcriber, patches in the new one and reports the difference
//! (`ApplyReport`).
//!
//! It must not know the flags or how the transcriber it sends is built (`transcriber`); it
//! leaves the comparison to `diff`.

use std::fmt;
use std::time::Duration;

use anyhow::bail;
use serde_json::{Value, json};

use super::diff::{Change, diff};

/// How much of an error response's body is shown: enough for the platform's message, not
/// a whole HTML error page.
const BODY_SHOWN: usize = 500;

/// The key comes from the environment so it stays out of shell history and `ps`.
pub(super) fn api_key(var: &str) -> anyhow::Result<String> {
    match std::env::var(var) {
        Ok(key) if key.trim().is_empty() => {
            bail!("the environment variable {var} (the platform API key for --apply) is empty")
        }
        Ok(key) => Ok(key.trim().to_owned()),
        Err(std::env::VarError::NotPresent) => bail!(
            "the environment variable {var} is not set: --apply needs the platform API key \
             there (or name another variable with --api-key-env)"
        ),
        Err(std::env::VarError::NotUnicode(_)) => {
            bail!("the environment variable {var} is not valid UTF-8")
        }
    }
}

/// What `--apply` did: the transcriber before and after, ready to print.
#[derive(Debug)]
pub(super) struct ApplyReport {
    assistant_id: String,
    /// The assistant's own `fallbackPlan` was kept (no --replace-fallback).
    kept_fallback: bool,
    changes: Vec<Change>,
    /// Where the transcriber the platform answered with differs from the one sent (the
    /// platform may fill defaults or drop fields it does not know).
    stored_differs: Vec<Change>,
}

impl fmt::Display for ApplyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.changes.is_empty() {
            writeln!(f, "assistant {}: transcriber unchanged", self.assistant_id)?;
        } else {
            writeln!(f, "assistant {}: transcriber updated", self.assistant_id)?;
            for c in &self.changes {
                writeln!(f, "  {c}")?;
            }
        }
        if self.kept_fallback {
            writeln!(
                f,
                "note: the assistant's fallbackPlan was kept; --replace-fallback writes the one \
                 given here"
            )?;
        }
        if !self.stored_differs.is_empty() {
            writeln!(
                f,
                "note: the platform's answer differs from the transcriber sent (sent -> stored):"
            )?;
            for c in &self.stored_differs {
                writeln!(f, "  {c}")?;
            }
        }
        Ok(())
    }
}

/// Reads the assistant's transcriber, replaces it, and reports the difference. With
/// `keep_fallback`, a `fallbackPlan` the assistant already has stays as it is.
pub(super) fn apply(
    api_base: &str,
    key: &str,
    assistant_id: &str,
    mut transcriber: Value,
    keep_fallback: bool,
) -> anyhow::Result<ApplyReport> {
    let client = Client::new(key);
    let url = format!("{api_base}/assistant/{assistant_id}");
    let before = client.get(&url)?;
    let old = assistant_transcriber("GET", &url, &before)?.unwrap_or(Value::Null);
    let mut kept_fallback = false;
    if keep_fallback
        && let Some(plan) = old.get("fallbackPlan").filter(|p| !p.is_null())
        && let Some(map) = transcriber.as_object_mut()
    {
        map.insert("fallbackPlan".into(), plan.clone());
        kept_fallback = true;
    }
    let transcriber = &transcriber;
    let body = json!({ "transcriber": transcriber });
    let after = client.patch(&url, &body)?;
    let stored = assistant_transcriber("PATCH", &url, &after)?;
    let new = stored.clone().unwrap_or_else(|| transcriber.clone());
    Ok(ApplyReport {
        assistant_id: assistant_id.to_owned(),
        kept_fallback,
        changes: diff(&old, &new),
        stored_differs: stored.map(|s| diff(transcriber, &s)).unwrap_or_default(),
    })
}

fn assistant_transcriber(method: &str, url: &str, answer: &Value) -> anyhow::Result<Option<Value>> {
    let Some(assistant) = answer.as_object() else {
        bail!("{method} {url}: the answer is not an assistant object");
    };
    Ok(assistant.get("transcriber").cloned())
}

/// A blocking HTTP client that turns every failure into a message naming the request, and
/// keeps the key out of every message.
struct Client<'a> {
    agent: ureq::Agent,
    key: &'a str,
}

impl<'a> Client<'a> {
    fn new(key: &'a str) -> Self {
        let agent = ureq::Agent::config_builder()
            // Status errors would lose the body, which carries the platform's reason.
            .http_status_as_error(false)
            // A redirect would be followed without the key, or to somewhere unexpected.
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(60)))
            .user_agent(concat!("hark/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client { agent, key }
    }

    fn get(&self, url: &str) -> anyhow::Result<Value> {
        let sent = self
            .agent
            .get(url)
            .header("Authorization", &self.authorization())
            .header("Accept", "application/json")
            .call();
        self.answer("GET", url, sent)
    }

    fn patch(&self, url: &str, body: &Value) -> anyhow::Result<Value> {
        let sent = self
            .agent
            .patch(url)
            .header("Authorization", &self.authorization())
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .send(body.to_string());
        self.answer("PATCH", url, sent)
    }

    fn authorization(&self) -> String {
        format!("Bearer {}", self.key)
    }

    /// The JSON body of a 2xx answer; anything else is an error naming the request.
    fn answer(
        &self,
        method: &str,
        url: &str,
        sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> anyhow::Result<Value> {
        let mut response = sent.map_err(|e| {
            let cause = match e {
                ureq::Error::Io(io) => io.to_string(),
                other => other.to_string(),
            };
            anyhow::anyhow!("{method} {url} failed: {}", redact(&cause, self.key))
        })?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_vec()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        if !status.is_success() {
            let shown = match &text {
                Ok(t) if t.trim().is_empty() => "(empty body)".to_owned(),
                Ok(t) => truncate(&redact(t.trim(), self.key), BODY_SHOWN),
                Err(e) => format!("(body unreadable: {e})"),
            };
            bail!("{method} {url} failed: HTTP {status}: {shown}");
        }
        let text = text.map_err(|e| anyhow::anyhow!("{method} {url}: reading the answer: {e}"))?;
        serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{method} {url}: the answer (HTTP {status}) is not JSON ({e}): {}",
                truncate(&redact(text.trim(), self.key), BODY_SHOWN)
            )
        })
    }
}

/// An error body may echo the request; the key must not reach the terminal or a CI log.
/// Keys too short to be real would mask ordinary letters and garble the message instead.
fn redact(text: &str, key: &str) -> String {
    if key.len() < 8 {
        text.to_owned()
    } else {
        text.replace(key, "***")
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_truncated_and_redacted() {
        let long = "é".repeat(600);
        let t = truncate(&long, BODY_SHOWN);
        assert!(t.starts_with(&"é".repeat(500)) && t.contains("… (1200 bytes in all)"));
        assert_eq!(truncate("short", BODY_SHOWN), "short");
        assert_eq!(
            redact("key sk-12345678 echoed", "sk-12345678"),
            "key *** echoed"
        );
        assert_eq!(redact("lookup", "k"), "lookup");
    }
}
