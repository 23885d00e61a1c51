//! The metrics an operator alerts on: after real calls (served, failed over, failed, refused,
//! and closed for a client error) `/metrics` has the labelled series, every hark series has
//! the label set `hark::metrics::ALL` declares, and the alert rules and the Grafana dashboard
//! in deploy/ name only metrics hark exports.
//!
//! The recorder is process-wide, so this binary runs one server and one test of the calls.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use hark::config::Profile;
use hark::metrics::{ALL, Kind};
use hark::protocol::PIPELINE_FAILED;
use hark_bench::protocol::{ServerMessage, TranscriptType};
use hark_testkit::{Call, TestServer, backends, http_get, start_frame, test_config};

const RATE: u32 = 16_000;
/// Generous: the machine is shared and noisy.
const PROMPT: Duration = Duration::from_secs(20);
/// A profile name only a refused URL carries; it must label nothing.
const PROBED: &str = "probed-profile-name";

/// One sample line of the exposition.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The text format's samples and `# TYPE` lines. hark's label values are plain (no escaped
/// quotes or commas), which the label split relies on.
fn parse(text: &str) -> (Vec<Sample>, BTreeMap<String, String>) {
    let mut samples = Vec::new();
    let mut types = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("series value");
        let value: f64 = value.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.strip_suffix('}').expect("closing brace")),
            None => (series, ""),
        };
        let labels = labels
            .split(',')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once('=').expect("label=value");
                (k.to_string(), v.trim_matches('"').to_string())
            })
            .collect();
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    (samples, types)
}

/// The value of the series `name` with exactly these labels.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples
        .iter()
        .find(|s| s.name == name && s.labels == want)
        .map(|s| s.value)
}

/// The declared metric a series name belongs to (a histogram's by its suffixes).
fn declared(series: &str) -> Option<(&'static str, Kind, &'static [&'static str])> {
    ALL.iter().find_map(|&(name, kind, labels, _)| {
        let matches = if kind == Kind::Histogram {
            ["_bucket", "_sum", "_count"]
                .iter()
                .any(|suffix| series.strip_suffix(suffix) == Some(name))
        } else {
            series == name
        };
        matches.then_some((name, kind, labels))
    })
}

/// Every `hark_…` name in a PromQL expression.
fn hark_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("hark_") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        // Part of a longer identifier (or a label value such as a job name) is not a metric.
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '"') {
            names.push(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    names
}

fn deploy(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The alert rules: each has `for:`, a severity and both annotations; returns their exprs.
fn alert_exprs() -> Vec<String> {
    let rules: serde_json::Value =
        serde_norway::from_str(&deploy("prometheus/hark-alerts.yml")).expect("rules parse");
    let mut exprs = Vec::new();
    let groups = rules["groups"].as_array().expect("groups");
    for rule in groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
    {
        let name = rule["alert"].as_str().expect("every rule is an alert");
        assert!(rule["for"].is_string(), "{name}: no for:");
        let severity = rule["labels"]["severity"].as_str();
        assert!(
            matches!(severity, Some("warning" | "critical")),
            "{name}: severity {severity:?}"
        );
        for key in ["summary", "description"] {
            assert!(
                rule["annotations"][key]
                    .as_str()
                    .is_some_and(|s| !s.is_empty()),
                "{name}: no {key}"
            );
        }
        exprs.push(rule["expr"].as_str().expect("expr").to_string());
    }
    exprs
}

/// The dashboard: a Prometheus datasource variable every panel uses; returns target exprs.
fn dashboard_exprs() -> Vec<String> {
    let dash: serde_json::Value =
        serde_json::from_str(&deploy("grafana/hark-dashboard.json")).expect("dashboard parses");
    let variables = dash["templating"]["list"].as_array().expect("variables");
    assert!(
        variables.iter().any(|v| v["name"] == "datasource"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "no Prometheus datasource variable"
    );
    let mut exprs = Vec::new();
    let panels = dash["panels"].as_array().expect("panels");
    assert!(!panels.is_empty());
    for panel in panels {
        let title = panel["title"].as_str().expect("title");
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}");
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no target");
        for target in targets {
            exprs.push(target["expr"].as_str().expect("expr").to_string());
        }
    }
    for variable in variables.iter().filter(|v| v["type"] == "query") {
        exprs.push(
            variable["definition"]
                .as_str()
                .expect("definition")
                .to_string(),
        );
    }
    exprs
}

/// The HTTP status an upgrade is refused with.
async fn refused(url: &str) -> u16 {
    match Call::connect(url, &[]).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("{url}: {e}"),
        Ok(_) => panic!("{url}: admitted"),
    }
}

/// Streams `secs` of a sawtooth on both channels at once, then waits for the recorder's
/// final on the customer channel covering all of it.
async fn recorded_call(call: &mut Call, secs: f64) {
    let samples: Vec<i16> = (0..(f64::from(RATE) * secs) as usize)
        .map(|n| ((n * 37) % 4000) as i16 - 2000)
        .collect();
    // Paced: the session samples lag every 250 ms, and an unpaced call to the instant
    // recorder can end before the first sample (the lag series then never appears).
    assert!(call.play(&[&samples, &samples], RATE, 20, true).await);
    let want = format!("n={} h=", samples.len());
    let heard = call
        .wait_for(PROMPT, |m| {
            matches!(m, ServerMessage::TranscriberResponse { transcription, transcript_type: TranscriptType::Final, .. } if transcription.starts_with(&want))
        })
        .await;
    assert!(heard, "no final covering the call: {:?}", call.poll());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_leave_labelled_series_and_deploy_files_name_only_exported_metrics() {
    let mut config = test_config();
    config.max_sessions = 1;
    for (name, backend, fallback) in [
        ("default", "recorder", None),
        ("flaky", "fail-after", Some("recorder")),
        ("broken", "fail-start", None),
    ] {
        config.profiles.insert(
            name.into(),
            Profile {
                backend: backend.into(),
                fallback: fallback.into_iter().map(String::from).collect(),
                ..Profile::default()
            },
        );
    }
    let server = TestServer::start(config, backends::registry()).await;
    let url = |profile: &str| server.ws_url(&format!("/api/custom-transcriber/{profile}"));

    // A served call; while it holds the only place, another is refused at capacity.
    let mut call =
        hark_testkit::connect_admitted(&server.ws_url("/api/custom-transcriber"), PROMPT).await;
    call.text(&start_frame(RATE, 2)).await;
    recorded_call(&mut call, 2.0).await;
    assert_eq!(refused(&url("flaky")).await, 503);
    call.hang_up().await;

    // A profile no config names is refused, and its name must label nothing.
    assert_eq!(refused(&url(PROBED)).await, 404);

    // The first backend fails after 0.5 s of audio; the fallback hears the call again.
    let mut call = hark_testkit::connect_admitted(&url("flaky"), PROMPT).await;
    call.text(&start_frame(RATE, 2)).await;
    recorded_call(&mut call, 2.0).await;
    call.hang_up().await;

    // No backend of the chain starts.
    let mut call = hark_testkit::connect_admitted(&url("broken"), PROMPT).await;
    call.text(&start_frame(RATE, 2)).await;
    let got = call.finish(PROMPT).await;
    assert_eq!(got.error().map(|e| e.0).as_deref(), Some(PIPELINE_FAILED));

    // A start frame that is not JSON.
    let mut call =
        hark_testkit::connect_admitted(&server.ws_url("/api/custom-transcriber"), PROMPT).await;
    call.text("{not json").await;
    let got = call.finish(PROMPT).await;
    assert_eq!(
        got.error().map(|e| e.0).as_deref(),
        Some("invalid-start-frame")
    );

    let (status, text) = http_get(server.addr, "/metrics", &[]).await;
    assert_eq!(status, 200, "{text}");
    let (_, body) = text.split_once("\r\n\r\n").expect("headers end");
    let (samples, types) = parse(body);
    let has = |name: &str, labels: &[(&str, &str)], at_least: f64| {
        let v = value(&samples, name, labels)
            .unwrap_or_else(|| panic!("/metrics lacks {name}{labels:?}:\n{text}"));
        assert!(v >= at_least, "{name}{labels:?} = {v}");
    };
    for (profile, backend) in [
        ("default", "recorder"),
        ("flaky", "fail-after"),
        ("broken", "fail-start"),
    ] {
        has(
            "hark_sessions_total",
            &[("profile", profile), ("backend", backend)],
            1.0,
        );
        has(
            "hark_sessions_active",
            &[("profile", profile), ("backend", backend)],
            0.0,
        );
    }
    has(
        "hark_session_failures_total",
        &[
            ("profile", "broken"),
            ("backend", "fail-start"),
            ("reason", "backend-start"),
        ],
        1.0,
    );
    has(
        "hark_client_errors_total",
        &[
            ("profile", "default"),
            ("backend", "recorder"),
            ("code", "invalid-start-frame"),
        ],
        1.0,
    );
    has(
        "hark_rejected_upgrades_total",
        &[("reason", "capacity")],
        1.0,
    );
    has(
        "hark_rejected_upgrades_total",
        &[("reason", "unknown-profile")],
        1.0,
    );
    // At least the default call's 2 s: audio counts as it arrives, for the backend
    // carrying the channel then (the flaky call's may count for either of its two).
    for channel in ["customer", "assistant"] {
        has(
            "hark_audio_seconds_total",
            &[("backend", "recorder"), ("channel", channel)],
            2.0,
        );
        has(
            "hark_recognizer_lag_seconds_count",
            &[("backend", "recorder"), ("channel", channel)],
            1.0,
        );
    }
    has(
        "hark_transcripts_total",
        &[("backend", "recorder"), ("type", "final")],
        2.0,
    );
    has(
        "hark_backend_failovers_total",
        &[("from", "fail-after"), ("to", "recorder")],
        1.0,
    );
    has("hark_ready", &[], 1.0);
    has("hark_sessions_max", &[], 1.0);
    has(
        "hark_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    has("hark_backend_ready", &[("backend", "recorder")], 1.0);
    assert!(
        !text.contains(PROBED),
        "a refused URL's profile name labels a series:\n{text}"
    );

    // Every hark series is declared, with its kind and exactly its declared labels.
    let mut exposed = BTreeSet::new();
    for s in samples.iter().filter(|s| s.name.starts_with("hark_")) {
        let (name, kind, labels) =
            declared(&s.name).unwrap_or_else(|| panic!("{} is not in hark::metrics::ALL", s.name));
        let expected_type = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        assert_eq!(
            types.get(name).map(String::as_str),
            Some(expected_type),
            "{name}"
        );
        let mut got: Vec<&str> = s.labels.keys().map(String::as_str).collect();
        got.retain(|l| !(kind == Kind::Histogram && *l == "le"));
        let mut want = labels.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "{}: labels", s.name);
        exposed.insert(s.name.clone());
    }

    // The alert rules and the dashboard name only metrics hark declares, with a histogram's
    // suffixes where they need one; the calls above exposed each of theirs that these test
    // backends can produce (the embedded recognizer's and providers' need those backends).
    let exprs: Vec<String> = alert_exprs().into_iter().chain(dashboard_exprs()).collect();
    let mut used = BTreeSet::new();
    for expr in &exprs {
        for name in hark_names(expr) {
            // A histogram's bare name matches nothing: it needs _bucket, _sum or _count.
            declared(&name).unwrap_or_else(|| {
                panic!("{name} (in {expr:?}) is no series hark exports (histograms need a suffix)")
            });
            used.insert(name);
        }
    }
    for must in [
        "hark_sessions_total",
        "hark_sessions_active",
        "hark_session_failures_total",
        "hark_client_errors_total",
        "hark_rejected_upgrades_total",
        "hark_audio_seconds_total",
        "hark_recognizer_lag_seconds_bucket",
        "hark_time_to_final_seconds_bucket",
        "hark_decode_starved_seconds_sum",
        "hark_provider_errors_total",
        "hark_backend_failovers_total",
        "hark_ready",
        "hark_shed_step",
        "hark_shed_decodes_total",
        "hark_decode_batch_size_bucket",
    ] {
        assert!(
            used.contains(must),
            "neither the rules nor the dashboard use {must}"
        );
    }
    for name in &used {
        let only_with = [
            "hark_time_to_final",
            "hark_decode",
            "hark_shed",
            "hark_provider_errors",
            "hark_backend_reconnects",
            // Only the embedded recognizer counts turn decisions.
            "hark_turn",
            // Only once a riva backend has cooled.
            "hark_backend_cooldowns",
        ];
        if !only_with.iter().any(|p| name.starts_with(p)) {
            assert!(
                exposed.contains(name),
                "{name} is used but was not exposed:\n{text}"
            );
        }
    }
    server.shutdown().await.unwrap();
}

#[test]
fn names_are_found_in_promql() {
    assert_eq!(
        hark_names(r#"sum by (x) (rate(hark_a_total{job="hark_b"}[5m])) / hark_c_sum"#),
        ["hark_a_total", "hark_c_sum"]
    );
    assert!(hark_names("up{job=\"hark\"} == 0").is_empty());
}

/// Prometheus's own checker (Debian's `prometheus` package ships it; the README's test
/// command, scripts/test, installs it). A missing promtool fails the test rather than
/// skipping it: the parse above is ours, promtool is the real reader of the file.
#[test]
fn promtool_accepts_the_rules() {
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/hark-alerts.yml");
    let out = std::process::Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
        .unwrap_or_else(|e| {
            panic!("promtool not run ({e}): scripts/test installs it (apt-get install prometheus)")
        });
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
