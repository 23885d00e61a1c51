//! What the endpointer saw happen to a channel's speech, as events: an utterance opened,
//! paused, held, resumed, reached its endpoint. They tell the shell what the turn decisions
//! were (metrics, logs); nothing decides a decode from them (the scheduler reads
//! [`super::Need`]).

use std::time::Duration;

/// One thing that happened to the channel's speech, in the order it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Voice opened an utterance.
    Opened,
    /// The open utterance's voice stopped: its first silent frame.
    Paused,
    /// The pause outlasted the endpoint and the utterance stays open because a judge says
    /// the turn goes on (`by`). (A pause whose words are not decoded yet waits too, usually
    /// a frame or two, and is not held.)
    Held { by: Hold },
    /// Voice came back after `silence`; `held`: the pause had been held (by that judge),
    /// so the words on both sides of it join one final.
    Resumed {
        silence: Duration,
        held: Option<Hold>,
    },
    /// The utterance closed after `silence`, its final to follow: `ends_turn`, the final
    /// ends in . ? ! because the endpointer heard the turn's end (or the hold ran out);
    /// `sooner`, before the endpoint (`quick_end`: the judge was that sure);
    /// `held`, the pause had been held past the endpoint first (by that judge); `after_turn_end`, the
    /// utterance began this long (within the turn gap) after the same speaker's previous
    /// one was closed as the turn's end: the platform may have answered a caller who was
    /// only pausing (`hark bench`'s premature end, seen from the server, which cannot know
    /// when the platform answered, so an upper estimate).
    Endpoint {
        silence: Duration,
        ends_turn: bool,
        sooner: bool,
        held: Option<Hold>,
        after_turn_end: Option<Duration>,
    },
    /// The utterance closed with too little voice to be speech: no final.
    Dropped,
}

/// Which judge held a pause past the endpoint ([`Event::Held`]): what an operator reads to
/// tell a caller's unfinished words from a finished turn the judges doubted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The words go on: a number, a spelled letter, "and", a comma ([`crate::turn::words`]),
    /// or one word that opens the turn and is no answer alone.
    Words,
    /// Whisper's probability of a sentence's end after the words is under
    /// `end_of_turn_confidence_threshold`: `judge`, read by the partials' model at the
    /// pause; otherwise by the pause's own decode (the judge shed in a wave).
    SentenceEnd { judge: bool },
    /// The end-of-turn model heard a pause inside the turn.
    Model,
    /// The wait graded by the doubt has not run out (`end_of_turn_sure_threshold`).
    Graded,
}

impl Hold {
    /// The name logs and metrics give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Words => "words",
            Self::SentenceEnd { judge: true } => "sentence_end",
            Self::SentenceEnd { judge: false } => "sentence_end_decode",
            Self::Model => "model",
            Self::Graded => "graded",
        }
    }
}
