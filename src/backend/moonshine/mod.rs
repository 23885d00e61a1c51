//! Moonshine tiny-en through libmoonshine.so, as an engine of the embedded path
//! ([`crate::backend::embedded`]).
//!
//! hark decodes each utterance with one batch call instead of the library's streams: the
//! library only ends a line on a decode, which put a floor of ~320–390 ms plus a decode under
//! every final, and re-decoded every line of the call on each update. A handle holds the
//! model (~150 MB), takes one call at a time and runs onnxruntime's 2 threads.

mod config;
pub mod ffi;

use std::sync::Arc;

use tracing::warn;

pub use self::config::{MoonshineConfig, NAME};
use self::ffi::{Library, Transcriber};
use crate::backend::embedded::{
    ContextKind, Embedded, Engine, EngineError, Loaded, MODEL_RATE, Settings, Tier, Transcribed,
    Utterance,
};
use crate::turn::{TurnModel, TurnPaths};
use crate::wheel;

/// Library options; a config may override them. hark cuts the utterances itself, so the
/// library's own detector is turned off (threshold 0): with it on, a decode split the
/// pre-roll into a line of its own that the model heard as "You" (BENCHMARKS.md).
const DEFAULT_OPTIONS: [(&str, &str); 1] = [("vad_threshold", "0")];

/// The embedded path's settings from `[moonshine]`.
pub fn settings(config: &MoonshineConfig) -> Settings {
    Settings {
        decoders: config.pool_size,
        partial_interval_ms: config.partial_interval_ms,
        endpoint_ms: config.endpoint_ms,
        narrowband_endpoint_ms: config.narrowband_endpoint_ms,
        assistant_endpoint_ms: config.assistant_endpoint_ms,
        max_load: config.max_load,
        hold_unfinished: config.hold_unfinished,
        turn_model: config.turn_model,
        max_turn_silence_ms: config.max_turn_silence_ms,
        // Moonshine's decodes carry no sentence-end probability.
        end_confidence: 0.0,
        sure_end: 0.0,
        quick_end: 0.0,
        // Not read without `quick_end`.
        min_turn_silence_ms: 200,
        context_span_ms: config.context_span_ms,
        shed: config.shed,
        calibrate: true,
    }
}

/// Starts fetching (first run only) and loading Moonshine in the background. The
/// end-of-turn model is loaded too if `turn_model` (some profile may want it where the
/// default does not).
pub fn spawn(config: &MoonshineConfig, turn_model: bool) -> Arc<Embedded> {
    let config = config.clone();
    Embedded::spawn(
        NAME,
        settings(&config),
        Box::new(move || load(&config, turn_model).map_err(EngineError::from)),
    )
}

/// [`spawn`] for files alone (`hark transcribe`): no call is admitted, so the decoders are
/// not timed at load.
pub fn spawn_offline(config: &MoonshineConfig) -> Arc<Embedded> {
    let config = config.clone();
    let settings = Settings {
        calibrate: false,
        ..settings(&config)
    };
    Embedded::spawn(
        NAME,
        settings,
        Box::new(move || load(&config, false).map_err(EngineError::from)),
    )
}

/// One handle's engine.
struct Moonshine(Transcriber);

impl Engine for Moonshine {
    /// One utterance after another: the library decodes a call at a time.
    fn transcribe(
        &mut self,
        batch: &[Utterance<'_>],
        _tier: Tier,
    ) -> Vec<Result<Transcribed, EngineError>> {
        batch
            .iter()
            .map(|u| {
                self.0
                    .transcribe_without_streaming(u.audio, MODEL_RATE)
                    .map(|lines| Transcribed::words(ffi::joined_text(&lines)))
                    .map_err(EngineError::from)
            })
            .collect()
    }
}

/// Fetches (first run only) and loads the engine: one handle per `pool_size`.
/// The error is the start-up failure's message, read by the operator; nothing branches on it.
pub fn load(config: &MoonshineConfig, turn_model: bool) -> Result<Loaded, String> {
    let paths = engine_paths(config)?;
    let lib = Library::load(&paths.lib).map_err(|e| e.to_string())?;
    let mut options: Vec<(String, String)> = DEFAULT_OPTIONS
        .iter()
        .filter(|(k, _)| !config.options.contains_key(*k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    options.extend(config.options.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    for _ in 0..config.pool_size {
        let transcriber =
            Transcriber::load(lib.clone(), &paths.model_dir, ffi::ARCH_TINY, &options).map_err(
                |e| format!("cannot load model from {}: {e}", paths.model_dir.display()),
            )?;
        engines.push(Box::new(Moonshine(transcriber)));
    }
    let judge = if turn_model {
        load_judge(config, &paths)
    } else {
        None
    };
    Ok(Loaded {
        engines,
        context: ContextKind::Audio,
        prompted: false,
        describe: format!(
            "moonshine tiny-en (libmoonshine {}, onnxruntime float32, 2 threads per handle, {})",
            lib.version(),
            paths.model_dir.display()
        ),
        judge,
        speaks: crate::backend::embedded::english_only(NAME),
        finals_model: false,
        max_batch: 1,
        beam: 1,
    })
}

/// Fetches (first run only) and loads the end-of-turn model. Finals are still right without
/// it, only less well ended: a failure is a warning.
fn load_judge(config: &MoonshineConfig, engine: &wheel::EnginePaths) -> Option<TurnModel> {
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(wheel::default_cache_dir);
    let loaded = crate::turn::ensure_model(&crate::turn::fetch_options(cache))
        .map_err(|e| e.to_string())
        .and_then(|model| {
            TurnModel::load(&TurnPaths::new(model, engine)).map_err(|e| e.to_string())
        });
    match loaded {
        Ok(model) => Some(model),
        Err(e) => {
            warn!(error = %e, "end-of-turn model unavailable; customer finals end as decoded");
            None
        }
    }
}

/// Fetches the pinned engine on first use (with a progress bar) and returns where it is.
/// The error is the fetch's message, for the person starting hark.
pub fn engine_paths(config: &MoonshineConfig) -> Result<wheel::EnginePaths, String> {
    let mut opts = wheel::FetchOptions::default();
    if let Some(dir) = &config.cache_dir {
        opts.cache_dir = dir.clone();
    }
    if let Some(wheel) = &config.wheel {
        opts.url = wheel.clone();
    }
    wheel::ensure_engine(&opts).map_err(|e| e.to_string())
}
