//! The real `hark serve`'s log, where clients without credentials and providers try to
//! write into it: what they send is bounded and escaped, and a provider's API key never
//! appears, whatever `HARK_LOG` asks for.

use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hark_testkit::Call;
use hark_testkit::provider_mock::{MockOptions, MockProvider, Provider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SECRET: &str = "log-test-secret-0123456789";
const DG_KEY: &str = "dg-key-that-must-never-be-logged-51c3";

/// `hark serve` on a free loopback port, its stderr in a file.
struct Served {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(config: &str, env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port");
        let config_path = dir.path().join("hark.toml");
        std::fs::write(&config_path, config).expect("config");
        let log = dir.path().join("stderr.log");
        let child = Command::new(env!("CARGO_BIN_EXE_hark"))
            .arg("serve")
            .arg("--config")
            .arg(&config_path)
            .arg("--listen")
            .arg(addr.to_string())
            .env_clear()
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(File::create(&log).expect("log file"))
            .spawn()
            .expect("hark serve starts");
        Self {
            child,
            addr,
            log,
            _dir: dir,
        }
    }

    /// Waits until `/healthz` answers (the engine may still be loading).
    async fn healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if hark_testkit::http_get_opt(self.addr, "/healthz").await == Some(200) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("hark serve did not answer /healthz: {}", self.log_text());
    }

    /// The log so far, after stopping the server so everything is written.
    fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log_text()
    }

    fn log_text(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default()).into_owned()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Deepgram mock, and a config whose profile `dg` relays the customer's channel to it with
/// the key in `HARK_TEST_DG_KEY`.
async fn relaying() -> (MockProvider, String) {
    let mock = MockProvider::start(MockOptions {
        provider: Provider::Deepgram,
        api_key: DG_KEY.into(),
        two_message_formatting: false,
    })
    .await;
    let config = format!(
        "[backends.dg]\ntype = \"deepgram\"\nurl = \"{}\"\napi_key_env = \"HARK_TEST_DG_KEY\"\n[profiles.dg]\nbackend = \"dg\"\nchannels = [\"customer\"]\n",
        mock.url()
    );
    (mock, config)
}

/// One websocket upgrade without credentials; returns the status line's code.
async fn refused_upgrade(addr: SocketAddr, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("write");
    let mut head = [0u8; 12];
    let _ = s.read_exact(&mut head).await;
    String::from_utf8_lossy(&head[9..12]).parse().unwrap_or(0)
}

/// 2,001 refused upgrades with 2 KB paths, one of them with `%0A` and a line that reads like
/// a genuine log entry: the log grows by a few lines, none of them forged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_upgrades_neither_flood_nor_forge_the_log() {
    let mut served = Served::start("", &[("HARK_SECRET", SECRET)]);
    served.healthy().await;
    let before = served.log_text().len();
    let forged = "/api/custom-transcriber/x%0A2026-11-24T00:00:00.000000Z%20%20INFO%20session%7Bprofile%3Dadmin%7D%3A%20call%20started";
    assert_eq!(refused_upgrade(served.addr, forged).await, 401);
    let long = format!("/api/custom-transcriber/{}", "p".repeat(2_000));
    for _ in 0..2_000 {
        assert_eq!(refused_upgrade(served.addr, &long).await, 401);
    }
    let log = served.stop();
    let grown = log.len() - before;
    // Before: 2,001 lines of ~2 KB each (114 MB for the review's longer paths).
    assert!(grown < 16 * 1024, "the log grew by {grown} bytes:\n{log}");
    assert!(
        !log.lines().any(|l| l.starts_with("2026-11-24T00:00:00")),
        "a forged line:\n{log}"
    );
    assert!(log.contains("upgrade refused"), "{log}");
}

/// A client's mistakes at the upgrade are the platform's config, so whoever runs hark sees
/// them: a 404 for a profile that is not there names the profiles there are, and each
/// refusal (404, 400, 401) is a line of the log, whose profile is the name as sent, once
/// quoted in the JSON log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_upgrades_are_logged_with_the_profile_as_sent() {
    let (_mock, config) = relaying().await;
    let mut served = Served::start(
        &config,
        &[("HARK_TEST_DG_KEY", DG_KEY), ("HARK_LOG_FORMAT", "json")],
    );
    served.healthy().await;
    let (status, answer) =
        hark_testkit::refused_upgrade(served.addr, "/api/custom-transcriber/dgg").await;
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer.contains("no profile named \"dgg\"; the profiles here: default, dg"),
        "{answer}"
    );
    let (status, answer) = hark_testkit::refused_upgrade(
        served.addr,
        "/api/custom-transcriber/dg?endpointing_ms=soon",
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let log = served.stop();
    let refusals: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| {
            v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("upgrade refused"))
        })
        .collect();
    assert_eq!(refusals.len(), 2, "{log}");
    assert_eq!(refusals[0]["profile"], "dgg", "{log}");
    assert_eq!(refusals[0]["status"], 404, "{log}");
    assert_eq!(refusals[1]["profile"], "dg", "{log}");
    assert_eq!(refusals[1]["reason"], "bad-query", "{log}");
    assert!(
        refusals[1]["message"]
            .as_str()
            .is_some_and(|m| m.contains("endpointing_ms")),
        "{log}"
    );
}

/// `HARK_LOG=trace` (and asking for tungstenite by name): the provider handshake's request,
/// with its `Authorization: Token …`, is never written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_providers_key_never_reaches_the_log_at_trace_level() {
    let (mock, config) = relaying().await;
    for filter in [
        "trace",
        "tungstenite=trace,tokio_tungstenite=trace,hark=trace",
    ] {
        let mut served = Served::start(
            &config,
            &[("HARK_LOG", filter), ("HARK_TEST_DG_KEY", DG_KEY)],
        );
        served.healthy().await;
        let url = format!("ws://{}/api/custom-transcriber/dg", served.addr);
        let mut call = Call::open(&url, 16_000, 1).await.expect("call opens");
        call.silence(1, 16_000, 1.0).await;
        let got = call.finish(Duration::from_secs(10)).await;
        assert!(got.error().is_none(), "{:?}", got.error());
        let log = served.stop();
        assert!(
            mock.connections().iter().any(|c| c
                .headers
                .iter()
                .any(|(k, v)| k == "authorization" && v.contains(DG_KEY))),
            "the key was sent to the provider"
        );
        assert!(log.contains("TRACE"), "{filter}: trace lines are written");
        assert!(!log.contains(DG_KEY), "{filter}: the key is in the log");
    }
}

/// The start-up log says where calls go (the URL to give the platform, each profile's),
/// how they authenticate (never the secret), each profile's backend chain, and the admin
/// address as an address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_up_log_names_the_call_urls_auth_and_profiles() {
    let config = "admin_listen = \"127.0.0.1:0\"\n\
        [backends.dg]\ntype = \"deepgram\"\nurl = \"ws://127.0.0.1:9/v1/listen\"\napi_key_env = \"HARK_TEST_DG_KEY\"\n\
        [profiles.sales]\nbackend = \"dg\"\nfallback = [\"moonshine\"]\nchannels = [\"customer\"]\n";
    let mut served = Served::start(
        config,
        &[("HARK_SECRET", SECRET), ("HARK_TEST_DG_KEY", DG_KEY)],
    );
    served.healthy().await;
    let log = served.stop();
    let base = format!("ws://{}/api/custom-transcriber", served.addr);
    let line = |needle: &str| {
        log.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle}:\n{log}"))
            .to_string()
    };
    let listening = line("hark listening");
    assert!(listening.contains(&format!("url={base} ")), "{listening}");
    assert!(listening.contains("auth=secret"), "{listening}");
    let sales = line(&format!("url={base}/sales "));
    assert!(
        sales.contains("profile=\"sales\"") || sales.contains("profile=sales"),
        "{sales}"
    );
    assert!(sales.contains("backends=dg -> moonshine"), "{sales}");
    assert!(sales.contains("channels=customer"), "{sales}");
    let default = line(&format!("url={base} backends="));
    assert!(default.contains("backends=whisper"), "{default}");
    let admin = line("metrics and probes listening");
    assert!(admin.contains("addr=127.0.0.1:"), "{admin}");
    assert!(!admin.contains("Some("), "{admin}");
    assert!(!log.contains(SECRET) && !log.contains(DG_KEY), "{log}");
}

/// A `HARK_LOG` that does not parse is said at start-up (logging goes on at info), not
/// silently replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hark_log_that_does_not_parse_is_said_at_start_up() {
    let mut served = Served::start("", &[("HARK_LOG", "hark=loud")]);
    served.healthy().await;
    let log = served.stop();
    let warned = log
        .lines()
        .find(|l| l.contains("HARK_LOG does not parse"))
        .unwrap_or_else(|| panic!("no warning of the bad HARK_LOG:\n{log}"));
    assert!(
        warned.contains("WARN") && warned.contains("hark=loud"),
        "{warned}"
    );
    assert!(
        log.contains("hark listening"),
        "info lines still logged:\n{log}"
    );
}

/// The first SIGINT drains live calls (up to `drain_timeout`); a second one stops hark at
/// once, and says so, rather than being ignored until the drain ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_stop_signal_during_the_drain_stops_at_once() {
    let (_mock, config) = relaying().await;
    let mut served = Served::start(&config, &[("HARK_TEST_DG_KEY", DG_KEY)]);
    served.healthy().await;
    let url = format!("ws://{}/api/custom-transcriber/dg", served.addr);
    let mut call = Call::open(&url, 16_000, 1).await.expect("call opens");
    call.silence(1, 16_000, 0.5).await;
    let pid = served.child.id() as libc::pid_t;
    let interrupt = || {
        // SAFETY: a plain kill(2) on our own child, not waited for yet (its pid not reused).
        unsafe { libc::kill(pid, libc::SIGINT) }
    };
    let wait_for = |needle: &'static str, served: &Served| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !served.log_text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no {needle:?}:\n{}",
                served.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    assert_eq!(interrupt(), 0);
    wait_for("draining", &served);
    assert!(
        served.child.try_wait().expect("try_wait").is_none(),
        "the first signal drains: the call is still live"
    );
    assert_eq!(interrupt(), 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = served.child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running 10 s after the second signal:\n{}",
            served.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!status.success(), "{status:?}");
    assert!(
        served.log_text().contains("a second stop signal"),
        "{}",
        served.log_text()
    );
    drop(call);
}

/// A call's last log line says what it was: how long, how much audio, how many finals and
/// partials went out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_last_line_gives_its_figures() {
    let (_mock, config) = relaying().await;
    let mut served = Served::start(&config, &[("HARK_TEST_DG_KEY", DG_KEY)]);
    served.healthy().await;
    let url = format!("ws://{}/api/custom-transcriber/dg", served.addr);
    let mut call = Call::open(&url, 16_000, 1).await.expect("call opens");
    call.silence(1, 16_000, 1.5).await;
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    assert_eq!(got.close.as_ref().map(|c| c.0), Some(1000), "{got:?}");
    let log = served.stop();
    let line = log
        .lines()
        .find(|l| l.contains("call ended by client"))
        .unwrap_or_else(|| panic!("no end line:\n{log}"));
    for field in ["duration_s=", "audio_s=1.5 ", "finals=", "partials="] {
        assert!(line.contains(field), "{field} in {line}");
    }
}
