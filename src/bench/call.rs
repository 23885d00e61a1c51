//! One benchmark call, made exactly as the platform makes it: the upgrade (with the same
//! credentials headers), the start frame, then interleaved s16le frames paced in real time,
//! while everything the server sends is logged with its arrival time.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::connect_async_with_config;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::conversation::Conversation;
use crate::protocol::ServerMessage;

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub secret: Option<String>,
    pub bearer: Option<String>,
    pub frame_ms: u32,
}

/// What happened on one call, times relative to the first audio frame.
#[derive(Debug, Default)]
pub struct CallLog {
    pub messages: Vec<(Duration, ServerMessage)>,
    pub close: Option<(u16, String)>,
    /// The connection could not be made, or broke without a close frame.
    pub transport_error: Option<String>,
    /// Messages that were not valid protocol JSON.
    pub unparseable: usize,
}

/// How long to keep listening after the last frame, for the last finals.
const GRACE: Duration = Duration::from_millis(1500);

pub async fn run(target: &Target, conv: &Conversation) -> CallLog {
    let mut log = CallLog::default();
    let request = match request(target) {
        Ok(r) => r,
        Err(e) => {
            log.transport_error = Some(e);
            return log;
        }
    };
    // Nagle's delay on our side would be measured as the server's latency.
    let ws = match connect_async_with_config(request, None, true).await {
        Ok((ws, _)) => ws,
        Err(e) => {
            log.transport_error = Some(format!("connect: {e}"));
            return log;
        }
    };
    let (mut tx, mut rx) = ws.split();
    let start = format!(
        r#"{{"type":"start","encoding":"linear16","container":"raw","sampleRate":{},"channels":2}}"#,
        conv.rate
    );
    if let Err(e) = tx.send(Message::text(start)).await {
        log.transport_error = Some(format!("send start: {e}"));
        return log;
    }
    let t0 = Instant::now();
    let reader = tokio::spawn(async move {
        let mut log = CallLog::default();
        while let Some(msg) = rx.next().await {
            match msg {
                Ok(Message::Text(text)) => match serde_json::from_str(&text) {
                    Ok(m) => log.messages.push((t0.elapsed(), m)),
                    Err(_) => log.unparseable += 1,
                },
                Ok(Message::Close(frame)) => {
                    log.close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                    return log;
                }
                Ok(_) => {}
                Err(e) => {
                    log.transport_error = Some(format!("read: {e}"));
                    return log;
                }
            }
        }
        log
    });

    let per_frame = (conv.rate * target.frame_ms / 1000).max(1) as usize;
    let started = tokio::time::Instant::now();
    let mut sent = 0;
    let total = conv.customer.len();
    while sent < total && !reader.is_finished() {
        let n = per_frame.min(total - sent);
        let mut bytes = Vec::with_capacity(n * 4);
        for i in sent..sent + n {
            bytes.extend_from_slice(&conv.customer[i].to_le_bytes());
            bytes.extend_from_slice(&conv.assistant[i].to_le_bytes());
        }
        if tx.send(Message::binary(bytes)).await.is_err() {
            break;
        }
        sent += n;
        let due = started + Duration::from_secs_f64(sent as f64 / f64::from(conv.rate));
        tokio::time::sleep_until(due).await;
    }
    if !reader.is_finished() {
        tokio::time::sleep(GRACE).await;
        let _ = tx.send(Message::Close(None)).await;
    }
    let abort = reader.abort_handle();
    match tokio::time::timeout(Duration::from_secs(5), reader).await {
        Ok(Ok(got)) => {
            log.messages = got.messages;
            log.close = got.close;
            log.transport_error = got.transport_error;
            log.unparseable = got.unparseable;
        }
        _ => {
            abort.abort();
            log.transport_error = Some("server did not close the call".into());
        }
    }
    log
}

fn request(
    target: &Target,
) -> Result<tokio_tungstenite::tungstenite::handshake::client::Request, String> {
    let mut req = target
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| format!("bad url {}: {e}", target.url))?;
    let headers = req.headers_mut();
    if let Some(secret) = &target.secret {
        let v = HeaderValue::from_str(secret).map_err(|_| "secret is not a valid header")?;
        headers.insert("x-vapi-secret", v);
    }
    if let Some(token) = &target.bearer {
        let v = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "bearer token is not a valid header")?;
        headers.insert("authorization", v);
    }
    Ok(req)
}
