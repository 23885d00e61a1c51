//! The custom-transcriber wire contract (docs/PROTOCOL.md): the start frame the platform
//! sends, the messages hark answers with, and the error codes and close codes of each mistake.

use serde::{Deserialize, Serialize};

use crate::untrusted::quoted;

/// Close code and reason sent when recognition for a call can no longer work.
pub const PIPELINE_FAILED: &str = "pipeline-error-custom-transcriber-failed";
pub const CLOSE_NORMAL: u16 = 1000;
pub const CLOSE_GOING_AWAY: u16 = 1001;
/// RFC 6455 section 7.4.1: the client broke the websocket framing rules.
pub const CLOSE_PROTOCOL: u16 = 1002;
pub const CLOSE_UNSUPPORTED: u16 = 1003;
/// RFC 6455 section 7.4.1: a text message that is not UTF-8.
pub const CLOSE_INVALID_DATA: u16 = 1007;
pub const CLOSE_POLICY: u16 = 1008;
/// RFC 6455 section 7.4.1: a message too big to process.
pub const CLOSE_TOO_BIG: u16 = 1009;
pub const CLOSE_INTERNAL: u16 = 1011;

pub const MIN_SAMPLE_RATE: u32 = 8_000;
pub const MAX_SAMPLE_RATE: u32 = 48_000;

/// Who is speaking on a channel: channel 0 is the customer, channel 1 the assistant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Customer,
    Assistant,
}

impl Channel {
    pub fn from_index(index: usize) -> Option<Self> {
        match index {
            0 => Some(Self::Customer),
            1 => Some(Self::Assistant),
            _ => None,
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Customer => "customer",
            Self::Assistant => "assistant",
        }
    }
}

/// A validated start frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    pub sample_rate: u32,
    pub channels: usize,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStart {
    #[serde(rename = "type")]
    kind: String,
    encoding: Option<String>,
    container: Option<String>,
    sample_rate: Option<serde_json::Value>,
    channels: Option<serde_json::Value>,
}

impl Start {
    /// Parses and validates the first text frame of a session.
    pub fn parse(text: &str) -> Result<Self, ClientError> {
        // The position and kind only: serde's message can quote the client's text.
        let raw: RawStart = serde_json::from_str(text).map_err(|e| {
            ClientError::InvalidStart(format!(
                "start frame is not a valid start message ({:?} error at line {} column {})",
                e.classify(),
                e.line(),
                e.column()
            ))
        })?;
        if raw.kind != "start" {
            return Err(ClientError::InvalidStart(format!(
                "first message must have type \"start\", got {}",
                quoted(&raw.kind)
            )));
        }
        let encoding = raw
            .encoding
            .ok_or_else(|| ClientError::InvalidStart("start frame has no encoding".into()))?;
        if encoding != "linear16" {
            return Err(ClientError::UnsupportedEncoding(quoted(&encoding)));
        }
        // The platform always sends a container; a missing one means raw PCM.
        if let Some(container) = raw.container
            && container != "raw"
        {
            return Err(ClientError::UnsupportedContainer(quoted(&container)));
        }
        let sample_rate = positive_int(raw.sample_rate, "sampleRate")?;
        if !(u64::from(MIN_SAMPLE_RATE)..=u64::from(MAX_SAMPLE_RATE)).contains(&sample_rate) {
            return Err(ClientError::UnsupportedSampleRate(sample_rate));
        }
        let channels = positive_int(raw.channels, "channels")?;
        if !(1..=2).contains(&channels) {
            return Err(ClientError::UnsupportedChannels(channels));
        }
        Ok(Self {
            sample_rate: sample_rate as u32,
            channels: channels as usize,
        })
    }
}

fn positive_int(value: Option<serde_json::Value>, field: &str) -> Result<u64, ClientError> {
    let value =
        value.ok_or_else(|| ClientError::InvalidStart(format!("start frame has no {field}")))?;
    value.as_u64().ok_or_else(|| {
        ClientError::InvalidStart(format!(
            "{field} must be a positive integer, got {}",
            quoted(&value.to_string())
        ))
    })
}

/// A mistake by the client, answered with an error message and a close code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    InvalidStart(String),
    #[error("audio arrived before the start frame")]
    AudioBeforeStart,
    #[error("no start frame within {0} ms")]
    StartTimeout(u64),
    /// The client's value, already quoted and cut (`untrusted::quoted`).
    #[error("unsupported encoding {0}: only \"linear16\" is supported")]
    UnsupportedEncoding(String),
    /// The client's value, already quoted and cut (`untrusted::quoted`).
    #[error("unsupported container {0}: only \"raw\" is supported")]
    UnsupportedContainer(String),
    #[error("unsupported channel count {0}: 1 or 2 are supported")]
    UnsupportedChannels(u64),
    #[error("unsupported sample rate {0}: 8000 to 48000 Hz are supported")]
    UnsupportedSampleRate(u64),
    #[error("frame of {size} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge { size: usize, limit: usize },
    #[error("frame of {ms} ms of audio exceeds the limit of {limit_ms} ms")]
    FrameTooLong { ms: u64, limit_ms: u64 },
    #[error("text frame is not valid UTF-8")]
    InvalidUtf8,
    #[error("websocket protocol violation: {0}")]
    ProtocolViolation(String),
    #[error("no frame for {0} ms")]
    IdleTimeout(u64),
    #[error("call longer than the limit of {0} s")]
    CallTooLong(u64),
    #[error("more than {rate} messages a second (burst {burst})")]
    RateLimited { rate: u32, burst: u32 },
    #[error("call holds more than {0} bytes (the client is not reading its transcripts?)")]
    MemoryLimit(usize),
}

impl ClientError {
    /// The short code in the error message, also used as the close reason.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidStart(_) => "invalid-start-frame",
            Self::AudioBeforeStart => "audio-before-start",
            Self::StartTimeout(_) => "start-timeout",
            Self::UnsupportedEncoding(_) => "unsupported-encoding",
            Self::UnsupportedContainer(_) => "unsupported-container",
            Self::UnsupportedChannels(_) => "unsupported-channels",
            Self::UnsupportedSampleRate(_) => "unsupported-sample-rate",
            Self::FrameTooLarge { .. } => "frame-too-large",
            Self::FrameTooLong { .. } => "frame-too-long",
            Self::InvalidUtf8 => "invalid-utf8",
            Self::ProtocolViolation(_) => "protocol-violation",
            Self::IdleTimeout(_) => "idle-timeout",
            Self::CallTooLong(_) => "call-too-long",
            Self::RateLimited { .. } => "rate-limited",
            Self::MemoryLimit(_) => "memory-limit",
        }
    }

    pub fn close_code(&self) -> u16 {
        match self {
            Self::UnsupportedEncoding(_)
            | Self::UnsupportedContainer(_)
            | Self::UnsupportedChannels(_)
            | Self::UnsupportedSampleRate(_) => CLOSE_UNSUPPORTED,
            Self::FrameTooLarge { .. } | Self::FrameTooLong { .. } => CLOSE_TOO_BIG,
            Self::InvalidUtf8 => CLOSE_INVALID_DATA,
            Self::ProtocolViolation(_) => CLOSE_PROTOCOL,
            _ => CLOSE_POLICY,
        }
    }
}

/// Whether a transcript may still change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptType {
    Partial,
    Final,
}

/// Messages hark sends to the platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServerMessage {
    TranscriberResponse {
        transcription: String,
        channel: Channel,
        #[serde(rename = "transcriptType")]
        transcript_type: TranscriptType,
    },
    Error {
        error: String,
        message: String,
    },
}

impl ServerMessage {
    pub fn to_json(&self) -> String {
        // Serialising these plain structs cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn client_error(e: &ClientError) -> Self {
        Self::Error {
            error: e.code().to_string(),
            message: e.to_string(),
        }
    }

    pub fn pipeline_failed(message: impl Into<String>) -> Self {
        Self::Error {
            error: PIPELINE_FAILED.to_string(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_start_frame() {
        let s = Start::parse(
            r#"{"type":"start","encoding":"linear16","container":"raw","sampleRate":16000,"channels":2}"#,
        )
        .unwrap();
        assert_eq!(
            s,
            Start {
                sample_rate: 16000,
                channels: 2
            }
        );
    }

    #[test]
    fn names_each_bad_start_frame() {
        let cases = [
            ("not json", "invalid-start-frame"),
            (r#"{"type":"stop"}"#, "invalid-start-frame"),
            (
                r#"{"type":"start","encoding":"mulaw","sampleRate":8000,"channels":1}"#,
                "unsupported-encoding",
            ),
            (
                r#"{"type":"start","encoding":"linear16","container":"wav","sampleRate":8000,"channels":1}"#,
                "unsupported-container",
            ),
            (
                r#"{"type":"start","encoding":"linear16","sampleRate":96000,"channels":1}"#,
                "unsupported-sample-rate",
            ),
            (
                r#"{"type":"start","encoding":"linear16","sampleRate":16000,"channels":3}"#,
                "unsupported-channels",
            ),
            (
                r#"{"type":"start","encoding":"linear16","sampleRate":-1,"channels":1}"#,
                "invalid-start-frame",
            ),
            (
                r#"{"type":"start","encoding":"linear16","channels":1}"#,
                "invalid-start-frame",
            ),
        ];
        for (text, code) in cases {
            assert_eq!(Start::parse(text).unwrap_err().code(), code, "{text}");
        }
    }

    #[test]
    fn serialises_like_the_platform_expects() {
        let m = ServerMessage::TranscriberResponse {
            transcription: "Hello there.".into(),
            channel: Channel::Customer,
            transcript_type: TranscriptType::Partial,
        };
        assert_eq!(
            m.to_json(),
            r#"{"type":"transcriber-response","transcription":"Hello there.","channel":"customer","transcriptType":"partial"}"#
        );
        assert_eq!(
            ServerMessage::pipeline_failed("x").to_json(),
            r#"{"type":"error","error":"pipeline-error-custom-transcriber-failed","message":"x"}"#
        );
    }
}
