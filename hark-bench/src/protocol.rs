//! The wire contract as the platform reads it (docs/PROTOCOL.md): the start frame it
//! sends and the messages it takes back. Written from the contract, not shared with the
//! server's own types, so that a server that drifts from the contract is caught by the
//! platform's reading of it.

use serde::{Deserialize, Serialize};

/// The error code and close reason of a transcriber that can no longer transcribe the call:
/// the platform ends the call with it.
pub const PIPELINE_FAILED: &str = "pipeline-error-custom-transcriber-failed";

/// Who speaks on a channel: channel 0 is the customer, channel 1 the assistant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Customer,
    Assistant,
}

impl Channel {
    pub const BOTH: [Channel; 2] = [Channel::Customer, Channel::Assistant];

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

    pub fn other(self) -> Self {
        match self {
            Self::Customer => Self::Assistant,
            Self::Assistant => Self::Customer,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptType {
    Partial,
    Final,
}

impl TranscriptType {
    fn final_() -> Self {
        Self::Final
    }
}

/// What a transcriber server may send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServerMessage {
    TranscriberResponse {
        transcription: String,
        channel: Channel,
        /// docs/PROTOCOL.md: a message without `transcriptType` is final.
        #[serde(rename = "transcriptType", default = "TranscriptType::final_")]
        transcript_type: TranscriptType,
    },
    Error {
        error: String,
        message: String,
    },
    /// Any other type: allowed by the contract, and ignored as the platform ignores it.
    #[serde(other)]
    Other,
}

/// The start frame, as the platform sends it before any audio.
pub fn start_frame(sample_rate: u32, channels: usize) -> String {
    format!(
        r#"{{"type":"start","encoding":"linear16","container":"raw","sampleRate":{sample_rate},"channels":{channels}}}"#
    )
}

/// Interleaves per-channel samples into one s16le binary frame, as the platform streams
/// them; a plane shorter than the others is padded with silence.
pub fn interleave(planes: &[&[i16]], from: usize, n: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(n * planes.len() * 2);
    for i in from..from + n {
        for p in planes {
            bytes.extend_from_slice(&p.get(i).copied().unwrap_or(0).to_le_bytes());
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_messages() {
        let m: ServerMessage = serde_json::from_str(
            r#"{"type":"transcriber-response","transcription":"Hi.","channel":"customer","transcriptType":"final"}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            ServerMessage::TranscriberResponse {
                transcription: "Hi.".into(),
                channel: Channel::Customer,
                transcript_type: TranscriptType::Final,
            }
        );
        let e: ServerMessage =
            serde_json::from_str(r#"{"type":"error","error":"x","message":"y"}"#).unwrap();
        assert!(matches!(e, ServerMessage::Error { .. }));
        let omitted: ServerMessage = serde_json::from_str(
            r#"{"type":"transcriber-response","transcription":"Hi.","channel":"assistant"}"#,
        )
        .unwrap();
        assert!(matches!(
            omitted,
            ServerMessage::TranscriberResponse {
                transcript_type: TranscriptType::Final,
                ..
            }
        ));
        let other: ServerMessage =
            serde_json::from_str(r#"{"type":"speech-started","channel":"customer"}"#).unwrap();
        assert_eq!(other, ServerMessage::Other);
        assert_eq!(interleave(&[&[1, 2], &[3]], 0, 2), [1, 0, 3, 0, 2, 0, 0, 0]);
    }
}
