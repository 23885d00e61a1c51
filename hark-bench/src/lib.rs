//! The voice platform's side of the custom-transcriber protocol (../shared/PROTOCOL.md):
//! a client that calls a transcriber server as the platform does, and `hark bench`, which
//! plays real speech through it and measures what the platform would experience. It knows
//! the server only through the wire.

pub mod client;
pub mod conversation;
pub mod fetch;
pub mod phone;
pub mod plot;
pub mod protocol;
pub mod report;
pub mod resample;
pub mod run;
pub mod shape;
pub mod summary;
pub mod user_corpus;
pub mod wav;
pub mod wer;

pub use run::{BenchArgs, Report, RunReport, measure, measure_run, run};
