//! The platform-side client against servers that misbehave at the transport: none of them
//! can hold a call (or a whole bench run) forever, and a dropped call releases its socket.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hark_bench::client::Call;
use tokio::net::TcpListener;

#[tokio::test]
async fn a_server_that_never_answers_the_upgrade_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts the connection and keeps it, answering nothing.
    let held = tokio::spawn(async move { listener.accept().await.map(|(s, _)| s) });
    let started = Instant::now();
    let err = Call::connect_within(&format!("ws://{addr}/x"), &[], Duration::from_millis(300))
        .await
        .err()
        .expect("no upgrade, no call");
    assert!(err.to_string().contains("no websocket upgrade"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(held);
}

#[tokio::test]
async fn a_server_that_stops_reading_ends_the_playing_and_a_dropped_call_frees_the_socket() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (eof_tx, eof_rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
        // The start frame, then nothing read for a while: the client's sends back up.
        let _ = ws.next().await;
        tokio::time::sleep(Duration::from_secs(4)).await;
        // Then read until the client's socket is gone.
        while let Some(Ok(_)) = ws.next().await {}
        let _ = eof_tx.send(());
    });
    let mut call = Call::open(&format!("ws://{addr}/x"), 48000, 2)
        .await
        .expect("call opens");
    call.set_send_limit(Duration::from_millis(500));
    // 200 s of 48 kHz stereo, unpaced: far more than the socket buffers hold.
    let tone = vec![1000i16; 48000 * 200];
    let started = Instant::now();
    assert!(!call.play(&[&tone, &tone], 48000, 1000, false).await);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let error = call.poll().transport_error.clone().unwrap_or_default();
    assert!(error.contains("stopped reading"), "{error}");
    drop(call);
    tokio::time::timeout(Duration::from_secs(20), eof_rx)
        .await
        .expect("the server saw the dropped call's socket end")
        .unwrap();
    server.await.unwrap();
}
