//! The voice platform's side of the custom-transcriber protocol (docs/PROTOCOL.md):
//! a client that calls a transcriber server as the platform does, and `hark bench`, which
//! plays real speech through it and measures what the platform would experience. It knows
//! the server only through the wire.

pub mod cli;
pub mod client;
pub mod conversation;
pub mod corpus_index;
pub mod fetch;
pub mod phone;
pub mod plot;
pub mod protocol;
pub mod report;
pub mod report_model;
pub mod resample;
pub mod rescore;
pub mod run;
pub mod shape;
pub mod summary;
pub mod user_corpus;
pub mod wav;
pub mod wer;

pub use cli::BenchArgs;
pub use report_model::{Report, RunReport};
pub use run::{measure, measure_run, run};
