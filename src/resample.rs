//! Streaming sample-rate conversion with rubato's FFT resampler (fixed ratio, band-limited),
//! fed in whatever pieces the audio arrives in.

use audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Indexing, Resampler};

/// Converts one mono stream from `from` Hz to `to` Hz.
pub struct StreamResampler {
    inner: Fft<f32>,
    pending: Vec<f32>,
    scratch: Vec<f32>,
    /// Output frames still to drop: the resampler's start-up delay.
    delay_left: usize,
    /// Output frames still owed at flush: input fed minus output given, in output frames.
    fed_in: u64,
    given_out: u64,
    ratio: f64,
}

impl StreamResampler {
    /// A resampler from `from` to `to` Hz; the error is for the call's refusal, read only.
    pub fn new(from: u32, to: u32) -> Result<Self, String> {
        // 10 ms chunks keep the added delay small.
        let chunk = (from / 100).max(1) as usize;
        let inner = Fft::<f32>::new(from as usize, to as usize, chunk, 1, FixedSync::Input)
            .map_err(|e| format!("cannot resample {from} Hz to {to} Hz: {e}"))?;
        let delay_left = inner.output_delay();
        let scratch = vec![0.0; inner.output_frames_max()];
        Ok(Self {
            inner,
            pending: Vec::with_capacity(chunk * 2),
            scratch,
            delay_left,
            fed_in: 0,
            given_out: 0,
            ratio: f64::from(to) / f64::from(from),
        })
    }

    /// Resamples `input`, appending whatever output is ready to `out`.
    pub fn process(&mut self, input: &[f32], out: &mut Vec<f32>) {
        self.fed_in += input.len() as u64;
        self.pending.extend_from_slice(input);
        let mut used = 0;
        loop {
            let need = self.inner.input_frames_next();
            if self.pending.len() - used < need {
                break;
            }
            self.run(used, need, None, out);
            used += need;
        }
        self.pending.drain(..used);
    }

    /// Pushes out the tail held inside the resampler, as at the end of a stream.
    pub fn flush(&mut self, out: &mut Vec<f32>) {
        let owed = (self.fed_in as f64 * self.ratio).round() as u64;
        while self.given_out < owed {
            let need = self.inner.input_frames_next();
            let partial = self.pending.len().min(need);
            self.pending.resize(need, 0.0);
            let before = out.len();
            self.run(0, need, Some(partial), out);
            self.pending.clear();
            if out.len() == before && self.delay_left == 0 {
                break;
            }
        }
        let excess = self.given_out.saturating_sub(owed) as usize;
        out.truncate(out.len().saturating_sub(excess));
        self.given_out = owed;
    }

    fn run(&mut self, offset: usize, frames: usize, partial: Option<usize>, out: &mut Vec<f32>) {
        let Ok(input) = InterleavedSlice::new(&self.pending[offset..offset + frames], 1, frames)
        else {
            return;
        };
        let out_frames = self.scratch.len();
        let Ok(mut output) = InterleavedSlice::new_mut(&mut self.scratch, 1, out_frames) else {
            return;
        };
        let indexing = Indexing {
            input_offset: 0,
            output_offset: 0,
            partial_len: partial,
            active_channels_mask: None,
        };
        // Sizes come from the resampler itself, so this cannot fail in practice.
        let Ok((_, produced)) =
            self.inner
                .process_into_buffer(&input, &mut output, Some(&indexing))
        else {
            return;
        };
        let skip = self.delay_left.min(produced);
        self.delay_left -= skip;
        out.extend_from_slice(&self.scratch[skip..produced]);
        self.given_out += (produced - skip) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(rate: u32, hz: f32, secs: f32) -> Vec<f32> {
        (0..(rate as f32 * secs) as usize)
            .map(|i| (i as f32 / rate as f32 * hz * std::f32::consts::TAU).sin() * 0.5)
            .collect()
    }

    fn resample_in_pieces(from: u32, to: u32, input: &[f32], piece: usize) -> Vec<f32> {
        let mut r = StreamResampler::new(from, to).unwrap();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            r.process(chunk, &mut out);
        }
        r.flush(&mut out);
        out
    }

    #[test]
    fn keeps_length_and_pitch_across_odd_pieces() {
        for (from, piece) in [(8000, 160), (24000, 333), (48000, 961)] {
            let input = tone(from, 440.0, 1.0);
            let out = resample_in_pieces(from, 16000, &input, piece);
            assert_eq!(out.len(), 16000, "{from} Hz");
            // Same tone at the new rate, aligned: compare with a freshly generated one.
            let expected = tone(16000, 440.0, 1.0);
            let err: f32 = out[800..15200]
                .iter()
                .zip(&expected[800..15200])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(err < 0.05, "{from} Hz: max error {err}");
        }
    }
}
