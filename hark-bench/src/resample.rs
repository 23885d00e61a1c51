//! Whole-recording sample-rate conversion with rubato's FFT resampler (band-limited, the
//! start-up delay trimmed), for fitting recordings to a call's rate before it starts.

use anyhow::Context;
use audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler};

/// Converts 16-bit audio from `from` Hz to `to` Hz.
pub fn resample(samples: &[i16], from: u32, to: u32) -> anyhow::Result<Vec<i16>> {
    if from == to || samples.is_empty() {
        return Ok(samples.to_vec());
    }
    let input: Vec<f32> = samples.iter().map(|&s| f32::from(s) / 32768.0).collect();
    let mut r = Fft::<f32>::new(from as usize, to as usize, 1024, 1, FixedSync::Input)
        .with_context(|| format!("cannot resample {from} Hz to {to} Hz"))?;
    let buffer = InterleavedSlice::new(&input, 1, input.len())
        .context("cannot hold the recording for resampling")?;
    let out = r
        .process_all(&buffer, input.len(), None)
        .with_context(|| format!("cannot resample {from} Hz to {to} Hz"))?;
    Ok(out
        .take_data()
        .iter()
        .map(|&s| (s * 32768.0).clamp(-32768.0, 32767.0) as i16)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_length_and_pitch() {
        let tone = |rate: u32| -> Vec<i16> {
            (0..rate as usize)
                .map(|i| {
                    ((i as f64 / f64::from(rate) * 440.0 * std::f64::consts::TAU).sin() * 16000.0)
                        as i16
                })
                .collect()
        };
        for from in [8000, 22050, 44100, 48000] {
            let out = resample(&tone(from), from, 16000).unwrap();
            assert!(
                (out.len() as i64 - 16000).abs() <= 1,
                "{from}: {}",
                out.len()
            );
            let want = tone(16000);
            let err = out[800..15200]
                .iter()
                .zip(&want[800..15200])
                .map(|(a, b)| (i32::from(*a) - i32::from(*b)).abs())
                .max()
                .unwrap();
            assert!(err < 1600, "{from} Hz: max error {err}");
        }
    }
}
