//! What the default Whisper pair costs per utterance and per decoder step, by batch size:
//! one call of `Decoder::decode_batch` over a batch of 3 s utterances, each forced to 1 or
//! to 41 tokens (the engine's calibration does the same), for tiny.en (partials) and base
//! (finals). The difference of the two over 40 is a step of the whole batch; the first is
//! mostly the batch's encodes.
//!
//! `cargo bench --bench whisper_step` (fetches the pinned models on first use, as `hark
//! serve` does); figures in BENCHMARKS.md, "A decoder step".

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hark::backend::whisper::{WhisperConfig, ensure_final_model, ensure_model};
use hark_whisper::{Decoder, Model, RATE, Request};

/// Seconds of audio per utterance, and the batch sizes: alone, a small wave, the largest
/// batch the pool forms.
const SECONDS: f32 = 3.0;
const BATCHES: [usize; 3] = [1, 4, 16];

fn models() -> Vec<std::sync::Arc<Model>> {
    let config = WhisperConfig::default();
    let partials = ensure_model(&config).expect("the partials' model");
    let finals = ensure_final_model(&config)
        .expect("the finals' model")
        .expect("the default pairs a finals' model");
    [partials, finals]
        .iter()
        .map(|paths| Model::load(paths).expect("a pinned model loads"))
        .collect()
}

fn step(c: &mut Criterion) {
    // Quiet noise, as the calibration uses: the cost does not depend on the words.
    let audio: Vec<f32> = (0..(SECONDS * RATE as f32) as usize)
        .map(|i| ((i as f32 * 0.618).fract() - 0.5) * 1e-3)
        .collect();
    for model in models() {
        let mut decoder = Decoder::new(model.clone());
        let mut g = c.benchmark_group(format!("whisper_step/{}", model.name));
        g.sample_size(10).measurement_time(Duration::from_secs(8));
        for batch in BATCHES {
            let requests: Vec<Request<'_>> = (0..batch).map(|_| Request::english(&audio)).collect();
            for tokens in [1, 41] {
                let id = BenchmarkId::new(format!("{tokens} tokens"), batch);
                g.bench_with_input(id, &requests, |b, requests| {
                    b.iter(|| decoder.decode_batch(&model, requests, Some(tokens)))
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, step);
criterion_main!(benches);
