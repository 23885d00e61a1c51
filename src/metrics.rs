//! Prometheus metrics. One process-wide recorder (the `metrics` facade allows one), rendered
//! by `GET /metrics`. Metric names live here so dashboards have one place to look.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub const SESSIONS_ACTIVE: &str = "hark_sessions_active";
pub const SESSIONS_TOTAL: &str = "hark_sessions_total";
pub const SESSIONS_PENDING: &str = "hark_sessions_pending";
pub const SESSION_FAILURES: &str = "hark_session_failures_total";
pub const CLIENT_ERRORS: &str = "hark_client_errors_total";
pub const REJECTED_UPGRADES: &str = "hark_rejected_upgrades_total";
pub const REFUSED_CONNECTIONS: &str = "hark_refused_connections_total";
pub const AUDIO_SECONDS: &str = "hark_audio_seconds_total";
pub const TRANSCRIPTS: &str = "hark_transcripts_total";
pub const RECOGNIZER_LAG: &str = "hark_recognizer_lag_seconds";
pub const FALLBACKS: &str = "hark_backend_fallbacks_total";
pub const FRAME_TO_RECOGNIZER: &str = "hark_frame_to_recognizer_seconds";
pub const EVENT_TO_SOCKET: &str = "hark_event_to_socket_seconds";
pub const TIME_TO_FINAL: &str = "hark_time_to_final_seconds";
pub const DECODE_SECONDS: &str = "hark_decode_seconds";
pub const DECODE_WAIT: &str = "hark_decode_wait_seconds";
pub const BACKEND_CHANNELS: &str = "hark_backend_channels_total";
pub const RECONNECTS: &str = "hark_backend_reconnects_total";
pub const FAILOVERS: &str = "hark_backend_failovers_total";
pub const PROVIDER_ERRORS: &str = "hark_provider_errors_total";
pub const FAILOVER_GAP: &str = "hark_failover_gap_seconds";
pub const DECODER_LOAD: &str = "hark_decoder_load";
pub const TURN_SECONDS: &str = "hark_turn_model_seconds";
pub const TURN_VERDICTS: &str = "hark_turn_verdicts_total";

/// How often histogram samples are folded into buckets when nobody scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Installs the recorder on first use and returns the handle that renders it.
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.0025, 0.005, 0.01, 0.025,
                    0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.0, 4.0, 8.0,
                ])
                .map(|b| b.upkeep_timeout(Duration::from_secs(5)))
                .unwrap_or_else(|_| PrometheusBuilder::new())
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first (an embedding program's).
            let _ = metrics::set_global_recorder(recorder);
            spawn_upkeep(handle.clone());
            describe();
            handle
        })
        .clone()
}

/// Histograms keep every sample until upkeep folds it into the buckets; without a scrape,
/// nothing else runs upkeep and the samples pile up (a few MB per hundred calls).
fn spawn_upkeep(handle: PrometheusHandle) {
    let _ = std::thread::Builder::new()
        .name("hark-metrics".into())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                handle.run_upkeep();
            }
        });
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(SESSIONS_ACTIVE, "Calls being transcribed now.");
    describe_counter!(SESSIONS_TOTAL, "Calls accepted, by profile.");
    describe_gauge!(
        SESSIONS_PENDING,
        "Upgraded calls waiting for their start frame."
    );
    describe_counter!(
        REFUSED_CONNECTIONS,
        "TCP connections closed at accept because max_connections were open."
    );
    describe_counter!(
        SESSION_FAILURES,
        "Calls ended with pipeline-error-custom-transcriber-failed, by reason."
    );
    describe_counter!(CLIENT_ERRORS, "Calls closed for a client mistake, by code.");
    describe_counter!(
        REJECTED_UPGRADES,
        "Upgrade requests refused before the websocket opened, by reason."
    );
    describe_counter!(AUDIO_SECONDS, "Seconds of audio received, by channel.");
    describe_counter!(TRANSCRIPTS, "Transcripts sent, by type.");
    describe_histogram!(
        RECOGNIZER_LAG,
        "How far a channel's recognizer is behind real time, sampled every 250 ms."
    );
    describe_counter!(
        FALLBACKS,
        "Channels moved to a fallback backend, by the backend."
    );
    describe_counter!(
        BACKEND_CHANNELS,
        "Call channels a backend started recognising (a reconnect is not counted again)."
    );
    describe_counter!(
        RECONNECTS,
        "In-call reconnects to the same backend after a dropped or failed connection."
    );
    describe_counter!(
        FAILOVERS,
        "Channels moved from one backend to the next, by both."
    );
    describe_counter!(
        PROVIDER_ERRORS,
        "Errors from network recognizers, by backend and code (HTTP status, close code, error)."
    );
    describe_gauge!(
        DECODER_LOAD,
        "Share of the embedded recognizer's decoder time that finals and speculative decodes took lately (1 = all); admission refuses calls that would take it over moonshine.max_load."
    );
    describe_histogram!(
        FAILOVER_GAP,
        "From the last transcript before a backend failed to the first one after it."
    );
    describe_histogram!(
        FRAME_TO_RECOGNIZER,
        "From a frame's arrival on the socket to its samples being taken by the recognizer."
    );
    describe_histogram!(
        EVENT_TO_SOCKET,
        "From a recognizer reporting a transcript (a provider's message, for network backends) to its message being written to the socket, by backend."
    );
    describe_histogram!(
        TIME_TO_FINAL,
        "From the end of an utterance's voice to its final being reported, as the recognizer sees it."
    );
    describe_histogram!(
        DECODE_SECONDS,
        "Time the embedded recognizer spent per decode, by kind (final, speculative, partial)."
    );
    describe_histogram!(
        TURN_SECONDS,
        "Time the end-of-turn model spent per verdict on a customer's pause."
    );
    describe_counter!(
        TURN_VERDICTS,
        "End-of-turn verdicts on customers' finals: complete, incomplete, or failed (the final went as the recognizer wrote it)."
    );
    describe_histogram!(
        DECODE_WAIT,
        "From a decode becoming wanted to it starting, by kind: queueing for the recognizer."
    );
}
