//! Everything around the websocket: authentication and admission before the upgrade, the
//! health, readiness and metrics endpoints, and graceful shutdown.

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hark::audio::AudioSource;
use hark::backend::{Backend, BackendError, ChannelSpec, EventSink, Registry};
use hark::config::{Config, Profile};
use hark::protocol::CLOSE_GOING_AWAY;
use hark_bench::protocol::{Channel, ServerMessage, TranscriptType};
use hark_testkit::backends::{self, FNV_OFFSET, fnv1a};
use hark_testkit::{Call, TestServer, http_get, test_config};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::error::ProtocolError;

const PATH: &str = "/api/custom-transcriber";

/// Test config whose default profile uses the recorder backend.
fn recorder_config() -> Config {
    hark_testkit::config_with_default_backend("recorder")
}

/// The HTTP status an upgrade attempt was refused with; panics if it was not an HTTP refusal.
async fn refused_status(url: &str, headers: &[(&str, &str)]) -> u16 {
    match Call::connect(url, headers).await {
        Err(tungstenite::Error::Http(resp)) => resp.status().as_u16(),
        Err(e) => panic!("expected an HTTP refusal for {headers:?}, got {e}"),
        Ok(_) => panic!("expected an HTTP refusal for {headers:?}, the upgrade succeeded"),
    }
}

/// Opens a call with `headers`, checks it is served (a recorder final comes back), hangs up.
async fn served(url: &str, headers: &[(&str, &str)]) {
    let mut call = Call::connect(url, headers)
        .await
        .unwrap_or_else(|e| panic!("upgrade with {headers:?} works: {e}"));
    call.text(&hark_testkit::start_frame(16000, 1)).await;
    call.bytes(vec![1, 0, 2, 0]).await;
    let want = format!("n=2 h={:016x}", hash(&[1, 2]));
    assert!(
        call.wait_for(Duration::from_secs(10), |m| matches!(m, ServerMessage::TranscriberResponse { transcription, .. } if *transcription == want))
            .await,
        "call with {headers:?} is served: {:?}",
        call.poll().messages
    );
    let got = call.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());
}

fn hash(samples: &[i16]) -> u64 {
    samples.iter().fold(FNV_OFFSET, |h, &x| fnv1a(h, x))
}

/// A header's value in a raw HTTP response from `http_get`.
fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    let head = response.split("\r\n\r\n").next()?;
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[tokio::test]
async fn without_auth_configured_no_credentials_are_needed() {
    let server = TestServer::start(recorder_config(), backends::registry()).await;
    served(&server.ws_url(PATH), &[]).await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn secret_or_bearer_token_is_required_before_the_upgrade() {
    let mut config = recorder_config();
    config.auth.secret = Some("s3cret-0123456789abcdef".into());
    config.auth.bearer_tokens = vec!["tok-0123456789abcdef".into()];
    let server = TestServer::start(config, backends::registry()).await;
    let url = server.ws_url(PATH);

    for headers in [
        &[][..],
        &[("x-vapi-secret", "wrong")][..],
        &[("x-vapi-secret", "s3cret-0123456789abcde")][..],
        &[("authorization", "Bearer wrong")][..],
        // The secret is not a bearer token, and a token is not the secret.
        &[("authorization", "Bearer s3cret-0123456789abcdef")][..],
        &[("x-vapi-secret", "tok-0123456789abcdef")][..],
        &[("authorization", "Basic tok-0123456789abcdef")][..],
        // Empty credentials never match (an empty Secret mounted as HARK_SECRET is refused
        // at start-up; this is the defence behind it).
        &[("x-vapi-secret", "")][..],
        &[("authorization", "Bearer ")][..],
    ] {
        assert_eq!(refused_status(&url, headers).await, 401, "{headers:?}");
    }
    // Profiles are guarded too.
    assert_eq!(
        refused_status(&server.ws_url("/api/custom-transcriber/default"), &[]).await,
        401
    );

    served(&url, &[("x-vapi-secret", "s3cret-0123456789abcdef")]).await;
    served(&url, &[("authorization", "Bearer tok-0123456789abcdef")]).await;
    served(&url, &[("Authorization", "bearer tok-0123456789abcdef")]).await;
    // A wrong credential next to a right one does not spoil it.
    served(
        &url,
        &[
            ("x-vapi-secret", "wrong"),
            ("authorization", "Bearer tok-0123456789abcdef"),
        ],
    )
    .await;

    // Refusals are counted.
    let (status, metrics) = http_get(server.addr, "/metrics", &[]).await;
    assert_eq!(status, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("hark_rejected_upgrades_total") && l.contains("unauthorized")),
        "{metrics}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let server = TestServer::start(recorder_config(), backends::registry()).await;

    let (status, body) = http_get(server.addr, "/healthz", &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = http_get(server.addr, "/readyz", &[]).await;
    assert_eq!(status, 200, "{body}");

    served(&server.ws_url(PATH), &[]).await;

    let (status, body) = http_get(server.addr, "/metrics", &[]).await;
    assert_eq!(status, 200, "{body}");
    let content_type = header(&body, "content-type").unwrap_or_default();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let sessions = body
        .lines()
        .find(|l| l.starts_with("hark_sessions_total{") && l.contains(r#"profile="default""#))
        .unwrap_or_else(|| panic!("hark_sessions_total after a call:\n{body}"));
    let count: f64 = sessions
        .rsplit(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("sample value in {sessions:?}"));
    assert!(count >= 1.0, "{sessions}");
    assert!(
        body.contains("# TYPE hark_sessions_total counter"),
        "{body}"
    );
    server.shutdown().await.unwrap();
}

/// A backend that is never ready (a model still loading).
struct NotReady;

impl Backend for NotReady {
    fn is_ready(&self) -> bool {
        false
    }

    fn start(&self, _: ChannelSpec, _: AudioSource, _: EventSink) -> Result<(), BackendError> {
        Err(BackendError::new("not ready"))
    }
}

#[tokio::test]
async fn a_backend_that_is_not_ready_is_not_offered() {
    let mut registry: Registry = backends::registry();
    registry.insert("not-ready", Arc::new(NotReady));
    let mut config = test_config();
    config.profiles.insert(
        "default".into(),
        Profile {
            backend: "not-ready".into(),
            ..Profile::default()
        },
    );
    let server = TestServer::start(config, registry).await;

    let (status, body) = http_get(server.addr, "/healthz", &[]).await;
    assert_eq!(status, 200, "alive even when not ready: {body}");
    let (status, body) = http_get(server.addr, "/readyz", &[]).await;
    assert_eq!(status, 503, "{body}");
    match Call::connect(&server.ws_url(PATH), &[]).await {
        Err(tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 503);
            assert!(resp.headers().contains_key("retry-after"));
        }
        Err(e) => panic!("expected HTTP 503, got {e}"),
        Ok(_) => panic!("expected HTTP 503, the upgrade succeeded"),
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn at_capacity_upgrades_get_503_with_retry_after() {
    let mut config = recorder_config();
    config.max_sessions = 1;
    let server = TestServer::start(config, backends::registry()).await;
    let url = server.ws_url(PATH);

    // A call takes its slot at the start frame: wait until the first one is answered.
    let mut first = Call::open(&url, 16000, 2).await.expect("call opens");
    assert!(first.silence(2, 16000, 0.1).await);
    assert!(
        first
            .wait_for(Duration::from_secs(30), |m| matches!(
                m,
                ServerMessage::TranscriberResponse { .. }
            ))
            .await,
        "the first call is transcribed"
    );
    match Call::connect(&url, &[]).await {
        Err(tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 503);
            let retry = resp
                .headers()
                .get("retry-after")
                .expect("503 carries Retry-After")
                .to_str()
                .unwrap();
            assert!(
                retry.parse::<u64>().is_ok_and(|s| s >= 1),
                "Retry-After is a delay in seconds: {retry:?}"
            );
        }
        Err(e) => panic!("expected HTTP 503, got {e}"),
        Ok(_) => panic!("expected HTTP 503, a second call was admitted over max_sessions = 1"),
    }
    // The body says what was reached and what the caller can do.
    let (status, answer) = hark_testkit::refused_upgrade(server.addr, PATH).await;
    assert_eq!(status, 503, "{answer}");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    for says in ["max_sessions = 1", "Retry after 2 s", "another instance"] {
        assert!(
            body.contains(says),
            "the body does not say {says:?}: {body:?}"
        );
    }
    let (status, body) = http_get(server.addr, "/readyz", &[]).await;
    assert_eq!(status, 503, "not ready at capacity: {body}");

    let got = first.hang_up().await;
    assert!(got.error().is_none(), "{:?}", got.error());

    // The slot frees once the first session has wound down.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match Call::connect(&url, &[]).await {
            Ok(call) => {
                call.hang_up().await;
                break;
            }
            Err(tungstenite::Error::Http(resp)) if resp.status() == 503 => {
                assert!(
                    Instant::now() < deadline,
                    "slot not freed 15 s after the first call hung up"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("unexpected refusal: {e}"),
        }
    }
    // That call has hung up too; the slot frees again for a full call.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (status, _) = http_get(server.addr, "/readyz", &[]).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "slot not freed after a hang-up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    served(&url, &[]).await;
    server.shutdown().await.unwrap();
}

/// A call the first backend has no headroom for is refused with 503 and Retry-After, a body
/// carrying the backend's figures and what to do, and the refusal's own metric reason
/// (`headroom-wave`; not `capacity`, which is `max_sessions`).
#[tokio::test]
async fn a_call_without_headroom_is_refused_with_the_figures_and_what_to_do() {
    let mut config = recorder_config();
    config.profiles.insert(
        "full".into(),
        Profile {
            backend: "no-headroom".into(),
            ..Profile::default()
        },
    );
    let server = TestServer::start(config, backends::registry()).await;
    let path = format!("{PATH}/full");

    let (status, answer) = hark_testkit::refused_upgrade(server.addr, &path).await;
    assert_eq!(status, 503, "{answer}");
    assert_eq!(header(&answer, "retry-after"), Some("2"), "{answer}");
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let figures = backends::no_headroom_refusal().to_string();
    for says in [
        "no headroom for another call",
        figures.as_str(),
        "retry after 2 s",
        "another instance",
        "more cores",
    ] {
        assert!(
            body.contains(says),
            "the body does not say {says:?}: {body:?}"
        );
    }
    // hark-bench's client hears the same refusal.
    assert_eq!(refused_status(&server.ws_url(&path), &[]).await, 503);

    let (status, metrics) = http_get(server.addr, "/metrics", &[]).await;
    assert_eq!(status, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("hark_rejected_upgrades_total{reason=\"headroom-wave\"}")),
        "no refusal counted with reason headroom-wave:\n{metrics}"
    );
    // The default profile's recorder still takes calls.
    served(&server.ws_url(PATH), &[]).await;
    server.shutdown().await.unwrap();
}

/// A probe whose connection was accepted just before SIGTERM, its request still on the way,
/// gets the draining answer (503) rather than a connection closed unanswered: a load balancer
/// reads the first as "take me out", the second as a failure (CI caught the race).
#[tokio::test]
async fn a_request_on_its_way_as_the_drain_begins_is_answered() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut server = TestServer::start(recorder_config(), backends::registry()).await;
    // A live call keeps the server draining rather than stopping at once.
    let mut call = Call::open(&server.ws_url(PATH), 16000, 1)
        .await
        .expect("call opens");
    call.play(&[&[0i16; 1600]], 16000, 20, false).await;

    let mut probe = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    // Accepted and idle, as a probe is between its connect and its request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.begin_shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let req = format!(
        "GET /readyz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        server.addr
    );
    probe.write_all(req.as_bytes()).await.expect("request sent");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), probe.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "the probe is answered not ready, not dropped: {answer:?}"
    );
    call.hang_up().await;
}

#[tokio::test]
async fn shutdown_drains_live_calls_then_closes_them_going_away() {
    const DRAIN: Duration = Duration::from_millis(1500);
    let mut config = recorder_config();
    config.drain_timeout_ms = DRAIN.as_millis() as u64;
    let mut server = TestServer::start(config, backends::registry()).await;
    let url = server.ws_url(PATH);

    let mut call = Call::open(&url, 16000, 1).await.expect("call opens");
    let mut sent: Vec<i16> = Vec::new();
    let final_for = |sent: &[i16]| {
        let want = format!("n={} h={:016x}", sent.len(), hash(sent));
        move |m: &ServerMessage| matches!(m, ServerMessage::TranscriberResponse { transcription, channel: Channel::Customer, transcript_type: TranscriptType::Final } if *transcription == want)
    };
    let before: Vec<i16> = (0..1600).collect();
    call.play(&[&before], 16000, 20, false).await;
    sent.extend(&before);
    assert!(
        call.wait_for(Duration::from_secs(10), final_for(&sent))
            .await,
        "final before shutdown: {:?}",
        call.poll().messages
    );

    let shutdown_at = Instant::now();
    server.begin_shutdown();

    // The live call keeps working during the drain.
    let during: Vec<i16> = (0..1600).map(|i| -i).collect();
    assert!(
        call.play(&[&during], 16000, 20, false).await,
        "audio taken during the drain"
    );
    sent.extend(&during);
    assert!(
        call.wait_for(Duration::from_secs(10), final_for(&sent))
            .await,
        "final for audio sent during the drain: {:?}",
        call.poll().messages
    );

    // New calls are refused while draining: 503, or the listener is already closed.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Call::connect(&url, &[]).await {
            Err(tungstenite::Error::Http(resp)) => {
                assert_eq!(resp.status(), 503, "refused during the drain");
                assert!(resp.headers().contains_key("retry-after"));
                break;
            }
            // Refused, or reset when it was still in the backlog as the listener closed.
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionRefused
                        | ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                        | ErrorKind::UnexpectedEof
                ) =>
            {
                break;
            }
            Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => break,
            Err(tungstenite::Error::Protocol(ProtocolError::HandshakeIncomplete)) => break,
            Err(e) => panic!("unexpected error during the drain: {e}"),
            // Only possible in the instant before the shutdown takes effect: try again.
            Ok(extra) => {
                extra.hang_up().await;
                assert!(
                    Instant::now() < deadline,
                    "new calls still admitted 10 s into the drain"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    let got = call.finish(Duration::from_secs(30)).await;
    let (code, reason) = got.close.clone().expect("server sent a close frame");
    assert_eq!(code, CLOSE_GOING_AWAY, "closed going away: {reason:?}");
    assert!(!reason.is_empty(), "close reason says why");
    let closed_at = got.closed_at.expect("closed");
    assert!(
        closed_at.duration_since(shutdown_at) >= DRAIN,
        "call closed {:?} after shutdown began, before the {DRAIN:?} drain was over",
        closed_at.duration_since(shutdown_at)
    );
    assert!(
        got.error().is_none(),
        "a drain is not an error: {:?}",
        got.error()
    );
    let last_final = got
        .messages
        .iter()
        .rfind(|(_, m)| final_for(&sent)(m))
        .map(|(at, _)| *at)
        .expect("final for all audio received");
    assert!(last_final <= closed_at, "finals came before the close");

    // The server task ends in bounded time.
    let stopped = tokio::time::timeout(Duration::from_secs(30), server.shutdown())
        .await
        .expect("server finished within 30 s of the drain");
    stopped.expect("server shut down cleanly");
}

#[tokio::test]
async fn shutdown_without_calls_is_prompt() {
    let server = TestServer::start(recorder_config(), backends::registry()).await;
    let (status, _) = http_get(server.addr, "/healthz", &[]).await;
    assert_eq!(status, 200);
    tokio::time::timeout(Duration::from_secs(20), server.shutdown())
        .await
        .expect("idle server stops within 20 s")
        .expect("server shut down cleanly");
}

/// A call that opened but had not sent its start frame when shutdown began is still a call
/// the platform counts on: once its start frame comes it is served and drains like the
/// others. One that never sends it is closed at the start timeout, not left open.
#[tokio::test]
async fn shutdown_lets_opened_calls_start_and_closes_those_that_never_do() {
    const DRAIN: Duration = Duration::from_millis(1_500);
    let mut config = recorder_config();
    config.drain_timeout_ms = DRAIN.as_millis() as u64;
    config.start_timeout_ms = 2_000;
    let mut server = TestServer::start(config, backends::registry()).await;
    let mut late = Call::connect(&server.ws_url(PATH), &[])
        .await
        .expect("websocket opens");
    let never = Call::connect(&server.ws_url(PATH), &[])
        .await
        .expect("websocket opens");
    server.begin_shutdown();
    tokio::time::sleep(Duration::from_millis(200)).await;
    late.text(&hark_testkit::start_frame(16_000, 2)).await;
    assert!(late.silence(2, 16_000, 0.5).await);
    let late = late.finish(Duration::from_secs(30)).await;
    assert!(late.error().is_none(), "{:?}", late.error());
    assert!(
        !late.finals("customer").is_empty(),
        "the late call was served: {:?}",
        late.messages
    );
    assert_eq!(late.close.as_ref().map(|c| c.0), Some(CLOSE_GOING_AWAY));
    let never = never.finish(Duration::from_secs(30)).await;
    assert_eq!(
        never.error().map(|(code, _)| code).as_deref(),
        Some("start-timeout")
    );
    server.shutdown().await.unwrap();
}

/// A URL written with a trailing slash (as `hark assistant-config` used to accept) is the
/// same call, for the default profile and a named one; a path hark does not serve gets a
/// 404 that says which paths it does, never an empty body.
#[tokio::test]
async fn a_trailing_slash_is_served_and_a_wrong_path_says_what_exists() {
    let mut config = recorder_config();
    let profile = config.profiles["default"].clone();
    config.profiles.insert("sales".into(), profile);
    let server = TestServer::start(config, backends::registry()).await;
    served(&server.ws_url("/api/custom-transcriber/"), &[]).await;
    served(&server.ws_url("/api/custom-transcriber/sales/"), &[]).await;
    // An unknown profile is still refused, slash or not.
    assert_eq!(
        refused_status(&server.ws_url("/api/custom-transcriber/nope/"), &[]).await,
        404
    );
    for path in [
        "/api/custom-transcribe",
        "/api/custom-transcriber/sales/extra",
        "/",
        "/ws",
    ] {
        let (status, response) = http_get(server.addr, path, &[]).await;
        assert_eq!(status, 404, "{path}");
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        for named in [
            "GET /api/custom-transcriber (websocket",
            "GET /api/custom-transcriber/{profile} (websocket)",
            "/healthz",
            "/metrics",
        ] {
            assert!(body.contains(named), "{path}: {named} not in {body:?}");
        }
    }
    server.shutdown().await.unwrap();
}

/// With `admin_listen`, metrics and readiness (backend and profile names, refused logins)
/// are served only there; the call port keeps calls and `/healthz`.
#[tokio::test]
async fn metrics_and_readiness_move_to_the_admin_address() {
    let mut config = recorder_config();
    config.admin_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let server = TestServer::start(config, backends::registry()).await;
    let admin = server.admin.expect("an admin address");
    assert_ne!(admin, server.addr);
    for path in ["/metrics", "/readyz"] {
        let (status, response) = http_get(server.addr, path, &[]).await;
        assert_eq!(status, 404, "{path} on the call port");
        // The 404 names what the call port serves, and not what it does not.
        let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        assert!(body.contains("GET /healthz"), "{body:?}");
        assert!(!body.contains("GET /metrics"), "{body:?}");
        assert_eq!(
            http_get(admin, path, &[]).await.0,
            200,
            "{path} on the admin port"
        );
    }
    assert_eq!(http_get(server.addr, "/healthz", &[]).await.0, 200);
    assert_eq!(http_get(admin, "/healthz", &[]).await.0, 200);
    let (status, response) = http_get(admin, "/api/custom-transcriber", &[]).await;
    assert_eq!(status, 404, "no calls on the admin port");
    assert!(response.contains("GET /readyz"), "{response:?}");
    served(&server.ws_url(PATH), &[]).await;
    let (_, metrics) = http_get(admin, "/metrics", &[]).await;
    assert!(metrics.contains("hark_sessions_total"), "{metrics}");
    server.shutdown().await.unwrap();
}
