//! What crosses between a channel's segmenter and the scheduler: the facts a channel has
//! for the decoders ([`Need`]), the knobs it is asked with ([`Room`]), and the decode the
//! scheduler's rule makes of them ([`Want`], its [`Ticket`] naming the audio it reads).
//!
//! The segmenter only reports ([`super::segmenter::Segmenter::need`]); what is decoded,
//! when, by which model, with what context and by when is decided in one place,
//! `schedule::want`, from these facts and the room the load leaves.

use std::time::{Duration, Instant};

use super::{FINAL_BUDGET, Speakers};

/// Samples per detector frame, at 16 kHz.
pub const FRAME: usize = 256;
/// The rate the detector and the decoders work at.
pub const RATE: usize = 16_000;

/// Samples of audio time as a duration.
pub(crate) fn samples_as_time(samples: usize) -> Duration {
    Duration::from_secs_f64(samples as f64 / RATE as f64)
}

/// Why a decode is wanted, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DecodeKind {
    Final,
    Speculative,
    FirstPartial,
    Partial,
    /// A partial that judges a pause: the partials' model reads the words to their end for
    /// its probability of a sentence's end (the segmenter's `Open::sentence_end`), due by
    /// the endpoint.
    Judge,
}

impl DecodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Final => "final",
            Self::Speculative => "speculative",
            Self::FirstPartial => "first_partial",
            Self::Partial => "partial",
            Self::Judge => "judge",
        }
    }

    /// Finals and the speculative decodes that may become them: what the calls cannot do
    /// without, as against partials.
    pub fn is_essential(self) -> bool {
        matches!(self, Self::Final | Self::Speculative)
    }
}

/// A decode a channel would like, for the scheduler to rank against other channels'.
#[derive(Debug, Clone, Copy)]
pub struct Want {
    pub kind: DecodeKind,
    /// Since when it has been wanted; older first within a kind.
    pub since: Instant,
    pub ticket: Ticket,
    /// For a final or speculative decode: when the platform needs it; for a partial
    /// judging a pause, the endpoint.
    pub due: Option<Due>,
    /// Which of the engine's models speak the channel's language.
    pub speakers: Speakers,
}

/// When a final is needed, and what its decode reads. The scheduler decodes the finals
/// due first first, and, knowing how long one has waited for a decoder, gives it to the
/// partials' model where the finals' would have it ready later than `at` and it may
/// (`quickens`; `Lead::for_final` decided only for a decode started at once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Due {
    /// The voice's end, the channel's endpoint and the final's budget after it.
    pub at: Instant,
    /// Seconds of audio the decode reads (context, the utterance, its padding).
    pub seconds: f64,
    /// Seconds of the utterance alone, with its padding: what a call's first final, which
    /// has no context yet, would read for an utterance this long (admission's wave).
    pub alone: f64,
    /// The finals' model takes it and it may give that model up for its deadline (a
    /// customer's, while the ladder may shed the model).
    pub quickens: bool,
}

/// Which audio a decode reads: the first `len` samples of one utterance, after the sent
/// finals from `context_from` on if that is not 0. The segmenter keeps taking audio while
/// the decode runs elsewhere; the ticket says what it covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub(crate) utterance: u64,
    pub(crate) len: usize,
    pub(crate) context_from: u64,
    /// Padded (and with context where there is some): good enough to be a final.
    pub(crate) whole: bool,
    /// A second try at a final whose first decode heard no words: alone, after more
    /// silence (the segmenter's `RETRY_LEAD`).
    pub(crate) retry: bool,
    /// A final (or speculative) decode the engine's beam search may take: its decode, so
    /// searched, is ready by the endpoint (see [`Lead::for_final`]).
    pub beam: bool,
    /// A final (or speculative) decode for the partials' model: the finals' would not have
    /// it ready in time (see [`Lead::for_final`]).
    pub quick: bool,
}

/// How long before the endpoint a speculative decode must start to be ready when it
/// passes: what a final's decode costs, `base + per second × length`, in samples of audio
/// time, from the pool's cost model (`cost::CostModel`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lead {
    pub base: usize,
    pub per_second: usize,
    /// The same for a final searched with the engine's beam, if it has one.
    pub beam: Option<(usize, usize)>,
    /// The same for the partials' model, greedy, where a final may fall back to it (the
    /// engine has a finals' model and the ladder may shed it).
    pub quick: Option<(usize, usize)>,
    /// How long after its endpoint a final may be ready (samples): one whose finals'-model
    /// decode would be later takes the partials' model.
    pub budget: usize,
}

impl Default for Lead {
    /// Moonshine tiny-en's decodes on 2 cores (BENCHMARKS.md, "decode cost by length"):
    /// before the engine is calibrated, and for the tests.
    fn default() -> Self {
        Self {
            base: 50 * RATE / 1000,
            per_second: 40 * RATE / 1000,
            beam: None,
            quick: None,
            budget: (FINAL_BUDGET.as_secs_f64() * RATE as f64) as usize,
        }
    }
}

/// How one final (or speculative) decode runs: how early before the endpoint it starts,
/// whether the beam searches it, and whether the partials' model takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub lead: usize,
    pub beam: bool,
    pub quick: bool,
}

impl Pick {
    /// A partial's: no lead, greedy, the partials' model.
    pub const PARTIAL: Self = Self {
        lead: 0,
        beam: false,
        quick: false,
    };
}

/// What the decoders have room for now, as the scheduler sets it per claim
/// (`schedule::Knobs`): the share of the context span finals may read, whether the
/// engine's beam may take them, what a final's decode costs (the speculative decodes'
/// lead), and whether a partial, or a pause's judge, may start on the channel (the ladder
/// keeps them and no partial runs there). Passed with each question (by a claim, and by
/// the listener asking whether to wake the decoders), never kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Room {
    pub context: f64,
    pub beam: bool,
    pub lead: Lead,
    pub partials: bool,
    /// The judges of pauses: kept after partials, until a wave would make finals late
    /// ([`crate::backend::embedded::Shed::FinalsModel`]).
    pub judges: bool,
}

impl Room {
    /// Everything, at `lead`: decoders with time to spare.
    pub fn all(lead: Lead) -> Self {
        Self {
            context: 1.0,
            beam: true,
            lead,
            partials: true,
            judges: true,
        }
    }
}

/// What a final's decode of one utterance may read: its `own` samples (padding included)
/// alone, or after the turn's earlier audio from utterance `context_from` (0: none, then
/// `with_context` is `own`), `with_context` samples in all. `len` is the utterance's audio
/// now, what the ticket covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub id: u64,
    pub len: usize,
    pub own: usize,
    pub context_from: u64,
    pub with_context: usize,
    /// A decode of it after its context left none of its own words (or the alignment gave
    /// them all to the context).
    pub context_took_all: bool,
}

/// What one channel's segmenter has for the decoders now, as facts: the scheduler's rule
/// (`schedule::want`) decides from them, with the [`Room`] the load leaves, which
/// decode (if any) the channel wants.
#[derive(Debug, Clone, Copy)]
pub struct Need {
    /// The channel's endpoint, in samples.
    pub endpoint: usize,
    /// The silence the open pause may end at: the endpoint, or sooner where its judge
    /// has read it `SegmenterConfig::quick_end` sure.
    pub soonest: usize,
    /// Its finals have a deadline (the customer's, which the platform answers): a final
    /// whose decode would be late may give up its context, then the finals' model.
    pub deadline: bool,
    /// Which of the engine's models speak the channel's language.
    pub speakers: Speakers,
    pub state: State,
}

/// Where the channel's speech stands.
#[derive(Debug, Clone, Copy)]
pub enum State {
    /// An utterance has ended (its endpoint reached `since`; its voice ended at
    /// `voice_end`) and no decode covers its last word yet. `retry`: the first decode that
    /// could be its final heard no words, so it is decoded again alone.
    Ended {
        piece: Piece,
        retry: bool,
        since: Instant,
        voice_end: Instant,
    },
    /// The open utterance is in a pause (`silence` samples since the last voiced frame,
    /// `paused_at` its first silent frame). `decoded`: a decode that could be its final
    /// covers its words already (only the judge may be wanted). `quiet`: the silence a
    /// speculative decode counts (a held utterance already decoded whole counts only the
    /// quiet under `release`, so faint voice in a long held pause is not decoded once per
    /// frame). `judge`: the partials' model's probability of a sentence's end judges its
    /// pauses, has not read these words, and was not shed.
    Paused {
        piece: Piece,
        silence: usize,
        quiet: usize,
        decoded: bool,
        judge: bool,
        since: Instant,
        paused_at: Instant,
    },
    /// The open utterance is voiced and has audio no decode read: `len` samples, of which
    /// `heard` after the pre-roll and `decoded` read by the last decode; `words` whether a
    /// decode of it had words yet. `first` and `every`: the channel's partials' cadence
    /// (the audio before the first, and between them).
    Voiced {
        id: u64,
        len: usize,
        heard: usize,
        decoded: usize,
        words: bool,
        first: usize,
        every: usize,
        since: Instant,
    },
}
