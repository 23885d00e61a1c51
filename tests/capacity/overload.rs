//! Overload: offered about twice the calls the embedded recognizer can carry on this
//! machine, hark refuses the excess at the upgrade (503 with Retry-After, so the platform
//! falls back to its own transcriber) and every call it admitted runs to its end with no
//! failure. The calls are dense: speech on both channels nearly all the time.

use std::sync::Arc;
use std::time::Duration;

use hark_testkit::{Call, TestServer, clips, moonshine_registry};
use tokio_tungstenite::tungstenite;

/// Speech at 16 kHz: every dev clip back to back, `pause` apart, starting at clip `first`,
/// repeated to at least `secs`.
pub(crate) fn back_to_back(
    all: &[hark_testkit::Clip],
    first: usize,
    secs: f64,
    pause: Duration,
) -> Vec<i16> {
    let mut out = Vec::new();
    let mut i = first;
    while (out.len() as f64) < secs * 16_000.0 {
        let clip = &all[i % all.len()];
        out.extend(hark_testkit::resample(&clip.samples, clip.rate, 16_000));
        out.extend(std::iter::repeat_n(
            0i16,
            (pause.as_secs_f64() * 16_000.0) as usize,
        ));
        i += 1;
    }
    out
}

/// Dense speech: clips 300 ms apart.
fn dense(all: &[hark_testkit::Clip], first: usize, secs: f64) -> Vec<i16> {
    back_to_back(all, first, secs, Duration::from_millis(300))
}

enum Outcome {
    Refused,
    Held,
    Failed(String),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offered_twice_the_capacity_no_admitted_call_fails() {
    let _machine = crate::MACHINE.lock().await;
    const OFFERED: usize = 36;
    const STAGGER: Duration = Duration::from_millis(700);
    const CALL_SECS: f64 = 30.0;
    let mut config = hark_testkit::moonshine_config();
    config.max_sessions = 64;
    let server = TestServer::start(config, moonshine_registry()).await;
    let url = server.ws_url("/api/custom-transcriber");
    let all = clips();
    let mut calls = Vec::new();
    for n in 0..OFFERED {
        let customer = dense(&all, n, CALL_SECS);
        let assistant = dense(&all, n + all.len() / 2, CALL_SECS);
        let url = url.clone();
        calls.push(tokio::spawn(async move {
            let mut call = match Call::connect(&url, &[]).await {
                Ok(call) => call,
                Err(tungstenite::Error::Http(r)) if r.status() == 503 => {
                    assert!(
                        r.headers().contains_key("retry-after"),
                        "503 without Retry-After"
                    );
                    return Outcome::Refused;
                }
                Err(e) => return Outcome::Failed(format!("upgrade failed: {e}")),
            };
            call.text(&hark_testkit::start_frame(16_000, 2)).await;
            let len = customer.len().min(assistant.len());
            let played = call
                .play(&[&customer[..len], &assistant[..len]], 16_000, 20, true)
                .await;
            let got = call.hang_up().await;
            match (played, got.error(), &got.close) {
                (true, None, None | Some((1000, _))) => Outcome::Held,
                (_, error, close) => Outcome::Failed(format!("error {error:?}, close {close:?}")),
            }
        }));
        tokio::time::sleep(STAGGER).await;
    }
    let (mut held, mut refused, mut failed) = (0, 0, Vec::new());
    for call in calls {
        match call.await.expect("call task") {
            Outcome::Held => held += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failed(why) => failed.push(why),
        }
    }
    eprintln!(
        "offered {OFFERED}: held {held}, refused {refused}, failed {}",
        failed.len()
    );
    assert!(failed.is_empty(), "admitted calls failed: {failed:?}");
    assert!(
        refused > 0,
        "all {OFFERED} dense calls were admitted: no admission control"
    );
    // An idle pool takes its first call whatever the estimate says: an admission that
    // refuses every call after it fails here. How many more depends on the CPU (BENCHMARKS.md,
    // "Overload"): 12–14 with AVX-512, 3–5 on 2 vCPUs of AVX2 alone (machine F, this test
    // alone), where onnxruntime's int8 products are slower and the cost model, calibrated
    // on them, rightly prices calls dearer.
    assert!(held >= 2, "only {held} of {OFFERED} calls were admitted");
    server.shutdown().await.unwrap();
}

/// Tries one upgrade; true if the server took the call (101).
async fn admitted(url: &str) -> Result<Call, String> {
    Call::connect(url, &[]).await.map_err(|e| match e {
        tungstenite::Error::Http(r) => format!("refused: {}", r.status()),
        e => e.to_string(),
    })
}

/// Plays the shortest dev clip on the customer channel in real time and returns its finals.
async fn one_real_call(mut call: Call) -> Vec<String> {
    let all = clips();
    let clip = all
        .iter()
        .min_by_key(|c| c.samples.len() * 16_000 / c.rate as usize)
        .expect("dev clips");
    let audio = hark_testkit::resample(&clip.samples, clip.rate, 16_000);
    let silence = vec![0i16; audio.len()];
    call.text(&hark_testkit::start_frame(16_000, 2)).await;
    call.play(&[&audio, &silence], 16_000, 20, true).await;
    call.silence(2, 16_000, 1.5).await;
    // Other tests may load the machine: wait for the final rather than for a set time.
    call.wait_for(Duration::from_secs(30), |m| {
        matches!(m, hark_bench::protocol::ServerMessage::TranscriberResponse { channel, transcript_type, .. }
            if channel.as_str() == "customer" && *transcript_type == hark_bench::protocol::TranscriptType::Final)
    })
    .await;
    let got = call.hang_up().await;
    assert!(
        got.error().is_none(),
        "the real call failed: {:?}",
        got.error()
    );
    got.finals("customer")
}

/// A server whose only backend is `engine` under `name`, once it is loaded: a test that needs
/// an idle recognizer cannot share this binary's, which the other tests may keep busy.
async fn server_of_its_own(
    config: hark::config::Config,
    name: &'static str,
    engine: Arc<hark::backend::embedded::Embedded>,
) -> TestServer {
    engine
        .wait_ready(Duration::from_secs(600))
        .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
    let mut registry = hark::backend::Registry::default();
    registry.insert(name, engine);
    TestServer::start(config, registry).await
}

/// Room booked at the upgrade goes back the moment a call ends without starting, and after a
/// short hold for a connection that never sends its start frame: broken or idle clients
/// cannot make an idle server refuse a real call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_or_silent_handshakes_do_not_keep_a_real_call_out() {
    let _machine = crate::MACHINE.lock().await;
    const BURST: usize = 20;
    let mut config = hark_testkit::moonshine_config();
    config.max_sessions = 64;
    config.max_pending_starts = 64;
    // The other tests share this binary's engine and may load it: this one needs an idle
    // server, so an engine of its own, and a lag limit the others' load cannot reach.
    config.max_lag_ms = 60_000;
    let engine = hark::backend::moonshine::spawn(&config.moonshine, false);
    let server = server_of_its_own(config, "moonshine", engine).await;
    let url = server.ws_url("/api/custom-transcriber");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while hark_testkit::http_get_opt(server.addr, "/readyz").await != Some(200) {
        assert!(std::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Handshakes whose start frame is broken, one after another: each call ends with an
    // error, and each gives back the room it booked (more than an idle server takes in one
    // burst: BENCHMARKS.md, "Load shapes"), so every one is admitted.
    let mut ended = 0;
    for n in 0..BURST {
        let mut call = admitted(&url)
            .await
            .unwrap_or_else(|e| panic!("after {n} broken handshakes the next was {e}"));
        call.text("{\"type\":\"start\",").await;
        let got = call.finish(Duration::from_secs(10)).await;
        assert!(got.error().is_some(), "a broken start frame was taken");
        ended += 1;
    }
    // A moment later, a real call: admitted at once, and transcribed.
    let call = admitted(&url)
        .await
        .unwrap_or_else(|e| panic!("after {ended} broken handshakes a real call was {e}"));
    let finals = one_real_call(call).await;
    assert!(!finals.is_empty(), "the real call got no final");

    // Connections that upgrade and never send a start frame keep their room only briefly.
    let mut silent = Vec::new();
    for _ in 0..BURST {
        if let Ok(call) = admitted(&url).await {
            silent.push(call);
        }
    }
    assert!(!silent.is_empty());
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let call = admitted(&url).await.unwrap_or_else(|e| {
        panic!(
            "with {} silent connections open for 3.5 s a real call was {e}",
            silent.len()
        )
    });
    let finals = one_real_call(call).await;
    assert!(!finals.is_empty(), "the real call got no final");
    drop(silent);
    server.shutdown().await.unwrap();
}

/// Turns taken in phase: the customer says a clip, then the assistant the next, 600 ms
/// apart, for at least `secs`; every call given these speaks at the same instants.
fn in_phase_turns(all: &[hark_testkit::Clip], secs: f64) -> (Vec<i16>, Vec<i16>) {
    let (mut customer, mut assistant) = (Vec::new(), Vec::new());
    let mut i = 0;
    while (customer.len() as f64) < secs * 16_000.0 {
        let clip = &all[i % all.len()];
        let speech = hark_testkit::resample(&clip.samples, clip.rate, 16_000);
        let (speaking, silent) = match i % 2 {
            0 => (&mut customer, &mut assistant),
            _ => (&mut assistant, &mut customer),
        };
        speaking.extend(&speech);
        silent.extend(std::iter::repeat_n(0i16, speech.len()));
        for side in [&mut customer, &mut assistant] {
            side.extend(std::iter::repeat_n(0i16, 9_600));
        }
        i += 1;
    }
    (customer, assistant)
}

/// A burst of calls whose callers speak in phase, all opened at the same
/// instant on an idle server. Admission counts the finals those calls will bring together
/// before any of them shows in the measured load, priced at the last step the ladder may
/// take: with the ladder capped at partials (base's finals kept whatever the load) it takes
/// only as many as the decoders clear with base, the rest get 503 with Retry-After, and no
/// admitted call fails by lag. (With the whole ladder the default admits all 26:
/// BENCHMARKS.md, "Bursts".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_phase_burst_is_cut_where_the_decoders_would_fall_behind() {
    let _machine = crate::MACHINE.lock().await;
    const OFFERED: usize = 26;
    const CALL_SECS: f64 = 24.0;
    let mut config = hark_testkit::test_config();
    config.max_sessions = 64;
    // An engine of its own, idle when the burst comes: what it has not measured yet is what
    // the burst is admitted on.
    let whisper = hark::backend::whisper::WhisperConfig {
        shed: hark::backend::embedded::Shed::Partials,
        ..hark_testkit::whisper_config()
    };
    let engine = hark::backend::whisper::spawn(&whisper, whisper.turn_model);
    let server = server_of_its_own(config, "whisper", engine).await;
    let url = server.ws_url("/api/custom-transcriber");
    let (customer, assistant) = in_phase_turns(&clips(), CALL_SECS);
    let (customer, assistant) = (Arc::new(customer), Arc::new(assistant));
    let start = Arc::new(tokio::sync::Barrier::new(OFFERED));
    let calls: Vec<_> = (0..OFFERED)
        .map(|_| {
            let (url, start) = (url.clone(), start.clone());
            let (customer, assistant) = (customer.clone(), assistant.clone());
            tokio::spawn(async move {
                start.wait().await;
                let mut call = match Call::connect(&url, &[]).await {
                    Ok(call) => call,
                    Err(tungstenite::Error::Http(r)) if r.status() == 503 => {
                        assert!(
                            r.headers().contains_key("retry-after"),
                            "503 without Retry-After"
                        );
                        return (Outcome::Refused, 0);
                    }
                    Err(e) => return (Outcome::Failed(format!("upgrade failed: {e}")), 0),
                };
                call.text(&hark_testkit::start_frame(16_000, 2)).await;
                let played = call
                    .play(&[&customer[..], &assistant[..]], 16_000, 20, true)
                    .await;
                call.silence(2, 16_000, 1.5).await;
                let got = call.hang_up().await;
                let finals = got
                    .finals("customer")
                    .len()
                    .min(got.finals("assistant").len());
                match (played, got.error(), &got.close) {
                    (true, None, None | Some((1000, _))) => (Outcome::Held, finals),
                    (_, error, close) => (
                        Outcome::Failed(format!("error {error:?}, close {close:?}")),
                        finals,
                    ),
                }
            })
        })
        .collect();
    let (mut held, mut refused, mut failed) = (0, 0, Vec::new());
    for call in calls {
        match call.await.expect("call task") {
            (Outcome::Held, finals) => {
                held += 1;
                assert!(finals > 0, "an admitted call got no final on a channel");
            }
            (Outcome::Refused, _) => refused += 1,
            (Outcome::Failed(why), _) => failed.push(why),
        }
    }
    eprintln!("in-phase burst of {OFFERED}: held {held}, refused {refused}, failed {failed:?}");
    assert!(failed.is_empty(), "admitted calls failed: {failed:?}");
    assert!(
        refused > 0,
        "all {OFFERED} calls of the burst were admitted"
    );
    // How many the decoders clear depends on the CPU: two or more where base's int8
    // products have VNNI, one or two without it (a wave of two in phase priced near the
    // budget: BENCHMARKS.md, "Bursts and admission"). An idle server admits at least one.
    assert!(held >= 1, "the burst was cut at {held} calls");
    server.shutdown().await.unwrap();
}
