//! The decoding loop's rules: how one decode of a batch picks its next token (greedy,
//! after the model's token rules), when it stops (the end of text, its budget, a loop) and
//! what it found. [`super::decoder::Decoder::decode_batch`] runs the searches of a batch
//! together, a decoder step at a time.

use super::filter::{SpeechFilter, Verdict};
use super::model;
use super::prompt::Layout;
use super::vocabulary::Vocabulary;

/// What a decode found besides its text, for the guards' tests and the study.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// Empty unless the filter heard speech.
    pub text: String,
    pub verdict: Verdict,
    pub no_speech: f32,
    /// How likely the model found a sound's caption as its first token.
    pub sound: f32,
    /// How likely the sound probe found the audio a sound, if the model has a probe.
    pub probe: Option<f32>,
    pub mean_logprob: f32,
    /// The decode hit its token budget or repeated itself and was cut.
    pub cut: bool,
    /// How likely the model found a sentence's end (". ? !") right after the decode's last
    /// word: its own reading of whether the words are finished, which a pause's decode
    /// offers the end-of-turn decision. Greedy's or the beam's, from the scores of the
    /// step that chose what followed the last word; `None` for a decode without words or
    /// one cut before its end.
    pub ends: Option<f32>,
}

/// Where one decode of a batch stands in its greedy search.
pub struct Search {
    /// Its keys and values; out of it only while a batched pass borrows it.
    pub state: Option<model::DecoderState>,
    /// The first pass: prompt, start, draft; where the start begins and ends.
    pub tokens: Vec<u32>,
    pub sot_at: usize,
    pub first: usize,
    budget: usize,
    drafted: Vec<u32>,
    /// Timing the engine: the end of text does not end the decode.
    forced: bool,
    /// Greedy's pick (token, log-probability, the probability of a sentence's end) after
    /// the start and after each draft token, from the first pass's scores.
    pub picks: Vec<Pick>,
    /// Its pick from this step's fresh scores, once past the draft.
    pub fresh: Option<Pick>,
    /// The probability of a sentence's end at each step taken, the end of text's included.
    ending: Vec<f32>,
    in_draft: bool,
    pub step: usize,
    pub done: bool,
    /// Hidden state after its last decoded token.
    pub last: Vec<f32>,
    out: Vec<u32>,
    logprob: f32,
    cut: bool,
    pub no_speech: f32,
    /// The probability of a sound's caption as the first token ([`Vocabulary::sounds`]).
    pub sound: f32,
    /// The sound probe's probability that the audio is a sound, if the model has a probe.
    pub probe: Option<f32>,
    /// Hypotheses kept by a beam search ([`super::beam`]); 1: greedy.
    pub beam: usize,
}

impl Search {
    /// A search over `layout`'s tokens, its keys and values in `state`. `forced`: timing the
    /// engine, the end of text does not end it.
    pub fn new(state: model::DecoderState, layout: Layout, forced: bool, beam: usize) -> Self {
        Self {
            state: Some(state),
            done: layout.budget == 0,
            tokens: layout.tokens,
            sot_at: layout.sot_at,
            first: layout.first,
            budget: layout.budget,
            drafted: layout.drafted,
            forced,
            picks: Vec::new(),
            fresh: None,
            in_draft: true,
            step: 0,
            last: Vec::new(),
            out: Vec::new(),
            ending: Vec::new(),
            logprob: 0.0,
            cut: true,
            no_speech: 0.0,
            sound: 0.0,
            probe: None,
            beam,
        }
    }

    /// Whether a beam search decodes it rather than greedy steps.
    pub fn beamed(&self) -> bool {
        self.beam > 1 && !self.forced && !self.done
    }

    /// The decode's budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Ends the search with what a beam search found: its tokens, their log-probability,
    /// whether it was cut, and the probability of a sentence's end at each of its steps.
    pub fn settle(&mut self, tokens: Vec<u32>, logprob: f32, cut: bool, ending: Vec<f32>) {
        self.out = tokens;
        self.ending = ending;
        self.logprob = logprob;
        self.cut = cut;
        self.done = true;
    }

    /// Whether this step's pick needs scores after `last` (it is past its draft).
    pub fn wants_scores(&self) -> bool {
        !self.done && !self.in_draft
    }

    /// Takes this step's pick; returns the token to run through the decoder next, if any.
    pub fn advance(&mut self, v: &Vocabulary, d: usize) -> Option<u32> {
        if self.done {
            return None;
        }
        let picked = match self.in_draft {
            true => self.picks.get(self.step).copied(),
            false => self.fresh.take(),
        };
        let Some(Pick {
            token: next,
            logprob,
            ends,
        }) = picked
        else {
            self.done = true;
            return None;
        };
        self.logprob += logprob;
        self.ending.push(ends);
        if next == v.eot && !self.forced {
            // A short piece said again and again up to the end is a loop, cut to its first
            // time (the decode stays `cut`); said before other words, it was speech.
            self.cut = cut_repeated_tail(&mut self.out);
            self.done = true;
            return None;
        }
        self.out.push(next);
        if !self.forced
            && let Some(keep) = looping(&self.out)
        {
            self.out.truncate(keep);
            self.done = true;
            return None;
        }
        let step = self.step;
        self.step += 1;
        if self.in_draft && self.drafted.get(step) == Some(&next) {
            self.reach_budget();
            return None;
        }
        if self.in_draft {
            if let Some(state) = self.state.as_mut() {
                state.truncate(self.first + step, d);
            }
            self.in_draft = false;
        }
        self.reach_budget();
        // At the budget's end nothing reads what would follow the token.
        (!self.done).then_some(next)
    }

    /// Ends the search at its budget, a short piece it was still repeating there cut to its
    /// first time (a decoder's loop).
    fn reach_budget(&mut self) {
        self.done = self.step >= self.budget;
        if self.done && !self.forced {
            cut_repeated_tail(&mut self.out);
        }
    }

    /// The text, with the speech filter applied.
    pub fn finish(self, v: &Vocabulary, speech: &SpeechFilter) -> Decoded {
        let mean_logprob = self.logprob / (self.out.len() + usize::from(!self.cut)).max(1) as f32;
        // The step after the last word: trailing punctuation is what that step chose.
        let words = self
            .out
            .iter()
            .rposition(|&t| !v.text(&[t]).chars().all(|c| c.is_ascii_punctuation()))
            .map(|last| last + 1);
        let ends = match (self.cut, words) {
            (false, Some(at)) => self.ending.get(at).copied(),
            _ => None,
        };
        let mut text = v.text(&self.out);
        let verdict = speech.verdict(&text, self.no_speech, mean_logprob, self.sound, self.probe);
        if verdict != Verdict::Speech {
            text.clear();
        }
        Decoded {
            text,
            verdict,
            no_speech: self.no_speech,
            sound: self.sound,
            probe: self.probe,
            mean_logprob,
            cut: self.cut,
            ends,
        }
    }
}

/// Greedy's token after each row of `logits` (`[steps.len()][width]`, `width` > 0), row
/// `r` at step `steps[r]`: its log-probability and the probability of a sentence's end
/// there. Leaves each row holding `exp(logit − max)` after the model's token rules. The
/// rows' normalisers are summed side by side ([`model::exp_sums_in_place`]), each as one
/// row's alone.
pub fn pick_rows(
    v: &Vocabulary,
    logits: &mut [f32],
    width: usize,
    steps: &[usize],
    sums: &mut Vec<f32>,
) -> Vec<Pick> {
    assert!(width > 0, "a vocabulary of no tokens");
    let logits = &mut logits[..steps.len() * width];
    let mut nexts = Vec::with_capacity(steps.len());
    let mut maxes = Vec::with_capacity(steps.len());
    for (row, &step) in logits.chunks_exact_mut(width).zip(steps) {
        for rule in &v.rules {
            rule.apply(row, step);
        }
        nexts.push(last_greatest(row).expect("a row has a score (asserted above)"));
        maxes.push(model::max_of(row));
    }
    model::exp_sums_in_place(logits, width, &maxes, sums);
    logits
        .chunks_exact(width)
        .zip(nexts)
        .zip(sums.iter())
        .map(|((row, next), &sum)| {
            let [own, ends] = [&[next as u32][..], &v.terminal].map(|ids| {
                ids.iter()
                    .filter_map(|&id| row.get(id as usize))
                    .sum::<f32>()
                    / sum
            });
            Pick {
                token: next as u32,
                logprob: own.max(1e-30).ln(),
                ends,
            }
        })
        .collect()
}

/// One step's greedy pick.
#[derive(Debug, Clone, Copy)]
pub struct Pick {
    pub token: u32,
    pub logprob: f32,
    /// The probability of a sentence's end (". ? !") at this step.
    pub ends: f32,
}

/// Softmax probability of any of `ids` among `logits` (once per decode: [`pick_rows`]
/// takes the steps' own).
pub fn probability(logits: &[f32], ids: &[u32]) -> f32 {
    let max = model::max_of(logits);
    let sum: f32 = logits.iter().map(|l| model::exp(l - max)).sum();
    ids.iter()
        .filter_map(|&id| logits.get(id as usize))
        .map(|l| model::exp(l - max))
        .sum::<f32>()
        / sum
}

/// The index of the greatest of `xs` by `f32::total_cmp`, the last of equals (as
/// `Iterator::max_by` finds it), in two passes over integer keys that vectorise.
fn last_greatest(xs: &[f32]) -> Option<usize> {
    // `f32::total_cmp`'s own key: the bits as an integer, negatives' order reversed.
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        bits ^ (((bits >> 31) as u32) >> 1) as i32
    };
    let best = xs.iter().map(|&x| key(x)).max()?;
    xs.iter().rposition(|&x| key(x) == best)
}

/// Where to cut a decode that has started to loop: the length to keep when its tail is a
/// sentence of 13–40 tokens said twice in a row (speech repeats a word or a phrase, a
/// decoder a whole menu), or `None`. Cut at once.
pub(super) fn looping(tokens: &[u32]) -> Option<usize> {
    repeats(tokens, 13..=40)
}

/// Where a decode that ends on a short piece said again and again (one token 5 times, 2–12
/// tokens 3 times) first said it: the length to keep, or `None`. Asked only where a decode
/// ends (its end of text or its budget): speech repeats a word or a short phrase and goes
/// on ("uh, uh, uh, forced aligner", "five, five, five, two"), so a repetition is cut as a
/// loop only where nothing else follows it, never the words after it.
pub(super) fn repeated_tail(tokens: &[u32]) -> Option<usize> {
    // A loop repeats at every length from where it was first said three times (five for
    // one token) to the end; its first time is what that shortest length keeps.
    let mut keep = None;
    for len in (1..=tokens.len()).rev() {
        match repeats(&tokens[..len], 1..=12) {
            Some(k) => keep = Some(k),
            None => break,
        }
    }
    keep
}

/// Cuts a decode's short piece said again up to its end to its first time
/// ([`repeated_tail`]); whether it did. Greedy and the beam cut at their end so.
pub(super) fn cut_repeated_tail(tokens: &mut Vec<u32>) -> bool {
    let keep = repeated_tail(tokens);
    if let Some(keep) = keep {
        tokens.truncate(keep);
    }
    keep.is_some()
}

/// The length to keep when the tail of `tokens` is one piece of a length in `lengths` said
/// again and again in a row (one token 5 times, 2–12 tokens 3 times, longer twice).
fn repeats(tokens: &[u32], lengths: std::ops::RangeInclusive<usize>) -> Option<usize> {
    for n in lengths {
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
    use crate::vocabulary::TokenRule;

    #[test]
    fn the_greatest_is_max_bys_last_of_equals() {
        let cases: [&[f32]; 6] = [
            &[],
            &[1.0],
            &[f32::NEG_INFINITY, f32::NEG_INFINITY],
            &[0.5, 2.0, -1.0, 2.0, 1.5],
            &[-0.0, 0.0, -0.0],
            &[-3.0, f32::NEG_INFINITY, -2.5, -2.5, -7.0],
        ];
        for xs in cases {
            let want = xs
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, _)| i);
            assert_eq!(last_greatest(xs), want, "{xs:?}");
        }
    }

    #[test]
    fn token_rules_mask_their_tokens_and_the_first_steps_only_its_own() {
        let rules = [
            TokenRule::Suppress(vec![1, 9]),
            TokenRule::SuppressAtBegin(vec![2]),
        ];
        let masked = |step| {
            let mut logits = vec![0.0_f32; 4];
            rules.iter().for_each(|r| r.apply(&mut logits, step));
            logits.iter().map(|l| l.is_finite()).collect::<Vec<_>>()
        };
        assert_eq!(masked(0), [true, false, false, true]);
        assert_eq!(masked(1), [true, false, true, true]);
    }

    #[test]
    fn a_loop_is_cut_after_its_first_time_and_speech_is_not() {
        assert_eq!(repeated_tail(&[1, 2, 3, 4, 5, 6]), None);
        assert_eq!(repeated_tail(&[9, 1, 2, 1, 2, 1, 2]), Some(3));
        assert_eq!(
            repeated_tail(&[7, 7, 7, 7]),
            None,
            "\"no no no no\" is speech"
        );
        assert_eq!(repeated_tail(&[3, 7, 7, 7, 7, 7]), Some(2));
        assert_eq!(
            repeated_tail(&[5, 1, 2, 3, 1, 2, 3]),
            None,
            "twice is speech"
        );
        // A loop is cut to its first time at whatever point of the piece the decode stopped.
        assert_eq!(repeated_tail(&[9, 1, 2, 1, 2, 1, 2, 1]), Some(3));
        assert_eq!(repeated_tail(&[9, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]), Some(3));
        // A sentence of 13 tokens or more said twice in a row is a loop (base, int8, on an
        // IVR menu of two sentences: "Press 1 to enter an extension. Press 2 to use the
        // directory." three times over).
        let sentence: Vec<u32> = (100..114).collect();
        let twice = [&[5][..], &sentence, &sentence].concat();
        assert_eq!(looping(&twice), Some(1 + sentence.len()));
        assert_eq!(looping(&twice[..twice.len() - 1]), None);
    }

    #[test]
    fn a_short_piece_said_again_before_other_words_is_speech() {
        // "Montreal, uh, uh, uh, forced aligner": the repetition is not at the end.
        let (uh, comma) = (50, 11);
        let mut said = vec![1, comma, uh, comma, uh, comma, uh, comma];
        assert_eq!(
            repeated_tail(&said),
            Some(3),
            "ended on it: a loop, cut to \"Montreal, uh\""
        );
        said.extend([60, 61]);
        assert_eq!(repeated_tail(&said), None, "words after it: speech, kept");
        assert_eq!(looping(&said), None);
    }
}
