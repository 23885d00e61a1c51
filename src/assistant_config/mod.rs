//! `hark assistant-config`: the platform-side `transcriber` object that points an assistant
//! (or each member of a squad) at a hark server, printed for pasting or patched into an
//! assistant through the platform's REST API.
//!
//! Everything is checked before anything is printed or sent, so a typo never reaches a live
//! assistant: a transcriber URL the platform cannot open gives no transcripts on real calls,
//! and the calls end with `pipeline-error-custom-transcriber-failed`.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use hark::config::MIN_SECRET_CHARS;
use serde_json::{Map, Value, json};
use ureq::http::Uri;

/// Where hark serves the websocket; profiles hang below it.
pub const BASE_PATH: &str = "/api/custom-transcriber";

/// The platform's REST API, used by `--apply` unless `--api-url` says otherwise.
pub const DEFAULT_API_URL: &str = "https://api.vapi.ai";

/// Where `--apply` looks for the platform API key unless `--api-key-env` says otherwise.
pub const DEFAULT_API_KEY_ENV: &str = "VAPI_API_KEY";

/// How much of an error response's body is shown: enough for the platform's message, not
/// a whole HTML error page.
const BODY_SHOWN: usize = 500;

const AFTER_HELP: &str = "\
Without --squad or --apply, prints the object for `assistant.transcriber`.

Every transcriber printed or applied carries a `fallbackPlan`: without one, the platform
ends the call when the custom transcriber fails (a crashed pod, a bad deploy). It lists
the --fallback-url servers (e.g. a second hark deployment, same credential), then the
--fallback-provider entries; with no fallback flag, deepgram:nova-3 (the platform's own
Deepgram). `autoFallback` is written disabled unless --auto-fallback: enabled, the
platform may send the call's audio to a provider you did not choose. --no-fallback writes
no plan.

--squad prints entries for `call.squad.members[]`, one per member, each with its own
transcriber URL: --url is then the base (its path must end in /api/custom-transcriber) and
each member gets URL/PROFILE, i.e. /api/custom-transcriber/{profile}. The `name` of each
entry is a label for matching it to your members: the platform identifies members by
`assistantId` or `assistant`, so copy each `assistantOverrides` into the matching member.
Without --squad, --url is used exactly as given, so it may already name a profile.

--apply ASSISTANT_ID reads the assistant (GET {api-url}/assistant/{id}), replaces its
transcriber (PATCH with {\"transcriber\": …}) and prints what changed, with secrets, tokens
and header values shown as ***. A fallbackPlan the assistant already has is kept unless
--replace-fallback. The API key is read from the environment variable named by
--api-key-env, never from the command line, and is never printed.

Examples:
  hark assistant-config --url wss://hark.example.com/api/custom-transcriber --secret \"$HARK_SECRET\"
  hark assistant-config --url wss://hark-a.example.com/api/custom-transcriber --secret \"$HARK_SECRET\" \\
      --fallback-url wss://hark-b.example.com/api/custom-transcriber --fallback-provider deepgram:nova-3
  hark assistant-config --url wss://hark.example.com/api/custom-transcriber --bearer \"$TOKEN\" \\
      --squad sales=sales,support=support-es
  VAPI_API_KEY=… hark assistant-config --url wss://hark.example.com/api/custom-transcriber \\
      --secret \"$HARK_SECRET\" --apply 5f1c…";

/// Print (or apply) the platform's transcriber config that points an assistant at hark.
#[derive(clap::Args, Debug, Clone)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// The websocket URL the platform opens per call: ws:// or wss://.
    #[arg(long)]
    pub url: String,
    /// Shared secret, sent by the platform as `x-vapi-secret` (hark serve --secret); at
    /// least 16 characters, as hark serve requires.
    #[arg(long, conflicts_with = "bearer")]
    pub secret: Option<String>,
    /// Token, sent by the platform as `Authorization: Bearer` (hark serve --bearer-tokens);
    /// at least 16 characters.
    #[arg(long)]
    pub bearer: Option<String>,
    /// Squad members, each on its own profile: prints `call.squad.members[]` entries.
    #[arg(long, value_name = "NAME=PROFILE", value_delimiter = ',', value_parser = parse_member)]
    pub squad: Vec<SquadMember>,
    /// The config file the server reads (as `hark serve --config`): --squad's profiles are
    /// checked against it.
    #[arg(long, env = "HARK_CONFIG", value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// Replace this assistant's transcriber through the platform's API.
    #[arg(long, value_name = "ASSISTANT_ID")]
    pub apply: Option<String>,
    /// The platform's REST API.
    #[arg(long, default_value = DEFAULT_API_URL, requires = "apply")]
    pub api_url: String,
    /// Environment variable holding the platform API key.
    #[arg(long, value_name = "VAR", default_value = DEFAULT_API_KEY_ENV, requires = "apply")]
    pub api_key_env: String,
    /// Another transcriber server the platform tries, in order, when this one fails (e.g. a
    /// second hark deployment), sent with the same credential; repeatable. With --squad it
    /// is a base URL too.
    #[arg(long = "fallback-url", value_name = "URL")]
    pub fallback_urls: Vec<String>,
    /// A provider of the platform's own the platform tries after the --fallback-url
    /// servers, as PROVIDER[:MODEL[:LANGUAGE]]; repeatable. Without any fallback flag the
    /// plan holds deepgram:nova-3.
    #[arg(long = "fallback-provider", value_name = "PROVIDER[:MODEL[:LANGUAGE]]", value_parser = parse_fallback_provider)]
    pub fallback_providers: Vec<NativeTranscriber>,
    /// Write no fallbackPlan: when hark fails, the platform ends the call.
    #[arg(long, conflicts_with_all = ["fallback_urls", "fallback_providers", "auto_fallback"])]
    pub no_fallback: bool,
    /// Let the platform choose another provider itself once the listed ones failed (audio
    /// may then go to a provider you did not choose).
    #[arg(long)]
    pub auto_fallback: bool,
    /// With --apply: replace the assistant's existing fallbackPlan (kept otherwise).
    #[arg(long, requires = "apply")]
    pub replace_fallback: bool,
}

/// The fallback provider written when no fallback flag is given: the platform's own
/// default transcriber.
pub const DEFAULT_FALLBACK: &str = "deepgram:nova-3";

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeTranscriber {
    pub provider: String,
    pub model: Option<String>,
    pub language: Option<String>,
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

pub fn parse_fallback_provider(entry: &str) -> Result<NativeTranscriber, String> {
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

/// One `--squad` entry: a member label and the hark profile its calls go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SquadMember {
    pub name: String,
    pub profile: String,
}

/// How the platform proves itself to hark on the upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    None,
    Secret(String),
    Bearer(String),
}

/// A checked transcriber URL, kept as typed (the platform gets exactly that string) with
/// the parts needed to derive profile URLs and warnings.
#[derive(Debug, Clone)]
pub struct ServerUrl {
    raw: String,
    /// The URL as typed ended its hark path in '/', which `raw` no longer has.
    trimmed_slash: bool,
    scheme: String,
    authority: String,
    host: String,
    path: String,
    query: Option<String>,
}

impl ServerUrl {
    /// Accepts ws:// and wss:// URLs with a host; anything else is a URL the platform
    /// cannot open as a websocket.
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        if !url.contains("://") {
            bail!("--url {url:?} must start with ws:// or wss://");
        }
        let uri: Uri = url
            .parse()
            .with_context(|| format!("--url {url:?} is not a URL"))?;
        let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
        match scheme.as_str() {
            "ws" | "wss" => {}
            "http" | "https" => bail!(
                "--url {url:?} must be a websocket URL: the platform opens a websocket to it; \
                 use {}://… instead",
                if scheme == "https" { "wss" } else { "ws" }
            ),
            _ => bail!("--url {url:?} must start with ws:// or wss://"),
        }
        let (Some(authority), Some(host)) = (uri.authority(), uri.host()) else {
            bail!("--url {url:?} has no host");
        };
        if host.is_empty() {
            bail!("--url {url:?} has no host");
        }
        // `…/api/custom-transcriber/` (or `…/PROFILE/`) is the same URL to a user, but older
        // hark servers answer it 404, and a proxy in front may still: written without the
        // slash. A path of some other shape is left as typed (a proxy may need it so).
        let path = uri.path();
        let trimmed = path.trim_end_matches('/');
        let trimmed_slash = trimmed.len() < path.len() && looks_like_hark_path(trimmed);
        let (raw, path) = if trimmed_slash {
            let (before, query) = match url.split_once('?') {
                Some((before, query)) => (before, Some(query)),
                None => (url, None),
            };
            let mut raw = before.trim_end_matches('/').to_owned();
            if let Some(query) = query {
                raw.push('?');
                raw.push_str(query);
            }
            (raw, trimmed.to_owned())
        } else {
            (url.to_owned(), path.to_owned())
        };
        Ok(ServerUrl {
            raw,
            trimmed_slash,
            scheme,
            authority: authority.as_str().to_owned(),
            host: host.to_owned(),
            path,
            query: uri.query().map(str::to_owned),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The URL for one profile: `base/PROFILE`, the query (if any) kept after it.
    pub fn with_profile(&self, profile: &str) -> anyhow::Result<String> {
        check_profile(profile).map_err(anyhow::Error::msg)?;
        let base = self.path.trim_end_matches('/');
        if !base.ends_with(BASE_PATH) {
            bail!(
                "with --squad, --url must be the base URL ending in {BASE_PATH} (each member \
                 gets /PROFILE appended), but its path is {:?}",
                self.path
            );
        }
        let query = self
            .query
            .as_ref()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        Ok(format!(
            "{}://{}{base}/{profile}{query}",
            self.scheme, self.authority
        ))
    }

    fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }

    /// Mistakes that still give a valid config, so they warn rather than fail.
    pub fn warnings(&self, squad: bool) -> Vec<String> {
        let mut out = Vec::new();
        if self.trimmed_slash {
            out.push(format!(
                "the trailing '/' was removed: the URL written is {:?} (hark serves \
                 {BASE_PATH}[/PROFILE] without one)",
                self.raw
            ));
        }
        if self.scheme == "ws" && !self.is_loopback() {
            out.push(format!(
                "ws:// to {} is unencrypted: call audio, transcripts and the credential cross \
                 the network in clear; use wss:// (hark behind a TLS terminator)",
                self.host
            ));
        }
        if self.is_loopback() {
            out.push(format!(
                "{} is a loopback address: the platform connects from its own servers and \
                 cannot reach it",
                self.host
            ));
        }
        if !squad && !looks_like_hark_path(&self.path) {
            out.push(format!(
                "hark serves {BASE_PATH}[/PROFILE], not {:?}: this works only behind a proxy \
                 that rewrites the path",
                self.path
            ));
        }
        out
    }
}

fn looks_like_hark_path(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    if path.ends_with(BASE_PATH) {
        return true;
    }
    match path.rsplit_once('/') {
        Some((base, profile)) => base.ends_with(BASE_PATH) && check_profile(profile).is_ok(),
        None => false,
    }
}

fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Profile names end up as one URL path segment, so only characters that need no escaping.
pub fn check_profile(profile: &str) -> Result<(), String> {
    if profile.is_empty() {
        return Err("the profile name is empty".into());
    }
    if let Some(c) = profile
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "profile {profile:?} contains {c:?}: profile names may use only A-Z, a-z, 0-9, _ and -"
        ));
    }
    Ok(())
}

/// Parses one `--squad` entry, `NAME=PROFILE`.
pub fn parse_member(entry: &str) -> Result<SquadMember, String> {
    let Some((name, profile)) = entry.split_once('=') else {
        return Err(format!(
            "{entry:?} is not NAME=PROFILE (e.g. sales=sales,support=support-es)"
        ));
    };
    let (name, profile) = (name.trim(), profile.trim());
    if name.is_empty() {
        return Err(format!("{entry:?} has no member name before '='"));
    }
    if name.chars().any(char::is_control) {
        return Err(format!("member name {name:?} contains a control character"));
    }
    check_profile(profile)?;
    Ok(SquadMember {
        name: name.to_owned(),
        profile: profile.to_owned(),
    })
}

/// The credential flags, checked as HTTP header values: the platform sends them as headers,
/// and a value it cannot send or that loses its edges on the way never matches hark's.
pub fn credential(secret: Option<&str>, bearer: Option<&str>) -> anyhow::Result<Credential> {
    match (secret, bearer) {
        (Some(_), Some(_)) => bail!("--secret and --bearer cannot be used together"),
        (Some(s), None) => {
            if s.is_empty() {
                bail!("--secret is empty");
            }
            if s.trim() != s {
                bail!("--secret has leading or trailing whitespace, which HTTP header values lose");
            }
            if !s.chars().all(|c| (' '..='~').contains(&c)) {
                bail!("--secret must be printable ASCII: it travels as the x-vapi-secret header");
            }
            check_length("--secret", "auth.secret (HARK_SECRET)", s)?;
            Ok(Credential::Secret(s.to_owned()))
        }
        (None, Some(t)) => {
            let has_scheme = t
                .get(..7)
                .is_some_and(|p| p.eq_ignore_ascii_case("bearer "));
            if has_scheme {
                bail!("give --bearer the token alone, without the \"Bearer \" prefix");
            }
            if t.is_empty() {
                bail!("--bearer is empty");
            }
            if !t.chars().all(|c| ('!'..='~').contains(&c)) {
                bail!("--bearer must be printable ASCII without spaces (a bearer token)");
            }
            check_length("--bearer", "auth.bearer_tokens (HARK_BEARER_TOKENS)", t)?;
            Ok(Credential::Bearer(t.to_owned()))
        }
        (None, None) => Ok(Credential::None),
    }
}

/// `hark serve` refuses to start with a secret or token this short, so a config carrying
/// one could only ever be refused: refused here too, with the same rule and advice.
fn check_length(flag: &str, serve_key: &str, value: &str) -> anyhow::Result<()> {
    let n = value.chars().count();
    if n < MIN_SECRET_CHARS {
        bail!(
            "{flag} is {n} characters: hark serve refuses {serve_key} values under \
             {MIN_SECRET_CHARS} characters; make one with `openssl rand -hex 32` and give \
             the same one to both"
        );
    }
    Ok(())
}

/// Warnings about what the credential flags leave out.
fn credential_warnings(credential: &Credential) -> Vec<String> {
    match credential {
        Credential::None => vec![
            "no --secret or --bearer: the platform will call without credentials. A hark \
             serve with auth.secret (HARK_SECRET) or auth.bearer_tokens set refuses every such \
             call (401); one without them takes calls from anyone who finds the URL"
                .into(),
        ],
        Credential::Secret(_) | Credential::Bearer(_) => Vec::new(),
    }
}

/// The `CustomTranscriber` object (docs/PROTOCOL.md) for one server URL, without a fallback plan.
pub fn transcriber(url: &str, credential: &Credential) -> Value {
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
pub struct Fallback {
    pub urls: Vec<ServerUrl>,
    pub providers: Vec<NativeTranscriber>,
    pub auto: bool,
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
    fn attach(
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
pub fn squad_members(
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

/// What the command will do once every argument has been checked.
#[derive(Debug)]
pub enum Plan {
    Print(Value),
    Apply {
        assistant_id: String,
        api: ApiTarget,
        transcriber: Value,
        /// Keep the assistant's own `fallbackPlan` if it has one.
        keep_fallback: bool,
    },
}

/// Where `--apply` sends its requests and which variable holds the key.
#[derive(Debug, Clone)]
pub struct ApiTarget {
    /// Base URL without a trailing slash.
    pub base: String,
    pub key_env: String,
}

impl Args {
    /// --squad's profiles against the server's config, when one is given: a member pointed
    /// at a profile the server does not have would have every call refused (404).
    fn check_profiles(&self, warnings: &mut Vec<String>) -> anyhow::Result<()> {
        let Some(path) = &self.config else {
            warnings.push(
                "--squad's profiles were not checked: pass --config (the file hark serve \
                 reads) to check them"
                    .into(),
            );
            return Ok(());
        };
        let config = hark::config::Config::load(Some(path))?;
        let unknown: Vec<&str> = self
            .squad
            .iter()
            .map(|m| m.profile.as_str())
            .filter(|p| config.profile(p).is_none())
            .collect();
        if !unknown.is_empty() {
            let mut known: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
            known.insert(0, hark::config::DEFAULT_PROFILE);
            bail!(
                "{} has no profile {} (it has: {})",
                path.display(),
                unknown
                    .iter()
                    .map(|p| format!("{p:?}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                known.join(", ")
            );
        }
        Ok(())
    }

    /// Checks every argument, so nothing is printed or sent from a half-valid command line.
    /// Returns the plan and the warnings to show.
    pub fn plan(&self) -> anyhow::Result<(Plan, Vec<String>)> {
        if self.apply.is_some() && !self.squad.is_empty() {
            bail!(
                "--squad cannot be used with --apply: a squad is not an assistant. Paste the \
                 --squad output into the squad's members, or apply each member's assistant \
                 separately with --url …{BASE_PATH}/PROFILE --apply ASSISTANT_ID"
            );
        }
        let url = ServerUrl::parse(&self.url)?;
        let credential = credential(self.secret.as_deref(), self.bearer.as_deref())?;
        let squad = !self.squad.is_empty();
        let mut warnings = url.warnings(squad);
        warnings.extend(credential_warnings(&credential));
        let fallback = self.fallback(&url, squad, &mut warnings)?;
        if squad {
            self.check_profiles(&mut warnings)?;
            return Ok((
                Plan::Print(squad_members(&url, &self.squad, &credential, &fallback)?),
                warnings,
            ));
        }
        let object = fallback.attach(transcriber(url.as_str(), &credential), None, &credential)?;
        let Some(id) = &self.apply else {
            return Ok((Plan::Print(object), warnings));
        };
        check_assistant_id(id)?;
        let api = ApiTarget {
            base: check_api_url(&self.api_url)?,
            key_env: self.api_key_env.clone(),
        };
        if api.key_env.is_empty() {
            bail!("--api-key-env is empty");
        }
        Ok((
            Plan::Apply {
                assistant_id: id.clone(),
                api,
                transcriber: object,
                keep_fallback: !self.replace_fallback,
            },
            warnings,
        ))
    }

    /// The fallback the flags ask for: the default provider when none is named.
    fn fallback(
        &self,
        url: &ServerUrl,
        squad: bool,
        warnings: &mut Vec<String>,
    ) -> anyhow::Result<Fallback> {
        if self.no_fallback {
            return Ok(Fallback::default());
        }
        let mut urls = Vec::new();
        for raw in &self.fallback_urls {
            let parsed = ServerUrl::parse(raw).map_err(|e| {
                anyhow::anyhow!("{}", e.to_string().replacen("--url", "--fallback-url", 1))
            })?;
            if parsed.as_str() == url.as_str() {
                bail!(
                    "--fallback-url {raw:?} is the transcriber itself: a fallback must be \
                     another deployment"
                );
            }
            warnings.extend(
                parsed
                    .warnings(squad)
                    .into_iter()
                    .map(|w| format!("--fallback-url: {w}")),
            );
            urls.push(parsed);
        }
        let mut providers = self.fallback_providers.clone();
        if urls.is_empty() && providers.is_empty() {
            if self.auto_fallback {
                warnings.push(format!(
                    "--auto-fallback without --fallback-url or --fallback-provider writes an \
                     empty list of transcribers: when hark fails, the platform picks a provider \
                     itself, which may be one you did not choose. Name one first, e.g. \
                     --fallback-provider {DEFAULT_FALLBACK}"
                ));
            } else {
                providers
                    .push(parse_fallback_provider(DEFAULT_FALLBACK).map_err(anyhow::Error::msg)?);
            }
        } else if providers.is_empty() && !self.auto_fallback {
            warnings.push(format!(
                "--fallback-url replaces the default fallback {DEFAULT_FALLBACK} (the \
                 platform's own Deepgram): when the --fallback-url servers fail too, the call \
                 ends. To keep it after them, add --fallback-provider {DEFAULT_FALLBACK}"
            ));
        }
        Ok(Fallback {
            urls,
            providers,
            auto: self.auto_fallback,
        })
    }
}

/// The id becomes a path segment of the API URL; anything beyond an id's characters would
/// address some other resource.
pub fn check_assistant_id(id: &str) -> anyhow::Result<()> {
    let ok = !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!(
            "--apply {id:?} is not an assistant id (expected something like \
             5f1c2b3a-…, letters, digits, '-', '_' or '.')"
        );
    }
    Ok(())
}

/// The API key travels in every request, so plain http is allowed only where it cannot
/// leave the machine (a local mock or tunnel).
pub fn check_api_url(url: &str) -> anyhow::Result<String> {
    let uri: Uri = url
        .parse()
        .with_context(|| format!("--api-url {url:?} is not a URL"))?;
    let host = uri.host().unwrap_or("");
    if host.is_empty() {
        bail!("--api-url {url:?} has no host");
    }
    match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
        Some("https") => {}
        Some("http") if is_loopback_host(host) => {}
        Some("http") => bail!(
            "--api-url {url:?} would send the API key unencrypted; use https:// (http:// is \
             accepted only for loopback hosts)"
        ),
        _ => bail!("--api-url {url:?} must start with https://"),
    }
    if uri.query().is_some() {
        bail!("--api-url {url:?} must not have a query string");
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// Runs `hark assistant-config`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (plan, warnings) = args.plan()?;
    for w in &warnings {
        eprintln!("hark: warning: {w}");
    }
    match plan {
        Plan::Print(value) => {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        Plan::Apply {
            assistant_id,
            api,
            transcriber,
            keep_fallback,
        } => {
            let key = api_key(&api.key_env)?;
            let report = apply(&api.base, &key, &assistant_id, transcriber, keep_fallback)?;
            print!("{report}");
        }
    }
    Ok(())
}

/// The key comes from the environment so it stays out of shell history and `ps`.
fn api_key(var: &str) -> anyhow::Result<String> {
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
pub struct ApplyReport {
    pub assistant_id: String,
    /// The assistant's own `fallbackPlan` was kept (no --replace-fallback).
    pub kept_fallback: bool,
    pub changes: Vec<Change>,
    /// Where the transcriber the platform answered with differs from the one sent (the
    /// platform may fill defaults or drop fields it does not know).
    pub stored_differs: Vec<Change>,
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
pub fn apply(
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

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A leaf that differs between two JSON values, addressed by its path.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
    /// Set when the path or either value is a credential: printed as `***`.
    pub masked: bool,
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
pub fn diff(old: &Value, new: &Value) -> Vec<Change> {
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

    const BASE: &str = "wss://hark.example.com/api/custom-transcriber";
    /// Long enough for hark serve (16 characters or more).
    const S3: &str = "s3-0123456789abcdef";
    const TOK: &str = "tok-0123456789abcdef";

    fn args(extra: &[&str]) -> Result<Args, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let argv = ["hark"].iter().chain(extra).copied();
        <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.args)
    }

    fn plan(extra: &[&str]) -> anyhow::Result<(Plan, Vec<String>)> {
        args(extra).map_err(anyhow::Error::from)?.plan()
    }

    fn printed(extra: &[&str]) -> Value {
        match plan(extra) {
            Ok((Plan::Print(v), _)) => v,
            other => panic!("expected something to print, got {other:?}"),
        }
    }

    fn err(extra: &[&str]) -> String {
        match plan(extra) {
            Err(e) => format!("{e:#}"),
            Ok(p) => panic!("expected an error for {extra:?}, got {p:?}"),
        }
    }

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
    fn url_given_as_is_without_squad() {
        let url = "wss://h.example:8443/api/custom-transcriber/sales?x=1";
        let v = printed(&["--url", url, "--secret", S3]);
        assert_eq!(v["server"]["url"], url);
        let (_, warnings) = plan(&["--url", url, "--secret", S3]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
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

    #[test]
    fn fallback_flags_are_checked() {
        for (flag, value, want) in [
            ("--fallback-provider", "vapi", "not one of the platform's"),
            (
                "--fallback-provider",
                "custom-transcriber",
                "--fallback-url",
            ),
            ("--fallback-provider", "deepgram:", "is empty"),
            ("--fallback-provider", "deepgram:nova 3", "has characters"),
        ] {
            let e = args(&["--url", BASE, flag, value])
                .expect_err(value)
                .to_string();
            assert!(e.contains(want), "{value}: {e}");
        }
        let e = err(&["--url", BASE, "--fallback-url", "https://x.example/"]);
        assert!(e.contains("--fallback-url"), "{e}");
        let e = err(&["--url", BASE, "--fallback-url", BASE]);
        assert!(e.contains("is the transcriber itself"), "{e}");
        let e = args(&[
            "--url",
            BASE,
            "--no-fallback",
            "--fallback-provider",
            "deepgram",
        ])
        .expect_err("conflict")
        .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
        let e = args(&["--url", BASE, "--replace-fallback"])
            .expect_err("requires --apply")
            .to_string();
        assert!(e.contains("--apply"), "{e}");
        let (_, warnings) = plan(&[
            "--url",
            BASE,
            "--fallback-url",
            "ws://b.example.com/api/custom-transcriber",
        ])
        .unwrap();
        assert!(
            warnings.iter().any(|w| w.starts_with("--fallback-url")),
            "{warnings:?}"
        );
    }

    #[test]
    fn squad_flag_repeats_and_trims() {
        let v = printed(&[
            "--url",
            &format!("{BASE}/?k=v"),
            "--squad",
            "a=p1, b = p2",
            "--squad",
            "c=p_3",
        ]);
        let urls: Vec<_> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["assistantOverrides"]["transcriber"]["server"]["url"].clone())
            .collect();
        assert_eq!(
            urls,
            vec![
                json!(format!("{BASE}/p1?k=v")),
                json!(format!("{BASE}/p2?k=v")),
                json!(format!("{BASE}/p_3?k=v")),
            ]
        );
    }

    #[test]
    fn squad_needs_the_base_url() {
        let e = err(&["--url", &format!("{BASE}/sales"), "--squad", "a=b"]);
        assert!(
            e.contains("must be the base URL ending in /api/custom-transcriber"),
            "{e}"
        );
        let e = err(&["--url", "wss://h.example/", "--squad", "a=b"]);
        assert!(e.contains("must be the base URL"), "{e}");
        // A prefix before the base (a reverse proxy) is fine.
        let v = printed(&[
            "--url",
            "wss://h.example/hark/api/custom-transcriber",
            "--squad",
            "a=b",
        ]);
        assert_eq!(
            v[0]["assistantOverrides"]["transcriber"]["server"]["url"],
            "wss://h.example/hark/api/custom-transcriber/b"
        );
    }

    #[test]
    fn squad_entries_are_checked() {
        for (entry, want) in [
            ("sales", "is not NAME=PROFILE"),
            ("=sales", "no member name"),
            ("sales=", "profile name is empty"),
            ("sales=a/b", "may use only A-Z"),
            ("sales=es español", "may use only A-Z"),
            ("sales=x?y", "may use only A-Z"),
        ] {
            let e = args(&["--url", BASE, "--squad", entry])
                .expect_err(entry)
                .to_string();
            assert!(e.contains(want), "{entry}: {e}");
        }
        let e = err(&["--url", BASE, "--squad", "a=x,a=y"]);
        assert!(e.contains("\"a\" is given twice"), "{e}");
    }

    #[test]
    fn urls_are_checked() {
        let e = err(&["--url", "https://h.example/api/custom-transcriber"]);
        assert!(e.contains("use wss://"), "{e}");
        let e = err(&["--url", "http://h.example/api/custom-transcriber"]);
        assert!(e.contains("use ws://"), "{e}");
        let e = err(&["--url", "ftp://h.example/x"]);
        assert!(e.contains("must start with ws:// or wss://"), "{e}");
        let e = err(&["--url", "wss://not a url"]);
        assert!(e.contains("is not a URL"), "{e}");
        let e = err(&["--url", "h.example/api/custom-transcriber"]);
        assert!(e.contains("ws:// or wss://"), "{e}");
    }

    #[test]
    fn warnings() {
        let w = ServerUrl::parse("ws://h.example/api/custom-transcriber")
            .unwrap()
            .warnings(false);
        assert!(w.len() == 1 && w[0].contains("unencrypted"), "{w:?}");
        for url in [
            "ws://127.0.0.1:8080/api/custom-transcriber",
            "ws://localhost/api/custom-transcriber",
            "ws://[::1]:8080/api/custom-transcriber",
        ] {
            let w = ServerUrl::parse(url).unwrap().warnings(false);
            assert!(w.len() == 1 && w[0].contains("loopback"), "{url}: {w:?}");
        }
        let w = ServerUrl::parse(BASE).unwrap().warnings(false);
        assert!(w.is_empty(), "{w:?}");
        let w = ServerUrl::parse("wss://h.example/")
            .unwrap()
            .warnings(false);
        assert!(w.len() == 1 && w[0].contains("rewrites the path"), "{w:?}");
    }

    #[test]
    fn credentials_are_checked() {
        let e = args(&["--url", BASE, "--secret", "a", "--bearer", "b"])
            .expect_err("conflict")
            .to_string();
        assert!(e.contains("cannot be used with"), "{e}");
        for (flags, want) in [
            (["--secret", ""], "--secret is empty"),
            (["--secret", " s"], "whitespace"),
            (["--secret", "a\nb"], "printable ASCII"),
            (["--bearer", ""], "--bearer is empty"),
            (["--bearer", "Bearer tok"], "without the \"Bearer \" prefix"),
            (["--bearer", "a b"], "without spaces"),
        ] {
            let mut argv = vec!["--url", BASE];
            argv.extend(flags);
            let e = err(&argv);
            assert!(e.contains(want), "{flags:?}: {e}");
        }
    }

    #[test]
    fn a_trailing_slash_is_written_without_it_and_said() {
        for (typed, written) in [
            (format!("{BASE}/"), BASE.to_string()),
            (format!("{BASE}//"), BASE.to_string()),
            (format!("{BASE}/sales/"), format!("{BASE}/sales")),
            (format!("{BASE}/?x=1"), format!("{BASE}?x=1")),
        ] {
            let (plan, warnings) = plan(&["--url", &typed, "--secret", S3]).unwrap();
            let Plan::Print(v) = plan else {
                panic!("{typed}: expected something to print")
            };
            assert_eq!(v["server"]["url"], written.as_str(), "{typed}");
            assert_eq!(warnings.len(), 1, "{typed}: {warnings:?}");
            assert!(
                warnings[0].contains("trailing '/' was removed"),
                "{warnings:?}"
            );
        }
        // Other paths are the user's (or their proxy's) business.
        let v = printed(&["--url", "wss://h.example/stt/", "--secret", S3]);
        assert_eq!(v["server"]["url"], "wss://h.example/stt/");
        // The fallback URLs alike, so a fallback that differs only by a slash is itself.
        let e = err(&["--url", BASE, "--fallback-url", &format!("{BASE}/")]);
        assert!(e.contains("is the transcriber itself"), "{e}");
    }

    #[test]
    fn credentials_hark_serve_would_refuse_are_refused_or_warned() {
        for flags in [["--secret", "fifteen-chars-x"], ["--bearer", "short-token"]] {
            let mut argv = vec!["--url", BASE];
            argv.extend(flags);
            let e = err(&argv);
            assert!(
                e.contains("hark serve refuses") && e.contains("16 characters"),
                "{flags:?}: {e}"
            );
            assert!(!e.contains(flags[1]), "the value is not echoed: {e}");
        }
        // No credential at all is allowed (hark serve without auth), with a warning.
        let (_, warnings) = plan(&["--url", BASE]).unwrap();
        assert!(
            warnings.iter().any(|w| w.contains("without credentials")),
            "{warnings:?}"
        );
        let (_, warnings) = plan(&["--url", BASE, "--secret", "sixteen-chars-xx"]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn fallback_flags_that_drop_the_default_warn() {
        let (plan_auto, warnings) =
            plan(&["--url", BASE, "--secret", S3, "--auto-fallback"]).unwrap();
        let Plan::Print(v) = plan_auto else {
            panic!("expected something to print")
        };
        assert_eq!(v["fallbackPlan"]["transcribers"], json!([]));
        assert!(
            warnings.len() == 1 && warnings[0].contains("empty list of transcribers"),
            "{warnings:?}"
        );
        let other = "wss://hark-b.example.com/api/custom-transcriber";
        let (_, warnings) =
            plan(&["--url", BASE, "--secret", S3, "--fallback-url", other]).unwrap();
        assert!(
            warnings.len() == 1
                && warnings[0].contains("replaces the default fallback deepgram:nova-3")
                && warnings[0].contains("--fallback-provider deepgram:nova-3"),
            "{warnings:?}"
        );
        // Named explicitly, nothing to warn about.
        for extra in [
            &["--fallback-url", other, "--fallback-provider", "deepgram"][..],
            &["--fallback-url", other, "--auto-fallback"][..],
            &["--fallback-provider", "assembly-ai"][..],
            &["--auto-fallback", "--fallback-provider", "deepgram"][..],
        ] {
            let mut argv = vec!["--url", BASE, "--secret", S3];
            argv.extend(extra);
            let (_, warnings) = plan(&argv).unwrap();
            assert!(warnings.is_empty(), "{extra:?}: {warnings:?}");
        }
    }

    #[test]
    fn apply_arguments_are_checked() {
        let e = err(&["--url", BASE, "--squad", "a=b", "--apply", "x"]);
        assert!(e.contains("a squad is not an assistant"), "{e}");
        let e = err(&["--url", BASE, "--apply", "../phone-number/x"]);
        assert!(e.contains("is not an assistant id"), "{e}");
        let e = err(&[
            "--url",
            BASE,
            "--apply",
            "a",
            "--api-url",
            "http://api.example",
        ]);
        assert!(e.contains("unencrypted"), "{e}");
        let e = err(&["--url", BASE, "--apply", "a", "--api-url", "ftp://x"]);
        assert!(e.contains("https://"), "{e}");
        let e = args(&["--url", BASE, "--api-url", "https://x"])
            .expect_err("requires --apply")
            .to_string();
        assert!(e.contains("--apply"), "{e}");
        match plan(&[
            "--url",
            BASE,
            "--apply",
            "a-1",
            "--api-url",
            "http://127.0.0.1:9/v1/",
        ]) {
            Ok((
                Plan::Apply {
                    assistant_id, api, ..
                },
                _,
            )) => {
                assert_eq!(assistant_id, "a-1");
                assert_eq!(api.base, "http://127.0.0.1:9/v1");
                assert_eq!(api.key_env, DEFAULT_API_KEY_ENV);
            }
            other => panic!("{other:?}"),
        }
    }

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
