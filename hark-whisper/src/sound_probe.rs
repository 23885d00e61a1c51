//! The sound probe: how likely an utterance is a sound (an engine, a door, a game's
//! effect) rather than speech, read off the encoding the decode already made. Whisper's
//! encoder, trained to transcribe through noise, also tells sounds from speech (Gong et
//! al., "Whisper-AT", Interspeech 2023): a logistic regression over the mean of its output
//! across the utterance's frames separates them where the decoder's own figures do not
//! (an invented "Tomah?" over a train scores as a real "Bye." does; BENCHMARKS.md,
//! "Sounds"). Weights per model, trained by `hark-bench/study/sound_probe.py` on
//! registry-packaged speech and sounds; a model without them has no probe.

/// base's probe: `bias` then one weight per encoder dimension, one number a line.
const BASE: &str = include_str!("sound_probe/base.txt");

/// A linear probe on the mean encoding of an utterance.
#[derive(Debug, Clone, PartialEq)]
pub struct SoundProbe {
    bias: f32,
    weights: Vec<f32>,
}

impl SoundProbe {
    /// The probe trained for the model named `name` whose encoder is `dim` wide, if any.
    pub fn for_model(name: &str, dim: usize) -> Option<Self> {
        let text = match name {
            "base" => BASE,
            _ => return None,
        };
        Self::parse(text).filter(|p| p.weights.len() == dim)
    }

    /// `bias` and the weights, one number a line; `None` if any line is not a number.
    pub fn parse(text: &str) -> Option<Self> {
        let mut numbers = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim().parse::<f32>().ok().filter(|x| x.is_finite()));
        let bias = numbers.next()??;
        let weights = numbers.collect::<Option<Vec<f32>>>()?;
        (!weights.is_empty()).then_some(Self { bias, weights })
    }

    /// The probability that the audio behind the first `rows` frames of `encoded`
    /// (`[frames][dim]`) is a sound.
    pub fn probability(&self, encoded: &[f32], rows: usize) -> f32 {
        let pooled = pooled(encoded, rows, self.weights.len());
        let logit = self.bias
            + pooled
                .iter()
                .zip(&self.weights)
                .map(|(x, w)| x * w)
                .sum::<f32>();
        1.0 / (1.0 + (-logit).exp())
    }
}

/// The mean of the first `rows` frames of `encoded` (`[frames][dim]`; at least one frame,
/// at most all of them): what the probe reads.
pub(super) fn pooled(encoded: &[f32], rows: usize, dim: usize) -> Vec<f32> {
    let frames = encoded.len() / dim.max(1);
    let rows = rows.clamp(1, frames.max(1));
    let mut mean = vec![0.0f32; dim];
    for frame in encoded.chunks_exact(dim.max(1)).take(rows) {
        for (m, x) in mean.iter_mut().zip(frame) {
            *m += x;
        }
    }
    for m in &mut mean {
        *m /= rows as f32;
    }
    mean
}

/// Encoder frames covering `samples` of audio (one frame per 2 mel hops).
pub(super) fn rows_of(samples: usize) -> usize {
    samples.div_ceil(2 * super::mel::HOP).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_has_a_probe_as_wide_as_its_encoder_and_no_other_model_has_one() {
        let probe = SoundProbe::for_model("base", 512).expect("base's probe parses");
        assert_eq!(probe.weights.len(), 512);
        assert!(
            SoundProbe::for_model("base", 384).is_none(),
            "another width"
        );
        assert!(SoundProbe::for_model("tiny.en", 384).is_none());
        assert!(SoundProbe::for_model("/models/mine", 512).is_none());
    }

    #[test]
    fn a_probe_reads_the_mean_of_the_utterances_frames() {
        let probe = SoundProbe::parse("0.5\n1\n-2\n").unwrap();
        // Two frames of the utterance, then one of the silence after it.
        let encoded = [1.0, 0.0, 3.0, 1.0, 100.0, 100.0];
        assert_eq!(pooled(&encoded, 2, 2), vec![2.0, 0.5]);
        let want = 1.0 / (1.0 + (-(0.5f32 + 2.0 - 1.0)).exp());
        assert!((probe.probability(&encoded, 2) - want).abs() < 1e-6);
        // Rows beyond the encoding, or none, are clamped.
        assert_eq!(pooled(&encoded, 9, 2), vec![104.0 / 3.0, 101.0 / 3.0]);
        assert_eq!(pooled(&encoded, 0, 2), vec![1.0, 0.0]);
        assert_eq!(rows_of(0), 1);
        assert_eq!(rows_of(320), 1);
        assert_eq!(rows_of(321), 2);
    }

    #[test]
    fn a_malformed_probe_is_none() {
        assert!(SoundProbe::parse("").is_none());
        assert!(SoundProbe::parse("0.5\n").is_none(), "no weights");
        assert!(SoundProbe::parse("0.5\nx\n").is_none());
        assert!(SoundProbe::parse("0.5\nNaN\n").is_none());
    }
}
