//! `hark bench` against real servers on loopback: it measures a healthy call with the real
//! recognizer, and it reports a failing transcriber as failed.

use hark_bench::conversation::{Corpus, default_clips_dir};
use hark_bench::protocol::Channel;
use hark_bench::{BenchArgs, measure};
use hark_testkit::{
    TestServer, backends, clips, config_with_default_backend, moonshine_registry, test_config,
};

fn args(url: String, duration: f64) -> BenchArgs {
    BenchArgs {
        url,
        calls: 1,
        duration,
        max_calls: 1,
        seed: 3,
        ..BenchArgs::default()
    }
}

fn corpus() -> Corpus {
    clips(); // fetches the clips on first use
    Corpus::load(&default_clips_dir()).expect("corpus loads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measures_a_real_call_per_utterance() {
    let corpus = corpus();
    let server = TestServer::start(test_config(), moonshine_registry()).await;
    let a = args(server.ws_url("/api/custom-transcriber"), 14.0);
    let report = measure(&a, &corpus, 2).await.expect("bench runs");
    assert_eq!(report.failed_calls, 0, "{:?}", report.per_call[0].errors);
    let utterances: Vec<_> = report.per_call.iter().flat_map(|c| &c.utterances).collect();
    assert!(utterances.len() >= 4, "both calls played several turns");
    assert!(utterances.iter().any(|u| u.channel == Channel::Assistant));
    for u in &utterances {
        assert!(u.time_to_final_ms.is_some(), "no final for {}", u.recording);
        assert!(
            u.first_partial_ms.is_some(),
            "nothing at all for {}",
            u.recording
        );
    }
    assert_eq!(report.time_to_final_ms.count, utterances.len());
    assert!(
        report.customer.wer < 0.25,
        "customer WER {}",
        report.customer.wer
    );
    assert_eq!(
        report.customer.leaked_words + report.assistant.leaked_words,
        0
    );
    assert!(
        serde_json::to_string(&report)
            .unwrap()
            .contains("time_to_final_ms")
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_a_failing_transcriber_as_failed() {
    let corpus = corpus();
    let server = TestServer::start(
        config_with_default_backend("fail-start"),
        backends::registry(),
    )
    .await;
    let a = args(server.ws_url("/api/custom-transcriber"), 5.0);
    let report = measure(&a, &corpus, 1).await.expect("bench runs");
    assert_eq!(report.failed_calls, 1);
    let call = &report.per_call[0];
    assert_eq!(call.close_code, Some(1011));
    assert!(call.errors[0].starts_with("pipeline-error-custom-transcriber-failed"));
    assert!(!report.held(800.0));
    server.shutdown().await.unwrap();
}
