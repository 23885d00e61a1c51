//! Failure handling through a real server and a real websocket client (docs/PROTOCOL.md, "Errors and close codes"):
//! every way a backend can break ends the call with `pipeline-error-custom-transcriber-failed`
//! and close 1011 within a bounded time, other calls go on, the server stays healthy, fallback
//! backends take over, and failures are counted in /metrics.
//!
//! Two tests fail on purpose, each showing a bug in src/ (see their doc comments):
//! `failed_calls_end_with_a_graceful_close` and
//! `a_fallback_takes_over_from_a_backend_that_falls_behind`.
//!
//! Timing assertions are deliberately loose: upper bounds only a hang would break, lower
//! bounds that follow from causality (a backend cannot fail after N samples before N samples
//! were sent), never "it took about X ms".

use std::cell::Cell;
use std::time::{Duration, Instant};

use hark::config::Profile;
use hark::protocol::PIPELINE_FAILED;
use hark_bench::protocol::{Channel, ServerMessage, TranscriptType};
use hark_testkit::backends::{self, FNV_OFFSET, fnv1a};
use hark_testkit::{Call, Received, TestServer, http_get, start_frame, test_config};

const RATE: u32 = 16_000;
/// 20 ms at 16 kHz.
const FRAME_SAMPLES: usize = 320;
const MAX_LAG: Duration = Duration::from_millis(1000);
/// Added to max_lag for noticing and reporting a failure; only a hang should need more.
const SLACK: Duration = Duration::from_secs(3);
/// How long a test waits for something that should come promptly.
const PROMPT: Duration = Duration::from_secs(5);

/// A server with test backends, `max_lag_ms = 1000`, and the given profiles as
/// `(name, backend, fallback)`.
async fn server(profiles: &[(&str, &str, &[&str])], max_sessions: usize) -> TestServer {
    let mut config = test_config();
    config.max_lag_ms = MAX_LAG.as_millis() as u64;
    config.max_sessions = max_sessions;
    for (name, backend, fallback) in profiles {
        config.profiles.insert(
            (*name).into(),
            Profile {
                backend: (*backend).into(),
                fallback: fallback.iter().map(|s| (*s).into()).collect(),
                ..Profile::default()
            },
        );
    }
    TestServer::start(config, backends::registry()).await
}

fn url(server: &TestServer, profile: &str) -> String {
    server.ws_url(&format!("/api/custom-transcriber/{profile}"))
}

/// Sample `n` of channel `ch`: a sawtooth, different on each channel so a swap would show.
fn sample(ch: usize, n: usize) -> i16 {
    ((n * 37 + ch * 1000) % 4000) as i16 - 2000
}

/// The recorder's hash of the first `count` samples of channel `ch`.
fn hash_of(ch: usize, count: usize) -> u64 {
    (0..count).fold(FNV_OFFSET, |h, n| fnv1a(h, sample(ch, n)))
}

/// Opens a call and sends the start frame (16 kHz stereo).
async fn open(url: &str) -> Call {
    let mut call = hark_testkit::connect_admitted(url, PROMPT).await;
    call.text(&start_frame(RATE, 2)).await;
    call
}

/// Streams stereo 20 ms frames paced in real time until the server closes the call, `limit`
/// passes, or `stop` says so. Returns how many samples per channel were sent.
async fn stream(call: &mut Call, limit: Duration, stop: impl Fn() -> bool) -> usize {
    let started = tokio::time::Instant::now();
    let mut sent = 0;
    while started.elapsed() < limit && !stop() && call.poll().closed_at.is_none() {
        let mut bytes = Vec::with_capacity(FRAME_SAMPLES * 4);
        for n in sent..sent + FRAME_SAMPLES {
            for ch in 0..2 {
                bytes.extend_from_slice(&sample(ch, n).to_le_bytes());
            }
        }
        call.bytes(bytes).await;
        sent += FRAME_SAMPLES;
        let due = started + Duration::from_secs_f64(sent as f64 / f64::from(RATE));
        tokio::time::sleep_until(due).await;
    }
    sent
}

/// Whether `m` is the recorder's final for exactly the first `count` samples of `channel`.
fn is_recorder_final(m: &ServerMessage, channel: Channel, count: usize) -> bool {
    let want = format!("n={count} h={:016x}", hash_of(channel.index(), count));
    matches!(m, ServerMessage::TranscriberResponse {
        transcription,
        channel: c,
        transcript_type: TranscriptType::Final,
    } if *c == channel && *transcription == want)
}

/// The sample count in a recorder final `n=<count> h=<hash>`.
fn recorder_count(text: &str) -> usize {
    text.strip_prefix("n=")
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a recorder final: {text:?}"))
}

/// Finals of `channel` that arrived after `after`.
fn finals_after(got: &Received, channel: Channel, after: Instant) -> Vec<String> {
    got.messages
        .iter()
        .filter_map(|(at, m)| match m {
            ServerMessage::TranscriberResponse {
                transcription,
                channel: c,
                transcript_type: TranscriptType::Final,
            } if *c == channel && *at > after => Some(transcription.clone()),
            _ => None,
        })
        .collect()
}

/// Asserts a call ended normally by the client: no error, a normal (or no) close frame.
fn assert_clean_end(name: &str, got: &Received) {
    assert!(
        got.error().is_none(),
        "{name}: unexpected error {:?}",
        got.error()
    );
    assert!(
        matches!(&got.close, None | Some((1000, _))),
        "{name}: call did not close normally: {:?}",
        got.close
    );
}

/// One way for a call to fail.
struct Case {
    profile: &'static str,
    /// Seconds of audio after which the failure happens.
    due: Duration,
    /// Earliest the failure can possibly be reported (causality, not speed).
    earliest: Duration,
    /// What the error message must contain, besides a channel name.
    says: &'static [&'static str],
}

const FAIL_START: Case = Case {
    profile: "fail-start",
    due: Duration::ZERO,
    earliest: Duration::ZERO,
    says: &["could not start", "fail-start", "refuses to start"],
};
/// Errors after 8000 samples: 0.5 s of audio, 25 frames.
const FAIL_AFTER: Case = Case {
    profile: "fail-after",
    due: Duration::from_millis(500),
    earliest: Duration::from_millis(400),
    says: &["failed", "lost its connection"],
};
const PANIC_AFTER: Case = Case {
    profile: "panic-after",
    due: Duration::from_millis(500),
    earliest: Duration::from_millis(400),
    says: &["failed", "panicked"],
};
/// Never reads: max_lag behind after max_lag of audio.
const WEDGE: Case = Case {
    profile: "wedge",
    due: MAX_LAG,
    earliest: Duration::from_millis(900),
    says: &["behind real time"],
};
/// Reads at half speed: max_lag behind after twice max_lag of audio.
const SLOW: Case = Case {
    profile: "slow",
    due: Duration::from_millis(2000),
    earliest: Duration::from_millis(900),
    says: &["behind real time"],
};

/// Streams on a call of `case.profile` until the server closes it, and checks that it
/// failed as the contract says. Returns what the client received.
async fn failing_call(server: &TestServer, case: &Case) -> Received {
    let name = case.profile;
    let mut call = hark_testkit::connect_admitted(&url(server, name), PROMPT).await;
    let opened = Instant::now();
    call.text(&start_frame(RATE, 2)).await;
    let limit = case.due + MAX_LAG + SLACK;
    stream(&mut call, limit + Duration::from_secs(1), || false).await;
    let got = call.finish(PROMPT).await;

    let (at, error, message) = got
        .messages
        .iter()
        .find_map(|(at, m)| match m {
            ServerMessage::Error { error, message } => Some((*at, error, message)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: no error message before close {:?}", got.close));
    assert_eq!(error, PIPELINE_FAILED, "{name}: {message}");
    assert!(
        message.contains("customer") || message.contains("assistant"),
        "{name}: message names no channel: {message:?}"
    );
    for s in case.says {
        assert!(message.contains(s), "{name}: {message:?} lacks {s:?}");
    }
    assert!(
        matches!(got.messages.last(), Some((_, ServerMessage::Error { .. }))),
        "{name}: something was sent after the error"
    );
    assert_eq!(
        got.close,
        Some((1011, PIPELINE_FAILED.to_string())),
        "{name}: close frame (None: the server reset the connection)"
    );
    let reported = at.saturating_duration_since(opened);
    assert!(
        reported <= limit,
        "{name}: failure reported {reported:?} after the call opened, bound {limit:?}"
    );
    assert!(
        reported >= case.earliest,
        "{name}: failure reported after {reported:?}, before it could have happened ({:?})",
        case.earliest
    );
    let closed = got
        .closed_at
        .expect("closed")
        .saturating_duration_since(opened);
    assert!(
        closed <= limit + Duration::from_secs(1),
        "{name}: closed {closed:?} after the call opened, bound {limit:?} + 1 s"
    );
    got
}

/// A recorder call streams `secs` of audio, gets back every sample on both channels, and
/// hangs up cleanly.
async fn recorder_call_works(url: &str, secs: f64) {
    let mut call = open(url).await;
    let sent = stream(&mut call, Duration::from_secs_f64(secs), || false).await;
    for channel in [Channel::Customer, Channel::Assistant] {
        assert!(
            call.wait_for(PROMPT, |m| is_recorder_final(m, channel, sent))
                .await,
            "{url}: {} channel did not get all {sent} samples: last final {:?}",
            channel.as_str(),
            call.poll().finals(channel.as_str()).last()
        );
    }
    assert!(call.poll().closed_at.is_none(), "{url}: server closed");
    assert_clean_end(url, &call.hang_up().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_backend_failure_ends_the_call_with_pipeline_error() {
    let cases = [&FAIL_START, &FAIL_AFTER, &PANIC_AFTER, &WEDGE, &SLOW];
    let profiles: Vec<(&str, &str, &[&str])> = cases
        .iter()
        .map(|c| (c.profile, c.profile, &[][..]))
        .collect();
    let server = server(&profiles, 64).await;
    tokio::join!(
        failing_call(&server, &FAIL_START),
        failing_call(&server, &FAIL_AFTER),
        failing_call(&server, &PANIC_AFTER),
        failing_call(&server, &WEDGE),
        failing_call(&server, &SLOW),
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_fallback_chain_ends_the_call_with_pipeline_error() {
    let server = server(
        &[
            ("start-then-after", "fail-start", &["fail-after"]),
            ("after-then-start", "fail-after", &["fail-start"]),
        ],
        64,
    )
    .await;
    // fail-start gives way to fail-after, which then errors mid-call with nothing left.
    let start_then_after = Case {
        profile: "start-then-after",
        ..FAIL_AFTER
    };
    // fail-after errors mid-call and its fallback cannot start.
    let after_then_start = Case {
        profile: "after-then-start",
        says: &["lost its connection", "no fallback backend could take over"],
        ..FAIL_AFTER
    };
    tokio::join!(
        failing_call(&server, &start_then_after),
        failing_call(&server, &after_then_start),
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_call_leaves_other_calls_alone() {
    let server = server(
        &[
            ("rec", "recorder", &[]),
            ("panic-after", "panic-after", &[]),
            ("wedge", "wedge", &[]),
        ],
        64,
    )
    .await;
    let mut rec = open(&url(&server, "rec")).await;
    let failures_over: Cell<Option<Instant>> = Cell::new(None);
    let failing = async {
        let (a, b) = tokio::join!(
            failing_call(&server, &PANIC_AFTER),
            failing_call(&server, &WEDGE)
        );
        let last = a.closed_at.max(b.closed_at).expect("closed");
        failures_over.set(Some(last));
        last
    };
    // The recorder call streams all along, and 1.5 s more once both failing calls are closed.
    let keep_going = Duration::from_millis(1500);
    let streaming = stream(&mut rec, Duration::from_secs(20), || {
        failures_over
            .get()
            .is_some_and(|t| t.elapsed() >= keep_going)
    });
    let (failed_at, sent) = tokio::join!(failing, streaming);
    assert!(
        rec.poll().closed_at.is_none(),
        "recorder call was closed: {:?} {:?}",
        rec.got.close,
        rec.got.error()
    );
    for channel in [Channel::Customer, Channel::Assistant] {
        assert!(
            rec.wait_for(PROMPT, |m| is_recorder_final(m, channel, sent))
                .await,
            "{} channel of the recorder call did not get all {sent} samples: last final {:?}",
            channel.as_str(),
            rec.poll().finals(channel.as_str()).last()
        );
        let later = finals_after(&rec.got, channel, failed_at);
        assert!(
            later.len() >= 10,
            "{} channel got only {} finals after the failing calls closed",
            channel.as_str(),
            later.len()
        );
    }
    let got = rec.hang_up().await;
    assert_clean_end("recorder call", &got);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_stays_healthy_after_failures() {
    // Two slots only: a slot leaked by a failed call would lock out the calls that follow.
    let server = server(
        &[
            ("default", "recorder", &[]),
            ("fail-start", "fail-start", &[]),
            ("panic-after", "panic-after", &[]),
            ("wedge", "wedge", &[]),
            ("slow", "slow", &[]),
        ],
        2,
    )
    .await;
    tokio::join!(
        failing_call(&server, &PANIC_AFTER),
        failing_call(&server, &WEDGE)
    );
    tokio::join!(
        failing_call(&server, &FAIL_START),
        failing_call(&server, &SLOW)
    );

    let (status, text) = http_get(server.addr, "/healthz", &[]).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.ends_with("ok\n"), "{text}");
    let deadline = Instant::now() + PROMPT;
    loop {
        let (status, text) = http_get(server.addr, "/readyz", &[]).await;
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz not ready {PROMPT:?} after the failed calls: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Both slots are free again, and taken: a third call is refused.
    let rec = url(&server, "default");
    let first = open(&rec).await;
    let second = open(&rec).await;
    match Call::connect(&rec, &[]).await.err() {
        Some(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 503, "third call over capacity");
        }
        other => panic!("third call over capacity was not refused with 503: {other:?}"),
    }
    assert_clean_end("first", &first.hang_up().await);
    assert_clean_end("second", &second.hang_up().await);

    // And new calls work end to end.
    tokio::join!(
        recorder_call_works(&rec, 1.0),
        recorder_call_works(&rec, 1.0)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_backends_take_over() {
    let server = server(
        &[
            ("start-fallback", "fail-start", &["recorder"]),
            ("error-fallback", "fail-after", &["recorder"]),
            ("panic-fallback", "panic-after", &["recorder"]),
        ],
        64,
    )
    .await;
    // Cannot start: the recorder serves the call from its first sample.
    let start_fallback_url = url(&server, "start-fallback");
    let start_fallback = recorder_call_works(&start_fallback_url, 1.5);
    let mid_call = |profile: &'static str| {
        let url = url(&server, profile);
        async move {
            let mut call = open(&url).await;
            let opened = Instant::now();
            let secs = 3.0;
            let sent = stream(&mut call, Duration::from_secs_f64(secs), || false).await;
            let ended = Instant::now();
            // The first backend sends nothing, so every transcript is the fallback's. Some must
            // come for the last half second of audio, well after the failure at 0.5 s.
            let deadline = Instant::now() + PROMPT;
            let late = |got: &Received, ch: Channel| {
                !finals_after(got, ch, ended - Duration::from_millis(500)).is_empty()
            };
            while !(late(call.poll(), Channel::Customer) && late(call.poll(), Channel::Assistant)) {
                assert!(
                    Instant::now() < deadline,
                    "{profile}: no transcripts for the end of the call"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(
                call.poll().closed_at.is_none(),
                "{profile}: call was closed"
            );
            let got = call.hang_up().await;
            assert_clean_end(profile, &got);
            for channel in [Channel::Customer, Channel::Assistant] {
                let finals = got.finals(channel.as_str());
                let text = finals.last().expect("finals");
                let last = recorder_count(text);
                // The failed backend settled nothing, so the fallback was given the call's
                // audio again from its first sample (the replay), then the rest as it came:
                // its stream is the call's own, whole and in order, up to the last half
                // second the test waited for.
                assert_eq!(
                    *text,
                    format!("n={last} h={:016x}", hash_of(channel.index(), last)),
                    "{profile}: the fallback's audio on the {} channel is not the call's",
                    channel.as_str()
                );
                assert!(
                    last <= sent && last + RATE as usize / 2 >= sent,
                    "{profile}: fallback on the {} channel got {last} of {sent} samples",
                    channel.as_str()
                );
                let first_at = got
                    .messages
                    .iter()
                    .find(|(_, m)| matches!(m, ServerMessage::TranscriberResponse { channel: c, .. } if *c == channel))
                    .map(|(at, _)| at.saturating_duration_since(opened))
                    .expect("transcripts");
                assert!(
                    first_at >= FAIL_AFTER.earliest,
                    "{profile}: transcript at {first_at:?}, before the first backend failed"
                );
            }
        }
    };
    tokio::join!(
        start_fallback,
        mid_call("error-fallback"),
        mid_call("panic-fallback")
    );
    server.shutdown().await.unwrap();
}

/// The value of the first metric line starting with `series` (name and labels).
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_counted_in_metrics() {
    let server = server(
        &[
            ("fail-start", "fail-start", &[]),
            ("fail-after", "fail-after", &[]),
            ("wedge", "wedge", &[]),
            ("start-fallback", "fail-start", &["recorder"]),
        ],
        64,
    )
    .await;
    let start_fallback = url(&server, "start-fallback");
    tokio::join!(
        failing_call(&server, &FAIL_START),
        failing_call(&server, &FAIL_AFTER),
        failing_call(&server, &WEDGE),
        recorder_call_works(&start_fallback, 0.5),
    );
    let (status, text) = http_get(server.addr, "/metrics", &[]).await;
    assert_eq!(status, 200, "{text}");
    for (profile, reason) in [
        ("fail-start", "backend-start"),
        ("fail-after", "backend-error"),
        ("wedge", "lag"),
    ] {
        let series = format!(
            "hark_session_failures_total{{profile=\"{profile}\",backend=\"{profile}\",reason=\"{reason}\"}}"
        );
        let value =
            metric(&text, &series).unwrap_or_else(|| panic!("/metrics lacks {series}:\n{text}"));
        assert!(value >= 1.0, "{series} = {value}");
    }
    let series = "hark_backend_fallbacks_total{backend=\"recorder\"}";
    let value = metric(&text, series).unwrap_or_else(|| panic!("/metrics lacks {series}:\n{text}"));
    assert!(value >= 1.0, "{series} = {value}");
    server.shutdown().await.unwrap();
}

/// docs/PROTOCOL.md: a backend more than `max_lag_ms` behind real time fails the call only
/// when no fallback backend of the profile can take over. A
/// wedged (or slow) backend with a fallback configured should be replaced, like one that
/// errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_takes_over_from_a_backend_that_falls_behind() {
    let server = server(
        &[
            ("wedge-fallback", "wedge", &["recorder"]),
            ("slow-fallback", "slow", &["recorder"]),
        ],
        64,
    )
    .await;
    let check = |profile: &'static str| {
        let url = url(&server, profile);
        async move {
            let mut call = open(&url).await;
            // Past the point where the first backend is max_lag behind.
            let secs = SLOW.due + MAX_LAG + Duration::from_secs(1);
            stream(&mut call, secs, || false).await;
            let got = call.poll().clone();
            assert!(
                got.closed_at.is_none() && got.error().is_none(),
                "{profile}: call failed instead of falling back: {:?} {:?}",
                got.error(),
                got.close
            );
            let finals = got.finals("customer").len() + got.finals("assistant").len();
            assert!(finals > 0, "{profile}: no transcripts from the fallback");
            assert_clean_end(profile, &call.hang_up().await);
        }
    };
    tokio::join!(check("wedge-fallback"), check("slow-fallback"));
    server.shutdown().await.unwrap();
}

/// A client's websocket frame: masked, as clients must (RFC 6455 section 5.3).
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

/// Takes one whole (unmasked) server frame off the front of `buf`: (opcode, payload).
fn take_server_frame(buf: &mut Vec<u8>) -> Option<(u8, Vec<u8>)> {
    let (len, at) = match *buf.get(1)? & 0x7f {
        126 => (
            usize::from(u16::from_be_bytes(buf.get(2..4)?.try_into().ok()?)),
            4,
        ),
        127 => (
            u64::from_be_bytes(buf.get(2..10)?.try_into().ok()?) as usize,
            10,
        ),
        n => (usize::from(n), 2),
    };
    let payload = buf.get(at..at + len)?.to_vec();
    let opcode = buf[0] & 0x0f;
    buf.drain(..at + len);
    Some((opcode, payload))
}

/// RFC 6455 section 7.1.1: after the close frames, the server closes the TCP connection
/// (FIN). It must not reset it (RST): a reset throws away data not yet delivered, here the
/// error message and close frame of a failed call. A bare client on a plain socket shows
/// which of the two the server does: the session reads on until the client's close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_calls_end_with_a_graceful_close() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server(&[("fail-start", "fail-start", &[])], 64).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET /api/custom-transcriber/fail-start HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n",
        server.addr
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_string();
            buf.drain(..i + 4);
            break head;
        }
        let n = tcp.read(&mut chunk).await.unwrap();
        assert!(n > 0, "no upgrade response");
        buf.extend_from_slice(&chunk[..n]);
    };
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // The start frame and then 6 s of audio at once, as from a client streaming while the
    // call starts: more than the server reads ahead (tungstenite reads up to 128 KiB at a
    // time), so some is still unread when the backend fails to start.
    let mut burst = client_frame(0x1, start_frame(RATE, 2).as_bytes());
    for _ in 0..300 {
        burst.extend(client_frame(0x2, &[0u8; FRAME_SAMPLES * 4]));
    }
    let (mut rd, mut wr) = tcp.into_split();
    let (close_tx, close_rx) = tokio::sync::oneshot::channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        // A server that stops reading may block this until it closes; then it fails.
        if let Err(e) = wr.write_all(&burst).await {
            return format!("writing audio failed: {e}");
        }
        let Ok(code) = close_rx.await else {
            return "no close frame to answer".to_string();
        };
        // Answer the close as a client must, after a pause in which a server that resets
        // the connection has done so.
        tokio::time::sleep(Duration::from_millis(200)).await;
        match wr.write_all(&client_frame(0x8, &code)).await {
            Ok(()) => "close answered".to_string(),
            Err(e) => format!("writing the close reply failed: {e}"),
        }
    });

    let mut frames = Vec::new();
    let mut close_tx = Some(close_tx);
    let ending = tokio::time::timeout(PROMPT, async {
        loop {
            if let Some((opcode, payload)) = take_server_frame(&mut buf) {
                if opcode == 0x8
                    && let Some(tx) = close_tx.take()
                {
                    let _ = tx.send(payload.get(..2).unwrap_or_default().to_vec());
                }
                frames.push((opcode, payload));
                continue;
            }
            match rd.read(&mut chunk).await {
                Ok(0) => return "end of stream".to_string(),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return format!("reading failed: {e}"),
            }
        }
    })
    .await
    .expect("the server did not end the connection");
    drop(close_tx);
    let wrote = writer.await.unwrap();

    let text = |(_, p): &(u8, Vec<u8>)| String::from_utf8_lossy(p).to_string();
    let error = frames.iter().find(|(op, _)| *op == 0x1).map(text);
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains(PIPELINE_FAILED) && e.contains("could not start")),
        "no error message; frames {frames:?}, then {ending}; {wrote}"
    );
    let close = frames
        .iter()
        .find(|(op, _)| *op == 0x8)
        .map(|(_, p)| p.clone());
    let mut want = 1011u16.to_be_bytes().to_vec();
    want.extend_from_slice(PIPELINE_FAILED.as_bytes());
    assert_eq!(close, Some(want), "close frame; then {ending}; {wrote}");
    assert_eq!(
        (ending.as_str(), wrote.as_str()),
        ("end of stream", "close answered"),
        "the server reset the connection instead of closing it"
    );
    server.shutdown().await.unwrap();
}
