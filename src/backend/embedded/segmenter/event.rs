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
    /// the turn goes on: its words, the model's sentence ending, the end-of-turn model, or
    /// the wait graded by the doubt. (A pause whose words are not decoded yet waits too,
    /// usually a frame or two, and is not held.)
    Held,
    /// Voice came back after `silence`; `held`: the pause had been held, so the words on
    /// both sides of it join one final.
    Resumed { silence: Duration, held: bool },
    /// The utterance closed after `silence`, its final to follow: `ends_turn`, the final
    /// ends in . ? ! because the endpointer heard the turn's end (or the hold ran out);
    /// `held`, the pause had been held past the endpoint first; `after_turn_end`, the
    /// utterance began this long (within the turn gap) after the same speaker's previous
    /// one was closed as the turn's end: the platform may have answered a caller who was
    /// only pausing (`hark bench`'s premature end, seen from the server, which cannot know
    /// when the platform answered, so an upper estimate).
    Endpoint {
        silence: Duration,
        ends_turn: bool,
        held: bool,
        after_turn_end: Option<Duration>,
    },
    /// The utterance closed with too little voice to be speech: no final.
    Dropped,
}
