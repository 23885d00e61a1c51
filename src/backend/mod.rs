//! The recognition backend interface.
//!
//! A backend recognises one channel of one call at a time. The session hands it the
//! consumer end of the channel's lock-free ring ([`AudioSource`]) and an [`EventSink`] for
//! what it hears, and the backend does the work wherever suits it: a CPU-bound engine on its
//! own threads (waking through [`AudioSource::wake_thread`]), a network service in a tokio
//! task (waiting on [`AudioSource::readable`]). `start` itself must return promptly because
//! it runs on the async runtime.
//!
//! To add a backend: implement [`Backend`] in a module of its own, give it a variant of
//! `config::BackendConfig` and a line in `registry::from_config`, and point a profile's
//! `backend` at a `[backends.NAME]` of that type.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::http;

use crate::audio::AudioSource;
use crate::protocol::Channel;

pub mod assemblyai;
mod catch_up;
pub mod deepgram;
pub mod embedded;
mod liveness;
pub mod moonshine;
pub mod options;
mod relay;
pub mod riva;
pub mod whisper;

pub use options::Options;
pub use relay::masked_url;

/// What a backend is asked to recognise.
#[derive(Debug, Clone)]
pub struct ChannelSpec {
    pub session_id: u64,
    pub channel: Channel,
    /// Rate of the samples in the ring; a backend resamples if it needs another.
    pub sample_rate: u32,
    pub options: Arc<Options>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct BackendError(pub String);

impl BackendError {
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// Room a backend holds for an admitted call until the call's channels start or the call
/// ends; dropping it gives the room back.
pub struct Booking(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Booking {
    /// A booking that holds nothing (a backend with no room to count).
    pub fn nothing() -> Self {
        Self(None)
    }

    /// A booking that runs `release` when dropped.
    pub fn new(release: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self(Some(Box::new(release)))
    }
}

/// Why a backend refused a call, with the figures behind the decision: one metric label
/// per reason ([`Refusal::reason`]), and in words for the log line and the 503 body (never
/// a secret, never client text).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The engine has not loaded (yet).
    #[error("the {backend} recognizer is not loaded")]
    NotLoaded { backend: &'static str },
    /// A final has waited longer than admission allows for a decoder.
    #[error("a final has waited over {waited_ms} ms for a decoder")]
    Backlog { waited_ms: u64 },
    /// The shedding ladder stands on its last step and finals are still late.
    #[error("the decoders are shedding all they may ({step}) and finals are still late")]
    Exhausted { step: &'static str },
    /// A wave of first finals, one per newly admitted call, would not be decoded in time.
    #[error(
        "a wave of {finals} finals at once, of {seconds:.1} s each, would take {wave_ms:.0} ms \
         to decode on {free:.1} free decoders ({model} model, batches of up to {max_batch}); \
         the budget is {budget_ms:.0} ms"
    )]
    Wave {
        finals: usize,
        /// Seconds of audio each final is priced at: the recent utterances' own length (3 s
        /// before any).
        seconds: f64,
        wave_ms: f64,
        free: f64,
        model: &'static str,
        max_batch: usize,
        budget_ms: f64,
    },
    /// The channels' load, once all have been here a while, would pass the limit.
    #[error("{channels} channels would load the decoders to {load:.2} (max_load {limit})")]
    Average {
        channels: usize,
        load: f64,
        limit: f64,
    },
    /// A backend that says no without figures.
    #[error("the backend has no headroom for another call")]
    NoHeadroom,
}

impl Refusal {
    /// The metric label of `hark_rejected_upgrades_total{reason}` for this refusal.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotLoaded { .. } => "headroom-not-loaded",
            Self::Backlog { .. } => "headroom-backlog",
            Self::Exhausted { .. } => "headroom-exhausted",
            Self::Wave { .. } => "headroom-wave",
            Self::Average { .. } => "headroom-average",
            Self::NoHeadroom => "headroom",
        }
    }
}

impl Drop for Booking {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release();
        }
    }
}

pub trait Backend: Send + Sync + 'static {
    /// Whether the backend can take a call now (model loaded, service reachable).
    fn is_ready(&self) -> bool {
        true
    }

    /// Whether one more call of `channels` channels, in `language` (a BCP 47 tag, empty
    /// for the default), can be taken without putting the calls already here at risk. A
    /// backend whose capacity is this machine's CPU says no before its admitted calls would
    /// fall behind; the server then refuses the call (503) and reports not ready, so the
    /// platform or the balancer sends it elsewhere. Books nothing: readiness probes ask it
    /// as often as they like.
    fn has_headroom(&self, _channels: usize, _language: &str) -> bool {
        true
    }

    /// `has_headroom` for a call being admitted now, in `language` (its options' BCP 47 tag,
    /// empty for the default; already checked by `check_language`): on yes the room is
    /// booked for it until the booking is dropped (its channels started, or it ended before
    /// they could), so a burst of upgrades cannot all pass on the same room and a call that
    /// never starts holds none. A call in a language only the dearer of two models speaks
    /// costs more than one in the default.
    fn reserve(&self, channels: usize, language: &str) -> Result<Booking, Refusal> {
        match self.has_headroom(channels, language) {
            true => Ok(Booking::nothing()),
            false => Err(Refusal::NoHeadroom),
        }
    }

    /// How many times in a row a call may start this backend again after a failure that
    /// says retrying may help (a dropped connection), before moving to the next backend.
    fn max_retries(&self) -> u32 {
        0
    }

    /// Whether a call may ask for `language` (a BCP 47 tag or `auto`, from its profile or
    /// its URL's `?language=`): checked at the upgrade, so a language the backend cannot
    /// transcribe is refused with why (400) rather than transcribed as another. Network
    /// backends pass the tag on for the provider to judge.
    /// The error is the 400's body, a sentence for the caller: nothing branches on it.
    fn check_language(&self, _language: &str) -> Result<(), String> {
        Ok(())
    }

    /// Begins recognising one channel. Must not block: it runs on the async runtime.
    /// Errors here mean the channel could not start at all.
    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError>;
}

/// A provider's API key. Shown as the variable it came from, never as itself, so that it
/// cannot reach a log or an error message by accident.
#[derive(Clone)]
pub struct ApiKey {
    env: String,
    key: String,
}

impl ApiKey {
    pub fn new(env: &str, key: String) -> Self {
        Self {
            env: env.into(),
            key,
        }
    }

    /// Reads the key from the environment variable `env`.
    /// The error is a config problem's line naming the variable.
    pub fn from_env(env: &str) -> Result<Self, String> {
        if env.trim().is_empty() {
            return Err(
                "`api_key_env` is empty: name the environment variable that holds \
                        the API key"
                    .into(),
            );
        }
        match std::env::var(env) {
            Ok(key) if !key.trim().is_empty() => Ok(Self::new(env, key.trim().to_string())),
            _ => Err(format!(
                "environment variable {env} (the API key) is not set"
            )),
        }
    }

    /// The `Authorization` header value: the key behind `scheme` (e.g. `"Token "`, or
    /// `""` for a raw key), marked sensitive so the HTTP stack never prints it.
    pub fn header(&self, scheme: &str) -> Result<http::HeaderValue, BackendError> {
        let mut value =
            http::HeaderValue::from_str(&format!("{scheme}{}", self.key)).map_err(|_| {
                BackendError::new(format!(
                    "the key in {} is not a valid header value",
                    self.env
                ))
            })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey(${}: ***)", self.env)
    }
}

/// A passthrough query parameter's values as text; a list repeats the parameter.
pub(crate) fn query_value(value: &toml::Value) -> Vec<String> {
    match value {
        toml::Value::String(s) => vec![s.clone()],
        toml::Value::Array(items) => items.iter().flat_map(query_value).collect(),
        other => vec![other.to_string()],
    }
}

/// Backends by the name profiles use for them.
#[derive(Clone, Default)]
pub struct Registry {
    backends: BTreeMap<String, Arc<dyn Backend>>,
}

impl Registry {
    pub fn insert(&mut self, name: impl Into<String>, backend: Arc<dyn Backend>) {
        self.backends.insert(name.into(), backend);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Backend>> {
        self.backends.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.backends.keys().map(String::as_str)
    }
}

/// What a backend reports about a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// Provisional text of the current segment; replaces the previous partial.
    Partial(String),
    /// Definitive text of one segment.
    Final(String),
    /// Every word in the audio before this position (samples of the channel's stream, as
    /// the backend took it) has been reported as final; that audio need not be replayed.
    Settled(u64),
    /// This attempt at recognising the channel cannot go on. `retry`: whether the same
    /// backend may work if started again (a dropped connection), or not (refused
    /// credentials, a broken engine).
    Failed { message: String, retry: bool },
    /// The audio ended and every final has been reported.
    Done,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub channel: Channel,
    /// Which backend attempt of the channel sent it, so a replaced backend is ignored.
    pub generation: u32,
    pub kind: EventKind,
    /// When the backend reported it, to time the way to the socket.
    pub at: std::time::Instant,
}

/// Where a backend reports a channel's transcripts. Sending never blocks.
///
/// Dropping the sink without `done` or `fail` (a panic unwinding the backend's thread, a
/// task that returned early) reports a failure, so a dying backend is never silent.
pub struct EventSink {
    tx: mpsc::UnboundedSender<Event>,
    channel: Channel,
    generation: u32,
    closed: bool,
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<Event>, channel: Channel, generation: u32) -> Self {
        Self {
            tx,
            channel,
            generation,
            closed: false,
        }
    }

    pub fn channel(&self) -> Channel {
        self.channel
    }

    /// Whether the session still listens; a backend may stop early once it does not.
    pub fn is_open(&self) -> bool {
        !self.tx.is_closed()
    }

    /// Reports provisional text. Blank text is not reported.
    pub fn partial(&self, text: &str) {
        if let Some(text) = clean(text) {
            self.send(EventKind::Partial(text));
        }
    }

    /// Reports a finished segment. Blank text is not reported.
    pub fn final_text(&self, text: &str) {
        if let Some(text) = clean(text) {
            self.send(EventKind::Final(text));
        }
    }

    /// Reports that the audio before `position` needs no replay (see [`EventKind::Settled`]).
    pub fn settled(&self, position: u64) {
        self.send(EventKind::Settled(position));
    }

    /// Reports a failure that starting this backend again will not mend.
    pub fn fail(self, message: impl Into<String>) {
        self.fail_with(message, false);
    }

    /// Reports a failure that a new attempt with the same backend may get past.
    pub fn fail_transient(self, message: impl Into<String>) {
        self.fail_with(message, true);
    }

    fn fail_with(mut self, message: impl Into<String>, retry: bool) {
        self.closed = true;
        self.send(EventKind::Failed {
            message: message.into(),
            retry,
        });
    }

    pub fn done(mut self) {
        self.closed = true;
        self.send(EventKind::Done);
    }

    fn send(&self, kind: EventKind) {
        // A closed session no longer wants events; nothing to do about it here.
        let _ = self.tx.send(Event {
            channel: self.channel,
            generation: self.generation,
            kind,
            at: std::time::Instant::now(),
        });
    }
}

impl Drop for EventSink {
    fn drop(&mut self) {
        if !self.closed {
            let reason = if std::thread::panicking() {
                "recognizer panicked"
            } else {
                "recognizer stopped without finishing"
            };
            self.send(EventKind::Failed {
                message: reason.into(),
                retry: false,
            });
        }
    }
}

fn clean(text: &str) -> Option<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missing key names the variable to set; an empty `api_key_env` says so, rather
    /// than naming a variable called "".
    #[test]
    fn a_missing_key_names_its_variable() {
        let e = ApiKey::from_env("HARK_TEST_KEY_NEVER_SET_7f3a").unwrap_err();
        assert!(e.contains("HARK_TEST_KEY_NEVER_SET_7f3a"), "{e}");
        let e = ApiKey::from_env(" ").unwrap_err();
        assert!(e.contains("`api_key_env` is empty"), "{e}");
    }

    #[test]
    fn blank_text_is_never_sent_and_a_dropped_sink_fails() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = EventSink::new(tx, Channel::Assistant, 3);
        sink.partial("   ");
        sink.final_text(" Hi. ");
        drop(sink);
        assert_eq!(rx.try_recv().unwrap().kind, EventKind::Final("Hi.".into()));
        let failed = rx.try_recv().unwrap();
        assert!(matches!(
            failed.kind,
            EventKind::Failed { retry: false, .. }
        ));
        assert_eq!((failed.channel, failed.generation), (Channel::Assistant, 3));
        assert!(rx.try_recv().is_err());
    }
}
