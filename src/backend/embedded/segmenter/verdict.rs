//! Turn verdicts: when to ask the end-of-turn model, what it hears, and how its verdict
//! ends a final (with . ? ! when the speaker has finished, without when not).

use super::*;

/// How a final ends once the end-of-turn model has judged: a finished turn ends in . ? !
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

/// Which audio the end-of-turn model heard: utterance `utterance` up to `len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnTicket {
    pub(super) utterance: u64,
    pub(super) len: usize,
}

/// How long before the endpoint the end-of-turn model is asked, so that its verdict (about
/// 50 ms, BENCHMARKS.md "turn model") is there when the final is.
pub(super) const TURN_LEAD: usize = 100 * RATE / 1000;

/// Audio the end-of-turn model hears after the last voiced frame (zeros where the pause is
/// shorter so far): what it was measured with.
pub(super) const TURN_TAIL: usize = 200 * RATE / 1000;

/// The most audio the end-of-turn model reads.
pub const TURN_WINDOW: usize = 8 * RATE;

/// How long a final whose text is ready waits for a late verdict before it goes as it is.
pub(super) const TURN_WAIT: Duration = Duration::from_millis(150);

impl Segmenter {
    /// Whether the end-of-turn model should hear this channel now: the pause is nearly the
    /// endpoint. If so, marks it asked and copies what it is to hear into `out`: up to
    /// `TURN_WINDOW` of the turn so far, and silence up to `TURN_TAIL` after the voice.
    pub fn claim_turn(&mut self, out: &mut Vec<f32>) -> Option<TurnTicket> {
        if !self.wants_turn() {
            return None;
        }
        let open = self.open.as_ref()?;
        let ticket = TurnTicket {
            utterance: open.id,
            len: open.audio.len(),
        };
        let own = open.audio.len().max(open.voiced_end + TURN_TAIL);
        out.clear();
        let from = self.turn_context(
            open.start + open.preroll as u64,
            TURN_WINDOW - own.min(TURN_WINDOW),
        );
        for (audio, _) in self.context(from, open.start) {
            out.extend_from_slice(audio);
        }
        let audio = &open.audio[open.audio.len().saturating_sub(TURN_WINDOW)..];
        out.extend_from_slice(audio);
        out.resize(out.len() + own - open.audio.len(), 0.0);
        if let Some(open) = &mut self.open {
            open.judged = Some((ticket.len, None));
        }
        Some(ticket)
    }

    /// See [`Segmenter::claim_turn`].
    pub fn wants_turn(&self) -> bool {
        let judge_at = self
            .config
            .endpoint
            .saturating_sub(TURN_LEAD)
            .max(2 * FRAME);
        self.config.judge_turns
            && self
                .open
                .as_ref()
                .is_some_and(|open| open.silence >= judge_at && open.judged.is_none())
    }

    /// Takes the end-of-turn model's verdict on what a ticket covered (`None` if it could
    /// not say), and emits a final it was holding.
    pub fn judged(&mut self, ticket: TurnTicket, complete: Option<bool>, out: &mut Vec<Emit>) {
        if let Some(ended) = self.ended.iter_mut().find(|e| e.id == ticket.utterance) {
            if ended.judging && ticket.len >= ended.voiced_end {
                ended.turn = complete;
                ended.judging = false;
                self.drain_ready(out);
            }
            return;
        }
        if let Some(open) = &mut self.open
            && open.id == ticket.utterance
            && ticket.len >= open.voiced_end
            && let Some(complete) = complete
        {
            open.judged = Some((ticket.len, Some(complete)));
        }
    }
}
