//! Overload: offered about twice the calls the embedded recognizer can carry on this
//! machine, hark refuses the excess at the upgrade (503 with Retry-After, so the platform
//! falls back to its own transcriber) and every call it admitted runs to its end with no
//! failure. The calls are dense: speech on both channels nearly all the time.

use std::time::Duration;

use hark_testkit::{Call, TestServer, clips, moonshine_registry, test_config};
use tokio_tungstenite::tungstenite;

/// Dense speech: every dev clip back to back, 300 ms apart, starting at clip `first`,
/// repeated to at least `secs`.
fn dense(all: &[hark_testkit::Clip], first: usize, secs: f64) -> Vec<i16> {
    let mut out = Vec::new();
    let mut i = first;
    while (out.len() as f64) < secs * 16_000.0 {
        let clip = &all[i % all.len()];
        out.extend(hark_testkit::resample(&clip.samples, clip.rate, 16_000));
        out.extend(std::iter::repeat_n(0i16, 4_800));
        i += 1;
    }
    out
}

enum Outcome {
    Refused,
    Held,
    Failed(String),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offered_twice_the_capacity_no_admitted_call_fails() {
    const OFFERED: usize = 36;
    const STAGGER: Duration = Duration::from_millis(700);
    const CALL_SECS: f64 = 30.0;
    let mut config = test_config();
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
    // Two cores carry more than a handful of dense calls (BENCHMARKS.md, "overload"): an
    // admission that refuses nearly everything fails here.
    assert!(held >= 6, "only {held} of {OFFERED} calls were admitted");
    server.shutdown().await.unwrap();
}
