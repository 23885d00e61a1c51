//! The embedded recognizer's name and its config section (`[moonshine]`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::backend::embedded::Shed;

/// The embedded recognizer's backend name: always registered, never configured under
/// `[backends]`.
pub const NAME: &str = "moonshine";

/// `[moonshine]`: the embedded recognizer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MoonshineConfig {
    /// Where the engine and model are kept once fetched.
    pub cache_dir: Option<PathBuf>,
    /// Where to fetch the pinned wheel from: a URL, or a local path for offline installs.
    pub wheel: Option<String>,
    /// Recognizer handles shared by all calls (each holds the model, ~150 MB). On 2 cores
    /// one handle already keeps both busy (onnxruntime runs 2 threads); more add no
    /// throughput there (BENCHMARKS.md).
    pub pool_size: usize,
    /// How often an utterance still being spoken is re-decoded to produce a partial.
    pub partial_interval_ms: u64,
    /// Silence that ends an utterance and brings its final. Shorter answers sooner but
    /// splits sentences at their pauses (BENCHMARKS.md).
    pub endpoint_ms: u64,
    /// The same for calls below 16 kHz (phone band). Cut into short pieces, narrowband
    /// speech loses the sentence context the model leans on: 300 ms made 2.4 points fewer
    /// word errors than 200 ms on the 3,322-word study set, for 25–70 ms more median time
    /// to final (BENCHMARKS.md).
    pub narrowband_endpoint_ms: u64,
    /// The same on the assistant's channel, whatever the rate: as
    /// `whisper.assistant_endpoint_ms`.
    pub assistant_endpoint_ms: u64,
    /// Admission: a new call is refused (503) when the recognizer's essential load
    /// (finals and speculative decodes, share of decoder time), grown by the new call at
    /// the present calls' average, would pass this; so calls are refused before admitted
    /// ones fall behind (BENCHMARKS.md, "overload").
    pub max_load: f64,
    /// The last step the decoders may shed while finals are late, in the order a caller
    /// misses it least: `"nothing"`, `"partials"`, `"context"` (finals' left context),
    /// `"speculative"` (decodes at pauses before the endpoint). Each step is taken when the
    /// oldest waiting final is later than its threshold and given back after 2 s on time
    /// (BENCHMARKS.md, "Load shapes"). Lower it if your assistant needs partials (barge-in)
    /// under load: finals then wait behind them.
    pub shed: Shed,
    /// As `whisper.hold_unfinished`.
    pub hold_unfinished: bool,
    /// Let an end-of-turn model (smart-turn v3.2, fetched once like the engine) decide how
    /// each customer final ends: with . ? ! when the customer has finished, without when
    /// they are about to go on; the platform answers sooner after the first and waits
    /// after the second. Off by default: on the bench's customers it took the terminal
    /// punctuation off turns that were over and lengthened the reply wait (BENCHMARKS.md,
    /// "turn model"). Profiles can turn it on.
    pub turn_model: bool,
    /// The silence that ends a held customer's utterance (as `whisper.max_turn_silence_ms`).
    pub max_turn_silence_ms: u64,
    /// How long a decode that may become a final can be made by putting the turn's earlier
    /// utterances before it (0: no left context). Longer is more accurate on sentences cut
    /// at pauses and slower: decode time grows with it (BENCHMARKS.md, "left context").
    pub context_span_ms: u64,
    /// Options passed to the library as they are (e.g. `vad_threshold`).
    pub options: BTreeMap<String, String>,
}

impl Default for MoonshineConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            wheel: None,
            pool_size: 1,
            partial_interval_ms: 500,
            endpoint_ms: 200,
            narrowband_endpoint_ms: 300,
            assistant_endpoint_ms: 1_000,
            max_load: 0.8,
            shed: Shed::Speculative,
            hold_unfinished: true,
            turn_model: false,
            max_turn_silence_ms: crate::backend::embedded::segmenter::TURN_HOLD_MS,
            context_span_ms: crate::backend::embedded::segmenter::CONTEXT_SPAN_MS,
            options: BTreeMap::new(),
        }
    }
}

impl MoonshineConfig {
    /// Every setting of the section that would make the engine misbehave: the keys every
    /// engine has (`Settings::problems`), then Moonshine's own.
    pub fn problems(&self) -> Vec<String> {
        let mut out = super::settings(self).problems(NAME);
        if self.shed == Shed::FinalsModel {
            out.push(
                "moonshine.shed = \"finals_model\": Moonshine has one model, no finals' model \
                 to shed (\"context\" or \"speculative\")"
                    .into(),
            );
        }
        if self.shed == Shed::Beam {
            out.push(
                "moonshine.shed = \"beam\": Moonshine decodes greedily, no beam search to shed \
                 (\"nothing\" or \"partials\")"
                    .into(),
            );
        }
        if self.pool_size == 0 {
            out.push("moonshine.pool_size must be at least 1".into());
        }
        // Measured: other hop sizes make libmoonshine detect no speech or corrupt its heap.
        if let Some(hop) = self.options.get("vad_hop_size")
            && hop != "512"
        {
            out.push(format!(
                "moonshine.options.vad_hop_size = {hop:?} breaks the library; only 512 works"
            ));
        }
        out
    }
}
