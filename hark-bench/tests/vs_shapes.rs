//! `hark bench --vs`, the load shapes and the report against real hark servers on loopback:
//! two servers side by side with their ratios and interleaved starts, a failing second
//! server, a capacity ramp, and the JSON, Markdown and SVG outputs.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hark_bench::conversation::{Corpus, default_clips_dir};
use hark_bench::run::{capacity_plot_path, find_capacity, write_outputs};
use hark_bench::shape::{self, Shape};
use hark_bench::summary;
use hark_bench::{BenchArgs, measure_run};
use hark_testkit::{TestServer, backends, clips, config_with_default_backend};
use serde_json::Value;

/// The real-recognizer tests take turns: on a small machine, two at once would measure each
/// other.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Moonshine with two decoders, shared by this binary's tests (its two servers side by side
/// share it too). They check the report, not admission: with one decoder, on a CPU without
/// VNNI, a wave of two finals is priced just over admission's 600 ms (619–663 ms measured),
/// so every call after the first would be refused.
fn two_decoders() -> hark::backend::Registry {
    static M: OnceLock<Arc<hark::backend::embedded::Embedded>> = OnceLock::new();
    let engine = M.get_or_init(|| {
        let config = hark::backend::moonshine::MoonshineConfig {
            pool_size: 2,
            ..hark::config::Config::default().moonshine
        };
        let m = hark::backend::moonshine::spawn(&config, false);
        m.wait_ready(Duration::from_secs(600))
            .expect("embedded recognizer loads");
        m
    });
    let mut registry = hark::backend::Registry::default();
    registry.insert("moonshine", engine.clone());
    registry
}

fn corpus() -> Corpus {
    clips(); // fetches the clips on first use
    Corpus::load(&default_clips_dir()).expect("corpus loads")
}

fn args(url: String, calls: usize, duration: f64) -> BenchArgs {
    BenchArgs {
        url,
        calls,
        duration,
        seed: 3,
        ..BenchArgs::default()
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written"))
        .expect("report parses")
}

#[test]
fn staggered_calls_spread_and_burst_calls_start_together() {
    let mut a = args("ws://a".into(), 3, 20.0);
    a.vs = Some("ws://b".into());
    let spread = shape::schedule(a.shape(), 3, 2, a.seed, a.duration);
    assert_eq!(a.shape(), Shape::Staggered { over_s: 6.0 });
    let a_starts: Vec<f64> = spread
        .iter()
        .filter(|s| s.target == 0)
        .map(|s| s.offset_ms)
        .collect();
    assert_eq!(a_starts, [0.0, 2000.0, 4000.0]);
    assert!(spread.windows(2).all(|w| w[0].offset_ms < w[1].offset_ms));
    a.burst = true;
    let together = shape::schedule(a.shape(), 3, 2, a.seed, a.duration);
    assert!(
        together
            .iter()
            .all(|s| s.offset_ms <= shape::PAIR_GAP_MS && s.seed == a.seed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_real_servers_side_by_side() {
    let _serial = SERIAL.lock().await;
    let corpus = corpus();
    let a_server = TestServer::start(hark_testkit::moonshine_config(), two_decoders()).await;
    // B: the same recognizer with a longer endpoint, so its figures differ.
    let mut b_config = hark_testkit::moonshine_config();
    b_config.moonshine.endpoint_ms = 500;
    let b_server = TestServer::start(b_config, two_decoders()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(a_server.ws_url("/api/custom-transcriber"), 2, 12.0);
    a.vs = Some(b_server.ws_url("/api/custom-transcriber"));
    a.label = Some("embedded,long-endpoint".into());
    // Each server's second call starts 14 s after its first, about when the first pair
    // ends: this checks the report, not admission. The first pair's last seconds are still
    // in admission's load window then, and on a slow or busy CPU the second call can be
    // priced just over the budget (605–705 ms against 600 on a CPU without VNNI) and
    // refused; the report counts a refusal as a call's ending either way.
    a.stagger = Some(28.0);
    a.report = Some(dir.path().join("r.json"));
    a.plot = Some(dir.path().join("p.svg"));
    a.markdown = Some(dir.path().join("s.md"));
    let run = measure_run(&a, &corpus, 2).await.expect("bench runs");
    write_outputs(&a, &run).expect("outputs written");

    let json = read_json(&dir.path().join("r.json"));
    assert_eq!(json["schema_version"], 5);
    assert!(json["tool_version"].is_string() && json["started_unix_s"].is_u64());
    assert_eq!(json["settings"]["shape"]["kind"], "staggered");
    let targets = json["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0]["label"], "embedded");
    assert_eq!(targets[1]["label"], "long-endpoint");
    for t in targets {
        for stat in ["reply_wait_ms", "time_to_final_ms", "first_partial_ms"] {
            for k in ["p50", "p95", "p99", "max", "mean", "count"] {
                assert!(t[stat][k].is_number(), "{stat}.{k}");
            }
        }
        // One 12 s call has at least three utterances with a final.
        assert!(t["time_to_final_ms"]["count"].as_u64() > Some(2));
        for ch in ["customer", "assistant"] {
            for k in [
                "wer",
                "premature_ends",
                "inner_pauses",
                "terminal_before_last",
                "turns_ending_terminal",
                "turns_ending_answerable",
                "leaked_words",
                "missing_finals",
                "partial_words_lost",
                "duplicate_finals",
                "repeated_words",
            ] {
                assert!(t[ch][k].is_number(), "{ch}.{k}");
            }
            assert!(
                t[ch]["time_to_final_ms"]["count"].as_u64() > Some(0),
                "{ch}: its own time to final"
            );
        }
        for k in [
            "stray_transcripts",
            "failed_calls",
            "refused_calls",
            "transport_errors",
            "unparseable",
        ] {
            assert!(t[k].is_u64(), "{k}");
        }
        assert!(t["refusals"].is_array());
        let codes = t["close_codes"].as_array().expect("close codes");
        let counted: u64 = codes.iter().filter_map(|c| c["count"].as_u64()).sum();
        // A call refused at the upgrade (admission on a machine busy with both servers)
        // has its refusal rather than a close.
        let refused = t["refused_calls"].as_u64().unwrap_or(0);
        assert_eq!(counted + refused, 2, "every call's ending counted");
        assert_eq!(t["per_call"].as_array().map(Vec::len), Some(2));
    }
    // The ratios are B's figures over A's.
    let ratios = &json["ratios"];
    assert_eq!(ratios["numerator"], "long-endpoint");
    for (stat, k) in [
        ("time_to_final_ms", "p50"),
        ("time_to_final_ms", "p95"),
        ("reply_wait_ms", "p95"),
        ("first_partial_ms", "p50"),
    ] {
        let (fa, fb) = (
            targets[0][stat][k].as_f64().unwrap(),
            targets[1][stat][k].as_f64().unwrap(),
        );
        let r = ratios["figures"][format!("{stat}.{k}")].as_f64();
        let expected = summary::ratio(fa, fb).expect("A's figure is not 0");
        // Through JSON: equal to the last bits of a double.
        assert!(
            r.is_some_and(|r| (r - expected).abs() <= 1e-9 * expected),
            "{stat}.{k}"
        );
    }
    // Starts interleaved: A0, B0, A1, B1, dialed in that order.
    let dialed = |t: usize, c: usize| targets[t]["timing"][c]["dialed_ms"].as_f64().unwrap();
    let order = [dialed(0, 0), dialed(1, 0), dialed(0, 1), dialed(1, 1)];
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");

    let md = std::fs::read_to_string(dir.path().join("s.md")).expect("markdown written");
    assert!(md.contains("| figure") && md.contains("B/A"), "{md}");
    // Each call closed normally or, on a machine where admission prices the second call
    // just over its budget, was refused at the upgrade (the JSON's count above).
    let refused_a = targets[0]["refused_calls"].as_u64().unwrap_or(0);
    let closed = format!("embedded: close codes 1000 ×{}", 2 - refused_a);
    assert!(md.contains(&closed), "{md}");
    if refused_a > 0 {
        assert!(
            md.contains("embedded: refused at the upgrade 1 of 2 calls"),
            "{md}"
        );
    }
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).expect("plot written");
    assert!(svg.contains("<svg") && svg.contains("long-endpoint: time to final"));
    a_server.shutdown().await.unwrap();
    b_server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_second_server_is_reported_with_its_close_code() {
    let _serial = SERIAL.lock().await;
    let corpus = corpus();
    let a_server = TestServer::start(hark_testkit::moonshine_config(), two_decoders()).await;
    let b_server = TestServer::start(
        config_with_default_backend("fail-start"),
        backends::registry(),
    )
    .await;
    let mut a = args(a_server.ws_url("/api/custom-transcriber"), 1, 6.0);
    a.vs = Some(b_server.ws_url("/api/custom-transcriber"));
    a.burst = true;
    let run = measure_run(&a, &corpus, 1).await.expect("bench runs");
    let (ra, rb) = (&run.targets[0], &run.targets[1]);
    assert_eq!(rb.failed_calls, 1);
    assert_eq!(rb.close_codes.len(), 1);
    assert_eq!(rb.close_codes[0].code, Some(1011));
    assert_eq!(
        rb.close_codes[0].reason,
        "pipeline-error-custom-transcriber-failed"
    );
    // A hung up as the bench does (1000), and the server echoed it.
    assert_eq!(ra.close_codes.len(), 1);
    assert_eq!(ra.close_codes[0].code, Some(1000));
    assert_eq!(ra.transport_errors, 0);
    let ratios = &run.ratios.as_ref().expect("ratios").figures;
    // A failed no call: B's failures have no ratio.
    assert_eq!(ra.failed_calls, 0);
    assert_eq!(ratios["failed_calls"], None);
    let md = summary::markdown(&run);
    assert!(md.contains("close codes 1011 pipeline-error-custom-transcriber-failed ×1"));
    assert!(
        md.contains("call 0: pipeline-error-custom-transcriber-failed"),
        "{md}"
    );
    a_server.shutdown().await.unwrap();
    b_server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_reports_levels_and_a_capacity_plot() {
    let _serial = SERIAL.lock().await;
    let corpus = corpus();
    let server = TestServer::start(hark_testkit::moonshine_config(), two_decoders()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(server.ws_url("/api/custom-transcriber"), 1, 10.0);
    a.find_capacity = true;
    a.ramp = Some(4.0);
    a.max_calls = 2;
    // Generous: this checks the levels, not the machine.
    a.max_p95_ms = 5000.0;
    a.report = Some(dir.path().join("r.json"));
    a.plot = Some(dir.path().join("p.svg"));
    let run = find_capacity(&a, &corpus).await.expect("ramp runs");
    write_outputs(&a, &run).expect("outputs written");
    let cap = run.targets[0].capacity.as_ref().expect("capacity");
    assert_eq!(cap.mode, "ramp");
    let levels: Vec<usize> = cap.levels.iter().map(|l| l.calls).collect();
    assert_eq!(
        levels,
        [1, 2],
        "utterances ended with one and with two calls open"
    );
    assert!(cap.levels.iter().all(|l| l.time_to_final_ms.count > 0));
    assert_eq!(run.targets[0].timing.len(), 2);
    let json = read_json(&dir.path().join("r.json"));
    assert_eq!(json["targets"][0]["capacity"]["levels"][1]["calls"], 2);
    let plot = capacity_plot_path(&dir.path().join("p.svg"));
    assert!(plot.ends_with("p-capacity.svg"));
    let svg = std::fs::read_to_string(&plot).expect("capacity plot written");
    assert!(svg.contains("<svg"));
    server.shutdown().await.unwrap();
}
