//! One call: the websocket from the platform, the start frame, one backend per channel, and
//! the transcripts back.
//!
//! The session task is the only producer of its channels' rings and never waits on a
//! recognizer: pushes are lock-free and fail rather than block, transcripts arrive on an
//! unbounded channel, and socket writes go through a separate writer task so a slow client
//! cannot stall reading either.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::SplitStream;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until, timeout};
use tracing::{Instrument, debug, error, info, info_span, warn};

mod close;
mod limits;
mod writer;

use self::close::{classify, read_failure};
use self::limits::RateLimit;
use self::writer::{Outgoing, WriteQueue, message_bytes, write_loop};
use crate::audio::PcmDecoder;
use crate::backend::{ChannelSpec, Event, Options};
use crate::config::{CallLimits, Profile};
use crate::metrics as m;
use crate::protocol::{
    CLOSE_GOING_AWAY, CLOSE_INTERNAL, CLOSE_NORMAL, Channel, ClientError, PIPELINE_FAILED,
    ServerMessage, Start, TranscriptType,
};
use crate::supervisor::{Exhausted, Link, Supervisor, Transcript};

/// How often lag is checked; a failing backend is noticed within max_lag plus this.
const WATCH_INTERVAL: Duration = Duration::from_millis(250);
/// Longest wait for a backend's last finals once the audio has ended.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for the writer to deliver the closing frames.
const WRITER_TIMEOUT: Duration = Duration::from_secs(5);

/// Everything a session needs to know, fixed when the upgrade is accepted.
#[derive(Clone)]
pub struct SessionSettings {
    pub id: u64,
    pub profile_name: String,
    pub profile: Profile,
    /// The profile's backends, in the order they are tried: the session starts them, it
    /// does not look them up.
    pub chain: Arc<[Link]>,
    /// The profile's options with the call URL's query overrides applied.
    pub options: Options,
    pub max_lag: Duration,
    pub start_timeout: Duration,
    pub max_frame_bytes: usize,
    pub max_frame: Duration,
    pub limits: CallLimits,
    pub drain_timeout: Duration,
}

/// The start frame came: the call stops counting as waiting for one.
pub trait Admit: Send {
    /// The call's `max_sessions` slot, held until its closing frames are out.
    fn admit(&mut self) -> Box<dyn Send>;
    /// The call's channels have started, or the call ended before they could: room booked
    /// for it is given back.
    fn started(&mut self);
}

/// How a session ended.
#[derive(Debug)]
enum Outcome {
    ClientClosed,
    ClientError(ClientError),
    /// Recognition failed; `reason` labels the metric, `message` goes to the client.
    Failed {
        reason: &'static str,
        message: String,
    },
    /// The server is shutting down and the drain time is over.
    Drained,
}

pub async fn run(
    socket: WebSocket,
    settings: SessionSettings,
    shutdown: watch::Receiver<bool>,
    mut admit: Box<dyn Admit>,
) {
    let span = info_span!(
        "session",
        id = settings.id,
        profile = %settings.profile_name,
        sample_rate = tracing::field::Empty,
        channels = tracing::field::Empty,
        duration_s = tracing::field::Empty,
        audio_s = tracing::field::Empty,
        finals = tracing::field::Empty,
        partials = tracing::field::Empty,
    );
    async move {
        let (ws_tx, mut ws_rx) = socket.split();
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let queue = Arc::new(WriteQueue::default());
        let writer = tokio::spawn(write_loop(ws_tx, out_rx, queue.clone()));
        let stop_writer = writer.abort_handle();
        let mut session = Session::new(settings, out_tx, queue);
        let outcome = session.drive(&mut ws_rx, shutdown, admit.as_mut()).await;
        admit.started();
        session.close(outcome);
        // The call keeps its slot until its closing frames are out.
        let _slot = session.slot.take();
        drop(session);
        // Read on until the client answers the close (or leaves): closing the socket with
        // unread input makes the kernel reset the connection, and the reset can destroy the
        // error and close frame before the client reads them (RFC 6455 section 7.1.1).
        let drain = async {
            while let Some(Ok(msg)) = ws_rx.next().await {
                if matches!(msg, Message::Close(_)) {
                    break;
                }
            }
        };
        if timeout(WRITER_TIMEOUT, async { tokio::join!(writer, drain) })
            .await
            .is_err()
        {
            warn!("client did not take the closing frames in time");
            // Its queue may hold what the client never read: free it now.
            stop_writer.abort();
        }
    }
    .instrument(span)
    .await
}

struct Session {
    settings: SessionSettings,
    chain: Arc<[Link]>,
    options: Arc<Options>,
    out: mpsc::UnboundedSender<Outgoing>,
    queue: Arc<WriteQueue>,
    events_tx: mpsc::UnboundedSender<Event>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    /// One per transcribed channel; a channel the profile leaves out has none.
    supervisors: Vec<Supervisor>,
    sample_rate: u32,
    /// Interleaved channels in each frame, from the start frame.
    channels: usize,
    /// The `max_sessions` slot, from the start frame on.
    slot: Option<Box<dyn Send>>,
    /// What the call's last log line says of it: when its start frame came, the audio bytes
    /// taken, the finals and partials sent.
    tally: Tally,
}

/// A call's figures for the line that ends it.
#[derive(Default)]
struct Tally {
    started: Option<Instant>,
    audio_bytes: u64,
    finals: std::cell::Cell<u64>,
    partials: std::cell::Cell<u64>,
}

impl Session {
    fn new(
        settings: SessionSettings,
        out: mpsc::UnboundedSender<Outgoing>,
        queue: Arc<WriteQueue>,
    ) -> Self {
        let chain = settings.chain.clone();
        let options = Arc::new(settings.options.clone());
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        Self {
            settings,
            chain,
            options,
            out,
            queue,
            events_tx,
            events_rx,
            supervisors: Vec::new(),
            sample_rate: 0,
            channels: 1,
            slot: None,
            tally: Tally::default(),
        }
    }

    async fn drive(
        &mut self,
        ws: &mut SplitStream<WebSocket>,
        mut shutdown: watch::Receiver<bool>,
        admit: &mut dyn Admit,
    ) -> Outcome {
        let limits = self.settings.limits;
        // A deadline past the clock's range is no deadline.
        let call_deadline = Instant::now().checked_add(limits.max_call);
        let mut rate = RateLimit::new(limits.messages_per_sec, limits.message_burst);
        let limit = self.settings.max_frame_bytes;
        // A shutdown before the start frame does not end the call: it opened, so the
        // platform counts on it; it drains like any other once started (the main loop sees
        // the change).
        let waited = timeout(
            self.settings.start_timeout,
            read_start(ws, &mut rate, limit),
        )
        .await;
        let start = match waited {
            Ok(Ok(Some(start))) => start,
            Ok(Ok(None)) => return Outcome::ClientClosed,
            Ok(Err(e)) => return Outcome::ClientError(e),
            Err(_) => {
                return Outcome::ClientError(ClientError::StartTimeout(
                    self.settings.start_timeout.as_millis() as u64,
                ));
            }
        };
        self.slot = Some(admit.admit());
        let span = tracing::Span::current();
        span.record("sample_rate", start.sample_rate);
        span.record("channels", start.channels);
        self.tally.started = Some(Instant::now());
        info!("call started");
        self.sample_rate = start.sample_rate;
        self.channels = start.channels;
        for index in 0..start.channels {
            let Some(channel) = Channel::from_index(index) else {
                break;
            };
            if !self.settings.profile.channels.contains(&channel) {
                continue;
            }
            let spec = ChannelSpec {
                session_id: self.settings.id,
                channel,
                sample_rate: self.sample_rate,
                options: self.options.clone(),
            };
            match Supervisor::start(
                spec,
                self.chain.clone(),
                self.events_tx.clone(),
                self.settings.max_lag,
            ) {
                Ok(supervisor) => self.supervisors.push(supervisor),
                Err(e) => return e.into(),
            }
        }
        admit.started();

        let mut decoder = PcmDecoder::new(start.channels);
        let mut watch = interval(WATCH_INTERVAL);
        watch.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut drain_deadline: Option<Instant> = None;
        let mut last_frame = Instant::now();
        // A quiet client is asked for a sign of life before the idle limit: its websocket
        // answers a ping by itself, so only a peer that is gone is idled out.
        let ping_after = limits.idle_timeout / 3;
        let mut pinged = false;
        // A shutdown while the call waited for its start frame: it drains from now.
        if *shutdown.borrow_and_update() {
            drain_deadline = Some(Instant::now() + self.settings.drain_timeout);
        }
        loop {
            let due = self
                .supervisors
                .iter()
                .filter_map(Supervisor::next_due)
                .min();
            tokio::select! {
                msg = ws.next() => match msg {
                    Some(Ok(_)) if !rate.take() => {
                        return Outcome::ClientError(ClientError::RateLimited {
                            rate: limits.messages_per_sec,
                            burst: limits.message_burst,
                        });
                    }
                    Some(Ok(Message::Binary(bytes))) => {
                        (last_frame, pinged) = (Instant::now(), false);
                        if let Err(outcome) = self.on_audio(&mut decoder, &bytes) {
                            return outcome;
                        }
                    }
                    Some(Ok(Message::Text(_))) => {
                        (last_frame, pinged) = (Instant::now(), false);
                        debug!("ignoring text frame after start");
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {
                        (last_frame, pinged) = (Instant::now(), false);
                    }
                    Some(Ok(Message::Close(_))) | None => return Outcome::ClientClosed,
                    Some(Err(e)) => return read_failure(e, limit),
                },
                _ = sleep_until(last_frame + ping_after), if !pinged => {
                    self.queue(Message::Ping(Bytes::from_static(b"hark")));
                    pinged = true;
                }
                _ = sleep_until(last_frame + limits.idle_timeout) => {
                    return Outcome::ClientError(ClientError::IdleTimeout(
                        limits.idle_timeout.as_millis() as u64,
                    ));
                }
                _ = sleep_until(call_deadline.unwrap_or_else(Instant::now)), if call_deadline.is_some() => {
                    self.flush().await;
                    return Outcome::ClientError(ClientError::CallTooLong(limits.max_call.as_secs()));
                }
                Some(event) = self.events_rx.recv() => {
                    if let Err(outcome) = self.on_event(event) {
                        return outcome;
                    }
                }
                _ = watch.tick() => {
                    if let Err(outcome) = self.tick() {
                        return outcome;
                    }
                }
                _ = sleep_until(due.map_or_else(Instant::now, Instant::from_std)), if due.is_some() => {
                    if let Err(outcome) = self.tick() {
                        return outcome;
                    }
                }
                _ = shutdown.changed(), if drain_deadline.is_none() => {
                    let wait = self.settings.drain_timeout;
                    info!(drain_timeout_ms = wait.as_millis() as u64, "server shutting down; call may continue");
                    drain_deadline = Some(Instant::now() + wait);
                }
                _ = sleep_until(drain_deadline.unwrap_or_else(Instant::now)), if drain_deadline.is_some() => {
                    self.flush().await;
                    return Outcome::Drained;
                }
            }
        }
    }

    fn on_audio(&mut self, decoder: &mut PcmDecoder, bytes: &[u8]) -> Result<(), Outcome> {
        let limit = self.settings.max_frame_bytes;
        if bytes.len() > limit {
            return Err(Outcome::ClientError(ClientError::FrameTooLarge {
                size: bytes.len(),
                limit,
            }));
        }
        // Judged by its length in time too: a frame within the byte limit can still hold more
        // audio (8 kHz stereo: 8 s in 256 KiB) than a channel's ring takes at once.
        let bytes_per_sec = 2 * u64::from(self.sample_rate) * self.channels as u64;
        let ms = bytes.len() as u64 * 1000 / bytes_per_sec.max(1);
        let limit_ms = self.settings.max_frame.as_millis() as u64;
        if ms > limit_ms {
            return Err(Outcome::ClientError(ClientError::FrameTooLong {
                ms,
                limit_ms,
            }));
        }
        self.tally.audio_bytes += bytes.len() as u64;
        let planes = decoder.decode(bytes);
        for supervisor in &mut self.supervisors {
            let index = supervisor.channel().index();
            let samples = &planes[index];
            supervisor.push(samples)?;
        }
        Ok(())
    }

    fn on_event(&mut self, event: Event) -> Result<(), Outcome> {
        let Some(supervisor) = self
            .supervisors
            .iter_mut()
            .find(|s| s.channel() == event.channel)
        else {
            return Ok(());
        };
        if let Some(transcript) = supervisor.on_event(event)? {
            self.send_transcript(transcript);
            self.check_memory()?;
        }
        Ok(())
    }

    fn tick(&mut self) -> Result<(), Outcome> {
        let now = std::time::Instant::now();
        for supervisor in &mut self.supervisors {
            supervisor.tick(now)?;
        }
        self.check_memory()
    }

    /// Ends the call when what it holds that can grow (replies its client has not taken,
    /// replay buffers) passes its budget; rings and decoders are fixed at the start.
    fn check_memory(&self) -> Result<(), Outcome> {
        let budget = self.settings.limits.max_memory_bytes;
        let held = self.queue.bytes.load(Ordering::Relaxed)
            + self
                .supervisors
                .iter()
                .map(Supervisor::held_bytes)
                .sum::<usize>();
        if held > budget {
            self.queue
                .discard_transcripts
                .store(true, Ordering::Relaxed);
            return Err(Outcome::ClientError(ClientError::MemoryLimit(budget)));
        }
        Ok(())
    }

    fn send_transcript(&self, t: Transcript) {
        let (transcript_type, kind, count) = if t.is_final {
            (TranscriptType::Final, "final", &self.tally.finals)
        } else {
            (TranscriptType::Partial, "partial", &self.tally.partials)
        };
        count.set(count.get() + 1);
        metrics::counter!(m::TRANSCRIPTS, "backend" => t.backend.to_string(), "type" => kind)
            .increment(1);
        debug!(channel = t.channel.as_str(), kind, transcription = %t.text, "transcript");
        let msg = ServerMessage::TranscriberResponse {
            transcription: t.text,
            channel: t.channel,
            transcript_type,
        };
        let message = Message::Text(Utf8Bytes::from(msg.to_json()));
        self.queue
            .bytes
            .fetch_add(message_bytes(&message), Ordering::Relaxed);
        let _ = self.out.send(Outgoing {
            message,
            event: Some((t.at, t.backend)),
        });
    }

    fn send(&self, msg: ServerMessage) {
        self.queue(Message::Text(Utf8Bytes::from(msg.to_json())));
    }

    fn queue(&self, message: Message) {
        self.queue
            .bytes
            .fetch_add(message_bytes(&message), Ordering::Relaxed);
        let _ = self.out.send(Outgoing {
            message,
            event: None,
        });
    }

    /// Ends the audio and forwards the backends' last finals, waiting a bounded time.
    async fn flush(&mut self) {
        if self.finish().is_err() {
            return;
        }
        let deadline = Instant::now() + FLUSH_TIMEOUT;
        while self.supervisors.iter().any(|s| !s.is_done()) {
            match tokio::time::timeout_at(deadline, self.events_rx.recv()).await {
                Ok(Some(event)) => {
                    // A failure while flushing leaves nothing more to send.
                    if self.on_event(event).is_err() {
                        break;
                    }
                }
                _ => {
                    warn!("recognizer did not flush its last finals in time");
                    break;
                }
            }
        }
    }

    /// Ends every channel's audio; the backends flush and stop.
    fn finish(&mut self) -> Result<(), Outcome> {
        let mut result = Ok(());
        for supervisor in &mut self.supervisors {
            if let Err(e) = supervisor.finish() {
                result = Err(e.into());
            }
        }
        result
    }

    /// Sends the message and close frame that `outcome` calls for, and records it.
    fn close(&mut self, outcome: Outcome) {
        // Nothing more is listened for: a failure here changes no outcome.
        let _ = self.finish();
        // The call's figures go on its span once, so whichever line ends it carries them.
        if self.tally.started.is_some() {
            let span = tracing::Span::current();
            span.record("duration_s", self.duration_s());
            span.record("audio_s", self.audio_s());
            span.record("finals", self.tally.finals.get());
            span.record("partials", self.tally.partials.get());
        }
        let (code, reason): (u16, String) = match &outcome {
            // A socket closed before its start frame (a health probe, a client that changed
            // its mind) was never a call: no "call started" came before it either.
            Outcome::ClientClosed if self.supervisors.is_empty() => {
                tracing::debug!("connection closed before its start frame");
                (CLOSE_NORMAL, String::new())
            }
            Outcome::ClientClosed => {
                info!("call ended by client");
                (CLOSE_NORMAL, String::new())
            }
            Outcome::Drained => {
                info!("call closed for shutdown");
                (CLOSE_GOING_AWAY, "server shutting down".into())
            }
            Outcome::ClientError(e) => {
                warn!(code = e.code(), error = %e, "client error");
                metrics::counter!(m::CLIENT_ERRORS, &self.labels("code", e.code())).increment(1);
                self.send(ServerMessage::client_error(e));
                (e.close_code(), e.code().into())
            }
            Outcome::Failed { reason, message } => {
                error!(reason, %message, "call failed");
                metrics::counter!(m::SESSION_FAILURES, &self.labels("reason", reason)).increment(1);
                self.send(ServerMessage::pipeline_failed(message.clone()));
                (CLOSE_INTERNAL, PIPELINE_FAILED.into())
            }
        };
        if !matches!(outcome, Outcome::ClientClosed) {
            self.queue(Message::Close(Some(CloseFrame {
                code,
                reason: Utf8Bytes::from(reason),
            })));
        }
    }

    /// A call's outcome labels: its profile and the profile's first backend (both from the
    /// config, so the series stay few), and what happened.
    /// Seconds since the start frame (0 before it), to the millisecond.
    fn duration_s(&self) -> f64 {
        let secs = self
            .tally
            .started
            .map_or(0.0, |t| t.elapsed().as_secs_f64());
        (secs * 1000.0).round() / 1000.0
    }

    /// Seconds of audio the call sent, to the millisecond.
    fn audio_s(&self) -> f64 {
        let per_sec = 2 * u64::from(self.sample_rate) * self.channels as u64;
        let secs = self.tally.audio_bytes as f64 / per_sec.max(1) as f64;
        (secs * 1000.0).round() / 1000.0
    }

    fn labels(&self, key: &'static str, value: &'static str) -> [(&'static str, String); 3] {
        [
            ("profile", self.settings.profile_name.clone()),
            ("backend", self.settings.profile.backend.clone()),
            (key, value.to_string()),
        ]
    }
}

impl From<Exhausted> for Outcome {
    fn from(e: Exhausted) -> Self {
        Outcome::Failed {
            reason: e.reason,
            message: e.message,
        }
    }
}

/// Reads until the start frame. `None` if the client left first.
async fn read_start(
    ws: &mut SplitStream<WebSocket>,
    rate: &mut RateLimit,
    limit: usize,
) -> Result<Option<Start>, ClientError> {
    while let Some(msg) = ws.next().await {
        if msg.is_ok() && !rate.take() {
            return Err(ClientError::RateLimited {
                rate: rate.rate as u32,
                burst: rate.burst as u32,
            });
        }
        match msg {
            Ok(Message::Text(text)) => return Start::parse(&text).map(Some),
            Ok(Message::Binary(_)) => return Err(ClientError::AudioBeforeStart),
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
            Ok(Message::Close(_)) => return Ok(None),
            Err(e) => return classify(e, limit).map_or(Ok(None), Err),
        }
    }
    Ok(None)
}
