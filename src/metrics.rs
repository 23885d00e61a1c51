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
pub const EVICTED_CONNECTIONS: &str = "hark_evicted_connections_total";
pub const AUDIO_SECONDS: &str = "hark_audio_seconds_total";
pub const TRANSCRIPTS: &str = "hark_transcripts_total";
pub const RECOGNIZER_LAG: &str = "hark_recognizer_lag_seconds";
pub const FALLBACKS: &str = "hark_backend_fallbacks_total";
pub const FRAME_TO_RECOGNIZER: &str = "hark_frame_to_recognizer_seconds";
pub const EVENT_TO_SOCKET: &str = "hark_event_to_socket_seconds";
pub const TIME_TO_FINAL: &str = "hark_time_to_final_seconds";
pub const DECODE_SECONDS: &str = "hark_decode_seconds";
pub const DECODE_WAIT: &str = "hark_decode_wait_seconds";
pub const DECODE_BATCH: &str = "hark_decode_batch_size";
pub const DECODE_STARVED: &str = "hark_decode_starved_seconds";
pub const BACKEND_CHANNELS: &str = "hark_backend_channels_total";
pub const RECONNECTS: &str = "hark_backend_reconnects_total";
pub const FAILOVERS: &str = "hark_backend_failovers_total";
pub const PROVIDER_ERRORS: &str = "hark_provider_errors_total";
pub const FAILOVER_GAP: &str = "hark_failover_gap_seconds";
pub const REPLAY_SECONDS: &str = "hark_replay_seconds";
pub const CATCH_UP_SKIPPED: &str = "hark_catch_up_skipped_seconds";
pub const DECODER_LOAD: &str = "hark_decoder_load";
pub const DECODE_COST_CORRECTION: &str = "hark_decode_cost_correction";
pub const SHED_STEP: &str = "hark_shed_step";
pub const SHED_SECONDS: &str = "hark_shed_seconds_total";
pub const SHED_DECODES: &str = "hark_shed_decodes_total";
pub const TURN_SECONDS: &str = "hark_turn_model_seconds";
pub const TURN_VERDICTS: &str = "hark_turn_verdicts_total";
pub const TURN_ENDS: &str = "hark_turn_ends_total";
pub const TURN_HOLDS: &str = "hark_turn_holds_total";
pub const TURN_ENDS_RESUMED: &str = "hark_turn_ends_resumed_total";
pub const FINAL_RECOVERIES: &str = "hark_final_recoveries_total";
pub const READY: &str = "hark_ready";
pub const BACKEND_READY: &str = "hark_backend_ready";
pub const BACKEND_COOLDOWNS: &str = "hark_backend_cooldowns_total";
pub const SESSIONS_MAX: &str = "hark_sessions_max";
pub const BUILD_INFO: &str = "hark_build_info";

/// What a metric is, as Prometheus types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every metric hark exports: name, kind, labels and help. Alert rules and dashboards are
/// checked against this list (tests/server/metrics.rs), so it is the one place names change.
pub const ALL: &[(&str, Kind, &[&str], &str)] = &[
    (
        SESSIONS_ACTIVE,
        Kind::Gauge,
        &["profile", "backend"],
        "Calls being transcribed now, by profile and the profile's first backend.",
    ),
    (
        SESSIONS_TOTAL,
        Kind::Counter,
        &["profile", "backend"],
        "Calls accepted, by profile and the profile's first backend.",
    ),
    (
        SESSIONS_PENDING,
        Kind::Gauge,
        &[],
        "Upgraded calls waiting for their start frame (max_pending_starts).",
    ),
    (
        REFUSED_CONNECTIONS,
        Kind::Counter,
        &[],
        "TCP connections closed at accept because max_connections were all still being set up.",
    ),
    (
        EVICTED_CONNECTIONS,
        Kind::Counter,
        &[],
        "Connections that were not calls (slow or idle requests) closed, oldest first, to make room for a new one at max_connections.",
    ),
    (
        SESSIONS_MAX,
        Kind::Gauge,
        &[],
        "Calls this instance accepts at once (max_sessions).",
    ),
    (
        BUILD_INFO,
        Kind::Gauge,
        &["version"],
        "Always 1; its label is the hark version this instance runs.",
    ),
    (
        SESSION_FAILURES,
        Kind::Counter,
        &["profile", "backend", "reason"],
        "Calls ended with pipeline-error-custom-transcriber-failed, by reason: backend-start (no backend of the chain started), backend-error (the last one failed), lag (it fell behind past max_lag).",
    ),
    (
        CLIENT_ERRORS,
        Kind::Counter,
        &["profile", "backend", "code"],
        "Calls closed for a client mistake, by the error code sent.",
    ),
    (
        REJECTED_UPGRADES,
        Kind::Counter,
        &["reason"],
        "Upgrade requests refused before the websocket opened, by reason (unauthorized, unknown-profile, bad-query, shutting-down, not-ready, capacity: max_sessions, pending-capacity: max_pending_starts, and the first backend's headroom refusals, one label each: headroom-wave (a wave of first finals would miss its budget), headroom-average (the load once settled would pass max_load), headroom-backlog (a final is waiting too long now), headroom-exhausted (the shedding ladder has nothing left), headroom-not-loaded; headroom: a backend that gives no reason).",
    ),
    (
        AUDIO_SECONDS,
        Kind::Counter,
        &["backend", "channel"],
        "Seconds of audio received for transcribed channels, by the backend carrying the channel.",
    ),
    (
        TRANSCRIPTS,
        Kind::Counter,
        &["backend", "type"],
        "Transcripts sent, by backend and type (partial, final).",
    ),
    (
        RECOGNIZER_LAG,
        Kind::Histogram,
        &["backend", "channel"],
        "How far a channel's recognizer is behind real time, sampled every 250 ms.",
    ),
    (
        FALLBACKS,
        Kind::Counter,
        &["backend"],
        "Channels moved to a fallback backend, by the backend.",
    ),
    (
        BACKEND_CHANNELS,
        Kind::Counter,
        &["backend"],
        "Call channels a backend started recognising (a reconnect is not counted again).",
    ),
    (
        RECONNECTS,
        Kind::Counter,
        &["backend"],
        "In-call reconnects to the same backend after a dropped or failed connection.",
    ),
    (
        FAILOVERS,
        Kind::Counter,
        &["from", "to"],
        "Channels moved from one backend to the next, by both.",
    ),
    (
        PROVIDER_ERRORS,
        Kind::Counter,
        &["backend", "code"],
        "Errors from network recognizers, by backend and code, from a fixed set: connect, connect-timeout, http-400/401/402/403/404/408/429/500/502/503/504, http-4xx, http-5xx, http-other, close-1000..close-1015, close-3xxx, close-4xxx, close-other, error (a provider's error message), stall, connection-lost; riva: grpc-<status> (e.g. grpc-unavailable, grpc-resource-exhausted), ended (the server ended a stream unasked).",
    ),
    (
        BACKEND_COOLDOWNS,
        Kind::Counter,
        &["backend"],
        "Times a riva backend took no new streams for its cooldown_ms (reported not ready meanwhile): its server answered RESOURCE_EXHAUSTED, or three streams in a row failed unanswered soon after opening.",
    ),
    (
        READY,
        Kind::Gauge,
        &[],
        "1 while the default profile's backend is ready and the server is not shutting down, else 0 (/readyz also answers 503 at capacity; this does not); set at each scrape.",
    ),
    (
        BACKEND_READY,
        Kind::Gauge,
        &["backend"],
        "1 while a configured backend can take calls, else 0; set at each scrape.",
    ),
    (
        DECODER_LOAD,
        Kind::Gauge,
        &[],
        "Share of the embedded recognizer's decoder time that finals and speculative decodes took lately (1 = all); admission refuses calls that would take it over the engine's max_load (whisper.max_load, moonshine.max_load).",
    ),
    (
        DECODE_COST_CORRECTION,
        Kind::Gauge,
        &["model"],
        "How much slower (above 1) or faster the embedded recognizer's decodes run now than its calibration at start, by model (partials, finals): what admission and the ladder price every decode at.",
    ),
    (
        SHED_STEP,
        Kind::Gauge,
        &[],
        "What the embedded recognizer sheds while finals are late: 0 nothing, 1 the finals' beam search, 2 and partials, 3 and finals' left context, 4 and the finals' model (finals by the partials' model), 5 and speculative decodes.",
    ),
    (
        SHED_SECONDS,
        Kind::Counter,
        &["step"],
        "Seconds the embedded recognizer spent shedding, by the highest step shed (partials, context, finals_model, speculative).",
    ),
    (
        SHED_DECODES,
        Kind::Counter,
        &["what", "why"],
        "Speculative decodes left out (what=speculative), pauses' judges left out (judge: the pause's own decode judges it), finals decoded with less left context than their span (context) and finals decoded by the partials' model (finals_model), by why: late (the shedding ladder), load (the essential load averaged over 10 s), queued (finals waiting behind it), long (the finals' model would not have it ready within 600 ms of the endpoint, even alone), due (it waited for a decoder until only the partials' model would have it ready by then).",
    ),
    (
        REPLAY_SECONDS,
        Kind::Histogram,
        &["backend"],
        "Audio a new attempt (reconnect or fallback) was handed again because no final covered it, per attempt, by the backend taking it; apart from lag.",
    ),
    (
        CATCH_UP_SKIPPED,
        Kind::Histogram,
        &["backend"],
        "Silence a network backend left out of a long pause while it caught up after a reconnect or failover, per pause cut, by backend.",
    ),
    (
        FAILOVER_GAP,
        Kind::Histogram,
        &["backend"],
        "From the last transcript before a backend failed to the first one after it.",
    ),
    (
        FRAME_TO_RECOGNIZER,
        Kind::Histogram,
        &[],
        "From a frame's arrival on the socket to its samples being taken by the recognizer.",
    ),
    (
        EVENT_TO_SOCKET,
        Kind::Histogram,
        &["backend"],
        "From a recognizer reporting a transcript (a provider's message, for network backends) to its message being written to the socket, by backend.",
    ),
    (
        TIME_TO_FINAL,
        Kind::Histogram,
        &["backend"],
        "From the end of an utterance's voice to its final being reported, as the recognizer sees it (embedded recognizer).",
    ),
    (
        DECODE_SECONDS,
        Kind::Histogram,
        &["kind", "model"],
        "Time the embedded recognizer spent per decode (a batch's time for each of its decodes), by kind (final, speculative, partial) and model (the partials' or the finals').",
    ),
    (
        DECODE_BATCH,
        Kind::Histogram,
        &[],
        "Utterances the embedded recognizer decoded together in one batch (1: alone).",
    ),
    (
        DECODE_WAIT,
        Kind::Histogram,
        &["kind"],
        "From a decode becoming wanted to it starting, by kind: queueing for the recognizer.",
    ),
    (
        DECODE_STARVED,
        Kind::Histogram,
        &["kind"],
        "Time a decoder thread was runnable but waiting for a CPU during one decode (run-queue wait from /proc/thread-self/schedstat; decoders run SCHED_IDLE, so other load on the box starves them). The _sum is the total.",
    ),
    (
        TURN_SECONDS,
        Kind::Histogram,
        &[],
        "Time the end-of-turn model spent per verdict on a customer's pause.",
    ),
    (
        FINAL_RECOVERIES,
        Kind::Counter,
        &["how"],
        "Embedded recognizer's utterances whose first decode as a final heard no words, by how the final was found: retried (a retry alone, after more silence, had words), partial (the last partial went as the final), sound (the recognizer heard a sound, not speech; nothing was sent), wordless (nothing had words; nothing was sent).",
    ),
    (
        TURN_VERDICTS,
        Kind::Counter,
        &["verdict"],
        "End-of-turn verdicts on customers' finals: complete, incomplete, or failed (the final went as the recognizer wrote it).",
    ),
    (
        TURN_ENDS,
        Kind::Counter,
        &["channel", "after"],
        "Embedded recognizer's utterances closed as the end of the speaker's turn (the final ends in . ? !), by what closed them: endpoint (the endpoint, or a wait graded by the judge's doubt, with no hold), sooner (min_turn_silence_ms: the judge read the pause at least end_of_turn_quick_threshold sure) or hold (a pause held as unfinished ran out).",
    ),
    (
        TURN_HOLDS,
        Kind::Counter,
        &["channel", "outcome", "by"],
        "Embedded recognizer's pauses held open past the endpoint because the words or the judge said the turn goes on, by outcome: joined (the speaker went on; one final for both sides) or ended (the utterance closed); and by the judge that held them: words (they go on), sentence_end (Whisper's sentence-end probability read by the partials' model at the pause), sentence_end_decode (the same read by the pause's own decode, the judge shed), model (the end-of-turn model), graded (the wait graded by the doubt).",
    ),
    (
        TURN_ENDS_RESUMED,
        Kind::Counter,
        &["channel"],
        "Embedded recognizer's turn ends after which the same speaker spoke again within the turn gap (1.5 s): the platform may have answered a caller who was only pausing. An upper estimate of premature turn ends; divide by hark_turn_ends_total.",
    ),
];

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
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        metrics_exporter_prometheus::Matcher::Full(DECODE_BATCH.into()),
                        &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0],
                    )
                })
                // Fails only on an empty bucket list, and these are constants: every test
                // that renders the metrics would stop here.
                .expect("the histogram bucket lists are constant and not empty")
                .upkeep_timeout(Duration::from_secs(5))
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
    for &(name, kind, _, help) in ALL {
        match kind {
            Kind::Counter => metrics::describe_counter!(name, help),
            Kind::Gauge => metrics::describe_gauge!(name, help),
            Kind::Histogram => metrics::describe_histogram!(name, help),
        }
    }
}

/// This thread's time runnable but waiting for a CPU since it started (Linux
/// schedstat); `None` where the file is missing or unreadable, so callers just skip it.
pub fn thread_run_queue_wait() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat_wait(&text)
}

/// The second field of a schedstat line: run-queue wait in nanoseconds.
fn parse_schedstat_wait(text: &str) -> Option<Duration> {
    let ns = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_wait_is_the_second_field() {
        assert_eq!(
            parse_schedstat_wait("1234 5678 9\n"),
            Some(Duration::from_nanos(5678))
        );
        assert_eq!(parse_schedstat_wait("1234"), None);
        assert_eq!(parse_schedstat_wait("1234 x 9"), None);
        assert_eq!(parse_schedstat_wait(""), None);
    }

    #[test]
    fn run_queue_wait_reads_where_the_kernel_has_schedstats() {
        // Kernels without schedstats have no file; the metric is then just absent.
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            let before = thread_run_queue_wait().expect("this kernel's schedstat parses");
            std::thread::yield_now();
            let after = thread_run_queue_wait().expect("this kernel's schedstat parses");
            assert!(after >= before, "{before:?} then {after:?}");
        }
    }

    #[test]
    fn every_metric_is_named_once_in_prometheus_style() {
        let mut names: Vec<&str> = ALL.iter().map(|m| m.0).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a metric listed twice");
        for &(name, kind, _, _) in ALL {
            assert!(name.starts_with("hark_"), "{name}");
            assert_eq!(
                name.ends_with("_total"),
                kind == Kind::Counter,
                "{name}: counters, and only counters, end in _total"
            );
        }
    }
}
