//! `hark transcribe`: runs WAV files through a backend exactly as a call's audio would go,
//! only faster than real time.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::sync::mpsc;

use crate::audio::channel_pipe;
use crate::backend::{Backend, ChannelSpec, EventKind, EventSink, Options};
use crate::config::Profile;
use crate::protocol::{Channel, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE};

/// Samples pushed at a time; the ring holds a few of these.
const CHUNK: usize = 4_000;

/// Transcribes one file as a profile's call would be: with its options, and of a stereo
/// file only the channels it transcribes (a mono file is the customer's channel). Returns
/// the text per channel, labelled when the file is stereo.
pub async fn file(
    backend: Arc<dyn Backend>,
    path: &Path,
    profile: &Profile,
) -> anyhow::Result<Vec<(Option<&'static str>, String)>> {
    let (rate, planes) = read_wav(path)?;
    let stereo = planes.len() > 1;
    let wanted: Vec<(Channel, Vec<i16>)> = planes
        .into_iter()
        .enumerate()
        .filter_map(|(i, plane)| Channel::from_index(i).map(|c| (c, plane)))
        .filter(|(c, _)| !stereo || profile.channels.contains(c))
        .collect();
    let channels: Vec<Channel> = wanted.iter().map(|(c, _)| *c).collect();
    let options = Arc::new(profile.options.clone());
    let texts = transcribe_channels(backend, rate, wanted, options).await?;
    Ok(channels
        .into_iter()
        .zip(texts)
        .map(|(c, text)| (stereo.then_some(c.as_str()), text))
        .collect())
}

/// Reads a WAV file as 16-bit planes, one per channel, with its rate: 8/16/24/32-bit
/// integer or 32-bit float samples (what audio tools write), as `hark bench` reads them.
pub fn read_wav(path: &Path) -> anyhow::Result<(u32, Vec<Vec<i16>>)> {
    let reader = hound::WavReader::open(path).context("cannot read WAV file")?;
    let spec = reader.spec();
    if !(MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&spec.sample_rate) {
        bail!(
            "sample rate {} Hz is outside 8000–48000 Hz",
            spec.sample_rate
        );
    }
    let channels = usize::from(spec.channels);
    if !(1..=2).contains(&channels) {
        bail!("{channels} channels: only mono or stereo is supported");
    }
    let damaged = "WAV data is damaged";
    let samples: Vec<i16> = match (spec.sample_format, spec.bits_per_sample) {
        (hound::SampleFormat::Int, 16) => reader
            .into_samples::<i16>()
            .collect::<Result<_, _>>()
            .context(damaged)?,
        (hound::SampleFormat::Int, bits @ (8 | 24 | 32)) => reader
            .into_samples::<i32>()
            .map(|s| s.map(|v| scale_int(v, bits)))
            .collect::<Result<_, _>>()
            .context(damaged)?,
        (hound::SampleFormat::Float, 32) => reader
            .into_samples::<f32>()
            .map(|s| s.map(|v| (v * 32768.0).clamp(-32768.0, 32767.0) as i16))
            .collect::<Result<_, _>>()
            .context(damaged)?,
        (format, bits) => bail!(
            "{bits}-bit {} samples are not supported: use 8/16/24/32-bit integer PCM or \
             32-bit float",
            match format {
                hound::SampleFormat::Int => "integer",
                hound::SampleFormat::Float => "float",
            }
        ),
    };
    let planes = (0..channels)
        .map(|c| samples.iter().skip(c).step_by(channels).copied().collect())
        .collect();
    Ok((spec.sample_rate, planes))
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

/// Runs each channel's samples through the backend; returns the finals joined, in the
/// order given.
async fn transcribe_channels(
    backend: Arc<dyn Backend>,
    sample_rate: u32,
    planes: Vec<(Channel, Vec<i16>)>,
    options: Arc<Options>,
) -> anyhow::Result<Vec<String>> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let order: Vec<Channel> = planes.iter().map(|(c, _)| *c).collect();
    let mut feeders = Vec::new();
    for (channel, plane) in planes {
        let (mut sink, source) = channel_pipe(sample_rate, CHUNK * 8);
        let spec = ChannelSpec {
            session_id: 0,
            channel,
            sample_rate,
            options: options.clone(),
        };
        backend
            .start(spec, source, EventSink::new(tx.clone(), channel, 0))
            .map_err(|e| anyhow::anyhow!("recognizer could not start: {e}"))?;
        feeders.push(tokio::spawn(async move {
            for chunk in plane.chunks(CHUNK) {
                while sink.push(chunk).is_err() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            sink.finish();
        }));
    }
    drop(tx);
    let mut texts = vec![Vec::new(); order.len()];
    let mut open = order.len();
    while open > 0 {
        let Some(event) = rx.recv().await else { break };
        let Some(slot) = order.iter().position(|c| *c == event.channel) else {
            continue;
        };
        match event.kind {
            EventKind::Final(text) => texts[slot].push(text),
            EventKind::Partial(_) | EventKind::Settled(_) => {}
            EventKind::Done => open -= 1,
            EventKind::Failed { message, .. } => bail!("recognizer failed: {message}"),
        }
    }
    for f in feeders {
        f.abort();
    }
    Ok(texts.into_iter().map(|t| t.join(" ")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same samples written as 16-bit, 24-bit, 32-bit integer and 32-bit float WAV
    /// read back as the same 16-bit planes.
    #[test]
    fn reads_integer_and_float_wavs_alike() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Stereo frames whose values are exact in every format.
        let frames: [[i16; 2]; 3] = [[16384, -8192], [-32768, 256], [1, -1]];
        let formats = [
            (hound::SampleFormat::Int, 16),
            (hound::SampleFormat::Int, 24),
            (hound::SampleFormat::Int, 32),
            (hound::SampleFormat::Float, 32),
        ];
        for (format, bits) in formats {
            let path = dir.path().join(format!("{bits}-{format:?}.wav"));
            let spec = hound::WavSpec {
                channels: 2,
                sample_rate: 8000,
                bits_per_sample: bits,
                sample_format: format,
            };
            let mut w = hound::WavWriter::create(&path, spec).expect("create");
            for s in frames.iter().flatten().copied() {
                match (format, bits) {
                    (hound::SampleFormat::Float, _) => w.write_sample(f32::from(s) / 32768.0),
                    (_, 16) => w.write_sample(s),
                    (_, 24) => w.write_sample(i32::from(s) << 8),
                    _ => w.write_sample(i32::from(s) << 16),
                }
                .expect("write");
            }
            w.finalize().expect("finalize");
            let (rate, planes) = read_wav(&path).expect("reads");
            assert_eq!(rate, 8000);
            assert_eq!(planes[0], [16384, -32768, 1], "{bits} {format:?}");
            assert_eq!(planes[1], [-8192, 256, -1], "{bits} {format:?}");
        }
    }
}
