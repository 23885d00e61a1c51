//! The model's input: Whisper-style log-mel features of the last 8 s, computed as pipecat
//! 1.14.0's `_whisper_features.py` (itself transformers' `WhisperFeatureExtractor`) does,
//! step for step, since the model only knows features made that way.
//!
//! `samples/turn-compare.py` with `examples/turn_compare.rs` checks the match against the
//! package's own code.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

/// Sample rate the model was trained at.
pub const RATE: usize = 16_000;
/// The model reads exactly 8 s: the last 8 s of the audio, zeros before shorter audio.
pub const WINDOW: usize = 8 * RATE;
pub const N_MELS: usize = 80;
const N_FFT: usize = 400;
const HOP: usize = 160;
const BINS: usize = N_FFT / 2 + 1;
/// Frames the model reads. The centred STFT has one more; the reference drops the last.
pub const FRAMES: usize = WINDOW / HOP;
const MEL_FLOOR: f64 = 1e-10;
const NORM_EPS: f32 = 1e-7;

/// One mel filter: its weights over the frequency bins from `first` on (the rest are zero).
struct Filter {
    first: usize,
    weights: Vec<f64>,
}

/// Computes the features into buffers it keeps, so a call allocates nothing.
pub struct LogMel {
    audio: Vec<f32>,
    padded: Vec<f64>,
    frame: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    scratch: Vec<Complex<f64>>,
    power: Vec<f64>,
    window: Vec<f64>,
    filters: Vec<Filter>,
    fft: Arc<dyn RealToComplex<f64>>,
    log: Vec<f64>,
    out: Vec<f32>,
}

impl Default for LogMel {
    fn default() -> Self {
        Self::new()
    }
}

impl LogMel {
    pub fn new() -> LogMel {
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(N_FFT);
        LogMel {
            audio: vec![0.0; WINDOW],
            padded: vec![0.0; WINDOW + N_FFT],
            frame: vec![0.0; N_FFT],
            spectrum: fft.make_output_vec(),
            scratch: fft.make_scratch_vec(),
            power: vec![0.0; BINS],
            window: periodic_hann(N_FFT),
            filters: mel_filters(),
            fft,
            log: vec![0.0; N_MELS * FRAMES],
            out: vec![0.0; N_MELS * FRAMES],
        }
    }

    /// The features of the last 8 s of `audio` (16 kHz), `N_MELS` rows of `FRAMES`.
    ///
    /// Audio shorter than 8 s is preceded by zeros, as pipecat feeds the model. Samples must
    /// be finite (the caller checks): one NaN would spread to every feature.
    pub fn compute(&mut self, audio: &[f32]) -> &[f32] {
        let tail = &audio[audio.len().saturating_sub(WINDOW)..];
        let lead = WINDOW - tail.len();
        self.audio[..lead].fill(0.0);
        self.audio[lead..].copy_from_slice(tail);
        self.normalise();
        self.reflect_pad();

        let mut max = f64::NEG_INFINITY;
        for t in 0..FRAMES {
            let start = t * HOP;
            for ((f, &x), &w) in self
                .frame
                .iter_mut()
                .zip(&self.padded[start..start + N_FFT])
                .zip(&self.window)
            {
                *f = x * w;
            }
            // Lengths are fixed at construction, so this cannot fail.
            if self
                .fft
                .process_with_scratch(&mut self.frame, &mut self.spectrum, &mut self.scratch)
                .is_err()
            {
                unreachable!("FFT buffers are sized by the plan");
            }
            for (p, c) in self.power.iter_mut().zip(&self.spectrum) {
                *p = c.norm_sqr();
            }
            for (m, filter) in self.filters.iter().enumerate() {
                let bins = &self.power[filter.first..filter.first + filter.weights.len()];
                let energy: f64 = filter.weights.iter().zip(bins).map(|(w, p)| w * p).sum();
                let value = energy.max(MEL_FLOOR).log10();
                max = max.max(value);
                self.log[m * FRAMES + t] = value;
            }
        }

        let floor = max - 8.0;
        for (o, &l) in self.out.iter_mut().zip(&self.log) {
            *o = ((l.max(floor) + 4.0) / 4.0) as f32;
        }
        &self.out
    }

    /// Zero mean, unit variance over the whole 8 s (padding included), in `f32` and summed
    /// in numpy's order, so that the scale matches the reference to the bit.
    fn normalise(&mut self) {
        let n = self.audio.len() as f32;
        let mean = pairwise_sum(&self.audio, &|x| x) / n;
        let var = pairwise_sum(&self.audio, &|x| (x - mean) * (x - mean)) / n;
        let scale = (var + NORM_EPS).sqrt();
        for x in &mut self.audio {
            *x = (*x - mean) / scale;
        }
    }

    /// `np.pad(x, N_FFT / 2, mode="reflect")`: mirrored about the end samples, which are not
    /// repeated.
    fn reflect_pad(&mut self) {
        let pad = N_FFT / 2;
        let n = self.audio.len();
        for i in 0..pad {
            self.padded[i] = f64::from(self.audio[pad - i]);
            self.padded[pad + n + i] = f64::from(self.audio[n - 2 - i]);
        }
        for (p, &x) in self.padded[pad..pad + n].iter_mut().zip(&self.audio) {
            *p = f64::from(x);
        }
    }
}

/// The sum of `f(x)` over `a` as numpy's `add.reduce` adds `f32`s (`pairwise_sum` in its
/// `loops_utils.h`): blocks of up to 128 in eight interleaved partial sums, halves above.
fn pairwise_sum(a: &[f32], f: &impl Fn(f32) -> f32) -> f32 {
    const BLOCK: usize = 128;
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |acc, &x| acc + f(x));
    }
    if n <= BLOCK {
        let mut r = [0f32; 8];
        for (r, &x) in r.iter_mut().zip(a) {
            *r = f(x);
        }
        let whole = n - n % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (r, &x) in r.iter_mut().zip(chunk) {
                *r += f(x);
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[whole..] {
            res += f(x);
        }
        return res;
    }
    let half = n / 2;
    let half = half - half % 8;
    pairwise_sum(&a[..half], f) + pairwise_sum(&a[half..], f)
}

/// `np.hanning(n + 1)[:-1]`, written as numpy computes it.
fn periodic_hann(n: usize) -> Vec<f64> {
    let m = n as f64;
    (0..n)
        .map(|k| {
            let pos = 2.0 * k as f64 - m;
            0.5 + 0.5 * (std::f64::consts::PI * pos / m).cos()
        })
        .collect()
}

fn hz_to_mel(hz: f64) -> f64 {
    if hz >= 1000.0 {
        15.0 + (hz / 1000.0).ln() * (27.0 / 6.4f64.ln())
    } else {
        3.0 * hz / 200.0
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    if mel >= 15.0 {
        1000.0 * ((6.4f64.ln() / 27.0) * (mel - 15.0)).exp()
    } else {
        200.0 * mel / 3.0
    }
}

/// `np.linspace(start, stop, n)`: `i * step + start`, the last point exactly `stop`.
fn linspace(start: f64, stop: f64, n: usize) -> Vec<f64> {
    let step = (stop - start) / (n - 1) as f64;
    let mut v: Vec<f64> = (0..n).map(|i| i as f64 * step + start).collect();
    v[n - 1] = stop;
    v
}

/// The Slaney-scale, area-normalised triangular filters, 0 to 8 kHz (librosa's and
/// Whisper's), kept as their non-zero runs.
fn mel_filters() -> Vec<Filter> {
    let mels = linspace(hz_to_mel(0.0), hz_to_mel(RATE as f64 / 2.0), N_MELS + 2);
    let edges: Vec<f64> = mels.into_iter().map(mel_to_hz).collect();
    let bins = linspace(0.0, (RATE / 2) as f64, BINS);
    (0..N_MELS)
        .map(|m| {
            let enorm = 2.0 / (edges[m + 2] - edges[m]);
            let weights: Vec<f64> = bins
                .iter()
                .map(|&f| {
                    let down = -(edges[m] - f) / (edges[m + 1] - edges[m]);
                    let up = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]);
                    0f64.max(down.min(up)) * enorm
                })
                .collect();
            let first = weights.iter().position(|&w| w > 0.0).unwrap_or(0);
            let last = weights.iter().rposition(|&w| w > 0.0).unwrap_or(first);
            Filter {
                first,
                weights: weights[first..=last].to_vec(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_cover_the_band_like_slaney() {
        let filters = mel_filters();
        assert_eq!(filters.len(), N_MELS);
        // Low filters are narrow (linear part of the scale), high ones wide.
        assert!(
            filters[0].weights.len() <= 3,
            "{}",
            filters[0].weights.len()
        );
        assert!(filters[N_MELS - 1].weights.len() > 10);
        assert!(filters[N_MELS - 1].first + filters[N_MELS - 1].weights.len() <= BINS);
        // Area normalisation: every triangle has an area of 1 (in Hz); bins are 40 Hz apart.
        for f in &filters[10..] {
            let area: f64 = f.weights.iter().sum::<f64>() * 40.0;
            assert!((area - 1.0).abs() < 0.1, "area {area}");
        }
    }

    #[test]
    fn pairwise_sum_adds_in_numpys_order() {
        // Exact sums agree in any order...
        let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        assert_eq!(pairwise_sum(&a, &|x| x), 499_500.0);
        // ...rounded ones only in numpy's: for np.arange(12345, dtype=np.float32) / 3,
        // np.add.reduce gives 0x4bc1c50a (25397780), a plain loop 0x4bc1c449 (25397394).
        let a: Vec<f32> = (0..12345).map(|i| i as f32 / 3.0).collect();
        assert_eq!(pairwise_sum(&a, &|x| x).to_bits(), 0x4bc1_c50a);
    }

    #[test]
    fn hann_is_periodic() {
        let w = periodic_hann(N_FFT);
        assert_eq!(w[0], 0.0);
        assert!((w[N_FFT / 2] - 1.0).abs() < 1e-15);
        assert!((w[1] - w[N_FFT - 1]).abs() < 1e-15);
    }

    #[test]
    fn silence_and_short_audio_have_the_reference_shape() {
        let mut mel = LogMel::new();
        let out = mel.compute(&[]).to_vec();
        assert_eq!(out.len(), N_MELS * FRAMES);
        // All zeros: every mel energy is the floor, log10 = -10, (−10 + 4) / 4.
        assert!(out.iter().all(|&x| x == -1.5), "{:?}", &out[..4]);

        let tone: Vec<f32> = (0..RATE)
            .map(|i| (2.0 * std::f32::consts::PI * 1000.0 * i as f32 / RATE as f32).sin())
            .collect();
        let out = mel.compute(&tone);
        let max = out.iter().cloned().fold(f32::MIN, f32::max);
        let min = out.iter().cloned().fold(f32::MAX, f32::min);
        // Clamped to 8 decades below the peak, scaled by 1/4.
        assert!((max - min - 2.0).abs() < 1e-5, "{min}..{max}");
        // The tone fills only the last second: the first 7 s are at the floor, away from DC.
        assert!((5..N_MELS).all(|m| out[m * FRAMES + 10] == min));
        assert!((5..N_MELS).any(|m| out[m * FRAMES + FRAMES - 1] > max - 0.5));
    }
}
