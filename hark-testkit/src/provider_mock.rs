//! Mock speech-to-text providers for testing hark's network backends: a Deepgram-compatible
//! live endpoint (`/v1/listen`) and AssemblyAI Universal Streaming v3 (`/v3/ws`), each
//! following the providers' docs (sources in `docs/PROVIDERS.md`): auth on the upgrade,
//! query validation, message shapes, control messages, close codes, the idle close and the
//! frame rules.
//!
//! A mock cannot run a recognizer, so it "hears" the word code of [`super::words`]: what a
//! test speaks with `words::speak` comes back as exactly those words, at exactly those times,
//! in the provider's own message shapes. Everything a client does is recorded per connection
//! ([`Connection`]), including each documented rule it broke (`violations`), so a backend test
//! can check both what the platform received and how the backend treated the provider.
//! Failures are scripted per connection ([`Fault`]) to test reconnects and failure handling;
//! a [`Load`] makes the whole mock a provider that answers late under load.
//!
//! Design: one task per connection owns its websocket; a single `select!` loop reads the
//! client, sends queued answers when they are due (a queue, so [`Fault::Slow`] delays answers
//! without reordering them) and fires the provider's idle timer. The provider-specific part
//! is a `Dialect`, which turns audio and control messages into answers through a `Link`:
//! the part both providers share (the outbox, the record, stall and close state).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, sleep_until, timeout};
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::{WebSocketStream, accept_hdr_async};

use super::words::{Word, WordDecoder};

/// Deepgram closes a stream that sent no message at all for this long (and one that sent no
/// audio in its first 10 s): close 1011 `NET-0001`.
pub const DEEPGRAM_IDLE: Duration = Duration::from_secs(10);
/// The mock's stand-in for Deepgram's own chunking: silence with no words is answered with an
/// empty `is_final` result every this many seconds of audio.
const DEEPGRAM_EMPTY_FINAL_SECS: f64 = 2.0;
/// Deepgram's `endpointing` when the query leaves it out. The real default is 10 ms; the mock
/// uses 300 ms so that a test's short pauses between words do not end utterances.
const DEEPGRAM_DEFAULT_ENDPOINTING_MS: f64 = 300.0;
/// AssemblyAI's documented bounds on one binary frame.
const AAI_FRAME_MS: std::ops::RangeInclusive<f64> = 50.0..=1000.0;
/// How far ahead of the wall clock (since Begin) AssemblyAI audio may run before the mock
/// calls it "faster than real time": network jitter bunches frames, a replay does not.
const AAI_AHEAD_TOLERANCE_SECS: f64 = 0.3;
/// AssemblyAI's defaults for the turn detector.
const AAI_DEFAULT_MIN_TURN_SILENCE_MS: f64 = 400.0;
const AAI_SESSION_SECS: u64 = 3 * 3600;
const CONFIDENCE: f64 = 0.99;

/// The mock's own bounds, so that no loop or wait is unbounded whatever the client does.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);
const SEND_LIMIT: Duration = Duration::from_secs(5);
const CLOSE_REPLY_LIMIT: Duration = Duration::from_secs(5);
/// A stalled connection that the client closed is held open, unanswered, for this long.
const STALL_HOLD: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    Deepgram,
    AssemblyAi,
}

impl Provider {
    fn path(self) -> &'static str {
        match self {
            Provider::Deepgram => "/v1/listen",
            Provider::AssemblyAi => "/v3/ws",
        }
    }
}

/// One scripted failure, taken by one connection (see [`MockProvider::script`]).
#[derive(Clone, Debug)]
pub enum Fault {
    /// Refuse the upgrade with this HTTP status (e.g. 401, 429); Deepgram adds `dg-error` and
    /// `dg-request-id` headers; the body explains.
    Refuse(u16),
    /// After this many seconds of audio received on the connection, drop the TCP connection
    /// without a close frame.
    DropAfter(f64),
    /// After this many seconds of audio, close with (code, reason) (Deepgram: 1011
    /// "NET-0000"; AssemblyAI: 3005 …). AssemblyAI sends an `{"type":"Error",...}` text frame
    /// just before the close (newer-server behaviour). Under a [`Load`], answers not yet due
    /// are dropped and the close goes out at once.
    CloseAfter(f64, u16, &'static str),
    /// After this many seconds of audio, keep reading audio but never send anything again
    /// (and never close, not even in answer to the client's close).
    StallAfter(f64),
    /// Every answer is delayed by this long (order kept).
    Slow(Duration),
    /// After this many seconds of audio, stop reading the connection and answering on it (a
    /// half-open connection: the peer is gone but the socket stays up), held so for a while.
    DeafAfter(f64),
    /// After this many seconds of audio, send messages that are not the provider's (not JSON,
    /// JSON of no known type, a result with fields of the wrong type), then go on normally.
    GarbageAfter(f64),
    /// After this many seconds of audio, every answer is a message that is not the
    /// provider's (not JSON): a provider whose messages hark can no longer read.
    GarbledAfter(f64),
    /// The upgrade is answered only after this long (a provider slow to accept); the
    /// client's audio waits meanwhile.
    SlowUpgrade(Duration),
}

/// A provider under load: it processes audio at a finite speed that every
/// stream open on it shares, and answers what a frame or a control message produced only once
/// it has processed that audio, some latency later. So its answers come late in proportion to
/// the audio a connection holds unprocessed (a replay sent faster than real time) and to the
/// streams open at once; the order of answers is kept. Set with [`MockProvider::set_load`].
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Latency of every answer after the audio it answers was processed.
    pub base: Duration,
    /// Added to `base` for each other stream open on the mock.
    pub per_stream: Duration,
    /// Seconds of audio the mock processes per second with one stream open; with `n` open,
    /// each gets `capacity / n`.
    pub capacity: f64,
}

#[derive(Clone, Debug)]
pub struct MockOptions {
    pub provider: Provider,
    pub api_key: String,
    /// AssemblyAI only: true = older servers (with format_turns=true an unformatted
    /// end_of_turn Turn, then a second Turn with the same turn_order and
    /// turn_is_formatted=true); false = format inline.
    pub two_message_formatting: bool,
}

/// What one connection saw, kept up to date while it runs.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    pub path: String,
    /// Decoded query pairs, repeated parameters kept in order.
    pub query: Vec<(String, String)>,
    /// Request headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// HTTP status if the handshake was refused.
    pub refused: Option<u16>,
    pub audio_frames: usize,
    /// Per channel (for a mono stream: samples).
    pub audio_samples: u64,
    pub zero_length_frames: usize,
    /// The `type` of each text message received, in order ("KeepAlive", "Finalize",
    /// "CloseStream", "Terminate", …; "`<invalid>`" for one without a type).
    pub control: Vec<String>,
    /// Words decoded from the audio, in order (all channels).
    pub words_heard: Vec<String>,
    /// Words the mock delivered in finals: Deepgram `is_final` results, AssemblyAI turns that
    /// a client must take as final (`end_of_turn && (!format_turns || turn_is_formatted)`).
    pub words_sent_final: Vec<String>,
    /// Max over time of (audio seconds received) / (wall seconds since connect), measured
    /// after the first second.
    pub max_rate_ratio: f64,
    /// Duration of each binary frame received, in ms.
    pub frame_ms: Vec<f64>,
    /// The close code and reason the mock sent, if it closed.
    pub close_sent: Option<(u16, String)>,
    /// Each documented rule the client broke, described.
    pub violations: Vec<String>,
    pub closed: bool,
    /// When the connection's scripted fault fired (the drop, close or stall; a refusal at the
    /// upgrade), on the std clock, so a program in the same process can time what follows.
    pub fault_at: Option<std::time::Instant>,
    /// When the websocket upgrade completed (std clock); None if it did not.
    pub opened_at: Option<std::time::Instant>,
    /// The latest any answer on this connection was due after the input it answers
    /// arrived (a [`Load`], or [`Fault::Slow`]).
    pub max_answer_delay: Duration,
    /// Each text message the mock sent, with the std clock's time just before it went to the
    /// socket. Recorded only after [`MockProvider::record_sent`]`(true)`.
    pub sent: Vec<(std::time::Instant, String)>,
}

/// A keyed script: the query parameter (name, value) it matches and its faults.
type Keyed = (String, String, VecDeque<Fault>);

/// State shared by the mock's handle, its accept loop and its connections.
struct Shared {
    options: MockOptions,
    script: Mutex<VecDeque<Fault>>,
    connections: Mutex<Vec<Connection>>,
    closed: Notify,
    idle: Mutex<Duration>,
    /// Scripts for connections whose query carries (name, value): see
    /// [`MockProvider::script_for`].
    keyed: Mutex<Vec<Keyed>>,
    record_sent: AtomicBool,
    load: Mutex<Option<Load>>,
    /// Upgraded connections not yet ended: the streams a [`Load`] is shared by.
    open: AtomicUsize,
}

/// A mock provider on an ephemeral loopback port; it serves until dropped.
pub struct MockProvider {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockProvider {
    /// Binds 127.0.0.1:0 and serves until dropped.
    pub async fn start(options: MockOptions) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("mock provider binds a loopback port");
        let addr = listener.local_addr().expect("mock provider address");
        let shared = Arc::new(Shared {
            options,
            script: Mutex::new(VecDeque::new()),
            connections: Mutex::new(Vec::new()),
            closed: Notify::new(),
            idle: Mutex::new(DEEPGRAM_IDLE),
            keyed: Mutex::new(Vec::new()),
            record_sent: AtomicBool::new(false),
            load: Mutex::new(None),
            open: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Self { addr, shared, task }
    }

    /// `ws://127.0.0.1:PORT/v1/listen` (Deepgram) or `ws://127.0.0.1:PORT/v3/ws` (AssemblyAI).
    pub fn url(&self) -> String {
        format!("ws://{}{}", self.addr, self.shared.options.provider.path())
    }

    /// Faults for the next connections, in order: the Nth new connection (TCP accept, whether
    /// or not its handshake succeeds) takes the Nth entry; after the list, connections are
    /// normal. Replaces what is left of an earlier script.
    pub fn script(&self, faults: Vec<Fault>) {
        *lock(&self.shared.script) = faults.into();
    }

    /// Faults for the connections whose upgrade query has parameter `name` = `value`, in the
    /// order they reach the upgrade; after the list, such connections are normal. A matching
    /// connection takes its fault from here instead of from [`MockProvider::script`] (which
    /// is still consumed at accept, so use one or the other). Lets concurrent calls each
    /// script their own connections (e.g. by a `keyterm` that names the call).
    pub fn script_for(&self, name: &str, value: &str, faults: Vec<Fault>) {
        let mut keyed = lock(&self.shared.keyed);
        keyed.retain(|(n, v, _)| !(n == name && v == value));
        keyed.push((name.into(), value.into(), faults.into()));
    }

    /// Records every text message sent (with its time) in [`Connection::sent`] from now on.
    pub fn record_sent(&self, on: bool) {
        self.shared.record_sent.store(on, Ordering::Relaxed);
    }

    /// Shortens (or lengthens) Deepgram's 10 s idle rule for connections opened after this
    /// call, so a test of keep-alives need not wait 10 s. (Addition to the agreed API.)
    pub fn set_idle_timeout(&self, idle: Duration) {
        *lock(&self.shared.idle) = idle;
    }

    /// Makes the mock a provider under load (or, with `None`, prompt again), for every
    /// connection from its next frame on.
    pub fn set_load(&self, load: Option<Load>) {
        *lock(&self.shared.load) = load;
    }

    /// What each connection saw so far, in connection order.
    pub fn connections(&self) -> Vec<Connection> {
        lock(&self.shared.connections).clone()
    }

    /// Waits (bounded) until `n` connections have closed (either side; a refused upgrade
    /// counts as closed); false on timeout.
    pub async fn wait_closed(&self, n: usize, limit: Duration) -> bool {
        crate::wait_notified(&self.shared.closed, limit, || {
            lock(&self.shared.connections)
                .iter()
                .filter(|c| c.closed)
                .count()
                >= n
        })
        .await
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        // The accept loop owns the connection tasks (a JoinSet), so this ends them all.
        self.task.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    let fault = lock(&shared.script).pop_front();
                    let id = {
                        let mut all = lock(&shared.connections);
                        all.push(Connection::default());
                        all.len() - 1
                    };
                    tasks.spawn(serve(shared.clone(), id, tcp, fault));
                }
                // Out of descriptors or similar: back off rather than spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The upgrade

/// The request as the upgrade saw it.
#[derive(Default)]
struct Handshake {
    path: String,
    query: Query,
    headers: Vec<(String, String)>,
}

impl Handshake {
    fn of(req: &Request) -> Self {
        Self {
            path: req.uri().path().to_string(),
            query: Query::parse(req.uri().query().unwrap_or("")),
            headers: req
                .headers()
                .iter()
                .map(|(k, v)| {
                    let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                    (k.as_str().to_ascii_lowercase(), v)
                })
                .collect(),
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Query pairs, percent-decoded (`+` is a space), repeated names kept in order.
#[derive(Clone, Debug, Default)]
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(raw: &str) -> Self {
        Self(
            raw.split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (unescape(k), unescape(v))
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, name: &str) -> bool {
        self.get(name) == Some("true")
    }
}

fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An HTTP refusal of the upgrade.
struct Refusal {
    status: u16,
    why: String,
}

impl Refusal {
    fn new(status: u16, why: impl Into<String>) -> Self {
        Self {
            status,
            why: why.into(),
        }
    }

    /// Deepgram answers with `dg-error` (the cause) and `dg-request-id` headers and a JSON
    /// body; AssemblyAI with a JSON body.
    fn response(&self, provider: Provider) -> ErrorResponse {
        let mut builder = http::Response::builder().status(self.status);
        let body = match provider {
            Provider::Deepgram => {
                let request_id = uuid_like();
                builder = builder
                    .header("dg-error", self.why.as_str())
                    .header("dg-request-id", request_id.as_str());
                json!({"err_code": deepgram_err_code(self.status), "err_msg": self.why,
                       "request_id": request_id})
            }
            Provider::AssemblyAi => json!({"error": self.why}),
        }
        .to_string();
        builder
            .header("content-type", "application/json")
            .header("content-length", body.len())
            .body(Some(body))
            .unwrap_or_else(|_| http::Response::new(None))
    }
}

fn deepgram_err_code(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "INVALID_AUTH",
        402 => "ASR_PAYMENT_REQUIRED",
        403 => "INSUFFICIENT_PERMISSIONS",
        404 => "NOT_FOUND",
        429 => "TOO_MANY_REQUESTS",
        _ => "INTERNAL_SERVER_ERROR",
    }
}

fn scripted_refusal(status: u16) -> Refusal {
    let why = match status {
        401 => "Invalid credentials.",
        402 => "Insufficient balance.",
        429 => "Too many concurrent requests.",
        503 => "Service unavailable.",
        _ => "Refused by the test script.",
    };
    Refusal::new(status, why)
}

/// Whether the upgrade is refused, and how. Deepgram checks auth and parameters before the
/// upgrade; AssemblyAI accepts the upgrade and closes later (see [`AssemblyAi::open`]).
fn refusal(options: &MockOptions, fault: Option<&Fault>, hs: &Handshake) -> Option<Refusal> {
    if hs.path != options.provider.path() {
        return Some(Refusal::new(404, format!("No route for {}", hs.path)));
    }
    if let Some(Fault::Refuse(status)) = fault {
        return Some(scripted_refusal(*status));
    }
    if options.provider == Provider::Deepgram {
        let auth = hs.header("authorization").unwrap_or("");
        let key_ok = [
            format!("Token {}", options.api_key),
            format!("Bearer {}", options.api_key),
        ]
        .iter()
        .any(|k| k == auth);
        if !key_ok {
            return Some(Refusal::new(401, "Invalid credentials."));
        }
        if let Err(why) = DeepgramParams::parse(&hs.query) {
            return Some(Refusal::new(400, why));
        }
    }
    None
}

async fn serve(shared: Arc<Shared>, id: usize, tcp: TcpStream, mut fault: Option<Fault>) {
    // A keyed script is known only from the request's query: peek at the request line.
    let next_keyed = match peek_query(&tcp).await {
        Some(query) => next_keyed_fault(&shared, &query),
        None => None,
    };
    if let Some(Fault::SlowUpgrade(delay)) = next_keyed.as_ref().or(fault.as_ref()) {
        tokio::time::sleep(*delay).await;
    }
    let options = shared.options.clone();
    let mut hs = Handshake::default();
    let mut refused = None;
    // The error type is tungstenite's; the refusal is built once per connection.
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        hs = Handshake::of(req);
        if let Some(keyed) = keyed_fault(&shared, &hs.query) {
            fault = keyed;
        }
        match refusal(&options, fault.as_ref(), &hs) {
            None => Ok(resp),
            Some(r) => {
                refused = Some(r.status);
                Err(r.response(options.provider))
            }
        }
    };
    let upgraded = timeout(HANDSHAKE_LIMIT, accept_hdr_async(tcp, callback)).await;
    let link = Link::new(shared.clone(), id, fault.clone());
    link.record(|c| {
        c.path = hs.path.clone();
        c.query = hs.query.0.clone();
        c.headers = hs.headers.clone();
        c.refused = refused;
        if refused.is_some() && matches!(fault, Some(Fault::Refuse(_))) {
            c.fault_at = Some(std::time::Instant::now());
        }
    });
    match upgraded {
        Ok(Ok(ws)) => {
            link.record(|c| c.opened_at = Some(std::time::Instant::now()));
            let dialect: Box<dyn Dialect> = match options.provider {
                Provider::Deepgram => Box::new(Deepgram::new(&hs, *lock(&shared.idle))),
                Provider::AssemblyAi => Box::new(AssemblyAi::new(&hs, &options)),
            };
            run(ws, link, dialect, fault).await;
        }
        Ok(Err(e)) if refused.is_none() => link.violation(format!("handshake failed: {e}")),
        Ok(Err(_)) => {}
        Err(_) => link.violation("no websocket handshake within 10 s"),
    }
    mark_closed(&shared, id);
}

/// The query of the upgrade request waiting on `tcp`, read without taking it (the request
/// line is in the first packet a client sends; a second is not waited for).
async fn peek_query(tcp: &TcpStream) -> Option<Query> {
    let mut buf = [0u8; 4096];
    let n = timeout(Duration::from_secs(1), tcp.peek(&mut buf))
        .await
        .ok()?
        .ok()?;
    let head = std::str::from_utf8(&buf[..n]).ok()?;
    let target = head.lines().next()?.split(' ').nth(1)?;
    Some(Query::parse(target.split_once('?').map_or("", |(_, q)| q)))
}

/// The fault a keyed script holds next for a connection with `query`, without taking it.
fn next_keyed_fault(shared: &Shared, query: &Query) -> Option<Fault> {
    keyed_script(&mut lock(&shared.keyed), query)?
        .front()
        .cloned()
}

/// The keyed script a connection with `query` takes its faults from, if any.
fn keyed_script<'a>(keyed: &'a mut [Keyed], query: &Query) -> Option<&'a mut VecDeque<Fault>> {
    keyed
        .iter_mut()
        .find(|(name, value, _)| query.0.iter().any(|(n, v)| n == name && v == value))
        .map(|(_, _, faults)| faults)
}

/// The fault of a connection that a keyed script matches: `Some(fault or none)` when a
/// script for one of its query pairs exists, `None` when none does.
fn keyed_fault(shared: &Shared, query: &Query) -> Option<Option<Fault>> {
    Some(keyed_script(&mut lock(&shared.keyed), query)?.pop_front())
}

fn mark_closed(shared: &Shared, id: usize) {
    if let Some(c) = lock(&shared.connections).get_mut(id) {
        c.closed = true;
    }
    shared.closed.notify_waiters();
}

// ---------------------------------------------------------------------------------------------
// The connection loop, shared by both providers

/// Something queued for the client.
enum Out {
    /// A text frame, and the words it delivers as final (for the record).
    Text(String, Vec<String>),
    Close(u16, String),
}

/// The provider-independent side of one connection: the outbox and the record.
struct Link {
    shared: Arc<Shared>,
    id: usize,
    connected: Instant,
    last_input: Instant,
    outbox: VecDeque<(Instant, Out)>,
    delay: Duration,
    /// A close is queued: nothing more is queued and client input is ignored.
    closing: bool,
    /// [`Fault::StallAfter`] fired: nothing is ever sent again.
    stalled: bool,
    /// Every text answer goes out as junk (`Fault::GarbledAfter`).
    garbled: bool,
    /// Under a [`Load`]: when the mock will have processed the audio received so far.
    processed_at: Instant,
}

impl Link {
    fn new(shared: Arc<Shared>, id: usize, fault: Option<Fault>) -> Self {
        let now = Instant::now();
        Self {
            shared,
            id,
            connected: now,
            last_input: now,
            outbox: VecDeque::new(),
            delay: match fault {
                Some(Fault::Slow(d)) => d,
                _ => Duration::ZERO,
            },
            closing: false,
            stalled: false,
            garbled: false,
            processed_at: now,
        }
    }

    /// Under a [`Load`], the answers queued since the outbox held `from` items wait until the
    /// mock has processed `secs` more seconds of audio behind what it already holds, plus the
    /// load's latency.
    fn loaded(&mut self, from: usize, secs: f64) {
        let Some(load) = *lock(&self.shared.load) else {
            return;
        };
        let now = Instant::now();
        let streams = self.shared.open.load(Ordering::Relaxed).max(1);
        let speed = (load.capacity / streams as f64).max(1e-3);
        self.processed_at = self.processed_at.max(now) + Duration::from_secs_f64(secs / speed);
        let others = u32::try_from(streams - 1).unwrap_or(u32::MAX);
        let due = self.processed_at + load.base + load.per_stream.saturating_mul(others);
        let mut latest = Duration::ZERO;
        for (at, _) in self.outbox.iter_mut().skip(from) {
            *at = (*at).max(due);
            latest = latest.max(at.saturating_duration_since(now));
        }
        self.record(|c| c.max_answer_delay = c.max_answer_delay.max(latest));
    }

    fn send(&mut self, message: Value) {
        self.queue(Out::Text(message.to_string(), Vec::new()));
    }

    /// Sends a message that delivers `words` as final.
    fn send_final(&mut self, message: Value, words: Vec<String>) {
        self.queue(Out::Text(message.to_string(), words));
    }

    fn close(&mut self, code: u16, reason: &str) {
        // A close reason must fit a control frame (125 bytes with the code).
        let mut end = reason.len().min(120);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        self.queue(Out::Close(code, reason[..end].to_string()));
        self.closing = true;
    }

    fn queue(&mut self, out: Out) {
        let out = match out {
            Out::Text(_, _) if self.garbled => Out::Text("\u{0}not json{".into(), Vec::new()),
            out => out,
        };
        if !self.stalled && !self.closing {
            self.outbox.push_back((Instant::now() + self.delay, out));
        }
    }

    fn stall(&mut self) {
        self.stalled = true;
        self.closing = false;
        self.outbox.clear();
    }

    fn record(&self, f: impl FnOnce(&mut Connection)) {
        if let Some(c) = lock(&self.shared.connections).get_mut(self.id) {
            f(c);
        }
    }

    fn violation(&self, what: impl Into<String>) {
        let what = what.into();
        self.record(|c| c.violations.push(what));
    }

    fn heard(&self, word: &Word) {
        self.record(|c| c.words_heard.push(word.text.to_string()));
    }
}

/// What a provider does with the client's input; it answers through the [`Link`].
trait Dialect: Send {
    /// Right after the upgrade.
    fn open(&mut self, link: &mut Link);
    /// One binary frame; returns the seconds of audio (per channel) it held.
    fn audio(&mut self, data: &[u8], link: &mut Link) -> f64;
    /// One text frame.
    fn text(&mut self, text: &str, link: &mut Link);
    /// When the provider's idle rule fires, if it has one now.
    fn idle_deadline(&self, link: &Link) -> Option<Instant>;
    fn idle(&mut self, link: &mut Link);
    /// Ends the session with a server-side error, as this provider does.
    fn fail(&mut self, link: &mut Link, code: u16, reason: &str);
}

enum Delivery {
    Open,
    /// The mock's close frame went out.
    Closed,
    /// The socket is gone.
    Broken,
}

/// Sends every queued item that is due.
async fn deliver(ws: &mut WebSocketStream<TcpStream>, link: &mut Link) -> Delivery {
    while link
        .outbox
        .front()
        .is_some_and(|(due, _)| *due <= Instant::now())
    {
        let Some((_, out)) = link.outbox.pop_front() else {
            break;
        };
        let (message, finals, close) = match out {
            Out::Text(text, finals) => {
                if link.shared.record_sent.load(Ordering::Relaxed) {
                    let at = std::time::Instant::now();
                    let copy = text.clone();
                    link.record(|c| c.sent.push((at, copy)));
                }
                (Message::text(text), finals, None)
            }
            Out::Close(code, reason) => {
                let frame = CloseFrame {
                    code: CloseCode::from(code),
                    reason: Utf8Bytes::from(reason.clone()),
                };
                (
                    Message::Close(Some(frame)),
                    Vec::new(),
                    Some((code, reason)),
                )
            }
        };
        if !matches!(timeout(SEND_LIMIT, ws.send(message)).await, Ok(Ok(()))) {
            return Delivery::Broken;
        }
        link.record(|c| c.words_sent_final.extend(finals));
        if let Some(close) = close {
            link.record(|c| c.close_sent = Some(close));
            return Delivery::Closed;
        }
    }
    Delivery::Open
}

/// Sends what is due; false when the connection is over (the mock's close went out and the
/// client answered it or did not in time, or the socket broke).
async fn deliver_or_end(ws: &mut WebSocketStream<TcpStream>, link: &mut Link) -> bool {
    match deliver(ws, link).await {
        Delivery::Open => true,
        Delivery::Broken => false,
        Delivery::Closed => {
            // Wait (bounded) for the client's close reply, ignoring anything else.
            let _ = timeout(CLOSE_REPLY_LIMIT, async {
                while let Some(Ok(m)) = ws.next().await {
                    if m.is_close() {
                        break;
                    }
                }
            })
            .await;
            false
        }
    }
}

/// Counts an upgraded connection among the streams a [`Load`] is shared by while it lives.
struct OpenStream(Arc<Shared>);

impl OpenStream {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.open.fetch_add(1, Ordering::Relaxed);
        Self(shared.clone())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one upgraded connection until either side ends it.
async fn run(
    mut ws: WebSocketStream<TcpStream>,
    mut link: Link,
    mut dialect: Box<dyn Dialect>,
    fault: Option<Fault>,
) {
    dialect.open(&mut link);
    let _open = OpenStream::new(&link.shared);
    let mut audio_secs = 0.0;
    let mut fault = fault;
    let far = || Instant::now() + Duration::from_secs(3600);
    loop {
        // Answers due now go out before the next read (a timer would fire only on its next
        // tick, after a fast client's next frames).
        if !deliver_or_end(&mut ws, &mut link).await {
            return;
        }
        let due = link.outbox.front().map(|(at, _)| *at);
        let idle = (!link.stalled && !link.closing)
            .then(|| dialect.idle_deadline(&link))
            .flatten();
        tokio::select! {
            biased;
            _ = sleep_until(due.unwrap_or_else(far)), if due.is_some() => {
                if !deliver_or_end(&mut ws, &mut link).await {
                    return;
                }
            }
            message = ws.next() => {
                let Some(Ok(message)) = message else {
                    return; // the client dropped the connection
                };
                match message {
                    Message::Binary(data) => {
                        link.last_input = Instant::now();
                        if link.closing {
                            continue;
                        }
                        let queued = link.outbox.len();
                        let secs = dialect.audio(&data, &mut link);
                        link.loaded(queued, secs);
                        audio_secs += secs;
                        let wall = link.connected.elapsed().as_secs_f64();
                        if wall >= 1.0 {
                            let ratio = audio_secs / wall;
                            link.record(|c| c.max_rate_ratio = c.max_rate_ratio.max(ratio));
                        }
                        // Sums of frame durations are not exact: 50 × 0.02 may fall short of 1.0.
                        let reached = |t: f64| audio_secs >= t - 1e-9;
                        let fired = || link.record(|c| c.fault_at = Some(std::time::Instant::now()));
                        match fault {
                            Some(Fault::DropAfter(t)) if reached(t) => {
                                fired();
                                return;
                            }
                            Some(Fault::CloseAfter(t, code, reason)) if reached(t) => {
                                fired();
                                fault = None;
                                // Under a load, answers to audio not yet processed go down
                                // with the server: the error goes out at once.
                                if lock(&link.shared.load).is_some() {
                                    link.outbox.clear();
                                }
                                dialect.fail(&mut link, code, reason);
                            }
                            Some(Fault::StallAfter(t)) if reached(t) => {
                                fired();
                                fault = None;
                                link.stall();
                            }
                            Some(Fault::GarbledAfter(t)) if reached(t) => {
                                fired();
                                fault = None;
                                link.garbled = true;
                            }
                            Some(Fault::GarbageAfter(t)) if reached(t) => {
                                fired();
                                fault = None;
                                for junk in [
                                    "\u{0}not json{",
                                    r#"{"type":"Surprise","data":[1,2,3]}"#,
                                    r#"{"type":"Results","channel":{"alternatives":"no"},"is_final":"yes","start":"x"}"#,
                                    r#"{"type":"Turn","transcript":7,"end_of_turn":"maybe","words":{}}"#,
                                ] {
                                    link.queue(Out::Text(junk.into(), Vec::new()));
                                }
                            }
                            Some(Fault::DeafAfter(t)) if reached(t) => {
                                fired();
                                // Nothing is read, so pings go unanswered and the socket's
                                // buffers fill; the test's client side must notice.
                                tokio::time::sleep(STALL_HOLD).await;
                                return;
                            }
                            _ => {}
                        }
                    }
                    Message::Text(text) => {
                        link.last_input = Instant::now();
                        let kind = message_type(&text).unwrap_or_else(|| "<invalid>".into());
                        link.record(|c| c.control.push(kind));
                        if !link.closing && !link.stalled {
                            let queued = link.outbox.len();
                            dialect.text(&text, &mut link);
                            link.loaded(queued, 0.0);
                        }
                    }
                    Message::Close(_) => {
                        if link.stalled {
                            // A hung server does not answer the close: hold the socket unread.
                            mark_closed(&link.shared, link.id);
                            tokio::time::sleep(STALL_HOLD).await;
                        } else {
                            // Sends the close reply tungstenite queued.
                            let _ = timeout(SEND_LIMIT, ws.flush()).await;
                        }
                        return;
                    }
                    _ => {}
                }
            }
            _ = sleep_until(idle.unwrap_or_else(far)), if idle.is_some() => dialect.idle(&mut link),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// A random id shaped like a UUID v4 (Deepgram request ids, AssemblyAI session ids).
fn uuid_like() -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        fastrand::u32(..),
        fastrand::u16(..),
        fastrand::u16(..0x1000),
        0x8000 | fastrand::u16(..0x4000),
        fastrand::u64(..1 << 48)
    )
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The words as a formatting provider writes them: the first capitalized, a full stop after
/// the last.
fn formatted(words: &[Word]) -> Vec<String> {
    let last = words.len().saturating_sub(1);
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let mut text = w.text.to_string();
            if i == 0 {
                text[..1].make_ascii_uppercase();
            }
            if i == last {
                text.push('.');
            }
            text
        })
        .collect()
}

fn plain(words: &[Word]) -> Vec<String> {
    words.iter().map(|w| w.text.to_string()).collect()
}

/// The type of a JSON text message, if it is a JSON object with a string `type`.
fn message_type(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("type")?
        .as_str()
        .map(String::from)
}

fn little_endian(data: &[u8]) -> Vec<i16> {
    data.chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Deepgram

#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Linear16,
    /// μ-law or A-law: 8-bit samples. The word code does not survive them, so the mock times
    /// such audio but hears it as silence.
    Companded,
}

/// The query parameters the mock acts on; the others are only recorded.
struct DeepgramParams {
    encoding: Encoding,
    /// False when the query has no `encoding`: the mock then assumes linear16.
    encoding_given: bool,
    rate: u32,
    channels: usize,
    multichannel: bool,
    interim: bool,
    /// None: `endpointing=false`.
    endpointing_ms: Option<f64>,
    utterance_end_ms: Option<f64>,
    vad_events: bool,
    punctuate: bool,
}

impl DeepgramParams {
    /// The checks Deepgram makes before the upgrade (an error is its 400 `dg-error`).
    fn parse(q: &Query) -> Result<Self, String> {
        let encoding = match q.get("encoding") {
            None | Some("linear16") => Encoding::Linear16,
            Some("mulaw" | "alaw") => Encoding::Companded,
            Some(other) => return Err(format!("Invalid value for `encoding`: {other:?}.")),
        };
        let encoding_given = q.get("encoding").is_some();
        let rate = match q.get("sample_rate") {
            Some(r) => r
                .parse::<u32>()
                .ok()
                .filter(|r| (1000..=192_000).contains(r))
                .ok_or(format!("Invalid value for `sample_rate`: {r:?}."))?,
            None if encoding_given => {
                return Err("`sample_rate` is required when `encoding` is set.".into());
            }
            None => 16_000,
        };
        let channels = match q.get("channels") {
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|c| (1..=16).contains(c))
                .ok_or(format!("Invalid value for `channels`: {c:?}."))?,
            None => 1,
        };
        let ms = |name: &str| q.get(name).and_then(|v| v.parse::<f64>().ok());
        Ok(Self {
            encoding,
            encoding_given,
            rate,
            channels,
            multichannel: q.flag("multichannel"),
            interim: q.flag("interim_results"),
            endpointing_ms: match q.get("endpointing") {
                Some("false") => None,
                _ => Some(ms("endpointing").unwrap_or(DEEPGRAM_DEFAULT_ENDPOINTING_MS)),
            },
            utterance_end_ms: ms("utterance_end_ms"),
            vad_events: q.flag("vad_events"),
            punctuate: q.flag("punctuate") || q.flag("smart_format"),
        })
    }
}

/// One transcribed channel (all channels mixed into one unless `multichannel`).
struct Lane {
    decoder: WordDecoder,
    /// Words heard since the last final.
    pending: Vec<Word>,
    /// Where the last final ended (samples): the next result starts here.
    final_end: u64,
    /// End of the last word not yet followed by an `UtteranceEnd`.
    utterance_open: Option<u64>,
}

struct Deepgram {
    p: DeepgramParams,
    request_id: String,
    lanes: Vec<Lane>,
    got_audio: bool,
    idle: Duration,
    samples: u64,
}

impl Deepgram {
    fn new(hs: &Handshake, idle: Duration) -> Self {
        // The upgrade was accepted, so the parameters parsed.
        let p = DeepgramParams::parse(&hs.query)
            .unwrap_or_else(|_| DeepgramParams::parse(&Query::default()).expect("defaults parse"));
        let lanes = if p.multichannel { p.channels } else { 1 };
        Self {
            lanes: (0..lanes)
                .map(|_| Lane {
                    decoder: WordDecoder::new(p.rate),
                    pending: Vec::new(),
                    final_end: 0,
                    utterance_open: None,
                })
                .collect(),
            p,
            request_id: uuid_like(),
            got_audio: false,
            idle,
            samples: 0,
        }
    }

    /// `[channel, total]`: per channel with `multichannel`, else one mixed channel.
    fn channel_index(&self, lane: usize) -> [usize; 2] {
        if self.p.multichannel {
            [lane, self.p.channels]
        } else {
            [0, 1]
        }
    }

    fn secs(&self, samples: u64) -> f64 {
        samples as f64 / f64::from(self.p.rate)
    }

    /// A `Results` message for `lane` covering samples `start..end` with `words`.
    fn results(&self, lane: usize, span: (u64, u64), words: &[Word], kind: ResultKind) -> Value {
        let texts = if self.p.punctuate {
            formatted(words)
        } else {
            plain(words)
        };
        let word_list: Vec<Value> = words
            .iter()
            .zip(&texts)
            .map(|(w, t)| {
                let mut v = json!({"word": w.text, "start": self.secs(w.start),
                                   "end": self.secs(w.end), "confidence": CONFIDENCE});
                if self.p.punctuate {
                    v["punctuated_word"] = json!(t);
                }
                v
            })
            .collect();
        json!({
            "type": "Results",
            "channel_index": self.channel_index(lane),
            "duration": self.secs(span.1 - span.0),
            "start": self.secs(span.0),
            "is_final": kind != ResultKind::Interim,
            "speech_final": kind == ResultKind::Endpoint,
            "from_finalize": kind == ResultKind::Finalize,
            "channel": {"alternatives": [{
                "transcript": texts.join(" "),
                "confidence": if words.is_empty() { 0.0 } else { CONFIDENCE },
                "words": word_list,
            }]},
            "metadata": {
                "request_id": self.request_id,
                "model_info": {"name": "mock", "version": "0", "arch": "mock"},
            },
        })
    }

    /// Sends the lane's pending words (possibly none) as a final up to the current position.
    fn final_result(&mut self, lane: usize, kind: ResultKind, link: &mut Link) {
        let end = self.lanes[lane].decoder.position();
        let start = self.lanes[lane].final_end;
        let words = std::mem::take(&mut self.lanes[lane].pending);
        let message = self.results(lane, (start, end), &words, kind);
        link.send_final(message, plain(&words));
        self.lanes[lane].final_end = end;
    }

    /// Takes one lane's new samples: interims per word, the endpoint, `UtteranceEnd`, and
    /// empty finals over long silence.
    fn hear(&mut self, lane: usize, samples: &[i16], link: &mut Link) {
        for word in self.lanes[lane].decoder.push(samples) {
            link.heard(&word);
            if self.p.vad_events && self.lanes[lane].pending.is_empty() {
                let (channel, at) = (self.channel_index(lane), self.secs(word.start));
                link.send(json!({"type": "SpeechStarted", "channel": channel, "timestamp": at}));
            }
            let l = &mut self.lanes[lane];
            l.utterance_open = Some(word.end);
            l.pending.push(word);
            if self.p.interim {
                let l = &self.lanes[lane];
                let span = (l.final_end, l.decoder.position());
                let message = self.results(lane, span, &l.pending, ResultKind::Interim);
                link.send(message);
            }
        }
        let l = &self.lanes[lane];
        let silence_ms = l.decoder.trailing_silence_ms();
        if !l.pending.is_empty() && self.p.endpointing_ms.is_some_and(|ms| silence_ms >= ms) {
            self.final_result(lane, ResultKind::Endpoint, link);
        }
        let l = &self.lanes[lane];
        if let (Some(last_end), Some(ms), true) =
            (l.utterance_open, self.p.utterance_end_ms, self.p.interim)
            && silence_ms >= ms
        {
            link.send(
                json!({"type": "UtteranceEnd", "channel": [lane, self.lanes.len()],
                             "last_word_end": self.secs(last_end)}),
            );
            self.lanes[lane].utterance_open = None;
        }
        let l = &self.lanes[lane];
        let uncovered = self.secs(l.decoder.position() - l.final_end);
        if l.pending.is_empty() && !l.decoder.in_word() && uncovered >= DEEPGRAM_EMPTY_FINAL_SECS {
            self.final_result(lane, ResultKind::Silence, link);
        }
    }

    /// Finalize and CloseStream: every lane's pending words (and a word still being spoken)
    /// become a final, or an empty final if there is audio not yet covered by one.
    fn flush(&mut self, kind: ResultKind, link: &mut Link) {
        for lane in 0..self.lanes.len() {
            if let Some(word) = self.lanes[lane].decoder.flush() {
                link.heard(&word);
                self.lanes[lane].pending.push(word);
            }
            let l = &self.lanes[lane];
            if !l.pending.is_empty() || l.decoder.position() > l.final_end {
                self.final_result(lane, kind, link);
            }
        }
    }

    fn close_stream(&mut self, link: &mut Link) {
        self.flush(ResultKind::Flush, link);
        link.send(json!({
            "type": "Metadata",
            "transaction_key": "deprecated",
            "request_id": self.request_id,
            "created": unix_now(),
            "duration": self.secs(self.samples),
            "channels": self.p.channels,
            "model_info": {"name": "mock", "version": "0", "arch": "mock"},
        }));
        link.close(1000, "");
    }

    /// Splits a frame into the lanes' samples: de-interleaved with `multichannel`, otherwise
    /// mixed (summed, so a lone talker's code survives).
    fn planes(&self, data: &[u8], frames: usize) -> Vec<Vec<i16>> {
        let channels = self.p.channels;
        if self.p.encoding == Encoding::Companded {
            return vec![vec![0; frames]; self.lanes.len()];
        }
        let samples = little_endian(data);
        if self.p.multichannel {
            (0..channels)
                .map(|c| samples.iter().skip(c).step_by(channels).copied().collect())
                .collect()
        } else {
            vec![
                samples
                    .chunks_exact(channels)
                    .map(|f| f.iter().fold(0i16, |a, s| a.saturating_add(*s)))
                    .collect(),
            ]
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ResultKind {
    /// `is_final: false`.
    Interim,
    /// The endpoint: `is_final`, `speech_final`.
    Endpoint,
    /// Silence with no words, covered by an empty final.
    Silence,
    /// The answer to `Finalize`: `from_finalize`.
    Finalize,
    /// The last result before `Metadata` (CloseStream).
    Flush,
}

impl Dialect for Deepgram {
    fn open(&mut self, link: &mut Link) {
        if !self.p.encoding_given {
            link.violation(
                "no `encoding` in the query: real Deepgram then expects containerized audio \
                 (the mock assumed linear16)",
            );
        }
    }

    fn audio(&mut self, data: &[u8], link: &mut Link) -> f64 {
        self.got_audio = true;
        if data.is_empty() {
            link.record(|c| c.zero_length_frames += 1);
            link.violation("zero-length binary frame (it ends a Deepgram stream)");
            self.close_stream(link);
            return 0.0;
        }
        let width = if self.p.encoding == Encoding::Linear16 {
            2
        } else {
            1
        };
        let frame = width * self.p.channels;
        if !data.len().is_multiple_of(frame) {
            link.violation(format!(
                "binary frame of {} bytes is not a whole number of {frame}-byte sample frames",
                data.len()
            ));
            link.close(1008, "DATA-0000");
            return 0.0;
        }
        let frames = data.len() / frame;
        let ms = frames as f64 * 1000.0 / f64::from(self.p.rate);
        link.record(|c| {
            c.audio_frames += 1;
            c.audio_samples += frames as u64;
            c.frame_ms.push(ms);
        });
        self.samples += frames as u64;
        for (lane, samples) in self.planes(data, frames).iter().enumerate() {
            self.hear(lane, samples, link);
        }
        ms / 1000.0
    }

    fn text(&mut self, text: &str, link: &mut Link) {
        match message_type(text).as_deref() {
            Some("KeepAlive") => {}
            Some("Finalize") => self.flush(ResultKind::Finalize, link),
            Some("CloseStream") => self.close_stream(link),
            Some(other) => link.violation(format!("unknown control message type {other:?}")),
            None => link.violation(format!("text message without a JSON \"type\": {text:.80}")),
        }
    }

    fn idle_deadline(&self, link: &Link) -> Option<Instant> {
        let quiet = link.last_input + self.idle;
        Some(if self.got_audio {
            quiet
        } else {
            quiet.min(link.connected + self.idle)
        })
    }

    fn idle(&mut self, link: &mut Link) {
        link.violation(if self.got_audio {
            format!("no message from the client for {:?}", self.idle)
        } else {
            format!("no audio in the first {:?}", self.idle)
        });
        link.close(1011, "NET-0001");
    }

    fn fail(&mut self, link: &mut Link, code: u16, reason: &str) {
        link.close(code, reason);
    }
}

// ---------------------------------------------------------------------------------------------
// AssemblyAI

/// The query parameters the mock acts on; the others are only recorded.
struct AssemblyAiParams {
    rate: u32,
    mulaw: bool,
    format_turns: bool,
    min_turn_silence_ms: f64,
    inactivity: Option<Duration>,
}

impl AssemblyAiParams {
    fn defaults() -> Self {
        Self {
            rate: 16_000,
            mulaw: false,
            format_turns: false,
            min_turn_silence_ms: AAI_DEFAULT_MIN_TURN_SILENCE_MS,
            inactivity: None,
        }
    }

    /// An error is a close 3006 (with an `Error` frame) right after the upgrade.
    fn parse(q: &Query) -> Result<Self, String> {
        let number = |name: &str| -> Result<Option<f64>, String> {
            q.get(name)
                .map(|v| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|n| n.is_finite() && *n >= 0.0)
                        .ok_or(format!("Invalid {name}: {v:?}"))
                })
                .transpose()
        };
        let rate = match number("sample_rate")? {
            None => 16_000,
            Some(r) if (1000.0..=192_000.0).contains(&r) && r.fract() == 0.0 => r as u32,
            Some(r) => return Err(format!("Invalid sample_rate: {r}")),
        };
        let mulaw = match q.get("encoding") {
            None | Some("pcm_s16le") => false,
            Some("pcm_mulaw") => true,
            Some(other) => return Err(format!("Invalid encoding: {other:?}")),
        };
        let format_turns = match q.get("format_turns") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => return Err(format!("Invalid format_turns: {other:?}")),
        };
        number("end_of_turn_confidence_threshold")?;
        number("max_turn_silence")?;
        let min_turn_silence_ms = match number("min_turn_silence")? {
            Some(ms) => ms,
            None => number("min_end_of_turn_silence_when_confident")?
                .unwrap_or(AAI_DEFAULT_MIN_TURN_SILENCE_MS),
        };
        if let Some(raw) = q.get("keyterms_prompt") {
            let terms: Vec<String> = serde_json::from_str(raw)
                .map_err(|_| "Invalid keyterms_prompt: not a JSON array of strings".to_string())?;
            if terms.len() > 100 {
                return Err(format!(
                    "Invalid keyterms_prompt: {} terms (max 100)",
                    terms.len()
                ));
            }
            if let Some(t) = terms.iter().find(|t| t.chars().count() > 50) {
                return Err(format!(
                    "Invalid keyterms_prompt: term longer than 50: {t:.60}"
                ));
            }
        }
        let inactivity = match number("inactivity_timeout")? {
            Some(t) if !(5.0..=3600.0).contains(&t) => {
                return Err(format!("Invalid inactivity_timeout: {t} (5-3600 s)"));
            }
            t => t.map(Duration::from_secs_f64),
        };
        Ok(Self {
            rate,
            mulaw,
            format_turns,
            min_turn_silence_ms,
            inactivity,
        })
    }
}

struct AssemblyAi {
    authorized: bool,
    speech_model_given: bool,
    two_message_formatting: bool,
    /// Why the query is invalid, if it is (the session then closes 3006 after the upgrade).
    invalid: Option<String>,
    /// The parameters (the defaults if the query was invalid).
    p: AssemblyAiParams,
    decoder: WordDecoder,
    turn: Vec<Word>,
    turn_order: u64,
    begin: Instant,
    audio_secs: f64,
}

impl AssemblyAi {
    fn new(hs: &Handshake, options: &MockOptions) -> Self {
        let key = options.api_key.as_str();
        let authorized =
            hs.header("authorization") == Some(key) || hs.query.get("token") == Some(key);
        let (p, invalid) = match AssemblyAiParams::parse(&hs.query) {
            Ok(p) => (p, None),
            Err(why) => (AssemblyAiParams::defaults(), Some(why)),
        };
        Self {
            authorized,
            speech_model_given: hs.query.get("speech_model").is_some(),
            two_message_formatting: options.two_message_formatting,
            invalid,
            decoder: WordDecoder::new(p.rate),
            p,
            turn: Vec::new(),
            turn_order: 0,
            begin: Instant::now(),
            audio_secs: 0.0,
        }
    }

    fn turn_message(&self, end_of_turn: bool, formatted_text: bool) -> Value {
        let texts = if formatted_text {
            formatted(&self.turn)
        } else {
            plain(&self.turn)
        };
        let transcript = texts.join(" ");
        let ms = |samples: u64| samples * 1000 / u64::from(self.p.rate);
        let words: Vec<Value> = self
            .turn
            .iter()
            .zip(&texts)
            .map(|(w, t)| {
                json!({"start": ms(w.start), "end": ms(w.end), "text": t,
                       "confidence": CONFIDENCE, "word_is_final": true})
            })
            .collect();
        json!({
            "type": "Turn",
            "turn_order": self.turn_order,
            "turn_is_formatted": formatted_text,
            "end_of_turn": end_of_turn,
            "transcript": transcript,
            "end_of_turn_confidence": if end_of_turn { 0.9 } else { 0.1 },
            "utterance": if end_of_turn { transcript.as_str() } else { "" },
            "words": words,
        })
    }

    /// Ends the turn in progress, if it has words, with the Turn(s) this server version sends.
    fn end_turn(&mut self, link: &mut Link) {
        if self.turn.is_empty() {
            return;
        }
        let finals = plain(&self.turn);
        if !self.p.format_turns {
            link.send_final(self.turn_message(true, false), finals);
        } else {
            if self.two_message_formatting {
                link.send(self.turn_message(true, false));
            }
            link.send_final(self.turn_message(true, true), finals);
        }
        self.turn.clear();
        self.turn_order += 1;
    }

    /// A word still being spoken ends now (ForceEndpoint, Terminate).
    fn cut(&mut self, link: &mut Link) {
        if let Some(word) = self.decoder.flush() {
            link.heard(&word);
            self.turn.push(word);
        }
    }

    fn terminate(&mut self, link: &mut Link) {
        self.cut(link);
        self.end_turn(link);
        link.send(json!({
            "type": "Termination",
            "audio_duration_seconds": self.audio_secs.round() as u64,
            "session_duration_seconds": self.begin.elapsed().as_secs_f64().round() as u64,
        }));
        link.close(1000, "");
    }
}

impl Dialect for AssemblyAi {
    fn open(&mut self, link: &mut Link) {
        if !self.authorized {
            link.violation("no valid key (`Authorization: <key>` or `?token=`)");
            self.fail(link, 1008, "Unauthorized");
            return;
        }
        if let Some(why) = self.invalid.clone() {
            link.violation(why.clone());
            self.fail(link, 3006, &why);
            return;
        }
        if !self.speech_model_given {
            link.violation("no `speech_model` in the query (newer docs say it is required)");
        }
        self.begin = Instant::now();
        link.send(json!({"type": "Begin", "id": uuid_like(),
                         "expires_at": unix_now() + AAI_SESSION_SECS}));
    }

    fn audio(&mut self, data: &[u8], link: &mut Link) -> f64 {
        let samples = if self.p.mulaw {
            data.len()
        } else {
            if !data.len().is_multiple_of(2) {
                link.violation(format!(
                    "binary frame of {} bytes: odd for s16le",
                    data.len()
                ));
            }
            data.len() / 2
        };
        let secs = samples as f64 / f64::from(self.p.rate);
        let ms = samples as f64 * 1000.0 / f64::from(self.p.rate);
        link.record(|c| {
            c.audio_frames += 1;
            c.audio_samples += samples as u64;
            c.frame_ms.push(ms);
            if data.is_empty() {
                c.zero_length_frames += 1;
            }
        });
        if !AAI_FRAME_MS.contains(&ms) {
            link.violation(format!(
                "binary frame of {ms:.1} ms (AssemblyAI takes 50–1000 ms)"
            ));
            let reason =
                format!("Input duration violation: {ms:.0} ms. Expected between 50 and 1000 ms");
            self.fail(link, 3007, &reason);
            return secs;
        }
        self.audio_secs += secs;
        let wall = self.begin.elapsed().as_secs_f64();
        if self.audio_secs > wall + AAI_AHEAD_TOLERANCE_SECS {
            link.violation(format!(
                "audio faster than real time: {:.2} s of audio {wall:.2} s after Begin",
                self.audio_secs
            ));
            self.fail(
                link,
                3007,
                "Input duration violation: audio sent faster than real time",
            );
            return secs;
        }
        let pcm = if self.p.mulaw {
            vec![0; samples]
        } else {
            little_endian(data)
        };
        for word in self.decoder.push(&pcm) {
            link.heard(&word);
            if self.turn.is_empty() {
                // A message type clients must ignore (AssemblyAI's docs): proves they do.
                let ms = word.start * 1000 / u64::from(self.p.rate);
                link.send(json!({"type": "SpeechStarted", "timestamp": ms}));
            }
            self.turn.push(word);
            link.send(self.turn_message(false, false));
        }
        if !self.turn.is_empty() && self.decoder.trailing_silence_ms() >= self.p.min_turn_silence_ms
        {
            self.end_turn(link);
        }
        secs
    }

    fn text(&mut self, text: &str, link: &mut Link) {
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            link.violation(format!("text message is not JSON: {text:.80}"));
            return self.fail(link, 3006, "Invalid message: not JSON");
        };
        match message.get("type").and_then(Value::as_str) {
            Some("KeepAlive") => {}
            Some("ForceEndpoint") => {
                self.cut(link);
                self.end_turn(link);
            }
            Some("Terminate") => self.terminate(link),
            Some("UpdateConfiguration") => {
                let ms = message
                    .get("min_turn_silence")
                    .or_else(|| message.get("min_end_of_turn_silence_when_confident"))
                    .and_then(Value::as_f64);
                if let Some(ms) = ms {
                    self.p.min_turn_silence_ms = ms;
                }
            }
            other => {
                let other = other.unwrap_or("<none>");
                link.violation(format!("unknown message type {other:?}"));
                self.fail(link, 3006, &format!("Invalid message type: {other}"));
            }
        }
    }

    fn idle_deadline(&self, link: &Link) -> Option<Instant> {
        self.p.inactivity.map(|t| link.last_input + t)
    }

    /// `inactivity_timeout` passed without a message: the session ends normally
    /// (Termination, close 1000). The mock's reading of AssemblyAI's docs.
    fn idle(&mut self, link: &mut Link) {
        self.terminate(link);
    }

    fn fail(&mut self, link: &mut Link, code: u16, reason: &str) {
        link.send(json!({"type": "Error", "error_code": code, "error": reason}));
        link.close(code, reason);
    }
}
