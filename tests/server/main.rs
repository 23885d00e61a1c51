//! The server as the platform meets it: HTTP and websocket handling, the wire protocol,
//! RFC 6455 answers, TLS, per-call limits, hostile clients, metrics.
//!
//! One test binary per area, so the shared test kit (hark-testkit) and each area's
//! helpers compile once.

mod hostile;
mod http;
mod layers;
mod limits;
mod metrics;
mod properties;
mod protocol;
mod tls;
mod websocket_rfc;
