//! NVIDIA Riva and Speech NIM servers (`StreamingRecognize` over gRPC): a GPU fleet running
//! open models behind hark. Facts: docs/PROVIDERS.md, "NVIDIA Riva"; the protocol is the public .proto
//! set in `proto/`, compiled by `build.rs`.
//!
//! One stream per channel attempt, mono at the call's own rate, like the websocket relays,
//! so a channel reconnects, replays and fails over on its own. The streams of every call
//! share the backend's HTTP/2 connections (`connections` per endpoint), which tonic
//! multiplexes and keeps alive with pings. Riva takes audio as fast as it comes (NVIDIA's
//! clients send files unpaced unless told to simulate real time), so a replay goes at once
//! and there is nothing to catch up. A server that answers RESOURCE_EXHAUSTED is left alone
//! for `cooldown_ms`: the backend reports not ready, so `/readyz` turns new calls away from
//! this instance, new calls start on the profile's fallback and live channels fail over.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::{MissedTickBehavior, interval, sleep_until};
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};
use tracing::{debug, warn};

use self::proto::nvidia::riva::AudioEncoding;
use self::proto::nvidia::riva::asr::riva_speech_recognition_client::RivaSpeechRecognitionClient;
use self::proto::nvidia::riva::asr::{
    EndpointingConfig, RecognitionConfig, SpeechContext, StreamingRecognitionConfig,
    StreamingRecognizeRequest, StreamingRecognizeResponse, streaming_recognize_request,
};
use super::liveness::{HOUSEKEEPING, Liveness, Pacing};
use super::relay::{Failure, Heard, count_error, report};
use super::{ApiKey, Backend, BackendError, ChannelSpec, EventSink};
use crate::audio::AudioSource;
use crate::metrics as m;
use crate::untrusted::quote;

/// The Riva API as `build.rs` generates it from `proto/`.
pub mod proto {
    pub mod nvidia {
        pub mod riva {
            tonic::include_proto!("nvidia.riva");
            pub mod asr {
                tonic::include_proto!("nvidia.riva.asr");
            }
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RivaConfig {
    /// The server: `grpc://host:50051` (plain HTTP/2) or `https://host` (TLS); a list
    /// spreads streams over several servers, a failed stream retrying on the next.
    pub url: Endpoints,
    /// The server's model name; unset lets the server choose by language and rate.
    pub model: Option<String>,
    /// The language spoken (`language_code`, required by Riva).
    pub language: String,
    /// An environment variable holding a key, sent as `authorization: Bearer …` (hosted
    /// NIM); unset for a server on the operator's own network, which needs none.
    pub api_key_env: Option<String>,
    /// gRPC metadata sent with every stream, e.g. `{ "function-id" = "…" }` for hosted NIM.
    pub metadata: BTreeMap<String, String>,
    /// Words and phrases to listen for (word boosting: `speech_contexts`).
    pub keyterms: Vec<String>,
    /// How much the keyterms are boosted (NVIDIA's examples use 20).
    pub boost: f32,
    /// Silence in ms that ends an utterance (`endpointing_config.stop_history`); unset
    /// leaves the server's own (NVIDIA's examples use 500–800 ms).
    pub endpointing_ms: Option<u64>,
    pub punctuate: bool,
    /// Words as spoken ("five dollars") rather than normalized ("$5").
    pub verbatim_transcripts: bool,
    pub interim_results: bool,
    /// Model-specific settings passed as they are (`custom_configuration`).
    pub custom_configuration: BTreeMap<String, String>,
    /// HTTP/2 connections per endpoint that the calls' streams share.
    pub connections: usize,
    pub connect_timeout_ms: u64,
    /// Voiced audio flowing with no answer for this long counts as a stall.
    pub stall_timeout_ms: u64,
    /// HTTP/2 ping interval while streams are open; a connection whose ping goes unanswered
    /// for `stall_timeout_ms` is dropped with its streams, which reconnect. gRPC servers
    /// by default take a ping at most every 5 minutes while they send nothing (longer
    /// silences) and answer more with GOAWAY "too_many_pings"; go lower only with a server
    /// whose `grpc.http2.min_ping_interval_without_data_ms` allows it. Voice unanswered for
    /// `stall_timeout_ms` finds a dead connection sooner anyway.
    pub keepalive_ms: u64,
    /// How long the backend takes no new streams after the server said RESOURCE_EXHAUSTED.
    pub cooldown_ms: u64,
    /// Reconnects in a row before the channel fails over.
    pub max_reconnects: u32,
    /// Allow a key over plain `grpc://` to another machine (it would cross the network in
    /// clear); without a key, plain HTTP/2 on the operator's network needs no saying.
    pub allow_insecure: bool,
}

impl Default for RivaConfig {
    fn default() -> Self {
        Self {
            url: Endpoints::One("grpc://localhost:50051".into()),
            model: None,
            language: "en-US".into(),
            api_key_env: None,
            metadata: BTreeMap::new(),
            keyterms: Vec::new(),
            boost: 20.0,
            endpointing_ms: None,
            punctuate: true,
            verbatim_transcripts: true,
            interim_results: true,
            custom_configuration: BTreeMap::new(),
            connections: 1,
            connect_timeout_ms: 3_000,
            stall_timeout_ms: 2_500,
            keepalive_ms: 300_000,
            cooldown_ms: 5_000,
            max_reconnects: 3,
            allow_insecure: false,
        }
    }
}

/// One URL or a list of them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Endpoints {
    One(String),
    Many(Vec<String>),
}

impl Endpoints {
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        match self {
            Self::One(url) => std::slice::from_ref(url).iter(),
            Self::Many(urls) => urls.iter(),
        }
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut String> {
        match self {
            Self::One(url) => std::slice::from_mut(url).iter_mut(),
            Self::Many(urls) => urls.iter_mut(),
        }
    }
}

impl RivaConfig {
    /// What `hark check-config` and `hark serve` refuse in this section.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.url.iter().next().is_none() {
            out.push("url lists no server".into());
        }
        for url in self.url.iter() {
            if let Err(e) = target(url, self.api_key_env.is_some(), self.allow_insecure) {
                out.push(e);
            }
        }
        if self.language.trim().is_empty() {
            out.push("language is empty (Riva requires one, e.g. \"en-US\")".into());
        }
        if self.connections == 0 {
            out.push("connections must be 1 or more".into());
        }
        for key in self.metadata.keys() {
            if key.parse::<AsciiMetadataKey>().is_err() || key.ends_with("-bin") {
                out.push(format!(
                    "metadata key {} is not an ASCII gRPC metadata name",
                    quote(key)
                ));
            }
        }
        for (key, value) in &self.metadata {
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                // The value is not shown: it may be a credential.
                out.push(format!(
                    "metadata {} has a value that is not printable ASCII",
                    quote(key)
                ));
            }
        }
        out
    }
}

/// A configured URL as tonic takes it: `grpc://` is plain HTTP/2, `https://` and
/// `grpcs://` TLS. Plain with a key goes only to this machine unless `allow_insecure`.
/// The error is a config problem's line, as `Config::problems` lists them.
fn target(url: &str, keyed: bool, allow_insecure: bool) -> Result<(String, bool), String> {
    let shown = quote(&super::masked_url(url)).to_string();
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("url {shown} must start with grpc:// or https://"))?;
    let tls = match scheme {
        "grpc" | "http" => false,
        "grpcs" | "https" => true,
        _ => {
            return Err(format!(
                "url {shown} must start with grpc:// (plain) or https:// (TLS)"
            ));
        }
    };
    let uri: tonic::transport::Uri = format!("{}://{rest}", if tls { "https" } else { "http" })
        .parse()
        .map_err(|e| format!("url is not a URL ({e})"))?;
    let host = uri.host().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("url {shown} has no host"));
    }
    if !tls && keyed && !allow_insecure && !super::relay::is_loopback(host) {
        return Err(format!(
            "url {shown} sends the API key in clear (grpc://) to another machine: use https://, or set allow_insecure = true if the link is private"
        ));
    }
    Ok((uri.to_string(), tls))
}

pub struct Riva {
    name: Arc<str>,
    config: RivaConfig,
    /// The key and the configured metadata, sent with every stream; made once (or why
    /// not, refused with each stream).
    metadata: Result<MetadataMap, String>,
    /// Made at the first stream: tonic's channels need the runtime.
    channels: OnceLock<Result<Vec<Channel>, String>>,
    next: AtomicUsize,
    cooling: Arc<Cooling>,
}

impl Riva {
    pub fn new(name: &str, config: RivaConfig, key: Option<ApiKey>) -> Self {
        let name: Arc<str> = name.into();
        Self {
            metadata: metadata(key.as_ref(), &config.metadata),
            cooling: Arc::new(Cooling::new(
                name.clone(),
                Duration::from_millis(config.cooldown_ms),
            )),
            name,
            config,
            channels: OnceLock::new(),
            next: AtomicUsize::new(0),
        }
    }

    /// The connection the next stream goes on, round robin: a stream that failed on one
    /// server retries on the next.
    fn channel(&self) -> Result<Channel, BackendError> {
        let channels = self
            .channels
            .get_or_init(|| connect(&self.config))
            .as_ref()
            .map_err(|e| BackendError::new(e.clone()))?;
        let i = self.next.fetch_add(1, Ordering::Relaxed) % channels.len();
        Ok(channels[i].clone())
    }

    /// The first message of a stream: how to hear this channel.
    fn streaming_config(&self, spec: &ChannelSpec) -> StreamingRecognizeRequest {
        let c = &self.config;
        let o = &spec.options;
        let terms = o.keyterms.as_ref().unwrap_or(&c.keyterms);
        let config = RecognitionConfig {
            encoding: AudioEncoding::LinearPcm as i32,
            sample_rate_hertz: spec.sample_rate as i32,
            language_code: o.language.clone().unwrap_or_else(|| c.language.clone()),
            max_alternatives: 1,
            audio_channel_count: 1,
            enable_word_time_offsets: true,
            enable_automatic_punctuation: c.punctuate,
            verbatim_transcripts: c.verbatim_transcripts,
            model: c.model.clone().unwrap_or_default(),
            speech_contexts: if terms.is_empty() {
                Vec::new()
            } else {
                vec![SpeechContext {
                    phrases: terms.clone(),
                    boost: c.boost,
                }]
            },
            endpointing_config: o
                .endpointing_ms
                .or(c.endpointing_ms)
                .filter(|ms| *ms > 0)
                .map(|ms| EndpointingConfig {
                    stop_history: Some(ms.min(i32::MAX as u64) as i32),
                    ..EndpointingConfig::default()
                }),
            custom_configuration: c.custom_configuration.clone().into_iter().collect(),
            ..RecognitionConfig::default()
        };
        StreamingRecognizeRequest {
            streaming_request: Some(
                streaming_recognize_request::StreamingRequest::StreamingConfig(
                    StreamingRecognitionConfig {
                        config: Some(config),
                        interim_results: c.interim_results,
                    },
                ),
            ),
            ..StreamingRecognizeRequest::default()
        }
    }
}

/// The key (`authorization: Bearer …`) and the configured metadata, all marked sensitive
/// (a value may be a credential of the hosted API's own: kept out of HPACK's table).
/// The error is a config problem's line, and the reason a stream is refused.
fn metadata(key: Option<&ApiKey>, extra: &BTreeMap<String, String>) -> Result<MetadataMap, String> {
    let mut map = MetadataMap::new();
    if let Some(key) = key {
        let value = key.header("Bearer ").map_err(|e| e.0)?;
        let mut value = AsciiMetadataValue::try_from(value.as_bytes())
            .map_err(|_| "the API key is not a valid metadata value".to_string())?;
        value.set_sensitive(true);
        map.insert("authorization", value);
    }
    for (k, v) in extra {
        // Checked by `problems` before the server started.
        if let (Ok(k), Ok(mut v)) = (
            k.parse::<AsciiMetadataKey>(),
            v.parse::<AsciiMetadataValue>(),
        ) {
            v.set_sensitive(true);
            map.insert(k, v);
        }
    }
    Ok(map)
}

/// The backend's HTTP/2 connections, `connections` per endpoint, each dialled when its
/// first stream needs it.
fn connect(config: &RivaConfig) -> Result<Vec<Channel>, String> {
    let mut out = Vec::new();
    for url in config.url.iter() {
        let (uri, tls) = target(url, config.api_key_env.is_some(), config.allow_insecure)?;
        let mut endpoint = Endpoint::from_shared(uri)
            .map_err(|e| format!("url is not usable ({e})"))?
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_millis(config.keepalive_ms.max(1)))
            .keep_alive_timeout(Duration::from_millis(config.stall_timeout_ms.max(1)))
            .keep_alive_while_idle(false);
        if tls {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_webpki_roots())
                .map_err(|e| format!("TLS for {}: {e}", quote(&super::masked_url(url))))?;
        }
        for _ in 0..config.connections.max(1) {
            out.push(endpoint.connect_lazy());
        }
    }
    if out.is_empty() {
        return Err("url lists no server".into());
    }
    Ok(out)
}

/// Streams in a row that failed before the server answered them (the fleet unreachable,
/// refusing, or not answering): the backend cools as if the server had said it is full.
const FAILED_STARTS: u32 = 3;

/// When the server last asked for room, or could not be reached: until then the backend
/// takes no new streams.
struct Cooling {
    backend: Arc<str>,
    cooldown: Duration,
    epoch: Instant,
    /// Milliseconds after `epoch` until which the backend cools.
    until_ms: AtomicU64,
    /// Streams that failed before an answer since the last stream that got one.
    failed_starts: AtomicU32,
}

impl Cooling {
    fn new(backend: Arc<str>, cooldown: Duration) -> Self {
        Self {
            backend,
            cooldown,
            epoch: Instant::now(),
            until_ms: AtomicU64::new(0),
            failed_starts: AtomicU32::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// No new streams for the cooldown, saying `why`.
    fn start(&self, why: &str) {
        warn!(backend = %self.backend, cooldown_ms = self.cooldown.as_millis() as u64, "{why}: taking no new streams for a while");
        let until = self.now_ms() + self.cooldown.as_millis() as u64;
        self.until_ms.fetch_max(until, Ordering::AcqRel);
        metrics::counter!(m::BACKEND_COOLDOWNS, "backend" => self.backend.to_string()).increment(1);
    }

    /// A stream failed before the server answered it; the third in a row cools.
    fn failed_start(&self) {
        if self.failed_starts.fetch_add(1, Ordering::AcqRel) + 1 >= FAILED_STARTS {
            self.failed_starts.store(0, Ordering::Release);
            self.start("streams fail before the server answers");
        }
    }

    fn answered(&self) {
        self.failed_starts.store(0, Ordering::Release);
    }

    fn is_cooling(&self) -> bool {
        self.now_ms() < self.until_ms.load(Ordering::Acquire)
    }
}

impl Backend for Riva {
    fn check_language(&self, language: &str) -> Result<(), String> {
        crate::backend::options::relay_language("Riva", language)
    }

    fn is_ready(&self) -> bool {
        !self.cooling.is_cooling()
    }

    fn max_retries(&self) -> u32 {
        self.config.max_reconnects
    }

    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        let opened = Instant::now();
        let stall_timeout = Duration::from_millis(self.config.stall_timeout_ms);
        let stream = Stream {
            backend: self.name.clone(),
            client: RivaSpeechRecognitionClient::new(self.channel()?),
            first: Some(self.streaming_config(&spec)),
            metadata: self.metadata.clone().map_err(BackendError)?,
            cooling: self.cooling.clone(),
            rate: audio.sample_rate(),
            live: Liveness::new(audio.sample_rate(), PACING, stall_timeout, opened),
            audio,
            open: false,
            answered: false,
            opened,
            connect_timeout: Duration::from_millis(self.config.connect_timeout_ms),
        };
        tokio::spawn(stream.run(events));
        Ok(())
    }
}

/// Riva's pace: chunks of at most 100 ms (NVIDIA's clients send 100 ms chunks), worked
/// through at real time. hark does not hold audio to it (a replay goes at once, up to
/// `IN_FLIGHT` messages): only the stall clock does, so a server still working through a
/// replay is not taken for silent.
const PACING: Pacing = Pacing {
    max_speed: 1.0,
    burst: Duration::ZERO,
    min_frame: Duration::ZERO,
    max_frame: Duration::from_millis(100),
};
/// Request messages queued for the HTTP/2 stream; beyond them audio waits in the ring,
/// where the supervisor sees it as lag.
const IN_FLIGHT: usize = 8;
/// After the audio ends, how long to wait for the server's last finals.
const FINISH_TIMEOUT: Duration = Duration::from_secs(3);

/// One channel attempt's stream.
struct Stream {
    backend: Arc<str>,
    client: RivaSpeechRecognitionClient<Channel>,
    first: Option<StreamingRecognizeRequest>,
    metadata: MetadataMap,
    cooling: Arc<Cooling>,
    audio: AudioSource,
    rate: u32,
    /// The chunk size, the stall clock and idle settling.
    live: Liveness,
    /// An utterance has partials but no final yet.
    open: bool,
    /// The server answered the stream (its response headers came).
    answered: bool,
    opened: Instant,
    connect_timeout: Duration,
}

impl Stream {
    async fn run(mut self, events: EventSink) {
        let outcome = self.stream(&events).await;
        if matches!(outcome, Err(Failure::Transient(_))) {
            self.unanswered();
        }
        report(outcome, events);
    }

    /// A stream that failed soon after it opened, before the server answered, counts toward
    /// cooling the backend: the server cannot be reached or is not taking streams. (A
    /// refusal of the request itself, permanent, is the call's doing, not the fleet's; and a
    /// server that sends its headers with its first result leaves a silent channel's stream
    /// unanswered for long, so only early failures count.)
    fn unanswered(&self) {
        if !self.answered && self.opened.elapsed() < self.connect_timeout {
            self.cooling.failed_start();
        }
    }

    async fn stream(&mut self, events: &EventSink) -> Result<(), Failure> {
        let (tx, rx) = mpsc::channel(IN_FLIGHT);
        if let Some(first) = self.first.take() {
            // The channel is empty: this cannot fail.
            let _ = tx.try_send(first);
        }
        let mut request = tonic::Request::new(ReceiverStream::new(rx));
        *request.metadata_mut() = std::mem::take(&mut self.metadata);
        let mut client = self.client.clone();
        // Answered with the response headers; the audio flows meanwhile (hyper sends the
        // request body on its own task), so nothing waits on a slow server but the ring.
        let mut opening = Some(Box::pin(async move {
            client.streaming_recognize(request).await
        }));
        let mut responses: Option<tonic::Streaming<StreamingRecognizeResponse>> = None;
        let mut tx = Some(tx);
        let mut buf = vec![0i16; self.live.max_frame()];
        let mut finish_by: Option<tokio::time::Instant> = None;
        // We ended the audio (the half-close): the stream's end is now expected.
        let mut half_closed = false;
        let mut housekeeping = interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(MissedTickBehavior::Delay);

        loop {
            let available = self.audio.available();
            if tx.is_some() && available == 0 && self.audio.is_finished() {
                // Half-close: the server finalizes what it has, then ends the stream.
                tx = None;
                half_closed = true;
                finish_by = Some(tokio::time::Instant::now() + FINISH_TIMEOUT);
            }
            let sending = tx.clone();
            tokio::select! {
                biased;
                opened = async { Some(opening.as_mut()?.as_mut().await) }, if opening.is_some() => {
                    opening = None;
                    match opened {
                        Some(Ok(response)) => {
                            self.answered = true;
                            self.cooling.answered();
                            responses = Some(response.into_inner());
                        }
                        Some(Err(status)) => return self.failed(&status, half_closed),
                        None => {}
                    }
                }
                message = async { Some(responses.as_mut()?.message().await) }, if responses.is_some() => {
                    match message {
                        Some(Ok(Some(response))) => {
                            self.live.answered();
                            self.audio.owe_from(None);
                            self.report(&response, events);
                        }
                        Some(Ok(None)) if half_closed => return Ok(()),
                        Some(Ok(None)) => {
                            self.count_error("ended");
                            return Err(Failure::Transient("the server ended the stream".into()));
                        }
                        Some(Err(status)) => return self.failed(&status, half_closed),
                        None => {}
                    }
                }
                permit = async { sending.as_ref()?.reserve().await.ok() }, if sending.is_some() && available > 0 => {
                    let Some(permit) = permit else {
                        // The stream broke: its status says why, soon (no half-close: an
                        // end now is a failure).
                        tx = None;
                        finish_by.get_or_insert_with(|| tokio::time::Instant::now() + FINISH_TIMEOUT);
                        continue;
                    };
                    let n = self.audio.pop(&mut buf);
                    let frame = &buf[..n];
                    // The stall clock starts when a server working through what was sent
                    // before at real time (a replay, sent at once) reaches this chunk.
                    if self.live.sent_frame(Instant::now(), frame).unanswered {
                        // Voice unanswered: owed, so a server that falls behind shows as lag.
                        self.audio.owe_from(Some(self.audio.position() - n as u64));
                    }
                    permit.send(audio_request(frame));
                }
                _ = self.audio.readable(), if tx.is_some() && available == 0 => {}
                _ = sleep_until(finish_by.unwrap_or_else(tokio::time::Instant::now)), if finish_by.is_some() => {
                    if half_closed {
                        warn!(backend = %self.backend, "server did not end the stream in time");
                        return Ok(());
                    }
                    return self.lost("the stream broke");
                }
                _ = housekeeping.tick() => {
                    if !events.is_open() {
                        // Dropping the stream cancels it (RST_STREAM CANCEL).
                        return Err(Failure::Gone);
                    }
                    if let Some(stall) = self.live.stalled(Instant::now()) {
                        self.count_error("stall");
                        return Err(Failure::Transient(stall.to_string()));
                    }
                    // No utterance open and every voiced chunk processed (by the server's
                    // own `audio_processed`): what was sent, less a margin, holds no word
                    // still to come.
                    if let Some(position) = self.live.idle_settle(!self.open) {
                        events.settled(position);
                    }
                }
            }
        }
    }

    /// Hands one response's results to the session.
    fn report(&mut self, response: &StreamingRecognizeResponse, events: &EventSink) {
        for result in &response.results {
            let processed = (f64::from(result.audio_processed) * f64::from(self.rate)).max(0.0);
            self.live.processed(processed as u64);
        }
        for heard in read(response, &mut self.open) {
            match heard {
                Heard::Partial(text) => events.partial(&text),
                Heard::Final(text) => events.final_text(&text),
                Heard::Settled(secs) => {
                    let position = (secs * f64::from(self.rate)).round().max(0.0) as u64;
                    events.settled(position.min(self.live.sent()));
                }
                Heard::Processed(_) | Heard::Ended | Heard::Error { .. } => {}
                // Protobuf messages tonic could not decode end the stream with a status.
                Heard::Unreadable(_) => {}
            }
        }
    }

    /// A stream that ended with `status`: worth another stream, or not.
    fn failed(&self, status: &Status, finishing: bool) -> Result<(), Failure> {
        if finishing && status.code() == Code::Cancelled {
            return Ok(());
        }
        self.count_error(status_label(status.code()));
        let message = format!(
            "the server ended the stream: {:?} {}",
            status.code(),
            quote(status.message())
        );
        if status.code() == Code::ResourceExhausted {
            self.cooling.start("the server has no room");
        }
        if is_permanent(status.code()) {
            Err(Failure::Permanent(message))
        } else {
            debug!(backend = %self.backend, %message, "stream failed");
            Err(Failure::Transient(message))
        }
    }

    fn lost(&self, what: &str) -> Result<(), Failure> {
        self.count_error("connection-lost");
        Err(Failure::Transient(what.into()))
    }

    fn count_error(&self, code: &'static str) {
        count_error(&self.backend, code);
    }
}

fn audio_request(samples: &[i16]) -> StreamingRecognizeRequest {
    StreamingRecognizeRequest {
        streaming_request: Some(streaming_recognize_request::StreamingRequest::AudioContent(
            samples.iter().flat_map(|s| s.to_le_bytes()).collect(),
        )),
        ..StreamingRecognizeRequest::default()
    }
}

/// What one response says: a partial per interim result, a final per final result (then
/// the end of its last word, or the audio processed, as settled); `open` tracks whether
/// an utterance has partials but no final.
fn read(response: &StreamingRecognizeResponse, open: &mut bool) -> Vec<Heard> {
    let mut out = Vec::new();
    for result in &response.results {
        let Some(best) = result.alternatives.first() else {
            continue;
        };
        if result.is_final {
            out.push(Heard::Final(best.transcript.clone()));
            // The end of the last word; a server that sends no word times, what it processed.
            let end = best
                .words
                .last()
                .map_or(f64::from(result.audio_processed), |w| {
                    f64::from(w.end_time) / 1000.0
                });
            out.push(Heard::Settled(end));
            *open = false;
        } else {
            *open |= !best.transcript.trim().is_empty();
            out.push(Heard::Partial(best.transcript.clone()));
        }
    }
    out
}

/// Statuses that the same request would get again: the next backend, at once.
fn is_permanent(code: Code) -> bool {
    matches!(
        code,
        Code::Unauthenticated
            | Code::PermissionDenied
            | Code::InvalidArgument
            | Code::NotFound
            | Code::Unimplemented
            | Code::FailedPrecondition
            | Code::OutOfRange
    )
}

/// A status as a metrics label: a fixed set, never the server's words.
fn status_label(code: Code) -> &'static str {
    match code {
        Code::Ok => "grpc-ok",
        Code::Cancelled => "grpc-cancelled",
        Code::Unknown => "grpc-unknown",
        Code::InvalidArgument => "grpc-invalid-argument",
        Code::DeadlineExceeded => "grpc-deadline-exceeded",
        Code::NotFound => "grpc-not-found",
        Code::AlreadyExists => "grpc-already-exists",
        Code::PermissionDenied => "grpc-permission-denied",
        Code::ResourceExhausted => "grpc-resource-exhausted",
        Code::FailedPrecondition => "grpc-failed-precondition",
        Code::Aborted => "grpc-aborted",
        Code::OutOfRange => "grpc-out-of-range",
        Code::Unimplemented => "grpc-unimplemented",
        Code::Internal => "grpc-internal",
        Code::Unavailable => "grpc-unavailable",
        Code::DataLoss => "grpc-data-loss",
        Code::Unauthenticated => "grpc-unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::proto::nvidia::riva::asr::{
        SpeechRecognitionAlternative, StreamingRecognitionResult, WordInfo,
    };
    use super::*;

    fn config(toml_text: &str) -> RivaConfig {
        toml::from_str(toml_text).expect("riva section parses")
    }

    #[test]
    fn urls_say_plain_or_tls_and_a_key_never_goes_in_clear_to_another_machine() {
        assert!(
            config("url = \"grpc://asr.internal:50051\"")
                .problems()
                .is_empty()
        );
        assert!(
            config("url = \"https://grpc.nvcf.nvidia.com:443\"\napi_key_env = \"K\"")
                .problems()
                .is_empty()
        );
        assert!(
            config("url = [\"grpc://a:50051\", \"grpc://b:50051\"]")
                .problems()
                .is_empty()
        );
        assert!(
            config("url = \"grpc://127.0.0.1:50051\"\napi_key_env = \"K\"")
                .problems()
                .is_empty()
        );
        let keyed = config("url = \"grpc://asr.internal:50051\"\napi_key_env = \"K\"").problems();
        assert!(keyed[0].contains("in clear"), "{keyed:?}");
        let allowed =
            "url = \"grpc://asr.internal:50051\"\napi_key_env = \"K\"\nallow_insecure = true";
        assert!(config(allowed).problems().is_empty());
        let wrong = config("url = \"wss://asr.internal/x?token=s3cr3t\"").problems();
        assert!(wrong[0].contains("grpc://"), "{wrong:?}");
        assert!(!wrong[0].contains("s3cr3t"), "{wrong:?}");
        assert!(!config("url = []").problems().is_empty());
        assert!(!config("language = \"\"").problems().is_empty());
        assert!(!config("connections = 0").problems().is_empty());
        let meta = config("metadata = { \"Bad Key\" = \"x\", ok = \"caf\u{e9}\" }").problems();
        assert_eq!(meta.len(), 2, "{meta:?}");
    }

    fn result(
        text: &str,
        is_final: bool,
        words: &[(i32, i32)],
        processed: f32,
    ) -> StreamingRecognitionResult {
        StreamingRecognitionResult {
            alternatives: vec![SpeechRecognitionAlternative {
                transcript: text.into(),
                words: words
                    .iter()
                    .map(|&(start_time, end_time)| WordInfo {
                        start_time,
                        end_time,
                        ..WordInfo::default()
                    })
                    .collect(),
                ..SpeechRecognitionAlternative::default()
            }],
            is_final,
            audio_processed: processed,
            ..StreamingRecognitionResult::default()
        }
    }

    #[test]
    fn finals_settle_at_their_last_word_and_interims_are_partials() {
        let mut open = false;
        let response = StreamingRecognizeResponse {
            results: vec![result("hello wor", false, &[], 1.2)],
            ..Default::default()
        };
        assert_eq!(
            read(&response, &mut open),
            [Heard::Partial("hello wor".into())]
        );
        assert!(open);
        let response = StreamingRecognizeResponse {
            results: vec![
                result("Hello world. ", true, &[(100, 420), (480, 910)], 1.76),
                // The next utterance's first interim in the same response.
                result("how", false, &[], 1.76),
            ],
            ..Default::default()
        };
        assert_eq!(
            read(&response, &mut open),
            [
                Heard::Final("Hello world. ".into()),
                Heard::Settled(0.91),
                Heard::Partial("how".into()),
            ]
        );
        assert!(open, "the next utterance is open");
        // A server that sends no word times settles at what it processed.
        let response = StreamingRecognizeResponse {
            results: vec![result("yes", true, &[], 2.5)],
            ..Default::default()
        };
        assert_eq!(
            read(&response, &mut open),
            [Heard::Final("yes".into()), Heard::Settled(2.5)]
        );
        assert!(!open);
    }

    #[test]
    fn statuses_that_would_come_again_are_permanent() {
        for code in [
            Code::Unauthenticated,
            Code::PermissionDenied,
            Code::InvalidArgument,
            Code::NotFound,
        ] {
            assert!(is_permanent(code), "{code:?}");
        }
        for code in [
            Code::Unavailable,
            Code::DeadlineExceeded,
            Code::ResourceExhausted,
            Code::Internal,
            Code::Aborted,
            Code::Unknown,
            Code::Cancelled,
        ] {
            assert!(!is_permanent(code), "{code:?}");
        }
        assert_eq!(
            status_label(Code::ResourceExhausted),
            "grpc-resource-exhausted"
        );
    }

    #[test]
    fn the_stream_config_carries_the_calls_rate_language_and_boosted_terms() {
        let riva = Riva::new(
            "gpu",
            config("keyterms = [\"Acme\"]\nendpointing_ms = 600\nmodel = \"parakeet\""),
            None,
        );
        let spec = ChannelSpec {
            session_id: 1,
            channel: crate::protocol::Channel::Customer,
            sample_rate: 8000,
            options: Arc::new(crate::backend::Options {
                language: Some("es-US".into()),
                ..Default::default()
            }),
        };
        let Some(streaming_recognize_request::StreamingRequest::StreamingConfig(first)) =
            riva.streaming_config(&spec).streaming_request
        else {
            panic!("the first request is the config");
        };
        let c = first.config.expect("recognition config");
        assert!(first.interim_results);
        assert_eq!(c.sample_rate_hertz, 8000);
        assert_eq!(c.encoding, AudioEncoding::LinearPcm as i32);
        assert_eq!(c.language_code, "es-US");
        assert_eq!(c.model, "parakeet");
        assert!(c.enable_word_time_offsets);
        assert_eq!(c.speech_contexts[0].phrases, ["Acme"]);
        assert_eq!(c.endpointing_config.and_then(|e| e.stop_history), Some(600));
    }
}
