//! Websocket read errors as RFC 6455 section 7.4.1 answers them.

use tracing::debug;

use super::Outcome;
use crate::protocol::ClientError;

/// What a failed read means, as RFC 6455 section 7.4.1 answers it: a message over the size
/// limit (the websocket layer's hard cap) 1009, a text frame not UTF-8 1007, broken framing
/// 1002. `None`: the connection itself is gone (dropped, reset, or cut mid-frame), and no
/// answer can reach the client.
pub(super) fn classify(e: axum::Error, limit: usize) -> Option<ClientError> {
    use tungstenite::error::{CapacityError, Error as WsError, ProtocolError};
    let inner = e.into_inner();
    let Some(e) = inner.downcast_ref::<WsError>() else {
        debug!(error = %inner, "websocket read failed");
        return None;
    };
    match e {
        WsError::Capacity(CapacityError::MessageTooLong { size, .. }) => {
            Some(ClientError::FrameTooLarge { size: *size, limit })
        }
        WsError::Utf8(_) => Some(ClientError::InvalidUtf8),
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
            debug!("client left mid-frame or without a close");
            None
        }
        WsError::Protocol(p) => Some(ClientError::ProtocolViolation(p.to_string())),
        WsError::Capacity(c) => Some(ClientError::ProtocolViolation(c.to_string())),
        WsError::AttackAttempt => Some(ClientError::ProtocolViolation(e.to_string())),
        other => {
            debug!(error = %other, "websocket read failed");
            None
        }
    }
}

pub(super) fn read_failure(e: axum::Error, limit: usize) -> Outcome {
    classify(e, limit).map_or(Outcome::ClientClosed, Outcome::ClientError)
}
