//! Turn verdicts: what the words so far and the end-of-turn model make of a pause, when to
//! ask the model and what it hears. A pause heard as the turn's end closes the utterance at
//! the endpoint, its final ending in . ? !; a pause after words that go on, or heard as one
//! inside the turn, holds the utterance open until the speaker goes on (one final for both
//! parts) or the silence reaches `turn_hold`.

use super::super::schedule::want::judges_turn;
use super::*;

/// What the end-of-turn model made of the open utterance's current pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Not asked since the last voiced frame.
    Unasked,
    /// Asked about the utterance up to this length; no answer yet.
    Asked(usize),
    /// The speaker has finished (`true`) or is pausing inside the turn (`false`).
    Said(bool),
    /// The model could not say: silence alone decides, as without it.
    Failed,
}

impl Verdict {
    /// Whether the model lets the turn end here: it heard the end, could not say, or is not
    /// on.
    fn lets_end(self, config: &SegmenterConfig) -> bool {
        !config.judge_turns || matches!(self, Self::Said(true) | Self::Failed)
    }
}

impl SegmenterConfig {
    /// Whether a pause may be held past the endpoint: some judge of turns is on.
    pub fn holds(&self) -> bool {
        self.judge_turns || self.hold_unfinished
    }

    /// Whether the model's probability of a sentence's end judges pauses (`unsure_end`,
    /// with the words' hold): the partials' model then reads each pause first.
    pub fn reads_sentence_end(&self) -> bool {
        self.hold_unfinished && self.unsure_end > 0.0
    }
}

/// The judge's reading of a pause's words ([`Open::sentence_end`]).
#[derive(Debug, Clone, Copy, PartialEq)]
enum SentenceEnd {
    /// The probability of a sentence's end after them, if the decode that read it gave one;
    /// `judge`: read by the partials' model at the pause, not by the pause's own decode.
    Read { p: Option<f32>, judge: bool },
    /// The partials' model is to read them and has not yet.
    Awaited,
}

/// What the words of a pause say ([`Open::words`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Words {
    /// Not decoded yet: the speculative decode is coming.
    Pending,
    /// The decoders shed the pause's speculative decode (load): no words will judge it, so
    /// the pause ends at the endpoint as without the hold, its final as decoded.
    Shed,
    /// They go on, for the reason given ([`Hold::Words`] or [`Hold::SentenceEnd`]).
    GoOn(Hold),
    /// They may end the turn.
    End,
}

impl Open {
    /// What the words of the decode covering the whole utterance say of its pause.
    pub(super) fn words(&self, config: &SegmenterConfig) -> Words {
        if !config.hold_unfinished {
            return Words::End;
        }
        match self.heard() {
            Some(heard) => {
                let words = goes_on(&heard.text, config.english)
                    || (self.opens_turn && lone_word(&heard.text, config.english));
                match self.sentence_end(heard, config) {
                    _ if words => Words::GoOn(Hold::Words),
                    SentenceEnd::Read { p, judge } if p.is_some_and(|p| p < config.unsure_end) => {
                        Words::GoOn(Hold::SentenceEnd { judge })
                    }
                    SentenceEnd::Read { .. } => Words::End,
                    SentenceEnd::Awaited => Words::Pending,
                }
            }
            None if self.words_shed => Words::Shed,
            None => Words::Pending,
        }
    }

    /// The decode covering the whole utterance to its last voiced frame, if one came back.
    fn heard(&self) -> Option<&Transcribed> {
        self.whole
            .as_ref()
            .filter(|(len, _)| *len >= self.voiced_end)
            .map(|(_, heard)| heard)
    }

    /// How likely a sentence ends after the pause's words: the partials' model's
    /// probability where a partial read every voiced frame (on read speech it parts pauses
    /// from turns' ends better than the finals' model's, and doubts fewer finished
    /// sentences: BENCHMARKS.md, "The partials' model as the judge"). Until that partial
    /// comes back the pause waits for it, however busy the decoders are, so the verdict
    /// does not move with the load; what the pause's decode (`heard`) says stands in only
    /// where the partial heard no words, the judge is not on, or the decoders shed it.
    fn sentence_end(&self, heard: &Transcribed, config: &SegmenterConfig) -> SentenceEnd {
        match self.judge {
            Some((len, Some(p))) if len >= self.words_end() => SentenceEnd::Read {
                p: Some(p),
                judge: true,
            },
            _ if self.awaits_judge(config) => SentenceEnd::Awaited,
            _ => SentenceEnd::Read {
                p: heard.ends,
                judge: false,
            },
        }
    }

    /// Whether the pause still waits for its judge: the partials' model judges pauses, no
    /// partial has read these words to their end, and the decoders have not shed it.
    pub(super) fn awaits_judge(&self, config: &SegmenterConfig) -> bool {
        config.reads_sentence_end() && self.unjudged() && !self.judge_shed
    }

    /// The end of its last frame at the detector's threshold: faint frames after it (at
    /// `release`) move `voiced_end`, not the words.
    pub(super) fn words_end(&self) -> usize {
        self.audio.len() - self.silence.min(self.audio.len())
    }

    /// Whether the pause wants the partials' model to judge it: no partial has read its
    /// words to their end yet.
    pub(super) fn unjudged(&self) -> bool {
        self.judge.is_none_or(|(len, _)| len < self.words_end())
    }

    /// Whether a pause that has reached the endpoint ends the utterance: the judges hear the
    /// turn's end, or the silence has reached `turn_hold`. A pause whose words go on, or
    /// that is not judged yet (its decode or the model busy), is held.
    pub(super) fn ends_turn(&self, config: &SegmenterConfig) -> bool {
        !config.holds()
            || self.silence >= config.turn_hold
            || match self.words(config) {
                Words::End => {
                    self.verdict.lets_end(config) && self.silence >= self.silence_needed(config)
                }
                Words::Shed => true,
                Words::GoOn(_) | Words::Pending => false,
            }
    }

    /// Which judge holds a pause past the endpoint, saying the turn goes on (its words, the
    /// model's sentence ending, the end-of-turn model, or the wait graded by the doubt);
    /// none where the pause only waits for its words or verdict to come back
    /// ([`Event::Held`]).
    pub(super) fn held_open(&self, config: &SegmenterConfig) -> Option<Hold> {
        if !config.holds() || self.silence < config.endpoint || self.silence >= config.turn_hold {
            return None;
        }
        match self.words(config) {
            Words::GoOn(hold) => Some(hold),
            Words::End if self.verdict == Verdict::Said(false) => Some(Hold::Model),
            Words::End if self.silence < self.silence_needed(config) => Some(Hold::Graded),
            Words::End | Words::Shed | Words::Pending => None,
        }
    }

    /// How the final of an utterance closed now ends ([`Ended::turn`]): a pause the judges
    /// heard as the turn's end, or one that outlasted the hold, ends the turn (. ? !); a
    /// model that could not say, words that were never decoded, or a close for another
    /// reason (a long utterance cut, the call's end) leave the final as decoded.
    pub(super) fn ending(&self, config: &SegmenterConfig) -> Option<bool> {
        if !config.holds() {
            return None;
        }
        if self.silence >= config.turn_hold {
            return Some(true);
        }
        let model = match self.verdict {
            _ if !config.judge_turns => true,
            Verdict::Said(true) => true,
            _ => false,
        };
        (self.silence >= self.silence_needed(config) && model && self.words(config) == Words::End)
            .then_some(true)
    }

    /// The silence after which a pause the words let end does end: `endpoint` where the
    /// judge is sure of a sentence's end (`sure_end` or over), growing to `turn_hold` as its
    /// probability falls to `unsure_end`. A doubtful pause then waits in proportion to the
    /// doubt rather than on which side of one threshold it fell (BENCHMARKS.md, "A wait
    /// graded by the doubt").
    pub(super) fn silence_needed(&self, config: &SegmenterConfig) -> usize {
        let graded = config.hold_unfinished && config.sure_end > config.unsure_end;
        match self
            .heard()
            .filter(|_| graded)
            .map(|h| self.sentence_end(h, config))
        {
            Some(SentenceEnd::Read { p: Some(p), .. }) if p < config.sure_end => {
                let doubt = (config.sure_end - p) / (config.sure_end - config.unsure_end);
                let span = config.turn_hold.saturating_sub(config.endpoint) as f32;
                let extra = (span * doubt.clamp(0.0, 1.0)) as usize / FRAME * FRAME;
                config.endpoint + extra
            }
            _ => self.endpoint(config),
        }
    }

    /// Whether the pause's judge has read its words at least `quick_end` sure of a
    /// sentence's end: only then may it end sooner, so only then does its speculative
    /// decode start for that (at every short gap between words it would be wasted).
    pub(super) fn judged_sure(&self, config: &SegmenterConfig) -> bool {
        config.quick_end > 0.0
            && matches!(self.judge, Some((len, Some(p))) if len >= self.words_end() && p >= config.quick_end)
    }

    /// The silence that ends a pause the judges let end: `quick_endpoint` where the
    /// sentence-end probability read at it is `quick_end` or over, else `endpoint`.
    pub(super) fn endpoint(&self, config: &SegmenterConfig) -> usize {
        let sure = || {
            self.heard()
                .map(|heard| self.sentence_end(heard, config))
                .is_some_and(|read| {
                    matches!(read, SentenceEnd::Read { p: Some(p), .. } if p >= config.quick_end)
                })
        };
        // Before `quick_endpoint` of silence (and in voice) either answer decides alike:
        // the words are read only where the sooner end could fire.
        match config.quick_end > 0.0
            && config.quick_endpoint < config.endpoint
            && self.silence >= config.quick_endpoint
            && self.verdict.lets_end(config)
            && sure()
            && self.words(config) == Words::End
        {
            true => config.quick_endpoint,
            false => config.endpoint,
        }
    }
}

impl Segmenter {
    /// The decoders left out the open utterance's speculative decode (load): its pause is
    /// not held for words that will not come. True the first time for a pause, so the shed
    /// is counted once.
    pub fn speculative_shed(&mut self) -> bool {
        match self.open.as_mut().filter(|o| o.silence > 0) {
            Some(open) if !open.words_shed => {
                open.words_shed = true;
                true
            }
            _ => false,
        }
    }

    /// The ladder sheds judges (a wave) while the open utterance is in a pause its judge
    /// has not read: the judge will not come, and the pause's own decode judges it. True
    /// the first time for a pause, so the shed is counted once.
    pub fn judge_shed(&mut self) -> bool {
        let config = self.config;
        match self.open.as_mut().filter(|o| o.silence > 0) {
            Some(open) if open.awaits_judge(&config) => {
                open.judge_shed = true;
                true
            }
            _ => false,
        }
    }
}

/// Which audio the end-of-turn model heard: utterance `utterance` up to `len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnTicket {
    pub(super) utterance: u64,
    pub(super) len: usize,
}

/// Audio the end-of-turn model hears after the last voiced frame (zeros where the pause is
/// shorter so far): what it was measured with.
pub(super) const TURN_TAIL: usize = 200 * RATE / 1000;

/// The most audio the end-of-turn model reads.
pub const TURN_WINDOW: usize = 8 * RATE;

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
            open.verdict = Verdict::Asked(ticket.len);
        }
        Some(ticket)
    }

    /// How long the pause the end-of-turn model should hear has lasted, if it should hear
    /// one (see [`Segmenter::wants_turn`]): the judge takes the longest first.
    pub fn turn_pause(&self) -> Option<usize> {
        self.wants_turn()
            .then(|| self.open.as_ref().map(|open| open.silence))
            .flatten()
    }

    /// See [`Segmenter::claim_turn`].
    pub fn wants_turn(&self) -> bool {
        let endpoint = self.config.endpoint;
        self.config.judge_turns
            && self.open.as_ref().is_some_and(|open| {
                open.verdict == Verdict::Unasked && judges_turn(open.silence, endpoint)
            })
    }

    /// Takes the end-of-turn model's verdict on what a ticket covered (`None` if it could
    /// not say). A pause it hears as the turn's end that has already reached the endpoint
    /// closes the utterance at once, and its final goes out if its text is ready.
    pub fn judged(
        &mut self,
        ticket: TurnTicket,
        complete: Option<bool>,
        now: Instant,
        out: &mut Vec<Emit>,
    ) {
        let Some(open) = self.open.as_mut().filter(|o| o.id == ticket.utterance) else {
            // Closed meanwhile (by the hold, the audio's end, a long cut): too late to count.
            return;
        };
        if open.verdict != Verdict::Asked(ticket.len) {
            return;
        }
        if ticket.len < open.voiced_end {
            // Voice since it was asked, if too faint to reset the pause: ask again.
            open.verdict = Verdict::Unasked;
            return;
        }
        open.verdict = match complete {
            Some(complete) => Verdict::Said(complete),
            None => Verdict::Failed,
        };
        self.end_if_judged(now, out);
    }

    /// Closes the open utterance if its pause has reached the endpoint and the judges now
    /// let it end (a verdict or a decode came after the endpoint), emitting its final if
    /// its text is ready.
    pub(super) fn end_if_judged(&mut self, now: Instant, out: &mut Vec<Emit>) {
        let config = self.config;
        if self.open.as_ref().is_some_and(|open| {
            let endpoint = open.endpoint(&config);
            config.holds()
                && open.silence >= endpoint
                && open.quiet >= endpoint / 2
                && open.ends_turn(&config)
        }) {
            self.close(self.at_input, now);
            self.drain_ready(now, out);
        }
    }
}
