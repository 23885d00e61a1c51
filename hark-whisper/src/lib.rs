//! hark's Whisper engine: a CTranslate2 Whisper model (the faster-whisper layout:
//! `model.bin`, `config.json`, `tokenizer.json`) run on the CPU in Rust, with no server
//! types: load a model, make a [`Decoder`] per thread, decode batches of utterances.
//!
//! Whisper reads a 30 s window; a 3 s utterance padded to it costs a 30 s encode. The
//! engine encodes only the utterance plus 1 s of silence (2 s for base: [`options`]) and
//! pads the encoder's output to the 1500 frames the decoder expects with the tail of the
//! encoding of 30 s of silence, computed once at load (the "short window"; hark's
//! BENCHMARKS.md, "Whisper", has what it costs and saves). Decoding is greedy or a beam
//! search, without timestamps, capped in tokens per second of audio and stopped when it
//! starts to repeat itself; a stretch the model itself calls silence gives no words.
//!
//! Where each part is, for a reader who knows CTranslate2 or whisper.cpp:
//! - [`options`]: every decoding setting, its default and the values measured per model
//!   (`WhisperOptions`, `whisper_full_params`);
//! - `prompt`: the first pass (previous text, start, draft); `search`: the decoding loop's
//!   per-decode rules, token rules as logits processors, the loop guard; `beam`: the beam
//!   search; [`Decoder`]: the batch's encode and decoder steps; [`filter`]: the speech
//!   filter, with [`sound_probe`] (whether an utterance is a sound, from its encoding);
//! - [`model`]: the network (encoder, decoder, the silence's cross-attention padding),
//!   [`qmatmul`] its int8 products, [`ct2`] the model file, `vocabulary` the tokenizer and
//!   special tokens, [`mel`] the features, [`language`] the language codes.
//!
//! Fetching the pinned models, choosing which utterance is decoded when, and everything a
//! call is are the server's (hark's `backend::whisper` and `backend::embedded`).
//!
//! ```no_run
//! use hark_whisper::{Decoder, Model, ModelPaths};
//!
//! let paths = ModelPaths { dir: "/models/whisper-tiny.en".into(), name: "tiny.en".into() };
//! let model = Model::load(&paths)?;
//! let mut decoder = Decoder::new(model);
//! let audio = vec![0.0f32; 16_000]; // 16 kHz mono
//! println!("{:?}", decoder.decode(&audio, "", "").text);
//! # Ok::<(), hark_whisper::LoadError>(())
//! ```

mod beam;
pub mod ct2;
mod decoder;
mod error;
pub mod filter;
pub mod language;
pub mod mel;
pub mod model;
pub mod options;
mod prompt;
pub mod qmatmul;
mod search;
pub mod sound_probe;
mod vocabulary;
mod wide;

use std::path::PathBuf;

pub use self::decoder::{Decoded, Decoder, Model, Request};
pub use self::error::{DecodeError, LoadError};
pub use self::filter::Verdict;
pub use self::language::{Spoken, UnknownLanguage};
pub use self::model::EncoderProducts;

/// The rate Whisper works at.
pub const RATE: usize = 16_000;
/// Whisper's window: 30 s.
pub const WINDOW_SAMPLES: usize = 30 * RATE;

/// Where a model to load is.
#[derive(Debug, Clone)]
pub struct ModelPaths {
    pub dir: PathBuf,
    /// "tiny.en", "base", or the directory as configured: names the model's decoding
    /// options ([`options::DecodeOptions::measured`]; any other is calibrated at load).
    pub name: String,
}

/// Which of a decoder's models a decode uses: the (small, fast) partials' model, or the
/// finals' model when the decoder has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Partials,
    Finals,
}
