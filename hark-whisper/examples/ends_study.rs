//! How well the model's own sentence ending tells a pause inside a turn from the turn's
//! end: for each clip of a set with `pauses.tsv` (FILE, then `start_ms-end_ms[,…]`, as
//! `samples/make-turn-clips.sh` and `samples/make-paused-clips.py` write them), decodes the
//! audio up to each pause's start plus `AFTER_MS` of the pause, and up to the clip's last
//! voice plus the same, and prints [`hark_whisper::Decoded::ends`] for each, then the area
//! under the ROC curve of ends against pauses (0.5: chance).
//!
//! ```text
//! cargo run --release -p hark-whisper --example ends_study -- MODEL_DIR NAME CLIPS_DIR [AFTER_MS]
//! ```

use std::collections::HashMap;

use hark_whisper::{Decoder, Model, ModelPaths, RATE};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(name), Some(clips)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: ends_study MODEL_DIR NAME CLIPS_DIR [AFTER_MS]".into());
    };
    let after_ms: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    let model = Model::load(&ModelPaths {
        dir: dir.into(),
        name,
    })?;
    let mut decoder = Decoder::new(model);
    let clips = std::path::Path::new(&clips);
    let listed = std::fs::read_to_string(clips.join("pauses.tsv"))?;
    let mut pauses: HashMap<String, Vec<usize>> = HashMap::new();
    for line in listed.lines() {
        let Some((file, spans)) = line.split_once('\t') else {
            continue;
        };
        let starts = spans
            .split(',')
            .filter_map(|s| s.split_once('-')?.0.trim().parse().ok())
            .collect();
        pauses.insert(file.to_owned(), starts);
    }
    let after = after_ms * RATE / 1000;
    let (mut at_pauses, mut at_ends) = (Vec::new(), Vec::new());
    let mut files: Vec<&String> = pauses.keys().collect();
    files.sort();
    for file in files {
        let audio = read(&clips.join(file))?;
        for &start_ms in &pauses[file] {
            let cut = (start_ms * RATE / 1000 + after).min(audio.len());
            let d = decoder.decode_final(&audio[..cut], "", "");
            println!("pause\t{file}\t{start_ms}\t{:?}\t{}", d.ends, d.text);
            if let Some(p) = d.ends {
                at_pauses.push(p);
            }
        }
        let cut = (last_voice(&audio) + after).min(audio.len());
        let d = decoder.decode_final(&audio[..cut], "", "");
        println!(
            "end\t{file}\t{}\t{:?}\t{}",
            cut * 1000 / RATE,
            d.ends,
            d.text
        );
        if let Some(p) = d.ends {
            at_ends.push(p);
        }
    }
    let median = |v: &mut Vec<f32>| {
        v.sort_by(f32::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f32::NAN)
    };
    let auc = auc(&at_ends, &at_pauses);
    println!(
        "pauses {} (median {:.3}), ends {} (median {:.3}), AUC {auc:.3}",
        at_pauses.len(),
        median(&mut at_pauses),
        at_ends.len(),
        median(&mut at_ends),
    );
    Ok(())
}

/// The probability that an end scores above a pause (ties count half).
fn auc(ends: &[f32], pauses: &[f32]) -> f64 {
    let mut wins = 0.0;
    for e in ends {
        for p in pauses {
            wins += match e.total_cmp(p) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            };
        }
    }
    wins / (ends.len() * pauses.len()).max(1) as f64
}

/// The sample after the last 10 ms frame whose level is over 30 % of the way from the
/// clip's quiet (5th percentile) to its loudest, in dB (`samples/make-paused-clips.py`'s
/// rule).
fn last_voice(audio: &[f32]) -> usize {
    let n = RATE / 100;
    let levels: Vec<f32> = audio
        .chunks(n)
        .map(|f| 10.0 * (f.iter().map(|s| s * s).sum::<f32>() / f.len() as f32 + 1e-10).log10())
        .collect();
    let mut sorted = levels.clone();
    sorted.sort_by(f32::total_cmp);
    let (Some(&floor), Some(&peak)) = (sorted.get(sorted.len() / 20), sorted.last()) else {
        return audio.len();
    };
    let threshold = floor + 0.3 * (peak - floor);
    levels
        .iter()
        .rposition(|&l| l > threshold)
        .map_or(audio.len(), |i| (i + 1) * n)
}

/// The file's first channel as 16 kHz samples in [-1, 1] (the sets are 16 kHz).
fn read(file: &std::path::Path) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let mut reader = hound::WavReader::open(file)?;
    let spec = reader.spec();
    if spec.sample_rate as usize != RATE {
        return Err(format!("{}: {} Hz, not {RATE}", file.display(), spec.sample_rate).into());
    }
    let channels = spec.channels.max(1) as usize;
    let samples: Vec<i32> = reader.samples::<i32>().collect::<Result<_, _>>()?;
    let scale = 1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32;
    Ok(samples
        .chunks(channels)
        .map(|f| f[0] as f32 * scale)
        .collect())
}
