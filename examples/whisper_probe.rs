//! Prints what Whisper decodes of each 16 kHz WAV file given, with the figures its guards
//! read (no-speech probability, mean log-probability): `MODEL=tiny.en|base|DIR
//! cargo run --release --example whisper_probe -- FILE…`.
//!
//! With `TIME=1`, times the decodes of each file's first 1-12 s instead: alone, with the
//! previous length's text as the draft (a partial after a partial), and with its own text
//! (a final after the partial of nearly the same audio). Best of 3, one thread.
//!
//! With `BATCH=1`, decodes the files (their first 6 s each) in batches of 1, 2, 4, 8 and 16
//! (the files taken in turn), checks each batch says what its utterances say alone, and
//! prints a decode's cost in the batch and the throughput against one at a time. Best of 2.
//!
//! With `BEAMS=1`, times a decode of each file's first 2, 3 and 5 s searched with 1
//! (greedy), 2, 3 and 5 hypotheses, and prints its text. Best of 3, one thread.
//!
//! With `ENCODE=1`, times the encoder alone on each file's first 2-13 s, its layers' products
//! in `f32` and in int8, and prints how far the int8 encoding is from the `f32` one.
use hark::backend::whisper::{WhisperConfig, ensure_model};
use hark_whisper::mel::Mel;
use hark_whisper::model::{EncoderProducts, Scratch, Weights};
use hark_whisper::{Decoder, Model, Request};

fn main() {
    let config = WhisperConfig {
        model: std::env::var("MODEL").unwrap_or_else(|_| "tiny.en".into()),
        ..Default::default()
    };
    let paths = ensure_model(&config).unwrap();
    if std::env::var_os("ENCODE").is_some() {
        return time_encoder(&paths.dir.join("model.bin"));
    }
    let model = Model::load(&paths).unwrap();
    let mut d = Decoder::new(model.clone());
    if std::env::var_os("BEAMS").is_some() {
        for file in std::env::args().skip(1) {
            let (audio, _) = hark_bench::wav::read_mono_f32(std::path::Path::new(&file)).unwrap();
            for secs in [2usize, 3, 5] {
                let audio = &audio[..audio.len().min(secs * 16_000)];
                for beam in [1usize, 2, 3, 5] {
                    let request = Request {
                        beam,
                        ..Request::english(audio)
                    };
                    let mut text = String::new();
                    let ms = (0..3)
                        .map(|_| {
                            let s = std::time::Instant::now();
                            text = d.decode_batch(&model, std::slice::from_ref(&request), None)[0]
                                .text
                                .clone();
                            s.elapsed().as_secs_f64() * 1000.0
                        })
                        .fold(f64::MAX, f64::min);
                    println!("{file} {secs} s, beam {beam}: {ms:6.1} ms  {text}");
                }
            }
        }
        return;
    }
    if std::env::var_os("STEPS").is_some() {
        let audio = vec![0.001f32; 16_000];
        for b in [1usize, 2, 4, 8, 16] {
            let batch: Vec<Request<'_>> = (0..b).map(|_| Request::english(&audio)).collect();
            let mut t = [0.0; 2];
            for (i, steps) in [0usize, 40].into_iter().enumerate() {
                t[i] = (0..3)
                    .map(|_| {
                        let s = std::time::Instant::now();
                        d.decode_batch(&model, &batch, Some(steps));
                        s.elapsed().as_secs_f64() * 1000.0
                    })
                    .fold(f64::MAX, f64::min);
            }
            println!(
                "batch {b:2}: prepare {:6.1} ms, a step {:5.2} ms ({:5.2} ms a row)",
                t[0],
                (t[1] - t[0]) / 40.0,
                (t[1] - t[0]) / 40.0 / b as f64
            );
        }
        return;
    }
    if std::env::var_os("BATCH").is_some() {
        let clips: Vec<Vec<f32>> = std::env::args()
            .skip(1)
            .map(|f| {
                let (mut s, _) = hark_bench::wav::read_mono_f32(std::path::Path::new(&f)).unwrap();
                s.truncate(6 * 16_000);
                s
            })
            .collect();
        return time_batches(&mut d, &model, &clips);
    }
    let time = std::env::var_os("TIME").is_some();
    for f in std::env::args().skip(1) {
        let (s, _) = hark_bench::wav::read_mono_f32(std::path::Path::new(&f)).unwrap();
        match time {
            false => println!("{f}: {:?}", d.decode(&s, "", "")),
            true => time_decodes(&mut d, &f, &s),
        }
    }
}

fn time_batches(d: &mut Decoder, model: &Model, clips: &[Vec<f32>]) {
    let best = |d: &mut Decoder, batch: &[Request<'_>]| {
        let mut best = f64::MAX;
        let mut texts = Vec::new();
        for _ in 0..2 {
            let t = std::time::Instant::now();
            texts = d
                .decode_batch(model, batch, None)
                .into_iter()
                .map(|d| d.text)
                .collect();
            best = best.min(t.elapsed().as_secs_f64() * 1000.0);
        }
        (best, texts)
    };
    let alone: Vec<(f64, String)> = clips
        .iter()
        .map(|c| {
            let (ms, mut t) = best(d, &[Request::english(c)]);
            (ms, t.remove(0))
        })
        .collect();
    println!("batch  ms/batch  ms/decode  alone ms/decode  throughput");
    for b in [1usize, 2, 4, 8, 16] {
        let picked: Vec<usize> = (0..b).map(|i| i % clips.len()).collect();
        let batch: Vec<Request<'_>> = picked
            .iter()
            .map(|&i| Request::english(&clips[i]))
            .collect();
        let (ms, texts) = best(d, &batch);
        for (&i, text) in picked.iter().zip(&texts) {
            assert_eq!(text, &alone[i].1, "clip {i} in a batch of {b}");
        }
        let one: f64 = picked.iter().map(|&i| alone[i].0).sum::<f64>() / b as f64;
        println!(
            "{b:5}  {ms:8.1}  {:9.1}  {one:15.1}  {:9.2}x",
            ms / b as f64,
            one * b as f64 / ms
        );
    }
}

fn time_decodes(d: &mut Decoder, f: &str, s: &[f32]) {
    println!("{f}:");
    let mut prev = String::new();
    for secs in [1.0f32, 2.0, 3.0, 5.0, 8.0, 12.0] {
        let n = ((secs * 16000.0) as usize).min(s.len());
        let mut time = |draft: &str| {
            let mut best = f64::MAX;
            let mut text = String::new();
            for _ in 0..3 {
                let t = std::time::Instant::now();
                text = d.decode(&s[..n], "", draft).text;
                best = best.min(t.elapsed().as_secs_f64() * 1000.0);
            }
            (best, text)
        };
        let (plain, text) = time("");
        let (from_prev, t2) = time(&prev);
        let (from_own, t3) = time(&text);
        assert_eq!(text, t2, "a draft changed the text");
        assert_eq!(text, t3, "a draft changed the text");
        println!(
            "{secs:5.1} s: plain {plain:6.1} ms, prev draft {from_prev:6.1}, own draft {from_own:6.1}  {}",
            &text[..text.len().min(60)]
        );
        prev = text;
    }
}

fn time_encoder(model: &std::path::Path) {
    let f32s = Weights::load_with(model, EncoderProducts::F32).unwrap();
    let int8 = Weights::load_with(model, EncoderProducts::Int8).unwrap();
    let (mut mel, mut scratch) = (Mel::new(int8.n_mels), Scratch::default());
    for f in std::env::args().skip(1) {
        let (s, _) = hark_bench::wav::read_mono_f32(std::path::Path::new(&f)).unwrap();
        println!("{f}:");
        for secs in [2.0f32, 4.0, 8.0, 13.0] {
            let n = ((secs * 16000.0) as usize).min(s.len());
            let mut features = Vec::new();
            let frames = mel.compute(&s[..n], &mut features) & !1;
            let mut time = |w: &Weights| {
                let mut best = f64::MAX;
                let mut out = Vec::new();
                for _ in 0..3 {
                    let t = std::time::Instant::now();
                    out = w.encode(&features, frames, &mut scratch);
                    best = best.min(t.elapsed().as_secs_f64() * 1000.0);
                }
                (best, out)
            };
            let ((f32_ms, want), (int8_ms, got)) = (time(&f32s), time(&int8));
            let err = hark_whisper::qmatmul::relative_difference(&want, &got);
            println!(
                "{:5.1} s: f32 {f32_ms:6.1} ms, int8 {int8_ms:6.1} ms, relative difference {:.4}",
                n as f32 / 16000.0,
                err
            );
        }
    }
}
