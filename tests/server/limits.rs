//! Per-call limits: a call that sends nothing, lasts too long, floods messages or makes the
//! server hold too much for it is ended alone, with an error message and a close code and
//! reason; a call that drops its connection mid-frame frees its slot at once. Calls beside
//! them carry on.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use hark::config::Config;
use hark::protocol::CLOSE_POLICY;
use hark_bench::protocol::ServerMessage;
use hark_testkit::raw::{BINARY, FIN, PING, RawWs, TEXT, frame};
use hark_testkit::{Call, Received, TestServer, backends, config_with_default_backend, http_get};

const PATH: &str = "/api/custom-transcriber";
const WAIT: Duration = Duration::from_secs(30);

fn config() -> Config {
    config_with_default_backend("recorder")
}

fn is_transcript(m: &ServerMessage) -> bool {
    matches!(m, ServerMessage::TranscriberResponse { .. })
}

/// 20 ms of 16 kHz stereo silence.
fn frame_20ms() -> Vec<u8> {
    vec![0; 1280]
}

/// A normal call beside the offending one: streams paced audio for `secs`, gets
/// transcripts and hangs up without any error.
async fn normal_call(server: &TestServer, secs: f64) -> Received {
    let mut call = Call::open(&server.ws_url(PATH), 16000, 2)
        .await
        .expect("call opens");
    assert!(call.silence(2, 16000, secs).await, "normal call was cut");
    assert!(
        call.wait_for(WAIT, is_transcript).await,
        "normal call got no transcript"
    );
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "normal call got {:?}", got.error());
    got
}

fn assert_ended(got: &Received, code: &str) {
    assert_eq!(
        got.error().map(|e| e.0).as_deref(),
        Some(code),
        "{:?}",
        got.messages
    );
    assert_eq!(got.close, Some((CLOSE_POLICY, code.to_string())));
}

async fn client_errors(server: &TestServer, code: &str) -> f64 {
    let (status, text) = http_get(server.addr, "/metrics", &[]).await;
    assert_eq!(status, 200, "{text}");
    // Summed over the other labels (profile, backend).
    let label = format!("code=\"{code}\"");
    text.lines()
        .filter(|l| l.starts_with("hark_client_errors_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_sends_nothing_is_ended_and_pings_keep_it_alive() {
    let mut config = config();
    config.idle_timeout_ms = 1_000;
    let server = TestServer::start(config, backends::registry()).await;

    // A peer that is gone: it sends nothing more and answers no ping.
    let silent = async {
        let mut ws = RawWs::connect(server.addr, PATH).await;
        ws.send(TEXT, hark_testkit::start_frame(16000, 2).as_bytes())
            .await;
        ws.send(BINARY, &frame_20ms()).await;
        ws.read_until_close(WAIT).await
    };
    // A client that only stops sending: its websocket answers the server's pings by
    // itself, which keeps the call open (the platform is never asked for more than audio).
    let quiet = async {
        let mut call = Call::open(&server.ws_url(PATH), 16000, 2)
            .await
            .expect("call opens");
        call.bytes(frame_20ms()).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        call.bytes(frame_20ms()).await;
        call.hang_up().await
    };
    // Pings alone, every 100 ms for 3 s (three idle limits), keep a call open: a ping
    // sent after them is still answered.
    let pinging = async {
        let mut ws = RawWs::connect(server.addr, PATH).await;
        ws.send(TEXT, hark_testkit::start_frame(16000, 2).as_bytes())
            .await;
        for _ in 0..30 {
            ws.send(PING, b"alive").await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ws.send(PING, b"still").await;
        assert!(
            ws.pong_within(b"still", WAIT).await,
            "a pinging call stays open"
        );
        ws.read_until_close(WAIT).await
    };
    let (silent, quiet, pinged, _) =
        tokio::join!(silent, quiet, pinging, normal_call(&server, 2.5));
    assert_eq!(silent.close, Some((CLOSE_POLICY, "idle-timeout".into())));
    assert_eq!(silent.error_code().as_deref(), Some("idle-timeout"));
    assert!(quiet.error().is_none(), "{:?}", quiet.error());
    assert!(
        matches!(quiet.close, None | Some((1000, _))),
        "{:?}",
        quiet.close
    );
    assert_eq!(pinged.close, Some((CLOSE_POLICY, "idle-timeout".into())));
    assert_eq!(pinged.error_code().as_deref(), Some("idle-timeout"));
    assert!(client_errors(&server, "idle-timeout").await >= 2.0);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_longest_duration_gets_its_finals_and_is_ended() {
    let mut config = config();
    config.max_call_secs = 1;
    let server = TestServer::start(config, backends::registry()).await;
    let mut call = Call::open(&server.ws_url(PATH), 16000, 2)
        .await
        .expect("call opens");
    // Streams up to 20 s; the server ends it after 1.
    call.silence(2, 16000, 20.0).await;
    let got = call.finish(WAIT).await;
    assert_ended(&got, "call-too-long");
    assert!(
        !got.finals("customer").is_empty(),
        "the backend's finals go out before the close"
    );
    assert!(client_errors(&server, "call-too-long").await >= 1.0);
    // A new call is served as before (and ends by its own hang-up within the limit).
    let mut call = Call::open(&server.ws_url(PATH), 16000, 2)
        .await
        .expect("call opens");
    call.bytes(frame_20ms()).await;
    assert!(call.wait_for(WAIT, is_transcript).await);
    assert!(call.hang_up().await.error().is_none());
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_messages_is_ended_and_a_bunch_after_a_stall_is_not() {
    let mut config = config();
    config.max_messages_per_sec = 50;
    config.message_burst = 100;
    let server = TestServer::start(config, backends::registry()).await;
    let flood = async {
        let mut ws = RawWs::connect(server.addr, PATH).await;
        ws.send(TEXT, hark_testkit::start_frame(16000, 2).as_bytes())
            .await;
        let tiny = frame(FIN | BINARY, &[0; 4], true);
        ws.send_raw(&tiny.repeat(2_000)).await;
        ws.read_until_close(WAIT).await
    };
    // A call at the platform's pace (50 frames a second) that stalls for 1.6 s and then
    // delivers the 80 frames held back at once, as TCP does, and goes on.
    let stalled = async {
        let mut call = Call::open(&server.ws_url(PATH), 16000, 2)
            .await
            .expect("call opens");
        assert!(call.silence(2, 16000, 1.0).await);
        tokio::time::sleep(Duration::from_millis(1600)).await;
        for _ in 0..80 {
            call.bytes(frame_20ms()).await;
        }
        assert!(call.silence(2, 16000, 1.0).await);
        assert!(call.wait_for(WAIT, is_transcript).await);
        call.hang_up().await
    };
    let (flooded, stalled) = tokio::join!(flood, stalled);
    assert_eq!(flooded.close, Some((CLOSE_POLICY, "rate-limited".into())));
    assert_eq!(flooded.error_code().as_deref(), Some("rate-limited"));
    assert!(stalled.error().is_none(), "{:?}", stalled.error());
    assert!(client_errors(&server, "rate-limited").await >= 1.0);
    server.shutdown().await.unwrap();
}

/// A client that stops reading makes its transcripts pile up on the server; past the
/// call's memory budget the call ends, its queued transcripts are dropped, and once it
/// has not taken even the close in time its connection is dropped. The client here keeps
/// sending (one stereo sample a frame, each bringing the recorder's partial and final on
/// both channels back) until the server is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_is_ended_at_the_memory_budget() {
    let mut config = config();
    config.max_call_memory_bytes = 64 * 1024;
    config.max_messages_per_sec = 1_000_000;
    config.message_burst = 1_000_000;
    let server = TestServer::start(config, backends::registry()).await;
    let hog = async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket.connect(server.addr).await.unwrap();
        let mut ws = RawWs::upgrade(stream, server.addr, PATH).await.unwrap();
        ws.send(TEXT, hark_testkit::start_frame(16000, 2).as_bytes())
            .await;
        let tiny = frame(FIN | BINARY, &[0; 4], true).repeat(10);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while tokio::time::Instant::now() < deadline {
            if ws.stream.write_all(&tiny).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        false
    };
    let (dropped, _) = tokio::join!(hog, normal_call(&server, 2.0));
    assert!(
        dropped,
        "the server never ended the call that does not read"
    );
    assert!(client_errors(&server, "memory-limit").await >= 1.0);
    server.shutdown().await.unwrap();
}

/// Audio held for a replay (kept when a fallback could take over) counts too: a backend
/// that settles nothing makes it grow until the budget ends the call with its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_held_past_the_memory_budget_ends_the_call() {
    let mut config = config();
    config.max_call_memory_bytes = 64 * 1024;
    config.profiles.insert(
        "replaying".into(),
        hark::config::Profile {
            backend: "recorder".into(),
            fallback: vec!["fail-start".into()],
            ..hark::config::Profile::default()
        },
    );
    let server = TestServer::start(config, backends::registry()).await;
    let replaying = async {
        let mut call = Call::open(
            &server.ws_url("/api/custom-transcriber/replaying"),
            48000,
            2,
        )
        .await
        .expect("call opens");
        // 48 kHz stereo: 192 kB of replay a second; the budget ends the call within 1 s.
        call.silence(2, 48000, 10.0).await;
        call.finish(WAIT).await
    };
    let (got, _) = tokio::join!(replaying, normal_call(&server, 2.0));
    assert_ended(&got, "memory-limit");
    server.shutdown().await.unwrap();
}

/// Connects once a slot is free; panics if none frees within `WAIT`.
async fn admitted(server: &TestServer) -> Call {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Ok(call) = Call::connect(&server.ws_url(PATH), &[]).await {
            return call;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no slot was freed for a new call"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_frame_frees_its_slot_and_the_other_call_goes_on() {
    let mut config = config();
    config.max_sessions = 2;
    let server = TestServer::start(config, backends::registry()).await;
    let mut steady = Call::open(&server.ws_url(PATH), 16000, 2)
        .await
        .expect("call opens");
    steady.bytes(frame_20ms()).await;
    assert!(steady.wait_for(WAIT, is_transcript).await);

    for reset in [false, true] {
        // The call before has hung up; its slot frees as its session ends.
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut ws = loop {
            match RawWs::try_connect(server.addr, PATH).await {
                Ok(ws) => break ws,
                Err(status) => assert!(
                    tokio::time::Instant::now() < deadline,
                    "no slot for the raw call: {status}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        ws.send(TEXT, hark_testkit::start_frame(16000, 2).as_bytes())
            .await;
        ws.send(BINARY, &frame_20ms()).await;
        // The header of a 1280-byte frame, its mask and 100 bytes of it; then gone.
        let half = frame(FIN | BINARY, &frame_20ms(), true);
        ws.send_raw(&half[..4 + 4 + 100]).await;
        if reset {
            ws.stream.set_zero_linger().unwrap();
        }
        drop(ws);

        let mut next = admitted(&server).await;
        next.text(&hark_testkit::start_frame(16000, 2)).await;
        next.bytes(frame_20ms()).await;
        assert!(next.wait_for(WAIT, is_transcript).await);
        assert!(next.hang_up().await.error().is_none());
    }

    // The steady call is still served: its second frame is transcribed (the recorder
    // reports the samples it has had, 320 a channel a frame).
    steady.bytes(frame_20ms()).await;
    let second = |m: &ServerMessage| {
        matches!(m, ServerMessage::TranscriberResponse { transcription, .. }
            if transcription.starts_with("n=640 "))
    };
    assert!(steady.wait_for(WAIT, second).await, "{:?}", steady.got);
    let got = steady.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    server.shutdown().await.unwrap();
}

/// One frame within `max_frame_bytes` but longer in time than a channel's ring (8 kHz
/// stereo: 262,144 bytes are 8.2 s) is the client's error, answered with 1009; it raises
/// no lag failure (the operator's alert) and the call beside it goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_too_long_in_time_is_the_clients_error_not_lag() {
    let mut config = config();
    config.profiles.insert(
        "frames".into(),
        hark::config::Profile {
            backend: "recorder".into(),
            ..hark::config::Profile::default()
        },
    );
    let server = TestServer::start(config, backends::registry()).await;
    let before = client_errors(&server, "frame-too-long").await;
    let offender = async {
        let mut call = Call::open(&server.ws_url("/api/custom-transcriber/frames"), 8000, 2)
            .await
            .expect("call opens");
        call.bytes(vec![0; 262_144]).await;
        call.finish(WAIT).await
    };
    let (got, _) = tokio::join!(offender, normal_call(&server, 2.0));
    assert_eq!(
        got.error().map(|e| e.0).as_deref(),
        Some("frame-too-long"),
        "{:?}",
        got.messages
    );
    assert_eq!(
        got.close,
        Some((hark::protocol::CLOSE_TOO_BIG, "frame-too-long".to_string()))
    );
    assert!(client_errors(&server, "frame-too-long").await >= before + 1.0);
    let (_, text) = http_get(server.addr, "/metrics", &[]).await;
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("hark_session_failures_total{")
                && l.contains("profile=\"frames\"")),
        "no session failure is counted:\n{text}"
    );
    server.shutdown().await.unwrap();
}
