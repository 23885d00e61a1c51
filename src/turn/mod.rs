//! End-of-turn detection. From the text ([`words`]): a transcript ending in a number, a
//! spelled letter, "and" or a comma is a turn going on. From the audio: smart-turn v3.2,
//! pipecat's model, judges from the last 8 s of a speaker's audio whether they have finished
//! their turn, from how they sound (pitch, pace), which silence alone cannot tell.
//!
//! The model ships inside the `pipecat-ai` wheel (BSD-2-Clause), pinned here like the engine.
//! It runs on onnxruntime 1.23 loaded once per process through `ort`: the `onnxruntime`
//! wheel's library (MIT, pinned: [`RUNTIME_WHEEL`]) beside Whisper, or the one the Moonshine
//! wheel already brings beside Moonshine (the same file `libmoonshine.so` loads, so the same
//! copy). Whichever is loaded first serves every turn model of the process.

pub mod features;
pub mod words;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;

use crate::wheel::{self, EnginePaths, FetchError, FetchOptions, Wheel};
use features::{FRAMES, LogMel, N_MELS, WINDOW};

pub use features::RATE;

pub const PINNED_VERSION: &str = "1.14.0";
pub const PINNED_URL: &str = "https://files.pythonhosted.org/packages/38/31/29c72ca8d3a16b59fd12580fcb99a7cef641d9ee07fe7b0321c1b65ca3cf/pipecat_ai-1.14.0-py3-none-any.whl";
pub const PINNED_SHA256: &str = "0352f504b44e78bdf524e45af4bc759601c835b9b7dc195efe5e03384b974a44";
/// The model file's own checksum, so that a wheel passed by hand with the right checksum
/// but another layout cannot slip another model in.
pub const MODEL_SHA256: &str = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f";
const MODEL_FILE: &str = "smart-turn-v3.2-cpu.onnx";
const INPUT: &str = "input_features";

/// The model's wheel: only the model is unpacked, to `<cache>/smart-turn-v3.2/`.
pub static TURN_WHEEL: Wheel = Wheel {
    what: "the smart-turn model",
    pip: "pipecat-ai==1.14.0",
    offline: "HARK_TURN_WHEEL=PATH",
    dir: "smart-turn-v3.2",
    take: &[(
        "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",
        MODEL_FILE,
    )],
    required: &[MODEL_FILE],
    pinned: &[(MODEL_FILE, MODEL_SHA256)],
};

/// The onnxruntime the turn model runs on where no engine brings one (Whisper): the
/// `onnxruntime` wheel's shared library alone, which needs nothing of Python.
pub const RUNTIME_URL: &str = "https://files.pythonhosted.org/packages/e9/80/113381ba832d5e777accedc6cb41d10f9eca82321ae31ebb6bcede530cea/onnxruntime-1.23.2-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl";
pub const RUNTIME_SHA256: &str = "da44b99206e77734c5819aa2142c69e64f3b46edc3bd314f6a45a932defc0b3e";
const RUNTIME_FILE: &str = "libonnxruntime.so.1.23.2";
/// The library's own checksum, as [`MODEL_SHA256`] for the model.
const RUNTIME_FILE_SHA256: &str =
    "718c3fb0785d5ea06061b92c32ce4ad35be1bd4c71ae6192efe06f1ab21f0f8a";

/// onnxruntime's wheel: only its shared library is unpacked, to `<cache>/onnxruntime-1.23.2/`.
pub static RUNTIME_WHEEL: Wheel = Wheel {
    what: "onnxruntime (for the smart-turn model)",
    pip: "onnxruntime==1.23.2 --python-version 3.11 --only-binary=:all: --platform manylinux_2_28_x86_64",
    offline: "HARK_ONNXRUNTIME_WHEEL=PATH",
    dir: "onnxruntime-1.23.2",
    take: &[("onnxruntime/capi/libonnxruntime.so.1.23.2", RUNTIME_FILE)],
    required: &[RUNTIME_FILE],
    pinned: &[(RUNTIME_FILE, RUNTIME_FILE_SHA256)],
};

/// The pinned onnxruntime wheel, or the one `HARK_ONNXRUNTIME_WHEEL` names (a path or URL,
/// for offline machines), unpacked into `cache_dir`.
pub fn runtime_fetch_options(cache_dir: PathBuf) -> FetchOptions {
    pinned(
        "HARK_ONNXRUNTIME_WHEEL",
        RUNTIME_URL,
        RUNTIME_SHA256,
        cache_dir,
    )
}

/// A pinned wheel's fetch: from `url`, or the path or URL the variable `var` names.
fn pinned(var: &str, url: &str, sha256: &str, cache_dir: PathBuf) -> FetchOptions {
    let url = std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| url.to_owned());
    FetchOptions {
        cache_dir,
        url,
        sha256: sha256.to_owned(),
        progress: true,
    }
}

/// Returns onnxruntime's library, downloading and unpacking it first if needed (blocking).
pub fn ensure_runtime(opts: &FetchOptions) -> Result<PathBuf, FetchError> {
    Ok(wheel::ensure_wheel(&RUNTIME_WHEEL, opts)?.join(RUNTIME_FILE))
}

/// The model and a runtime for it in `cache_dir`, fetched first where they are not there
/// yet (blocking): what an engine without an onnxruntime of its own loads.
pub fn ensure(cache_dir: PathBuf) -> Result<TurnPaths, FetchError> {
    Ok(TurnPaths {
        model: ensure_model(&fetch_options(cache_dir.clone()))?,
        onnxruntime: ensure_runtime(&runtime_fetch_options(cache_dir))?,
    })
}

/// How a final ends once it is known whether the speaker's turn is over (an end-of-turn
/// model's verdict, a provider's own signal): a finished turn ends in . ? !
/// (the platform answers 0.1 s after such a final, 1.5 s after any other: docs/PROVIDERS.md,
/// "How a final's ending costs time"); one the speaker is about to go on with does not, so
/// the assistant does not cut in.
pub fn end_turn(text: &str, complete: bool) -> String {
    let text = text.trim_end();
    let terminal = text.ends_with(['.', '?', '!']);
    if text.is_empty() || terminal == complete {
        text.to_string()
    } else if complete {
        format!("{}.", text.trim_end_matches([',', ';', ':', '-', '—']))
    } else {
        text.trim_end_matches(['.', '?', '!']).to_string()
    }
}

/// The pinned wheel, or the one `HARK_TURN_WHEEL` names (a path or URL, for offline
/// machines), unpacked into `cache_dir`.
pub fn fetch_options(cache_dir: PathBuf) -> FetchOptions {
    pinned("HARK_TURN_WHEEL", PINNED_URL, PINNED_SHA256, cache_dir)
}

/// Returns the model file, downloading and unpacking it first if needed (blocking).
pub fn ensure_model(opts: &FetchOptions) -> Result<PathBuf, FetchError> {
    Ok(wheel::ensure_wheel(&TURN_WHEEL, opts)?.join(MODEL_FILE))
}

/// What `TurnModel::load` reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnPaths {
    /// The `.onnx` model: `ensure_model`'s, checked when unpacked; any other file here is
    /// loaded unchecked (a model with the same input and output).
    pub model: PathBuf,
    /// The onnxruntime shared library (1.23 or later).
    pub onnxruntime: PathBuf,
}

impl TurnPaths {
    /// The model, run by the engine's own onnxruntime.
    pub fn new(model: PathBuf, engine: &EnginePaths) -> TurnPaths {
        TurnPaths {
            model,
            onnxruntime: engine.onnxruntime.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(
        "the smart-turn model {} does not exist; hark::turn::ensure_model fetches it",
        path.display()
    )]
    MissingModel { path: PathBuf },

    #[error(
        "onnxruntime {} does not exist; hark::turn::ensure_runtime fetches it (or it comes \
         with the Moonshine engine, wheel::ensure_engine)",
        path.display()
    )]
    MissingRuntime { path: PathBuf },

    #[error("could not load onnxruntime from {}: {reason}", path.display())]
    Runtime { path: PathBuf, reason: String },

    #[error("could not load the smart-turn model {}: {reason}", path.display())]
    Model { path: PathBuf, reason: String },

    #[error("no audio to judge")]
    NoAudio,

    #[error("sample {index} of the audio is not a finite number")]
    NotFinite { index: usize },

    #[error("the smart-turn model failed: {0}")]
    Inference(String),
}

/// smart-turn v3.2 with its feature buffers: one per decoder thread.
///
/// `Send`, and `complete_probability` takes `&mut self`: a call runs on the caller's thread
/// alone (onnxruntime starts no threads of its own for it).
pub struct TurnModel {
    session: Session,
    features: LogMel,
}

impl std::fmt::Debug for TurnModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnModel").finish_non_exhaustive()
    }
}

impl TurnModel {
    /// Loads onnxruntime (once per process) and the model.
    pub fn load(paths: &TurnPaths) -> Result<TurnModel, TurnError> {
        if !paths.model.is_file() {
            return Err(TurnError::MissingModel {
                path: paths.model.clone(),
            });
        }
        load_runtime(&paths.onnxruntime)?;
        let model_err = |e: ort::Error| TurnError::Model {
            path: paths.model.clone(),
            reason: e.to_string(),
        };
        // One thread, the caller's: hark already runs one decoder thread per core, and a
        // pool per model would fight them for the cores.
        let session = Session::builder()
            .and_then(|b| b.with_intra_threads(1))
            .and_then(|b| b.with_inter_threads(1))
            .and_then(|b| b.with_parallel_execution(false))
            .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::Level3))
            .and_then(|b| b.commit_from_file(&paths.model))
            .map_err(model_err)?;
        let shape_ok = session.inputs().iter().any(|i| i.name() == INPUT);
        if !shape_ok || session.outputs().is_empty() {
            return Err(TurnError::Model {
                path: paths.model.clone(),
                reason: format!("it has no input {INPUT:?} or no output"),
            });
        }
        Ok(TurnModel {
            session,
            features: LogMel::new(),
        })
    }

    /// Probability that the speaker has finished, from up to the last 8 s of 16 kHz mono
    /// audio in [-1, 1].
    ///
    /// Earlier audio is ignored, as the model never saw more. The audio is normalised to
    /// unit variance first, so its level does not matter. pipecat calls it complete above
    /// 0.5, once its voice detector has heard 200 ms of silence.
    pub fn complete_probability(&mut self, audio: &[f32]) -> Result<f32, TurnError> {
        if audio.is_empty() {
            return Err(TurnError::NoAudio);
        }
        let start = audio.len().saturating_sub(WINDOW);
        if let Some(i) = audio[start..].iter().position(|x| !x.is_finite()) {
            return Err(TurnError::NotFinite { index: start + i });
        }
        let features = self.features.compute(&audio[start..]);
        run(&mut self.session, features)
    }

    /// The model alone, on features made elsewhere (`N_MELS` rows of `FRAMES`): for checking
    /// the features against other implementations.
    pub fn probability_from_features(&mut self, features: &[f32]) -> Result<f32, TurnError> {
        if features.len() != N_MELS * FRAMES {
            return Err(TurnError::Inference(format!(
                "{} features, the model reads {N_MELS} x {FRAMES}",
                features.len()
            )));
        }
        run(&mut self.session, features)
    }
}

fn run(session: &mut Session, features: &[f32]) -> Result<f32, TurnError> {
    let failed = |e: ort::Error| TurnError::Inference(e.to_string());
    let input = TensorRef::from_array_view(([1usize, N_MELS, FRAMES], features)).map_err(failed)?;
    let outputs = session.run(ort::inputs![INPUT => input]).map_err(failed)?;
    let (_, values) = outputs[0].try_extract_tensor::<f32>().map_err(failed)?;
    match values.first() {
        Some(&p) if p.is_finite() => Ok(p),
        other => Err(TurnError::Inference(format!(
            "the model answered {other:?}, not a probability"
        ))),
    }
}

/// ort binds to one onnxruntime for the life of the process; the first path wins, and every
/// later turn model runs on it (any onnxruntime 1.23 or later runs the model).
static RUNTIME: Mutex<Option<PathBuf>> = Mutex::new(None);

fn load_runtime(path: &Path) -> Result<(), TurnError> {
    if !path.is_file() {
        return Err(TurnError::MissingRuntime {
            path: path.to_owned(),
        });
    }
    let wanted = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let mut loaded = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match &*loaded {
        Some(_) => Ok(()),
        None => {
            // Checks the library's version (1.23 or later) before anything else uses it; on
            // failure nothing is kept, so another path may be tried.
            let builder = ort::init_from(&wanted).map_err(|e| TurnError::Runtime {
                path: wanted.clone(),
                reason: e.to_string(),
            })?;
            builder
                .with_name("hark-turn")
                .with_telemetry(false)
                .commit();
            *loaded = Some(wanted);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each decoder thread owns one, so it must move to that thread.
    #[test]
    fn the_model_is_send() {
        fn send<T: Send>() {}
        send::<TurnModel>();
    }

    #[test]
    fn missing_and_bogus_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("model.onnx");
        let lib = dir.path().join("libonnxruntime.so.1");
        let paths = TurnPaths {
            model: model.clone(),
            onnxruntime: lib.clone(),
        };
        let err = TurnModel::load(&paths).unwrap_err();
        assert!(matches!(err, TurnError::MissingModel { .. }), "{err}");
        assert!(err.to_string().contains("model.onnx"), "{err}");

        std::fs::write(&model, b"not a model").unwrap();
        let err = TurnModel::load(&paths).unwrap_err();
        assert!(matches!(err, TurnError::MissingRuntime { .. }), "{err}");

        // Not a shared library: refused with the loader's reason, and nothing is kept.
        std::fs::write(&lib, b"not a library").unwrap();
        let err = TurnModel::load(&paths).unwrap_err();
        let TurnError::Runtime { reason, .. } = &err else {
            panic!("expected a runtime load error, got {err}");
        };
        assert!(err.to_string().contains("libonnxruntime.so.1"), "{err}");
        assert!(!reason.is_empty());
        assert!(RUNTIME.lock().unwrap().is_none());
    }
}
