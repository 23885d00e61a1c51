//! The report of a run as written to `--report` (JSON, versioned), the figures of each
//! target and the ratios between two: the model `summary` and `plot` read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::conversation::Density;
use crate::report::{CallResult, ChannelTotals, RefusalCount, Stats};
use crate::shape::{Level, Shape};

/// Version of the `--report` JSON layout; raised when a field changes meaning or goes.
/// 3: a call's `refused` is its refusal (status and body) or null, no longer a flag; a
/// target's `refusals` by status; a capacity level's `refused_calls`, no longer failures.
/// 4: each channel's `time_to_final_ms`; capacity levels and `held` judge the customer's
/// time to final (the one the platform's reply waits on), no longer both channels'.
/// 5: `premature_ends` (an utterance's and a channel's) counts the pauses inside the
/// words (`inner_pauses`, new) in which the platform would have answered, no longer the
/// finals before a turn's last ending in . ? ! (now `terminal_before_last`); an
/// utterance's `ends_answerable` and a channel's `turns_ending_answerable` (. ? ! or a
/// digit); a target's `reply_wait_ms` is the customer's turns only, no longer both
/// channels'.
pub const SCHEMA_VERSION: u32 = 5;

/// The versions `--rescore` reads: 2's `refused` flags read as refusals without a body;
/// 2's and 3's channels get their times to final from their utterances; up to 4, how the
/// finals end is counted again from them, the reply wait again from the customer's
/// turns, and the pauses are unknown (0, and no premature end).
pub const READABLE_SCHEMA_VERSIONS: [u32; 4] = [2, 3, 4, SCHEMA_VERSION];

/// The whole run, as written to `--report` (`schema_version` [`SCHEMA_VERSION`]):
/// - `tool_version`, `started_unix_s`, `settings` ([`Settings`]: servers, calls, shape,
///   density, seed, machine cores);
/// - `targets`: one [`Report`] per server, `--url` first: its figures (latency [`Stats`] in
///   ms, per-channel [`ChannelTotals`], failures, refusals, close codes), when each call ran, its calls
///   utterance by utterance, and its capacity levels with `--find-capacity`;
/// - `ratios`: with `--vs`, every figure of `summary::figures` as B ÷ A by its dotted key
///   (e.g. `time_to_final_ms.p95`, `customer.wer`), null where A's is 0.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub tool_version: String,
    pub started_unix_s: u64,
    pub settings: Settings,
    pub targets: Vec<Report>,
    pub ratios: Option<Ratios>,
}

/// What the run was asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub urls: Vec<String>,
    pub labels: Vec<String>,
    pub calls: usize,
    /// `--duration`; it does not apply when `each` or `recorded`.
    pub duration_s: f64,
    /// `--each`: the calls say every utterance of the corpus once between them.
    #[serde(default)]
    pub each: bool,
    /// The calls play recordings as they are (`--each`, or real calls), not conversations
    /// of `duration_s`. (`each` and `recorded` are absent from older reports: false.)
    #[serde(default)]
    pub recorded: bool,
    pub rate: u32,
    pub frame_ms: u32,
    pub shape: Shape,
    pub density: Density,
    pub seed: u64,
    pub machine_cores: usize,
    pub find_capacity: bool,
    pub max_p95_ms: f64,
    pub max_calls: usize,
    /// `--corpus DIR`, or None for the built-in clips.
    pub corpus: Option<String>,
    pub phone_band: bool,
    pub mu_law: bool,
}

/// Target B's figures divided by target A's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ratios {
    /// "B/A": `numerator` (--vs) over `denominator` (--url), by label.
    pub numerator: String,
    pub denominator: String,
    pub figures: BTreeMap<String, Option<f64>>,
}

/// One server's results.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub label: String,
    pub url: String,
    pub calls: usize,
    /// The longest conversation played, in seconds.
    pub duration_s: f64,
    pub time_to_final_ms: Stats,
    pub first_partial_ms: Stats,
    /// Time to final plus the platform's wait for how the final ends, over the customer's
    /// turns (schema 4 and older: both channels').
    pub reply_wait_ms: Stats,
    pub customer: ChannelTotals,
    pub assistant: ChannelTotals,
    /// Calls that opened and then failed (a refused call is not one).
    pub failed_calls: usize,
    /// Calls the server refused at the upgrade (503 when it is full: the platform takes
    /// them to its fallback at once); their utterances are left out of every other figure.
    /// (Absent from older reports: 0.)
    #[serde(default)]
    pub refused_calls: usize,
    /// The refused calls by HTTP status, each with the first one's body. (Absent from
    /// older reports: filled again by `--rescore`.)
    #[serde(default)]
    pub refusals: Vec<RefusalCount>,
    /// Transcripts on a channel before anyone spoke on it.
    pub stray_transcripts: usize,
    /// Calls whose socket broke, or that the server did not close in time.
    pub transport_errors: usize,
    /// Text messages that were not protocol JSON.
    pub unparseable: usize,
    /// How the calls that opened ended, 1000 (normal) included.
    pub close_codes: Vec<CloseCount>,
    /// When each call ran, by call.
    pub timing: Vec<CallTiming>,
    /// With --find-capacity.
    pub capacity: Option<Capacity>,
    pub per_call: Vec<CallResult>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseCount {
    /// None: the close frame had no code, or no close frame came (that one also counted
    /// in `transport_errors`). A normal end is 1000: the bench hangs up with it.
    pub code: Option<u16>,
    pub reason: String,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallTiming {
    pub call: usize,
    /// When the call was dialed, after the run started.
    pub dialed_ms: f64,
    /// When its first audio frame went out.
    pub audio_from_ms: f64,
    pub audio_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Capacity {
    /// "steps" (a run per call count) or "ramp" (one run, levels by calls open).
    pub mode: String,
    pub levels: Vec<Level>,
    /// The largest level that held with all below it (levels with nothing measured, only
    /// refusals, neither hold nor break): None if not even one call did. Steps: calls
    /// offered at once, some perhaps refused; ramp: calls open at once.
    pub calls: Option<usize>,
}

impl Report {
    /// The run held: no call failed or lost a final, and the customer's p95 time to final
    /// is within `max_p95_ms` (the assistant's finals hold up no reply).
    pub fn held(&self, max_p95_ms: f64) -> bool {
        self.failed_calls == 0
            && self.refused_calls == 0
            && self.customer.missing_finals + self.assistant.missing_finals == 0
            && self.customer.time_to_final_ms.p95 <= max_p95_ms
    }
}
