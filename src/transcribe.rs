//! `hark transcribe`: runs WAV files through a backend exactly as a call's audio would go,
//! only faster than real time.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::sync::mpsc;

use crate::audio::channel_pipe;
use crate::backend::{Backend, ChannelSpec, EventKind, EventSink, Options};
use crate::protocol::{Channel, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE};

/// Samples pushed at a time; the ring holds a few of these.
const CHUNK: usize = 4_000;

/// Transcribes one file; returns the text per channel, labelled when the file is stereo.
pub async fn file(
    backend: Arc<dyn Backend>,
    path: &Path,
) -> anyhow::Result<Vec<(Option<&'static str>, String)>> {
    let reader = hound::WavReader::open(path).context("cannot read WAV file")?;
    let spec = reader.spec();
    if spec.sample_format != hound::SampleFormat::Int || spec.bits_per_sample != 16 {
        bail!("only 16-bit integer PCM WAV is supported");
    }
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
    let samples: Vec<i16> = reader
        .into_samples::<i16>()
        .collect::<Result<_, _>>()
        .context("WAV data is damaged")?;
    let planes: Vec<Vec<i16>> = (0..channels)
        .map(|c| samples.iter().skip(c).step_by(channels).copied().collect())
        .collect();
    let texts = transcribe_planes(backend, spec.sample_rate, planes).await?;
    Ok(texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            let label = (channels > 1)
                .then(|| Channel::from_index(i).map(Channel::as_str))
                .flatten();
            (label, text)
        })
        .collect())
}

/// Runs each plane (one channel's samples) through the backend; returns the finals joined.
pub async fn transcribe_planes(
    backend: Arc<dyn Backend>,
    sample_rate: u32,
    planes: Vec<Vec<i16>>,
) -> anyhow::Result<Vec<String>> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let channels = planes.len();
    let mut feeders = Vec::new();
    for (index, plane) in planes.into_iter().enumerate() {
        let channel = Channel::from_index(index).context("more than two channels")?;
        let (mut sink, source) = channel_pipe(sample_rate, CHUNK * 8);
        let spec = ChannelSpec {
            session_id: 0,
            channel,
            sample_rate,
            options: Arc::new(Options::default()),
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
    let mut texts = vec![Vec::new(); channels];
    let mut open = channels;
    while open > 0 {
        let Some(event) = rx.recv().await else { break };
        match event.kind {
            EventKind::Final(text) => texts[event.channel.index()].push(text),
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
