//! Hostile clients: slow-loris headers, silent and idle connections, a flood of upgrades
//! that never send the start frame, and too many connections. Each is cut off in bounded
//! time while a real call on the same server goes on and ends normally.

use std::net::SocketAddr;
use std::time::Duration;

use hark::config::Config;
use hark_bench::protocol::{ServerMessage, TranscriptType};
use hark_testkit::{Call, TestServer, backends};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Far longer than any bound the server is configured with here: the machine is noisy.
const GENEROUS: Duration = Duration::from_secs(30);

fn recorder_config() -> Config {
    hark_testkit::config_with_default_backend("recorder")
}

/// A real call that has started and been answered once.
async fn live_call(server: &TestServer) -> Call {
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber"), 16_000, 2)
        .await
        .expect("call opens");
    assert!(call.silence(2, 16_000, 0.2).await);
    assert!(
        call.wait_for(GENEROUS, |m| matches!(
            m,
            ServerMessage::TranscriberResponse {
                transcript_type: TranscriptType::Final,
                ..
            }
        ))
        .await,
        "the real call is transcribed"
    );
    call
}

/// Streams more audio on a live call, then hangs up: every frame is still transcribed and
/// the call ends normally.
async fn still_served(mut call: Call) {
    let before = call.poll().finals("customer").len();
    assert!(call.silence(2, 16_000, 0.5).await, "the server takes audio");
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "no error: {:?}", got.error());
    let finals = got.finals("customer");
    assert!(finals.len() > before, "new finals came: {finals:?}");
    // The recorder's last final counts every sample sent: 0.7 s at 16 kHz.
    let last = finals.last().cloned().unwrap_or_default();
    assert!(last.starts_with("n=11200 "), "all audio arrived: {last}");
}

/// Reads until the server closes (EOF or reset); false if it is still open at `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> (bool, Vec<u8>) {
    let mut got = Vec::new();
    let closed = tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .is_ok();
    (closed, got)
}

#[tokio::test]
async fn slow_loris_headers_are_cut_at_the_header_timeout() {
    let mut config = recorder_config();
    config.header_timeout_ms = 1_000;
    let server = TestServer::start(config, backends::registry()).await;
    let call = live_call(&server).await;

    let mut loris = TcpStream::connect(server.addr).await.expect("connect");
    let request = format!(
        "GET /api/custom-transcriber HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Padding: {}\r\n",
        server.addr,
        "a".repeat(400)
    );
    // A byte every 100 ms: the headers would take about a minute, and never end.
    let mut cut_off = false;
    for byte in request.bytes() {
        if loris.write_all(&[byte]).await.is_err() {
            cut_off = true;
            break;
        }
        let mut buf = [0u8; 512];
        match tokio::time::timeout(Duration::from_millis(100), loris.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                cut_off = true;
                break;
            }
            // A 408 response, then the close.
            Ok(Ok(_)) | Err(_) => {}
        }
    }
    assert!(
        cut_off,
        "the server waited for the whole trickled request line and headers"
    );
    still_served(call).await;
}

#[tokio::test]
async fn silent_and_idle_connections_are_closed() {
    let mut config = recorder_config();
    config.header_timeout_ms = 1_000;
    let server = TestServer::start(config, backends::registry()).await;
    let call = live_call(&server).await;

    // Connect and send nothing.
    let mut silent = Vec::new();
    for _ in 0..50 {
        silent.push(TcpStream::connect(server.addr).await.expect("connect"));
    }
    // One request, then an idle keep-alive connection.
    let mut idle = TcpStream::connect(server.addr).await.expect("connect");
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).as_bytes())
        .await
        .expect("write");
    let mut buf = [0u8; 1024];
    let n = idle.read(&mut buf).await.expect("response");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // Half a request line.
    let mut partial = TcpStream::connect(server.addr).await.expect("connect");
    partial.write_all(b"GET /hea").await.expect("write");

    for (i, s) in silent.iter_mut().enumerate() {
        let (closed, _) = closed_within(s, GENEROUS).await;
        assert!(closed, "silent connection {i} is still open");
    }
    assert!(
        closed_within(&mut partial, GENEROUS).await.0,
        "partial request still open"
    );
    assert!(
        closed_within(&mut idle, GENEROUS).await.0,
        "idle keep-alive still open"
    );
    still_served(call).await;
}

/// Upgrades by hand (a few hundred tungstenite clients would weigh more than the server
/// side being measured) and returns the socket after the 101.
async fn raw_upgrade(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /api/custom-transcriber HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut byte).await.expect("read");
        assert!(n == 1, "closed during the handshake: {head:?}");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "not upgraded: {head}");
    s
}

/// `GET /healthz` that takes a refused connection for an answer, not a panic.
async fn health_ok(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return false;
    };
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got).await;
    got.starts_with(b"HTTP/1.1 200")
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_flood_without_start_frames_is_bounded_while_a_call_carries_on() {
    const FLOOD: usize = 300;
    let mut config = recorder_config();
    config.max_sessions = FLOOD + 10;
    config.max_pending_starts = FLOOD + 10;
    config.start_timeout_ms = 5_000;
    let server = TestServer::start(config, backends::registry()).await;
    let running = live_call(&server).await;

    let before = rss_kib();
    let mut flood = Vec::with_capacity(FLOOD);
    for _ in 0..FLOOD {
        flood.push(raw_upgrade(server.addr).await);
    }
    let during = rss_kib();
    println!(
        "RSS: {before} KiB before, {during} KiB with {FLOOD} calls awaiting their start frame: {:.1} KiB each",
        during.saturating_sub(before) as f64 / FLOOD as f64
    );

    // The call that was running before the flood carries on through it.
    still_served(running).await;

    for (i, s) in flood.iter_mut().enumerate() {
        let (closed, got) = closed_within(s, GENEROUS).await;
        assert!(closed, "flood connection {i} is still open");
        assert!(
            String::from_utf8_lossy(&got).contains("start-timeout"),
            "flood connection {i} was not told why"
        );
    }
    // Every slot came back.
    let call = live_call(&server).await;
    still_served(call).await;
}

#[tokio::test]
async fn waiting_calls_past_max_pending_starts_get_503() {
    let mut config = recorder_config();
    config.max_pending_starts = 3;
    let server = TestServer::start(config, backends::registry()).await;
    let mut waiting = Vec::new();
    for _ in 0..3 {
        waiting.push(raw_upgrade(server.addr).await);
    }
    let refused = Call::connect(&server.ws_url("/api/custom-transcriber"), &[]).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 503)
        }
        other => panic!("expected 503, got {:?}", other.map(|_| "an open call")),
    }
    // A waiting call that sends its start frame leaves the pending pool.
    drop(waiting);
    let call = tokio::time::timeout(GENEROUS, async {
        loop {
            if let Ok(mut call) =
                Call::connect(&server.ws_url("/api/custom-transcriber"), &[]).await
            {
                call.text(&hark_testkit::start_frame(16_000, 2)).await;
                return call;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("pending slots come back when their connections go");
    still_served_from_start(call).await;
}

async fn still_served_from_start(mut call: Call) {
    assert!(call.silence(2, 16_000, 0.5).await);
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "no error: {:?}", got.error());
    let last = got.finals("customer").last().cloned().unwrap_or_default();
    assert!(last.starts_with("n=8000 "), "all audio arrived: {last}");
}

/// Connections that are not calls hold at most `max_connections` slots; when all are held,
/// the oldest gives way to the newcomer, and calls never count (they are bounded by
/// `max_sessions`).
#[tokio::test]
async fn past_max_connections_the_oldest_connection_gives_way() {
    let mut config = recorder_config();
    config.max_connections = 3;
    config.header_timeout_ms = 60_000;
    let server = TestServer::start(config, backends::registry()).await;
    let call = live_call(&server).await; // a call: no connection slot

    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(server.addr).await.expect("connect"));
        // Accepted in this order, so the first is the oldest.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(health_ok(server.addr).await, "a newcomer is served");
    let (closed, _) = closed_within(&mut held[0], GENEROUS).await;
    assert!(closed, "the oldest connection gave way");
    still_served(call).await;
}

/// Request heads are buffered up to 16 KiB, not hyper's ~400 KB: headers that never end
/// are answered (431) and closed as soon as they pass the cap, long before the header
/// timeout. (What 200 unfinished heads cost the release binary's RSS is measured in
/// BENCHMARKS.md, "Hostile clients".)
#[tokio::test]
async fn endless_headers_are_cut_at_the_buffer_cap() {
    let mut config = recorder_config();
    config.header_timeout_ms = 120_000;
    let server = TestServer::start(config, backends::registry()).await;
    let call = live_call(&server).await;
    let mut open = Vec::new();
    for _ in 0..200 {
        let mut s = TcpStream::connect(server.addr).await.expect("connect");
        let head = format!(
            "GET /api/custom-transcriber HTTP/1.1\r\nHost: {}\r\nX-Padding: ",
            server.addr
        );
        s.write_all(head.as_bytes()).await.expect("write");
        // 12 KiB: under the cap, so these stay open, held until the header timeout.
        s.write_all(&[b'a'; 12 * 1024]).await.expect("write");
        open.push(s);
    }
    // Under the cap and within the header timeout, they wait.
    for s in open.iter_mut().take(3) {
        let (closed, _) = closed_within(s, Duration::from_millis(300)).await;
        assert!(!closed, "a request head under the cap was cut");
    }
    // Past the cap: answered and closed at once.
    let mut over = TcpStream::connect(server.addr).await.expect("connect");
    over.write_all(b"GET /healthz HTTP/1.1\r\nX-Padding: ")
        .await
        .expect("write");
    let _ = over.write_all(&[b'a'; 64 * 1024]).await;
    let (closed, got) = closed_within(&mut over, GENEROUS).await;
    assert!(closed, "a request head past the cap stayed open");
    let answer = String::from_utf8_lossy(&got);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    drop(open);
    still_served(call).await;
}

/// Keep-alive probes that hold every connection slot (each request starts the header
/// timeout anew) do not keep a call out: the oldest gives way to the upgrade.
#[tokio::test]
async fn keep_alive_probes_holding_every_slot_do_not_keep_a_call_out() {
    let mut config = recorder_config();
    config.max_connections = 8;
    config.header_timeout_ms = 60_000;
    let server = TestServer::start(config, backends::registry()).await;
    let mut probes = Vec::new();
    for _ in 0..8 {
        let mut s = TcpStream::connect(server.addr).await.expect("connect");
        s.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).as_bytes())
            .await
            .expect("write");
        let mut buf = [0u8; 512];
        let n = s.read(&mut buf).await.expect("response");
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        probes.push(s);
    }
    // Every slot is held by an idle keep-alive connection; a call still gets in.
    let call = live_call(&server).await;
    still_served(call).await;
}

#[tokio::test]
async fn an_upgrade_past_max_sessions_gets_503_before_any_start_frame() {
    let mut config = recorder_config();
    config.max_sessions = 1;
    let server = TestServer::start(config, backends::registry()).await;
    let url = server.ws_url("/api/custom-transcriber");
    // The first call holds the only slot from its upgrade on, start frame or not, so the
    // second is refused before it opens (the platform retries a 503; it would take a call
    // closed after it opened for a failed transcriber).
    let mut first = Call::connect(&url, &[]).await.expect("first upgrades");
    match Call::connect(&url, &[]).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 503)
        }
        other => panic!("expected 503, got {:?}", other.map(|_| "an open call")),
    }
    first.text(&hark_testkit::start_frame(16_000, 2)).await;
    assert!(first.silence(2, 16_000, 0.1).await);
    assert!(
        first
            .wait_for(GENEROUS, |m| matches!(
                m,
                ServerMessage::TranscriberResponse { .. }
            ))
            .await
    );
    still_served_from_start_after(first, 1_600).await;
}

/// Streams 0.5 s more on a call that has had `sent` samples per channel, hangs up, and
/// checks every sample arrived.
async fn still_served_from_start_after(mut call: Call, sent: usize) {
    assert!(call.silence(2, 16_000, 0.5).await);
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "no error: {:?}", got.error());
    let last = got.finals("customer").last().cloned().unwrap_or_default();
    let want = format!("n={} ", sent + 8_000);
    assert!(last.starts_with(&want), "all audio arrived: {last}");
}
