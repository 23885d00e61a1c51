//! How hark decodes with Whisper, in one place (as CTranslate2's `WhisperOptions` and
//! whisper.cpp's `whisper_full_params` keep theirs): what each setting is, its default, and
//! the values measured per model. The decoding loop ([`super::search`]), the prompt
//! ([`super::prompt`]) and the speech filter ([`super::filter`]) read them from here.

use super::filter::SpeechFilter;

/// The decoding options of one model. Decoding is greedy (the likeliest token at each
/// step, no timestamps: a draft is checked against greedy's picks), and a decode is cut
/// where it starts repeating itself ([`super::search::repeating`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeOptions {
    /// Silence after the audio in the encoded window, in samples: with less, the decoder
    /// loops. The encoding is then padded to 30 s with the encoding of silence (the short
    /// window: BENCHMARKS.md, "Whisper").
    pub tail_samples: usize,
    /// A decode's token budget: this many, plus `tokens_per_second` per second of audio.
    /// Speech runs at 2–4 tokens a second; a decode that runs on is looping.
    pub base_tokens: usize,
    pub tokens_per_second: f32,
    /// A prompt keeps at most this many tokens, the latest (Whisper's limit is half its
    /// 448 positions).
    pub max_prompt_tokens: usize,
    /// What decides that a decode heard silence rather than speech.
    pub speech: SpeechFilter,
}

/// The defaults, and tiny.en's no-speech thresholds: silence scores 0.92, a breath heard as
/// "you" 0.77, single real words 0.63–0.70 (the short window raises the probability for
/// real speech too, so the thresholds sit above Whisper's 0.6; BENCHMARKS.md, "Whisper").
pub const DEFAULT: DecodeOptions = DecodeOptions {
    tail_samples: super::RATE,
    base_tokens: 10,
    tokens_per_second: 8.0,
    max_prompt_tokens: 223,
    speech: SpeechFilter {
        no_speech: 0.8,
        invention: 0.72,
        low_logprob: -1.0,
        few_words: 3,
        sound: 0.3,
    },
};

/// Values measured per model, by the name a profile gives it; any other model gets
/// [`DEFAULT`].
const PER_MODEL: &[(&str, SpeechFilter)] = &[
    // base scores single real words 0.81–0.86, silence 0.92 and the breath-like burst of
    // the guards' test, heard as "you", 0.79 (BENCHMARKS.md, "Whisper").
    (
        "base",
        SpeechFilter {
            no_speech: 0.9,
            invention: 0.75,
            ..DEFAULT.speech
        },
    ),
];

impl DecodeOptions {
    /// The options of the model named `name` ("tiny.en", "base", or a directory).
    pub fn for_model(name: &str) -> Self {
        let mut options = DEFAULT;
        if let Some((_, speech)) = PER_MODEL.iter().find(|(model, _)| *model == name) {
            options.speech = *speech;
        }
        options
    }

    /// The most tokens a decode of `samples` of audio writes.
    pub fn budget(&self, samples: usize) -> usize {
        self.base_tokens + (samples as f32 / super::RATE as f32 * self.tokens_per_second) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_has_its_measured_thresholds_and_an_unknown_one_the_defaults() {
        assert_eq!(DecodeOptions::for_model("tiny.en"), DEFAULT);
        assert_eq!(DecodeOptions::for_model("/models/mine"), DEFAULT);
        let base = DecodeOptions::for_model("base");
        assert_eq!((base.speech.no_speech, base.speech.invention), (0.9, 0.75));
        assert_eq!(base.speech.low_logprob, DEFAULT.speech.low_logprob);
        // 3 s of audio: 10 + 24 tokens.
        assert_eq!(DEFAULT.budget(3 * super::super::RATE), 34);
    }
}
