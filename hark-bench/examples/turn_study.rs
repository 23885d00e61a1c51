//! What smart-turn says where a turn detector would ask it: at the end of each clip and at
//! each pause inside it, and how long it takes.
//!
//! ```text
//! cargo run --release --example turn_study -- [DIR ...]   (default: the dev and study clips)
//!   QUIET=1   only the totals
//! ```
//!
//! Each DIR holds 16 kHz mono wavs and a `transcripts.tsv`. An earshot voice detector finds
//! the speech (16 ms frames, voiced at ≥ 0.5, runs under 64 ms ignored); the model hears
//! everything up to 200 ms into each pause of ≥ 200 ms, as pipecat asks it once its voice
//! detector has heard 200 ms of silence, and up to 200 ms after the last voiced frame for
//! the clip's end.

use std::path::PathBuf;
use std::time::Instant;

use hark::turn::features::LogMel;
use hark::turn::{self, TurnModel, TurnPaths};
use hark::wheel::{self, FetchOptions};

const FRAME: usize = 256;
const PAUSE_FRAMES: usize = 13; // 208 ms
const MIN_VOICE_FRAMES: usize = 4; // 64 ms
const ASK_AFTER: usize = 200 * 16; // samples

fn main() {
    let mut dirs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        let cache = wheel::default_cache_dir();
        dirs = vec![cache.join("clips"), cache.join("study-clips")];
    }
    let quiet = std::env::var_os("QUIET").is_some();

    let engine = wheel::ensure_engine(&FetchOptions::default()).expect("engine");
    let model = turn::ensure_model(&turn::fetch_options(wheel::default_cache_dir()))
        .expect("smart-turn model");
    let threads_before = threads();
    let t = Instant::now();
    let mut turn = TurnModel::load(&TurnPaths::new(model, &engine)).expect("load");
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let threads_loaded = threads();

    let mut times = Vec::new();
    // The features alone, timed apart (computed twice: the model call makes its own).
    let (mut mel, mut feature_times) = (LogMel::new(), Vec::new());
    let mut infer = |audio: &[f32]| {
        let t = Instant::now();
        mel.compute(audio);
        feature_times.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let p = turn.complete_probability(audio).expect("probability");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        p
    };

    for dir in &dirs {
        let tsv = std::fs::read_to_string(dir.join("transcripts.tsv")).unwrap_or_else(|e| {
            panic!("{}: {e}", dir.join("transcripts.tsv").display());
        });
        let (mut clips, mut ends_complete, mut whole_complete) = (0, 0, 0);
        let (mut pauses, mut pauses_incomplete) = (0, 0);
        for line in tsv.lines().filter(|l| !l.trim().is_empty()) {
            let name = line.split('\t').next().unwrap_or_default();
            let (clip, rate) = hark_bench::wav::read_mono_f32(&dir.join(name)).expect("wav");
            if rate != 16000 {
                eprintln!("skipping {name}: not 16 kHz");
                continue;
            }
            let voiced = voiced_frames(&clip);
            let Some(last) = voiced.iter().rposition(|&v| v) else {
                eprintln!("skipping {name}: no speech found");
                continue;
            };
            clips += 1;

            let mut at_pauses = Vec::new();
            let mut run = 0;
            let first = voiced.iter().position(|&v| v).unwrap_or(0);
            for (i, &v) in voiced.iter().enumerate().take(last).skip(first) {
                if v {
                    run = 0;
                    continue;
                }
                run += 1;
                if run == PAUSE_FRAMES {
                    let pause = (i + 1 - PAUSE_FRAMES) * FRAME;
                    let asked = pause + ASK_AFTER;
                    at_pauses.push((asked, infer(&clip[..asked])));
                }
            }
            let end = ((last + 1) * FRAME + ASK_AFTER).min(clip.len());
            let p_end = infer(&clip[..end]);
            let p_whole = infer(&clip);

            ends_complete += usize::from(p_end > 0.5);
            whole_complete += usize::from(p_whole > 0.5);
            pauses += at_pauses.len();
            pauses_incomplete += at_pauses.iter().filter(|(_, p)| *p <= 0.5).count();
            if !quiet {
                let inner: Vec<String> = at_pauses
                    .iter()
                    .map(|(at, p)| format!("{:.2}s:{p:.2}", *at as f64 / 16e3))
                    .collect();
                println!(
                    "{name:50} {:5.2}s end {:.2}s:{p_end:.3} whole {p_whole:.3} pauses [{}]",
                    clip.len() as f64 / 16e3,
                    end as f64 / 16e3,
                    inner.join(" ")
                );
            }
        }
        println!(
            "{}: {clips} clips; ends judged complete: {ends_complete}/{clips} (200 ms after the \
             speech), {whole_complete}/{clips} (whole clip); pauses judged incomplete: \
             {pauses_incomplete}/{pauses}",
            dir.display()
        );
    }

    let pct = |times: &mut Vec<f64>, q: f64| {
        times.sort_by(f64::total_cmp);
        times[((times.len() - 1) as f64 * q).round() as usize]
    };
    println!(
        "{} inferences: median {:.1} ms, p95 {:.1} ms, max {:.1} ms (features alone: median \
         {:.1} ms, p95 {:.1} ms); load {load_ms:.0} ms; threads {threads_before} before load, \
         {threads_loaded} after, {} after the runs",
        times.len(),
        pct(&mut times, 0.5),
        pct(&mut times, 0.95),
        pct(&mut times, 1.0),
        pct(&mut feature_times, 0.5),
        pct(&mut feature_times, 0.95),
        threads()
    );
}

/// Per 16 ms frame: voice, by earshot with a little dither (as hark's segmenter hears it),
/// with voiced runs shorter than 64 ms dropped as clicks.
fn voiced_frames(clip: &[f32]) -> Vec<bool> {
    let mut detector = earshot::Detector::default();
    let mut dither = 0x9e37_79b9u32;
    let mut heard = Vec::with_capacity(FRAME);
    let mut voiced: Vec<bool> = clip
        .chunks_exact(FRAME)
        .map(|frame| {
            heard.clear();
            for &x in frame {
                dither ^= dither << 13;
                dither ^= dither >> 17;
                dither ^= dither << 5;
                heard.push(x + 0.001 * (dither as f32 / u32::MAX as f32 - 0.5));
            }
            detector.predict_f32(&heard) >= 0.5
        })
        .collect();
    let mut i = 0;
    while i < voiced.len() {
        let len = voiced[i..].iter().take_while(|&&v| v).count();
        if len > 0 && len < MIN_VOICE_FRAMES {
            voiced[i..i + len].fill(false);
        }
        i += len.max(1);
    }
    voiced
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}
