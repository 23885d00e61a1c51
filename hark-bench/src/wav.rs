//! Reading recordings: WAV files of any rate, 1 or 2 channels, 8/16/24/32-bit integer or
//! 32-bit float samples, as 16-bit planes (one per channel), the form calls are played in.

use std::path::Path;

use anyhow::{Context, bail};

/// A recording's samples, one plane per channel.
#[derive(Debug, Clone)]
pub struct Audio {
    pub rate: u32,
    pub planes: Vec<Vec<i16>>,
}

impl Audio {
    /// The channels mixed down to one.
    pub fn mono(&self) -> Vec<i16> {
        match self.planes.as_slice() {
            [one] => one.clone(),
            planes => {
                let len = planes.iter().map(Vec::len).max().unwrap_or(0);
                (0..len)
                    .map(|i| {
                        let sum: i32 = planes
                            .iter()
                            .map(|p| i32::from(p.get(i).copied().unwrap_or(0)))
                            .sum();
                        (sum / planes.len().max(1) as i32) as i16
                    })
                    .collect()
            }
        }
    }

    pub fn duration_secs(&self) -> f64 {
        self.planes.first().map_or(0, Vec::len) as f64 / f64::from(self.rate.max(1))
    }
}

/// Reads a WAV file mixed to one channel, as samples in -1..1 (the form recognizers take),
/// with its rate.
pub fn read_mono_f32(path: &Path) -> anyhow::Result<(Vec<f32>, u32)> {
    let audio = read(path)?;
    let samples = audio
        .mono()
        .iter()
        .map(|&s| f32::from(s) / 32768.0)
        .collect();
    Ok((samples, audio.rate))
}

/// Reads a WAV file, with an error that names the file and what is wrong with it.
pub fn read(path: &Path) -> anyhow::Result<Audio> {
    let reader =
        hound::WavReader::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let spec = reader.spec();
    let channels = usize::from(spec.channels);
    if channels == 0 {
        bail!("{}: a WAV file with no channels", path.display());
    }
    let damaged = || format!("{}: damaged WAV data", path.display());
    let samples: Vec<i16> = match (spec.sample_format, spec.bits_per_sample) {
        (hound::SampleFormat::Int, 16) => reader
            .into_samples::<i16>()
            .collect::<Result<_, _>>()
            .with_context(damaged)?,
        (hound::SampleFormat::Int, bits @ (8 | 24 | 32)) => reader
            .into_samples::<i32>()
            .map(|s| s.map(|v| scale_int(v, bits)))
            .collect::<Result<_, _>>()
            .with_context(damaged)?,
        (hound::SampleFormat::Float, 32) => reader
            .into_samples::<f32>()
            .map(|s| s.map(|v| (v * 32768.0).clamp(-32768.0, 32767.0) as i16))
            .collect::<Result<_, _>>()
            .with_context(damaged)?,
        (format, bits) => bail!(
            "{}: {bits}-bit {format:?} samples are not supported (use 8/16/24/32-bit PCM or 32-bit float)",
            path.display()
        ),
    };
    let mut planes = vec![Vec::with_capacity(samples.len() / channels); channels];
    for frame in samples.chunks_exact(channels) {
        for (plane, &s) in planes.iter_mut().zip(frame) {
            plane.push(s);
        }
    }
    Ok(Audio {
        rate: spec.sample_rate,
        planes,
    })
}

/// An integer sample of `bits` bits as a 16-bit one.
fn scale_int(v: i32, bits: u16) -> i16 {
    match bits {
        8 => (v << 8) as i16,
        24 => (v >> 8) as i16,
        32 => (v >> 16) as i16,
        _ => v as i16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, spec: hound::WavSpec, samples: &[f32]) {
        let mut w = hound::WavWriter::create(path, spec).unwrap();
        for &s in samples {
            match (spec.sample_format, spec.bits_per_sample) {
                (hound::SampleFormat::Float, _) => w.write_sample(s).unwrap(),
                (_, 16) => w.write_sample((s * 32767.0) as i16).unwrap(),
                (_, 24) => w.write_sample((s * 8_388_607.0) as i32).unwrap(),
                (_, bits) => w
                    .write_sample((s * (2f32.powi(i32::from(bits) - 1) - 1.0)) as i32)
                    .unwrap(),
            }
        }
        w.finalize().unwrap();
    }

    #[test]
    fn reads_every_supported_format_as_16_bit_planes() {
        let dir = std::env::temp_dir().join(format!("hark-bench-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Stereo frames: left half scale, right a quarter, negative.
        let samples = [0.5f32, -0.25, 0.5, -0.25];
        for (format, bits) in [
            (hound::SampleFormat::Int, 16),
            (hound::SampleFormat::Int, 24),
            (hound::SampleFormat::Int, 32),
            (hound::SampleFormat::Float, 32),
        ] {
            let path = dir.join(format!("{bits}-{format:?}.wav"));
            let spec = hound::WavSpec {
                channels: 2,
                sample_rate: 22050,
                bits_per_sample: bits,
                sample_format: format,
            };
            write(&path, spec, &samples);
            let a = read(&path).unwrap();
            assert_eq!((a.rate, a.planes.len()), (22050, 2));
            for (got, want) in [(a.planes[0][1], 16384), (a.planes[1][1], -8192)] {
                assert!(
                    (i32::from(got) - want).abs() <= 2,
                    "{bits} {format:?}: {got}"
                );
            }
            assert_eq!(a.mono().len(), 2);
        }
        let bad = dir.join("bad.wav");
        std::fs::write(&bad, b"RIFF....WAVEjunk").unwrap();
        let e = read(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.wav"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
