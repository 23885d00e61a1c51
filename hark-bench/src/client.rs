//! One call made exactly as the platform makes it: the upgrade (with the platform's
//! credential headers), the start frame, then interleaved s16le frames paced in real time,
//! while a task logs everything the server sends with its arrival time. `hark bench` plays
//! its conversations with it, and the server's tests call hark with it.

use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async_with_config};

use serde::{Deserialize, Serialize};

use crate::protocol::{ServerMessage, TranscriptType, interleave, start_frame};

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long the TCP connect and websocket upgrade may take: a server that accepts and never
/// answers must not hold a run forever.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one send may wait: a server that stops reading fills the socket's buffers, and
/// then every send would wait forever.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to connect: the URL and the credentials the platform would send.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub url: String,
    /// Sent as `x-vapi-secret`.
    pub secret: Option<String>,
    /// Sent as `Authorization: Bearer`.
    pub bearer: Option<String>,
}

impl Target {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        if let Some(secret) = &self.secret {
            headers.push(("x-vapi-secret".into(), secret.clone()));
        }
        if let Some(token) = &self.bearer {
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        headers
    }
}

/// Everything the server sent on one call.
#[derive(Debug, Default, Clone)]
pub struct Received {
    /// Messages with the time they arrived.
    pub messages: Vec<(Instant, ServerMessage)>,
    /// Close code and reason, if the server sent a close frame.
    pub close: Option<(u16, String)>,
    /// When the socket ended (close frame, error or end of stream).
    pub closed_at: Option<Instant>,
    /// Text messages that were not protocol JSON.
    pub unparseable: Vec<String>,
    /// The socket broke without a close frame, or did not close in time.
    pub transport_error: Option<String>,
    /// The server refused the upgrade (any answer but 101; 503 when it is full): the call
    /// never opened, and the platform would have taken it to its fallback at once.
    pub refused: Option<Refusal>,
}

/// How much of a refusal's body is kept: enough for a server's reason and its figures.
pub const REFUSAL_BODY_CHARS: usize = 200;

/// A server's answer to an upgrade it refused: the status and what its body says, so a
/// report shows why (the server's own words), not only that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub status: u16,
    /// The start of the body ([`REFUSAL_BODY_CHARS`], "…" where cut), control characters
    /// escaped, so a hostile server cannot write to the terminal; empty if none came.
    pub body: String,
}

impl Refusal {
    /// From the status and the body bytes that came with the head (a websocket client
    /// reads no further: a body sent late is shown cut or empty).
    pub fn new(status: u16, body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let mut kept = String::new();
        for c in text.chars().take(REFUSAL_BODY_CHARS) {
            if c.is_control() {
                kept.extend(c.escape_default());
            } else {
                kept.push(c);
            }
        }
        if text.chars().nth(REFUSAL_BODY_CHARS).is_some() {
            kept.push('…');
        }
        Self { status, body: kept }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.body.is_empty() {
            write!(f, "HTTP {} (no body)", self.status)
        } else {
            write!(f, "HTTP {} \"{}\"", self.status, self.body)
        }
    }
}

/// Why a call could not be opened.
#[derive(Debug, Clone, PartialEq)]
pub enum DialError {
    /// The server answered the upgrade with something other than 101.
    Refused(Refusal),
    /// No answer: the connection, the TLS handshake or the time limit failed.
    Failed(String),
}

impl Received {
    pub fn transcripts(&self, channel: &str, kind: TranscriptType) -> Vec<String> {
        self.messages
            .iter()
            .filter_map(|(_, m)| match m {
                ServerMessage::TranscriberResponse {
                    transcription,
                    channel: c,
                    transcript_type,
                } if c.as_str() == channel && *transcript_type == kind => {
                    Some(transcription.clone())
                }
                _ => None,
            })
            .collect()
    }

    pub fn finals(&self, channel: &str) -> Vec<String> {
        self.transcripts(channel, TranscriptType::Final)
    }

    pub fn partials(&self, channel: &str) -> Vec<String> {
        self.transcripts(channel, TranscriptType::Partial)
    }

    /// A channel's finals, each with the seconds from `since` to when it came (negative:
    /// before it).
    pub fn finals_since(&self, channel: &str, since: Instant) -> Vec<(f64, String)> {
        self.messages
            .iter()
            .filter_map(|(t, m)| match m {
                ServerMessage::TranscriberResponse {
                    transcription,
                    channel: c,
                    transcript_type: TranscriptType::Final,
                } if c.as_str() == channel => {
                    let after = match t.checked_duration_since(since) {
                        Some(d) => d.as_secs_f64(),
                        None => -since.duration_since(*t).as_secs_f64(),
                    };
                    Some((after, transcription.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The first error message, as (error code, message).
    pub fn error(&self) -> Option<(String, String)> {
        self.messages.iter().find_map(|(_, m)| match m {
            ServerMessage::Error { error, message } => Some((error.clone(), message.clone())),
            _ => None,
        })
    }
}

/// What the reader task saw, in order.
enum Incoming {
    Message(Instant, ServerMessage),
    Unparseable(String),
    Closed(Option<(u16, String)>, Option<String>),
}

/// One call from the platform's side: writes audio while a task reads what comes back.
pub struct Call {
    tx: SplitSink<Ws, Message>,
    rx: mpsc::UnboundedReceiver<Incoming>,
    /// The reader task, which holds the socket's read half: aborted when the call is
    /// dropped, so the socket is released even if the server never closed it.
    reader: JoinHandle<()>,
    send_limit: Duration,
    pub got: Received,
}

impl Drop for Call {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Call {
    /// Opens a call to `target` (the websocket, nothing sent yet).
    pub async fn dial(target: &Target) -> Result<Self, DialError> {
        let headers = target.headers();
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Self::connect(&target.url, &pairs)
            .await
            .map_err(|e| match e {
                tungstenite::Error::Http(r) => DialError::Refused(Refusal::new(
                    r.status().as_u16(),
                    r.body().as_deref().unwrap_or_default(),
                )),
                e => DialError::Failed(format!("connect: {e}")),
            })
    }

    /// Whether anything listens at `target`: `Err` (what to check) when its host refuses
    /// the connection or the URL cannot be dialled, so a run against nothing stops before
    /// it begins rather than report every call as failed.
    pub async fn reachable(target: &Target) -> Result<(), String> {
        match Self::connect(&target.url, &[]).await {
            Err(tungstenite::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                Err(format!(
                    "nothing listens at {}: {e} (is the server running, on that address and \
                     port? `hark serve` says its URL when it starts)",
                    target.url
                ))
            }
            Err(tungstenite::Error::Url(e)) => Err(format!("{}: {e}", target.url)),
            Ok(call) => {
                call.hang_up().await;
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }

    /// Opens a call to `target` and hangs up at once: the refusal if the server refused
    /// the upgrade, `None` otherwise (any other failure is left for the run to report per
    /// call).
    pub async fn refused(target: &Target) -> Option<Refusal> {
        match Self::dial(target).await {
            Err(DialError::Refused(refusal)) => Some(refusal),
            Ok(call) => {
                call.hang_up().await;
                None
            }
            Err(DialError::Failed(_)) => None,
        }
    }

    /// Opens the websocket with extra headers, without sending anything, within
    /// [`CONNECT_TIMEOUT`].
    pub async fn connect(url: &str, headers: &[(&str, &str)]) -> Result<Self, tungstenite::Error> {
        Self::connect_within(url, headers, CONNECT_TIMEOUT).await
    }

    /// [`Call::connect`] with its own time limit.
    pub async fn connect_within(
        url: &str,
        headers: &[(&str, &str)],
        limit: Duration,
    ) -> Result<Self, tungstenite::Error> {
        let mut req = url.into_client_request()?;
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| tungstenite::Error::HttpFormat(e.into()))?;
            let value =
                HeaderValue::from_str(v).map_err(|e| tungstenite::Error::HttpFormat(e.into()))?;
            req.headers_mut().insert(name, value);
        }
        // Nagle's delay on our side would be measured as the server's latency.
        let (ws, _) = tokio::time::timeout(limit, connect_async_with_config(req, None, true))
            .await
            .map_err(|_| {
                tungstenite::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no websocket upgrade within {limit:?}"),
                ))
            })??;
        Ok(Self::from_ws(ws))
    }

    /// A call over a websocket opened elsewhere (e.g. over TLS with a test CA).
    pub fn from_ws(ws: Ws) -> Self {
        let (tx, rx) = ws.split();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_all(rx, in_tx));
        Self {
            tx,
            rx: in_rx,
            reader,
            send_limit: SEND_TIMEOUT,
            got: Received::default(),
        }
    }

    /// Opens the websocket and sends the start frame.
    pub async fn open(url: &str, sample_rate: u32, channels: usize) -> Result<Self, String> {
        let mut call = Self::connect(url, &[])
            .await
            .map_err(|e| format!("connect: {e}"))?;
        call.start(sample_rate, channels).await?;
        Ok(call)
    }

    /// Sends the start frame.
    pub async fn start(&mut self, sample_rate: u32, channels: usize) -> Result<(), String> {
        self.send(Message::text(start_frame(sample_rate, channels)))
            .await
            .map_err(|e| format!("send start: {e}"))
    }

    pub async fn text(&mut self, text: &str) {
        let _ = self.send(Message::text(text)).await;
    }

    pub async fn bytes(&mut self, bytes: Vec<u8>) {
        let _ = self.send(Message::binary(bytes)).await;
    }

    /// Sends one audio frame, saying why if the server did not take it.
    pub async fn audio(&mut self, frame: Vec<u8>) -> Result<(), String> {
        self.send(Message::binary(frame)).await
    }

    /// Sets how long one send may wait (default [`SEND_TIMEOUT`]).
    pub fn set_send_limit(&mut self, limit: Duration) {
        self.send_limit = limit;
    }

    /// Sends one message within the send limit; a server that stopped reading is recorded as
    /// a transport error.
    async fn send(&mut self, message: Message) -> Result<(), String> {
        match tokio::time::timeout(self.send_limit, self.tx.send(message)).await {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => {
                let e = format!("send: the server stopped reading for {:?}", self.send_limit);
                self.got.transport_error.get_or_insert_with(|| e.clone());
                Err(e)
            }
        }
    }

    /// Streams per-channel samples as interleaved s16le frames of `frame_ms`, paced in
    /// real time when `paced`. Returns false if the server stopped taking audio (the send
    /// failed, or it closed the call).
    pub async fn play(&mut self, planes: &[&[i16]], rate: u32, frame_ms: u32, paced: bool) -> bool {
        let per_frame = (rate * frame_ms / 1000).max(1) as usize;
        let len = planes.iter().map(|p| p.len()).max().unwrap_or(0);
        let started = tokio::time::Instant::now();
        let mut sent = 0;
        while sent < len {
            if self.poll().closed_at.is_some() {
                return false;
            }
            let n = per_frame.min(len - sent);
            if self
                .send(Message::binary(interleave(planes, sent, n)))
                .await
                .is_err()
            {
                return false;
            }
            sent += n;
            if paced {
                let due = started + Duration::from_secs_f64(sent as f64 / f64::from(rate));
                tokio::time::sleep_until(due).await;
            }
        }
        true
    }

    /// Streams silence on every channel, paced in real time.
    pub async fn silence(&mut self, channels: usize, rate: u32, secs: f64) -> bool {
        let zeros = vec![0i16; (f64::from(rate) * secs) as usize];
        let planes: Vec<&[i16]> = (0..channels).map(|_| zeros.as_slice()).collect();
        self.play(&planes, rate, 20, true).await
    }

    /// Takes in whatever the server sent so far, without waiting.
    pub fn poll(&mut self) -> &Received {
        while let Ok(item) = self.rx.try_recv() {
            self.record(item);
        }
        &self.got
    }

    /// Waits (bounded) for a message matching `pred`; true if one came.
    pub async fn wait_for(
        &mut self,
        limit: Duration,
        pred: impl Fn(&ServerMessage) -> bool,
    ) -> bool {
        if self.poll().messages.iter().any(|(_, m)| pred(m)) {
            return true;
        }
        let deadline = tokio::time::Instant::now() + limit;
        while let Ok(Some(item)) = tokio::time::timeout_at(deadline, self.rx.recv()).await {
            let hit = matches!(&item, Incoming::Message(_, m) if pred(m));
            self.record(item);
            if hit {
                return true;
            }
        }
        false
    }

    /// Closes from the client side with a normal closure (1000), as the platform does at the
    /// end of a call, and waits (up to 10 s) for the server's close.
    pub async fn hang_up(mut self) -> Received {
        let normal = CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        };
        let _ = self.send(Message::Close(Some(normal))).await;
        self.finish(Duration::from_secs(10)).await
    }

    /// Waits (bounded) for the server to close, returning everything it sent. A server that
    /// does not close within `limit` is recorded as a transport error.
    pub async fn finish(mut self, limit: Duration) -> Received {
        let deadline = tokio::time::Instant::now() + limit;
        while self.got.closed_at.is_none() {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(item)) => self.record(item),
                Ok(None) => self.got.closed_at = Some(Instant::now()),
                Err(_) => {
                    self.got.transport_error = Some(format!(
                        "the server did not close the call within {limit:?}"
                    ));
                    break;
                }
            }
        }
        std::mem::take(&mut self.got)
    }

    fn record(&mut self, item: Incoming) {
        match item {
            Incoming::Message(at, m) => self.got.messages.push((at, m)),
            Incoming::Unparseable(text) => self.got.unparseable.push(text),
            Incoming::Closed(close, error) => {
                self.got.close = close;
                if let Some(e) = error {
                    self.got.transport_error.get_or_insert(e);
                }
                self.got.closed_at = Some(Instant::now());
            }
        }
    }
}

async fn read_all(mut rx: SplitStream<Ws>, tx: mpsc::UnboundedSender<Incoming>) {
    while let Some(msg) = rx.next().await {
        let item = match msg {
            Ok(Message::Text(t)) => match serde_json::from_str(&t) {
                Ok(m) => Incoming::Message(Instant::now(), m),
                Err(_) => Incoming::Unparseable(t.to_string()),
            },
            Ok(Message::Close(frame)) => {
                let close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                let _ = tx.send(Incoming::Closed(close, None));
                return;
            }
            Ok(_) => continue,
            Err(e) => {
                let _ = tx.send(Incoming::Closed(None, Some(format!("read: {e}"))));
                return;
            }
        };
        let _ = tx.send(item);
    }
    let _ = tx.send(Incoming::Closed(
        None,
        Some("the socket ended without a close frame".into()),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_the_start_of_its_body_with_control_characters_escaped() {
        let r = Refusal::new(503, b"  full now\x1b[2J\nretry later\n");
        assert_eq!(r.body, "full now\\u{1b}[2J\\nretry later");
        assert_eq!(
            r.to_string(),
            "HTTP 503 \"full now\\u{1b}[2J\\nretry later\""
        );
        let long = "é".repeat(REFUSAL_BODY_CHARS + 1);
        let r = Refusal::new(503, long.as_bytes());
        assert_eq!(r.body.chars().count(), REFUSAL_BODY_CHARS + 1);
        assert!(r.body.ends_with("é…"), "{}", r.body);
        assert_eq!(Refusal::new(404, b"").to_string(), "HTTP 404 (no body)");
    }
}
