//! Runs the real smart-turn model on real speech, alone and beside the Moonshine engine.
//!
//! Downloads the engine (~58 MB, for its onnxruntime) and pipecat's wheel (~12 MB, for the
//! model) into the cache dir on the first run and reuses them after, and the dev clips
//! (`hark_bench::fetch`).
//!
//! The probabilities pinned below are what pipecat 1.14.0's own Python code gives for the
//! same audio (`samples/turn-compare.py`) on a CPU with VNNI; hark's features match it to the
//! bit, so they differ only where onnxruntime's kernels do. They do on a CPU without VNNI
//! (AVX2 alone): its int8 products there (`VPMADDUBSW`, 16-bit sums that saturate) moved
//! whole jfk.wav from 0.80 to 0.63 (an AMD EPYC, AVX2). There only the decisions and a
//! looser bound are checked.

use hark_testkit::dirs;

use std::sync::OnceLock;
use std::time::Instant;

use dirs::cache_dir;
use hark::backend::moonshine::ffi::{self, Library, Transcriber};
use hark::turn::{self, TurnError, TurnModel, TurnPaths};
use hark::wheel::{self, EnginePaths, FetchOptions};

use crate::words;

/// Python's probability for whole jfk.wav ("... ask what you can do for your country.").
const JFK_WHOLE: f32 = 0.798_758_3;

/// Cuts of jfk.wav in the middle of its sentence, with pipecat's probability for each.
const JFK_CUTS: [(f64, &str, f32); 3] = [
    (4.8, "ask not |", 0.0177),
    (6.5, "ask not what your country |", 0.0619),
    (9.0, "ask what you can | do", 0.0191),
];

/// Leaves room for other CPUs' kernels; the decisions above are far from 0.5. Without VNNI,
/// onnxruntime's int8 kernels give other probabilities (see above): only a bound.
fn tolerance() -> f32 {
    if vnni() { 2e-3 } else { 0.2 }
}

/// Whether onnxruntime's int8 products here are VNNI's (exact 32-bit sums).
fn vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512vnni")
        || std::arch::is_x86_feature_detected!("avxvnni")
}

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
        (whole - JFK_WHOLE).abs() < tolerance(),
        "{whole} vs {JFK_WHOLE}"
    );

    for (secs, words, expected) in JFK_CUTS {
        let p = model.complete_probability(at(&jfk, secs)).expect("cut");
        eprintln!("jfk.wav cut at {secs} s ({words}): {p:.4}");
        assert!(p < 0.5, "cut at {secs} s ({words}) judged complete: {p}");
        assert!((p - expected).abs() < tolerance(), "{p} vs {expected}");
    }

    // Other ended sentences, other voices.
    for (name, expected) in [("goforward.wav", 0.984_259_5), ("beckett.wav", 0.954_034_7)] {
        let p = model.complete_probability(&read_clip(name)).expect(name);
        eprintln!("{name} whole: {p:.4}");
        assert!(p > 0.5, "{name} judged incomplete: {p}");
        assert!(
            (p - expected).abs() < tolerance(),
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
        let bound = if vnni() { 0.1 } else { 0.2 };
        assert!((p - expected).abs() < bound, "x {gain}: {p} vs {expected}");
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

/// The server may run both: libmoonshine.so and ort must keep working side by side, from
/// two threads at once.
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
            assert!((p - JFK_WHOLE).abs() < tolerance(), "{p} vs {JFK_WHOLE}");
        }
        heard.join().expect("transcriber thread")
    });
    for t in &text {
        assert!(t.contains("what your country can do for you"), "{t:?}");
    }

    // At most two copies of onnxruntime in the process: Moonshine's own, and the
    // onnxruntime wheel's where a Whisper engine of this binary loaded the turn model first
    // (ort keeps the first it loads; each copy keeps its own symbols).
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let copies: std::collections::BTreeSet<&str> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("libonnxruntime"))
        .collect();
    assert!((1..=2).contains(&copies.len()), "{copies:?}");
}

/// What the server (Whisper; the profile `turn` with the turn model, `silence` with neither
/// the model nor the words hold) sent for jfk.wav with `pause`
/// seconds of silence put in at `cut` seconds, on the customer's channel of a 16 kHz call
/// whose URL carries `query`: each customer final with the seconds of silence sent after
/// the cut before it came (negative: before the cut's audio was all sent).
async fn jfk_with_a_pause(query: &str, cut: f64, pause: f64) -> Vec<(f64, String)> {
    use hark_testkit::{TestServer, config_with_default_backend, whisper_registry};
    let mut config = config_with_default_backend("whisper");
    // The same engine with the model on: a pause ends an utterance when the turn is over.
    let turn_model = hark::backend::Options {
        turn_model: Some(true),
        ..Default::default()
    };
    crate::whisper_profile(&mut config, "turn", turn_model);
    // Neither the model nor the words hold: silence alone ends an utterance. (The default
    // profile holds a pause whose words go on, and Whisper may write "country," there.)
    let silence = hark::backend::Options {
        hold_unfinished: Some(false),
        ..Default::default()
    };
    crate::whisper_profile(&mut config, "silence", silence);
    let server = TestServer::start(config, whisper_registry()).await;
    let (jfk, rate) = dirs::read_clip("jfk.wav");
    assert_eq!(rate, crate::turns::RATE, "jfk.wav is a 16 kHz recording");
    let jfk: Vec<i16> = jfk.iter().map(|x| (x * 32767.0) as i16).collect();
    let at = ((cut * f64::from(rate)) as usize).min(jfk.len());
    crate::turns::pause_between(&server, query, &jfk[..at], pause, Some(&jfk[at..])).await
}

/// "ask not what your country | can do for you": the model hears the speaker pausing, not
/// done, so the server holds the utterance through 0.7 s of silence (more than three
/// endpoints) and the words after the pause join the same final. On silence alone the
/// pause ends the utterance: its final, ending in a period, would let the assistant answer.
/// The turn model through the server, one call at a time: the engine is shared with this
/// binary's other tests, which each take their share of it.
#[tokio::test(flavor = "multi_thread")]
async fn pauses_are_held_joined_and_ended_as_the_turn_model_hears_them() {
    a_pause_judged_unfinished_is_held_and_the_words_after_it_join_one_final().await;
    a_held_pause_ends_at_the_hold_with_a_period().await;
    a_finished_turn_ends_at_once().await;
}

async fn a_pause_judged_unfinished_is_held_and_the_words_after_it_join_one_final() {
    let finals = jfk_with_a_pause("/turn?max_turn_silence_ms=3000", 6.5, 0.7).await;
    let joined = finals
        .iter()
        .find(|(_, f)| words(f).contains("country can do for you"));
    assert!(joined.is_some(), "no final spans the pause: {finals:?}");
    assert!(
        finals.iter().all(|(after, _)| *after < 0.0 || *after > 0.7),
        "a final came during the pause: {finals:?}"
    );

    // The same call with silence alone: the pause is an endpoint, so the words either side
    // of it go in different finals. (Not when that final comes: beside the binary's other
    // tests the decoders may take longer than the pause.)
    let finals = jfk_with_a_pause("/silence?max_turn_silence_ms=3000", 6.5, 0.7).await;
    assert!(
        !finals
            .iter()
            .any(|(_, f)| words(f).contains("country can do")),
        "on silence alone the pause ends a final: {finals:?}"
    );
    assert!(
        finals.iter().any(|(after, _)| *after >= 0.0),
        "no final after the cut: {finals:?}"
    );
}

/// A held pause that goes on ends at `max_turn_silence_ms`, never before, and its final
/// ends in a period so that the platform answers at once.
async fn a_held_pause_ends_at_the_hold_with_a_period() {
    let finals = jfk_with_a_pause("/turn?max_turn_silence_ms=1500", 6.5, 2.5).await;
    let (after, text) = finals
        .iter()
        .find(|(after, _)| (0.0..2.5).contains(after))
        .unwrap_or_else(|| panic!("no final ended the pause: {finals:?}"));
    assert!(*after >= 1.5, "ended before the hold: {after} s");
    assert!(text.ends_with(['.', '?', '!']), "{text:?}");
}

/// A finished sentence followed by silence: the model hears the turn's end and the final
/// goes at the endpoint, ending in a period, long before the 5 s hold would release it.
async fn a_finished_turn_ends_at_once() {
    let finals = jfk_with_a_pause("/turn?max_turn_silence_ms=5000", 11.0, 0.0).await;
    let (after, text) = finals
        .last()
        .unwrap_or_else(|| panic!("no final: {finals:?}"));
    assert!(words(text).ends_with("for your country"), "{finals:?}");
    assert!(text.ends_with(['.', '?', '!']), "{text:?}");
    assert!(*after < 3.0, "held as if unfinished: {after} s");
}

/// A turn model that cannot load (here a damaged model in the cache) stops the engine from
/// loading, with the reason: the server refuses calls (not ready) and says why rather than
/// end finals on silence alone.
#[test]
fn a_turn_model_that_cannot_load_is_refused_with_its_reason() {
    let cache = tempfile::tempdir().unwrap();
    // The runtime as the server fetches it, the model's folder complete but damaged.
    let runtime = turn::ensure_runtime(&turn::runtime_fetch_options(cache_dir()))
        .unwrap_or_else(|e| panic!("{e}"));
    let runtime_dir = runtime.parent().unwrap();
    std::os::unix::fs::symlink(
        runtime_dir,
        cache.path().join(runtime_dir.file_name().unwrap()),
    )
    .unwrap();
    let model = turn::ensure_model(&turn::fetch_options(cache_dir())).unwrap();
    let model_dir = cache
        .path()
        .join(model.parent().unwrap().file_name().unwrap());
    std::fs::create_dir(&model_dir).unwrap();
    for entry in std::fs::read_dir(model.parent().unwrap()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), model_dir.join(entry.file_name())).unwrap();
    }
    std::fs::write(model_dir.join(model.file_name().unwrap()), b"not a model").unwrap();

    let config = hark::backend::whisper::WhisperConfig {
        cache_dir: Some(cache.path().to_path_buf()),
        ..hark_testkit::whisper_config()
    };
    let err = match hark::backend::whisper::load(&config, true) {
        Ok(_) => panic!("loaded with a damaged turn model"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("end-of-turn model") && err.contains("smart-turn"),
        "{err}"
    );
    // Turned off, nothing of it is read: the engine loads (from the shared cache).
    let off = hark::backend::whisper::WhisperConfig {
        turn_model: false,
        ..hark_testkit::whisper_config()
    };
    assert!(hark::backend::whisper::load(&off, false).is_ok());
}
