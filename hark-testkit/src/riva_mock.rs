//! A mock NVIDIA Riva / Speech NIM recognition server: gRPC `StreamingRecognize` of
//! `nvidia.riva.asr.RivaSpeechRecognition` on loopback, following docs/PROVIDERS.md ("NVIDIA Riva") and the
//! public .proto files (compiled by this crate's build.rs, apart from hark's client).
//!
//! Like the websocket mocks it "hears" the word code of [`super::words`]: the words a test
//! speaks come back as interim results while they are spoken and as one final per
//! utterance, ended by `endpointing_config.stop_history` of silence (800 ms when unset) or
//! by the client's half-close, with word times in ms and `audio_processed`; with
//! [`RivaOptions::speed`] it processes at that pace (real time: a loaded server) rather than
//! as audio arrives, so its results and `audio_processed` trail what was sent. What the client
//! does is recorded per stream ([`RivaStream`]), each documented rule it broke as a
//! violation. Failures are scripted per stream ([`RivaFault`]); a connection-level fault
//! (a drop, a peer that goes deaf) takes down every stream on that HTTP/2 connection, as
//! a real server's would.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;
use tonic::{Code, Request, Response, Status, Streaming};

use self::proto::nvidia::riva::asr::riva_speech_recognition_server::{
    RivaSpeechRecognition, RivaSpeechRecognitionServer,
};
use self::proto::nvidia::riva::asr::{
    RecognizeRequest, RecognizeResponse, RivaSpeechRecognitionConfigRequest,
    RivaSpeechRecognitionConfigResponse, SpeechRecognitionAlternative, StreamingRecognitionResult,
    StreamingRecognizeRequest, StreamingRecognizeResponse, WordInfo,
    riva_speech_recognition_config_response, streaming_recognize_request::StreamingRequest,
};
use super::words::{Word, WordDecoder};

/// The Riva API, server side.
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

/// Riva's end of utterance when the client sets none (`stop_history`, ms).
pub const DEFAULT_STOP_HISTORY_MS: f64 = 800.0;
/// Audio between interim results: a streaming Riva model's chunk (Parakeet's 160 ms).
const INTERIM_EVERY_SECS: f64 = 0.16;
/// The rates the mock's one model takes, as a deployed Riva model lists them.
const RATES: [i32; 2] = [8000, 16000];
const LINEAR_PCM: i32 = 1;
/// The mock's bound on holding a faulted connection open.
const HOLD: Duration = Duration::from_secs(120);

/// What the mock serves and wants.
#[derive(Clone, Debug)]
pub struct RivaOptions {
    /// Wanted as `authorization: Bearer …` when set (hosted NIM); else no auth (self-hosted).
    pub api_key: Option<String>,
    /// Wanted as `function-id` metadata when set (hosted NIM names the model so).
    pub function_id: Option<String>,
    /// Languages the deployed model serves.
    pub languages: Vec<String>,
    /// The model's name; a stream asking for another is refused INVALID_ARGUMENT.
    pub model: String,
    /// Send the response headers as soon as the stream is accepted. Off (the default), they
    /// go with the first result, as a gRPC C++ server sends them: a silent channel's stream
    /// stays unanswered until its first words.
    pub headers_at_once: bool,
    /// Seconds of audio a stream processes per second of time (1.0: real time, as a loaded
    /// GPU server): audio is read as it comes and queued, and results follow the processing,
    /// so a replay sent at once is answered over its own duration and `audio_processed` runs
    /// behind what the client sent. `None`: each message is processed as it arrives.
    pub speed: Option<f64>,
}

impl Default for RivaOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            function_id: None,
            languages: vec!["en-US".into()],
            model: "parakeet-1.1b-en-US-asr-streaming".into(),
            headers_at_once: false,
            speed: None,
        }
    }
}

/// One scripted failure, taken by one stream in the order streams open.
#[derive(Clone, Debug)]
pub enum RivaFault {
    /// Refuse the stream at once with this status.
    Refuse(Code),
    /// After this many seconds of audio, end the stream with this status.
    StatusAfter(f64, Code),
    /// After this many seconds of audio, end the stream with OK, unasked: a server's
    /// maximum stream length.
    EndAfter(f64),
    /// After this many seconds of audio, keep reading but answer nothing more.
    StallAfter(f64),
    /// Answer the stream (headers, first result) only after this long; audio waits in
    /// HTTP/2 flow control meanwhile.
    SlowStart(Duration),
    /// After this many seconds of audio, drop the TCP connection the stream is on.
    DropAfter(f64),
    /// After this many seconds of audio, stop reading and writing the TCP connection (a
    /// half-open peer): only HTTP/2 pings find it out.
    DeafAfter(f64),
}

/// What one stream saw, kept up to date while it runs.
#[derive(Clone, Debug, Default)]
pub struct RivaStream {
    /// Request metadata (ASCII values), names lowercased.
    pub metadata: Vec<(String, String)>,
    pub sample_rate: i32,
    pub language: String,
    pub model: String,
    pub interim_results: bool,
    pub word_time_offsets: bool,
    pub punctuation: bool,
    pub stop_history_ms: Option<i32>,
    /// `speech_contexts`: (phrases, boost) each.
    pub boosted: Vec<(Vec<String>, f32)>,
    /// Status the stream was refused or ended with, if not OK.
    pub status: Option<Code>,
    /// Audio received (not necessarily processed yet).
    pub audio_messages: usize,
    pub audio_samples: u64,
    /// The most audio, in seconds, received and not yet processed at once (with
    /// [`RivaOptions::speed`]): how far the client ran ahead of the server.
    pub max_backlog_secs: f64,
    /// Audio received and not yet processed when the scripted fault fired, in seconds.
    pub backlog_at_fault: Option<f64>,
    pub words_heard: Vec<String>,
    pub words_sent_final: Vec<String>,
    /// The client half-closed (ended its audio).
    pub half_closed: bool,
    pub closed: bool,
    pub violations: Vec<String>,
    /// When the scripted fault fired (std clock).
    pub fault_at: Option<std::time::Instant>,
    pub opened_at: Option<std::time::Instant>,
    /// Each result sent (std clock just before it went to the stream, is_final, transcript).
    /// Recorded only after [`RivaMock::record_sent`]`(true)`.
    pub sent: Vec<(std::time::Instant, bool, String)>,
}

struct Shared {
    options: RivaOptions,
    script: Mutex<VecDeque<RivaFault>>,
    /// Scripts for streams whose first boosted phrase is the key: see [`RivaMock::script_for`].
    keyed: Mutex<Vec<(String, VecDeque<RivaFault>)>>,
    record_sent: AtomicBool,
    streams: Mutex<Vec<RivaStream>>,
    closed: Notify,
    connections: Mutex<usize>,
}

/// A mock Riva server on an ephemeral loopback port; serves until dropped.
pub struct RivaMock {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for RivaMock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RivaMock {
    pub async fn start(options: RivaOptions) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("riva mock binds a loopback port");
        let addr = listener.local_addr().expect("riva mock address");
        let shared = Arc::new(Shared {
            options,
            script: Mutex::new(VecDeque::new()),
            keyed: Mutex::new(Vec::new()),
            record_sent: AtomicBool::new(false),
            streams: Mutex::new(Vec::new()),
            closed: Notify::new(),
            connections: Mutex::new(0),
        });
        let incoming = {
            let shared = shared.clone();
            futures_util::stream::unfold(listener, move |listener| {
                let shared = shared.clone();
                async move {
                    let accepted = listener.accept().await.map(|(tcp, _)| {
                        *lock(&shared.connections) += 1;
                        let _ = tcp.set_nodelay(true);
                        Wire::new(tcp)
                    });
                    Some((accepted, listener))
                }
            })
        };
        let service = RivaSpeechRecognitionServer::new(Mock {
            shared: shared.clone(),
        });
        let task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await;
        });
        Self { addr, shared, task }
    }

    /// `grpc://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("grpc://{}", self.addr)
    }

    /// Faults for the next streams, in order; after the list, streams are normal.
    pub fn script(&self, faults: Vec<RivaFault>) {
        *lock(&self.shared.script) = faults.into();
    }

    /// Faults for the streams whose first boosted phrase (`speech_contexts`) is `phrase`, in
    /// the order they open; such a stream takes its fault from here, not from
    /// [`RivaMock::script`]. Lets concurrent calls each script their own streams (a call's
    /// keyterm names it).
    pub fn script_for(&self, phrase: &str, faults: Vec<RivaFault>) {
        let mut keyed = lock(&self.shared.keyed);
        keyed.retain(|(p, _)| p != phrase);
        keyed.push((phrase.into(), faults.into()));
    }

    /// Records every result sent (with its time) in [`RivaStream::sent`] from now on.
    pub fn record_sent(&self, on: bool) {
        self.shared.record_sent.store(on, Ordering::Relaxed);
    }

    /// What each stream saw so far, in the order they opened.
    pub fn streams(&self) -> Vec<RivaStream> {
        lock(&self.shared.streams).clone()
    }

    /// TCP connections accepted so far (streams share them).
    pub fn connections(&self) -> usize {
        *lock(&self.shared.connections)
    }

    /// Waits (bounded) until `n` streams have closed; false on timeout.
    pub async fn wait_closed(&self, n: usize, limit: Duration) -> bool {
        crate::wait_notified(&self.shared.closed, limit, || {
            lock(&self.shared.streams)
                .iter()
                .filter(|s| s.closed)
                .count()
                >= n
        })
        .await
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Mock {
    shared: Arc<Shared>,
}

type Responses = Pin<Box<dyn Stream<Item = Result<StreamingRecognizeResponse, Status>> + Send>>;

#[tonic::async_trait]
impl RivaSpeechRecognition for Mock {
    async fn recognize(
        &self,
        _request: Request<RecognizeRequest>,
    ) -> Result<Response<RecognizeResponse>, Status> {
        // What a streaming-only deployment answers to a unary request.
        Err(Status::invalid_argument(
            "Error: Unavailable model requested given these parameters: language_code=en-US; type=offline;",
        ))
    }

    async fn get_riva_speech_recognition_config(
        &self,
        _request: Request<RivaSpeechRecognitionConfigRequest>,
    ) -> Result<Response<RivaSpeechRecognitionConfigResponse>, Status> {
        Ok(Response::new(RivaSpeechRecognitionConfigResponse {
            model_config: vec![riva_speech_recognition_config_response::Config {
                model_name: self.shared.options.model.clone(),
                parameters: [
                    (
                        "language_code".to_string(),
                        self.shared.options.languages.join(","),
                    ),
                    ("type".to_string(), "online".to_string()),
                ]
                .into(),
            }],
        }))
    }

    type StreamingRecognizeStream = Responses;

    async fn streaming_recognize(
        &self,
        request: Request<Streaming<StreamingRecognizeRequest>>,
    ) -> Result<Response<Responses>, Status> {
        let wire = request.extensions().get::<WireSwitch>().cloned();
        let mut record = RivaStream {
            metadata: request
                .metadata()
                .iter()
                .filter_map(|kv| match kv {
                    tonic::metadata::KeyAndValueRef::Ascii(k, v) => {
                        Some((k.as_str().to_lowercase(), v.to_str().ok()?.to_string()))
                    }
                    tonic::metadata::KeyAndValueRef::Binary(..) => None,
                })
                .collect(),
            opened_at: Some(std::time::Instant::now()),
            ..RivaStream::default()
        };
        let index = {
            let mut streams = lock(&self.shared.streams);
            streams.push(record.clone());
            streams.len() - 1
        };
        let shared = self.shared.clone();
        let refuse = |record: &mut RivaStream, status: Status| {
            record.status = Some(status.code());
            record.closed = true;
            lock(&shared.streams)[index] = record.clone();
            shared.closed.notify_waiters();
            Err(status)
        };
        let options = &self.shared.options;
        if let Some(key) = &options.api_key {
            let want = format!("Bearer {key}");
            if !record
                .metadata
                .iter()
                .any(|(k, v)| k == "authorization" && *v == want)
            {
                return refuse(&mut record, Status::unauthenticated("Unauthorized"));
            }
        }
        if let Some(id) = &options.function_id
            && !record
                .metadata
                .iter()
                .any(|(k, v)| k == "function-id" && v == id)
        {
            return refuse(
                &mut record,
                Status::not_found("Function not found: check function-id"),
            );
        }
        let mut inbound = request.into_inner();
        // The first message: the streaming config and nothing else.
        let config = match inbound.message().await {
            Ok(Some(StreamingRecognizeRequest {
                streaming_request: Some(StreamingRequest::StreamingConfig(config)),
                ..
            })) => config,
            Ok(Some(_)) => {
                record
                    .violations
                    .push("first message is not a streaming_config".into());
                return refuse(
                    &mut record,
                    Status::invalid_argument("the first request must carry a streaming_config"),
                );
            }
            _ => return refuse(&mut record, Status::cancelled("no config")),
        };
        let interim = config.interim_results;
        let Some(rc) = config.config else {
            return refuse(
                &mut record,
                Status::invalid_argument("streaming_config without config"),
            );
        };
        // The fault: the one scripted for the call the stream's keyterm names, else the next.
        let tag = rc.speech_contexts.first().and_then(|c| c.phrases.first());
        let keyed = tag.and_then(|tag| {
            let mut keyed = lock(&self.shared.keyed);
            let (_, faults) = keyed.iter_mut().find(|(p, _)| p == tag)?;
            Some(faults.pop_front())
        });
        let fault = match keyed {
            Some(fault) => fault,
            None => lock(&self.shared.script).pop_front(),
        };
        if let Some(RivaFault::Refuse(code)) = fault {
            record.fault_at = Some(std::time::Instant::now());
            return refuse(&mut record, Status::new(code, "refused by script"));
        }
        if let Some(RivaFault::SlowStart(delay)) = fault {
            tokio::time::sleep(delay).await;
        }
        record.sample_rate = rc.sample_rate_hertz;
        record.language = rc.language_code.clone();
        record.model = rc.model.clone();
        record.interim_results = interim;
        record.word_time_offsets = rc.enable_word_time_offsets;
        record.punctuation = rc.enable_automatic_punctuation;
        record.stop_history_ms = rc.endpointing_config.as_ref().and_then(|e| e.stop_history);
        record.boosted = rc
            .speech_contexts
            .iter()
            .map(|c| (c.phrases.clone(), c.boost))
            .collect();
        if rc.encoding != LINEAR_PCM {
            record
                .violations
                .push(format!("encoding {} is not LINEAR_PCM", rc.encoding));
        }
        if rc.audio_channel_count > 1 {
            record
                .violations
                .push(format!("audio_channel_count {}", rc.audio_channel_count));
        }
        let model_ok = rc.model.is_empty() || rc.model == options.model;
        if !RATES.contains(&rc.sample_rate_hertz)
            || !options.languages.contains(&rc.language_code)
            || !model_ok
        {
            let text = format!(
                "Error: Unavailable model requested given these parameters: language_code={}; sample_rate={}; type=online;",
                rc.language_code, rc.sample_rate_hertz
            );
            return refuse(&mut record, Status::invalid_argument(text));
        }
        lock(&shared.streams)[index] = record;
        let stop_ms = rc
            .endpointing_config
            .and_then(|e| e.stop_history)
            .map_or(DEFAULT_STOP_HISTORY_MS, f64::from);
        let (tx, rx) = mpsc::channel(64);
        let heard = Heard {
            shared: shared.clone(),
            index,
            decoder: WordDecoder::new(rc.sample_rate_hertz as u32),
            utterance: Vec::new(),
            stop_ms,
            interim,
            last_interim: 0.0,
            word_times: rc.enable_word_time_offsets,
            speed: options.speed,
            fault,
            wire,
            tx,
        };
        tokio::spawn(heard.run(inbound));
        let mut rx = ReceiverStream::new(rx);
        if options.headers_at_once {
            return Ok(Response::new(Box::pin(rx) as Responses));
        }
        // Headers with the first result; a status before any result is the whole answer.
        match rx.next().await {
            Some(Ok(first)) => {
                let rest = futures_util::stream::once(async { Ok(first) }).chain(rx);
                Ok(Response::new(Box::pin(rest) as Responses))
            }
            Some(Err(status)) => Err(status),
            None => Ok(Response::new(Box::pin(rx) as Responses)),
        }
    }
}

/// One stream's listener: reads audio, hears words, answers.
struct Heard {
    shared: Arc<Shared>,
    index: usize,
    decoder: WordDecoder,
    utterance: Vec<Word>,
    stop_ms: f64,
    interim: bool,
    /// Audio seconds at the last interim result.
    last_interim: f64,
    word_times: bool,
    speed: Option<f64>,
    fault: Option<RivaFault>,
    wire: Option<WireSwitch>,
    tx: mpsc::Sender<Result<StreamingRecognizeResponse, Status>>,
}

impl Heard {
    fn record(&self, edit: impl FnOnce(&mut RivaStream)) {
        edit(&mut lock(&self.shared.streams)[self.index]);
    }

    async fn run(mut self, inbound: Streaming<StreamingRecognizeRequest>) {
        // Requests are read as they come (audio counted as received) and processed in order
        // here, at `speed` when set.
        let (feed, mut queued) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_requests(
            inbound,
            feed,
            self.shared.clone(),
            self.index,
        ));
        let _reader = AbortOnDrop(reader);
        let rate = f64::from(self.decoder.rate());
        let mut clock = tokio::time::Instant::now();
        let mut stalled = false;
        let end = loop {
            let Some((arrived, message)) = queued.recv().await else {
                break Some(Status::cancelled("client went away"));
            };
            let audio = match message {
                Ok(Some(StreamingRecognizeRequest {
                    streaming_request: Some(StreamingRequest::AudioContent(audio)),
                    ..
                })) => audio,
                Ok(Some(_)) => {
                    self.record(|r| r.violations.push("a second streaming_config".into()));
                    break Some(Status::invalid_argument(
                        "only the first request carries a config",
                    ));
                }
                Ok(None) => {
                    // Half-close: finalize what is open, then end the stream.
                    self.record(|r| r.half_closed = true);
                    if !stalled {
                        if let Some(word) = self.decoder.flush() {
                            self.utterance.push(word);
                        }
                        self.finalize().await;
                    }
                    break None;
                }
                Err(_) => break Some(Status::cancelled("client went away")),
            };
            if audio.len() % 2 != 0 {
                self.record(|r| r.violations.push("audio chunk of an odd byte count".into()));
            }
            let samples: Vec<i16> = audio
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect();
            if let Some(speed) = self.speed {
                // The server gets to this audio once it has processed what came before.
                let secs = samples.len() as f64 / rate / speed.max(1e-3);
                clock = clock.max(arrived) + Duration::from_secs_f64(secs);
                tokio::time::sleep_until(clock).await;
            }
            let words = self.decoder.push(&samples);
            let backlog = self.backlog();
            self.record(|r| r.max_backlog_secs = r.max_backlog_secs.max(backlog));
            self.record(|r| {
                r.words_heard
                    .extend(words.iter().map(|w| w.text.to_string()))
            });
            self.utterance.extend(words);
            let secs = self.decoder.position_secs();
            if let Some(fault) = self.due(secs) {
                self.record(|r| {
                    r.fault_at = Some(std::time::Instant::now());
                    r.backlog_at_fault = Some(backlog);
                });
                match fault {
                    RivaFault::StatusAfter(_, code) => {
                        break Some(Status::new(code, "stream failed by script"));
                    }
                    RivaFault::EndAfter(_) => break None,
                    RivaFault::StallAfter(_) => stalled = true,
                    RivaFault::DropAfter(_) => {
                        if let Some(wire) = &self.wire {
                            wire.drop_now();
                        }
                    }
                    RivaFault::DeafAfter(_) => {
                        if let Some(wire) = &self.wire {
                            wire.deafen();
                        }
                    }
                    RivaFault::Refuse(_) | RivaFault::SlowStart(_) => {}
                }
            }
            if stalled {
                continue;
            }
            if self.decoder.trailing_silence_ms() >= self.stop_ms && !self.utterance.is_empty() {
                self.finalize().await;
            } else if self.interim
                && (self.decoder.in_word() || !self.utterance.is_empty())
                && secs - self.last_interim >= INTERIM_EVERY_SECS
            {
                self.last_interim = secs;
                let text = words_text(&self.utterance);
                let result = StreamingRecognitionResult {
                    alternatives: vec![SpeechRecognitionAlternative {
                        transcript: text,
                        ..Default::default()
                    }],
                    is_final: false,
                    stability: 0.1,
                    channel_tag: 1,
                    audio_processed: secs as f32,
                    ..Default::default()
                };
                self.send(result).await;
            }
        };
        if let Some(status) = &end {
            self.record(|r| r.status = Some(status.code()));
        }
        if let Some(status) = end {
            let _ = self.tx.send(Err(status)).await;
        }
        if stalled {
            // A stalled server holds the stream, answering nothing, until the client goes.
            let _ = tokio::time::timeout(HOLD, self.tx.closed()).await;
        }
        self.record(|r| r.closed = true);
        self.shared.closed.notify_waiters();
        // Dropping the sender ends the response stream (OK, unless a status went first).
        drop(self.tx);
    }

    /// Seconds of audio received and not yet processed.
    fn backlog(&self) -> f64 {
        let received = lock(&self.shared.streams)[self.index].audio_samples;
        received.saturating_sub(self.decoder.position()) as f64 / f64::from(self.decoder.rate())
    }

    /// The scripted fault, once its time in the audio has come.
    fn due(&mut self, secs: f64) -> Option<RivaFault> {
        let at = match self.fault.as_ref()? {
            RivaFault::StatusAfter(at, _)
            | RivaFault::EndAfter(at)
            | RivaFault::StallAfter(at)
            | RivaFault::DropAfter(at)
            | RivaFault::DeafAfter(at) => *at,
            RivaFault::Refuse(_) | RivaFault::SlowStart(_) => return None,
        };
        (secs >= at).then(|| self.fault.take()).flatten()
    }

    async fn finalize(&mut self) {
        if self.utterance.is_empty() {
            return;
        }
        let rate = f64::from(self.decoder.rate());
        let ms = |samples: u64| (samples as f64 * 1000.0 / rate).round() as i32;
        let words: Vec<WordInfo> = if self.word_times {
            self.utterance
                .iter()
                .map(|w| WordInfo {
                    start_time: ms(w.start),
                    end_time: ms(w.end),
                    word: w.text.to_string(),
                    confidence: 0.99,
                    ..Default::default()
                })
                .collect()
        } else {
            Vec::new()
        };
        let text = words_text(&self.utterance);
        let spoken: Vec<String> = self.utterance.iter().map(|w| w.text.to_string()).collect();
        self.utterance.clear();
        let result = StreamingRecognitionResult {
            alternatives: vec![SpeechRecognitionAlternative {
                transcript: text,
                confidence: 0.99,
                words,
                ..Default::default()
            }],
            is_final: true,
            stability: 1.0,
            channel_tag: 1,
            audio_processed: self.decoder.position_secs() as f32,
            ..Default::default()
        };
        if self.send(result).await {
            self.record(|r| r.words_sent_final.extend(spoken));
        }
    }

    async fn send(&self, result: StreamingRecognitionResult) -> bool {
        if self.shared.record_sent.load(Ordering::Relaxed)
            && let Some(best) = result.alternatives.first()
        {
            let entry = (
                std::time::Instant::now(),
                result.is_final,
                best.transcript.clone(),
            );
            self.record(|r| r.sent.push(entry));
        }
        let response = StreamingRecognizeResponse {
            results: vec![result],
            ..Default::default()
        };
        self.tx.send(Ok(response)).await.is_ok()
    }
}

/// Reads a stream's requests as they arrive, counting its audio as received, and queues
/// them (with their arrival) for [`Heard::run`]; the end of the requests or an error is
/// queued last.
async fn read_requests(
    mut inbound: Streaming<StreamingRecognizeRequest>,
    feed: mpsc::UnboundedSender<(
        tokio::time::Instant,
        Result<Option<StreamingRecognizeRequest>, Status>,
    )>,
    shared: Arc<Shared>,
    index: usize,
) {
    loop {
        let message = inbound.message().await;
        let last = !matches!(message, Ok(Some(_)));
        if let Ok(Some(StreamingRecognizeRequest {
            streaming_request: Some(StreamingRequest::AudioContent(audio)),
            ..
        })) = &message
        {
            let r = &mut lock(&shared.streams)[index];
            r.audio_messages += 1;
            r.audio_samples += (audio.len() / 2) as u64;
        }
        if feed.send((tokio::time::Instant::now(), message)).is_err() || last {
            return;
        }
    }
}

/// Aborts a task when dropped: a stream's reader ends with its stream.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Riva's transcripts: the words, space separated, with a trailing space as Riva's own.
fn words_text(words: &[Word]) -> String {
    let mut text: String = words.iter().map(|w| w.text).collect::<Vec<_>>().join(" ");
    if !text.is_empty() {
        text.push(' ');
    }
    text
}

/// An accepted TCP connection that a fault can drop or freeze under the HTTP/2 server.
struct Wire {
    tcp: TcpStream,
    switch: WireSwitch,
}

/// Handed to every stream on the connection (tonic's connect info), so a stream's fault
/// can act on the connection it came by.
#[derive(Clone, Default)]
struct WireSwitch {
    dropped: Arc<AtomicBool>,
    deaf: Arc<AtomicBool>,
}

impl WireSwitch {
    fn drop_now(&self) {
        self.dropped.store(true, Ordering::Release);
    }

    fn deafen(&self) {
        self.deaf.store(true, Ordering::Release);
    }
}

impl Wire {
    fn new(tcp: TcpStream) -> Self {
        Self {
            tcp,
            switch: WireSwitch::default(),
        }
    }

    /// Some(result) when a fault decides the I/O's outcome.
    fn faulted<T>(&self) -> Option<Poll<std::io::Result<T>>> {
        if self.switch.dropped.load(Ordering::Acquire) {
            return Some(Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into())));
        }
        // Deaf: nothing read or written again; the client sees silence, not a close.
        self.switch
            .deaf
            .load(Ordering::Acquire)
            .then_some(Poll::Pending)
    }
}

impl Connected for Wire {
    type ConnectInfo = WireSwitch;

    fn connect_info(&self) -> WireSwitch {
        self.switch.clone()
    }
}

impl AsyncRead for Wire {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(outcome) = self.faulted() {
            return outcome;
        }
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Wire {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if let Some(outcome) = self.faulted() {
            return outcome;
        }
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if let Some(outcome) = self.faulted() {
            return outcome;
        }
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
