//! The speech filter: whether a decode's words were heard in speech or invented over
//! silence, breath and noise. Whisper's own rule (a high no-speech probability and a low
//! mean log-probability) with two additions the short window needs: a short decode with a
//! high no-speech probability, and Whisper's known inventions above a second threshold;
//! and the sound guard: Whisper learnt to caption sounds ("♪", "\[Music\]", "(beeping)"),
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
    /// this probability as its first token (0.35–0.56 over keypad tones, hum, call-progress
    /// tones and hold music, 0.3 or less in 9 of 10 decodes of hard real speech) and its
    /// words are unsure as above: over line sounds they are one or two, and a sentence
    /// invented over a bang has a low log-probability, while an IVR prompt over its line's
    /// hum is many sure words (BENCHMARKS.md, "Sounds").
    pub sound: f32,
    /// Above this a caption outweighs sure words too: an engine's drone on the phone band
    /// heard as "Come on. Move, move, move." gave a caption 0.43–0.49, while no decode of
    /// real speech on the hard, study and synthetic sets or in four languages gave one
    /// over 0.40 (BENCHMARKS.md, "Sounds").
    pub sure_sound: f32,
    /// A decode is a sound when the model's [`super::sound_probe`] gives its audio more
    /// than this probability and its words are unsure as above. Of the speech clips it was
    /// measured on, only a few game voices acted through effects scored this high, and no
    /// final of the speech sets became a sound (BENCHMARKS.md, "Sounds").
    pub probed_sound: f32,
}

/// What the filter made of a decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Speech,
    /// Silence, breath or one of Whisper's inventions over them.
    Silence,
    /// A sound the model would rather have captioned: keypad tones, music, a bang.
    Sound,
}

impl SpeechFilter {
    /// Whether the first pass already doubts the audio is speech: a sound heard (caption
    /// or probe) or no speech likelier than the thresholds. Such a decode is searched greedily, as the
    /// thresholds were measured: over a sound a beam finds surer-looking words (a sung
    /// "la la la", a scream as "na na na") that the unsure test then lets through
    /// (BENCHMARKS.md, "Beam search for finals").
    pub fn doubts(&self, no_speech: f32, sound: f32, probe: Option<f32>) -> bool {
        self.hears_a_sound(sound, probe) || no_speech > self.no_speech
    }

    /// A sound's caption likelier than `sound`, or the probe surer than `probed_sound`:
    /// unsure words over such audio are a sound.
    fn hears_a_sound(&self, sound: f32, probe: Option<f32>) -> bool {
        sound > self.sound || probe.is_some_and(|p| p > self.probed_sound)
    }

    /// What `text` is, decoded with this no-speech probability, mean log-probability,
    /// probability of a sound's caption first and the sound probe's probability (if the
    /// model has a probe).
    pub fn verdict(
        &self,
        text: &str,
        no_speech: f32,
        mean_logprob: f32,
        sound: f32,
        probe: Option<f32>,
    ) -> Verdict {
        let few = text.split_whitespace().count() <= self.few_words;
        let unsure = few || mean_logprob < self.low_logprob;
        let key: String = text
            .chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect();
        let invented = INVENTIONS.contains(&key.trim());
        if sound > self.sure_sound || (self.hears_a_sound(sound, probe) && unsure) {
            Verdict::Sound
        } else if (no_speech > self.no_speech && unsure) || (invented && no_speech > self.invention)
        {
            Verdict::Silence
        } else {
            Verdict::Speech
        }
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
        sure_sound: 0.42,
        probed_sound: 0.9,
    };

    fn keeps(text: &str, no_speech: f32, mean_logprob: f32, sound: f32) -> bool {
        FILTER.verdict(text, no_speech, mean_logprob, sound, None) == Verdict::Speech
    }

    #[test]
    fn silence_and_inventions_are_dropped_and_sure_speech_is_kept() {
        // Silence heard confidently as a word or two.
        assert_eq!(
            FILTER.verdict("you", 0.92, -0.46, 0.1, None),
            Verdict::Silence
        );
        assert_eq!(
            FILTER.verdict("Thank you.", 0.75, -0.2, 0.1, None),
            Verdict::Silence,
            "an invention over breath"
        );
        // A single real word scores under the invention threshold.
        assert!(keeps("Brilliant.", 0.70, -0.3, 0.1));
        assert!(keeps("you", 0.70, -0.3, 0.1), "\"you\" said, not invented");
        // Many sure words are kept whatever the no-speech probability.
        assert!(keeps(
            "I would like to order a pizza please",
            0.85,
            -0.3,
            0.1
        ));
        // Many unsure words over a likely silence are not.
        assert!(!keeps(
            "I would like to order a pizza please",
            0.85,
            -1.5,
            0.1
        ));
    }

    #[test]
    fn the_first_pass_doubts_a_likely_caption_or_silence_and_nothing_else() {
        assert!(!FILTER.doubts(0.2, 0.1, None), "speech");
        assert!(FILTER.doubts(0.2, 0.45, None), "a sound's caption first");
        assert!(
            FILTER.doubts(0.85, 0.1, None),
            "no speech likelier than the threshold"
        );
        assert!(
            !FILTER.doubts(0.8, 0.3, None),
            "the thresholds themselves are not doubt"
        );
    }

    #[test]
    fn a_decode_whose_first_choice_was_a_sounds_caption_is_a_sound() {
        // Keypad tones heard as "you": no-speech and log-probability alone would keep it.
        assert!(keeps("you", 0.70, -0.6, 0.1));
        assert_eq!(
            FILTER.verdict("you", 0.70, -0.6, 0.45, None),
            Verdict::Sound
        );
        // Over silence too: the caption decides (no retry, no partial, for the segmenter).
        assert_eq!(
            FILTER.verdict("you", 0.88, -0.6, 0.31, None),
            Verdict::Sound
        );
        // Unsure words the model would rather have captioned (base over an explosion).
        assert_eq!(
            FILTER.verdict("You're all right, I'm sorry", 0.33, -2.0, 0.38, None),
            Verdict::Sound
        );
        assert!(keeps("You're all right, I'm sorry", 0.33, -2.0, 0.3));
        // Many sure words are speech with a caption nearly as likely (an IVR prompt over
        // its line's hum: "… to lock or unlock the conference.", base).
        assert!(keeps(
            "To lock or unlock the conference.",
            0.34,
            -0.39,
            0.33
        ));
        // A caption likelier still outweighs sure words: an engine's drone on the phone
        // band (base), against laughter and a name said over it (the likeliest caption
        // real speech was measured to give).
        assert_eq!(
            FILTER.verdict("Come on. Move, move, move.", 0.54, -0.72, 0.49, None),
            Verdict::Sound
        );
        assert!(keeps("Ha ha ha, Steve!", 0.57, -0.90, 0.40));
    }

    #[test]
    fn unsure_words_over_audio_the_probe_hears_as_a_sound_are_a_sound() {
        // base over a passing train at 8 kHz: its figures are a real word's ("Bye." said
        // on a game's radio: 0.54, -1.26, 0.27), the probe's are not.
        assert!(keeps("Tomah?", 0.46, -1.04, 0.24));
        let tomah = |probe| FILTER.verdict("Tomah?", 0.46, -1.04, 0.24, Some(probe));
        assert_eq!(tomah(0.97), Verdict::Sound);
        assert_eq!(tomah(0.5), Verdict::Speech);
        // Unsure many words too ("Fama, I'm already on my way." over an engine).
        assert_eq!(
            FILTER.verdict(
                "Fama, I'm already on my way.",
                0.41,
                -1.52,
                0.29,
                Some(0.95)
            ),
            Verdict::Sound
        );
        // Sure words stay speech whatever the probe says: a shout through a game's
        // effects scores like a sound.
        assert!(
            FILTER.verdict("Hurry up, we are leaving.", 0.3, -0.4, 0.1, Some(0.97))
                == Verdict::Speech
        );
        // And a probe's doubt sends the final to greedy search, as a caption's does.
        assert!(FILTER.doubts(0.2, 0.1, Some(0.95)));
        assert!(!FILTER.doubts(0.2, 0.1, Some(0.5)));
    }
}
