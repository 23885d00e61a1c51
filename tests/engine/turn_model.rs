//! Runs the real smart-turn model on real speech, alone and beside the Moonshine engine.
//!
//! Downloads the engine (~58 MB, for its onnxruntime) and pipecat's wheel (~12 MB, for the
//! model) into the cache dir on the first run and reuses them after, and the dev clips
//! (`hark_bench::fetch`).
//!
//! The probabilities pinned below are what pipecat 1.14.0's own Python code gives for the
//! same audio (`samples/turn-compare.py`); hark's features match it to the bit, so they
//! differ only if onnxruntime's kernels round differently on another CPU.

use hark_testkit::dirs;

use std::sync::OnceLock;
use std::time::Instant;

use dirs::cache_dir;
use hark::backend::moonshine::ffi::{self, Library, Transcriber};
use hark::turn::{self, TurnError, TurnModel, TurnPaths};
use hark::wheel::{self, EnginePaths, FetchOptions};

/// Python's probability for whole jfk.wav ("... ask what you can do for your country.").
const JFK_WHOLE: f32 = 0.798_758_3;

/// Cuts of jfk.wav in the middle of its sentence, with pipecat's probability for each.
const JFK_CUTS: [(f64, &str, f32); 3] = [
    (4.8, "ask not |", 0.0177),
    (6.5, "ask not what your country |", 0.0619),
    (9.0, "ask what you can | do", 0.0191),
];

/// Leaves room for other CPUs' kernels; the decisions above are far from 0.5.
const TOLERANCE: f32 = 2e-3;

/// A 16 kHz dev clip, as the model takes it.
fn read_clip(name: &str) -> Vec<f32> {
    let (samples, rate) = dirs::read_clip(name);
    assert_eq!(rate, 16_000, "{name}");
    samples
}

/// The engine first, as the server loads them, whatever order the tests run in.
fn engine() -> &'static (EnginePaths, TurnPaths) {
    static PATHS: OnceLock<(EnginePaths, TurnPaths)> = OnceLock::new();
    PATHS.get_or_init(|| {
        let opts = FetchOptions {
            cache_dir: cache_dir(),
            ..FetchOptions::default()
        };
        let engine = wheel::ensure_engine(&opts).unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        let model =
            turn::ensure_model(&turn::fetch_options(cache_dir())).unwrap_or_else(|e| panic!("{e}"));
        eprintln!(
            "ensure_model: {:.1} ms ({})",
            t.elapsed().as_secs_f64() * 1e3,
            model.display()
        );
        let paths = TurnPaths::new(model, &engine);
        (engine, paths)
    })
}

fn load() -> TurnModel {
    let (_, paths) = engine();
    let t = Instant::now();
    let model = TurnModel::load(paths).expect("load the turn model");
    eprintln!("TurnModel::load: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    model
}

fn at(clip: &[f32], secs: f64) -> &[f32] {
    &clip[..((secs * 16000.0) as usize).min(clip.len())]
}

#[test]
fn ended_sentence_is_complete_and_cut_one_is_not() {
    let jfk = read_clip("jfk.wav");
    let mut model = load();

    let t = Instant::now();
    let whole = model.complete_probability(&jfk).expect("whole clip");
    eprintln!(
        "jfk.wav whole: {whole:.4} ({:.1} ms)",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert!(whole > 0.5, "the ended sentence judged incomplete: {whole}");
    assert!(
        (whole - JFK_WHOLE).abs() < TOLERANCE,
        "{whole} vs {JFK_WHOLE}"
    );

    for (secs, words, expected) in JFK_CUTS {
        let p = model.complete_probability(at(&jfk, secs)).expect("cut");
        eprintln!("jfk.wav cut at {secs} s ({words}): {p:.4}");
        assert!(p < 0.5, "cut at {secs} s ({words}) judged complete: {p}");
        assert!((p - expected).abs() < TOLERANCE, "{p} vs {expected}");
    }

    // Other ended sentences, other voices.
    for (name, expected) in [("goforward.wav", 0.984_259_5), ("beckett.wav", 0.954_034_7)] {
        let p = model.complete_probability(&read_clip(name)).expect(name);
        eprintln!("{name} whole: {p:.4}");
        assert!(p > 0.5, "{name} judged incomplete: {p}");
        assert!(
            (p - expected).abs() < TOLERANCE,
            "{name}: {p} vs {expected}"
        );
    }
}

#[test]
fn odd_input_gives_an_answer_or_a_clear_error() {
    let jfk = read_clip("jfk.wav");
    let mut model = load();

    assert!(matches!(
        model.complete_probability(&[]),
        Err(TurnError::NoAudio)
    ));

    let mut spoiled = jfk.clone();
    spoiled[jfk.len() - 100] = f32::NAN;
    let err = model.complete_probability(&spoiled).unwrap_err();
    assert!(
        matches!(err, TurnError::NotFinite { index } if index == jfk.len() - 100),
        "{err}"
    );
    assert!(err.to_string().contains("not a finite number"), "{err}");
    spoiled[jfk.len() - 100] = f32::INFINITY;
    assert!(model.complete_probability(&spoiled).is_err());

    // Only the last 8 s count: a NaN before them, or any audio there, changes nothing.
    let last8 = &jfk[jfk.len() - 8 * 16000..];
    let expected = model.complete_probability(last8).unwrap();
    spoiled[jfk.len() - 100] = jfk[jfk.len() - 100];
    spoiled[10] = f32::NAN;
    assert_eq!(model.complete_probability(&spoiled).unwrap(), expected);
    assert_eq!(model.complete_probability(&jfk).unwrap(), expected);

    // The level hardly matters (the audio is normalised), even far outside [-1, 1]. Not
    // at all, were the model not quantised: features that differ in the 6th digit move its
    // answer by a few hundredths (here 0.799 -> 0.765).
    for gain in [50.0, 0.1] {
        let scaled: Vec<f32> = jfk.iter().map(|x| x * gain).collect();
        let p = model.complete_probability(&scaled).unwrap();
        eprintln!("jfk.wav whole x {gain}: {p:.4}");
        assert!((p - expected).abs() < 0.1, "x {gain}: {p} vs {expected}");
    }

    for (what, audio) in [
        ("silence", vec![0.0; 16000]),
        ("one sample", vec![0.5]),
        ("a minute of silence", vec![0.0; 60 * 16000]),
    ] {
        let p = model.complete_probability(&audio).expect(what);
        eprintln!("{what}: {p:.4}");
        assert!((0.0..=1.0).contains(&p), "{what}: {p}");
    }
}

/// The server runs both: libmoonshine.so and ort must share one onnxruntime, and both must
/// keep working side by side, from two threads at once.
#[test]
fn shares_onnxruntime_with_moonshine() {
    let (engine, _) = engine();
    let jfk = read_clip("jfk.wav");
    let lib = Library::load(&engine.lib).expect("load libmoonshine.so");
    let transcriber =
        Transcriber::load(lib, &engine.model_dir, ffi::ARCH_TINY, &[]).expect("load tiny-en");
    let mut model = load();

    let text = std::thread::scope(|s| {
        let jfk = &jfk;
        let heard = s.spawn(move || {
            (0..2)
                .map(|_| {
                    let lines = transcriber
                        .transcribe_without_streaming(jfk, 16000)
                        .expect("transcribe");
                    ffi::joined_text(&lines).to_lowercase()
                })
                .collect::<Vec<_>>()
        });
        for _ in 0..3 {
            let p = model.complete_probability(jfk).expect("turn");
            assert!((p - JFK_WHOLE).abs() < TOLERANCE, "{p} vs {JFK_WHOLE}");
        }
        heard.join().expect("transcriber thread")
    });
    for t in &text {
        assert!(t.contains("what your country can do for you"), "{t:?}");
    }

    // One copy of onnxruntime in the process, not two.
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let copies: std::collections::BTreeSet<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("libonnxruntime"))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
}
