//! The platform's JSON for a transcriber: the `custom-transcriber` object pointing at a hark
//! server with its credential, the `fallbackPlan` (other hark servers, then the platform's
//! own providers, `NativeTranscriber`), and the entries for a squad's members.
//!
//! It takes values already checked (`checks`) and must not know the flags, the platform's
//! REST API (`client`) or what is printed.

use anyhow::bail;
use serde_json::{Map, Value, json};

use super::checks::{Credential, ServerUrl, SquadMember};

/// The platform's transcriber providers a fallback entry may name (its API's
/// `FallbackTranscriberPlan`; docs/PROVIDERS.md, "The platform's fallbackPlan").
/// `custom-transcriber` is --fallback-url.
const PROVIDERS: &[&str] = &[
    "assembly-ai",
    "azure",
    "cartesia",
    "deepgram",
    "11labs",
    "gladia",
    "google",
    "openai",
    "soniox",
    "speechmatics",
    "talkscriber",
    "xai",
];

/// One `--fallback-provider`: a transcriber the platform runs itself.
// pub(crate): a field of `Args`, which `main.rs` parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NativeTranscriber {
    provider: String,
    model: Option<String>,
    language: Option<String>,
}

impl NativeTranscriber {
    fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("provider".into(), self.provider.as_str().into());
        if let Some(model) = &self.model {
            object.insert("model".into(), model.as_str().into());
        }
        if let Some(language) = &self.language {
            object.insert("language".into(), language.as_str().into());
        }
        Value::Object(object)
    }
}

/// Parses one `--fallback-provider` entry, `PROVIDER[:MODEL[:LANGUAGE]]` (clap's value
/// parser: its error is the message clap prints).
pub(super) fn parse_fallback_provider(entry: &str) -> Result<NativeTranscriber, String> {
    let mut parts = entry.trim().splitn(3, ':').map(str::trim);
    let provider = parts.next().unwrap_or_default().to_ascii_lowercase();
    if provider == "custom-transcriber" {
        return Err("a custom transcriber is given with --fallback-url URL".into());
    }
    if !PROVIDERS.contains(&provider.as_str()) {
        return Err(format!(
            "{provider:?} is not one of the platform's transcriber providers ({})",
            PROVIDERS.join(", ")
        ));
    }
    let field = |part: Option<&str>, what: &str| -> Result<Option<String>, String> {
        match part {
            None => Ok(None),
            Some("") => Err(format!("the {what} after ':' is empty")),
            Some(v)
                if v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) =>
            {
                Ok(Some(v.to_owned()))
            }
            Some(v) => Err(format!(
                "{what} {v:?} has characters a {what} name does not"
            )),
        }
    };
    Ok(NativeTranscriber {
        model: field(parts.next(), "model")?,
        language: field(parts.next(), "language")?,
        provider,
    })
}

/// The `CustomTranscriber` object (docs/PROTOCOL.md) for one server URL, without a fallback plan.
pub(super) fn transcriber(url: &str, credential: &Credential) -> Value {
    let mut server = Map::new();
    server.insert("url".into(), url.into());
    match credential {
        Credential::None => {}
        Credential::Secret(s) => {
            server.insert("secret".into(), s.as_str().into());
        }
        Credential::Bearer(t) => {
            server.insert(
                "headers".into(),
                json!({ "Authorization": format!("Bearer {t}") }),
            );
        }
    }
    json!({ "provider": "custom-transcriber", "server": server })
}

/// What the platform does when hark fails: the servers and providers it tries, in order.
#[derive(Debug, Clone, Default)]
pub(super) struct Fallback {
    pub(super) urls: Vec<ServerUrl>,
    pub(super) providers: Vec<NativeTranscriber>,
    pub(super) auto: bool,
}

impl Fallback {
    /// The `fallbackPlan` (`FallbackTranscriberPlan`) for a transcriber on `profile` (with
    /// --squad, each fallback URL is a base), or `None` for no plan.
    fn plan(
        &self,
        profile: Option<&str>,
        credential: &Credential,
    ) -> anyhow::Result<Option<Value>> {
        if self.urls.is_empty() && self.providers.is_empty() && !self.auto {
            return Ok(None);
        }
        let mut entries = Vec::new();
        for url in &self.urls {
            let url = match profile {
                Some(p) => url.with_profile(p)?,
                None => url.as_str().to_owned(),
            };
            entries.push(transcriber(&url, credential));
        }
        entries.extend(self.providers.iter().map(NativeTranscriber::to_json));
        Ok(Some(json!({
            "transcribers": entries,
            "autoFallback": { "enabled": self.auto },
        })))
    }

    /// `object` with this plan as its `fallbackPlan`.
    pub(super) fn attach(
        &self,
        mut object: Value,
        profile: Option<&str>,
        credential: &Credential,
    ) -> anyhow::Result<Value> {
        if let (Some(plan), Some(map)) = (self.plan(profile, credential)?, object.as_object_mut()) {
            map.insert("fallbackPlan".into(), plan);
        }
        Ok(object)
    }
}

/// Entries for `call.squad.members[]`, each member's transcriber on its own profile.
pub(super) fn squad_members(
    base: &ServerUrl,
    members: &[SquadMember],
    credential: &Credential,
    fallback: &Fallback,
) -> anyhow::Result<Value> {
    let mut out = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        if members[..i].iter().any(|earlier| earlier.name == m.name) {
            bail!("squad member {:?} is given twice", m.name);
        }
        let url = base.with_profile(&m.profile)?;
        let object =
            fallback.attach(transcriber(&url, credential), Some(&m.profile), credential)?;
        out.push(json!({
            "name": m.name,
            "assistantOverrides": { "transcriber": object },
        }));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assistant_config::tests::{BASE, S3, TOK, printed};

    #[test]
    fn secret_shape() {
        assert_eq!(
            printed(&["--url", BASE, "--secret", S3, "--no-fallback"]),
            json!({"provider": "custom-transcriber", "server": {"url": BASE, "secret": S3}})
        );
    }

    #[test]
    fn bearer_shape() {
        assert_eq!(
            printed(&["--url", BASE, "--bearer", TOK, "--no-fallback"]),
            json!({"provider": "custom-transcriber",
                   "server": {"url": BASE, "headers": {"Authorization": format!("Bearer {TOK}")}}})
        );
    }

    #[test]
    fn no_credential_shape() {
        assert_eq!(
            printed(&["--url", BASE, "--no-fallback"]),
            json!({"provider": "custom-transcriber", "server": {"url": BASE}})
        );
    }

    #[test]
    fn squad_shape() {
        let v = printed(&[
            "--url",
            BASE,
            "--secret",
            S3,
            "--squad",
            "sales=sales,support=support-es",
            "--no-fallback",
        ]);
        assert_eq!(
            v,
            json!([
                {"name": "sales", "assistantOverrides": {"transcriber": {
                    "provider": "custom-transcriber",
                    "server": {"url": format!("{BASE}/sales"), "secret": S3}}}},
                {"name": "support", "assistantOverrides": {"transcriber": {
                    "provider": "custom-transcriber",
                    "server": {"url": format!("{BASE}/support-es"), "secret": S3}}}},
            ])
        );
    }

    #[test]
    fn a_fallback_plan_is_written_by_default() {
        let v = printed(&["--url", BASE, "--secret", S3]);
        assert_eq!(
            v["fallbackPlan"],
            json!({"transcribers": [{"provider": "deepgram", "model": "nova-3"}],
                   "autoFallback": {"enabled": false}})
        );
        assert_eq!(v["server"], json!({"url": BASE, "secret": S3}));
    }

    #[test]
    fn fallback_servers_come_first_then_providers_in_order() {
        let other = "wss://hark-b.example.com/api/custom-transcriber";
        let v = printed(&[
            "--url",
            BASE,
            "--bearer",
            TOK,
            "--fallback-provider",
            "assembly-ai",
            "--fallback-url",
            other,
            "--fallback-provider",
            "Deepgram:nova-3:en",
            "--auto-fallback",
        ]);
        assert_eq!(
            v["fallbackPlan"],
            json!({"transcribers": [
                {"provider": "custom-transcriber",
                 "server": {"url": other, "headers": {"Authorization": format!("Bearer {TOK}")}}},
                {"provider": "assembly-ai"},
                {"provider": "deepgram", "model": "nova-3", "language": "en"},
            ], "autoFallback": {"enabled": true}})
        );
        // A squad member's fallback server is on the member's profile too.
        let v = printed(&["--url", BASE, "--squad", "a=sales", "--fallback-url", other]);
        assert_eq!(
            v[0]["assistantOverrides"]["transcriber"]["fallbackPlan"]["transcribers"],
            json!([{"provider": "custom-transcriber", "server": {"url": format!("{other}/sales")}}])
        );
    }
}
