//! How hark decodes with Whisper, in one place (as CTranslate2's `WhisperOptions` and
//! whisper.cpp's `whisper_full_params` keep theirs): what each setting is, its default, and
//! the values measured per model. The decoding loop (`super::search`), the prompt
//! (`super::prompt`) and the speech filter (`super::filter`) read them from here.

use super::filter::SpeechFilter;

/// The decoding options of one model. Decoding is greedy (the likeliest token at each
/// step, no timestamps: a draft is checked against greedy's picks), and a decode is cut
/// where it starts repeating itself (`super::search::looping`, `super::search::repeated_tail`).
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
        sure_sound: 0.42,
        probed_sound: 0.9,
    },
};

/// Values measured per model, by the name a profile gives it; any other model is
/// calibrated at load ([`DecodeOptions::calibrated`]).
const PER_MODEL: &[(&str, DecodeOptions)] = &[
    ("tiny.en", DEFAULT),
    (
        "base",
        DecodeOptions {
            // base decodes the finals: with 2 s of silence after the utterance rather than
            // 1 s it writes 5–12 % fewer errors through the server's path, for 5–20 % more
            // decoder CPU (BENCHMARKS.md, "Where the engine's loss is").
            tail_samples: 2 * super::RATE,
            // base scores single real words 0.81–0.86, silence 0.92 and the breath-like
            // burst of the guards' test, heard as "you", 0.79 (BENCHMARKS.md, "Whisper").
            speech: SpeechFilter {
                no_speech: 0.9,
                invention: 0.75,
                ..DEFAULT.speech
            },
            ..DEFAULT
        },
    ),
];

/// What a model hark has no figures for is calibrated on at load: how sure it is that
/// silence and quiet noise are not speech. Both measured models give these 0.87–0.93, and
/// single real words less (tiny.en 0.63–0.70, base 0.81–0.86), so a threshold just under
/// the least sure of them drops what the model itself calls silence and keeps what it
/// heard as words.
pub mod calibration {
    use super::super::RATE;

    /// Under the least sure of the signals: the measured thresholds sit either side of
    /// it (tiny.en's 0.8 under its 0.870, base's 0.9 over its 0.885), and under it drops
    /// silence while keeping every real word either model was measured on.
    pub const MARGIN: f32 = 0.01;
    /// Known inventions are dropped from this share of the least sure probability, about
    /// both measured models' (tiny.en 0.72 of 0.870, base 0.75 of 0.885).
    pub const INVENTION_SHARE: f32 = 0.83;
    /// A model unsure of silence (a fine-tune that never saw it) still keeps short real
    /// words: the threshold is never under Whisper's own 0.6, nor over 0.95.
    pub const RANGE: (f32, f32) = (0.6, 0.95);

    /// One second each of digital silence and of white noise at -60, -50 and -40 dBFS
    /// (a line's hiss), deterministic.
    pub fn signals() -> Vec<Vec<f32>> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut noise = |level_db: f32| -> Vec<f32> {
            // Uniform in ±a has an RMS of a/√3.
            let peak = 10f32.powf(level_db / 20.0) * 3f32.sqrt();
            (0..RATE)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * peak
                })
                .collect()
        };
        vec![vec![0.0; RATE], noise(-60.0), noise(-50.0), noise(-40.0)]
    }
}

impl DecodeOptions {
    /// The options measured for the model named `name` ("tiny.en", "base"), if hark has
    /// figures for it.
    pub fn measured(name: &str) -> Option<Self> {
        PER_MODEL
            .iter()
            .find(|(model, _)| *model == name)
            .map(|(_, options)| options.clone())
    }

    /// The options of a model hark has no figures for: the defaults, with the speech
    /// filter's thresholds set from `heard`, the no-speech probabilities the model gave
    /// [`calibration::signals`].
    pub fn calibrated(heard: &[f32]) -> Self {
        use calibration::{INVENTION_SHARE, MARGIN, RANGE};
        let least = heard.iter().copied().fold(f32::INFINITY, f32::min);
        let least = if least.is_finite() { least } else { 0.0 };
        let no_speech = (least - MARGIN).clamp(RANGE.0, RANGE.1);
        let invention = (least * INVENTION_SHARE).clamp(RANGE.0, no_speech);
        DecodeOptions {
            speech: SpeechFilter {
                no_speech,
                invention,
                ..DEFAULT.speech
            },
            ..DEFAULT
        }
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
    fn a_model_has_its_measured_thresholds_and_an_unknown_one_its_calibrated_ones() {
        assert_eq!(DecodeOptions::measured("tiny.en"), Some(DEFAULT));
        assert_eq!(DecodeOptions::measured("/models/mine"), None);
        let base = DecodeOptions::measured("base").unwrap();
        assert_eq!((base.speech.no_speech, base.speech.invention), (0.9, 0.75));
        assert_eq!(base.tail_samples, 2 * DEFAULT.tail_samples);
        assert_eq!(base.speech.low_logprob, DEFAULT.speech.low_logprob);
        // 3 s of audio: 10 + 24 tokens.
        assert_eq!(DEFAULT.budget(3 * super::super::RATE), 34);

        // Calibrated on probabilities like the measured models' (0.87–0.93), the thresholds
        // come out near theirs.
        let tiny = DecodeOptions::calibrated(&[0.920, 0.907, 0.898, 0.871]).speech;
        assert!((tiny.no_speech - 0.861).abs() < 1e-3, "{tiny:?}");
        assert!((tiny.invention - 0.723).abs() < 1e-3, "{tiny:?}");
        let base = DecodeOptions::calibrated(&[0.928, 0.914, 0.896, 0.898]).speech;
        assert!((base.no_speech - 0.886).abs() < 1e-3, "{base:?}");
        assert!((base.invention - 0.744).abs() < 1e-3, "{base:?}");
        // A model unsure of silence, or with no no-speech token, keeps short words.
        for heard in [&[0.2f32, 0.3][..], &[0.0], &[], &[f32::NAN]] {
            let s = DecodeOptions::calibrated(heard).speech;
            assert_eq!((s.no_speech, s.invention), (0.6, 0.6), "{heard:?}");
        }
        let sure = DecodeOptions::calibrated(&[0.999]).speech;
        assert_eq!(sure.no_speech, 0.95);
        assert!(sure.invention <= sure.no_speech);
    }

    #[test]
    fn the_calibration_signals_are_a_second_each_at_their_levels() {
        let signals = calibration::signals();
        assert_eq!(signals.len(), 4);
        let db = |s: &[f32]| {
            assert_eq!(s.len(), super::super::RATE);
            10.0 * (s.iter().map(|x| x * x).sum::<f32>() / s.len() as f32).log10()
        };
        assert!(signals[0].iter().all(|&x| x == 0.0));
        for (signal, want) in signals[1..].iter().zip([-60.0, -50.0, -40.0]) {
            assert!((db(signal) - want).abs() < 0.5, "{} dB", db(signal));
        }
    }
}
