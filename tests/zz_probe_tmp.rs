mod common;
use std::time::{Duration, Instant};
use common::{backends, Call, TestServer, test_config};
use hark::config::Profile;

fn cfg() -> hark::config::Config {
    let mut config = test_config();
    config.profiles.insert("default".into(), Profile { backend: "recorder".into(), ..Profile::default() });
    config
}

#[tokio::test]
async fn probe_timeout_message() {
    let mut c = cfg();
    c.start_timeout_ms = 300;
    let server = TestServer::start(c, backends::registry()).await;
    let call = Call::connect(&server.ws_url("/api/custom-transcriber"), &[]).await.unwrap();
    let got = call.finish(Duration::from_secs(5)).await;
    eprintln!("PROBE timeout: {:?} {:?}", got.error(), got.close);
}

#[tokio::test]
async fn probe_unstarted_during_drain() {
    let mut c = cfg();
    c.drain_timeout_ms = 500;
    c.start_timeout_ms = 8000;
    let mut server = TestServer::start(c, backends::registry()).await;
    let call = Call::connect(&server.ws_url("/api/custom-transcriber"), &[]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t0 = Instant::now();
    server.begin_shutdown();
    let got = call.finish(Duration::from_secs(30)).await;
    eprintln!("PROBE unstarted: closed after {:?}: {:?} {:?}", got.closed_at.unwrap() - t0, got.error(), got.close);
    let r = server.shutdown().await;
    eprintln!("PROBE server stopped after {:?}: {r:?}", t0.elapsed());
}

#[tokio::test]
async fn probe_refusal_kind() {
    let mut c = cfg();
    c.drain_timeout_ms = 2000;
    let mut server = TestServer::start(c, backends::registry()).await;
    let url = server.ws_url("/api/custom-transcriber");
    let call = Call::open(&url, 16000, 1).await;
    server.begin_shutdown();
    for _ in 0..5 {
        match Call::connect(&url, &[]).await {
            Ok(x) => { eprintln!("PROBE refusal: admitted"); x.hang_up().await; }
            Err(e) => eprintln!("PROBE refusal: {e:?}"),
        }
    }
    let got = call.finish(Duration::from_secs(30)).await;
    eprintln!("PROBE close {:?}", got.close);
    server.shutdown().await.unwrap();
}
