//! What every websocket backend does the same way: one websocket to the provider per channel
//! attempt; audio out of the channel's ring at the pace the provider takes it; the
//! provider's answers turned into events; keepalives and pings; stall detection; a clean
//! end. The pace, the stall clock and idle settling are decided by `liveness`, which Riva's
//! gRPC streams share.
//!
//! A provider module says only what is its own ([`Provider`]): the upgrade request, how to
//! read its messages, how to end a stream and which closes are worth a reconnect. Audio is
//! taken from the ring only when it may be sent, so the ring's fill is the true lag and the
//! supervisor's lag check sees a provider that cannot keep up.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::time::{MissedTickBehavior, interval, sleep_until, timeout};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tracing::{debug, warn};

use super::catch_up::CatchUp;
pub use super::liveness::Pacing;
use super::liveness::{HOUSEKEEPING, Liveness, Next};
use crate::audio::AudioSource;
use crate::backend::{ApiKey, BackendError, EventSink, query_value};
use crate::metrics as m;
use crate::untrusted::{LogBudget, cut, quote};

/// Unreadable provider messages logged, at most 5 lines per 10 s (a provider that changed
/// its schema sends one per answer, on every call).
static UNREADABLE_LOG: LogBudget = LogBudget::new(5, Duration::from_secs(10));

/// Reads a provider's JSON message as its type (the fields the protocol always sends
/// required), or records that it could not: a renamed or missing field is a provider
/// fault, never a silent caller.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str, heard: &mut Vec<Heard>) -> Option<T> {
    match serde_json::from_str(text) {
        Ok(msg) => Some(msg),
        Err(e) => {
            heard.push(Heard::Unreadable(e.to_string()));
            None
        }
    }
}

/// What a provider's message meant.
#[derive(Debug, Clone, PartialEq)]
pub enum Heard {
    Partial(String),
    Final(String),
    /// Everything up to this stream time (seconds from the connection's first sample) is final.
    Settled(f64),
    /// The provider has processed the stream up to this time (an interim result's end): it
    /// has answered what came before. A late provider's answer says no more than that.
    Processed(f64),
    /// The provider finished the stream we asked it to end.
    Ended,
    /// The provider reported an error; its close usually follows.
    /// Each field as the provider gave it, or absent (an error message need not carry both).
    Error {
        code: Option<String>,
        message: Option<String>,
    },
    /// A message of the provider's that hark cannot read (not JSON, or a known type with a
    /// field missing or of the wrong type), and why: counted and logged, and no answer, so
    /// a provider whose messages hark can no longer read is found out as a stall (voice
    /// sent, nothing readable back for `stall_timeout`) and the channel reconnects, then
    /// fails over; one stray message among readable ones costs nothing.
    Unreadable(String),
}

/// A provider's side of one connection.
pub trait Provider: Send + 'static {
    fn pacing(&self) -> Pacing;
    /// Ends the open turn now (the provider's force-endpoint message), for a pause the
    /// relay left out while catching up.
    fn end_turn(&self) -> Option<Message> {
        None
    }
    /// Sent when no audio has gone out for a while, so the provider keeps the stream open.
    fn keepalive(&self) -> Option<Message>;
    /// Sent when the call's audio has ended: flush, then close.
    fn closing(&self) -> Vec<Message>;
    /// Interprets one text message.
    fn read(&mut self, text: &str, heard: &mut Vec<Heard>);
    /// True while the provider has no words pending (no turn open): audio it has processed
    /// (its `Settled` and `Processed` times) past the last voice sent can be settled by the
    /// relay itself.
    fn idle(&self) -> bool {
        false
    }
    /// Whether a close with this code (before we asked for one) rules out a reconnect.
    fn close_is_permanent(&self, code: u16) -> bool;
    /// A refused upgrade, described for logs and the error message (status, provider's
    /// reason header); never includes credentials.
    fn describe_refusal(&self, response: &tungstenite::http::Response<Option<Vec<u8>>>) -> String {
        format!("HTTP {}", response.status())
    }
}

/// Timings shared by every network backend, from its config section.
#[derive(Debug, Clone, Copy)]
pub struct RelaySettings {
    pub connect_timeout: Duration,
    /// Audio with voice in it sent and no answer for this long: the provider is stalled.
    pub stall_timeout: Duration,
    /// No audio sent for this long: send the provider's keepalive.
    pub keepalive_after: Duration,
    /// After the closing messages, how long to wait for the provider's last answers.
    pub finish_timeout: Duration,
}

impl RelaySettings {
    /// From a config section's milliseconds; every provider waits 3 s for its last answers.
    pub fn from_ms(connect_timeout_ms: u64, stall_timeout_ms: u64, keepalive_ms: u64) -> Self {
        Self {
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            stall_timeout: Duration::from_millis(stall_timeout_ms),
            keepalive_after: Duration::from_millis(keepalive_ms),
            finish_timeout: Duration::from_secs(3),
        }
    }
}

/// Nothing heard from the provider for this long: ping it. A provider that answers
/// neither the ping nor anything else within the stall bound is gone (a half-open
/// connection, a peer that stopped reading), even while no voice flows to show it.
const PING_AFTER: Duration = Duration::from_secs(3);

/// Starts relaying one channel to a provider on the runtime.
pub fn spawn<P: Provider>(
    backend: Arc<str>,
    provider: P,
    request: Request,
    settings: RelaySettings,
    audio: AudioSource,
    events: EventSink,
) {
    tokio::spawn(async move {
        let catch_up = CatchUp::new(audio.sample_rate());
        let mut relay = Relay {
            backend,
            provider,
            settings,
            catch_up,
            rate: audio.sample_rate(),
            audio,
            heard: Vec::new(),
        };
        report(relay.run(request, &events).await, events);
    });
}

/// How a network backend's attempt ended badly.
pub(super) enum Failure {
    /// The session no longer listens: nothing to report.
    Gone,
    Permanent(String),
    Transient(String),
}

/// Tells the session how an attempt ended.
pub(super) fn report(outcome: Result<(), Failure>, events: EventSink) {
    match outcome {
        Ok(()) => events.done(),
        Err(Failure::Gone) => std::mem::forget(events),
        Err(Failure::Permanent(message)) => events.fail(message),
        Err(Failure::Transient(message)) => events.fail_transient(message),
    }
}

/// Counts a provider error by a code from a fixed set (`close_code`, `http_code`, a few
/// names): a provider's own codes and words never become label values.
pub(super) fn count_error(backend: &str, code: impl Into<std::borrow::Cow<'static, str>>) {
    let code: std::borrow::Cow<'static, str> = code.into();
    metrics::counter!(m::PROVIDER_ERRORS, "backend" => backend.to_string(), "code" => code)
        .increment(1);
}

struct Relay<P> {
    backend: Arc<str>,
    provider: P,
    settings: RelaySettings,
    audio: AudioSource,
    rate: u32,
    /// Pauses left out while behind, and how the provider's positions map to the ring's.
    catch_up: CatchUp,
    heard: Vec<Heard>,
}

impl<P: Provider> Relay<P> {
    /// Counted by a code from a fixed set (`close_code`, `http_code`, a few names): a
    /// provider's own codes and words never become label values.
    fn count_error(&self, code: impl Into<std::borrow::Cow<'static, str>>) {
        count_error(&self.backend, code);
    }

    async fn run(&mut self, request: Request, events: &EventSink) -> Result<(), Failure> {
        let connect = tokio_tungstenite::connect_async_with_config(request, None, true);
        let ws = match timeout(self.settings.connect_timeout, connect).await {
            Err(_) => {
                self.count_error("connect-timeout");
                return Err(Failure::Transient(format!(
                    "no connection within {} ms",
                    self.settings.connect_timeout.as_millis()
                )));
            }
            Ok(Err(tungstenite::Error::Http(response))) => {
                let status = response.status();
                self.count_error(http_code(status.as_u16()));
                let what = format!("refused: {}", self.provider.describe_refusal(&response));
                // A 4xx is about the request (key, parameters, plan limits): asking again
                // the same way will not help. A 5xx may pass.
                return Err(if status.is_client_error() {
                    Failure::Permanent(what)
                } else {
                    Failure::Transient(what)
                });
            }
            Ok(Err(e)) => {
                self.count_error("connect");
                return Err(Failure::Transient(format!("cannot connect: {e}")));
            }
            Ok(Ok((ws, _))) => ws,
        };
        let (mut tx, mut rx) = ws.split();
        // A provider that stops reading fills the socket: a send that cannot finish within
        // the stall bound is a stall too, and must not hold this task forever.
        let limit = self.settings.stall_timeout;
        let per_sec = f64::from(self.rate);
        let connected = Instant::now();
        // The pace, the stall clock and idle settling, from the connection on.
        let mut live = Liveness::new(self.rate, self.provider.pacing(), limit, connected);
        let mut buf = vec![0i16; live.max_frame()];
        let mut last_audio = connected;
        let mut finish_by: Option<tokio::time::Instant> = None;
        // When the provider last sent anything (a pong included), and the unanswered ping.
        let mut last_heard = Instant::now();
        let mut ping_sent: Option<Instant> = None;
        let mut housekeeping = interval(HOUSEKEEPING);
        housekeeping.set_missed_tick_behavior(MissedTickBehavior::Delay);

        loop {
            // The pace is judged at this moment, whatever the catching up below awaits.
            let now = Instant::now();
            let mut available = self.audio.available();
            let behind = finish_by.is_none() && self.catch_up.is_behind(available);
            if behind {
                let skipped = self.catch_up.skip(&mut self.audio, live.sent());
                if skipped.samples > 0 {
                    metrics::histogram!(m::CATCH_UP_SKIPPED, "backend" => self.backend.to_string())
                        .record(skipped.samples as f64 / per_sec);
                    available = self.audio.available();
                }
                if skipped.end_turn
                    && !self.provider.idle()
                    && let Some(message) = self.provider.end_turn()
                    && !send(&mut tx, message, limit).await
                {
                    return self.lost("the connection broke while ending a turn");
                }
            }
            let ended = finish_by.is_none() && self.audio.is_finished();
            let mut wake: Option<tokio::time::Instant> = None;
            if finish_by.is_none() {
                // How much audio the provider takes now, and when more may go.
                match live.next_frame(now, available, behind, self.audio.has_ended()) {
                    Next::Frame { take, len } => {
                        let n = self.audio.pop(&mut buf[..take]);
                        let mut frame = buf[..n].to_vec();
                        frame.resize(len.max(n), 0);
                        let sent = live.sent_frame(Instant::now(), &frame);
                        self.catch_up.sent(frame.len(), sent.voiced);
                        last_audio = Instant::now();
                        if !send(&mut tx, Message::binary(to_bytes(&frame)), limit).await {
                            return self.lost("the connection broke or stopped taking audio");
                        }
                        continue;
                    }
                    Next::Wait(after) => wake = Some(tokio::time::Instant::now() + after),
                    Next::Empty => {}
                }
            }
            if ended {
                for message in self.provider.closing() {
                    if !send(&mut tx, message, limit).await {
                        return self.lost("the connection broke while closing the stream");
                    }
                }
                finish_by = Some(tokio::time::Instant::now() + self.settings.finish_timeout);
                continue;
            }
            let wait_audio = finish_by.is_none() && available == 0;
            tokio::select! {
                _ = self.audio.readable(), if wait_audio => {}
                _ = sleep_until(wake.unwrap_or_else(tokio::time::Instant::now)), if wake.is_some() => {}
                _ = sleep_until(finish_by.unwrap_or_else(tokio::time::Instant::now)), if finish_by.is_some() => {
                    warn!(backend = %self.backend, "provider did not end the stream in time");
                    return Ok(());
                }
                message = rx.next() => {
                    if let Some(Ok(_)) = &message {
                        last_heard = Instant::now();
                        ping_sent = None;
                    }
                    let text = match message {
                        Some(Ok(Message::Text(text))) => text,
                        Some(Ok(Message::Close(frame))) => {
                            return if finish_by.is_some() { Ok(()) } else { self.closed(frame) };
                        }
                        Some(Ok(_)) => continue,
                        Some(Err(e)) if finish_by.is_some() => {
                            debug!(backend = %self.backend, error = %e, "connection ended while finishing");
                            return Ok(());
                        }
                        Some(Err(e)) => return self.lost(&format!("the connection broke: {e}")),
                        None if finish_by.is_some() => return Ok(()),
                        None => return self.lost("the provider closed the connection without a close frame"),
                    };
                    self.provider.read(&text, &mut self.heard);
                    // A message hark cannot read is no answer (see `Heard::Unreadable`).
                    if !self.heard.iter().any(|h| matches!(h, Heard::Unreadable(_))) {
                        live.answered();
                    }
                    // The provider's end-of-stream message counts only after we asked
                    // for the end; unasked, the close that follows says what happened.
                    if self.report(&mut live, events) && finish_by.is_some() {
                        return Ok(());
                    }
                }
                _ = housekeeping.tick() => {
                    if !events.is_open() {
                        // Nobody listens any more: end the provider's stream its documented
                        // way without the audio still owed, then close.
                        if finish_by.is_none() {
                            for message in self.provider.closing() {
                                send(&mut tx, message, limit).await;
                            }
                        }
                        let close = Message::Close(Some(CloseFrame {
                            code: CloseCode::Normal,
                            reason: "call ended".into(),
                        }));
                        send(&mut tx, close, limit).await;
                        return Err(Failure::Gone);
                    }
                    if finish_by.is_none() {
                        match ping_sent {
                            Some(at) if at.elapsed() > self.settings.stall_timeout => {
                                self.count_error("stall");
                                return Err(Failure::Transient(format!(
                                    "no answer to a ping for {:.1} s",
                                    at.elapsed().as_secs_f64()
                                )));
                            }
                            None if last_heard.elapsed() >= PING_AFTER => {
                                ping_sent = Some(Instant::now());
                                if !send(&mut tx, Message::Ping(Default::default()), limit).await {
                                    return self.lost("the connection broke while sending a ping");
                                }
                            }
                            _ => {}
                        }
                    }
                    if let Some(stall) = live.stalled(Instant::now()) {
                        self.count_error("stall");
                        return Err(Failure::Transient(stall.to_string()));
                    }
                    // No turn open and every voiced frame processed: what was sent, less a
                    // margin, holds no word still to come. AssemblyAI gives no position in
                    // silence, so there only its finals settle.
                    if let Some(position) = live.idle_settle(self.provider.idle()) {
                        self.settle(events, position);
                    }
                    if finish_by.is_none()
                        && last_audio.elapsed() >= self.settings.keepalive_after
                        && let Some(keepalive) = self.provider.keepalive()
                    {
                        last_audio = Instant::now();
                        if !send(&mut tx, keepalive, limit).await {
                            return self.lost("the connection broke while sending a keepalive");
                        }
                    }
                }
            }
        }
    }

    /// Hands what the provider said to the session; true once the provider ended the stream.
    fn report(&mut self, live: &mut Liveness, events: &EventSink) -> bool {
        let mut ended = false;
        let mut all = std::mem::take(&mut self.heard);
        for heard in all.drain(..) {
            match heard {
                Heard::Partial(text) => events.partial(&text),
                Heard::Final(text) => events.final_text(&text),
                Heard::Settled(secs) => {
                    let position = self.position(secs, live.sent());
                    live.processed(position);
                    self.settle(events, position);
                }
                Heard::Processed(secs) => live.processed(self.position(secs, live.sent())),
                Heard::Ended => ended = true,
                Heard::Error { code, message } => {
                    // The provider's words, quoted and cut: they may hold anything.
                    warn!(
                        backend = %self.backend,
                        code = code.as_deref().map(cut).as_deref(),
                        message = message.as_deref().map(cut).as_deref(),
                        "provider reported an error"
                    );
                    metrics::counter!(m::PROVIDER_ERRORS, "backend" => self.backend.to_string(), "code" => "error")
                        .increment(1);
                }
                Heard::Unreadable(why) => {
                    // serde's account of the message: a position and a type, none of its
                    // text.
                    if let Some(left_out) = UNREADABLE_LOG.allow() {
                        warn!(
                            backend = %self.backend,
                            error = cut(&why).as_ref(),
                            left_out,
                            "provider sent a message hark cannot read"
                        );
                    }
                    self.count_error("unparseable");
                }
            }
        }
        self.heard = all;
        ended
    }

    /// A provider's stream time as a stream position, never past what was `sent`.
    fn position(&self, secs: f64, sent: u64) -> u64 {
        let position = (secs * f64::from(self.rate)).round().max(0.0) as u64;
        position.min(sent)
    }

    /// The provider will not revise its stream up to `position`: the ring position it
    /// stands for is settled.
    fn settle(&mut self, events: &EventSink, position: u64) {
        events.settled(self.catch_up.ring_position(position));
        self.catch_up.settled(position);
    }

    fn closed(&self, frame: Option<CloseFrame>) -> Result<(), Failure> {
        let (code, reason) = frame.map_or((1005, String::new()), |f| {
            (u16::from(f.code), f.reason.to_string())
        });
        self.count_error(close_code(code));
        let message = format!(
            "the provider closed the connection ({code} {})",
            quote(&reason)
        );
        Err(if self.provider.close_is_permanent(code) {
            Failure::Permanent(message)
        } else {
            Failure::Transient(message)
        })
    }

    fn lost(&self, what: &str) -> Result<(), Failure> {
        self.count_error("connection-lost");
        Err(Failure::Transient(what.into()))
    }
}

/// A close code as a label: the codes RFC 6455 defines by name, the providers' ranges
/// (3000–3999 registered, 4000–4999 private) as one label each.
fn close_code(code: u16) -> &'static str {
    match code {
        1000 => "close-1000",
        1001 => "close-1001",
        1002 => "close-1002",
        1003 => "close-1003",
        1005 => "close-1005",
        1006 => "close-1006",
        1007 => "close-1007",
        1008 => "close-1008",
        1009 => "close-1009",
        1010 => "close-1010",
        1011 => "close-1011",
        1012 => "close-1012",
        1013 => "close-1013",
        1014 => "close-1014",
        1015 => "close-1015",
        3000..=3999 => "close-3xxx",
        4000..=4999 => "close-4xxx",
        _ => "close-other",
    }
}

/// A refused upgrade's status as a label: the ones that mean something different to an
/// operator by name, the rest by class.
fn http_code(status: u16) -> &'static str {
    match status {
        400 => "http-400",
        401 => "http-401",
        402 => "http-402",
        403 => "http-403",
        404 => "http-404",
        408 => "http-408",
        429 => "http-429",
        500 => "http-500",
        502 => "http-502",
        503 => "http-503",
        504 => "http-504",
        405..=499 => "http-4xx",
        505..=599 => "http-5xx",
        _ => "http-other",
    }
}

/// Sends one message within `limit`; false if the connection broke or did not take it.
async fn send<S>(tx: &mut S, message: Message, limit: Duration) -> bool
where
    S: futures_util::Sink<Message> + Unpin,
{
    matches!(timeout(limit, tx.send(message)).await, Ok(Ok(())))
}

fn to_bytes(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// The upgrade request: the configured URL with `query` appended, and the key in the
/// `Authorization` header behind `scheme`.
pub fn request(
    url: &str,
    query: &[(String, String)],
    key: &ApiKey,
    scheme: &str,
) -> Result<Request, BackendError> {
    let mut request = with_query(url, query)
        .into_client_request()
        // Not the URL itself: it may carry a token, and the message reaches callers.
        .map_err(|e| {
            BackendError::new(format!(
                "the backend's url is not usable ({e}): hark check-config names it"
            ))
        })?;
    request
        .headers_mut()
        .insert("authorization", key.header(scheme)?);
    Ok(request)
}

/// A backend URL hark can connect to: `ws://` or `wss://` with a host, and `ws://` only to
/// this machine unless `allow_insecure` (the API key travels in its `Authorization`
/// header). The error shows the URL without user info and query values, which may hold
/// credentials.
/// (The error is a config problem's line.)
pub(crate) fn check_url(url: &str, allow_insecure: bool) -> Result<(), String> {
    let shown = quote(&masked_url(url)).to_string();
    let uri: tungstenite::http::Uri = url
        .parse()
        // Not shown: where it does not parse, what holds a credential cannot be told.
        .map_err(|e| format!("url is not a URL ({e})"))?;
    let host = uri.host().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("url {shown} has no host"));
    }
    match uri.scheme_str() {
        Some("wss") => Ok(()),
        Some("ws") if allow_insecure || is_loopback(host) => Ok(()),
        Some("ws") => Err(format!(
            "url {shown} sends the API key in clear (ws://) to another machine: use wss://, or set allow_insecure = true if the link is private"
        )),
        _ => Err(format!(
            "url {shown} must start with wss:// (or ws:// on this machine)"
        )),
    }
}

pub(super) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

const MASK_ALL: &str = "***";

/// A URL as it may be shown: user info and query values replaced by `***`.
pub fn masked_url(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let info = if authority.contains('@') { "***@" } else { "" };
            format!("{scheme}://{info}{host}{path}")
        }
        // Not a URL: nothing in it can be told apart from a credential.
        None => return MASK_ALL.to_string(),
    };
    let query: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| format!("{}=***", p.split('=').next().unwrap_or_default()))
        .collect();
    if query.is_empty() {
        base
    } else {
        format!("{base}?{}", query.join("&"))
    }
}

/// Adds a config's `query` table to `q`, each entry replacing what hark would send.
pub fn pass_through(q: &mut Vec<(String, String)>, extra: &BTreeMap<String, toml::Value>) {
    for (k, v) in extra {
        q.retain(|(name, _)| name != k);
        q.extend(query_value(v).into_iter().map(|v| (k.clone(), v)));
    }
}

/// Appends query parameters to a configured URL that may already carry some.
pub fn with_query(url: &str, params: &[(String, String)]) -> String {
    if params.is_empty() {
        return url.to_string();
    }
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        query.append_pair(k, v);
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", query.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_escaped_and_appended() {
        let p = vec![
            ("keyterm".to_string(), "Acme Corp".to_string()),
            ("keyterm".to_string(), "a&b".to_string()),
        ];
        assert_eq!(
            with_query("ws://h/v1/listen", &p),
            "ws://h/v1/listen?keyterm=Acme+Corp&keyterm=a%26b"
        );
        assert_eq!(
            with_query("ws://h/x?tag=1", &p[..1]),
            "ws://h/x?tag=1&keyterm=Acme+Corp"
        );
    }

    #[test]
    fn urls_are_checked_and_shown_without_credentials() {
        for ok in [
            "wss://api.deepgram.com/v1/listen",
            "ws://127.0.0.1:9/v1/listen",
            "ws://localhost/v3/ws",
            "ws://[::1]:8080/x",
        ] {
            assert_eq!(check_url(ok, false), Ok(()), "{ok}");
        }
        assert_eq!(check_url("ws://asr.internal/x", true), Ok(()));
        for (bad, said) in [
            ("ws://asr.internal/x?token=s3cr3t", "in clear"),
            (
                "https://api.deepgram.com/v1/listen",
                "must start with wss://",
            ),
            ("wss://user:s3cr3t@/x", "not a URL"),
            ("not a url s3cr3t", "is not a URL"),
        ] {
            let e = check_url(bad, false).unwrap_err();
            assert!(e.contains(said), "{bad}: {e}");
            assert!(!e.contains("s3cr3t"), "{bad}: {e}");
        }
        assert_eq!(
            masked_url("wss://u:p@h:1/x?key=v&a=b"),
            "wss://***@h:1/x?key=***&a=***"
        );
    }
}
