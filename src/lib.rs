//! hark: a custom-transcriber streaming server for voice-assistant platforms.
//!
//! See ARCHITECTURE.md for the module map and the path of one audio frame.
pub mod audio;
pub mod auth;
pub mod backend;
pub mod config;
pub mod connections;
pub mod flags;
pub mod memory;
pub mod metrics;
pub mod protocol;
pub mod registry;
pub mod resample;
pub mod server;
pub mod session;
pub mod supervisor;
pub mod tls;
pub mod transcribe;
pub mod turn;
pub mod untrusted;
pub mod wheel;
