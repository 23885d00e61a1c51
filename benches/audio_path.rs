//! Throughput of hark's own audio path, without the recognizer's cost:
//! - `pcm`: decode + de-interleave + ring push (and the consumer's pop) per second of audio;
//! - `resample`: 8→16 kHz and 48→16 kHz per second of audio;
//! - `segmenter`: the voice detector and endpointing the embedded backend's listener runs on
//!   every channel, per second of audio (speech from the dev clips when present);
//! - `session`: the whole path through a real server on loopback, socket frame in to
//!   transcript out, with a counting backend (a test double that lives only here).
//!
//! `cargo bench --bench audio_path`; figures in BENCHMARKS.md.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::{SinkExt, StreamExt};
use hark::audio::{AudioSource, PcmDecoder, channel_pipe};
use hark::backend::{Backend, BackendError, ChannelSpec, EventSink, Registry};
use hark::config::{Config, Profile};
use hark::resample::StreamResampler;
use hark::server::Server;
use tokio_tungstenite::tungstenite::Message;

const RATE: u32 = 16_000;
const FRAME_BYTES: usize = 1280; // 20 ms of 16 kHz stereo

fn one_second_of_frames() -> Vec<Vec<u8>> {
    (0..50)
        .map(|f| {
            (0..FRAME_BYTES / 2)
                .flat_map(|i| (((f * 640 + i) % 2000) as i16 - 1000).to_le_bytes())
                .collect()
        })
        .collect()
}

fn pcm(c: &mut Criterion) {
    let frames = one_second_of_frames();
    let mut g = c.benchmark_group("pcm");
    g.throughput(Throughput::Bytes((frames.len() * FRAME_BYTES) as u64));
    g.bench_function("decode_deinterleave_push_1s_16k_stereo", |b| {
        let mut decoder = PcmDecoder::new(2);
        let (mut left_in, mut left_out) = channel_pipe(RATE, RATE as usize * 5);
        let (mut right_in, mut right_out) = channel_pipe(RATE, RATE as usize * 5);
        let mut scratch = vec![0i16; RATE as usize];
        b.iter(|| {
            for frame in &frames {
                let planes = decoder.decode(frame);
                left_in.push(&planes[0]).expect("room");
                right_in.push(&planes[1]).expect("room");
            }
            left_out.pop(&mut scratch);
            right_out.pop(&mut scratch);
        });
    });
    g.finish();
}

fn resample(c: &mut Criterion) {
    let mut g = c.benchmark_group("resample");
    for from in [8_000u32, 48_000] {
        let input: Vec<f32> = (0..from).map(|i| (i as f32 * 0.05).sin() * 0.3).collect();
        g.throughput(Throughput::Elements(u64::from(from)));
        g.bench_function(format!("{}k_to_16k_1s_in_20ms_pieces", from / 1000), |b| {
            let mut r = StreamResampler::new(from, RATE).expect("resampler");
            let mut out = Vec::with_capacity(RATE as usize * 2);
            b.iter(|| {
                out.clear();
                for piece in input.chunks((from / 50) as usize) {
                    r.process(piece, &mut out);
                }
            });
        });
    }
    g.finish();
}

/// A second of speech-like audio: the JFK clip if the dev clips were fetched (`hark bench`, the tests), else a
/// voiced-looking synthetic signal.
fn speech_second() -> Vec<f32> {
    let clip = std::env::var("HOME")
        .ok()
        .map(|h| std::path::PathBuf::from(h).join(".cache/hark/clips/jfk.wav"))
        .and_then(|p| hark_bench::wav::read_mono_f32(&p).ok());
    match clip {
        Some((samples, _)) => samples
            .into_iter()
            .skip(RATE as usize)
            .take(RATE as usize)
            .collect(),
        None => (0..RATE)
            .map(|i| (i as f32 * 0.07).sin() * (i as f32 * 0.003).sin() * 0.3)
            .collect(),
    }
}

fn segmenter(c: &mut Criterion) {
    use hark::backend::embedded::segmenter::{Segmenter, SegmenterConfig};
    let audio = speech_second();
    let mut g = c.benchmark_group("segmenter");
    g.throughput(Throughput::Elements(audio.len() as u64));
    g.bench_function("vad_and_endpointing_1s_in_20ms_pieces", |b| {
        let mut s = Segmenter::new(SegmenterConfig::from_ms(200, 500));
        let mut out = Vec::new();
        let mut at = 0u64;
        b.iter(|| {
            for piece in audio.chunks(320) {
                at += piece.len() as u64;
                s.push(piece, at, Instant::now(), &mut out);
            }
            out.clear();
            // Keep the open utterance from growing across iterations.
            s.finish(at, Instant::now(), &mut out);
            while let Some(w) = s.want() {
                s.decoded(w.ticket, "".into(), Instant::now(), &mut out);
            }
        });
    });
    g.finish();
}

/// Reports a final each time another second of audio has arrived on its channel.
struct Counter;

impl Backend for Counter {
    fn start(
        &self,
        spec: ChannelSpec,
        mut audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        tokio::spawn(async move {
            let mut buf = vec![0i16; 8192];
            let mut total = 0usize;
            let second = spec.sample_rate as usize;
            loop {
                audio.readable().await;
                let n = audio.pop(&mut buf);
                if n == 0 && audio.is_finished() {
                    events.done();
                    return;
                }
                let before = total / second;
                total += n;
                if total / second > before {
                    events.final_text(&format!("{} s", total / second));
                }
            }
        });
        Ok(())
    }
}

fn session(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let addr: SocketAddr = rt.block_on(async {
        let mut registry = Registry::default();
        registry.insert("counter", Arc::new(Counter));
        let mut config = Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..Config::default()
        };
        config.profiles.insert(
            "default".into(),
            Profile {
                backend: "counter".into(),
                ..Profile::default()
            },
        );
        let server = Server::bind(config, registry).await.expect("bind");
        let addr = server.local_addr();
        tokio::spawn(server.run(std::future::pending()));
        addr
    });
    let frames = one_second_of_frames();
    let mut g = c.benchmark_group("session");
    g.throughput(Throughput::Elements(frames.len() as u64));
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("frames_in_to_transcripts_out_1s_16k_stereo", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let url = format!("ws://{addr}/api/custom-transcriber");
                let (ws, _) = tokio_tungstenite::connect_async_with_config(url, None, true)
                    .await
                    .expect("connect");
                let (mut tx, mut rx) = ws.split();
                tx.send(Message::text(hark_bench::protocol::start_frame(16000, 2)))
                    .await
                    .expect("start");
                let started = Instant::now();
                for _ in 0..iters {
                    for f in &frames {
                        tx.send(Message::binary(f.clone())).await.expect("send");
                    }
                    // One final per channel per second of audio.
                    let mut finals = 0;
                    while finals < 2 {
                        match rx.next().await {
                            Some(Ok(Message::Text(_))) => finals += 1,
                            Some(Ok(_)) => {}
                            other => panic!("server ended the call: {other:?}"),
                        }
                    }
                }
                let elapsed = started.elapsed();
                let _ = tx.send(Message::Close(None)).await;
                elapsed
            })
        });
    });
    g.finish();
}

criterion_group!(benches, pcm, resample, segmenter, session);
criterion_main!(benches);
