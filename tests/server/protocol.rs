//! The wire contract through a real server and a real websocket client.

use std::time::Duration;

use hark::config::Profile;
use hark::protocol::{CLOSE_POLICY, CLOSE_TOO_BIG, CLOSE_UNSUPPORTED};
use hark_bench::protocol::{Channel, ServerMessage, TranscriptType};
use hark_testkit::backends::{self, FNV_OFFSET, fnv1a};
use hark_testkit::{Call, TestServer, test_config};

/// A server whose default profile records exactly what reaches the recognizer.
async fn recorder_server() -> TestServer {
    TestServer::start(
        hark_testkit::config_with_default_backend("recorder"),
        backends::registry(),
    )
    .await
}

fn expect_final(count: usize, hash: u64) -> impl Fn(&ServerMessage) -> bool {
    let want = format!("n={count} h={hash:016x}");
    move |m| matches!(m, ServerMessage::TranscriberResponse { transcription, .. } if *transcription == want)
}

#[tokio::test]
async fn odd_length_frames_lose_and_misalign_nothing() {
    let server = recorder_server().await;
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber"), 16000, 2)
        .await
        .expect("call opens");
    // 1000 stereo samples: left counts up, right counts down.
    let left: Vec<i16> = (0..1000).collect();
    let right: Vec<i16> = (0..1000).map(|i| -i - 1).collect();
    let bytes: Vec<u8> = left
        .iter()
        .zip(&right)
        .flat_map(|(l, r)| [l.to_le_bytes(), r.to_le_bytes()])
        .flatten()
        .collect();
    // Frames of 1, 3, 5, 7 … bytes: every boundary falls inside a sample or between channels.
    let mut rest = bytes.as_slice();
    let mut size = 1;
    while !rest.is_empty() {
        let n = size.min(rest.len());
        call.bytes(rest[..n].to_vec()).await;
        rest = &rest[n..];
        size += 2;
    }
    let hash = |s: &[i16]| s.iter().fold(FNV_OFFSET, |h, &x| fnv1a(h, x));
    assert!(
        call.wait_for(Duration::from_secs(5), expect_final(1000, hash(&left)))
            .await,
        "customer channel got exactly its samples: {:?}",
        call.poll().finals("customer").last()
    );
    assert!(
        call.wait_for(Duration::from_secs(5), expect_final(1000, hash(&right)))
            .await,
        "assistant channel got exactly its samples: {:?}",
        call.poll().finals("assistant").last()
    );
    let got = call.hang_up().await;
    assert!(got.error().is_none());
    server.shutdown().await.unwrap();
}

/// FNV-1a of samples in order, as the recorder computes it.
fn hash(samples: &[i16]) -> u64 {
    samples.iter().fold(FNV_OFFSET, |h, &x| fnv1a(h, x))
}

/// Matches the recorder's final for exactly `samples` on `channel`.
fn final_on(channel: &'static str, samples: &[i16]) -> impl Fn(&ServerMessage) -> bool {
    let want = format!("n={} h={:016x}", samples.len(), hash(samples));
    move |m| {
        matches!(m, ServerMessage::TranscriberResponse { transcription, channel: c, transcript_type: TranscriptType::Final }
            if c.as_str() == channel && *transcription == want)
    }
}

/// Interleaves per-channel samples into s16le bytes (`L R L R …`).
fn interleave(planes: &[&[i16]]) -> Vec<u8> {
    let len = planes.iter().map(|p| p.len()).max().unwrap_or(0);
    hark_bench::protocol::interleave(planes, 0, len)
}

/// A deterministic, channel-specific test signal.
fn signal(len: usize, seed: i32) -> Vec<i16> {
    (0..len as i32)
        .map(|i| {
            (i.wrapping_mul(7919)
                .wrapping_add(seed.wrapping_mul(104_729))
                % 30_000) as i16
        })
        .collect()
}

#[tokio::test]
async fn mono_call_feeds_the_customer_channel_only() {
    let server = recorder_server().await;
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber"), 16000, 1)
        .await
        .expect("call opens");
    let samples = signal(3200, 1);
    let bytes = interleave(&[&samples]);
    // Odd-sized frames: in mono a sample is 2 bytes, so every other boundary splits one.
    for chunk in bytes.chunks(321) {
        call.bytes(chunk.to_vec()).await;
    }
    assert!(
        call.wait_for(Duration::from_secs(10), final_on("customer", &samples))
            .await,
        "customer channel got exactly the mono samples: {:?}",
        call.poll().finals("customer").last()
    );
    // Give a stray assistant transcript time to show up before hanging up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    let assistant: Vec<_> = got
        .messages
        .iter()
        .filter(|(_, m)| {
            matches!(m, ServerMessage::TranscriberResponse { channel, .. } if *channel == Channel::Assistant)
        })
        .collect();
    assert!(
        assistant.is_empty(),
        "nothing on the assistant channel of a mono call: {assistant:?}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_supported_sample_rate_is_taken_as_sent() {
    let server = recorder_server().await;
    for rate in [8000u32, 16000, 24000, 48000] {
        let mut call = Call::open(&server.ws_url("/api/custom-transcriber"), rate, 2)
            .await
            .expect("call opens");
        // Half a second per channel, sent as 20 ms frames.
        let n = rate as usize / 2;
        let left = signal(n, rate as i32);
        let right = signal(n, -(rate as i32));
        let bytes = interleave(&[&left, &right]);
        let frame = rate as usize / 50 * 4;
        for chunk in bytes.chunks(frame) {
            call.bytes(chunk.to_vec()).await;
        }
        assert!(
            call.wait_for(Duration::from_secs(10), final_on("customer", &left))
                .await,
            "{rate} Hz: customer channel got exactly its samples: {:?}",
            call.poll().finals("customer").last()
        );
        assert!(
            call.wait_for(Duration::from_secs(10), final_on("assistant", &right))
                .await,
            "{rate} Hz: assistant channel got exactly its samples: {:?}",
            call.poll().finals("assistant").last()
        );
        let got = call.hang_up().await;
        assert!(got.error().is_none(), "{rate} Hz: {:?}", got.error());
        assert_ne!(
            got.close.as_ref().map(|c| c.0),
            Some(CLOSE_POLICY),
            "{rate} Hz: {:?}",
            got.close
        );
    }
    server.shutdown().await.unwrap();
}

/// What a client sends in one bad session.
enum Send {
    Text(String),
    Binary(Vec<u8>),
    Nothing,
}

/// Opens a session, sends `frames`, and checks the documented answer: one error message
/// with `code`, then a close with `close_code` and the code as reason.
async fn expect_rejected(
    server: &TestServer,
    name: &str,
    frames: Vec<Send>,
    code: &str,
    close_code: u16,
) {
    let mut call = Call::connect(&server.ws_url("/api/custom-transcriber"), &[])
        .await
        .unwrap_or_else(|e| panic!("{name}: websocket opens: {e}"));
    for frame in frames {
        match frame {
            Send::Text(t) => call.text(&t).await,
            Send::Binary(b) => call.bytes(b).await,
            Send::Nothing => {}
        }
    }
    let got = call.finish(Duration::from_secs(15)).await;
    let errors: Vec<_> = got
        .messages
        .iter()
        .filter_map(|(_, m)| match m {
            ServerMessage::Error { error, message } => Some((error.clone(), message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "{name}: exactly one error message: {:?}",
        got.messages
    );
    let (error, message) = &errors[0];
    assert_eq!(error, code, "{name}: error code (message {message:?})");
    assert!(
        !message.trim().is_empty(),
        "{name}: error message says what went wrong"
    );
    // Whatever the client sent, what comes back about it is short and one line.
    assert!(
        message.len() < 400 && !message.contains('\n'),
        "{name}: error message of {} bytes: {:.200}",
        message.len(),
        message
    );
    assert_eq!(
        got.close,
        Some((close_code, code.to_string())),
        "{name}: close code and reason"
    );
}

fn start_json(fields: &str) -> Send {
    Send::Text(format!(r#"{{"type":"start",{fields}}}"#))
}

#[tokio::test]
async fn bad_input_is_answered_and_closed_then_the_server_still_serves() {
    let mut config = test_config();
    config.profiles.insert(
        "default".into(),
        Profile {
            backend: "recorder".into(),
            ..Profile::default()
        },
    );
    // Short enough to test, long enough that a good client always makes it.
    config.start_timeout_ms = 1000;
    config.max_frame_bytes = 4096;
    let server = TestServer::start(config, backends::registry()).await;
    let good_start = || Send::Text(hark_testkit::start_frame(16000, 2));

    let cases: Vec<(&str, Vec<Send>, &str, u16)> = vec![
        ("bad JSON", vec![Send::Text("{not json".into())], "invalid-start-frame", CLOSE_POLICY),
        (
            "wrong type",
            vec![Send::Text(
                r#"{"type":"begin","encoding":"linear16","container":"raw","sampleRate":16000,"channels":2}"#.into(),
            )],
            "invalid-start-frame",
            CLOSE_POLICY,
        ),
        (
            "mulaw",
            vec![start_json(r#""encoding":"mulaw","container":"raw","sampleRate":8000,"channels":1"#)],
            "unsupported-encoding",
            CLOSE_UNSUPPORTED,
        ),
        (
            "a 3 KB encoding",
            vec![start_json(&format!(
                r#""encoding":"{}\n2026-11-24 INFO call started profile=admin","container":"raw","sampleRate":8000,"channels":1"#,
                "x".repeat(3_000)
            ))],
            "unsupported-encoding",
            CLOSE_UNSUPPORTED,
        ),
        (
            "a 3 KB type",
            vec![Send::Text(format!(r#"{{"type":"{}"}}"#, "t".repeat(3_000)))],
            "invalid-start-frame",
            CLOSE_POLICY,
        ),
        (
            "a 3 KB sample rate",
            vec![start_json(&format!(
                r#""encoding":"linear16","container":"raw","sampleRate":"{}","channels":1"#,
                "9".repeat(3_000)
            ))],
            "invalid-start-frame",
            CLOSE_POLICY,
        ),
        (
            "a 3 KB container",
            vec![start_json(&format!(
                r#""encoding":"linear16","container":"{}","sampleRate":8000,"channels":1"#,
                "c".repeat(3_000)
            ))],
            "unsupported-container",
            CLOSE_UNSUPPORTED,
        ),
        (
            "wav container",
            vec![start_json(r#""encoding":"linear16","container":"wav","sampleRate":16000,"channels":2"#)],
            "unsupported-container",
            CLOSE_UNSUPPORTED,
        ),
        (
            "3 channels",
            vec![start_json(r#""encoding":"linear16","container":"raw","sampleRate":16000,"channels":3"#)],
            "unsupported-channels",
            CLOSE_UNSUPPORTED,
        ),
        (
            "0 channels",
            vec![start_json(r#""encoding":"linear16","container":"raw","sampleRate":16000,"channels":0"#)],
            "unsupported-channels",
            CLOSE_UNSUPPORTED,
        ),
        (
            "96 kHz",
            vec![start_json(r#""encoding":"linear16","container":"raw","sampleRate":96000,"channels":2"#)],
            "unsupported-sample-rate",
            CLOSE_UNSUPPORTED,
        ),
        (
            "4 kHz",
            vec![start_json(r#""encoding":"linear16","container":"raw","sampleRate":4000,"channels":2"#)],
            "unsupported-sample-rate",
            CLOSE_UNSUPPORTED,
        ),
        (
            "missing sampleRate",
            vec![start_json(r#""encoding":"linear16","container":"raw","channels":2"#)],
            "invalid-start-frame",
            CLOSE_POLICY,
        ),
        (
            "audio before start",
            vec![Send::Binary(vec![0; 1280]), good_start()],
            "audio-before-start",
            CLOSE_POLICY,
        ),
        (
            "frame one byte over the limit",
            vec![good_start(), Send::Binary(vec![0; 4096]), Send::Binary(vec![0; 4097])],
            "frame-too-large",
            CLOSE_TOO_BIG,
        ),
        ("no start frame", vec![Send::Nothing], "start-timeout", CLOSE_POLICY),
    ];
    for (name, frames, code, close_code) in cases {
        expect_rejected(&server, name, frames, code, close_code).await;
    }

    // The server is unharmed: a good call after all of that works.
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber"), 16000, 2)
        .await
        .expect("call opens");
    let left = signal(1600, 3);
    let right = signal(1600, 4);
    // Exactly max_frame_bytes is still allowed.
    for chunk in interleave(&[&left, &right]).chunks(4096) {
        call.bytes(chunk.to_vec()).await;
    }
    assert!(
        call.wait_for(Duration::from_secs(10), final_on("customer", &left))
            .await,
        "good call after bad ones: {:?}",
        call.poll().messages
    );
    assert!(
        call.wait_for(Duration::from_secs(10), final_on("assistant", &right))
            .await,
        "good call after bad ones: {:?}",
        call.poll().messages
    );
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn pings_are_answered_and_stray_text_is_ignored() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let server = recorder_server().await;
    let (mut ws, _) = tokio_tungstenite::connect_async(server.ws_url("/api/custom-transcriber"))
        .await
        .expect("websocket opens");

    /// Reads until `want` matches a message, failing on a close or a timeout.
    async fn read_until(ws: &mut hark_testkit::Ws, what: &str, want: impl Fn(&Message) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let msg = tokio::time::timeout_at(deadline, ws.next())
                .await
                .unwrap_or_else(|_| panic!("no {what} within 10 s"));
            match msg {
                Some(Ok(m)) if want(&m) => return,
                Some(Ok(Message::Close(f))) => panic!("closed while waiting for {what}: {f:?}"),
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("read failed while waiting for {what}: {e}"),
                None => panic!("stream ended while waiting for {what}"),
            }
        }
    }

    // A ping before the start frame is answered and does not count as the start.
    ws.send(Message::Ping(b"before".to_vec().into()))
        .await
        .unwrap();
    read_until(
        &mut ws,
        "pong before start",
        |m| matches!(m, Message::Pong(p) if &p[..] == b"before"),
    )
    .await;

    ws.send(Message::text(hark_testkit::start_frame(16000, 2)))
        .await
        .unwrap();
    ws.send(Message::Ping(b"during".to_vec().into()))
        .await
        .unwrap();
    read_until(
        &mut ws,
        "pong during call",
        |m| matches!(m, Message::Pong(p) if &p[..] == b"during"),
    )
    .await;

    // Text after the start frame, even another start frame, is ignored; audio still flows.
    ws.send(Message::text("hello")).await.unwrap();
    ws.send(Message::text(hark_testkit::start_frame(8000, 1)))
        .await
        .unwrap();
    let left = signal(800, 5);
    let right = signal(800, 6);
    ws.send(Message::binary(interleave(&[&left, &right])))
        .await
        .unwrap();
    let want = format!("n=800 h={:016x}", hash(&right));
    read_until(&mut ws, "assistant final", |m| match m {
        Message::Text(t) => {
            let m: ServerMessage = serde_json::from_str(t).expect("server message parses");
            assert!(!matches!(m, ServerMessage::Error { .. }), "no error for stray text: {m:?}");
            matches!(m, ServerMessage::TranscriberResponse { transcription, channel: Channel::Assistant, .. } if transcription == want)
        }
        _ => false,
    })
    .await;

    ws.send(Message::Ping(b"again".to_vec().into()))
        .await
        .unwrap();
    read_until(
        &mut ws,
        "pong after text",
        |m| matches!(m, Message::Pong(p) if &p[..] == b"again"),
    )
    .await;
    ws.close(None).await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unknown_profile_is_404_before_the_upgrade() {
    let server = recorder_server().await;
    match Call::connect(
        &server.ws_url("/api/custom-transcriber/no-such-profile"),
        &[],
    )
    .await
    {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 404)
        }
        Err(e) => panic!("expected HTTP 404, got {e}"),
        Ok(_) => panic!("expected HTTP 404, the upgrade succeeded"),
    }
    // A profile that exists is served at its own path.
    let call = Call::open(&server.ws_url("/api/custom-transcriber/default"), 16000, 2)
        .await
        .expect("call opens");
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    server.shutdown().await.unwrap();
}

/// A frame beyond even the websocket layer's limit (`4 * max_frame_bytes + 1024`) is a read
/// error, not the client leaving: it too gets `frame-too-large` and close 1009.
#[tokio::test]
async fn a_frame_far_over_the_limit_is_answered_too() {
    let mut config = test_config();
    config.profiles.insert(
        "default".into(),
        Profile {
            backend: "recorder".into(),
            ..Profile::default()
        },
    );
    config.max_frame_bytes = 4096;
    let server = TestServer::start(config, backends::registry()).await;
    expect_rejected(
        &server,
        "frame beyond the websocket limit",
        vec![
            Send::Text(hark_testkit::start_frame(16000, 2)),
            Send::Binary(vec![0; 4096 * 4 + 2048]),
        ],
        "frame-too-large",
        CLOSE_TOO_BIG,
    )
    .await;
    server.shutdown().await.unwrap();
}
