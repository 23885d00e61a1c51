//! Load study of relayed calls: `target/release/hark serve` relays N concurrent
//! platform calls to loopback mocks of Deepgram and AssemblyAI (`hark_testkit::provider_mock`)
//! that answer the word-code "speech" of `hark_testkit::words`. The calls are hark-bench's
//! client (`hark_bench::client::Call`, the platform's side of the wire) and the figures its
//! nearest-rank `Stats`; what is this tool's own is the plan of faults and the analysis.
//!
//!     cargo build --release --examples --bin hark
//!     nice -n 10 target/release/examples/relay_load --calls 100 --duration 60
//!     nice -n 10 target/release/examples/relay_load --calls 20 --mode failover
//!
//! The tool runs the mocks (one runtime, threads named `mock`) and the calls (another
//! runtime, threads `client`) in its own process, writes a temporary config (`[backends.dg]`
//! at the Deepgram mock, `[backends.aai]` at the AssemblyAI mock, profile `relay` = dg with
//! aai as fallback), starts hark as a child at nice 0 (the tool itself is meant to run at
//! nice 10, below hark, as `hark bench` does), waits for `/readyz`, then plays N stereo calls
//! exactly as the platform does: start frame, 20 ms frames of interleaved s16le paced in real
//! time, calls staggered over `--stagger` seconds. Each call is a different conversation of
//! word-code sentences (customer words from the first half of the vocabulary, assistant words
//! from the second, so every provider connection's channel is known from what it heard) with
//! pauses. A call is tagged by a URL override (`?keyterms=callN`), which hark passes to the
//! provider (`keyterm=callN`, `keyterms_prompt=["callN"]`): that is how each mock connection
//! is tied to its call.
//!
//! Measured:
//! - relay overhead, provider message → transcript on the client's socket: the mock records
//!   the instant before it writes each message, the client the instant it reads each
//!   transcript, on the same clock (same process); transcripts are matched to the mock's
//!   messages by channel, type and text, in order. Also hark's own histogram
//!   `hark_event_to_socket_seconds` from `/metrics` (bucket bounds).
//! - hark's CPU (/proc/PID/stat) over the steady part of the run (every call started, none
//!   ended), per call; its RSS (idle, peak, steady); the tool's own CPU by thread group.
//! - failed calls (an `error` message, a close by the server, or a close other than normal
//!   after the hang-up), words lost or doubled (every spoken word must arrive in finals
//!   exactly once on its channel), the mocks' recorded protocol violations.
//! - `--mode failover`: on every call both channels' Deepgram connections fail mid-sentence
//!   (DropAfter). Even calls: the reconnect is refused (401), so the channel fails over to
//!   AssemblyAI with the replay. Odd calls: the reconnect succeeds (in-call reconnect). Gap =
//!   last transcript before the failure → first transcript after it on that channel, as the
//!   client sees it; also failure → first transcript; and hark's `hark_failover_gap_seconds`.
//!   `RELAY_LOAD_DEBUG=1` prints, per faulted channel, the time to final of every later final.
//! - `--primary riva`: the profile relays to the Riva mock (`hark_testkit::riva_mock`, gRPC)
//!   with dg as its fallback, its streams sharing `--riva-connections` HTTP/2 connections; in
//!   failover mode both channels' streams end UNAVAILABLE instead of dropping, and even
//!   calls' new streams are refused UNAUTHENTICATED (so they fail over to dg).
//! - Slow providers: `--late-ms`, `--late-per-stream-ms` and `--capacity`
//!   make the Deepgram and AssemblyAI mocks answer late under load (`provider_mock::Load`),
//!   `--riva-speed 1` makes the Riva mock process at real time; with `--cut-replay`, failover
//!   mode also fails each channel's next connection (or stream) while it is still taking the
//!   replay (Deepgram 1011, AssemblyAI 3005, Riva UNAVAILABLE, after 0.6 s of its audio), so
//!   the replay is cut and replayed again. `--finals-wait` lengthens the wait for the last
//!   finals, which a slow provider's backlog delays.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use futures_util::{SinkExt, StreamExt};
use hark_bench::client::{Call, Received as CallLog};
use hark_bench::protocol::{Channel, ServerMessage, TranscriptType};
use hark_bench::report::Stats;
use tokio_tungstenite::tungstenite::Message;

use hark_testkit::provider_mock::{Connection, Fault, Load, MockOptions, MockProvider, Provider};
use hark_testkit::riva_mock::{RivaFault, RivaMock, RivaOptions, RivaStream};
use hark_testkit::words;

const KEY: &str = "relay-load-key-5d1e";
const DG_KEY_ENV: &str = "RELAY_LOAD_DG_KEY";
const AAI_KEY_ENV: &str = "RELAY_LOAD_AAI_KEY";
const PROFILE: &str = "relay";
/// Vocabulary indices each side speaks: the customer the first half, the assistant the rest.
const HALF: usize = 16;
const FRAME_MS: u32 = 20;
/// Silence after the last word of a call before the client starts waiting for its finals.
const TAIL_MS: u32 = 1500;
/// Seconds of audio into a replay at which `--cut-replay` fails the connection taking it.
const CUT_REPLAY_AFTER: f64 = 0.6;

#[derive(Parser, Debug)]
#[command(about = "Relayed-call load study: hark between platform calls and provider mocks")]
struct Args {
    /// Concurrent calls.
    #[arg(long, default_value_t = 1)]
    calls: usize,
    /// Seconds of conversation per call.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Call sample rate (8000 or 16000; the mocks take any).
    #[arg(long, default_value_t = 16_000, value_parser = clap::value_parser!(u32).range(8000..=48000))]
    rate: u32,
    #[arg(long, value_enum, default_value_t = Mode::Steady)]
    mode: Mode,
    /// The hark binary to run.
    #[arg(long, default_value = "target/release/hark")]
    hark: PathBuf,
    /// The calls start evenly spread over this many seconds.
    #[arg(long, default_value_t = 2.0)]
    stagger: f64,
    /// Failover mode: a call's first fault falls in its first customer sentence that starts
    /// this many seconds into the call or later.
    #[arg(long, default_value_t = 6.0)]
    fault_after: f64,
    /// Failover mode: words of the sentence both sides speak at once when the fault comes.
    #[arg(long, default_value_t = 6)]
    barge_words: u64,
    /// Failover mode: seconds into that sentence at which the provider fails.
    #[arg(long, default_value_t = 1.0)]
    fault_into: f64,
    /// Pin hark to CPU 0 and the tool to CPU 1 (a diagnostic: neither waits for the other's
    /// threads to yield a CPU).
    #[arg(long)]
    pin: bool,
    /// Seed of the conversations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The profile's first backend (steady mode).
    #[arg(long, value_enum, default_value_t = Primary::Dg)]
    primary: Primary,
    /// `--primary riva`: the backend's HTTP/2 connections that all streams share.
    #[arg(long, default_value_t = 1)]
    riva_connections: usize,
    /// Keep the temporary directory (config and hark's log) and print its path.
    #[arg(long)]
    keep: bool,
    /// Slow providers: every Deepgram and AssemblyAI mock answer this late (ms) after the
    /// mock processed the audio it answers; 0: at once.
    #[arg(long, default_value_t = 0)]
    late_ms: u64,
    /// Slow providers: added to `--late-ms` for each other stream open on the same mock.
    #[arg(long, default_value_t = 0)]
    late_per_stream_ms: u64,
    /// Slow providers: seconds of audio per second the Deepgram and AssemblyAI mocks
    /// process, shared by their open streams (with `--late-ms`).
    #[arg(long, default_value_t = 1000.0)]
    capacity: f64,
    /// The Riva mock processes audio at this speed (1 = real time) instead of at once.
    #[arg(long)]
    riva_speed: Option<f64>,
    /// Failover mode: also fail each channel's next connection (or stream) while it takes
    /// the replay.
    #[arg(long)]
    cut_replay: bool,
    /// hark's nice (on a machine shared with others, run both below them).
    #[arg(long, default_value_t = 0)]
    hark_nice: i32,
    /// Longest wait (streaming silence) for the last finals after a call's last word, s.
    #[arg(long, default_value_t = 5.0)]
    finals_wait: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    Steady,
    Failover,
    /// Every provider connection of every call may misbehave at random (drops, error
    /// closes, stalls, half-open connections, slow answers, slow or refused upgrades,
    /// messages that are not the provider's; a
    /// Deepgram connection may also be refused for good, 429, so the channel fails over to
    /// AssemblyAI). Measures that no call fails and no word is lost or doubled.
    Chaos,
    /// Calibration: no hark in the path. Each call's two channels connect straight to the
    /// Deepgram mock, as hark's relay does (mono 20 ms frames, the same query), so the
    /// overhead measured is the tool's and the loopback's own share. (hark idles meanwhile.)
    Direct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Primary {
    Dg,
    Aai,
    /// The Riva mock (gRPC), with dg as the fallback; failover mode fails its streams.
    Riva,
}

// ---------------------------------------------------------------------------------------------
// Conversations

#[derive(Clone, Copy, Debug)]
struct Spoken {
    vocab: usize,
    start: u64,
    end: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FaultKind {
    /// DropAfter, then the reconnect is refused (401): the channel fails over to aai.
    Failover,
    /// DropAfter; the reconnect succeeds.
    Reconnect,
}

struct Plan {
    index: usize,
    tag: String,
    rate: u32,
    /// Samples of the call, the tail of silence included.
    total: u64,
    words: [Vec<Spoken>; 2],
    sentences: [Vec<(u64, u64)>; 2],
    /// Failover mode: the kind, and the audio second at which both channels' connections fail.
    fault: Option<(FaultKind, f64)>,
    /// Longest wait for the last finals after the last word.
    finals_wait: Duration,
}

impl Plan {
    fn new(index: usize, args: &Args) -> Self {
        let rate = args.rate;
        let mut rng = fastrand::Rng::with_seed(args.seed.wrapping_mul(1_000_003) + index as u64);
        let ms = |m: u32| words::samples(rate, m) as u64;
        let limit = (args.duration * f64::from(rate)) as u64;
        let mut words: [Vec<Spoken>; 2] = [Vec::new(), Vec::new()];
        let mut sentences: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
        let mut pos = ms(200 + rng.u32(0..600));
        let mut speaker = 0;
        let mut fault = None;
        let secs = |s: u64| s as f64 / f64::from(rate);
        loop {
            if args.mode == Mode::Failover && fault.is_none() && secs(pos) >= args.fault_after {
                // Both sides talk at once here (a barge-in), and the provider fails
                // `fault_into` seconds in, so that each channel's connection fails in the
                // middle of a sentence.
                let n = args.barge_words.max(1);
                let len = n * ms(200) + (n - 1) * ms(100);
                if pos + ms(150) + len > limit {
                    break;
                }
                for (side, offset) in [(0, 0), (1, ms(150))] {
                    let start = pos + offset;
                    for k in 0..n {
                        let at = start + k * ms(300);
                        words[side].push(Spoken {
                            vocab: side * HALF + rng.usize(0..HALF),
                            start: at,
                            end: at + ms(200),
                        });
                    }
                    sentences[side].push((start, start + len));
                }
                let kind = if index.is_multiple_of(2) {
                    FaultKind::Failover
                } else {
                    FaultKind::Reconnect
                };
                let into = (args.fault_into * 1000.0).round() as u32;
                fault = Some((kind, secs(pos + ms(into))));
                pos += ms(150) + len + ms(rng.u32(600..=1400));
                speaker = 0;
                continue;
            }
            let n = rng.u64(3..=8);
            let len = n * ms(200) + (n - 1) * ms(100);
            if pos + len > limit {
                break;
            }
            let start = pos;
            for _ in 0..n {
                let vocab = speaker * HALF + rng.usize(0..HALF);
                words[speaker].push(Spoken {
                    vocab,
                    start: pos,
                    end: pos + ms(200),
                });
                pos += ms(300);
            }
            pos -= ms(100);
            sentences[speaker].push((start, pos));
            pos += ms(rng.u32(600..=1400));
            // Mostly turn-taking; now and then the same side goes on.
            if rng.u8(0..5) != 0 {
                speaker = 1 - speaker;
            }
        }
        let last_end = words.iter().flatten().map(|w| w.end).max().unwrap_or(0);
        Self {
            index,
            tag: format!("call{index}"),
            rate,
            total: last_end + ms(TAIL_MS),
            words,
            sentences,
            fault,
            finals_wait: Duration::from_secs_f64(args.finals_wait.max(0.0)),
        }
    }

    fn frame_samples(&self) -> u64 {
        words::samples(self.rate, FRAME_MS) as u64
    }

    /// Sample `i` of channel `c`; `cursor` remembers the word reached (samples go forward).
    fn sample(&self, c: usize, i: u64, cursor: &mut usize) -> i16 {
        let ws = &self.words[c];
        while *cursor < ws.len() && ws[*cursor].end <= i {
            *cursor += 1;
        }
        match ws.get(*cursor) {
            Some(w) if w.start <= i => {
                let a = words::amplitude(w.vocab);
                if (i - w.start).is_multiple_of(2) {
                    a
                } else {
                    -a
                }
            }
            _ => 0,
        }
    }

    /// Interleaved s16le of samples `from..from + n` of both channels.
    fn fill(&self, from: u64, n: u64, cursors: &mut [usize; 2], out: &mut Vec<u8>) {
        out.clear();
        for i in from..from + n {
            for (c, cursor) in cursors.iter_mut().enumerate() {
                let v = self.sample(c, i, cursor);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// Mono s16le of samples `from..from + n` of channel `c`.
    fn fill_mono(&self, c: usize, from: u64, n: u64, cursor: &mut usize) -> Vec<u8> {
        (from..from + n)
            .flat_map(|i| self.sample(c, i, cursor).to_le_bytes())
            .collect()
    }

    /// Whether the channel is inside a sentence at sample `pos`.
    fn speaking(&self, channel: usize, pos: u64) -> bool {
        self.sentences[channel]
            .iter()
            .any(|(s, e)| (*s..*e).contains(&pos))
    }
}

// ---------------------------------------------------------------------------------------------
// One call, as the platform makes it

/// What direct mode's provider readers share with its sender.
#[derive(Default)]
struct CallState {
    final_words: [AtomicUsize; 2],
}

#[derive(Default)]
struct Outcome {
    connect_error: Option<String>,
    messages: Vec<(Instant, ServerMessage)>,
    /// The close frame received: (code, reason), or None for none / no code.
    close: Option<(u16, String)>,
    /// The server closed before the client hung up.
    server_closed_first: bool,
    read_error: Option<String>,
    send_error: Option<String>,
    /// When each audio frame was handed to the socket.
    frames: Vec<Instant>,
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One call through hark, with hark-bench's client (the platform's side of the wire): the
/// start frame, then 20 ms frames paced in real time until every spoken word arrived in a
/// final or the plan's `finals_wait` passed after the last word, then the platform's hang-up.
async fn run_call(plan: Arc<Plan>, url: String, start: Instant) -> Outcome {
    tokio::time::sleep_until(start.into()).await;
    let mut out = Outcome::default();
    let mut call = match Call::connect(&url, &[]).await {
        Ok(call) => call,
        Err(e) => {
            out.connect_error = Some(e.to_string());
            return out;
        }
    };
    if let Err(e) = call.start(plan.rate, 2).await {
        out.send_error = Some(e);
    }
    let expected = [plan.words[0].len(), plan.words[1].len()];
    let per_frame = plan.frame_samples();
    let mut cursors = [0usize; 2];
    let mut bytes = Vec::new();
    let t0 = tokio::time::Instant::now();
    let mut sent = 0u64;
    let mut audio_end: Option<tokio::time::Instant> = None;
    while out.send_error.is_none() && call.poll().closed_at.is_none() {
        if sent >= plan.total {
            let got = call.poll();
            let done = [Channel::Customer, Channel::Assistant]
                .iter()
                .all(|c| final_words(got, *c) >= expected[c.index()]);
            let end = *audio_end.get_or_insert_with(tokio::time::Instant::now);
            if done || end.elapsed() >= plan.finals_wait {
                break;
            }
        }
        plan.fill(sent, per_frame, &mut cursors, &mut bytes);
        if let Err(e) = call.audio(std::mem::take(&mut bytes)).await {
            out.send_error = Some(e);
            break;
        }
        out.frames.push(Instant::now());
        sent += per_frame;
        let due = t0 + Duration::from_secs_f64(sent as f64 / f64::from(plan.rate));
        tokio::time::sleep_until(due).await;
    }
    out.server_closed_first = call.poll().closed_at.is_some();
    let got = if out.server_closed_first {
        call.finish(Duration::from_secs(10)).await
    } else {
        call.hang_up().await
    };
    out.messages = got.messages;
    out.close = got.close;
    out.read_error = got.transport_error;
    out
}

/// Words in a channel's finals so far.
fn final_words(got: &CallLog, channel: Channel) -> usize {
    got.finals(channel.as_str())
        .iter()
        .map(|t| hark_bench::wer::normalize(t).len())
        .sum()
}

/// Direct mode: what the Deepgram mock sent on one channel's connection, as hark would
/// forward it.
async fn read_provider(
    mut rx: futures_util::stream::SplitStream<Ws>,
    channel: usize,
    state: Arc<CallState>,
) -> (
    Vec<(Instant, ServerMessage)>,
    Option<(u16, String)>,
    Option<String>,
) {
    let mut messages = Vec::new();
    let ch = Channel::from_index(channel).expect("channel");
    while let Some(msg) = rx.next().await {
        let at = Instant::now();
        match msg {
            Ok(Message::Text(t)) => {
                if let Some((is_final, text)) = transcript_of(Backend::Dg, &t) {
                    if is_final {
                        state.final_words[channel]
                            .fetch_add(hark_bench::wer::normalize(&text).len(), Ordering::Relaxed);
                    }
                    let transcript_type = if is_final {
                        TranscriptType::Final
                    } else {
                        TranscriptType::Partial
                    };
                    messages.push((
                        at,
                        ServerMessage::TranscriberResponse {
                            transcription: text,
                            channel: ch,
                            transcript_type,
                        },
                    ));
                }
            }
            Ok(Message::Close(frame)) => {
                let close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                return (messages, close, None);
            }
            Ok(_) => {}
            Err(e) => return (messages, None, Some(e.to_string())),
        }
    }
    (
        messages,
        None,
        Some("connection ended without a close frame".into()),
    )
}

/// Direct mode: one call's channels streamed straight to the Deepgram mock, one connection
/// per channel, paced in real time; the stream ends with CloseStream, as hark ends it.
async fn run_direct(plan: Arc<Plan>, url: String, start: Instant) -> Outcome {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    tokio::time::sleep_until(start.into()).await;
    let mut out = Outcome::default();
    let state = Arc::new(CallState::default());
    let mut txs = Vec::new();
    let mut readers = Vec::new();
    for c in 0..2 {
        let mut req = match url.as_str().into_client_request() {
            Ok(r) => r,
            Err(e) => {
                out.connect_error = Some(e.to_string());
                return out;
            }
        };
        if let Ok(v) = format!("Token {KEY}").parse() {
            req.headers_mut().insert("authorization", v);
        }
        match tokio_tungstenite::connect_async_with_config(req, None, true).await {
            Ok((ws, _)) => {
                let (tx, rx) = ws.split();
                txs.push(tx);
                readers.push(tokio::spawn(read_provider(rx, c, state.clone())));
            }
            Err(e) => {
                out.connect_error = Some(e.to_string());
                return out;
            }
        }
    }
    let expected = [plan.words[0].len(), plan.words[1].len()];
    let per_frame = plan.frame_samples();
    let mut cursors = [0usize; 2];
    let t0 = tokio::time::Instant::now();
    let mut sent = 0u64;
    let mut audio_end: Option<tokio::time::Instant> = None;
    'send: loop {
        if sent >= plan.total {
            let done = (0..2).all(|c| state.final_words[c].load(Ordering::Relaxed) >= expected[c]);
            let end = *audio_end.get_or_insert_with(tokio::time::Instant::now);
            if done || end.elapsed() >= plan.finals_wait {
                break;
            }
        }
        for (c, tx) in txs.iter_mut().enumerate() {
            let bytes = plan.fill_mono(c, sent, per_frame, &mut cursors[c]);
            if let Err(e) = tx.send(Message::binary(bytes)).await {
                out.send_error = Some(e.to_string());
                break 'send;
            }
        }
        out.frames.push(Instant::now());
        sent += per_frame;
        let due = t0 + Duration::from_secs_f64(sent as f64 / f64::from(plan.rate));
        tokio::time::sleep_until(due).await;
    }
    for tx in &mut txs {
        let _ = tx.send(Message::text(r#"{"type":"CloseStream"}"#)).await;
    }
    for reader in readers {
        match tokio::time::timeout(Duration::from_secs(10), reader).await {
            Ok(Ok((messages, close, error))) => {
                out.messages.extend(messages);
                if out.close.is_none() || close.as_ref().is_some_and(|c| c.0 != 1000) {
                    out.close = close;
                }
                if error.is_some() {
                    out.read_error = error;
                }
            }
            Ok(Err(e)) => out.read_error = Some(format!("reader panicked: {e}")),
            Err(_) => out.read_error = Some("no close within 10 s of CloseStream".into()),
        }
    }
    out.messages.sort_by_key(|(at, _)| *at);
    out
}

// ---------------------------------------------------------------------------------------------
// The hark child process and /proc

struct Hark {
    child: Child,
    addr: String,
    log: PathBuf,
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// (utime + stime in ticks, nice) of a process or thread from its `stat` file.
fn stat_ticks(path: &Path) -> Option<(u64, i64, String)> {
    let text = std::fs::read_to_string(path).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    let fields: Vec<&str> = text[close + 2..].split_whitespace().collect();
    // fields[0] is field 3 (state); utime is field 14, stime 15, nice 19.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let nice: i64 = fields.get(16)?.parse().ok()?;
    Some((utime + stime, nice, comm))
}

fn rss_kb(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// (busy, total) jiffies of the whole machine.
fn machine_jiffies() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = text.lines().next().unwrap_or_default();
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

#[derive(Clone, Default, Debug)]
struct Snapshot {
    at: Option<Instant>,
    hark_ticks: u64,
    hark_rss_kb: u64,
    tool: BTreeMap<String, u64>,
    machine: (u64, u64),
    /// Every other process: pid → (name, CPU ticks).
    others: BTreeMap<u32, (String, u64)>,
}

fn snapshot(pid: u32) -> Snapshot {
    let mut tool = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for entry in dir.flatten() {
            if let Some((ticks, _, comm)) = stat_ticks(&entry.path().join("stat")) {
                let group = if comm.starts_with("mock") {
                    "mock"
                } else if comm.starts_with("client") {
                    "client"
                } else {
                    "other"
                };
                *tool.entry(group.to_string()).or_insert(0) += ticks;
            }
        }
    }
    let me = std::process::id();
    let mut others = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if p == me || p == pid {
                continue;
            }
            if let Some((ticks, _, comm)) = stat_ticks(&entry.path().join("stat")) {
                others.insert(p, (comm, ticks));
            }
        }
    }
    Snapshot {
        at: Some(Instant::now()),
        others,
        hark_ticks: stat_ticks(Path::new(&format!("/proc/{pid}/stat"))).map_or(0, |s| s.0),
        hark_rss_kb: rss_kb(pid).unwrap_or(0),
        tool,
        machine: machine_jiffies(),
    }
}

fn write_config(dir: &Path, args: &Args, dg: &str, aai: &str, riva: &str) -> PathBuf {
    let (backend, fallback) = match args.primary {
        Primary::Dg => ("dg", "aai"),
        Primary::Aai => ("aai", "dg"),
        Primary::Riva => ("riva", "dg"),
    };
    // Failover mode refuses streams on purpose: no cooling, so that odd calls reconnect.
    let cooldown = if args.mode == Mode::Failover { 0 } else { 5000 };
    let text = format!(
        r#"# written by examples/relay_load.rs
listen = "127.0.0.1:0"
max_sessions = {max}
drain_timeout_ms = 2000
log_format = "json"

[backends.dg]
type = "deepgram"
url = "{dg}"
api_key_env = "{DG_KEY_ENV}"

[backends.aai]
type = "assemblyai"
url = "{aai}"
api_key_env = "{AAI_KEY_ENV}"

# The mocks' endpointing alike: Deepgram's mock ends an utterance after 300 ms.
[backends.riva]
type = "riva"
url = "{riva}"
endpointing_ms = 300
connections = {connections}
cooldown_ms = {cooldown}

[profiles.{PROFILE}]
backend = "{backend}"
fallback = ["{fallback}"]
"#,
        max = args.calls + 16,
        connections = args.riva_connections,
    );
    let path = dir.join("hark.toml");
    std::fs::write(&path, text).expect("write the config");
    path
}

fn start_hark(args: &Args, config: &Path, dir: &Path) -> Hark {
    let log = dir.join("hark.log");
    let file = std::fs::File::create(&log).expect("create hark's log");
    let mut cmd = Command::new(&args.hark);
    cmd.arg("serve")
        .arg("--config")
        .arg(config)
        .env(DG_KEY_ENV, KEY)
        .env(AAI_KEY_ENV, KEY)
        .env("HARK_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file);
    // hark runs at `--hark-nice` (0) whatever the tool's own nice (the tool runs below it).
    let (pin, hark_nice) = (args.pin, args.hark_nice);
    // SAFETY: setpriority is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::setpriority(libc::PRIO_PROCESS, 0, hark_nice);
            if pin {
                pin_to(0);
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", args.hark.display()));
    // The listening address is in hark's first log lines.
    let deadline = Instant::now() + Duration::from_secs(30);
    let addr = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let found = text.lines().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["message"] == "hark listening").then(|| v["addr"].as_str().map(String::from))?
        });
        if let Some(addr) = found {
            break addr;
        }
        assert!(
            Instant::now() < deadline,
            "hark did not report its address; log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    Hark { child, addr, log }
}

/// A GET to hark's address: (status, body), or None while nothing answers.
async fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    hark_testkit::http_fetch(addr.parse().ok()?, path).await
}

fn stop_hark(hark: &mut Hark) -> Option<std::process::ExitStatus> {
    // SAFETY: kill with a valid pid of our own child.
    unsafe {
        libc::kill(hark.child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = hark.child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = hark.child.kill();
    hark.child.wait().ok();
    None
}

// ---------------------------------------------------------------------------------------------
// Prometheus text

#[derive(Default)]
struct Metrics {
    /// Histograms by `name{labels}` (le removed): (bound, cumulative count).
    histograms: BTreeMap<String, Vec<(f64, f64)>>,
    /// Other samples by `name{labels}`.
    values: BTreeMap<String, f64>,
}

impl Metrics {
    fn parse(text: &str) -> Self {
        let mut m = Metrics::default();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.trim_end_matches('}')),
                None => (series, ""),
            };
            if let Some(base) = name.strip_suffix("_bucket") {
                let mut le = f64::INFINITY;
                let rest: Vec<&str> = labels
                    .split(',')
                    .filter(|l| {
                        if let Some(v) = l.strip_prefix("le=") {
                            le = v.trim_matches('"').parse().unwrap_or(f64::INFINITY);
                            false
                        } else {
                            !l.is_empty()
                        }
                    })
                    .collect();
                let key = format!("{base}{{{}}}", rest.join(","));
                m.histograms.entry(key).or_default().push((le, value));
            } else {
                m.values.insert(series.to_string(), value);
            }
        }
        for buckets in m.histograms.values_mut() {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        m
    }

    /// (n, p50, p95, p99 bucket bounds) of a histogram.
    fn quantiles(&self, key: &str) -> Option<(u64, f64, f64, f64)> {
        let b = self.histograms.get(key)?;
        let total = b.last()?.1;
        if total == 0.0 {
            return None;
        }
        let q = |p: f64| {
            b.iter()
                .find(|(_, c)| *c >= p * total)
                .map_or(f64::INFINITY, |x| x.0)
        };
        Some((total as u64, q(0.5), q(0.95), q(0.99)))
    }

    fn quantiles_text(&self, key: &str) -> String {
        match self.quantiles(key) {
            Some((n, a, b, c)) => format!(
                "p50 ≤ {}, p95 ≤ {}, p99 ≤ {} (n = {n})",
                fmt_secs(a),
                fmt_secs(b),
                fmt_secs(c)
            ),
            None => "—".into(),
        }
    }

    fn sum_matching(&self, prefix: &str) -> Vec<(String, f64)> {
        self.values
            .iter()
            .filter(|(k, v)| k.starts_with(prefix) && **v > 0.0)
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Analysis

fn fmt_secs(s: f64) -> String {
    if !s.is_finite() {
        "∞".into()
    } else if s < 0.01 {
        format!("{:.3} ms", s * 1e3)
    } else if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// p50, p95, p99 and max, nearest rank (hark-bench's [`Stats`]).
fn summary(values: &[f64]) -> String {
    stats_text(values, true)
}

/// p50 / p95 / max, or with `p99` every figure named.
fn stats_text(values: &[f64], p99: bool) -> String {
    if values.is_empty() {
        return "—".into();
    }
    let s = Stats::of(values.to_vec());
    let (p50, p95, max) = (fmt_secs(s.p50), fmt_secs(s.p95), fmt_secs(s.max));
    if p99 {
        format!(
            "p50 {p50}, p95 {p95}, p99 {}, max {max} (n = {})",
            fmt_secs(s.p99),
            s.count
        )
    } else {
        format!("{p50} / {p95} / {max} (n = {})", s.count)
    }
}

/// For each received word, the index of the spoken word it is aligned with (longest common
/// subsequence), or None for a word that matches nothing (doubled or wrong).
fn align(spoken: &[&str], got: &[String]) -> Vec<Option<usize>> {
    let (n, m) = (spoken.len(), got.len());
    let mut dp = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            dp[at(i, j)] = if spoken[i] == got[j] {
                dp[at(i + 1, j + 1)] + 1
            } else {
                dp[at(i + 1, j)].max(dp[at(i, j + 1)])
            };
        }
    }
    let mut out = vec![None; m];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if spoken[i] == got[j] {
            out[j] = Some(i);
            i += 1;
            j += 1;
        } else if dp[at(i + 1, j)] >= dp[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Backend {
    Dg,
    Aai,
    Riva,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Dg => "dg",
            Backend::Aai => "aai",
            Backend::Riva => "riva",
        }
    }
}

/// One text message a mock sent that hark turns into a transcript.
#[derive(Clone, Debug)]
struct Sent {
    at: Instant,
    is_final: bool,
    text: String,
    conn: (Backend, usize),
}

/// What hark makes of a provider message: (is_final, text), if it is a transcript.
fn transcript_of(backend: Backend, json: &str) -> Option<(bool, String)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let (is_final, text) = match (backend, v["type"].as_str()?) {
        (Backend::Dg, "Results") => (
            v["is_final"].as_bool() == Some(true),
            v["channel"]["alternatives"][0]["transcript"].as_str()?,
        ),
        // hark asks for format_turns: a turn is final when ended and formatted.
        (Backend::Aai, "Turn") => (
            v["end_of_turn"].as_bool() == Some(true)
                && v["turn_is_formatted"].as_bool() == Some(true),
            v["transcript"].as_str()?,
        ),
        (Backend::Riva, "Riva") => (
            v["is_final"].as_bool() == Some(true),
            v["transcript"].as_str()?,
        ),
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| (is_final, text.to_string()))
}

/// A Riva stream as the analysis reads a connection: its keyterm as the call's tag, its
/// results as messages of a type of this tool's own (`"Riva"`).
fn riva_connection(s: &RivaStream) -> Connection {
    let tag = s.boosted.first().and_then(|(p, _)| p.first().cloned());
    Connection {
        query: tag
            .map(|t| ("keyterm".to_string(), t))
            .into_iter()
            .collect(),
        refused: s.status.filter(|_| s.audio_samples == 0).map(|_| 0),
        audio_samples: s.audio_samples,
        words_heard: s.words_heard.clone(),
        words_sent_final: s.words_sent_final.clone(),
        violations: s.violations.clone(),
        closed: s.closed,
        fault_at: s.fault_at,
        opened_at: s.opened_at,
        sent: s
            .sent
            .iter()
            .map(|(at, is_final, text)| {
                let json =
                    serde_json::json!({"type": "Riva", "is_final": is_final, "transcript": text});
                (*at, json.to_string())
            })
            .collect(),
        ..Connection::default()
    }
}

/// The call and channel a mock connection served: the call from its tag in the query, the
/// channel from the first word it heard.
fn owner(c: &Connection) -> Option<(usize, usize)> {
    let tag = c.query.iter().find_map(|(k, v)| match k.as_str() {
        "keyterm" | "keywords" => Some(v.clone()),
        "keyterms_prompt" => serde_json::from_str::<Vec<String>>(v)
            .ok()?
            .into_iter()
            .next(),
        _ => None,
    })?;
    let call: usize = tag.strip_prefix("call")?.parse().ok()?;
    let first = c.words_heard.first()?;
    let vocab = words::VOCAB.iter().position(|w| w == first)?;
    Some((call, vocab / HALF))
}

struct Received {
    at: Instant,
    is_final: bool,
    text: String,
    /// The mock message it was matched with.
    source: Option<usize>,
}

#[derive(Default)]
struct Tally {
    calls_failed: Vec<String>,
    words_spoken: usize,
    words_lost: usize,
    words_doubled: usize,
    transcripts: usize,
    finals: usize,
    unmatched: usize,
    relay: BTreeMap<Backend, Vec<f64>>,
    ttf: Vec<f64>,
    /// Failover mode, per kind: (gap, failure → first transcript, speaking at the failure,
    /// backend after, time to final of finals after the failure).
    gaps: BTreeMap<&'static str, Vec<GapSample>>,
    missing_gap: usize,
}

#[derive(Clone, Debug)]
struct GapSample {
    gap: f64,
    /// Failure → the next provider connection open (hark's own reaction).
    to_open: Option<f64>,
    to_first: f64,
    speaking: bool,
    after: Option<Backend>,
    ttf_after: Vec<f64>,
    /// (seconds from the fault to the final's arrival, its time to final), for every final
    /// after the fault: how late finals are, second by second, until they are on time again.
    ttf_since: Vec<(f64, f64)>,
    /// Time to final of the channel's last final (does the delay last to the end?).
    ttf_last: Option<f64>,
}

fn analyse(
    plans: &[Arc<Plan>],
    outcomes: &[Outcome],
    conns: &[(Backend, Vec<Connection>)],
) -> Tally {
    let mut t = Tally::default();
    // Mock messages by (call, channel), in send order.
    let mut sent: BTreeMap<(usize, usize), Vec<Sent>> = BTreeMap::new();
    let mut conn_of: BTreeMap<(usize, usize), Vec<(Backend, usize)>> = BTreeMap::new();
    for (backend, list) in conns {
        for (j, c) in list.iter().enumerate() {
            let Some(key) = owner(c) else { continue };
            conn_of.entry(key).or_default().push((*backend, j));
            for (at, json) in &c.sent {
                if let Some((is_final, text)) = transcript_of(*backend, json) {
                    sent.entry(key).or_default().push(Sent {
                        at: *at,
                        is_final,
                        text,
                        conn: (*backend, j),
                    });
                }
            }
        }
    }
    for list in sent.values_mut() {
        list.sort_by_key(|s| s.at);
    }
    let conn = |b: Backend, j: usize| -> &Connection {
        &conns.iter().find(|(x, _)| *x == b).expect("backend").1[j]
    };
    for (plan, out) in plans.iter().zip(outcomes) {
        // Failure.
        let mut why = Vec::new();
        if let Some(e) = &out.connect_error {
            why.push(format!("connect: {e}"));
        }
        for (_, m) in &out.messages {
            if let ServerMessage::Error { error, message } = m {
                why.push(format!("error {error}: {message}"));
            }
        }
        if out.connect_error.is_none() {
            if out.server_closed_first {
                why.push(format!("closed by the server first: {:?}", out.close));
            } else if let Some((code, reason)) = &out.close
                && *code != 1000
            {
                why.push(format!("close {code} {reason}"));
            }
            if let Some(e) = &out.read_error
                && out.close.is_none()
            {
                why.push(format!("read: {e}"));
            }
            if let Some(e) = &out.send_error {
                why.push(format!("send: {e}"));
            }
        }
        if !why.is_empty() {
            t.calls_failed
                .push(format!("call {}: {}", plan.index, why.join("; ")));
        }
        let fs = plan.frame_samples();
        for c in 0..2 {
            let channel = Channel::from_index(c).expect("channel");
            let received: Vec<(Instant, bool, String)> = out
                .messages
                .iter()
                .filter_map(|(at, m)| match m {
                    ServerMessage::TranscriberResponse {
                        transcription,
                        channel: ch,
                        transcript_type,
                    } if *ch == channel => Some((
                        *at,
                        *transcript_type == TranscriptType::Final,
                        transcription.clone(),
                    )),
                    _ => None,
                })
                .collect();
            t.transcripts += received.len();
            // Match transcripts with the mock's messages, in order.
            let mock = sent.get(&(plan.index, c)).map_or(&[][..], Vec::as_slice);
            let mut next = 0;
            let mut matched: Vec<Received> = Vec::new();
            for (at, is_final, text) in received {
                let found = mock[next..]
                    .iter()
                    .position(|s| s.is_final == is_final && s.text == text && s.at <= at)
                    .map(|k| next + k);
                if let Some(k) = found {
                    next = k + 1;
                    let latency = at.duration_since(mock[k].at).as_secs_f64();
                    t.relay.entry(mock[k].conn.0).or_default().push(latency);
                } else {
                    t.unmatched += 1;
                }
                matched.push(Received {
                    at,
                    is_final,
                    text,
                    source: found,
                });
            }
            // Words: every spoken word once in the finals.
            let spoken: Vec<&str> = plan.words[c]
                .iter()
                .map(|w| words::VOCAB[w.vocab])
                .collect();
            let mut got: Vec<String> = Vec::new();
            let mut final_of: Vec<usize> = Vec::new();
            for (i, r) in matched.iter().enumerate().filter(|(_, r)| r.is_final) {
                t.finals += 1;
                for w in hark_bench::wer::normalize(&r.text) {
                    got.push(w);
                    final_of.push(i);
                }
            }
            let aligned = align(&spoken, &got);
            let hits = aligned.iter().filter(|a| a.is_some()).count();
            t.words_spoken += spoken.len();
            t.words_lost += spoken.len() - hits;
            t.words_doubled += got.len() - hits;
            // Time to final: end of a final's last word (the frame that carried it) → final.
            let mut ttf_by_final: BTreeMap<usize, f64> = BTreeMap::new();
            for (k, a) in aligned.iter().enumerate() {
                if let Some(i) = a {
                    let frame = (plan.words[c][*i].end / fs) as usize;
                    if let Some(sent_at) = out.frames.get(frame) {
                        let r = &matched[final_of[k]];
                        let ttf = r.at.saturating_duration_since(*sent_at).as_secs_f64();
                        ttf_by_final.insert(final_of[k], ttf);
                    }
                }
            }
            // Failover: the channel's faulted provider connection.
            // The first to fail (with `--cut-replay`, later connections fail too).
            let faulted = plan.fault.and_then(|(kind, _)| {
                conn_of
                    .get(&(plan.index, c))?
                    .iter()
                    .filter_map(|&(b, j)| {
                        let x = conn(b, j);
                        (b != Backend::Aai && x.refused.is_none())
                            .then_some(x.fault_at)
                            .flatten()
                            .map(|f| (kind, (b, j), f))
                    })
                    .min_by_key(|(_, _, f)| *f)
            });
            match faulted {
                Some((kind, failed, fault_at)) => {
                    let from_failed =
                        |r: &Received| r.source.is_some_and(|k| mock[k].conn == failed);
                    let before = matched
                        .iter()
                        .filter(|r| from_failed(r) || (r.source.is_none() && r.at <= fault_at))
                        .map(|r| r.at)
                        .max();
                    let first = matched.iter().find(|r| {
                        r.at > fault_at && r.source.is_none_or(|k| mock[k].conn != failed)
                    });
                    // Where the call was (samples sent) when the fault fired.
                    let pos = out.frames.iter().take_while(|f| **f <= fault_at).count() as u64 * fs;
                    let name = match (kind, failed.0) {
                        (FaultKind::Failover, Backend::Riva) => {
                            "failover riva → dg (UNAVAILABLE, new stream refused UNAUTHENTICATED)"
                        }
                        (FaultKind::Reconnect, Backend::Riva) => {
                            "reconnect riva → riva (UNAVAILABLE)"
                        }
                        (FaultKind::Failover, _) => {
                            "failover dg → aai (drop, reconnect refused 401)"
                        }
                        (FaultKind::Reconnect, _) => "reconnect dg → dg (drop)",
                    };
                    if std::env::var_os("RELAY_LOAD_DEBUG").is_some() {
                        let prev_end = plan.words[c]
                            .iter()
                            .map(|w| w.end)
                            .filter(|e| *e <= pos)
                            .max();
                        eprintln!(
                            "call {} ch {c}: fault at pos {:.3} s, previous word end {:?} s; finals after (pos of last word, ttf): {:?}",
                            plan.index,
                            pos as f64 / f64::from(plan.rate),
                            prev_end.map(|e| e as f64 / f64::from(plan.rate)),
                            ttf_by_final
                                .iter()
                                .filter(|(i, _)| matched[**i].at > fault_at)
                                .map(|(i, v)| (matched[*i].text.clone(), (*v * 1000.0).round()))
                                .collect::<Vec<_>>()
                        );
                    }
                    match (before, first) {
                        (Some(b), Some(f)) => {
                            let ttf_after: Vec<f64> = ttf_by_final
                                .iter()
                                .filter(|(i, _)| matched[**i].at > fault_at)
                                .map(|(_, v)| *v)
                                .collect();
                            let ttf_last = ttf_after.last().copied();
                            let ttf_since: Vec<(f64, f64)> = ttf_by_final
                                .iter()
                                .filter(|(i, _)| matched[**i].at > fault_at)
                                .map(|(i, v)| {
                                    (matched[*i].at.duration_since(fault_at).as_secs_f64(), *v)
                                })
                                .collect();
                            let to_open = conn_of
                                .get(&(plan.index, c))
                                .into_iter()
                                .flatten()
                                .filter_map(|&(b, j)| conn(b, j).opened_at)
                                .filter(|o| *o > fault_at)
                                .min()
                                .map(|o| o.duration_since(fault_at).as_secs_f64());
                            t.gaps.entry(name).or_default().push(GapSample {
                                gap: f.at.duration_since(b).as_secs_f64(),
                                to_open,
                                to_first: f.at.duration_since(fault_at).as_secs_f64(),
                                speaking: plan.speaking(c, pos),
                                after: f.source.map(|k| mock[k].conn.0),
                                ttf_after,
                                ttf_since,
                                ttf_last,
                            });
                        }
                        _ => t.missing_gap += 1,
                    }
                }
                None => t.ttf.extend(ttf_by_final.values()),
            }
        }
    }
    t
}

// ---------------------------------------------------------------------------------------------

/// Chaos mode: the faults of one call's connections to one provider, in the order they
/// connect (both channels draw from the list). Times are seconds of audio on a connection.
fn chaos_script(rng: &mut fastrand::Rng, deepgram: bool) -> Vec<Fault> {
    let n = rng.usize(2..=6);
    (0..n)
        .map(|_| {
            let at = 2.0 + rng.f64() * 40.0;
            match rng.u8(0..if deepgram { 10 } else { 9 }) {
                0 => Fault::DropAfter(at),
                1 => Fault::CloseAfter(
                    at,
                    if deepgram { 1011 } else { 3005 },
                    if deepgram {
                        "NET-0000"
                    } else {
                        "Internal server error"
                    },
                ),
                2 => Fault::StallAfter(at),
                3 => Fault::DeafAfter(at),
                4 => Fault::Slow(Duration::from_millis(rng.u64(100..=800))),
                5 => Fault::SlowUpgrade(Duration::from_millis(rng.u64(200..=1500))),
                6 => Fault::Refuse(503),
                7 => Fault::Refuse(502),
                8 => Fault::GarbageAfter(at),
                _ => Fault::Refuse(429),
            }
        })
        .collect()
}

/// `--cut-replay`, a call failing over to dg: its first two dg connections (one per channel)
/// fail while they take the replay.
fn cut_dg_replay(dg: &MockProvider, tag: &str) {
    let cut = Fault::CloseAfter(CUT_REPLAY_AFTER, 1011, "NET-0000");
    dg.script_for("keyterm", tag, vec![cut.clone(), cut]);
}

/// Restricts the calling thread (and threads and children it starts later) to one CPU.
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn main() {
    let args = Args::parse();
    assert!(args.calls > 0, "--calls must be at least 1");
    assert!(
        args.mode == Mode::Steady
            || args.primary == Primary::Dg
            || (args.mode == Mode::Failover && args.primary == Primary::Riva),
        "failover mode takes --primary dg or riva; chaos and direct modes --primary dg"
    );
    raise_fd_limit();
    if args.pin {
        pin_to(1);
    }
    let ticks = clock_ticks();
    let dir = tempfile::Builder::new()
        .prefix("relay-load-")
        .tempdir()
        .expect("temp dir");

    let mock_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mock")
        .enable_all()
        .build()
        .expect("mock runtime");
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("client")
        .enable_all()
        .build()
        .expect("client runtime");
    let start_mock = |provider| {
        mock_rt.block_on(MockProvider::start(MockOptions {
            provider,
            api_key: KEY.into(),
            two_message_formatting: false,
        }))
    };
    let dg = start_mock(Provider::Deepgram);
    let aai = start_mock(Provider::AssemblyAi);
    dg.record_sent(true);
    aai.record_sent(true);
    let load = (args.late_ms > 0 || args.late_per_stream_ms > 0).then(|| Load {
        base: Duration::from_millis(args.late_ms),
        per_stream: Duration::from_millis(args.late_per_stream_ms),
        capacity: args.capacity,
    });
    dg.set_load(load);
    aai.set_load(load);
    let riva = mock_rt.block_on(RivaMock::start(RivaOptions {
        speed: args.riva_speed,
        ..RivaOptions::default()
    }));
    riva.record_sent(true);

    let plans: Vec<Arc<Plan>> = (0..args.calls)
        .map(|i| Arc::new(Plan::new(i, &args)))
        .collect();
    let mut faults_scripted = 0;
    let mut chaos_faults = 0;
    if args.mode == Mode::Chaos {
        let mut rng = fastrand::Rng::with_seed(args.seed ^ 0xc4a05);
        for p in &plans {
            let (dg_faults, aai_faults) =
                (chaos_script(&mut rng, true), chaos_script(&mut rng, false));
            chaos_faults += dg_faults.len() + aai_faults.len();
            dg.script_for("keyterm", &p.tag, dg_faults);
            aai.script_for("keyterms_prompt", &format!("[\"{}\"]", p.tag), aai_faults);
        }
    }
    for p in &plans {
        if let Some((kind, at)) = p.fault {
            if args.primary == Primary::Riva {
                // A stream, not the shared connection, fails: the other calls go on.
                let mut script = vec![
                    RivaFault::StatusAfter(at, tonic::Code::Unavailable),
                    RivaFault::StatusAfter(at, tonic::Code::Unavailable),
                ];
                if kind == FaultKind::Failover {
                    script.extend([
                        RivaFault::Refuse(tonic::Code::Unauthenticated),
                        RivaFault::Refuse(tonic::Code::Unauthenticated),
                    ]);
                    if args.cut_replay {
                        cut_dg_replay(&dg, &p.tag);
                    }
                } else if args.cut_replay {
                    let cut = RivaFault::StatusAfter(CUT_REPLAY_AFTER, tonic::Code::Unavailable);
                    script.extend([cut.clone(), cut]);
                }
                riva.script_for(&p.tag, script);
                faults_scripted += 1;
                continue;
            }
            // The call's two connections (one per channel) drop at the same audio second.
            let mut script = vec![Fault::DropAfter(at), Fault::DropAfter(at)];
            if kind == FaultKind::Failover {
                script.extend([Fault::Refuse(401), Fault::Refuse(401)]);
                if args.cut_replay {
                    // The fallback's first connections fail while taking the replay.
                    let cut = Fault::CloseAfter(CUT_REPLAY_AFTER, 3005, "Internal server error");
                    let value = format!("[\"{}\"]", p.tag);
                    aai.script_for("keyterms_prompt", &value, vec![cut.clone(), cut]);
                }
            } else if args.cut_replay {
                let cut = Fault::CloseAfter(CUT_REPLAY_AFTER, 1011, "NET-0000");
                script.extend([cut.clone(), cut]);
            }
            dg.script_for("keyterm", &p.tag, script);
            faults_scripted += 1;
        }
    }

    let config = write_config(dir.path(), &args, &dg.url(), &aai.url(), &riva.url());
    let mut hark = start_hark(&args, &config, dir.path());
    let pid = hark.child.id();
    eprintln!(
        "hark pid {pid} at {} (log {})",
        hark.addr,
        hark.log.display()
    );
    // The embedded recognizer loads in the background whatever the profile; wait for it so
    // its loading is not counted.
    let ready = client_rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Some((200, _)) = http_get(&hark.addr, "/readyz").await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    });
    assert!(ready, "hark did not become ready");
    std::thread::sleep(Duration::from_millis(500));
    let idle = snapshot(pid);
    let nice_hark = stat_ticks(Path::new(&format!("/proc/{pid}/stat"))).map_or(99, |s| s.1);
    let nice_tool = stat_ticks(Path::new("/proc/self/stat")).map_or(99, |s| s.1);

    // Peak RSS, sampled every 250 ms.
    let peak_rss = Arc::new(AtomicU64::new(idle.hark_rss_kb));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, on) = (peak_rss.clone(), sampling.clone());
        std::thread::Builder::new()
            .name("rss".into())
            .spawn(move || {
                while on.load(Ordering::Relaxed) {
                    if let Some(kb) = rss_kb(pid) {
                        peak.fetch_max(kb, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
            })
            .expect("sampler thread")
    };

    let url = format!("ws://{}/api/custom-transcriber/{PROFILE}", hark.addr);
    let direct = args.mode == Mode::Direct;
    let dg_url = dg.url();
    // The query hark's Deepgram relay sends (src/backend/deepgram.rs, defaults).
    let dg_query = format!(
        "model=nova-3&encoding=linear16&sample_rate={}&channels=1&interim_results=true&punctuate=true&smart_format=false&numerals=false",
        args.rate
    );
    let n = args.calls;
    let stagger = args.stagger;
    let duration = args.duration;
    let window_snaps: Arc<Mutex<Vec<Snapshot>>> = Arc::default();
    let began = Instant::now();
    let outcomes: Vec<Outcome> = client_rt.block_on({
        let plans = plans.clone();
        let snaps = window_snaps.clone();
        async move {
            let t0 = Instant::now() + Duration::from_millis(200);
            let tasks: Vec<_> = plans
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let start = t0 + Duration::from_secs_f64(stagger * i as f64 / n as f64);
                    if direct {
                        let url = format!("{dg_url}?{}&keyterm={}", dg_query, p.tag);
                        tokio::spawn(run_direct(p.clone(), url, start))
                    } else {
                        let url = format!("{url}?keyterms={}", p.tag);
                        tokio::spawn(run_call(p.clone(), url, start))
                    }
                })
                .collect();
            // The steady window: every call started (and settled), none ended yet.
            let from = t0 + Duration::from_secs_f64(stagger + 3.0);
            let to = t0 + Duration::from_secs_f64(duration.max(stagger + 5.0));
            tokio::time::sleep_until(from.into()).await;
            snaps.lock().expect("snaps").push(snapshot(pid));
            tokio::time::sleep_until(to.into()).await;
            snaps.lock().expect("snaps").push(snapshot(pid));
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap_or_default());
            }
            out
        }
    });
    let ran = began.elapsed();
    let after_calls = snapshot(pid);
    let metrics_text = client_rt
        .block_on(http_get(&hark.addr, "/metrics"))
        .map(|(_, body)| body)
        .unwrap_or_default();
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.join();
    let status = stop_hark(&mut hark);
    let mut log_text = String::new();
    if let Ok(mut f) = std::fs::File::open(&hark.log) {
        let _ = f.read_to_string(&mut log_text);
    }
    let conns = vec![
        (Backend::Dg, dg.connections()),
        (Backend::Aai, aai.connections()),
        (
            Backend::Riva,
            riva.streams().iter().map(riva_connection).collect(),
        ),
    ];
    let riva_tcp = riva.connections();
    let latest = |c: &[Connection]| {
        c.iter()
            .map(|c| c.max_answer_delay)
            .max()
            .unwrap_or_default()
            .as_secs_f64()
    };
    let (dg_late, aai_late) = (latest(&conns[0].1), latest(&conns[1].1));
    let riva_backlog = riva
        .streams()
        .iter()
        .map(|s| s.max_backlog_secs)
        .fold(0.0, f64::max);
    drop(dg);
    drop(aai);
    drop(riva);

    // ---- analysis
    let tally = analyse(&plans, &outcomes, &conns);
    let metrics = Metrics::parse(&metrics_text);
    let snaps = window_snaps.lock().expect("snaps").clone();
    let (w0, w1) = (&snaps[0], &snaps[1]);
    let window = w1
        .at
        .zip(w0.at)
        .map_or(0.0, |(b, a)| b.duration_since(a).as_secs_f64());
    let cpu = |a: u64, b: u64| b.saturating_sub(a) as f64 / ticks;
    let hark_cpu = cpu(w0.hark_ticks, w1.hark_ticks);
    let tool_cpu = |g: &str| {
        cpu(
            w0.tool.get(g).copied().unwrap_or(0),
            w1.tool.get(g).copied().unwrap_or(0),
        )
    };
    let machine_busy = {
        let busy = w1.machine.0.saturating_sub(w0.machine.0) as f64;
        let total = w1.machine.1.saturating_sub(w0.machine.1) as f64;
        if total > 0.0 { busy / total } else { 0.0 }
    };
    let violations: Vec<String> = conns
        .iter()
        .flat_map(|(b, l)| {
            l.iter().flat_map(move |c| {
                c.violations
                    .iter()
                    .map(move |v| format!("{}: {v}", b.name()))
            })
        })
        .collect();
    let mut log_counts: BTreeMap<String, usize> = BTreeMap::new();
    for line in log_text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let level = v["level"].as_str().unwrap_or("?");
        if level == "WARN" || level == "ERROR" {
            // Request ids (UUIDs) differ per line: leave them out so equal lines group.
            let message: Vec<&str> = v["message"]
                .as_str()
                .unwrap_or("?")
                .split(' ')
                .filter(|w| !(w.len() >= 36 && w.matches('-').count() == 4))
                .collect();
            let mut what = format!("{level} {}", message.join(" "));
            for key in ["reason", "code", "from", "to"] {
                if let Some(x) = v[key].as_str() {
                    what.push_str(&format!(" {key}={x}"));
                }
            }
            *log_counts.entry(what).or_insert(0) += 1;
        }
    }

    // ---- report
    let mode = match args.mode {
        Mode::Steady => "steady",
        Mode::Failover => "failover",
        Mode::Chaos => "chaos (every provider connection may misbehave at random)",
        Mode::Direct => {
            "direct (calibration: the calls bypass hark, which idles; hark's rows say nothing)"
        }
    };
    let primary = match args.primary {
        Primary::Dg => "dg (fallback aai)",
        Primary::Aai => "aai (fallback dg)",
        Primary::Riva => "riva (fallback dg)",
    };
    println!(
        "\n### relay_load: {n} calls × {:.0} s, {} Hz, mode {mode}, profile {primary}, seed {}\n",
        args.duration, args.rate, args.seed
    );
    println!("| measure | value |\n|---|---|");
    println!(
        "| run | {:.1} s of calls; steady window {:.1} s; hark nice {nice_hark}, tool nice {nice_tool}{}; hark exit {} |",
        ran.as_secs_f64(),
        window,
        if args.pin {
            "; hark pinned to CPU 0, the tool to CPU 1"
        } else {
            ""
        },
        status.map_or("killed".into(), |s| s.to_string())
    );
    if args.primary == Primary::Riva {
        let streams = conns
            .iter()
            .filter(|(b, _)| *b == Backend::Riva)
            .map(|(_, l)| l.len())
            .sum::<usize>();
        println!(
            "| riva | {streams} streams over {riva_tcp} HTTP/2 connection(s) (`connections = {}`) |",
            args.riva_connections
        );
    }
    if args.mode == Mode::Chaos {
        let fired = |b: Backend| {
            conns
                .iter()
                .filter(|(x, _)| *x == b)
                .flat_map(|(_, l)| l.iter())
                .filter(|c| c.fault_at.is_some() || c.refused.is_some())
                .count()
        };
        let opened = |b: Backend| {
            conns
                .iter()
                .filter(|(x, _)| *x == b)
                .map(|(_, l)| l.len())
                .sum::<usize>()
        };
        println!(
            "| faults | {chaos_faults} scripted at random (drops, error closes, stalls, half-open, slow answers, slow upgrades, refusals 502/503, garbage messages, dg 429); fired on {} of {} dg and {} of {} aai connections |",
            fired(Backend::Dg),
            opened(Backend::Dg),
            fired(Backend::Aai),
            opened(Backend::Aai)
        );
    }
    if load.is_some() || args.riva_speed.is_some() {
        println!(
            "| slow providers | dg and aai answer {} ms late + {} ms per other open stream, processing {} s of audio per s shared by their streams; riva processes at {}; the latest answer: dg {}, aai {}; riva's largest backlog (received, not yet processed) {} |",
            args.late_ms,
            args.late_per_stream_ms,
            args.capacity,
            args.riva_speed
                .map_or("once".into(), |s| format!("{s}× real time")),
            fmt_secs(dg_late),
            fmt_secs(aai_late),
            fmt_secs(riva_backlog)
        );
    }
    if args.mode == Mode::Failover {
        let what = if args.primary == Primary::Riva {
            "riva streams end UNAVAILABLE"
        } else {
            "dg connections drop"
        };
        println!(
            "| faults | both channels' {what} {:.1} s into a {}-word sentence both sides speak (after ≥ {:.0} s of the call){} |",
            args.fault_into,
            args.barge_words,
            args.fault_after,
            if args.cut_replay {
                format!(
                    "; the next connection or stream fails {CUT_REPLAY_AFTER} s into its replay (dg 1011, aai 3005, riva UNAVAILABLE)"
                )
            } else {
                String::new()
            }
        );
    }
    println!(
        "| failed calls | {} of {n}{} |",
        tally.calls_failed.len(),
        if tally.calls_failed.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                tally
                    .calls_failed
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" / ")
            )
        }
    );
    println!(
        "| words | {} spoken, {} lost, {} doubled or wrong |",
        tally.words_spoken, tally.words_lost, tally.words_doubled
    );
    println!(
        "| transcripts | {} received ({} finals), {} not matched to a mock message |",
        tally.transcripts, tally.finals, tally.unmatched
    );
    for (b, v) in &tally.relay {
        println!(
            "| relay overhead, mock → client ({}) | {} |",
            b.name(),
            summary(v)
        );
    }
    for b in ["dg", "aai", "riva"] {
        let key = format!("hark_event_to_socket_seconds{{backend=\"{b}\"}}");
        if metrics.histograms.contains_key(&key) {
            println!(
                "| hark event → socket ({b}), /metrics | {} |",
                metrics.quantiles_text(&key)
            );
        }
    }
    println!(
        "| time to final (word end → final at the client; unfaulted channels) | {} |",
        summary(&tally.ttf)
    );
    let per_call = |cpu: f64| {
        if window > 0.0 {
            100.0 * cpu / window / n as f64
        } else {
            f64::NAN
        }
    };
    println!(
        "| hark CPU, steady window | {:.2} core-s in {:.1} s = {:.1} % of a core; **{:.3} % of a core per call** |",
        hark_cpu,
        window,
        100.0 * hark_cpu / window.max(1e-9),
        per_call(hark_cpu)
    );
    println!(
        "| tool CPU, steady window (nice {nice_tool}) | mock {:.1} %, client {:.1} %, other {:.1} % of a core |",
        100.0 * tool_cpu("mock") / window.max(1e-9),
        100.0 * tool_cpu("client") / window.max(1e-9),
        100.0 * tool_cpu("other") / window.max(1e-9)
    );
    // SAFETY: sysconf has no preconditions. (Not available_parallelism: --pin narrows it.)
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let accounted =
        (hark_cpu + tool_cpu("mock") + tool_cpu("client") + tool_cpu("other")) / window.max(1e-9);
    // Other processes over the window, largest first.
    let mut others: Vec<(f64, String)> = w1
        .others
        .iter()
        .map(|(p, (comm, ticks))| {
            let before = w0.others.get(p).map_or(0, |x| x.1);
            (cpu(before, *ticks) / window.max(1e-9), comm.clone())
        })
        .filter(|(c, _)| *c > 0.0)
        .collect();
    others.sort_by(|a, b| b.0.total_cmp(&a.0));
    let others_total: f64 = others.iter().map(|o| o.0).sum();
    let top: Vec<String> = others
        .iter()
        .take(2)
        .filter(|o| o.0 >= 0.01)
        .map(|(c, n)| format!("{n} {c:.2}"))
        .collect();
    println!(
        "| machine CPU busy, steady window | {:.0} % of {cores} cores = {:.2} cores: hark and the tool {:.2}, **other processes {:.2}**{}, kernel (unattributed) {:.2} |",
        100.0 * machine_busy,
        machine_busy * cores as f64,
        accounted,
        others_total,
        if top.is_empty() {
            String::new()
        } else {
            format!(" ({})", top.join(", "))
        },
        machine_busy * cores as f64 - accounted - others_total
    );
    let mb = |kb: u64| kb as f64 / 1024.0;
    println!(
        "| hark RSS | idle {:.0} MB, steady {:.0} MB, peak {:.0} MB, after the calls {:.0} MB; ({:.2} MB per call over idle, steady) |",
        mb(idle.hark_rss_kb),
        mb(w1.hark_rss_kb),
        mb(peak_rss.load(Ordering::Relaxed)),
        mb(after_calls.hark_rss_kb),
        (mb(w1.hark_rss_kb) - mb(idle.hark_rss_kb)) / n as f64
    );
    println!(
        "| mock connections / violations | {} dg, {} aai, {} riva streams / {}{} |",
        conns[0].1.len(),
        conns[1].1.len(),
        conns[2].1.len(),
        violations.len(),
        violations
            .first()
            .map_or(String::new(), |v| format!(" (first: {v})"))
    );
    for b in ["dg", "aai", "riva"] {
        let key = format!("hark_recognizer_lag_seconds{{backend=\"{b}\",channel=\"customer\"}}");
        if metrics.histograms.contains_key(&key) {
            let lag = metrics.quantiles_text(&key);
            println!("| hark recognizer lag ({b}, customer), /metrics | {lag} |");
        }
    }
    let counters: Vec<String> = [
        "hark_session_failures_total",
        "hark_backend_reconnects_total",
        "hark_backend_failovers_total",
        "hark_provider_errors_total",
        "hark_rejected_upgrades_total",
    ]
    .iter()
    .flat_map(|p| metrics.sum_matching(p))
    .map(|(k, v)| format!("`{k}` {v}"))
    .collect();
    println!(
        "| hark counters | {} |",
        if counters.is_empty() {
            "no failure, reconnect, failover or provider error".into()
        } else {
            counters.join(", ")
        }
    );
    println!(
        "| hark warnings and errors (log) | {} |",
        if log_counts.is_empty() {
            "none".into()
        } else {
            log_counts
                .iter()
                .map(|(k, v)| format!("{v}× {k}"))
                .collect::<Vec<_>>()
                .join("; ")
        }
    );

    if args.mode == Mode::Failover {
        println!(
            "\nFaults scripted on {faults_scripted} calls (both channels' connections at once, mid-sentence); {} faulted channels had no transcript on one side of the failure.\n",
            tally.missing_gap
        );
        println!(
            "| fault | channels (speaking at the failure) | new backend | gap: last transcript before → first after | failure → new connection open | failure → first transcript | time to final after the failure | time to final of the call's last final |"
        );
        println!("|---|---|---|---|---|---|---|---|");
        for (name, samples) in &tally.gaps {
            let speaking: Vec<&GapSample> = samples.iter().filter(|s| s.speaking).collect();
            let after: BTreeMap<&str, usize> = samples.iter().fold(BTreeMap::new(), |mut m, s| {
                *m.entry(s.after.map_or("?", Backend::name)).or_insert(0) += 1;
                m
            });
            let gaps: Vec<f64> = speaking.iter().map(|s| s.gap).collect();
            let firsts: Vec<f64> = speaking.iter().map(|s| s.to_first).collect();
            let opens: Vec<f64> = samples.iter().filter_map(|s| s.to_open).collect();
            let ttf: Vec<f64> = samples.iter().flat_map(|s| s.ttf_after.clone()).collect();
            let last: Vec<f64> = samples.iter().filter_map(|s| s.ttf_last).collect();
            println!(
                "| {name} | {} ({}) | {:?} | {} | {} | {} | {} | {} |",
                samples.len(),
                speaking.len(),
                after,
                summary3(&gaps),
                summary3(&opens),
                summary3(&firsts),
                summary3(&ttf),
                summary3(&last)
            );
            let silent: Vec<f64> = samples
                .iter()
                .filter(|s| !s.speaking)
                .map(|s| s.gap)
                .collect();
            if !silent.is_empty() {
                println!(
                    "| {name}, channels silent at the failure | {} | | {} | | {} | | |",
                    silent.len(),
                    summary3(&silent),
                    summary3(
                        &samples
                            .iter()
                            .filter(|s| !s.speaking)
                            .map(|s| s.to_first)
                            .collect::<Vec<_>>()
                    )
                );
            }
        }
        println!(
            "\nTime to final of the finals after a fault, by when they arrived (seconds after the fault): p50 / p95 / max (n)\n"
        );
        let buckets: [(f64, f64); 11] = [
            (0.0, 1.0),
            (1.0, 2.0),
            (2.0, 3.0),
            (3.0, 4.0),
            (4.0, 4.5),
            (4.5, 5.0),
            (5.0, 6.0),
            (6.0, 7.5),
            (7.5, 10.0),
            (10.0, 20.0),
            (20.0, f64::INFINITY),
        ];
        let head: Vec<String> = buckets
            .iter()
            .map(|(a, b)| {
                if b.is_finite() {
                    format!("{a}–{b} s")
                } else {
                    format!("{a} s on")
                }
            })
            .collect();
        println!("| fault | {} |", head.join(" | "));
        println!("|---|{}", "---|".repeat(buckets.len()));
        for (name, samples) in &tally.gaps {
            let cells: Vec<String> = buckets
                .iter()
                .map(|(a, b)| {
                    let v: Vec<f64> = samples
                        .iter()
                        .flat_map(|s| s.ttf_since.iter())
                        .filter(|(t, _)| t >= a && t < b)
                        .map(|(_, v)| *v)
                        .collect();
                    summary3(&v)
                })
                .collect();
            println!("| {name} | {} |", cells.join(" | "));
        }
        for b in ["aai", "dg"] {
            let key = format!("hark_failover_gap_seconds{{backend=\"{b}\"}}");
            if metrics.histograms.contains_key(&key) {
                println!(
                    "\n`hark_failover_gap_seconds{{backend=\"{b}\"}}`: {}",
                    metrics.quantiles_text(&key)
                );
            }
        }
    }
    if args.keep {
        let kept = dir.keep();
        eprintln!("kept {}", kept.display());
    }
}

/// p50 / p95 / max.
fn summary3(values: &[f64]) -> String {
    stats_text(values, false)
}
