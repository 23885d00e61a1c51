//! Transcribes WAV files with a CTranslate2 Whisper model, each file decoded whole as one
//! utterance (at most 29 s are read), and prints how long each decode took.
//!
//! ```text
//! cargo run --release -p hark-whisper --example transcribe -- MODEL_DIR NAME FILE.wav…
//! ```
//!
//! `MODEL_DIR` holds `model.bin` and `tokenizer.json` (`hark fetch` puts tiny.en and base in
//! hark's cache); `NAME` ("tiny.en", "base", or anything else) picks the decoding options
//! measured for that model, or calibrates them at load. Files of any rate are resampled
//! to 16 kHz by linear interpolation (enough for an example; hark itself uses rubato).

use std::time::Instant;

use hark_whisper::{Decoder, Model, ModelPaths, RATE};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(name)) = (args.next(), args.next()) else {
        return Err("usage: transcribe MODEL_DIR NAME FILE.wav…".into());
    };
    let paths = ModelPaths {
        dir: dir.into(),
        name,
    };
    let started = Instant::now();
    let model = Model::load(&paths)?;
    eprintln!(
        "loaded {} ({} encoder layers) in {:.0} ms",
        model.name,
        model.weights.encoder,
        started.elapsed().as_secs_f64() * 1e3
    );
    let mut decoder = Decoder::new(model);
    for file in args {
        let audio = read(&file)?;
        let started = Instant::now();
        let decoded = decoder.decode(&audio, "", "");
        println!(
            "{file}\t{:.0} ms\t{}",
            started.elapsed().as_secs_f64() * 1e3,
            decoded.text
        );
    }
    Ok(())
}

/// The file's first channel as 16 kHz samples in [-1, 1].
fn read(file: &str) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let mut reader = hound::WavReader::open(file)?;
    let spec = reader.spec();
    let scale = match spec.sample_format {
        hound::SampleFormat::Int => 1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32,
        hound::SampleFormat::Float => 1.0,
    };
    let all: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Int => reader
            .samples::<i32>()
            .map(|s| s.map(|s| s as f32 * scale))
            .collect::<Result<_, _>>()?,
        hound::SampleFormat::Float => reader.samples::<f32>().collect::<Result<_, _>>()?,
    };
    let mono: Vec<f32> = all
        .chunks(spec.channels.max(1) as usize)
        .map(|frame| frame[0])
        .collect();
    let step = spec.sample_rate as f64 / RATE as f64;
    let out = (0..(mono.len() as f64 / step) as usize)
        .map(|i| {
            let at = i as f64 * step;
            let (j, frac) = (at as usize, (at.fract()) as f32);
            let next = mono.get(j + 1).copied().unwrap_or(mono[j]);
            mono[j] * (1.0 - frac) + next * frac
        })
        .collect();
    Ok(out)
}
