//! The embedded path's settings, whatever the engine: what `[whisper]` and `[moonshine]`
//! share (decoder threads, timing, admission, the shedding ladder). Each engine's section
//! keeps these keys flat beside its own (`whisper.endpoint_ms`, not
//! `whisper.path.endpoint_ms`) with its own measured defaults, and hands them over once, at
//! spawn; engines read nothing of the pool.

use serde::{Deserialize, Serialize};

/// The settings of the embedded path, whatever the engine.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Decoder threads (engine instances).
    pub decoders: usize,
    pub partial_interval_ms: u64,
    pub endpoint_ms: u64,
    pub narrowband_endpoint_ms: u64,
    /// The assistant's channel, whatever its rate: see `WhisperConfig::assistant_endpoint_ms`.
    pub assistant_endpoint_ms: u64,
    pub max_load: f64,
    /// A customer's pause after words that go on is held (`SegmenterConfig::hold_unfinished`).
    pub hold_unfinished: bool,
    pub turn_model: bool,
    /// With a pause held: the silence that ends a customer's utterance whatever the judges
    /// said (`SegmenterConfig::turn_hold`).
    pub max_turn_silence_ms: u64,
    /// With a pause held: the engine's sentence-end probability below which a customer's
    /// pause is held too (`SegmenterConfig::unsure_end`); 0: not read.
    pub end_confidence: f64,
    /// With `end_confidence`: the probability from which a pause ends at the endpoint
    /// (`SegmenterConfig::sure_end`).
    pub sure_end: f64,
    /// With `end_confidence`: the probability from which a pause ends after
    /// `min_turn_silence_ms` rather than the endpoint (`SegmenterConfig::quick_end`); 0: off.
    pub quick_end: f64,
    pub min_turn_silence_ms: u64,
    pub context_span_ms: u64,
    /// The last step the shedding ladder may take.
    pub shed: Shed,
    /// Time the decoders at load for the cost model admission and the ladder read (about
    /// 4 s, BENCHMARKS.md "Bursts and admission"). Off where nothing is admitted
    /// (`hark transcribe`): decodes are then priced by `CostModel::default`.
    pub calibrate: bool,
}

impl Settings {
    /// What is wrong with the keys every engine's section has (admission's `max_load`, the
    /// endpoints, the hold), each named under `section` (`whisper`, `moonshine`) with the
    /// variable and flag that also set it. Each engine's section checks its own keys beside
    /// these.
    pub fn problems(&self, section: &str) -> Vec<String> {
        let mut out = Vec::new();
        if !(0.05..=1.0).contains(&self.max_load) {
            out.push(format!(
                "{section}.max_load must be within 0.05–1.0 (got {})",
                self.max_load
            ));
        }
        for (key, by, ms) in [
            (
                "endpoint_ms",
                " (HARK_ENDPOINT_MS, --endpoint-ms)",
                self.endpoint_ms,
            ),
            (
                "narrowband_endpoint_ms",
                " (HARK_NARROWBAND_ENDPOINT_MS, --narrowband-endpoint-ms)",
                self.narrowband_endpoint_ms,
            ),
            (
                "assistant_endpoint_ms",
                " (HARK_ASSISTANT_ENDPOINT_MS, --assistant-endpoint-ms)",
                self.assistant_endpoint_ms,
            ),
            ("max_turn_silence_ms", "", self.max_turn_silence_ms),
            ("min_turn_silence_ms", "", self.min_turn_silence_ms),
        ] {
            let key = format!("{section}.{key}{by}");
            if let Err(e) = crate::backend::options::check_endpoint_ms(&key, ms) {
                out.push(e);
            }
        }
        for (key, t) in [
            ("end_of_turn_confidence_threshold", self.end_confidence),
            ("end_of_turn_sure_threshold", self.sure_end),
            ("end_of_turn_quick_threshold", self.quick_end),
        ] {
            let key = format!("{section}.{key}");
            if let Err(e) = crate::backend::options::check_confidence(&key, t) {
                out.push(e);
            }
        }
        out
    }
}

impl Default for Settings {
    /// One decoder, the engines' default timing and ladder, Moonshine's admission, no left
    /// context, no pause held: what the embedded path's tests start from.
    fn default() -> Self {
        Self {
            decoders: 1,
            partial_interval_ms: 500,
            endpoint_ms: 200,
            narrowband_endpoint_ms: 300,
            assistant_endpoint_ms: 1_000,
            max_load: 0.8,
            hold_unfinished: false,
            turn_model: false,
            max_turn_silence_ms: crate::backend::embedded::segmenter::TURN_HOLD_MS,
            end_confidence: 0.0,
            sure_end: 0.0,
            quick_end: 0.0,
            min_turn_silence_ms: 200,
            context_span_ms: 0,
            shed: Shed::Speculative,
            calibrate: true,
        }
    }
}

/// What the decoders leave out while finals are late, in the order a caller misses it
/// least: each step sheds its own work and every step's before it. The config names the
/// last step the ladder may take (`shed`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shed {
    #[default]
    Nothing,
    /// Finals' beam search, for an engine that has one (Whisper's default): finals are
    /// decoded greedily, with a few more errors, for less decoder time (BENCHMARKS.md,
    /// "Beam search for finals").
    Beam,
    /// Partials (and first partials): the platform acts on finals.
    Partials,
    /// Finals' left context: their decodes get shorter, a little less accurate.
    Context,
    /// The finals' own model, for an engine that has one (Whisper's default: base):
    /// finals are decoded by the partials' model, in about half the time, with more
    /// errors (BENCHMARKS.md, "Whisper").
    FinalsModel,
    /// Speculative decodes: finals are decoded only once their endpoint has passed.
    Speculative,
}

impl Shed {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nothing => "nothing",
            Self::Beam => "beam",
            Self::Partials => "partials",
            Self::Context => "context",
            Self::FinalsModel => "finals_model",
            Self::Speculative => "speculative",
        }
    }
}
