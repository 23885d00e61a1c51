//! The session's writer task: the only one that writes to the call's socket, so a client
//! that reads slowly never stalls the reader; what it has yet to send counts against the
//! call's memory budget.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::extract::ws::{Message, WebSocket};
use futures_util::SinkExt;
use futures_util::stream::SplitSink;
use tokio::sync::mpsc;

use crate::metrics as m;

/// A frame for the writer task; transcripts carry when and by which backend they were
/// reported, to time the way to the socket.
pub(super) struct Outgoing {
    pub(super) message: Message,
    pub(super) event: Option<(std::time::Instant, Arc<str>)>,
}

/// What the writer has yet to send, shared by the session (which counts it against the
/// call's memory budget) and the writer.
#[derive(Default)]
pub(super) struct WriteQueue {
    pub(super) bytes: AtomicUsize,
    /// Set when the call ends over its memory budget: transcripts still queued are dropped
    /// so the error and close frame go out next.
    pub(super) discard_transcripts: AtomicBool,
}

pub(super) fn message_bytes(message: &Message) -> usize {
    match message {
        Message::Text(t) => t.len(),
        Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b.len(),
        Message::Close(_) => 0,
    }
}

pub(super) async fn write_loop(
    mut tx: SplitSink<WebSocket, Message>,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    queue: Arc<WriteQueue>,
) {
    while let Some(out) = rx.recv().await {
        queue
            .bytes
            .fetch_sub(message_bytes(&out.message), Ordering::Relaxed);
        if out.event.is_some() && queue.discard_transcripts.load(Ordering::Relaxed) {
            continue;
        }
        let closing = matches!(out.message, Message::Close(_));
        if tx.send(out.message).await.is_err() || closing {
            break;
        }
        if let Some((at, backend)) = out.event {
            metrics::histogram!(m::EVENT_TO_SOCKET, "backend" => backend.to_string())
                .record(at.elapsed().as_secs_f64());
        }
    }
    let _ = tx.close().await;
}
