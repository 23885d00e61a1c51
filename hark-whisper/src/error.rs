//! What stops a Whisper model from loading, or a decode from running.

use std::path::PathBuf;

use super::ct2;

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    File(#[from] ct2::Error),
    #[error("{} holds a CTranslate2 {spec:?} model, not a Whisper one", path.display())]
    NotWhisper { path: PathBuf, spec: String },
    /// A tensor missing or of a size no Whisper model has.
    #[error("unexpected Whisper shape: {0}")]
    Shape(String),
    #[error("cannot read {}: {reason}", path.display())]
    Tokenizer { path: PathBuf, reason: String },
    #[error("the tokenizer has no {0}")]
    Token(&'static str),
    #[error("{}: {source}", path.display())]
    Config {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Why one utterance could not be decoded: only its own channel hears of it.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The call's language, refused when it started, reached the engine anyway.
    #[error(transparent)]
    Language(#[from] super::language::UnknownLanguage),
    #[error("the Whisper model {0} transcribes English only")]
    EnglishOnly(String),
}
