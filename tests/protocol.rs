//! The wire contract through a real server and a real websocket client.

mod common;

use std::time::Duration;

use common::backends::{self, FNV_OFFSET, fnv1a};
use common::{Call, TestServer, test_config};
use hark::config::Profile;
use hark::protocol::ServerMessage;

/// A server whose default profile records exactly what reaches the recognizer.
async fn recorder_server() -> TestServer {
    let mut config = test_config();
    config.profiles.insert(
        "default".into(),
        Profile {
            backend: "recorder".into(),
            ..Profile::default()
        },
    );
    TestServer::start(config, backends::registry()).await
}

fn expect_final(count: usize, hash: u64) -> impl Fn(&ServerMessage) -> bool {
    let want = format!("n={count} h={hash:016x}");
    move |m| matches!(m, ServerMessage::TranscriberResponse { transcription, .. } if *transcription == want)
}

#[tokio::test]
async fn odd_length_frames_lose_and_misalign_nothing() {
    let server = recorder_server().await;
    let mut call = Call::open(&server.ws_url("/api/custom-transcriber"), 16000, 2).await;
    // 1000 stereo samples: left counts up, right counts down.
    let left: Vec<i16> = (0..1000).collect();
    let right: Vec<i16> = (0..1000).map(|i| -i - 1).collect();
    let bytes: Vec<u8> = left
        .iter()
        .zip(&right)
        .flat_map(|(l, r)| [l.to_le_bytes(), r.to_le_bytes()])
        .flatten()
        .collect();
    // Frames of 1, 3, 5, 7 … bytes: every boundary falls inside a sample or between channels.
    let mut rest = bytes.as_slice();
    let mut size = 1;
    while !rest.is_empty() {
        let n = size.min(rest.len());
        call.bytes(rest[..n].to_vec()).await;
        rest = &rest[n..];
        size += 2;
    }
    let hash = |s: &[i16]| s.iter().fold(FNV_OFFSET, |h, &x| fnv1a(h, x));
    assert!(
        call.wait_for(Duration::from_secs(5), expect_final(1000, hash(&left)))
            .await,
        "customer channel got exactly its samples: {:?}",
        call.poll().finals("customer").last()
    );
    assert!(
        call.wait_for(Duration::from_secs(5), expect_final(1000, hash(&right)))
            .await,
        "assistant channel got exactly its samples: {:?}",
        call.poll().finals("assistant").last()
    );
    let got = call.hang_up().await;
    assert!(got.error().is_none());
    server.shutdown().await.unwrap();
}
