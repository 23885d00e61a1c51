//! Whisper's log-mel spectrogram: 25 ms Hann windows every 10 ms (n_fft 400, hop 160 at
//! 16 kHz, centred with reflection), power into 80 Slaney mel bands up to 8 kHz (128 for
//! large-v3 and the models built on it), log10,
//! floored 8 below the maximum and scaled as `(x + 4) / 4` — exactly as the model was
//! trained on (openai/whisper `audio.py`), or its words degrade.

use std::f32::consts::PI;
use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

pub const N_FFT: usize = 400;
pub const HOP: usize = 160;
/// The mel bands of every Whisper but large-v3's line.
pub const N_MELS: usize = 80;
/// The bands a Whisper model may read: its `encoder/conv1` says which.
pub const BANDS: [usize; 2] = [N_MELS, 128];
const BINS: usize = N_FFT / 2 + 1;

pub struct Mel {
    fft: Arc<dyn RealToComplex<f32>>,
    window: Vec<f32>,
    bands: usize,
    /// Per band, its first bin and the weights from there to its last non-zero one: each
    /// band is a triangle over a few of the 201 bins, and summing only those gives the
    /// dense product's sums exactly (the zeros add nothing) at a tenth of its work.
    filters: Vec<(usize, Vec<f32>)>,
    frame: Vec<f32>,
    spectrum: Vec<realfft::num_complex::Complex<f32>>,
    scratch: Vec<realfft::num_complex::Complex<f32>>,
}

impl Mel {
    /// The spectrogram in `bands` mel bands (one of [`BANDS`]).
    pub fn new(bands: usize) -> Self {
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(N_FFT);
        let spectrum = fft.make_output_vec();
        let scratch = fft.make_scratch_vec();
        Self {
            window: (0..N_FFT)
                .map(|n| 0.5 - 0.5 * (2.0 * PI * n as f32 / N_FFT as f32).cos())
                .collect(),
            bands,
            filters: slaney_filters(bands)
                .chunks_exact(BINS)
                .map(|row| {
                    let first = row.iter().position(|&w| w != 0.0).unwrap_or(0);
                    let last = row.iter().rposition(|&w| w != 0.0).map_or(first, |l| l + 1);
                    (first, row[first..last].to_vec())
                })
                .collect(),
            frame: vec![0.0; N_FFT],
            fft,
            spectrum,
            scratch,
        }
    }

    pub fn bands(&self) -> usize {
        self.bands
    }

    /// The log-mel of `samples` (16 kHz): `[bands][frames]` row-major, one frame per `HOP`
    /// samples (Whisper drops the STFT's last frame).
    pub fn compute(&mut self, samples: &[f32], out: &mut Vec<f32>) -> usize {
        let frames = samples.len() / HOP;
        out.clear();
        out.resize(self.bands * frames, 0.0);
        if frames == 0 {
            return 0;
        }
        let half = N_FFT / 2;
        let n = samples.len() as isize;
        let reflect = |i: isize| -> f32 {
            let mut i = i;
            if n == 1 {
                return samples[0];
            }
            // Reflect without repeating the edge sample, as numpy's "reflect".
            while i < 0 || i >= n {
                if i < 0 {
                    i = -i;
                }
                if i >= n {
                    i = 2 * (n - 1) - i;
                }
            }
            samples[i as usize]
        };
        let mut power = [0f32; BINS];
        for t in 0..frames {
            let start = (t * HOP) as isize - half as isize;
            for (k, slot) in self.frame.iter_mut().enumerate() {
                *slot = reflect(start + k as isize) * self.window[k];
            }
            // realfft fails only on buffers of the wrong length; these three were made by
            // the plan itself in `new` and are never resized.
            self.fft
                .process_with_scratch(&mut self.frame, &mut self.spectrum, &mut self.scratch)
                .expect("the plan's own buffers");
            for (p, c) in power.iter_mut().zip(&self.spectrum) {
                *p = c.norm_sqr();
            }
            for (m, (first, row)) in self.filters.iter().enumerate() {
                let e: f32 = row.iter().zip(&power[*first..]).map(|(w, p)| w * p).sum();
                out[m * frames + t] = e.max(1e-10).log10();
            }
        }
        let max = out.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for v in out.iter_mut() {
            *v = (v.max(max - 8.0) + 4.0) / 4.0;
        }
        frames
    }
}

impl Default for Mel {
    fn default() -> Self {
        Self::new(N_MELS)
    }
}

/// librosa's `filters.mel(sr=16000, n_fft=400, n_mels=bands)`: Slaney's mel scale, each
/// band normalised to unit area (what Whisper's `mel_filters.npz` holds, for 80 and 128).
fn slaney_filters(bands: usize) -> Vec<f32> {
    fn hz_to_mel(f: f64) -> f64 {
        let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
        let min_log_mel = min_log_hz / f_sp;
        let logstep = (6.4f64).ln() / 27.0;
        if f >= min_log_hz {
            min_log_mel + (f / min_log_hz).ln() / logstep
        } else {
            f / f_sp
        }
    }
    fn mel_to_hz(m: f64) -> f64 {
        let (f_sp, min_log_hz) = (200.0 / 3.0, 1000.0);
        let min_log_mel = min_log_hz / f_sp;
        let logstep = (6.4f64).ln() / 27.0;
        if m >= min_log_mel {
            min_log_hz * (logstep * (m - min_log_mel)).exp()
        } else {
            f_sp * m
        }
    }
    let sr = 16_000.0;
    let fft_freqs: Vec<f64> = (0..BINS).map(|i| i as f64 * sr / N_FFT as f64).collect();
    let (lo, hi) = (hz_to_mel(0.0), hz_to_mel(sr / 2.0));
    let mel_f: Vec<f64> = (0..bands + 2)
        .map(|i| mel_to_hz(lo + (hi - lo) * i as f64 / (bands + 1) as f64))
        .collect();
    let mut out = vec![0f32; bands * BINS];
    for m in 0..bands {
        let enorm = 2.0 / (mel_f[m + 2] - mel_f[m]);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let lower = (f - mel_f[m]) / (mel_f[m + 1] - mel_f[m]);
            let upper = (mel_f[m + 2] - f) / (mel_f[m + 2] - mel_f[m + 1]);
            out[m * BINS + k] = (lower.min(upper).max(0.0) * enorm) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bands_few_bins_sum_to_the_dense_products_bits() {
        for bands in BANDS {
            let dense = slaney_filters(bands);
            let mel = Mel::new(bands);
            let mut seed = 7u32;
            for _ in 0..50 {
                let power: Vec<f32> = (0..BINS)
                    .map(|_| {
                        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        (seed >> 8) as f32 / (1u32 << 24) as f32 * 1e3
                    })
                    .collect();
                for (m, (first, row)) in mel.filters.iter().enumerate() {
                    let want: f32 = dense[m * BINS..(m + 1) * BINS]
                        .iter()
                        .zip(&power)
                        .map(|(w, p)| w * p)
                        .sum();
                    let got: f32 = row.iter().zip(&power[*first..]).map(|(w, p)| w * p).sum();
                    // As `compute` reads them (a band over no bin sums to -0.0, not 0.0).
                    let (want, got) = (want.max(1e-10), got.max(1e-10));
                    assert_eq!(want.to_bits(), got.to_bits(), "{bands} bands, band {m}");
                }
            }
            assert!(mel.filters.iter().all(|(_, row)| row.len() < BINS / 4));
        }
    }

    #[test]
    fn a_tone_lights_the_band_of_its_frequency_and_frames_follow_the_hop() {
        let tone: Vec<f32> = (0..16_000)
            .map(|i| (2.0 * PI * 1000.0 * i as f32 / 16_000.0).sin() * 0.5)
            .collect();
        // 1 kHz sits at mel 15 of 0..~45.2, spread over 81 points: band ~26; over 129
        // points, ~42.
        for (bands, near) in [(80, 25..=28), (128, 41..=44)] {
            let mut mel = Mel::new(bands);
            let mut out = Vec::new();
            let frames = mel.compute(&tone, &mut out);
            assert_eq!((frames, out.len()), (100, bands * 100));
            let t = 50;
            let loudest = (0..bands)
                .max_by(|&a, &b| out[a * frames + t].total_cmp(&out[b * frames + t]))
                .unwrap();
            assert!(near.contains(&loudest), "{bands} bands: band {loudest}");
            assert!(out.iter().all(|v| v.is_finite() && *v <= 1.5 + 1e-6));
        }
    }
}
