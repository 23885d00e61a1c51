//! Scale-out on loopback: two `hark serve` processes (the embedded recognizer) behind a real
//! nginx started by the test, calls from the platform's side through nginx. One instance
//! gets SIGTERM while it carries a call: that call finishes with its finals (drain), new
//! calls go to the other instance, no call fails, and the drained instance stops answering
//! ready.
//!
//! nginx open source has no active health checks: it learns passively, from the draining
//! instance's 503 (`proxy_next_upstream error timeout http_503`). In Kubernetes the
//! readiness probe removes the pod from the endpoints instead.
//!
//! Needs nginx (`apt-get install nginx-light`; .ci/run installs it).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hark_bench::wer;
use hark_testkit::{Call, Clip, Received, clips, resample};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep, timeout};

const HARK: &str = env!("CARGO_BIN_EXE_hark");
const RATE: u32 = 16_000;
const PATH: &str = "/api/custom-transcriber";
/// Long enough for a call's finals even when other builds take the cores (the recognizer
/// runs at idle priority): the test is about routing and draining, not latency.
const MAX_LAG_MS: &str = "60000";
const DRAIN_MS: &str = "240000";
/// The bound on a call's finals after its speech; the drain outlasts it.
const FINALS_WAIT: Duration = Duration::from_secs(150);

/// A child process killed (SIGTERM, then SIGKILL) if the test ends before it stops.
struct Proc {
    name: &'static str,
    child: Child,
}

impl Proc {
    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    fn terminate(&self) {
        // SAFETY: a plain kill(2) on our own child.
        let rc = unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        assert_eq!(rc, 0, "SIGTERM to {}", self.name);
    }

    /// Waits (bounded) for the process to exit; true if it exited with success.
    async fn exited_ok(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("child status") {
                return status.success();
            }
            assert!(
                Instant::now() < deadline,
                "{} still running after {limit:?}",
                self.name
            );
            sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        // SAFETY: as in `terminate`.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        for _ in 0..50 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound, then released for a child to take).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
}

fn start_hark(name: &'static str, addr: SocketAddr) -> Proc {
    let child = Command::new(HARK)
        .args(["serve", "--listen", &addr.to_string()])
        .args(["--max-lag-ms", MAX_LAG_MS, "--drain-timeout-ms", DRAIN_MS])
        .env_remove("HARK_CONFIG")
        .env_remove("HARK_LISTEN")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start hark serve");
    Proc { name, child }
}

fn nginx_binary() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("nginx is not installed: the README's test command, scripts/test, installs it (Debian: apt-get install nginx-light)")
}

/// nginx in the foreground, one process, everything it writes in `dir`.
fn start_nginx(dir: &Path, listen: SocketAddr, upstreams: [SocketAddr; 2]) -> Proc {
    let d = dir.display();
    let conf = format!(
        r#"daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      close;
    }}
    upstream hark {{
        server {a};
        server {b};
    }}
    server {{
        listen {listen};
        location / {{
            proxy_pass http://hark;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_read_timeout 43200s;
            proxy_send_timeout 43200s;
            proxy_buffering off;
            # A draining or full instance answers 503: try the other one.
            proxy_next_upstream error timeout http_503;
            proxy_next_upstream_tries 2;
        }}
    }}
}}
"#,
        a = upstreams[0],
        b = upstreams[1],
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).expect("write nginx.conf");
    let child = Command::new(nginx_binary())
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&path)
        .arg("-e")
        .arg(dir.join("error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start nginx");
    Proc {
        name: "nginx",
        child,
    }
}

/// A plain HTTP GET: (status, body), or None when nothing answers.
async fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf).to_string();
        let status = text.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, text))
    };
    timeout(Duration::from_secs(10), exchange)
        .await
        .ok()
        .flatten()
}

async fn wait_status(addr: SocketAddr, path: &str, want: u16, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        if get(addr, path).await.map(|(s, _)| s) == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{addr}{path} not {want} within {limit:?}"
        );
        sleep(Duration::from_millis(200)).await;
    }
}

/// The sum of a metric's samples (whatever its labels) on one instance.
async fn metric(addr: SocketAddr, name: &str) -> f64 {
    let (status, body) = get(addr, "/metrics").await.expect("metrics answer");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Opens a call as the platform does: a 503 (every instance draining or without headroom
/// for one more call) is retried after its Retry-After. An instance carrying two calls may
/// rightly refuse a third on a machine other tests keep busy (its admission prices a wave
/// of their first finals); what this test asks is that the call is served, by the
/// instance that is not draining.
async fn open(url: &str) -> Call {
    const TRIES: usize = 30;
    for _ in 1..TRIES {
        match Call::open(url, RATE, 2).await {
            Ok(call) => return call,
            Err(e) if e.contains("503") => {
                eprintln!("call refused, retrying after Retry-After: {e}");
                sleep(Duration::from_secs(2)).await;
            }
            Err(e) => panic!("call opens: {e}"),
        }
    }
    Call::open(url, RATE, 2).await.expect("call opens")
}

/// One call from the platform's side: the clip on the customer channel (assistant silent),
/// then silence, as the platform streams it, until the final of the clip's last words has
/// come (or no final for 10 s, or `FINALS_WAIT` passed); then a hang-up.
async fn call(url: String, clip: &Clip) -> Received {
    let mut call = open(&url).await;
    let samples = resample(&clip.samples, clip.rate, RATE);
    let silence = vec![0i16; samples.len()];
    assert!(
        call.play(&[&samples, &silence], RATE, 20, true).await,
        "{}: audio refused mid-call",
        clip.name
    );
    let reference = wer::normalize(&clip.reference);
    let tail = &reference[reference.len().saturating_sub(2)..];
    let deadline = Instant::now() + FINALS_WAIT;
    let mut finals = 0;
    let mut last_final = Instant::now();
    while Instant::now() < deadline && call.poll().error().is_none() {
        let got = call.poll().finals("customer");
        if got.len() != finals {
            finals = got.len();
            last_final = Instant::now();
        }
        if wer::normalize(&got.join(" ")).ends_with(tail)
            || (finals > 0 && last_final.elapsed() > Duration::from_secs(10))
        {
            break;
        }
        if !call.silence(2, RATE, 0.5).await {
            break;
        }
    }
    // A pause before hanging up, as a caller makes.
    call.silence(2, RATE, 1.0).await;
    call.hang_up().await
}

/// No error, no error close, and finals close to the clip's words.
fn check_served(clip: &Clip, got: &Received) {
    assert!(got.error().is_none(), "{}: {:?}", clip.name, got.error());
    if let Some((code, reason)) = &got.close {
        assert!(
            *code == 1000 || *code == 1005,
            "{}: closed with {code} {reason}",
            clip.name
        );
    }
    let finals = got.finals("customer").join(" ");
    let error_rate = wer::wer([(clip.reference.as_str(), finals.as_str())]);
    eprintln!("{}: WER {:.1} %: {finals}", clip.name, error_rate * 100.0);
    assert!(
        error_rate <= 0.4,
        "{}: finals {finals:?} for {:?}",
        clip.name,
        clip.reference
    );
}

fn clip(all: &[Clip], name: &str) -> Clip {
    let c = all
        .iter()
        .find(|c| c.name.contains(name))
        .unwrap_or_else(|| panic!("dev clip {name}"));
    Clip {
        name: c.name.clone(),
        rate: c.rate,
        samples: c.samples.clone(),
        reference: c.reference.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_one_instance_while_nginx_sends_new_calls_to_the_other() {
    let all = clips();
    // Long clips for the calls live across the SIGTERM, shorter ones after it.
    let live = [clip(&all, "jfk"), clip(&all, "beckett")];
    let later = [clip(&all, "0890"), clip(&all, "0870")];

    let addrs = [free_port(), free_port()];
    let mut instances = [
        start_hark("hark A", addrs[0]),
        start_hark("hark B", addrs[1]),
    ];
    for addr in addrs {
        // Generous: each instance loads the engine while other tests may use every core.
        wait_status(addr, "/readyz", 200, Duration::from_secs(300)).await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let front = free_port();
    let mut nginx = start_nginx(dir.path(), front, addrs);
    wait_status(front, "/healthz", 200, Duration::from_secs(30)).await;
    let url = format!("ws://{front}{PATH}");

    // Two calls; round robin puts one on each instance.
    let mut tasks = Vec::new();
    for clip in live {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let got = call(url, &clip).await;
            (clip, got)
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = metric(addrs[0], hark::metrics::SESSIONS_ACTIVE).await;
        let b = metric(addrs[1], hark::metrics::SESSIONS_ACTIVE).await;
        if a == 1.0 && b == 1.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "live calls per instance: A {a}, B {b}; nginx should spread two calls over two"
        );
        sleep(Duration::from_millis(100)).await;
    }
    let (victim, other) = (0, 1);
    let other_total = metric(addrs[other], hark::metrics::SESSIONS_TOTAL).await;

    // SIGTERM in the middle of the victim's call (its clip is 10 s of speech or more).
    sleep(Duration::from_secs(3)).await;
    instances[victim].terminate();

    // Its readiness turns false (503) while it drains; it is still alive (a liveness probe
    // must not kill it mid-drain).
    let deadline = Instant::now() + Duration::from_secs(30);
    let readiness = loop {
        match get(addrs[victim], "/readyz").await {
            Some((200, _)) => {
                assert!(Instant::now() < deadline, "still ready 30 s after SIGTERM");
                sleep(Duration::from_millis(50)).await;
            }
            other => break other.map(|(s, _)| s),
        }
    };
    assert_eq!(
        readiness,
        Some(503),
        "a draining instance answers not ready"
    );
    assert_eq!(
        get(addrs[victim], "/healthz").await.map(|(s, _)| s),
        Some(200),
        "a draining instance is still alive"
    );

    // New calls, while the victim still drains its call, all go to the other instance.
    let mut later_tasks = Vec::new();
    for clip in later {
        let url = url.clone();
        later_tasks.push(tokio::spawn(async move {
            let got = call(url, &clip).await;
            (clip, got)
        }));
        // One after the other, so that round robin offers the victim one of them.
        sleep(Duration::from_millis(500)).await;
    }
    assert!(
        matches!(instances[victim].child.try_wait(), Ok(None)),
        "the victim drains its live call rather than exit"
    );

    for task in tasks.into_iter().chain(later_tasks) {
        let (clip, got) = task.await.expect("call task");
        check_served(&clip, &got);
    }
    let taken = metric(addrs[other], hark::metrics::SESSIONS_TOTAL).await - other_total;
    assert_eq!(
        taken, 2.0,
        "the calls after the SIGTERM all went to the other instance"
    );
    assert_eq!(
        get(addrs[other], "/readyz").await.map(|(s, _)| s),
        Some(200),
        "the other instance is still ready"
    );

    // Its call over, the drained instance stops by itself, cleanly.
    assert!(
        instances[victim].exited_ok(Duration::from_secs(60)).await,
        "the drained instance exits with success"
    );
    // nginx saw no failed upstream exchange that reached a client: every call was served.
    nginx.terminate();
    nginx.exited_ok(Duration::from_secs(30)).await;
    let log = std::fs::read_to_string(dir.path().join("access.log")).unwrap_or_default();
    let upgrades: Vec<&str> = log.lines().filter(|l| l.contains(PATH)).collect();
    let opened = upgrades.iter().filter(|l| l.contains("\" 101 ")).count();
    assert_eq!(opened, 4, "four calls through nginx:\n{log}");
    assert!(
        upgrades
            .iter()
            .all(|l| l.contains("\" 101 ") || l.contains("\" 503 ")),
        "every upgrade answered 101, or 503 and retried:\n{log}"
    );
}
