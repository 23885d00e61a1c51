//! Server configuration: a TOML file (`--config`), overridden by `HARK_…` environment
//! variables, overridden by flags. The last two are merged by clap in `main.rs`; this module
//! holds the shape, the defaults and the checks.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::backend::Options;
use crate::backend::assemblyai::AssemblyAiConfig;
use crate::backend::deepgram::DeepgramConfig;
use crate::backend::moonshine::{self, MoonshineConfig};
use crate::backend::riva::RivaConfig;
use crate::backend::whisper::{self, WhisperConfig};
use crate::protocol::Channel;

mod file_errors;

/// Name of the profile served at `/api/custom-transcriber` (no profile in the path).
pub const DEFAULT_PROFILE: &str = "default";
/// The embedded engine of profiles that name no backend, the default profile's among them:
/// Whisper tiny.en, which made fewer word errors than Moonshine through the server at the
/// same cost (BENCHMARKS.md, "Whisper").
pub const DEFAULT_ENGINE: &str = whisper::NAME;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// A second address for `/metrics`, `/readyz` and `/healthz` (Prometheus and the
    /// orchestrator's probes). When set, the call port serves only calls and `/healthz`:
    /// metrics and readiness name backends and profiles and count refused logins, which is
    /// no business of whoever can reach the call port.
    pub admin_listen: Option<SocketAddr>,
    /// A channel's recognizer more than this far behind real time fails the call.
    pub max_lag_ms: u64,
    /// Time a client has after the upgrade to send the start frame.
    pub start_timeout_ms: u64,
    /// Largest audio frame accepted, in bytes.
    pub max_frame_bytes: usize,
    /// Longest audio frame accepted, in ms of the call's audio. A channel's ring holds
    /// `max_lag_ms` + 1 s, so one frame longer than that would overflow it and fail the call
    /// as the server's lag; a frame over this bound is the client's error (`frame-too-long`,
    /// 1009). The platform sends 20 ms frames.
    pub max_frame_ms: u64,
    /// A started call with no frame at all (audio, ping, pong, anything) for this long is
    /// ended. A call quiet for a third of it is pinged and a live websocket answers by
    /// itself, so this finds peers that are gone, never a muted caller.
    pub idle_timeout_ms: u64,
    /// Longest call, in seconds; the platform's own ceiling is 12 hours.
    pub max_call_secs: u64,
    /// Messages a second a call may send on average (token bucket rate). The platform sends
    /// 50 (20 ms frames) or 100 (10 ms).
    pub max_messages_per_sec: u32,
    /// Messages a call may send at once above the rate: after a network stall TCP delivers
    /// the frames held back in one bunch; 3000 covers a 30 s stall (the idle limit) at
    /// 100 frames a second.
    pub message_burst: u32,
    /// What one call may hold in memory that grows with the client's behaviour: messages
    /// queued for a client that does not read them, and the replay buffers.
    pub max_call_memory_bytes: usize,
    /// Calls served at once; more are refused with 503 before the upgrade.
    pub max_sessions: usize,
    /// On SIGTERM, how long live calls may go on before they are closed.
    pub drain_timeout_ms: u64,
    /// Time a new connection has to finish its TLS handshake, and then to send each
    /// request's headers; slower clients are cut off (slow-loris).
    pub header_timeout_ms: u64,
    /// Open TCP connections that are not calls (requests, probes, upgrades under way; calls
    /// count against `max_sessions`). When all are held, the oldest is closed for a new one,
    /// so slow or idle clients never keep a call out. Each buffers at most 16 KiB of a
    /// request head (ARCHITECTURE.md, "Every connection is bounded").
    pub max_connections: usize,
    /// Upgraded calls still waiting for their start frame (each also holds a `max_sessions`
    /// slot); past this many, upgrades get 503. The platform sends the start frame at once,
    /// so only a burst of calls or a misbehaving client has many waiting.
    pub max_pending_starts: usize,
    pub log_format: LogFormat,
    pub auth: AuthConfig,
    pub tls: TlsConfig,
    pub moonshine: MoonshineConfig,
    /// The Whisper engine, loaded when a profile uses `backend = "whisper"`.
    pub whisper: WhisperConfig,
    /// Network recognizers by the name profiles use for them (`[backends.NAME]`).
    pub backends: BTreeMap<String, BackendConfig>,
    /// Named profiles, served at `/api/custom-transcriber/{name}`.
    pub profiles: BTreeMap<String, Profile>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            admin_listen: None,
            max_lag_ms: 4_000,
            start_timeout_ms: 10_000,
            max_frame_bytes: 256 * 1024,
            max_frame_ms: 1_000,
            idle_timeout_ms: 30_000,
            max_call_secs: 43_200,
            max_messages_per_sec: 200,
            message_burst: 3_000,
            max_call_memory_bytes: 64 * 1024 * 1024,
            max_sessions: 64,
            drain_timeout_ms: 30_000,
            header_timeout_ms: 10_000,
            max_connections: 1_024,
            max_pending_starts: 32,
            log_format: LogFormat::Text,
            auth: AuthConfig::default(),
            tls: TlsConfig::default(),
            moonshine: MoonshineConfig::default(),
            whisper: WhisperConfig::default(),
            backends: BTreeMap::new(),
            profiles: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Expected `x-vapi-secret` header (the platform's `server.secret`).
    pub secret: Option<String>,
    /// Accepted `Authorization: Bearer` tokens.
    pub bearer_tokens: Vec<String>,
}

/// Shortest secret or bearer token accepted. A shared secret guessed online is a key to
/// paid recognizers and live calls: 16 characters of `openssl rand -hex 16` carry 64 bits
/// and 32 (the advice printed) 128, while an empty one, which an empty Kubernetes Secret
/// gives, would turn auth on with an empty password.
pub const MIN_SECRET_CHARS: usize = 16;

impl AuthConfig {
    /// Every secret or token too short to be one, by the key it came from, never the value.
    pub fn problems(&self) -> Vec<String> {
        let advice = "make one with `openssl rand -hex 32`";
        let mut out = Vec::new();
        if let Some(secret) = &self.secret
            && secret.trim().chars().count() < MIN_SECRET_CHARS
        {
            out.push(format!(
                "auth.secret (HARK_SECRET) is {}: at least {MIN_SECRET_CHARS} characters are needed; {advice}",
                if secret.trim().is_empty() { "empty" } else { "too short" }
            ));
        }
        for (i, token) in self.bearer_tokens.iter().enumerate() {
            if token.trim().chars().count() < MIN_SECRET_CHARS {
                out.push(format!(
                    "auth.bearer_tokens[{i}] (HARK_BEARER_TOKENS) is {}: at least {MIN_SECRET_CHARS} characters are needed; {advice}",
                    if token.trim().is_empty() { "empty" } else { "too short" }
                ));
            }
        }
        out
    }

    pub fn is_enabled(&self) -> bool {
        self.secret.is_some() || !self.bearer_tokens.is_empty()
    }
}

/// Serving `wss://` (and `https://`) itself; off by default (plain ws behind an ingress).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain, leaf first.
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// How often the two files' modification times are checked; a change reloads them
    /// (as SIGHUP does). 0: only on SIGHUP.
    pub watch_interval_ms: u64,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            cert: None,
            key: None,
            watch_interval_ms: 5_000,
        }
    }
}

impl TlsConfig {
    pub fn is_enabled(&self) -> bool {
        self.cert.is_some() || self.key.is_some()
    }
}

/// A network recognizer: one variant, and one module under `backend/`, per type.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum BackendConfig {
    Deepgram(DeepgramConfig),
    Assemblyai(AssemblyAiConfig),
    Riva(RivaConfig),
}

impl BackendConfig {
    /// A section read as the type its `type` names (`rest` is the section without it), or
    /// None for a type there is none of. serde reads a tagged section as a whole, so its
    /// errors lose the key they are about; read this way they keep it (`file_errors`).
    fn read_as(
        kind: &str,
        rest: toml::Table,
    ) -> Option<Result<Self, serde_path_to_error::Error<toml::de::Error>>> {
        use serde_path_to_error::deserialize;
        Some(match kind {
            "deepgram" => deserialize(rest).map(Self::Deepgram),
            "assemblyai" => deserialize(rest).map(Self::Assemblyai),
            "riva" => deserialize(rest).map(Self::Riva),
            _ => return None,
        })
    }

    /// What its own section says is wrong.
    pub fn problems(&self) -> Vec<String> {
        match self {
            Self::Deepgram(c) => c.problems(),
            Self::Assemblyai(c) => c.problems(),
            Self::Riva(c) => c.problems(),
        }
    }

    /// The environment variable holding the backend's API key, if it takes one.
    pub fn api_key_env(&self) -> Option<&str> {
        match self {
            Self::Deepgram(c) => Some(&c.api_key_env),
            Self::Assemblyai(c) => Some(&c.api_key_env),
            Self::Riva(c) => c.api_key_env.as_deref(),
        }
    }
}

/// How a URL's calls are recognised.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Profile {
    pub backend: String,
    /// Backends tried in order when the one before cannot start or fails mid-call.
    pub fallback: Vec<String>,
    /// The channels to transcribe; audio of the others is read and dropped.
    pub channels: Vec<Channel>,
    /// Passed to the backend with each channel.
    pub options: Options,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            backend: DEFAULT_ENGINE.into(),
            fallback: Vec::new(),
            channels: vec![Channel::Customer, Channel::Assistant],
            options: Options::default(),
        }
    }
}

impl Profile {
    /// The backends to try, in order.
    pub fn chain(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.backend.as_str()).chain(self.fallback.iter().map(String::as_str))
    }
}

impl Config {
    /// Whether `engine` (an embedded one) must load the end-of-turn model: on in its
    /// section, or turned on by a profile whose chain runs it.
    pub fn wants_turn_model(&self, engine: &str) -> bool {
        let section = match engine {
            moonshine::NAME => self.moonshine.turn_model,
            whisper::NAME => self.whisper.turn_model,
            _ => false,
        };
        section
            || self
                .profiles
                .values()
                .any(|p| p.options.turn_model == Some(true) && p.chain().any(|b| b == engine))
    }

    /// Reads a config file; a missing `path` gives the defaults.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        Self::from_toml(&text)
            .map_err(|e| anyhow::anyhow!("invalid config file {}: {e}", path.display()))
    }

    /// A config file's text read as a config; the error names the key by its full path
    /// (`backends.x.url`) and line, says what was expected in words, and never shows the
    /// value of a key that holds a secret.
    /// (The error is the lines a person reads; nothing branches on it.)
    pub fn from_toml(text: &str) -> Result<Self, String> {
        file_errors::parse(text)
    }

    /// The profile for a URL, with the default profile always present.
    /// Whether some profile's chain (the default profile's included) uses `backend`: an
    /// embedded engine is loaded only then.
    pub fn uses(&self, backend: &str) -> bool {
        !self.profiles_using(backend).is_empty()
    }

    /// The profiles whose chain names `backend`, the implicit default profile included.
    pub fn profiles_using(&self, backend: &str) -> Vec<&str> {
        let default = (!self.profiles.contains_key(DEFAULT_PROFILE)
            && Profile::default().chain().any(|b| b == backend))
        .then_some(DEFAULT_PROFILE);
        default
            .into_iter()
            .chain(
                self.profiles
                    .iter()
                    .filter(|(_, p)| p.chain().any(|b| b == backend))
                    .map(|(name, _)| name.as_str()),
            )
            .collect()
    }

    /// Every profile a call may name: the default first (defined or implicit), then the
    /// others in name order.
    pub fn profile_names(&self) -> Vec<&str> {
        let others = self.profiles.keys().map(String::as_str);
        std::iter::once(DEFAULT_PROFILE)
            .chain(others.filter(|n| *n != DEFAULT_PROFILE))
            .collect()
    }

    pub fn profile(&self, name: &str) -> Option<Profile> {
        match self.profiles.get(name) {
            Some(p) => Some(p.clone()),
            None if name == DEFAULT_PROFILE => Some(Profile::default()),
            None => None,
        }
    }

    /// Rejects settings that would make the server misbehave, listing every problem.
    pub fn validate(&self, backends: &[&str]) -> anyhow::Result<()> {
        refuse_problems(&self.problems(backends))
    }

    /// What the config allows but a user most likely did not mean: said by `check-config`
    /// and logged by `serve`, which still start.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let open = self.auth.secret.is_none() && self.auth.bearer_tokens.is_empty();
        if open && !self.listen.ip().is_loopback() {
            out.push(format!(
                "listen = \"{}\" takes calls from other machines without a credential: \
                 anyone who reaches the port can send audio to the recognizer (set \
                 auth.secret or HARK_SECRET, the platform's server.secret)",
                self.listen
            ));
        }
        for (name, p) in &self.profiles {
            let embedded = p
                .chain()
                .any(|b| b == moonshine::NAME || b == whisper::NAME);
            for (key, set) in [
                ("turn_model", p.options.turn_model),
                ("hold_unfinished", p.options.hold_unfinished),
            ] {
                if set == Some(true) && !embedded {
                    out.push(format!(
                        "profile {name:?} sets {key}, which only the embedded engines read: \
                         its backends ({}) end finals as their providers do",
                        p.chain().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        out
    }

    /// Why a profile's embedded engines cannot transcribe `language`: each of its chain
    /// must, or a fallback would carry the call on in another language.
    fn language_problems(&self, profile: &Profile, language: &str) -> Vec<String> {
        let mut out = Vec::new();
        for relay in profile.chain().filter(|b| self.backends.contains_key(*b)) {
            if let Err(e) = crate::backend::options::relay_language(relay, language) {
                out.push(e);
            }
        }
        if profile.chain().any(|b| b == moonshine::NAME)
            && let Err(e) = (crate::backend::embedded::english_only(moonshine::NAME))(language)
        {
            out.push(e);
        }
        if profile.chain().any(|b| b == whisper::NAME) {
            match hark_whisper::Spoken::parse(language) {
                Err(e) => out.push(e.to_string()),
                Ok(spoken) if self.whisper.speaks(spoken) == Some(false) => out.push(format!(
                    "language = {language:?} needs a multilingual Whisper model, and \
                     whisper.model = {:?}{} is English only (base, the default finals' \
                     model, speaks 99 languages)",
                    self.whisper.model,
                    match self.whisper.finals_model() {
                        Some(f) => format!(" with final_model = {f:?}"),
                        None => String::new(),
                    }
                )),
                Ok(_) => {}
            }
        }
        out
    }

    /// Every setting that would make the server misbehave, each naming its culprit, so an
    /// operator fixes them all in one go (`hark check-config`). `backends` are the names
    /// profiles may use.
    pub fn problems(&self, backends: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        if self.max_lag_ms < 500 {
            out.push(format!(
                "max_lag_ms must be at least 500 (got {})",
                self.max_lag_ms
            ));
        }
        if let Some(admin) = self.admin_listen
            && admin.port() != 0
            && admin.port() == self.listen.port()
            && (admin.ip() == self.listen.ip()
                || admin.ip().is_unspecified()
                || self.listen.ip().is_unspecified())
        {
            out.push(format!(
                "admin_listen ({admin}) must be another address than listen ({})",
                self.listen
            ));
        }
        if self.max_sessions == 0 {
            out.push("max_sessions must be at least 1".into());
        }
        out.extend(self.auth.problems());
        if self.tls.cert.is_some() != self.tls.key.is_some() {
            out.push("tls.cert and tls.key go together: set both or neither".into());
        }
        for (key, path) in [("tls.cert", &self.tls.cert), ("tls.key", &self.tls.key)] {
            if let Some(path) = path
                && !path.is_file()
            {
                out.push(format!("{key}: {} is not a readable file", path.display()));
            }
        }
        if self.header_timeout_ms == 0 {
            out.push("header_timeout_ms must be at least 1".into());
        }
        if self.max_connections == 0 || self.max_pending_starts == 0 {
            out.push("max_connections and max_pending_starts must be at least 1".into());
        }
        if self.max_frame_bytes < 1024 {
            out.push(format!(
                "max_frame_bytes must be at least 1024 (got {})",
                self.max_frame_bytes
            ));
        }
        if self.max_frame_ms < 20 || (self.max_lag_ms >= 500 && self.max_frame_ms > self.max_lag_ms)
        {
            out.push(format!(
                "max_frame_ms must be from 20 to max_lag_ms ({}), so that one frame always fits a channel's buffer (got {})",
                self.max_lag_ms, self.max_frame_ms
            ));
        }
        if self.idle_timeout_ms < 100 {
            out.push(format!(
                "idle_timeout_ms must be at least 100 (got {})",
                self.idle_timeout_ms
            ));
        }
        if self.max_call_secs == 0 {
            out.push("max_call_secs must be at least 1".into());
        }
        if self.max_messages_per_sec == 0 || self.message_burst == 0 {
            out.push("max_messages_per_sec and message_burst must be at least 1".into());
        }
        if self.max_call_memory_bytes < 64 * 1024 {
            out.push(format!(
                "max_call_memory_bytes must be at least 65536 (got {})",
                self.max_call_memory_bytes
            ));
        }
        out.extend(self.moonshine.problems());
        for (name, p) in &self.profiles {
            let mut seen = Vec::new();
            for b in p.chain() {
                if !backends.contains(&b) {
                    out.push(format!(
                        "profile {name:?} uses backend {b:?}, which does not exist (known: {})",
                        backends.join(", ")
                    ));
                }
                if seen.contains(&b) {
                    out.push(format!("profile {name:?} lists backend {b:?} twice"));
                }
                seen.push(b);
            }
            if p.channels.is_empty() {
                out.push(format!(
                    "profile {name:?} transcribes no channel: `channels` is empty"
                ));
            }
            if p.channels.len() == 2 && p.channels[0] == p.channels[1] {
                out.push(format!("profile {name:?} lists a channel twice"));
            }
            for e in p.options.problems() {
                out.push(format!("profile {name:?}: {e}"));
            }
            // A tag that is not one is said once, above.
            if let Some(language) = &p.options.language
                && crate::backend::options::check_language(language).is_ok()
            {
                out.extend(
                    self.language_problems(p, language)
                        .into_iter()
                        .map(|e| format!("profile {name:?}: {e}")),
                );
            }
        }
        for (name, backend) in &self.backends {
            for e in backend.problems() {
                out.push(format!("[backends.{name}] {e}"));
            }
        }
        for engine in [moonshine::NAME, whisper::NAME] {
            if self.backends.contains_key(engine) {
                out.push(format!(
                    "[backends.{engine}]: \"{engine}\" is a built-in embedded recognizer; choose another name"
                ));
            }
        }
        if self.uses(whisper::NAME) {
            out.extend(self.whisper.problems());
        }
        out
    }

    /// The config as TOML, every key with its value, for `hark check-config`: secrets are
    /// shown as `***`, and keys without a value (which TOML cannot write) are listed in a
    /// comment at the top so none goes unmentioned.
    pub fn to_masked_toml(&self) -> anyhow::Result<String> {
        let mut masked = self.clone();
        if masked.auth.secret.is_some() {
            masked.auth.secret = Some(MASK.into());
        }
        for token in &mut masked.auth.bearer_tokens {
            *token = MASK.into();
        }
        // A URL may carry a token in its user info or query.
        for backend in masked.backends.values_mut() {
            match backend {
                BackendConfig::Deepgram(c) => c.url = crate::backend::masked_url(&c.url),
                BackendConfig::Assemblyai(c) => c.url = crate::backend::masked_url(&c.url),
                BackendConfig::Riva(c) => {
                    for url in c.url.iter_mut() {
                        *url = crate::backend::masked_url(url);
                    }
                    // Metadata may carry a credential of the hosted API's own.
                    for value in c.metadata.values_mut() {
                        *value = MASK.into();
                    }
                }
            }
        }
        let mut unset = Vec::new();
        unset_keys(&serde_json::to_value(&masked)?, "", &mut unset);
        let mut out = toml::to_string_pretty(&masked)?;
        // Optional keys without a value cannot be written in TOML: named after the rest,
        // so the effective values come first.
        if !unset.is_empty() {
            out.push_str(&format!(
                "\n# {} optional keys not set (samples/hark.toml shows each): {}\n",
                unset.len(),
                unset.join(", ")
            ));
        }
        Ok(out)
    }

    pub fn max_lag(&self) -> Duration {
        Duration::from_millis(self.max_lag_ms)
    }

    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }

    pub fn start_timeout(&self) -> Duration {
        Duration::from_millis(self.start_timeout_ms)
    }

    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }

    /// The per-call limits a session enforces.
    pub fn call_limits(&self) -> CallLimits {
        CallLimits {
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            max_call: Duration::from_secs(self.max_call_secs),
            messages_per_sec: self.max_messages_per_sec,
            message_burst: self.message_burst,
            max_memory_bytes: self.max_call_memory_bytes,
        }
    }
}

/// Limits that end only the call that passes them (see the `Config` fields of the same
/// meaning).
#[derive(Debug, Clone, Copy)]
pub struct CallLimits {
    pub idle_timeout: Duration,
    pub max_call: Duration,
    pub messages_per_sec: u32,
    pub message_burst: u32,
    pub max_memory_bytes: usize,
}

/// An error listing all `problems`, if there are any.
pub fn refuse_problems(problems: &[String]) -> anyhow::Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "the config has {} problem(s):\n  - {}",
        problems.len(),
        problems.join("\n  - ")
    )
}

/// What secrets are shown as.
pub const MASK: &str = "***";

/// The dotted paths of the null (unset optional) values under `value`.
fn unset_keys(value: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Null => out.push(path.to_string()),
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                unset_keys(v, &child, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_sample_config() {
        let text = include_str!("../samples/hark.toml");
        let c: Config = toml::from_str(text).unwrap();
        assert!(c.profile("sales").is_some());
        c.validate(&["moonshine", "whisper"]).unwrap();
    }

    /// `samples/hark.toml` "shows every key with its default": each top-level, `[tls]` and
    /// `[moonshine]` key appears (set or commented out), and every value it sets outside
    /// its example profile is the default.
    #[test]
    fn the_sample_config_shows_every_key_with_its_default() {
        let text = include_str!("../samples/hark.toml");
        let mut sample: Config = toml::from_str(text).unwrap();
        sample.profiles.clear();
        let sample = serde_json::to_value(&sample).unwrap();
        let default = serde_json::to_value(Config::default()).unwrap();
        assert_eq!(
            sample, default,
            "samples/hark.toml differs from the defaults"
        );
        let shown = |key: &str| {
            text.lines().any(|l| {
                let l = l.trim_start_matches('#').trim_start();
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
        };
        let serde_json::Value::Object(top) = &default else {
            panic!("a table")
        };
        for (key, value) in top {
            match value {
                serde_json::Value::Object(section) if key != "backends" && key != "profiles" => {
                    for sub in section.keys().filter(|k| *k != "options") {
                        assert!(shown(sub), "{key}.{sub} is not in samples/hark.toml");
                    }
                }
                serde_json::Value::Object(_) => {}
                _ => assert!(shown(key), "{key} is not in samples/hark.toml"),
            }
        }
        assert!(text.contains("type = \"riva\""), "a Riva example");
    }

    #[test]
    fn unknown_keys_and_backends_are_named() {
        let err = toml::from_str::<Config>("max_lagg_ms = 3").unwrap_err();
        assert!(err.to_string().contains("max_lagg_ms"), "{err}");
        let c: Config = toml::from_str("[profiles.x]\nbackend = \"nope\"").unwrap();
        let err = c
            .validate(&["moonshine", "whisper"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn backends_are_typed_and_misspelt_keys_are_named() {
        let c: Config = toml::from_str(
            r#"
            [backends.dg]
            type = "deepgram"
            url = "ws://127.0.0.1:9/v1/listen"
            model = "nova-2-phonecall"
            [backends.aai]
            type = "assemblyai"
            api_key_env = "AAI_KEY"
            [profiles.sales]
            backend = "dg"
            fallback = ["aai", "moonshine"]
            channels = ["customer"]
            options = { language = "en-US", keyterms = ["Acme"] }
            "#,
        )
        .unwrap();
        c.validate(&["moonshine", "dg", "aai"]).unwrap();
        assert!(
            matches!(c.backends["dg"], BackendConfig::Deepgram(ref d) if d.model == "nova-2-phonecall")
        );
        assert_eq!(c.backends["aai"].api_key_env(), Some("AAI_KEY"));
        let sales = c.profile("sales").unwrap();
        assert_eq!(
            sales.chain().collect::<Vec<_>>(),
            ["dg", "aai", "moonshine"]
        );
        assert_eq!(sales.channels, [Channel::Customer]);

        for (text, culprit) in [
            (
                "[backends.x]\ntype = \"deepgram\"\nmodle = \"nova-3\"",
                "modle",
            ),
            ("[backends.x]\ntype = \"whisper\"", "whisper"),
            ("[backends.x]\nurl = \"ws://h\"", "type"),
            ("[profiles.p]\nchanels = [\"customer\"]", "chanels"),
            ("[profiles.p]\nchannels = [\"caller\"]", "caller"),
            ("[profiles.p.options]\nendpoint = 300", "endpoint"),
        ] {
            let err = toml::from_str::<Config>(text).unwrap_err().to_string();
            assert!(err.contains(culprit), "{text}: {err}");
        }
        let bad = |text: &str| {
            let c: Config = toml::from_str(text).unwrap();
            c.validate(&["moonshine", "whisper"])
                .unwrap_err()
                .to_string()
        };
        assert!(bad("[profiles.p]\nchannels = []").contains("no channel"));
        assert!(bad("[profiles.p]\nfallback = [\"whisper\"]").contains("twice"));
        assert!(bad("[profiles.p.options]\nlanguage = \"en US\"").contains("language"));
        assert!(bad("[backends.moonshine]\ntype = \"deepgram\"").contains("built-in"));
    }

    #[test]
    fn query_overrides_apply_or_are_refused_with_a_reason() {
        let base = Options {
            language: Some("en".into()),
            ..Options::default()
        };
        let o = base
            .with_query("language=es&keyterms=Acme,%20refund,")
            .unwrap();
        assert_eq!(o.language.as_deref(), Some("es"));
        assert_eq!(
            o.keyterms,
            Some(vec!["Acme".to_string(), "refund".to_string()])
        );
        assert_eq!(base.with_query("").unwrap(), base);
        let o = base
            .with_query("end_of_turn_quick_threshold=0.95&min_turn_silence_ms=120")
            .unwrap();
        assert_eq!(o.end_of_turn_quick_threshold, Some(0.95));
        assert_eq!(o.min_turn_silence_ms, Some(120));
        for (query, culprit) in [
            (
                "end_of_turn_quick_threshold=2",
                "end_of_turn_quick_threshold",
            ),
            ("min_turn_silence_ms=9000", "min_turn_silence_ms"),
            ("lang=es", "lang"),
            ("language=es;DROP", "language"),
            ("endpointing_ms=fast", "endpointing_ms"),
            ("endpoint_ms=10", "endpoint_ms"),
            (&format!("keyterms={}", "x".repeat(51)), "keyterm"),
        ] {
            let err = base.with_query(query).unwrap_err();
            assert!(err.contains(culprit), "{query}: {err}");
        }
    }

    /// A profile's language must be one every embedded engine of its chain speaks: a
    /// fallback that cannot would carry the call on in English.
    #[test]
    fn a_language_the_chain_cannot_speak_is_refused() {
        let problems = |text: &str| {
            let config = Config::from_toml(text).expect("parses");
            config.problems(&[whisper::NAME, moonshine::NAME])
        };
        let spanish = "[profiles.es]\nbackend = \"whisper\"\noptions = { language = \"es\" }\n";
        assert_eq!(
            problems(spanish),
            Vec::<String>::new(),
            "base speaks Spanish"
        );
        let auto = spanish.replace("\"es\"", "\"auto\"");
        assert_eq!(problems(&auto), Vec::<String>::new());
        let english_only = format!("[whisper]\nfinal_model = \"tiny.en\"\n{spanish}");
        let p = problems(&english_only);
        assert!(
            p.len() == 1 && p[0].contains("needs a multilingual Whisper model"),
            "{p:?}"
        );
        let moonshine_behind = spanish.replace(
            "backend = \"whisper\"",
            "backend = \"whisper\"\nfallback = [\"moonshine\"]",
        );
        let p = problems(&moonshine_behind);
        assert!(
            p.len() == 1 && p[0].contains("moonshine transcribes English only"),
            "{p:?}"
        );
        let unknown = spanish.replace("\"es\"", "\"tlh\"");
        let p = problems(&unknown);
        assert!(
            p.len() == 1 && p[0].contains("not one Whisper transcribes"),
            "{p:?}"
        );
        let english = spanish.replace("\"es\"", "\"en-GB\"");
        assert_eq!(
            problems(&format!("[whisper]\nfinal_model = \"tiny.en\"\n{english}")),
            Vec::<String>::new()
        );
    }

    #[test]
    fn turn_model_on_a_profile_without_an_embedded_engine_is_warned_of() {
        let relayed = "[backends.dg]\ntype = \"deepgram\"\n\
                       [profiles.p]\nbackend = \"dg\"\noptions = { turn_model = true }\n";
        let config = Config::from_toml(relayed).expect("parses");
        let w = config.warnings();
        assert!(
            w.len() == 1 && w[0].contains("only the embedded engines read"),
            "{w:?}"
        );
        // Whisper reads it, and loads the model for that profile even when its section
        // has it off.
        let whisper = "[whisper]\nturn_model = false\n\
                       [profiles.p]\nbackend = \"whisper\"\noptions = { turn_model = true }\n";
        let config = Config::from_toml(whisper).expect("parses");
        assert!(config.warnings().is_empty(), "{:?}", config.warnings());
        assert!(config.wants_turn_model(whisper::NAME));
        assert!(!config.wants_turn_model(moonshine::NAME));
        let off = Config::from_toml("[whisper]\nturn_model = false\n").expect("parses");
        assert!(!off.wants_turn_model(whisper::NAME));
        assert!(!Config::default().wants_turn_model(whisper::NAME));
    }

    #[test]
    fn every_problem_is_collected_not_just_the_first() {
        let c: Config = toml::from_str(
            r#"
            max_lag_ms = 10
            max_sessions = 0
            max_frame_bytes = 10
            [moonshine]
            pool_size = 0
            max_load = 2.0
            options = { vad_hop_size = "256" }
            [profiles.p]
            backend = "nope"
            fallback = ["moonshine", "moonshine"]
            channels = []
            options = { language = "en US", end_of_turn_confidence_threshold = 3.0 }
            "#,
        )
        .unwrap();
        let problems = c.problems(&["moonshine", "whisper"]);
        for culprit in [
            "max_lag_ms",
            "max_sessions",
            "max_frame_bytes",
            "pool_size",
            "max_load",
            "vad_hop_size",
            "\"nope\"",
            "twice",
            "no channel",
            "language",
            "end_of_turn_confidence_threshold",
        ] {
            assert_eq!(
                problems.iter().filter(|p| p.contains(culprit)).count(),
                1,
                "{culprit}: {problems:#?}"
            );
        }
        assert_eq!(problems.len(), 11, "{problems:#?}");
        let err = c
            .validate(&["moonshine", "whisper"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("11 problem(s)"), "{err}");
        assert!(problems.iter().all(|p| err.contains(p.as_str())), "{err}");
        assert!(
            Config::default()
                .problems(&["moonshine", "whisper"])
                .is_empty()
        );
    }

    #[test]
    fn masked_toml_hides_secrets_names_unset_keys_and_reads_back() {
        let mut c: Config = toml::from_str(include_str!("../samples/hark.toml")).unwrap();
        c.auth.secret = Some("s3cret-value".into());
        c.auth.bearer_tokens = vec!["tok-one".into(), "tok-two".into()];
        let text = c.to_masked_toml().unwrap();
        for secret in ["s3cret-value", "tok-one", "tok-two"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("secret = \"***\""), "{text}");
        assert!(text.contains("moonshine.cache_dir"), "{text}");
        // Every value is printed: the output reads back as the same config, secrets aside.
        let back: Config = toml::from_str(&text).unwrap();
        assert_eq!(back.auth.bearer_tokens, [MASK, MASK]);
        assert_eq!(back.max_lag_ms, c.max_lag_ms);
        assert_eq!(back.listen, c.listen);
        assert_eq!(back.profiles.len(), c.profiles.len());
        assert_eq!(back.moonshine.endpoint_ms, c.moonshine.endpoint_ms);
    }

    #[test]
    fn parse_errors_name_the_place_and_the_key_but_never_a_value() {
        for (text, named) in [
            (
                "[auth]\nsecrt = \"hunter2-very-secret-value\"\n",
                "auth.secrt",
            ),
            (
                "[auth]\nbearer_tokens = \"hunter2-very-secret-value\"\n",
                "line 2, auth.bearer_tokens",
            ),
            (
                "[auth]\nsecret = \"hunter2-very-secret-value\n",
                "auth.secret",
            ),
            (
                "[auth]\nsecret = \"hunter2-very-secret-value\"\nsecret = \"hunter2-other\"\n",
                "line 3, column 1, auth.secret: set twice",
            ),
            (
                "[backends.x]\ntype = \"riva\"\nmetadata = { \"function-id\" = 7 }\n",
                "backends.x.metadata.function-id: expected a string, got the number ***",
            ),
        ] {
            let shown = Config::from_toml(text).unwrap_err();
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains(named), "{named}: {shown}");
        }
    }

    /// Every kind of error a config file can have names its key by its full dotted path
    /// and its line, says what was expected in words a user knows, and shows the value
    /// found when it is no secret.
    #[test]
    fn every_config_error_names_its_key_in_a_users_words() {
        for (text, said) in [
            // A value of the wrong type, at the top, in a table, in a backend's section
            // (which serde reads as a whole), in a list, in a profile's options.
            (
                "max_lag_ms = \"soon\"",
                "line 1, max_lag_ms: expected a whole number (0 or more), got the string \"soon\"",
            ),
            (
                "max_sessions = -1",
                "line 1, max_sessions: expected a whole number (0 or more), got the number -1",
            ),
            (
                "max_messages_per_sec = 5000000000",
                "max_messages_per_sec: expected a whole number from 0 to 4294967295, got the number 5000000000",
            ),
            (
                "[moonshine]\npool_size = 1\nmax_load = \"high\"",
                "line 3, moonshine.max_load: expected a number, got the string \"high\"",
            ),
            (
                "[whisper]\nshed = \"partial\"",
                "line 2, whisper.shed: \"partial\" is not one of: nothing, beam, partials, context, finals_model, speculative",
            ),
            (
                "[tls]\nwatch_interval_ms = true",
                "line 2, tls.watch_interval_ms: expected a whole number (0 or more), got true",
            ),
            (
                "[backends.x]\ntype = \"riva\"\n\nurl = 50051\n",
                "line 4, backends.x.url: expected a string or a list of strings",
            ),
            (
                "[backends.x]\ntype = \"riva\"\nurl = [\"grpc://a:50051\"]\nconnections = \"two\"\n",
                "line 4, backends.x.connections: expected a whole number (0 or more), got the string \"two\"",
            ),
            (
                "[backends.dg]\ntype = \"deepgram\"\npunctuate = \"yes\"",
                "line 3, backends.dg.punctuate: expected true or false, got the string \"yes\"",
            ),
            (
                "[backends.aai]\ntype = \"assemblyai\"\nkeyterms = \"Acme\"",
                "line 3, backends.aai.keyterms: expected a list, got the string \"Acme\"",
            ),
            (
                "[profiles.p]\nchannels = [\"customer\", \"caller\"]",
                "line 2, profiles.p.channels[1]: \"caller\" is not one of: customer, assistant",
            ),
            (
                "[profiles.p.options]\nendpoint_ms = \"fast\"",
                "line 2, profiles.p.options.endpoint_ms: expected a whole number (0 or more), got the string \"fast\"",
            ),
            (
                "log_format = \"xml\"",
                "line 1, log_format: \"xml\" is not one of: text, json",
            ),
            (
                "listen = \"localhost:8095\"",
                "line 1, listen: expected an IP:PORT address",
            ),
            // Unknown, missing and repeated keys.
            (
                "[backends.x]\ntype = \"deepgram\"\nmodle = \"nova-3\"",
                "line 3, backends.x.modle: unknown key (known here: url, api_key_env, model",
            ),
            (
                "[backends.x]\nurl = \"wss://h\"",
                "backends.x.type: missing",
            ),
            (
                "[backends.x]\ntype = \"whisperx\"",
                "line 2, backends.x.type: \"whisperx\" is not one of: deepgram, assemblyai, riva",
            ),
            (
                "[moonshine]\npool_size = 1\npool_sise = 2",
                "line 3, moonshine.pool_sise: unknown key",
            ),
            (
                "max_lag_ms = 1000\nmax_lag_ms = 2000",
                "line 2, column 1, max_lag_ms: set twice",
            ),
            (
                "[backends.x]\ntype = \"riva\"\nmodel = \"a\"\nmodel = \"b\"",
                "line 4, column 1, backends.x.model: set twice",
            ),
            (
                "[profiles.p]\nbackend = \"moonshine\"\n[profiles.p]\n",
                "profiles.p: this table is defined twice",
            ),
            // Not TOML at all.
            ("[moonshine]\nendpoint_ms = soon\n", "line 2, column "),
            (
                "[moonshine]\nendpoint_ms = soon\n",
                "moonshine.endpoint_ms: ",
            ),
        ] {
            let shown = Config::from_toml(text).unwrap_err();
            assert!(
                shown.contains(said),
                "{text}\n  said: {shown}\n  want: {said}"
            );
            for rust in ["u64", "u32", "usize", "f64", "struct ", "sequence", "a map"] {
                assert!(!shown.contains(rust), "{text}: {shown}");
            }
        }
    }

    #[test]
    fn every_wrong_key_of_a_file_is_named_at_once() {
        let text = "max_lag_ms = \"soon\"\n[whisper]\ndecoders = \"two\"\nshed = \"partial\"\n\
                    [profiles.p]\nchannels = [\"caller\"]\n[backends.x]\ntype = \"deepgram\"\n\
                    modle = \"nova-3\"\n";
        let shown = Config::from_toml(text).unwrap_err();
        for said in [
            "line 1, max_lag_ms: expected a whole number",
            "line 3, whisper.decoders: expected a whole number",
            "line 4, whisper.shed: \"partial\" is not one of",
            "profiles.p.channels[0]: \"caller\" is not one of",
            "backends.x.modle: unknown key",
        ] {
            assert!(shown.contains(said), "{said}\n{shown}");
        }
        assert_eq!(shown.lines().count(), 5, "{shown}");
    }

    /// The problems in the file's order, whatever order serde meets them in (the file's
    /// tables alphabetically), and a mistyped key named with the one it most likely meant.
    #[test]
    fn a_files_problems_come_in_line_order_with_the_key_meant() {
        let text = "zz = 1\n[moonshine]\npool_sise = 2\n[backends.x]\ntype = \"deepgram\"\n\
                    modle = \"nova-3\"\n";
        let shown = Config::from_toml(text).unwrap_err();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        assert!(lines[0].starts_with("line 1, zz: unknown key"), "{shown}");
        assert!(!lines[0].contains("did you mean"), "{shown}");
        assert!(
            lines[1].starts_with("line 3, moonshine.pool_sise: unknown key")
                && lines[1].ends_with("; did you mean pool_size?"),
            "{shown}"
        );
        assert!(
            lines[2].starts_with("line 6, backends.x.modle: unknown key")
                && lines[2].ends_with("; did you mean model?"),
            "{shown}"
        );
    }

    #[test]
    fn empty_or_short_secrets_are_refused_by_their_key() {
        let mut c = Config::default();
        c.auth.secret = Some(String::new());
        c.auth.bearer_tokens = vec!["short-token".into(), "a-long-enough-token-value".into()];
        let problems = c.problems(&["moonshine", "whisper"]);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].contains("auth.secret") && problems[0].contains("empty"));
        assert!(problems[1].contains("bearer_tokens[0]") && problems[1].contains("too short"));
        assert!(problems.iter().all(|p| !p.contains("short-token")));
    }

    #[test]
    fn call_limits_have_defaults_and_nonsense_is_named() {
        let c: Config = toml::from_str("idle_timeout_ms = 5000").unwrap();
        let limits = c.call_limits();
        assert_eq!(limits.idle_timeout, Duration::from_secs(5));
        assert_eq!(limits.max_call, Duration::from_secs(43_200));
        for (text, culprit) in [
            ("idle_timeout_ms = 10", "idle_timeout_ms"),
            ("max_call_secs = 0", "max_call_secs"),
            ("message_burst = 0", "message_burst"),
            ("max_call_memory_bytes = 1000", "max_call_memory_bytes"),
        ] {
            let c: Config = toml::from_str(text).unwrap();
            let err = c
                .validate(&["moonshine", "whisper"])
                .unwrap_err()
                .to_string();
            assert!(err.contains(culprit), "{text}: {err}");
        }
    }

    /// `endpoint_ms` has one range wherever it is set: the config file, a profile's
    /// options (every key), and a call's query (the flag lands in `moonshine.endpoint_ms`).
    #[test]
    fn endpoint_ms_has_one_range_everywhere() {
        use crate::backend::options::{ENDPOINT_MS_MAX, ENDPOINT_MS_MIN};
        for ms in [0, 10, ENDPOINT_MS_MIN - 1, ENDPOINT_MS_MAX + 1, 99_999] {
            for text in [
                format!("[moonshine]\nendpoint_ms = {ms}"),
                format!("[moonshine]\nnarrowband_endpoint_ms = {ms}"),
                format!("[profiles.p.options]\nendpoint_ms = {ms}"),
                format!("[profiles.p.options]\nnarrowband_endpoint_ms = {ms}"),
                format!("[moonshine]\nassistant_endpoint_ms = {ms}"),
                format!("[whisper]\nassistant_endpoint_ms = {ms}"),
                format!("[profiles.p.options]\nassistant_endpoint_ms = {ms}"),
            ] {
                let c: Config = toml::from_str(&text).unwrap();
                let problems = c.problems(&["moonshine", "whisper"]);
                assert_eq!(problems.len(), 1, "{text}: {problems:#?}");
                assert!(
                    problems[0].contains("endpoint_ms")
                        && problems[0].contains("must be from 50 to 5000 ms"),
                    "{text}: {problems:#?}"
                );
            }
            let query = format!("endpoint_ms={ms}");
            assert!(Options::default().with_query(&query).is_err(), "{query}");
            // Both engines' sections check the keys they share the same way, naming the
            // variable and flag that set them too.
            for engine in ["moonshine", "whisper"] {
                let text = format!("[{engine}]\nendpoint_ms = {ms}\nmax_turn_silence_ms = {ms}");
                let c: Config = toml::from_str(&text).unwrap();
                let problems = c.problems(&["moonshine", "whisper"]);
                assert_eq!(problems.len(), 2, "{text}: {problems:#?}");
                assert!(
                    problems[0].starts_with(&format!(
                        "{engine}.endpoint_ms (HARK_ENDPOINT_MS, --endpoint-ms)"
                    )),
                    "{problems:#?}"
                );
                assert!(
                    problems[1].starts_with(&format!("{engine}.max_turn_silence_ms")),
                    "{problems:#?}"
                );
            }
        }
        for ms in [ENDPOINT_MS_MIN, 200, ENDPOINT_MS_MAX] {
            let text = format!(
                "[moonshine]\nendpoint_ms = {ms}\nnarrowband_endpoint_ms = {ms}\n[profiles.p.options]\nendpoint_ms = {ms}\nnarrowband_endpoint_ms = {ms}"
            );
            let c: Config = toml::from_str(&text).unwrap();
            assert!(c.problems(&["moonshine", "whisper"]).is_empty(), "{text}");
            let query = format!("endpoint_ms={ms}");
            assert!(Options::default().with_query(&query).is_ok(), "{query}");
        }
    }

    #[test]
    fn default_profile_always_exists() {
        let c = Config::default();
        assert_eq!(c.profile(DEFAULT_PROFILE).unwrap().backend, "whisper");
        assert!(c.profile("other").is_none());
    }

    #[test]
    fn tls_needs_both_files_and_connection_limits_are_positive() {
        let backends = ["moonshine", "whisper"];
        let mut c = Config::default();
        c.tls.cert = Some("cert.pem".into());
        let err = c.validate(&backends).unwrap_err().to_string();
        assert!(err.contains("tls.cert and tls.key"), "{err}");
        c.tls.key = Some("key.pem".into());
        let err = c.validate(&backends).unwrap_err().to_string();
        assert!(err.contains("cert.pem is not a readable file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        for (file, path) in [("cert.pem", &mut c.tls.cert), ("key.pem", &mut c.tls.key)] {
            std::fs::write(dir.path().join(file), "PEM").unwrap();
            *path = Some(dir.path().join(file));
        }
        assert!(c.validate(&backends).is_ok());
        for bad in [
            |c: &mut Config| c.header_timeout_ms = 0,
            |c: &mut Config| c.max_connections = 0,
            |c: &mut Config| c.max_pending_starts = 0,
        ] {
            let mut c = Config::default();
            bad(&mut c);
            assert!(c.validate(&backends).is_err());
        }
    }
}
