//! Relays under slow providers: a Riva that processes at real time, and a
//! Deepgram and an AssemblyAI that answer late under load, each with a fault while hark is
//! replaying the unsettled audio to the next connection. Every word spoken reaches the
//! client exactly once, and each new connection hears the audio from just after the last
//! word the provider finalized: hark settles by what the provider says it processed, not by
//! what hark sent it.

use std::time::Duration;

use hark_bench::protocol::Channel;
use hark_testkit::provider_mock::{Connection, Fault, Load, MockProvider, Provider};
use hark_testkit::riva_mock::{RivaFault, RivaMock, RivaOptions, RivaStream};
use hark_testkit::{Call, TestServer, test_config, words};
use tonic::Code;

use super::relay::{backend_config, final_words, is_final_with, mock, server, spoken};

/// Longest wait for a call's last final after its audio: a slow provider's answers trail the
/// audio by its backlog.
const LAST_FINAL_WAIT: Duration = Duration::from_secs(20);

/// Plays `audio` (one channel, real time) to `url`, waits (bounded) for the final holding
/// `last`, hangs up and checks the call: that final came, no error, and the client got every
/// word of `said` exactly once.
async fn play_every_word_once(
    what: &str,
    url: &str,
    audio: &[i16],
    rate: u32,
    last: &'static str,
    said: &[&str],
) {
    let mut call = Call::open(url, rate, 1).await.expect("call opens");
    assert!(
        call.play(&[audio], rate, 20, true).await,
        "server took the audio"
    );
    let came = call
        .wait_for(LAST_FINAL_WAIT, is_final_with(Channel::Customer, last))
        .await;
    let got = call.hang_up().await;
    assert!(came, "{what}: no last final: {got:?}");
    assert!(got.error().is_none(), "{what}: {:?}", got.error());
    assert_eq!(
        final_words(&got, Channel::Customer),
        spoken(said),
        "{what}: every word once"
    );
}

/// Speech of `parts`: (sentence, silence after it in ms), after 200 ms of silence.
fn speech(parts: &[(&str, u32)], rate: u32) -> Vec<i16> {
    let mut out = words::silence(rate, 200);
    for (sentence, pause) in parts {
        out.extend(words::sentence(sentence, rate));
        out.extend(words::silence(rate, *pause));
    }
    out
}

/// Each connection (or stream), in the order they opened, heard the speech from just after
/// the last word that earlier ones finalized: the replay started where the provider's finals
/// ended, neither later (a word lost) nor earlier (a word heard again and doubled).
fn assert_replays_start_at_the_last_final(
    what: &str,
    said: &[String],
    heard_and_finalized: &[(Vec<String>, Vec<String>)],
) {
    let mut finalized = 0;
    for (k, (heard, finals)) in heard_and_finalized.iter().enumerate() {
        let from = said.get(finalized..).unwrap_or_default();
        assert!(
            from.starts_with(heard) || heard.starts_with(from),
            "{what}: connection {k} heard {heard:?}, but the words after the last final were {from:?}"
        );
        finalized += finals.len();
    }
}

/// A Deepgram or AssemblyAI mock answering late by `load`, and a server relaying one channel
/// to it, with the stall bound above the provider's lateness: late is not stalled.
async fn late_provider(provider: Provider, load: Load) -> (MockProvider, TestServer) {
    let m = mock(provider).await;
    m.set_load(Some(load));
    let config = backend_config(&m, provider, "stall_timeout_ms = 8000");
    let server = server(&[("net", config)], &["net"], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    (m, server)
}

/// The provider's close for an error of its own, `after` seconds into a connection.
fn error_close(provider: Provider, after: f64) -> Fault {
    match provider {
        Provider::Deepgram => Fault::CloseAfter(after, 1011, "NET-0000"),
        Provider::AssemblyAi => Fault::CloseAfter(after, 3005, "Internal server error"),
    }
}

fn record(c: &Connection) -> (Vec<String>, Vec<String>) {
    (c.words_heard.clone(), c.words_sent_final.clone())
}

fn stream_record(s: &RivaStream) -> (Vec<String>, Vec<String>) {
    (s.words_heard.clone(), s.words_sent_final.clone())
}

/// A Deepgram or AssemblyAI that answers 2.5 s late drops the connection just after its
/// (late) final of one sentence arrived and before its final of the next, short one did;
/// the reconnect's replay is cut by an error close half a second in, and a third connection
/// carries the call. hark must not take the late final, followed by a quiet moment, as the
/// provider having heard everything sent up to a second ago: the short sentence it had not
/// answered yet would be settled, left out of the replay and lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_provider_settles_only_what_it_finalized_through_a_fault_mid_replay() {
    let runs = [Provider::Deepgram, Provider::AssemblyAi].map(|provider| async move {
        let what = format!("{provider:?}");
        let (m, server) = late_provider(
            provider,
            Load {
                base: Duration::from_millis(2_500),
                per_stream: Duration::ZERO,
                capacity: 10.0,
            },
        )
        .await;
        let rate = 16_000;
        // "hello alpha bravo" ends at 1.0 s, its final is due at about 3.8 s; "charlie
        // delta" (1.8–2.3 s) is answered from about 4.3 s on, its final at about 5.1 s. The
        // first connection drops at 4.5 s of audio, in the quiet between.
        let parts = [
            ("hello alpha bravo", 700),
            ("charlie delta", 3_500),
            ("echo foxtrot golf", 1_000),
        ];
        let audio = speech(&parts, rate);
        m.script(vec![Fault::DropAfter(4.5), error_close(provider, 0.5)]);
        let url = server.ws_url("/api/custom-transcriber/p");
        let said: Vec<&str> = parts.iter().map(|(s, _)| *s).collect();
        play_every_word_once(&what, &url, &audio, rate, "golf", &said).await;
        let conns = m.connections();
        assert_eq!(
            conns.len(),
            3,
            "{what}: a reconnect, and one after the cut replay"
        );
        assert!(
            conns.iter().all(|c| c.violations.is_empty()),
            "{what}: {conns:?}"
        );
        assert!(
            conns[0].max_answer_delay >= Duration::from_millis(2_500),
            "{what}: the provider was late: {:?}",
            conns[0].max_answer_delay
        );
        // The cut replay finalized nothing; both replays began after "bravo".
        assert!(
            conns[1].words_sent_final.is_empty(),
            "{what}: {:?}",
            conns[1]
        );
        let records: Vec<_> = conns.iter().map(record).collect();
        assert_replays_start_at_the_last_final(&what, &spoken(&said), &records);
        server.shutdown().await.unwrap();
    });
    futures_util::future::join_all(runs).await;
}

/// Several calls at once on one provider that shares a finite speed among its streams and
/// answers later the more streams it holds; every call's connection drops mid-sentence and
/// its reconnect's replay is cut, so each call lives through a fault mid-replay on a
/// provider whose answers trail the audio. No call fails, no word is lost or doubled, and
/// every replay starts where the provider's finals ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_a_provider_late_under_load_lose_and_double_nothing() {
    const CALLS: usize = 3;
    let runs = [Provider::Deepgram, Provider::AssemblyAi].map(|provider| async move {
        let what = format!("{provider:?}");
        // Three streams: each answer about 1.5 s + 2 × 0.25 s late, more while a replay
        // (sent at the provider's ingest pace) is ahead of what the mock has processed.
        let (m, server) = late_provider(
            provider,
            Load {
                base: Duration::from_millis(1_500),
                per_stream: Duration::from_millis(250),
                capacity: 4.0,
            },
        )
        .await;
        let rate = 16_000;
        let parts = [
            ("hello alpha bravo", 700),
            ("charlie delta echo foxtrot", 700),
            ("golf hotel india", 700),
            ("juliet kilo lima mike", 1_000),
        ];
        let said: Vec<&str> = parts.iter().map(|(s, _)| *s).collect();
        let audio = speech(&parts, rate);
        let calls = (0..CALLS).map(|i| {
            let (m, server, audio, what, said) = (&m, &server, &audio, &what, &said);
            async move {
                let tag = format!("call{i}");
                // The call's tag reaches the provider as its keyterm, so each call's
                // connections take their own script.
                let (name, value) = match provider {
                    Provider::Deepgram => ("keyterm", tag.clone()),
                    Provider::AssemblyAi => ("keyterms_prompt", format!("[\"{tag}\"]")),
                };
                // Mid-sentence, a different word for each call.
                let at = 2.2 + 0.3 * i as f64;
                let faults = vec![Fault::DropAfter(at), error_close(provider, 0.6)];
                m.script_for(name, &value, faults);
                let url = server.ws_url(&format!("/api/custom-transcriber/p?keyterms={tag}"));
                let what = format!("{what} {tag}");
                play_every_word_once(&what, &url, audio, rate, "mike", said).await;
                let mine: Vec<Connection> = m
                    .connections()
                    .into_iter()
                    .filter(|c| c.query.iter().any(|(k, v)| *k == name && *v == value))
                    .collect();
                assert_eq!(mine.len(), 3, "{what}: connections");
                assert!(
                    mine.iter().all(|c| c.violations.is_empty()),
                    "{what}: {mine:?}"
                );
                let records: Vec<_> = mine.iter().map(record).collect();
                assert_replays_start_at_the_last_final(&what, &spoken(said), &records);
            }
        });
        futures_util::future::join_all(calls).await;
        assert!(
            m.connections()
                .iter()
                .any(|c| c.max_answer_delay >= Duration::from_millis(2_000)),
            "{what}: the provider was late by its load"
        );
        server.shutdown().await.unwrap();
    });
    futures_util::future::join_all(runs).await;
}

/// A Riva that processes at real time takes hark's replay at once but answers it over its
/// own duration, so `audio_processed` trails what hark sent by the replay for the rest of
/// the call. Its stream fails mid-sentence; the reconnect's stream fails half-way through
/// processing the replay with a status that moves the channel to the next Riva, whose first
/// stream also fails mid-replay. Every word arrives once, and every stream began just after
/// the last word finalized before it, though hark had sent well past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_time_riva_settles_by_what_it_processed_through_faults_mid_replay() {
    let options = RivaOptions {
        speed: Some(1.0),
        ..RivaOptions::default()
    };
    let first = RivaMock::start(options.clone()).await;
    let second = RivaMock::start(options).await;
    first.script(vec![
        RivaFault::StatusAfter(2.5, Code::Unavailable),
        RivaFault::StatusAfter(0.9, Code::PermissionDenied),
    ]);
    second.script(vec![RivaFault::StatusAfter(0.9, Code::Unavailable)]);
    let mut registry = hark::backend::Registry::default();
    for (name, mock) in [("gpu", &first), ("gpu2", &second)] {
        let config: hark::config::BackendConfig = toml::from_str(&format!(
            "type = \"riva\"\nurl = \"{}\"\nendpointing_ms = 300\nstall_timeout_ms = 8000",
            mock.url()
        ))
        .expect("riva config parses");
        registry.insert(
            name,
            hark::registry::network(name, config, None).expect("backend"),
        );
    }
    let mut config = test_config();
    config.profiles.insert(
        "p".into(),
        hark::config::Profile {
            backend: "gpu".into(),
            fallback: vec!["gpu2".into()],
            channels: vec![hark::protocol::Channel::Customer],
            ..Default::default()
        },
    );
    let server = TestServer::start(config, registry).await;
    let rate = 16_000;
    let parts = [
        ("hello alpha bravo", 700),
        ("charlie delta echo foxtrot", 700),
        ("golf hotel india", 700),
        ("juliet kilo", 1_000),
    ];
    let said: Vec<&str> = parts.iter().map(|(s, _)| *s).collect();
    let audio = speech(&parts, rate);
    let url = server.ws_url("/api/custom-transcriber/p");
    play_every_word_once("riva", &url, &audio, rate, "kilo", &said).await;
    let streams: Vec<RivaStream> = first
        .streams()
        .into_iter()
        .chain(second.streams())
        .collect();
    assert_eq!(streams.len(), 4, "{streams:?}");
    for (i, s) in streams.iter().enumerate() {
        assert!(s.violations.is_empty(), "stream {i}: {:?}", s.violations);
    }
    // The replays' streams failed with audio hark had sent and the server not processed.
    for (i, s) in streams.iter().enumerate().skip(1).take(2) {
        assert!(
            s.backlog_at_fault.is_some_and(|b| b > 0.0),
            "stream {i} failed before hark had sent past what it processed: {s:?}"
        );
        assert!(s.words_sent_final.is_empty(), "stream {i}: {s:?}");
    }
    let records: Vec<_> = streams.iter().map(stream_record).collect();
    assert_replays_start_at_the_last_final("riva", &spoken(&said), &records);
    server.shutdown().await.unwrap();
}

/// A real-time Riva that took a replay stays that far behind the call: its stream fails
/// 2 s into a long sentence, and the reconnect's stream works through 2.8 s of replay and
/// then the call, 2.8 s late. When the caller speaks again after a long pause, the server
/// is still in that pause and answers the new words only 2.8 s after hark sent them. It is
/// working at real time, not stalled: the reconnect carries the call to its end, with no
/// stall taken for a fault (each would start a stream with a longer replay, later still).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_time_riva_behind_by_its_replay_is_not_taken_for_stalled() {
    let mock = RivaMock::start(RivaOptions {
        speed: Some(1.0),
        ..RivaOptions::default()
    })
    .await;
    // The long sentence runs from 1.8 s to 4.7 s; its stream fails at 3.8 s, and the
    // replay starts after "bravo", at 1.0 s.
    mock.script(vec![RivaFault::StatusAfter(3.8, Code::Unavailable)]);
    let mut registry = hark::backend::Registry::default();
    // The default stall bound (2.5 s).
    let config: hark::config::BackendConfig = toml::from_str(&format!(
        "type = \"riva\"\nurl = \"{}\"\nendpointing_ms = 300",
        mock.url()
    ))
    .expect("riva config parses");
    registry.insert(
        "gpu",
        hark::registry::network("gpu", config, None).expect("backend"),
    );
    let mut config = test_config();
    config.profiles.insert(
        "p".into(),
        hark::config::Profile {
            backend: "gpu".into(),
            channels: vec![hark::protocol::Channel::Customer],
            ..Default::default()
        },
    );
    let server = TestServer::start(config, registry).await;
    let rate = 16_000;
    let parts = [
        ("hello alpha bravo", 700),
        (
            "charlie delta echo foxtrot golf hotel india juliet kilo lima",
            3_500,
        ),
        ("mike november oscar", 1_000),
    ];
    let said: Vec<&str> = parts.iter().map(|(s, _)| *s).collect();
    let audio = speech(&parts, rate);
    let url = server.ws_url("/api/custom-transcriber/p");
    play_every_word_once("riva", &url, &audio, rate, "oscar", &said).await;
    let streams = mock.streams();
    assert_eq!(
        streams.len(),
        2,
        "one reconnect for the fault, none for a stall: {streams:?}"
    );
    assert!(
        streams[1].max_backlog_secs > 0.0,
        "the replay ran ahead of the server: {:?}",
        streams[1]
    );
    let records: Vec<_> = streams.iter().map(stream_record).collect();
    assert_replays_start_at_the_last_final("riva", &spoken(&said), &records);
    server.shutdown().await.unwrap();
}
