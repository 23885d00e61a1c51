//! The speech filter: whether a decode's words were heard in speech or invented over
//! silence, breath and noise. Whisper's own rule (a high no-speech probability and a low
//! mean log-probability) with two additions the short window needs: a short decode with a
//! high no-speech probability, and Whisper's known inventions above a second threshold;
//! and the sound guard: Whisper learnt to caption sounds ("♪", "[Music]", "(beeping)"),
//! which the token rules forbid, so over keypad tones, line noise or hold music it picks
//! the next likeliest words ("you") while its first choice was a caption.

/// What Whisper is known to invent over breath and noise (its training had subtitles
/// there): dropped when the no-speech probability is above [`SpeechFilter::invention`].
pub const INVENTIONS: &[&str] = &[
    "you",
    "thank you",
    "thanks for watching",
    "thank you for watching",
    "bye",
    "so",
    "oh",
    "uh",
    "um",
    "hmm",
];

/// The speech filter's thresholds ([`super::options::DecodeOptions::speech`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeechFilter {
    /// A decode is silence when its no-speech probability is above this and either its
    /// mean log-probability is under `low_logprob` or it has at most `few_words` words. It
    /// depends on the model: the short window raises the probability for real speech too.
    pub no_speech: f32,
    /// One of [`INVENTIONS`] alone is silence above this no-speech probability.
    pub invention: f32,
    /// Whisper's own log-probability threshold.
    pub low_logprob: f32,
    /// A short window of silence is heard confidently as "you" (no-speech 0.92, mean
    /// log-probability -0.46): so few words count as unsure.
    pub few_words: usize,
    /// A decode is a sound, not speech, when the model gave a sound's caption more than
    /// this probability as its first token: 0.35–0.56 over keypad tones, hum, call-progress
    /// tones and hold music, 0.3 or less in 9 of 10 decodes of hard real speech
    /// (BENCHMARKS.md, "Sounds").
    pub sound: f32,
}

impl SpeechFilter {
    /// Whether `text`, decoded with this no-speech probability, mean log-probability and
    /// probability of a sound's caption first, is kept as speech.
    pub fn keeps(&self, text: &str, no_speech: f32, mean_logprob: f32, sound: f32) -> bool {
        let few = text.split_whitespace().count() <= self.few_words;
        let key: String = text
            .chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect();
        let invented = INVENTIONS.contains(&key.trim());
        let silent = no_speech > self.no_speech && (mean_logprob < self.low_logprob || few);
        !(silent || (invented && no_speech > self.invention) || sound > self.sound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILTER: SpeechFilter = SpeechFilter {
        no_speech: 0.8,
        invention: 0.72,
        low_logprob: -1.0,
        few_words: 3,
        sound: 0.3,
    };

    #[test]
    fn silence_and_inventions_are_dropped_and_sure_speech_is_kept() {
        // Silence heard confidently as a word or two.
        assert!(!FILTER.keeps("you", 0.92, -0.46, 0.1));
        assert!(
            !FILTER.keeps("Thank you.", 0.75, -0.2, 0.1),
            "an invention over breath"
        );
        // A single real word scores under the invention threshold.
        assert!(FILTER.keeps("Brilliant.", 0.70, -0.3, 0.1));
        assert!(
            FILTER.keeps("you", 0.70, -0.3, 0.1),
            "\"you\" said, not invented"
        );
        // Many sure words are kept whatever the no-speech probability.
        assert!(FILTER.keeps("I would like to order a pizza please", 0.85, -0.3, 0.1));
        // Many unsure words over a likely silence are not.
        assert!(!FILTER.keeps("I would like to order a pizza please", 0.85, -1.5, 0.1));
    }

    #[test]
    fn a_decode_whose_first_choice_was_a_sounds_caption_is_dropped() {
        // Keypad tones heard as "you": no-speech and log-probability alone would keep it.
        assert!(FILTER.keeps("you", 0.70, -0.6, 0.1));
        assert!(!FILTER.keeps("you", 0.70, -0.6, 0.45));
        // Whatever the words: the model would rather have written "♪".
        assert!(!FILTER.keeps(
            "I'm going to be a little bit more careful.",
            0.6,
            -0.4,
            0.35
        ));
        assert!(FILTER.keeps("I'm going to be a little bit more careful.", 0.6, -0.4, 0.3));
    }
}
