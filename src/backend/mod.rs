//! The recognition backend interface.
//!
//! A backend recognises one channel of one call at a time. The session hands it the
//! consumer end of the channel's lock-free ring ([`AudioSource`]) and an [`EventSink`] for
//! what it hears, and the backend does the work wherever suits it: a CPU-bound engine on its
//! own threads (waking through [`AudioSource::wake_thread`]), a network service in a tokio
//! task (waiting on [`AudioSource::readable`]). `start` itself must return promptly because
//! it runs on the async runtime.
//!
//! To add a backend: implement [`Backend`], register it under a name with
//! [`Registry::insert`] (see `server::Backends::from_config`), and point a profile's
//! `backend` at that name.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::audio::AudioSource;
use crate::protocol::Channel;

pub mod moonshine;

/// Per-profile options for a backend, from the config file.
pub type Options = toml::Table;

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

pub trait Backend: Send + Sync + 'static {
    /// Whether the backend can take a call now (model loaded, service reachable).
    fn is_ready(&self) -> bool {
        true
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
    /// Recognition of this channel cannot go on.
    Failed(String),
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

    pub fn fail(mut self, message: impl Into<String>) {
        self.closed = true;
        self.send(EventKind::Failed(message.into()));
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
            self.send(EventKind::Failed(reason.into()));
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

    #[test]
    fn blank_text_is_never_sent_and_a_dropped_sink_fails() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = EventSink::new(tx, Channel::Assistant, 3);
        sink.partial("   ");
        sink.final_text(" Hi. ");
        drop(sink);
        assert_eq!(rx.try_recv().unwrap().kind, EventKind::Final("Hi.".into()));
        let failed = rx.try_recv().unwrap();
        assert!(matches!(failed.kind, EventKind::Failed(_)));
        assert_eq!((failed.channel, failed.generation), (Channel::Assistant, 3));
        assert!(rx.try_recv().is_err());
    }
}
