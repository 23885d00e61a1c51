//! Beam search, for finals when the decoders have room: the `width` likeliest token
//! sequences kept at each step rather than greedy's one, as CTranslate2 decodes for
//! faster-whisper (its default beam 5, patience 1, length penalty 1). A beam's hypotheses go
//! through the decoder as the rows of one batched pass, so a step still reads the decoder's
//! weights once; they share the encoding's cross-attention keys and values.

use super::model::{self, DecoderState, Scratch, Weights};
use super::search::{cut_repeated_tail, looping};
use super::vocabulary::Vocabulary;

/// What a beam search found: the tokens, their summed log-probability (the end of text's
/// included when it ended), and whether it was cut (no hypothesis ended within the budget
/// without repeating itself).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub tokens: Vec<u32>,
    pub logprob: f32,
    pub cut: bool,
    /// The probability of a sentence's end at each step it took ([`super::Decoded::ends`]).
    pub ending: Vec<f32>,
}

/// One hypothesis still being extended.
struct Hyp {
    tokens: Vec<u32>,
    /// The probability of a sentence's end at each step that made it.
    ending: Vec<f32>,
    logprob: f32,
    state: Option<DecoderState>,
    /// Hidden state after its last token.
    last: Vec<f32>,
}

/// A candidate extension: the hypothesis it extends, the token, the new total.
struct Candidate {
    parent: usize,
    token: u32,
    logprob: f32,
}

/// A candidate kept for the next step: its parent, the token, what it now holds.
struct Child {
    parent: usize,
    token: u32,
    tokens: Vec<u32>,
    logprob: f32,
    ending: Vec<f32>,
}

/// The beam's buffers, reused across decodes.
#[derive(Default)]
pub struct Beam {
    lasts: Vec<f32>,
    scores: Vec<f32>,
    /// Every hypothesis's exponentials, for their normalisers.
    exps: Vec<f32>,
    /// Each hypothesis's log-normaliser at this step.
    norms: Vec<f32>,
}

impl Beam {
    /// Searches from `state` (the keys and values after the start), `first` holding the
    /// scores after the start's last token, for at most `budget` tokens.
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &mut self,
        w: &Weights,
        v: &Vocabulary,
        state: DecoderState,
        first: &[f32],
        width: usize,
        budget: usize,
        scratch: &mut Scratch,
    ) -> Found {
        let width = width.max(1);
        let vocab = w.vocab;
        let mut alive = vec![Hyp {
            tokens: Vec::new(),
            ending: Vec::new(),
            logprob: 0.0,
            state: Some(state),
            last: Vec::new(),
        }];
        let mut ended: Vec<Found> = Vec::new();
        // The best of those cut (a loop, or the budget reached), should none end.
        let mut cut: Option<Found> = None;
        let keep_cut = |cut: &mut Option<Found>, found: Found| {
            if cut
                .as_ref()
                .is_none_or(|c| normalized(&found) > normalized(c))
            {
                *cut = Some(found);
            }
        };
        for step in 0..budget {
            if step == 0 {
                self.scores.clear();
                self.scores.extend_from_slice(&first[..vocab]);
            } else {
                self.lasts.clear();
                for hyp in &alive {
                    self.lasts.extend_from_slice(&hyp.last);
                }
                w.logits(&self.lasts, &mut self.scores, scratch);
            }
            let mut candidates: Vec<Candidate> = Vec::with_capacity(alive.len() * (width + 1));
            // Each hypothesis's probability of a sentence's end at this step.
            let mut ends: Vec<f32> = Vec::with_capacity(alive.len());
            let rows = &mut self.scores[..alive.len() * vocab];
            for scores in rows.chunks_exact_mut(vocab) {
                for rule in &v.rules {
                    rule.apply(scores, step);
                }
            }
            log_sum_exps(rows, vocab, &mut self.exps, &mut self.norms);
            for (parent, ((hyp, scores), &norm)) in alive
                .iter()
                .zip(rows.chunks_exact(vocab))
                .zip(&self.norms)
                .enumerate()
            {
                ends.push(
                    v.terminal
                        .iter()
                        .filter_map(|&t| scores.get(t as usize))
                        .map(|s| (s - norm).exp())
                        .sum(),
                );
                for (token, score) in top(scores, width + 1) {
                    candidates.push(Candidate {
                        parent,
                        token,
                        logprob: hyp.logprob + score - norm,
                    });
                }
            }
            candidates.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
            let ending = |parent: usize| {
                let mut e = alive[parent].ending.clone();
                e.push(ends[parent]);
                e
            };
            let mut next: Vec<Child> = Vec::with_capacity(width);
            for (rank, c) in candidates.iter().enumerate() {
                if next.len() == width {
                    break;
                }
                let parent = &alive[c.parent].tokens;
                if c.token == v.eot {
                    // An end among the step's best `width` ends a hypothesis; one that ends
                    // on a short piece said again and again is a loop, cut to its first
                    // time, as greedy cuts it, and kept only should no other end.
                    if rank < width {
                        let mut tokens = parent.clone();
                        let looped = cut_repeated_tail(&mut tokens);
                        let found = Found {
                            tokens,
                            logprob: c.logprob,
                            cut: looped,
                            ending: ending(c.parent),
                        };
                        match looped {
                            false => ended.push(found),
                            true => keep_cut(&mut cut, found),
                        }
                    }
                    continue;
                }
                let mut tokens = Vec::with_capacity(parent.len() + 1);
                tokens.extend_from_slice(parent);
                tokens.push(c.token);
                // A sentence's loop is cut after its first time, as greedy cuts it; at the
                // budget a decode writes no more (a short piece it was repeating there cut
                // to its first time). Either is kept only should no hypothesis end.
                let ended_here = match looping(&tokens) {
                    Some(keep) => {
                        tokens.truncate(keep);
                        true
                    }
                    None if tokens.len() == budget => {
                        cut_repeated_tail(&mut tokens);
                        true
                    }
                    None => false,
                };
                if ended_here {
                    keep_cut(
                        &mut cut,
                        Found {
                            tokens,
                            logprob: c.logprob,
                            cut: true,
                            ending: ending(c.parent),
                        },
                    );
                    continue;
                }
                next.push(Child {
                    parent: c.parent,
                    token: c.token,
                    tokens,
                    logprob: c.logprob,
                    ending: ending(c.parent),
                });
            }
            // Patience 1: done once as many hypotheses have ended as the beam is wide.
            if ended.len() >= width || next.is_empty() {
                break;
            }
            // Each new hypothesis takes its parent's keys and values: the last of a parent's
            // children takes them over, the others copy them.
            let mut children = vec![0usize; alive.len()];
            for child in &next {
                children[child.parent] += 1;
            }
            let inputs: Vec<[u32; 1]> = next.iter().map(|c| [c.token]).collect();
            let mut grown: Vec<Hyp> = Vec::with_capacity(next.len());
            for Child {
                parent,
                tokens,
                logprob,
                ending,
                ..
            } in next
            {
                children[parent] -= 1;
                let state = match children[parent] {
                    0 => alive[parent].state.take(),
                    _ => alive[parent].state.clone(),
                };
                grown.push(Hyp {
                    tokens,
                    ending,
                    logprob,
                    state,
                    last: Vec::new(),
                });
            }
            let inputs: Vec<&[u32]> = inputs.iter().map(|t| &t[..]).collect();
            let mut states: Vec<&mut DecoderState> = grown
                .iter_mut()
                .map(|h| h.state.as_mut().expect("every parent hands its keys on"))
                .collect();
            let hidden = w.decode_batch(&inputs, &mut states, scratch);
            drop(states);
            for (hyp, h) in grown.iter_mut().zip(hidden.chunks_exact(w.dim)) {
                hyp.last.extend_from_slice(h);
            }
            alive = grown;
        }
        ended
            .into_iter()
            .max_by(|a, b| normalized(a).total_cmp(&normalized(b)))
            .or(cut)
            .unwrap_or(Found {
                tokens: Vec::new(),
                logprob: 0.0,
                cut: true,
                ending: Vec::new(),
            })
    }
}

/// A hypothesis's score with length penalty 1: its log-probability per token (the end of
/// text counted when it ended), so that short hypotheses do not win for being short.
fn normalized(f: &Found) -> f32 {
    f.logprob / (f.tokens.len() + usize::from(!f.cut)).max(1) as f32
}

/// ln Σ exp(scores) of each row of `rows` (`[n][width]`) into `norms`, with the model's
/// vectorising `exp` and the rows' sums side by side (this runs over the vocabulary for
/// every hypothesis at every step); `exps` is room for the exponentials.
fn log_sum_exps(rows: &[f32], width: usize, exps: &mut Vec<f32>, norms: &mut Vec<f32>) {
    let maxes: Vec<f32> = rows.chunks_exact(width.max(1)).map(model::max_of).collect();
    exps.clear();
    exps.extend_from_slice(rows);
    model::exp_sums_in_place(exps, width, &maxes, norms);
    for (norm, max) in norms.iter_mut().zip(maxes) {
        *norm = match max.is_finite() {
            true => max + norm.ln(),
            false => max,
        };
    }
}

/// The `k` highest scores and their tokens, best first (masked tokens, at -inf, never).
fn top(scores: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
    for (token, &score) in scores.iter().enumerate() {
        if score == f32::NEG_INFINITY || (best.len() == k && score <= best[k - 1].1) {
            continue;
        }
        let at = best.partition_point(|&(_, s)| s >= score);
        best.insert(at, (token as u32, score));
        best.truncate(k);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_keeps_the_best_in_order_and_never_a_masked_token() {
        let scores = [0.5, f32::NEG_INFINITY, 2.0, -1.0, 2.0, 1.5];
        assert_eq!(top(&scores, 3), vec![(2, 2.0), (4, 2.0), (5, 1.5)]);
        assert_eq!(top(&[f32::NEG_INFINITY; 3], 2), vec![]);
        assert_eq!(top(&scores, 10).len(), 5);
    }

    #[test]
    fn scores_are_normalised_per_token_and_the_end_counts_as_one() {
        let ended = Found {
            tokens: vec![1, 2, 3],
            logprob: -2.0,
            cut: false,
            ending: Vec::new(),
        };
        let cut = Found {
            cut: true,
            ..ended.clone()
        };
        assert_eq!(normalized(&ended), -0.5);
        assert!((normalized(&cut) + 2.0 / 3.0).abs() < 1e-6);
        let mut norms = Vec::new();
        log_sum_exps(
            &[0.0, 0.0, f32::NEG_INFINITY, f32::NEG_INFINITY],
            2,
            &mut Vec::new(),
            &mut norms,
        );
        assert!((norms[0] - 2f32.ln()).abs() < 1e-5);
        assert_eq!(norms[1], f32::NEG_INFINITY);
    }
}
