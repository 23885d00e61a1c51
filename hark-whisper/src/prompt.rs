//! What a decode reads before its first new token: the prompt (earlier words, keyterms) as
//! Whisper's previous text, the start (language, task, no timestamps), and a draft (what an
//! earlier decode of the same audio said) to check in the same pass.

use super::options::DecodeOptions;
use super::vocabulary::Vocabulary;

/// A decode's first pass: prompt, start, draft, and where each begins.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub tokens: Vec<u32>,
    /// Where the start begins (its first token is `<|startoftranscript|>`, whose scores
    /// give the no-speech probability) and where it ends.
    pub sot_at: usize,
    pub first: usize,
    /// The draft's tokens (the last of `tokens`).
    pub drafted: Vec<u32>,
    /// The most tokens the decode may write.
    pub budget: usize,
}

impl Layout {
    /// The first pass of a decode in `language` (a code the model speaks), after `prompt`,
    /// checking `draft`, of at most `budget` tokens ([`DecodeOptions::budget`], or a forced
    /// count when timing the engine), within the decoder's `positions`.
    pub fn new(
        v: &Vocabulary,
        options: &DecodeOptions,
        positions: usize,
        prompt: &str,
        draft: &str,
        language: &str,
        budget: usize,
    ) -> Self {
        let mut tokens: Vec<u32> = Vec::new();
        let prompted = v.encode(prompt);
        let start = v.start_in(language);
        // The prompt gives way to the start and one token in a model with few positions.
        let most = options
            .max_prompt_tokens
            .min(positions.saturating_sub(start.len() + 2));
        if let (Some(prev), false) = (v.start_of_prev, prompted.is_empty() || most == 0) {
            tokens.push(prev);
            let keep = prompted.len().saturating_sub(most);
            tokens.extend(&prompted[keep..]);
        }
        let sot_at = tokens.len();
        tokens.extend(start);
        let first = tokens.len();
        let budget = budget.min(positions.saturating_sub(first + 1));
        // What an earlier decode of this audio said is run through the decoder with the
        // start, in one pass, and checked token by token: where greedy decoding would pick
        // the same token it costs nothing more; from the first difference on, the draft is
        // forgotten and decoding goes on one token at a time. The text is greedy's either way.
        let mut drafted: Vec<u32> = v
            .encode(draft)
            .into_iter()
            .take_while(|&t| t < v.eot)
            .collect();
        drafted.truncate(budget);
        tokens.extend(&drafted);
        Self {
            tokens,
            sot_at,
            first,
            drafted,
            budget,
        }
    }
}
