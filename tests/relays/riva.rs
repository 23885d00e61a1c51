//! The `riva` backend end to end: a real hark server relays calls from a real websocket
//! client over gRPC to a Riva mock on loopback (hark-testkit's, a tonic server following
//! docs/PROVIDERS.md, "NVIDIA Riva"), and the transcripts are checked word for word.

use std::time::Duration;

use hark::backend::ApiKey;
use hark::config::BackendConfig;
use hark_bench::protocol::Channel;
use hark_testkit::riva_mock::{RivaFault, RivaMock, RivaOptions, RivaStream};
use hark_testkit::{Call, TestServer, http_get_opt, test_config};
use tonic::Code;

use super::relay::{final_words, play_call, play_mono, script, spoken};

const SAID: [&str; 2] = ["alpha bravo charlie", "delta echo foxtrot golf"];
const REPLY: [&str; 1] = ["hello world thanks"];

/// The `[backends.NAME]` section for a mock, as a user would write it.
fn riva_config(mock: &RivaMock, extra: &str) -> BackendConfig {
    toml::from_str(&format!(
        "type = \"riva\"\nurl = \"{}\"\nendpointing_ms = 500\nkeepalive_ms = 500\n{extra}",
        mock.url()
    ))
    .expect("riva config parses")
}

/// A server whose profile `p` is `chain`, each a (name, riva mock, extra config lines);
/// `customer_only` relays only the customer's channel.
async fn riva_server(chain: &[(&str, &RivaMock, &str)], customer_only: bool) -> TestServer {
    let mut registry = hark::backend::Registry::default();
    for (name, mock, extra) in chain {
        let backend = hark::registry::network(name, riva_config(mock, extra), key_for(extra))
            .expect("backend");
        registry.insert(*name, backend);
    }
    let mut config = test_config();
    let profile = hark::config::Profile {
        backend: chain[0].0.into(),
        fallback: chain[1..].iter().map(|(n, _, _)| n.to_string()).collect(),
        channels: if customer_only {
            vec![hark::protocol::Channel::Customer]
        } else {
            vec![
                hark::protocol::Channel::Customer,
                hark::protocol::Channel::Assistant,
            ]
        },
        ..Default::default()
    };
    config.profiles.insert("p".into(), profile.clone());
    config.profiles.insert("default".into(), profile);
    TestServer::start(config, registry).await
}

fn key_for(extra: &str) -> Option<ApiKey> {
    extra
        .contains("api_key_env")
        .then(|| ApiKey::new("RIVA_KEY", "nim-key-0123456789abcdef".into()))
}

fn no_violations(streams: &[RivaStream]) {
    for (i, s) in streams.iter().enumerate() {
        assert!(s.violations.is_empty(), "stream {i}: {:?}", s.violations);
    }
}

#[tokio::test]
async fn both_channels_come_back_word_for_word_at_8_and_16_khz() {
    for rate in [8000, 16000] {
        let mock = RivaMock::start(RivaOptions::default()).await;
        let server = riva_server(&[("gpu", &mock, "")], false).await;
        let got = play_call(
            &server.ws_url("/api/custom-transcriber/p"),
            rate,
            &SAID,
            &REPLY,
        )
        .await;
        assert!(got.error().is_none(), "{rate} Hz: {:?}", got.error());
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(&SAID),
            "{rate} Hz"
        );
        assert_eq!(
            final_words(&got, Channel::Assistant),
            spoken(&REPLY),
            "{rate} Hz"
        );
        assert!(
            !got.partials("customer").is_empty(),
            "{rate} Hz: interim results become partials"
        );
        assert!(mock.wait_closed(2, Duration::from_secs(10)).await);
        let streams = mock.streams();
        assert_eq!(streams.len(), 2, "{rate} Hz: one stream per channel");
        no_violations(&streams);
        for s in &streams {
            assert_eq!(s.sample_rate, rate as i32, "the call's own rate");
            assert_eq!(s.language, "en-US");
            assert!(s.interim_results && s.word_time_offsets && s.punctuation);
            assert_eq!(
                s.stop_history_ms,
                Some(500),
                "endpointing_ms is stop_history"
            );
            assert!(s.half_closed, "each stream ended by a half-close");
            assert_eq!(s.status, None, "each stream ended OK");
        }
        // The two channels' streams share the backend's one HTTP/2 connection.
        assert_eq!(mock.connections(), 1);
    }
}

#[tokio::test]
async fn keyterms_arrive_as_boosted_phrases() {
    let mock = RivaMock::start(RivaOptions::default()).await;
    let server = riva_server(
        &[(
            "gpu",
            &mock,
            "keyterms = [\"Acme\", \"refund policy\"]\nboost = 30.0",
        )],
        true,
    )
    .await;
    let audio = script(&SAID[..1], 16000, 700);
    let (came, got) = play_mono(&server, &audio, 16000, "charlie").await;
    assert!(came, "{got:?}");
    // A call's query overrides the profile's keyterms.
    let mut call = Call::open(
        &server.ws_url("/api/custom-transcriber/p?keyterms=Zed,Quux"),
        16000,
        1,
    )
    .await
    .expect("call opens");
    call.play(&[&audio], 16000, 20, true).await;
    call.hang_up().await;
    assert!(mock.wait_closed(2, Duration::from_secs(10)).await);
    let streams = mock.streams();
    assert_eq!(
        streams[0].boosted,
        [(vec!["Acme".to_string(), "refund policy".to_string()], 30.0)]
    );
    assert_eq!(
        streams[1].boosted,
        [(vec!["Zed".to_string(), "Quux".to_string()], 30.0)]
    );
}

#[tokio::test]
async fn hosted_nim_gets_its_bearer_key_and_function_id() {
    let mock = RivaMock::start(RivaOptions {
        api_key: Some("nim-key-0123456789abcdef".into()),
        function_id: Some("fn-1234".into()),
        ..RivaOptions::default()
    })
    .await;
    let extra = "api_key_env = \"RIVA_KEY\"\nmetadata = { \"function-id\" = \"fn-1234\" }";
    let server = riva_server(&[("gpu", &mock, extra)], true).await;
    let audio = script(&SAID, 16000, 700);
    let (came, got) = play_mono(&server, &audio, 16000, "golf").await;
    assert!(came, "{got:?}");
    assert_eq!(final_words(&got, Channel::Customer), spoken(&SAID));
    let s = &mock.streams()[0];
    assert!(
        s.metadata
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer nim-key-0123456789abcdef")
    );
    assert!(
        s.metadata
            .iter()
            .any(|(k, v)| k == "function-id" && v == "fn-1234")
    );
}

/// Statuses the same request would get again move the channel to the next backend at once,
/// without a second try on the first.
#[tokio::test]
async fn refusals_that_will_not_heal_fail_over_at_once() {
    for code in [
        Code::Unauthenticated,
        Code::PermissionDenied,
        Code::InvalidArgument,
        Code::NotFound,
    ] {
        let primary = RivaMock::start(RivaOptions::default()).await;
        let backup = RivaMock::start(RivaOptions::default()).await;
        primary.script(vec![RivaFault::Refuse(code)]);
        let server = riva_server(&[("gpu", &primary, ""), ("gpu2", &backup, "")], true).await;
        let audio = script(&SAID, 16000, 700);
        let (came, got) = play_mono(&server, &audio, 16000, "golf").await;
        assert!(came, "{code:?}: {got:?}");
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(&SAID),
            "{code:?}"
        );
        assert_eq!(
            primary.streams().len(),
            1,
            "{code:?}: no retry on the first backend"
        );
        assert_eq!(backup.streams().len(), 1, "{code:?}");
    }
}

/// An unknown model is refused by the server as Riva refuses it (INVALID_ARGUMENT,
/// "Unavailable model requested …"); with no fallback the call ends with the pipeline error
/// and the server's reason.
#[tokio::test]
async fn an_unknown_model_ends_the_call_with_the_servers_reason() {
    let mock = RivaMock::start(RivaOptions::default()).await;
    let server = riva_server(&[("gpu", &mock, "model = \"no-such-model\"")], true).await;
    let audio = script(&SAID[..1], 16000, 700);
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16000, 1)
        .await
        .expect("call opens");
    // The audio is refused once the call has failed.
    let _ = call.play(&[&audio], 16000, 20, true).await;
    let got = call.finish(Duration::from_secs(10)).await;
    let (error, message) = got.error().expect("the call ends with an error");
    assert_eq!(error, "pipeline-error-custom-transcriber-failed");
    assert!(message.contains("Unavailable model requested"), "{message}");
    assert_eq!(mock.streams().len(), 1, "not retried");

    // A refused request is the call's fault, not the fleet's: however many, the backend
    // stays ready for calls that ask right.
    for _ in 0..3 {
        let mut call = Call::open(&server.ws_url("/api/custom-transcriber/p"), 16000, 1)
            .await
            .expect("call opens");
        let _ = call.play(&[&audio], 16000, 20, true).await;
        assert!(call.finish(Duration::from_secs(10)).await.error().is_some());
    }
    assert_eq!(http_get_opt(server.addr, "/readyz").await, Some(200));
}

/// Faults a reconnect heals: every word comes back once, on the same backend.
#[tokio::test]
async fn transient_faults_reconnect_and_replay_with_no_word_lost_or_doubled() {
    let cases: Vec<(&str, RivaFault)> = vec![
        ("refused UNAVAILABLE", RivaFault::Refuse(Code::Unavailable)),
        (
            "refused DEADLINE_EXCEEDED",
            RivaFault::Refuse(Code::DeadlineExceeded),
        ),
        (
            "UNAVAILABLE mid-stream",
            RivaFault::StatusAfter(1.3, Code::Unavailable),
        ),
        (
            "INTERNAL mid-stream",
            RivaFault::StatusAfter(1.3, Code::Internal),
        ),
        ("maximum stream length", RivaFault::EndAfter(1.3)),
        ("connection dropped", RivaFault::DropAfter(1.3)),
        ("stalled", RivaFault::StallAfter(1.3)),
        ("half-open connection", RivaFault::DeafAfter(1.3)),
        (
            "slow first answer",
            RivaFault::SlowStart(Duration::from_millis(1500)),
        ),
    ];
    for (what, fault) in cases {
        let mock = RivaMock::start(RivaOptions::default()).await;
        mock.script(vec![fault]);
        let server = riva_server(&[("gpu", &mock, "")], true).await;
        let audio = script(&SAID, 16000, 700);
        let (came, got) = play_mono(&server, &audio, 16000, "golf").await;
        assert!(came, "{what}: {got:?}");
        assert!(got.error().is_none(), "{what}: {:?}", got.error());
        assert_eq!(
            final_words(&got, Channel::Customer),
            spoken(&SAID),
            "{what}: every word once"
        );
        let streams = mock.streams();
        no_violations(&streams);
        let expected = if what == "slow first answer" { 1 } else { 2 };
        assert_eq!(streams.len(), expected, "{what}: streams opened");
    }
}

/// RESOURCE_EXHAUSTED: the channel fails over at once, the backend takes no new stream for
/// its cooldown (readiness says so), and then takes calls again.
#[tokio::test]
async fn a_server_without_room_is_left_alone_for_its_cooldown() {
    let primary = RivaMock::start(RivaOptions::default()).await;
    let backup = RivaMock::start(RivaOptions::default()).await;
    primary.script(vec![RivaFault::StatusAfter(1.3, Code::ResourceExhausted)]);
    let server = riva_server(
        &[
            ("full", &primary, "cooldown_ms = 10000"),
            ("gpu2", &backup, ""),
        ],
        true,
    )
    .await;
    let audio = script(&SAID, 16000, 700);
    let (came, got) = play_mono(&server, &audio, 16000, "golf").await;
    assert!(came, "{got:?}");
    assert_eq!(final_words(&got, Channel::Customer), spoken(&SAID));
    assert_eq!(primary.streams().len(), 1, "no retry into a full server");
    assert_eq!(backup.streams().len(), 1);

    // Cooling: not ready, and a new call starts on the fallback.
    assert_eq!(http_get_opt(server.addr, "/readyz").await, Some(503));
    let (came, _) = play_mono(&server, &script(&SAID[..1], 16000, 700), 16000, "charlie").await;
    assert!(came);
    assert_eq!(
        primary.streams().len(),
        1,
        "nothing new to the cooling server"
    );
    let (_, metrics) = hark_testkit::http_fetch(server.addr, "/metrics")
        .await
        .expect("metrics");
    assert!(
        metrics.contains("hark_backend_cooldowns_total{backend=\"full\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "hark_provider_errors_total{backend=\"full\",code=\"grpc-resource-exhausted\"} 1"
        ),
        "{metrics}"
    );

    // The cooldown over, the server takes calls again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while http_get_opt(server.addr, "/readyz").await != Some(200) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "ready again after the cooldown"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (came, _) = play_mono(&server, &script(&SAID[..1], 16000, 700), 16000, "charlie").await;
    assert!(came);
    assert_eq!(primary.streams().len(), 2, "back on the first backend");
}

/// A fleet that cannot be reached: after three streams in a row fail before an answer the
/// backend cools too, so readiness turns new calls away and new calls start on the
/// fallback rather than each trying the dead servers first.
#[tokio::test]
async fn an_unreachable_fleet_cools_the_backend_and_calls_go_to_the_fallback() {
    let gone = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let backup = RivaMock::start(RivaOptions::default()).await;
    let dead: BackendConfig = toml::from_str(&format!(
        "type = \"riva\"\nurl = \"grpc://{gone}\"\ncooldown_ms = 60000"
    ))
    .unwrap();
    let mut registry = hark::backend::Registry::default();
    registry.insert("gpu", hark::registry::network("gpu", dead, None).unwrap());
    registry.insert(
        "gpu2",
        hark::registry::network("gpu2", riva_config(&backup, ""), None).unwrap(),
    );
    let mut config = test_config();
    let profile = hark::config::Profile {
        backend: "gpu".into(),
        fallback: vec!["gpu2".into()],
        channels: vec![hark::protocol::Channel::Customer],
        ..Default::default()
    };
    config.profiles.insert("p".into(), profile.clone());
    config.profiles.insert("default".into(), profile);
    let server = TestServer::start(config, registry).await;
    assert_eq!(http_get_opt(server.addr, "/readyz").await, Some(200));

    let audio = script(&SAID, 16000, 700);
    let (came, got) = play_mono(&server, &audio, 16000, "golf").await;
    assert!(came, "{got:?}");
    assert_eq!(final_words(&got, Channel::Customer), spoken(&SAID));
    assert_eq!(
        http_get_opt(server.addr, "/readyz").await,
        Some(503),
        "the default profile's backend is cooling"
    );
    let (came, _) = play_mono(&server, &script(&SAID[..1], 16000, 700), 16000, "charlie").await;
    assert!(came, "a new call is admitted and starts on the fallback");
    assert_eq!(backup.streams().len(), 2);
}

/// Every move along a chain is logged and counted, the last one too: Deepgram refuses the
/// key (dg → gpu at once), the GPU fleet cannot be reached, so its reconnects fail until it
/// cools, and the reconnect that finds it cooling moves the channel on (gpu → the last
/// backend). That move was made inside a reconnect and used to go uncounted.
#[tokio::test]
async fn every_move_along_the_chain_is_counted_the_last_one_too() {
    use hark_testkit::provider_mock::{Fault, Provider};

    let dg = super::relay::mock(Provider::Deepgram).await;
    dg.script(vec![Fault::Refuse(401)]);
    let gone = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        listener.local_addr().expect("local addr")
    };
    let dead: BackendConfig = toml::from_str(&format!(
        "type = \"riva\"\nurl = \"grpc://{gone}\"\ncooldown_ms = 60000"
    ))
    .expect("riva config parses");
    let last = RivaMock::start(RivaOptions::default()).await;
    let mut registry = hark::backend::Registry::default();
    registry.insert(
        "chaindg",
        hark::registry::network(
            "chaindg",
            super::relay::backend_config(&dg, Provider::Deepgram, ""),
            Some(ApiKey::new("TEST_KEY", super::relay::KEY.into())),
        )
        .expect("backend"),
    );
    registry.insert(
        "chaingpu",
        hark::registry::network("chaingpu", dead, None).expect("backend"),
    );
    registry.insert(
        "chainlast",
        hark::registry::network("chainlast", riva_config(&last, ""), None).expect("backend"),
    );
    let mut config = test_config();
    let profile = hark::config::Profile {
        backend: "chaindg".into(),
        fallback: vec!["chaingpu".into(), "chainlast".into()],
        channels: vec![hark::protocol::Channel::Customer],
        ..Default::default()
    };
    config.profiles.insert("p".into(), profile);
    let server = TestServer::start(config, registry).await;

    let audio = script(&SAID, 16000, 700);
    let (came, got) = play_mono(&server, &audio, 16000, "golf").await;
    assert!(came, "{got:?}");
    assert_eq!(final_words(&got, Channel::Customer), spoken(&SAID));
    assert_eq!(dg.connections().len(), 1, "no retry after a 401");
    assert_eq!(last.streams().len(), 1);
    let (_, metrics) = hark_testkit::http_fetch(server.addr, "/metrics")
        .await
        .expect("metrics");
    for series in [
        r#"hark_backend_failovers_total{from="chaindg",to="chaingpu"} 1"#,
        r#"hark_backend_failovers_total{from="chaingpu",to="chainlast"} 1"#,
        r#"hark_backend_fallbacks_total{backend="chainlast"} 1"#,
    ] {
        assert!(metrics.contains(series), "{series} missing from /metrics");
    }
}
