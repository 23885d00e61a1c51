//! `hark bench` against real servers on loopback: it measures a healthy call with the real
//! recognizer, and it reports a failing transcriber as failed.

use hark_bench::conversation::{Corpus, default_clips_dir};
use hark_bench::protocol::Channel;
use hark_bench::{BenchArgs, measure};
use hark_testkit::{TestServer, backends, clips, config_with_default_backend, moonshine_registry};

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
    let server = TestServer::start(hark_testkit::moonshine_config(), moonshine_registry()).await;
    let a = args(server.ws_url("/api/custom-transcriber"), 14.0);
    let report = measure(&a, &corpus, 2).await.expect("bench runs");
    assert_eq!(report.failed_calls, 0, "{:?}", report.per_call[0].errors);
    let utterances: Vec<_> = report.per_call.iter().flat_map(|c| &c.utterances).collect();
    // On a slow machine running other tests the second call may be refused at the upgrade
    // (admission): it plays nothing, and the first must still be measured.
    assert!(
        report.refused_calls <= 1,
        "the first call is always admitted"
    );
    let admitted = 2 - report.refused_calls;
    assert!(
        utterances.len() >= 2 * admitted,
        "each admitted call played several turns"
    );
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

/// Runs the `hark-bench` binary as a user does, off the async runtime; the environment's
/// bench credentials are removed first, so only `env` sets them.
async fn hark_bench(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hark-bench"));
    cmd.args(args);
    for var in [
        "HARK_BENCH_SECRET",
        "HARK_BENCH_BEARER",
        "HARK_BENCH_VS_SECRET",
        "HARK_BENCH_VS_BEARER",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("hark-bench runs"))
        .await
        .expect("the command's thread")
}

/// A server that refuses the calls' credentials stops the run at once, before the corpus is
/// loaded (the clips folder given does not exist) and before any table, saying which
/// variable or flag to set; a secret given is never echoed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_the_credentials_stops_the_run_saying_what_to_set() {
    let secret = "s3cret-0123456789abcdef";
    let mut config = config_with_default_backend("recorder");
    config.auth.secret = Some(secret.into());
    let server = TestServer::start(config, backends::registry()).await;
    let url = server.ws_url("/api/custom-transcriber");
    let nowhere = ("HARK_CLIPS_DIR", "/nonexistent/hark-clips");
    let base = ["--url", url.as_str(), "--calls", "1", "--duration", "2"];

    let out = hark_bench(&base, &[nowhere]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    for want in [
        "refused the call with HTTP 401",
        "no credential was given",
        "HARK_BENCH_SECRET",
        "--secret",
        "HARK_BENCH_BEARER",
        "--bearer",
    ] {
        assert!(err.contains(want), "{want:?} not in:\n{err}");
    }
    assert!(out.stdout.is_empty(), "no table of zeros");

    let wrong = "wrong-secret-0123456789";
    let out = hark_bench(&base, &[nowhere, ("HARK_BENCH_SECRET", wrong)]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the secret given (HARK_BENCH_SECRET or --secret) was refused"),
        "{err}"
    );
    assert!(!err.contains(wrong), "the secret is not echoed: {err}");

    // The --vs server's own flags are named for it.
    let out = hark_bench(
        &[&base[..], &["--vs", url.as_str()]].concat(),
        &[nowhere, ("HARK_BENCH_SECRET", secret)],
    )
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HARK_BENCH_VS_SECRET") && err.contains("--vs-bearer"),
        "{err}"
    );

    // With the right secret it goes on to the corpus (here: the folder that is not there).
    let out = hark_bench(&base, &[nowhere, ("HARK_BENCH_SECRET", secret)]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds no speech clips"), "{err}");
    server.shutdown().await.unwrap();
}

/// A URL the server refuses for another reason than being full (here no such profile)
/// stops the run before the corpus is loaded, with the status and the server's words: a run
/// of calls refused for it would measure nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_the_server_refuses_stops_the_run_with_its_status_and_words() {
    let server = TestServer::start(
        config_with_default_backend("recorder"),
        backends::registry(),
    )
    .await;
    let url = server.ws_url("/api/custom-transcriber/no-such-profile");
    let nowhere = ("HARK_CLIPS_DIR", "/nonexistent/hark-clips");
    let out = hark_bench(&["--url", url.as_str(), "--calls", "1"], &[nowhere]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("refused the call with HTTP 404 \"no profile named"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no table");
    server.shutdown().await.unwrap();
}

/// Nothing listening at the URL (a server on another port) stops the run before the corpus
/// is loaded, saying so, rather than print a table of calls that never opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_stops_the_run_saying_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("ws://127.0.0.1:{port}/api/custom-transcriber");
    let nowhere = ("HARK_CLIPS_DIR", "/nonexistent/hark-clips");
    let out = hark_bench(&["--url", url.as_str(), "--calls", "1"], &[nowhere]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&format!("nothing listens at {url}")), "{err}");
    assert!(out.stdout.is_empty(), "no table");
    // An http:// URL is told which scheme the platform's server.url has.
    let http = format!("http://127.0.0.1:{port}/api/custom-transcriber");
    let out = hark_bench(&["--url", http.as_str(), "--calls", "1"], &[nowhere]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("a websocket URL: ws://"), "{err}");
    assert!(out.stdout.is_empty(), "no table");
}

/// `hark bench --calls 0` is refused (a run of no calls prints a table of zeros), and the
/// help names the command as users type it and lists the load shapes.
#[tokio::test]
async fn no_calls_is_refused_and_the_help_says_hark_bench() {
    for flag in ["--calls", "--max-calls"] {
        let out = hark_bench(&[flag, "0"], &[]).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} 0 is refused");
        assert!(err.contains(flag) && err.contains("at least 1"), "{err}");
    }
    let out = hark_bench(&["--help"], &[]).await;
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("Usage: hark bench [OPTIONS]"), "{help}");
    assert!(!help.contains("hark-bench ["), "{help}");
    // The load shapes to run against a deployment (BENCHMARKS.md, "Load shapes").
    for shape in ["--stagger 6", "--stagger 0.1", "--burst", "--ramp 2"] {
        assert!(
            help.contains(shape),
            "the help lacks the shape {shape}: {help}"
        );
    }
}

/// A server at capacity refuses a call at the upgrade (503): the bench counts it as
/// refused, not failed, with the server's status and words, leaves it out of the figures
/// and the per-call rows (a row of zeros would read as a perfect call), and the run did
/// not hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_at_the_upgrade_is_counted_as_refused_not_failed() {
    let corpus = corpus();
    let mut config = config_with_default_backend("recorder");
    config.max_sessions = 1;
    let server = TestServer::start(config, backends::registry()).await;
    let mut a = args(server.ws_url("/api/custom-transcriber"), 5.0);
    a.burst = true;
    let report = measure(&a, &corpus, 2).await.expect("bench runs");
    assert_eq!((report.refused_calls, report.failed_calls), (1, 0));
    let refused = report
        .per_call
        .iter()
        .find(|c| c.refused.is_some())
        .expect("the refused call");
    assert!(refused.utterances.is_empty() && !refused.failed());
    let refusal = refused.refused.as_ref().expect("refused");
    assert_eq!(refusal.status, 503);
    assert!(refusal.body.contains("max_sessions"), "{refusal:?}");
    assert_eq!(report.refusals.len(), 1);
    assert_eq!(
        (report.refusals[0].status, report.refusals[0].count),
        (503, 1)
    );
    // Only the call that opened ended with a close code.
    let closes: usize = report.close_codes.iter().map(|c| c.count).sum();
    assert_eq!(closes, 1, "{:?}", report.close_codes);
    assert!(!report.held(800.0), "a run with a refused call held");

    let table = hark_bench::report::table(
        &report.per_call,
        &report.time_to_final_ms,
        &report.first_partial_ms,
    );
    let row = format!("{:>5} ", refused.call);
    assert!(
        !table.lines().any(|l| l.starts_with(&row)),
        "a row for the refused call:\n{table}"
    );
    assert!(
        table.contains("refused at the upgrade: 1 of 2 calls")
            && table.contains("HTTP 503 ×1: \"hark holds max_sessions"),
        "{table}"
    );
    server.shutdown().await.unwrap();
}

/// A server that admits none of the calls (here full: the one session it holds is taken)
/// makes `hark bench` exit non-zero, saying so with the server's words, though it printed its
/// table: a CI job benchmarking a deploy must not report success on a server that carried
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_calls_were_all_refused_exits_non_zero() {
    clips(); // fetches the clips on first use
    let mut config = config_with_default_backend("recorder");
    config.max_sessions = 1;
    let server = TestServer::start(config, backends::registry()).await;
    let url = server.ws_url("/api/custom-transcriber");
    let mut taken = hark_testkit::connect_admitted(&url, std::time::Duration::from_secs(30)).await;
    taken.start(16_000, 2).await.expect("start frame");
    let clips = default_clips_dir();
    let clips = clips.to_str().expect("a UTF-8 path");
    let out = hark_bench(
        &["--url", url.as_str(), "--calls", "1", "--duration", "5"],
        &[("HARK_CLIPS_DIR", clips)],
    )
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("admitted none of the 1 calls: HTTP 503") && err.contains("max_sessions"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("refused at the upgrade: 1 of 1 calls"),
        "the table says it too"
    );
    drop(taken);
    server.shutdown().await.unwrap();
}

/// A server still loading its recognizer answers 503 "not ready": the bench waits for it,
/// saying so, and then measures, rather than print a row of refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_loading_is_waited_for_then_measured() {
    use std::io::{BufRead, BufReader, Read};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    clips(); // fetches the clips on first use
    let loaded = Arc::new(AtomicBool::new(false));
    let mut registry = backends::registry();
    registry.insert("loading", Arc::new(backends::Gated(loaded.clone())));
    let server = TestServer::start(config_with_default_backend("loading"), registry).await;
    let url = server.ws_url("/api/custom-transcriber");
    let clips = default_clips_dir();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hark-bench"))
        .args(["--url", url.as_str(), "--calls", "1", "--duration", "3"])
        .env("HARK_CLIPS_DIR", &clips)
        .env_remove("HARK_BENCH_SECRET")
        .env_remove("HARK_BENCH_BEARER")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("hark-bench runs");
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = tokio::task::spawn_blocking(move || {
        let mut err = String::new();
        let mut lines = BufReader::new(stderr);
        // Loaded only once the bench has said it waits: it cannot have seen it ready.
        while lines.read_line(&mut err).expect("stderr") > 0 {
            if err.contains("waiting for it") {
                loaded.store(true, Ordering::SeqCst);
                break;
            }
        }
        lines.read_to_string(&mut err).expect("stderr");
        let mut table = String::new();
        BufReader::new(stdout)
            .read_to_string(&mut table)
            .expect("stdout");
        (child.wait().expect("hark-bench ends"), err, table)
    })
    .await
    .expect("the reader's thread");
    let (status, err, table) = out;
    assert!(status.success(), "{err}\n{table}");
    assert!(err.contains("is not ready yet"), "{err}");
    assert!(err.contains("ready after"), "{err}");
    assert!(table.contains("failed calls"), "{table}");
    server.shutdown().await.unwrap();
}
