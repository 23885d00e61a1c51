//! Network backends end to end: a real hark server on loopback relays calls from a real
//! websocket client to provider mocks that follow the providers' documented protocols
//! (docs/PROVIDERS.md), and the transcripts the client gets are checked word for word (the
//! mocks answer known text for known audio).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hark::backend::Options;
use hark::backend::{ApiKey, Registry};
use hark::config::{BackendConfig, Config, Profile};
use hark_bench::protocol::{Channel, ServerMessage, TranscriptType};
use hark_testkit::provider_mock::{Connection, Fault, MockOptions, MockProvider, Provider};
use hark_testkit::{Call, Received, TestServer, test_config, words};

pub(crate) const KEY: &str = "test-key-7f3a";

pub(crate) async fn mock(provider: Provider) -> MockProvider {
    MockProvider::start(MockOptions {
        provider,
        api_key: KEY.into(),
        two_message_formatting: false,
    })
    .await
}

/// The `[backends.NAME]` section for a mock, as a user would write it.
pub(crate) fn backend_config(
    mock: &MockProvider,
    provider: Provider,
    extra: &str,
) -> BackendConfig {
    let kind = match provider {
        Provider::Deepgram => "deepgram",
        Provider::AssemblyAi => "assemblyai",
    };
    toml::from_str(&format!(
        "type = \"{kind}\"\nurl = \"{}\"\n{extra}",
        mock.url()
    ))
    .expect("backend config parses")
}

/// A server whose profile `p` uses `chain` of backends; `net` gives the network backends
/// (name, config); `moonshine` adds the embedded recognizer.
pub(crate) async fn server(
    net: &[(&str, BackendConfig)],
    chain: &[&str],
    moonshine: bool,
    edit: impl FnOnce(&mut Profile, &mut Config),
) -> TestServer {
    let mut registry = Registry::default();
    if moonshine {
        registry.insert("moonshine", hark_testkit::moonshine());
    }
    for (name, config) in net {
        registry.insert(
            *name,
            hark::registry::network(
                name,
                config.clone(),
                Some(ApiKey::new("TEST_KEY", KEY.into())),
            )
            .expect("backend"),
        );
    }
    let mut config = test_config();
    let mut profile = Profile {
        backend: chain[0].into(),
        fallback: chain[1..].iter().map(|s| s.to_string()).collect(),
        ..Profile::default()
    };
    edit(&mut profile, &mut config);
    config.profiles = BTreeMap::from([("p".to_string(), profile)]);
    TestServer::start(config, registry).await
}

/// A server whose profile `p` relays only the customer channel, to a mock of `provider`
/// configured as backend `name` with `extra` lines.
async fn customer_relay(provider: Provider, name: &str, extra: &str) -> (MockProvider, TestServer) {
    let m = mock(provider).await;
    let config = backend_config(&m, provider, extra);
    let server = server(&[(name, config)], &[name], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    (m, server)
}

pub(crate) fn final_words(got: &Received, channel: Channel) -> Vec<String> {
    got.finals(channel.as_str())
        .iter()
        .flat_map(|f| hark_bench::wer::normalize(f))
        .collect()
}

pub(crate) fn spoken(sentences: &[&str]) -> Vec<String> {
    sentences
        .iter()
        .flat_map(|s| hark_bench::wer::normalize(s))
        .collect()
}

/// Speech of `sentences`, each followed by `pause_ms` of silence (long enough for the
/// mocks to end the utterance).
pub(crate) fn script(sentences: &[&str], rate: u32, pause_ms: u32) -> Vec<i16> {
    let mut out = words::silence(rate, 200);
    for s in sentences {
        out.extend(words::sentence(s, rate));
        out.extend(words::silence(rate, pause_ms));
    }
    out
}

pub(crate) fn is_final_with(
    channel: Channel,
    word: &'static str,
) -> impl Fn(&ServerMessage) -> bool {
    move |m| {
        matches!(m, ServerMessage::TranscriberResponse { transcription, channel: c, transcript_type: TranscriptType::Final }
            if *c == channel && hark_bench::wer::normalize(transcription).iter().any(|w| w == word))
    }
}

/// Plays a stereo call (customer, assistant) paced in real time, waits for the final that
/// holds the last word of each channel in `wait`, and hangs up.
pub(crate) async fn play_call_waiting(
    url: &str,
    rate: u32,
    customer: &[&str],
    assistant: &[&str],
    wait: &[Channel],
) -> Received {
    let a = script(customer, rate, 700);
    let b = script(assistant, rate, 700);
    let mut call = Call::open(url, rate, 2).await.expect("call opens");
    assert!(
        call.play(&[&a, &b], rate, 20, true).await,
        "server took the audio"
    );
    for (channel, said) in [
        (Channel::Customer, customer),
        (Channel::Assistant, assistant),
    ] {
        if !wait.contains(&channel) {
            continue;
        }
        let Some(last) = said.last().and_then(|s| s.split_whitespace().last()) else {
            continue;
        };
        let last: &'static str = words::VOCAB
            .iter()
            .find(|v| v.eq_ignore_ascii_case(last))
            .expect("vocabulary word");
        let came = call
            .wait_for(Duration::from_secs(5), is_final_with(channel, last))
            .await;
        assert!(
            came,
            "no final with {last:?} on the {} channel: {:?}",
            channel.as_str(),
            call.poll()
        );
    }
    call.hang_up().await
}

/// Plays `audio` as a one-channel call to profile `p` in real time, waits (bounded) for the
/// final holding `last`, and hangs up: whether it came, and everything received.
pub(crate) async fn play_mono(
    server: &TestServer,
    audio: &[i16],
    rate: u32,
    last: &'static str,
) -> (bool, Received) {
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), rate, 1)
        .await
        .expect("call opens");
    assert!(
        call.play(&[audio], rate, 20, true).await,
        "server took the audio"
    );
    let came = call
        .wait_for(
            Duration::from_secs(5),
            is_final_with(Channel::Customer, last),
        )
        .await;
    (came, call.hang_up().await)
}

pub(crate) async fn play_call(
    url: &str,
    rate: u32,
    customer: &[&str],
    assistant: &[&str],
) -> Received {
    play_call_waiting(
        url,
        rate,
        customer,
        assistant,
        &[Channel::Customer, Channel::Assistant],
    )
    .await
}

fn query<'a>(c: &'a Connection, key: &str) -> Vec<&'a str> {
    c.query
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

fn header<'a>(c: &'a Connection, name: &str) -> Option<&'a str> {
    c.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Partials of a channel come before its finals: the first transcript is a partial.
fn partial_first(got: &Received, channel: Channel) -> bool {
    got.messages.iter().find_map(|(_, m)| match m {
        ServerMessage::TranscriberResponse {
            channel: c,
            transcript_type,
            ..
        } if *c == channel => Some(*transcript_type == TranscriptType::Partial),
        _ => None,
    }) == Some(true)
}

const CUSTOMER: &[&str] = &["hello alpha bravo charlie", "please delta echo"];
const ASSISTANT: &[&str] = &["yes foxtrot golf hotel", "thanks india"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deepgram_relays_a_call_at_16_and_8_khz() {
    let dg = mock(Provider::Deepgram).await;
    let config = backend_config(
        &dg,
        Provider::Deepgram,
        "model = \"nova-3\"\nkeyterms = [\"Acme\"]",
    );
    let server = server(&[("dg", config)], &["dg"], false, |_, _| {}).await;
    for rate in [16_000, 8_000] {
        let got = play_call(
            &server.ws_url("/api/custom-transcriber/p"),
            rate,
            CUSTOMER,
            ASSISTANT,
        )
        .await;
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(CUSTOMER),
            "{rate} Hz"
        );
        assert_eq!(
            final_words(&got, Channel::Assistant),
            spoken(ASSISTANT),
            "{rate} Hz"
        );
        assert!(partial_first(&got, Channel::Customer) && partial_first(&got, Channel::Assistant));
        // Finals are punctuated as the provider sends them.
        assert!(
            got.finals("customer").iter().all(|f| f.ends_with('.')),
            "{:?}",
            got.finals("customer")
        );
    }
    assert!(
        dg.wait_closed(4, Duration::from_secs(5)).await,
        "provider connections end with the call"
    );
    let conns = dg.connections();
    assert_eq!(conns.len(), 4, "one connection per channel per call");
    for (c, rate) in conns.iter().zip(["16000", "16000", "8000", "8000"]) {
        assert_eq!(
            query(c, "sample_rate"),
            [rate],
            "the call's own rate, not resampled"
        );
        assert_eq!(query(c, "encoding"), ["linear16"]);
        assert_eq!(query(c, "channels"), ["1"]);
        assert_eq!(query(c, "model"), ["nova-3"]);
        assert_eq!(query(c, "keyterm"), ["Acme"]);
        assert_eq!(query(c, "interim_results"), ["true"]);
        assert_eq!(
            header(c, "authorization"),
            Some(format!("Token {KEY}").as_str())
        );
        assert!(c.violations.is_empty(), "{:?}", c.violations);
        assert_eq!(c.zero_length_frames, 0);
        assert!(
            c.max_rate_ratio <= 1.3,
            "sent at {:.2}× real time",
            c.max_rate_ratio
        );
        assert!(
            c.control
                .ends_with(&["Finalize".to_string(), "CloseStream".to_string()]),
            "the stream ends with Finalize and CloseStream: {:?}",
            c.control
        );
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assemblyai_relays_a_call_with_either_formatting_behaviour() {
    for two_message in [false, true] {
        let aai = MockProvider::start(MockOptions {
            provider: Provider::AssemblyAi,
            api_key: KEY.into(),
            two_message_formatting: two_message,
        })
        .await;
        let config = backend_config(
            &aai,
            Provider::AssemblyAi,
            "keyterms = [\"Acme\", \"refund\"]",
        );
        let server = server(&[("aai", config)], &["aai"], false, |_, _| {}).await;
        for rate in [16_000, 8_000] {
            let got = play_call(
                &server.ws_url("/api/custom-transcriber/p"),
                rate,
                CUSTOMER,
                ASSISTANT,
            )
            .await;
            let what = format!("{rate} Hz, two-message formatting {two_message}");
            assert_eq!(
                final_words(&got, Channel::Customer),
                spoken(CUSTOMER),
                "{what}"
            );
            assert_eq!(
                final_words(&got, Channel::Assistant),
                spoken(ASSISTANT),
                "{what}"
            );
            assert!(partial_first(&got, Channel::Customer), "{what}");
            assert!(
                got.finals("customer").iter().all(|f| f.ends_with('.')),
                "{what}: {:?}",
                got.finals("customer")
            );
        }
        assert!(aai.wait_closed(4, Duration::from_secs(5)).await);
        for c in aai.connections() {
            assert!(c.violations.is_empty(), "{:?}", c.violations);
            assert_eq!(header(&c, "authorization"), Some(KEY));
            assert_eq!(query(&c, "keyterms_prompt"), [r#"["Acme","refund"]"#]);
            assert_eq!(query(&c, "format_turns"), ["true"]);
            assert!(!query(&c, "speech_model").is_empty());
            assert!(
                c.frame_ms.iter().all(|ms| (50.0..=1000.0).contains(ms)),
                "frames {:?}",
                c.frame_ms
            );
            assert!(
                c.max_rate_ratio <= 1.0 + 1e-6 || c.max_rate_ratio < 1.05,
                "{:.3}× real time",
                c.max_rate_ratio
            );
            assert_eq!(c.control.last().map(String::as_str), Some("Terminate"));
        }
        server.shutdown().await.unwrap();
    }
}

/// Each fault, mid-call, on either provider: the channel reconnects, the audio after the
/// last final is replayed, and every word arrives in a final exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_mid_call_reconnect_with_no_word_lost_or_doubled() {
    // (provider, fault, connections the call should take); a slow provider, or a slow
    // first handshake, is no failure.
    let cases: Vec<(Provider, Fault, usize)> = vec![
        (Provider::Deepgram, Fault::DropAfter(2.3), 2),
        (
            Provider::Deepgram,
            Fault::CloseAfter(2.3, 1011, "NET-0000"),
            2,
        ),
        (Provider::Deepgram, Fault::StallAfter(2.3), 2),
        (
            Provider::Deepgram,
            Fault::Slow(Duration::from_millis(400)),
            1,
        ),
        (Provider::AssemblyAi, Fault::DropAfter(2.3), 2),
        (
            Provider::AssemblyAi,
            Fault::CloseAfter(2.3, 3005, "Internal server error"),
            2,
        ),
        (Provider::AssemblyAi, Fault::StallAfter(2.3), 2),
        // A few messages hark cannot read (not JSON, a result whose fields have the wrong
        // type) among readable ones cost nothing; a provider whose every answer is
        // unreadable is a stall: nothing readable back for voice sent.
        (Provider::Deepgram, Fault::GarbageAfter(2.3), 1),
        (Provider::AssemblyAi, Fault::GarbageAfter(2.3), 1),
        (Provider::Deepgram, Fault::GarbledAfter(2.3), 2),
        (Provider::AssemblyAi, Fault::GarbledAfter(2.3), 2),
        (
            Provider::AssemblyAi,
            Fault::Slow(Duration::from_millis(400)),
            1,
        ),
        // Audio sent while the first handshake is still going on (the upgrade answered
        // after 1.5 s) waits in the ring and goes out once the connection is up.
        (
            Provider::Deepgram,
            Fault::SlowUpgrade(Duration::from_millis(1_500)),
            1,
        ),
        (
            Provider::AssemblyAi,
            Fault::SlowUpgrade(Duration::from_millis(1_500)),
            1,
        ),
    ];
    let runs = cases
        .into_iter()
        .map(|(provider, fault, connections)| async move {
            let (m, server) = customer_relay(provider, "net", "stall_timeout_ms = 1500").await;
            // Only the customer channel is relayed, so the script applies to its connection.
            m.script(vec![fault.clone()]);
            let customer = &[
                "hello alpha bravo",
                "charlie delta echo foxtrot",
                "golf hotel",
            ];
            let got = play_call(
                &server.ws_url("/api/custom-transcriber/p"),
                16_000,
                customer,
                &[],
            )
            .await;
            let what = format!("{provider:?} {fault:?}");
            assert!(got.error().is_none(), "{what}: {:?}", got.error());
            assert_eq!(
                final_words(&got, Channel::Customer),
                spoken(customer),
                "{what}"
            );
            let conns = m.connections();
            assert_eq!(conns.len(), connections, "{what}: connections");
            assert!(
                conns.iter().all(|c| c.violations.is_empty()),
                "{what}: {:?}",
                conns
            );
            server.shutdown().await.unwrap();
        });
    futures_util::future::join_all(runs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_reconnect_fails_over_to_the_embedded_recognizer_mid_call() {
    let dg = mock(Provider::Deepgram).await;
    let config = backend_config(&dg, Provider::Deepgram, "");
    let server = server(&[("dg", config)], &["dg", "moonshine"], true, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    // Real speech: the mock hears no code words in it and answers nothing, the connection
    // drops after 1.5 s and the reconnect is refused (401): the embedded recognizer takes the
    // channel with the replay, so it transcribes the clip from its first word.
    dg.script(vec![Fault::DropAfter(1.5), Fault::Refuse(401)]);
    let clip = hark_testkit::clips()
        .into_iter()
        .next()
        .expect("a dev clip");
    let samples = hark_testkit::resample(&clip.samples, clip.rate, 16_000);
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16_000, 1)
        .await
        .expect("call opens");
    assert!(call.play(&[&samples], 16_000, 20, true).await);
    call.silence(1, 16_000, 1.5).await;
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
    let heard = got.finals("customer").join(" ");
    let wer = hark_bench::wer::wer([(clip.reference.as_str(), heard.as_str())]);
    assert!(
        wer < 0.35,
        "embedded fallback heard {heard:?} for {:?} (WER {wer:.2})",
        clip.reference
    );
    let conns = dg.connections();
    assert_eq!(conns.len(), 2);
    assert_eq!(conns[1].refused, Some(401));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_chain_ends_the_call_with_the_pipeline_error_and_1011() {
    let dg = mock(Provider::Deepgram).await;
    let config = backend_config(&dg, Provider::Deepgram, "");
    let server = server(&[("dg", config)], &["dg"], false, |_, _| {}).await;
    // Mid-call: the connection drops, then every reconnect is refused.
    dg.script(vec![
        Fault::DropAfter(1.0),
        Fault::Refuse(401),
        Fault::Refuse(401),
        Fault::Refuse(401),
    ]);
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16_000, 1)
        .await
        .expect("call opens");
    let audio = script(&["hello alpha bravo charlie delta echo"], 16_000, 500);
    let started = Instant::now();
    call.play(&[&audio], 16_000, 20, true).await;
    let got = call.finish(Duration::from_secs(10)).await;
    let (code, message) = got.error().expect("error message");
    assert_eq!(code, "pipeline-error-custom-transcriber-failed");
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains(KEY), "the key leaked into {message}");
    assert_eq!(got.close.as_ref().map(|c| c.0), Some(1011));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "ended after {:?}",
        started.elapsed()
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_choose_channels_and_the_url_overrides_options() {
    let dg = mock(Provider::Deepgram).await;
    let config = backend_config(&dg, Provider::Deepgram, "language = \"en\"");
    let server = server(&[("dg", config)], &["dg"], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
        p.options = Options {
            keyterms: Some(vec!["Acme".into()]),
            ..Options::default()
        };
    })
    .await;
    let url = server.ws_url("/api/custom-transcriber/p?language=es&keyterms=Acme,refund");
    let got = play_call_waiting(
        &url,
        16_000,
        &["hello alpha"],
        &["yes bravo"],
        &[Channel::Customer],
    )
    .await;
    assert_eq!(final_words(&got, Channel::Customer), ["hello", "alpha"]);
    assert!(got.finals("assistant").is_empty() && got.partials("assistant").is_empty());
    assert!(dg.wait_closed(1, Duration::from_secs(5)).await);
    let conns = dg.connections();
    assert_eq!(conns.len(), 1, "only the customer channel is relayed");
    assert_eq!(query(&conns[0], "language"), ["es"]);
    assert_eq!(query(&conns[0], "keyterm"), ["Acme", "refund"]);
    // A bad override is refused before the upgrade, with the reason: each names what it
    // refused, so a request refused for anything else (its headers) fails here.
    for (bad, named) in [
        ("?language=es%20ES", "is not a language tag"),
        ("?keyterm=Acme", "unknown query parameter"),
        ("?endpointing_ms=soon", "must be a whole number of ms"),
    ] {
        let (status, answer) =
            hark_testkit::refused_upgrade(server.addr, &format!("/api/custom-transcriber/p{bad}"))
                .await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(answer.contains(named), "{bad}: {answer}");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_first_connection_fails_over_at_once_and_is_counted() {
    let dg = mock(Provider::Deepgram).await;
    let aai = mock(Provider::AssemblyAi).await;
    let net = [
        ("dg429", backend_config(&dg, Provider::Deepgram, "")),
        ("aai429", backend_config(&aai, Provider::AssemblyAi, "")),
    ];
    let server = server(&net, &["dg429", "aai429"], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    // Over the account's concurrency: a 4xx at the handshake is not retried.
    dg.script(vec![Fault::Refuse(429)]);
    let said = &["hello alpha bravo", "charlie delta"];
    let got = play_call_waiting(
        &server.ws_url("/api/custom-transcriber/p"),
        16_000,
        said,
        &[],
        &[Channel::Customer],
    )
    .await;
    assert!(got.error().is_none(), "{:?}", got.error());
    assert_eq!(final_words(&got, Channel::Customer), spoken(said));
    assert_eq!(dg.connections().len(), 1, "no retry after a 4xx");
    assert_eq!(aai.connections().len(), 1);
    let (_, metrics) = hark_testkit::http_get(server.addr, "/metrics", &[]).await;
    for series in [
        r#"hark_provider_errors_total{backend="dg429",code="http-429"} 1"#,
        r#"hark_backend_failovers_total{from="dg429",to="aai429"} 1"#,
        r#"hark_backend_channels_total{backend="aai429"} 1"#,
    ] {
        assert!(metrics.contains(series), "{series} missing from /metrics");
    }
    assert!(!metrics.contains(r#"hark_backend_reconnects_total{backend="dg429"}"#));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalives_hold_the_stream_open_while_no_audio_flows() {
    let dg = mock(Provider::Deepgram).await;
    dg.set_idle_timeout(Duration::from_millis(2500));
    let config = backend_config(&dg, Provider::Deepgram, "keepalive_ms = 800");
    let server = server(&[("dg", config)], &["dg"], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16_000, 1)
        .await
        .expect("call opens");
    let first = script(&["hello alpha"], 16_000, 600);
    call.play(&[&first], 16_000, 20, true).await;
    // The platform sends nothing for longer than the provider's idle limit.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let second = script(&["bravo charlie"], 16_000, 600);
    call.play(&[&second], 16_000, 20, true).await;
    assert!(
        call.wait_for(
            Duration::from_secs(5),
            is_final_with(Channel::Customer, "charlie")
        )
        .await
    );
    let got = call.hang_up().await;
    assert_eq!(
        final_words(&got, Channel::Customer),
        ["hello", "alpha", "bravo", "charlie"]
    );
    let conns = dg.connections();
    assert_eq!(conns.len(), 1, "the stream stayed open: {conns:?}");
    assert!(
        conns[0]
            .control
            .iter()
            .filter(|c| *c == "KeepAlive")
            .count()
            >= 3
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_shutdown_the_last_words_are_finalized_and_delivered_before_the_close() {
    let dg = mock(Provider::Deepgram).await;
    let config = backend_config(&dg, Provider::Deepgram, "");
    let mut server = server(&[("dg", config)], &["dg"], false, |p, config| {
        p.channels = vec![hark::protocol::Channel::Customer];
        config.drain_timeout_ms = 300;
    })
    .await;
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16_000, 1)
        .await
        .expect("call opens");
    // The words end without the pause that would end the utterance: only Finalize brings
    // their final.
    let mut audio = words::silence(16_000, 200);
    audio.extend(words::speak(
        &words::indices("hello alpha bravo"),
        16_000,
        200,
        20,
    ));
    call.play(&[&audio], 16_000, 20, true).await;
    assert!(
        call.wait_for(Duration::from_secs(3), |m| matches!(m,
            ServerMessage::TranscriberResponse { transcript_type: TranscriptType::Partial, transcription, .. }
                if transcription.to_lowercase().contains("bravo")))
            .await
    );
    server.begin_shutdown();
    let got = call.finish(Duration::from_secs(10)).await;
    assert_eq!(
        final_words(&got, Channel::Customer),
        ["hello", "alpha", "bravo"]
    );
    assert_eq!(got.close.as_ref().map(|c| c.0), Some(1001));
    let control = &dg.connections()[0].control;
    assert!(
        control.ends_with(&["Finalize".to_string(), "CloseStream".to_string()]),
        "{control:?}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_urls_go_through_tls() {
    // A peer that is not a TLS server: the handshake must fail as TLS, not as "no TLS here".
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            use tokio::io::AsyncWriteExt;
            let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        }
    });
    let config: BackendConfig = toml::from_str(&format!(
        "type = \"deepgram\"\nurl = \"wss://{addr}/v1/listen\"\nmax_reconnects = 0"
    ))
    .unwrap();
    let server = server(&[("tls", config)], &["tls"], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16_000, 1)
        .await
        .expect("call opens");
    call.silence(1, 16_000, 0.5).await;
    let got = call.finish(Duration::from_secs(10)).await;
    let (_, message) = got.error().expect("the call fails: nothing can take it");
    assert!(message.contains("cannot connect"), "{message}");
    assert!(
        !message.to_lowercase().contains("not compiled"),
        "{message}"
    );
    server.shutdown().await.unwrap();
}

/// A drop late in a long sentence leaves a replay longer than `max_lag`: the new
/// connection must hear it all again, which is no reason to give up on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_longer_than_max_lag_is_heard_again_not_failed() {
    for provider in [Provider::Deepgram, Provider::AssemblyAi] {
        let (m, server) = customer_relay(provider, "net", "").await;
        m.script(vec![Fault::DropAfter(4.6)]);
        let long = &[
            "hello alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike oscar papa",
        ];
        let got = play_call_waiting(
            &server.ws_url("/api/custom-transcriber/p"),
            16_000,
            long,
            &[],
            &[Channel::Customer],
        )
        .await;
        assert!(got.error().is_none(), "{provider:?}: {:?}", got.error());
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(long),
            "{provider:?}"
        );
        assert_eq!(m.connections().len(), 2);
        server.shutdown().await.unwrap();
    }
}

/// A provider's codes and words are its own: 52 connections each closed with a close code
/// of their own give a handful of metric series (`close-4xxx`), and a close reason that
/// would forge a log line reaches the caller's error message escaped, on one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_codes_and_words_never_become_labels_or_raw_text() {
    const FORGED: &str = "bye\n2026-11-24T00:00:00Z  INFO call started profile=admin";
    let dg = mock(Provider::Deepgram).await;
    let config = backend_config(&dg, Provider::Deepgram, "");
    let server = server(&[("dgcodes", config)], &["dgcodes"], false, |p, _| {
        p.channels = vec![hark::protocol::Channel::Customer];
    })
    .await;
    // Each call: its first connection and three reconnects, every one closed mid-stream.
    const CALLS: u16 = 13;
    dg.script(
        (0..CALLS * 4)
            .map(|i| Fault::CloseAfter(0.2, 4000 + i, FORGED))
            .collect(),
    );
    let url = server.ws_url("/api/custom-transcriber/p");
    let calls = (0..CALLS).map(|_| async {
        let mut call = Call::open(&url, 16_000, 1).await.expect("call opens");
        call.silence(1, 16_000, 4.0).await;
        call.finish(Duration::from_secs(20)).await
    });
    for got in futures_util::future::join_all(calls).await {
        let (code, message) = got
            .error()
            .expect("the call fails: every connection closes");
        assert_eq!(code, "pipeline-error-custom-transcriber-failed");
        assert!(!message.contains('\n'), "{message}");
        assert!(
            message.contains("\\n2026"),
            "the reason is shown escaped: {message}"
        );
    }
    assert!(
        dg.connections().len() >= 40,
        "{} connections",
        dg.connections().len()
    );
    let (_, metrics) = hark_testkit::http_get(server.addr, "/metrics", &[]).await;
    let series: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with(r#"hark_provider_errors_total{backend="dgcodes""#))
        .collect();
    assert!(
        series.iter().any(|l| l.contains(r#"code="close-4xxx""#)),
        "{series:?}"
    );
    assert!(
        series.len() <= 3,
        "one series per kind, not per code: {series:?}"
    );
    server.shutdown().await.unwrap();
}

/// After a reconnect the new connection starts behind (the replay, then the live audio
/// behind it). It catches up by leaving out the long part of pauses while it is behind, never
/// by sending faster than the provider takes: every word arrives once, the provider heard
/// less silence than the call had, and no rule of the provider's was broken (AssemblyAI's
/// "faster than real time" included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_reconnect_the_channel_catches_up_over_pauses_without_losing_a_word() {
    let runs = [Provider::Deepgram, Provider::AssemblyAi].map(|provider| async move {
        // Metrics are process-wide: each provider's backend has a name of its own.
        let name = format!("{provider:?}").to_lowercase();
        let (m, server) = customer_relay(provider, &name, "").await;
        // Mid-sentence: the second sentence runs from about 4.1 s to 5.6 s.
        m.script(vec![Fault::DropAfter(4.6)]);
        let customer = &[
            "hello alpha bravo",
            "charlie delta echo foxtrot golf",
            "hotel india",
            "juliet kilo lima",
        ];
        let rate = 16_000;
        let a = script(customer, rate, 3_000);
        let (came, got) = play_mono(&server, &a, rate, "lima").await;
        let what = format!("{provider:?}");
        assert!(came, "{what}: no last final: {got:?}");
        assert!(got.error().is_none(), "{what}: {:?}", got.error());
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(customer),
            "{what}"
        );
        let conns = m.connections();
        assert_eq!(conns.len(), 2, "{what}: connections");
        assert!(
            conns.iter().all(|c| c.violations.is_empty()),
            "{what}: {conns:?}"
        );
        let metrics = hark_testkit::http_fetch(server.addr, "/metrics")
            .await
            .map(|(_, body)| body)
            .unwrap_or_default();
        let sum = |metric: &str| {
            let series = format!("{metric}_sum{{backend=\"{name}\"}} ");
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(&series)?.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let (replayed, skipped) = (
            sum("hark_replay_seconds"),
            sum("hark_catch_up_skipped_seconds"),
        );
        assert!(replayed > 0.0, "{what}: the replay is not counted");
        if provider == Provider::AssemblyAi {
            // No faster than real time: only what is left out of the pause catches up, and
            // the connection ends the pause within a frame or two of the live audio.
            assert!(
                skipped >= replayed - 0.5,
                "{what}: {skipped:.2} s of silence left out after a {replayed:.2} s replay"
            );
        }
        server.shutdown().await.unwrap();
    });
    futures_util::future::join_all(runs).await;
}

/// Routine closes (here AssemblyAI's session expiry, 3008, as every hour of a long call)
/// do not use up the reconnect budget: a connection that ran a healthy stretch before its
/// close starts the count again, even on a channel that gives no final between closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routine_closes_of_a_long_call_do_not_use_up_the_reconnect_budget() {
    let (m, server) = customer_relay(Provider::AssemblyAi, "aai", "max_reconnects = 1").await;
    let expiry = Fault::CloseAfter(
        10.5,
        3008,
        "Session Expired: Maximum session duration exceeded",
    );
    m.script(vec![expiry.clone(), expiry.clone(), expiry]);
    let rate = 16_000;
    let mut audio = words::sentence("hello alpha bravo", rate);
    audio.extend(words::silence(rate, 31_000));
    audio.extend(words::sentence("charlie delta", rate));
    audio.extend(words::silence(rate, 1_000));
    let (came, got) = play_mono(&server, &audio, rate, "delta").await;
    assert!(came && got.error().is_none(), "{got:?}");
    assert_eq!(
        final_words(&got, Channel::Customer),
        spoken(&["hello alpha bravo", "charlie delta"])
    );
    let conns = m.connections();
    assert_eq!(conns.len(), 4, "three expiries, four connections");
    assert!(conns.iter().all(|c| c.violations.is_empty()), "{conns:?}");
    server.shutdown().await.unwrap();
}

/// A provider connection that goes half-open (the peer stops reading and answering, the
/// socket stays up) is found out by an unanswered ping within a bounded time even while no
/// voice flows to show it, and replaced before the caller speaks again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_open_provider_connection_is_found_out_during_silence() {
    let runs = [Provider::Deepgram, Provider::AssemblyAi].map(|provider| async move {
        let (m, server) = customer_relay(provider, "net", "").await;
        m.script(vec![Fault::DeafAfter(2.0)]);
        let rate = 16_000;
        let mut first = words::sentence("hello alpha bravo", rate);
        // PING_AFTER (3 s) + stall_timeout (2.5 s) after the last answer, with room to spare.
        first.extend(words::silence(rate, 10_000));
        let mut second = words::sentence("charlie delta", rate);
        second.extend(words::silence(rate, 1_000));
        let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), rate, 1)
            .await
            .expect("call opens");
        assert!(call.play(&[&first], rate, 20, true).await);
        let what = format!("{provider:?}");
        assert_eq!(
            m.connections().len(),
            2,
            "{what}: the half-open connection was not replaced during the silence"
        );
        assert!(call.play(&[&second], rate, 20, true).await);
        let came = call
            .wait_for(
                Duration::from_secs(5),
                is_final_with(Channel::Customer, "delta"),
            )
            .await;
        let got = call.hang_up().await;
        assert!(came && got.error().is_none(), "{what}: {got:?}");
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(&["hello alpha bravo", "charlie delta"]),
            "{what}"
        );
        server.shutdown().await.unwrap();
    });
    futures_util::future::join_all(runs).await;
}

/// Errors that will not heal — a bad key, a forbidden request, a close that says the
/// request or the audio is wrong — move the channel to the next backend at once: one
/// connection to the failing provider, no reconnect, no word lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_that_will_not_heal_move_to_the_next_backend_without_retries() {
    let cases: Vec<(Provider, Fault)> = vec![
        (Provider::Deepgram, Fault::Refuse(401)),
        (Provider::Deepgram, Fault::Refuse(403)),
        (
            Provider::Deepgram,
            Fault::CloseAfter(2.3, 1008, "DATA-0000"),
        ),
        (
            Provider::AssemblyAi,
            Fault::CloseAfter(2.3, 1008, "Unauthorized"),
        ),
        (
            Provider::AssemblyAi,
            Fault::CloseAfter(2.3, 3006, "Invalid Message"),
        ),
    ];
    let runs = cases.into_iter().map(|(provider, fault)| async move {
        let other = match provider {
            Provider::Deepgram => Provider::AssemblyAi,
            Provider::AssemblyAi => Provider::Deepgram,
        };
        let (failing, fallback) = (mock(provider).await, mock(other).await);
        let net = [
            ("first", backend_config(&failing, provider, "")),
            ("second", backend_config(&fallback, other, "")),
        ];
        let server = server(&net, &["first", "second"], false, |p, _| {
            p.channels = vec![hark::protocol::Channel::Customer];
        })
        .await;
        failing.script(vec![fault.clone()]);
        let said = &["hello alpha bravo", "charlie delta echo foxtrot", "golf"];
        let got = play_call(
            &server.ws_url("/api/custom-transcriber/p"),
            16_000,
            said,
            &[],
        )
        .await;
        let what = format!("{provider:?} {fault:?}");
        assert!(got.error().is_none(), "{what}: {:?}", got.error());
        assert_eq!(final_words(&got, Channel::Customer), spoken(said), "{what}");
        assert_eq!(failing.connections().len(), 1, "{what}: retried");
        assert_eq!(fallback.connections().len(), 1, "{what}");
        server.shutdown().await.unwrap();
    });
    futures_util::future::join_all(runs).await;
}
