//! Runs the real Moonshine engine on a real recording.
//!
//! Downloads the engine into the cache dir on the first run (~58 MB) and reuses it after.
//! Fetches the dev clips once too (`hark_bench::fetch`).

use hark_testkit::dirs;

use std::sync::Arc;
use std::time::{Duration, Instant};

use dirs::{cache_dir, read_clip};
use hark::backend::moonshine::ffi::{self, Library, Line, Transcriber};
use hark::wheel::{self, FetchOptions};

/// The key line of the recording. tiny-en hears its first word as "As" in one-shot mode
/// ("As not. What your country can do for you?"), so it is left out of the match.
const KEY_PHRASE: &str = "not what your country can do for you";

/// Lowercase words only, so that casing and punctuation do not matter.
fn normalise(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn joined(lines: &[Line]) -> String {
    lines
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn proc_status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field).map(|v| v.trim().to_owned()))
        .unwrap_or_else(|| "?".into())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn load_engine() -> (Arc<Library>, Transcriber) {
    let opts = FetchOptions {
        cache_dir: cache_dir(),
        progress: true,
        ..FetchOptions::default()
    };
    let t = Instant::now();
    let paths = wheel::ensure_engine(&opts).expect("Moonshine engine");
    eprintln!(
        "ensure_engine: {:.1} ms ({})",
        ms(t.elapsed()),
        paths.root.display()
    );

    let threads_before = proc_status("Threads:");
    let rss_before = proc_status("VmRSS:");
    let t = Instant::now();
    let lib = Library::load(&paths.lib).expect("load libmoonshine.so");
    eprintln!(
        "Library::load: {:.1} ms, version {}",
        ms(t.elapsed()),
        lib.version()
    );
    let t = Instant::now();
    let transcriber = Transcriber::load(lib.clone(), &paths.model_dir, ffi::ARCH_TINY, &[])
        .expect("load tiny-en");
    eprintln!(
        "Transcriber::load (tiny-en): {:.1} ms; threads {threads_before} -> {}; \
         VmRSS {rss_before} -> {}",
        ms(t.elapsed()),
        proc_status("Threads:"),
        proc_status("VmRSS:"),
    );
    (lib, transcriber)
}

#[test]
fn transcribes_jfk_batch_and_streaming() {
    let (samples, rate) = read_clip("jfk.wav");
    let audio_secs = samples.len() as f64 / f64::from(rate);
    eprintln!("jfk.wav: {audio_secs:.2} s at {rate} Hz");
    let (_lib, transcriber) = load_engine();

    // (a) One call over the whole recording.
    let t = Instant::now();
    let lines = transcriber
        .transcribe_without_streaming(&samples, rate)
        .expect("batch transcription");
    let batch = t.elapsed();
    eprintln!(
        "batch: {:.1} ms (RTF {:.3}), threads now {}",
        ms(batch),
        batch.as_secs_f64() / audio_secs,
        proc_status("Threads:")
    );
    for line in &lines {
        eprintln!("  batch line: {line:?}");
    }
    let text = normalise(&joined(&lines));
    assert!(text.contains(KEY_PHRASE), "batch transcript: {text:?}");

    // (b) 20 ms frames, an update every 0.5 s, as a live session would.
    let frame = rate as usize / 50;
    let frames_per_update = 25;
    let stream = transcriber.create_stream().expect("create stream");
    let mut add_cost = Duration::ZERO;
    let mut update_costs = Vec::new();
    let mut saw_partial_before_complete = false;
    let mut saw_complete = false;
    let started = Instant::now();
    for (i, chunk) in samples.chunks(frame).enumerate() {
        let t = Instant::now();
        transcriber
            .add_audio(stream, chunk, rate)
            .expect("add audio");
        add_cost += t.elapsed();
        if (i + 1) % frames_per_update != 0 {
            continue;
        }
        let t = Instant::now();
        let lines = transcriber
            .transcribe_stream(stream, 0)
            .expect("transcribe stream");
        update_costs.push(t.elapsed());
        let at = (i + 1) as f64 * frame as f64 / f64::from(rate);
        for line in &lines {
            eprintln!(
                "  {at:5.2}s [{:6.1} ms] id={} complete={} updated={} new={} changed={} \
                 start={:.2} dur={:.2} lat={}ms {:?}",
                ms(update_costs[update_costs.len() - 1]),
                line.id,
                line.is_complete,
                line.is_updated,
                line.is_new,
                line.has_text_changed,
                line.start_time,
                line.duration,
                line.last_transcription_latency_ms,
                line.text
            );
        }
        if lines.iter().any(|l| !l.is_complete && !l.text.is_empty()) && !saw_complete {
            saw_partial_before_complete = true;
        }
        saw_complete |= lines.iter().any(|l| l.is_complete);
    }
    // stop_stream drops audio not yet decoded, so decode the tail first.
    let t = Instant::now();
    transcriber
        .transcribe_stream(stream, ffi::FLAG_FORCE_UPDATE)
        .expect("flush");
    transcriber.stop_stream(stream).expect("stop stream");
    let final_lines = transcriber
        .transcribe_stream(stream, 0)
        .expect("final transcribe");
    let final_cost = t.elapsed();
    let wall = started.elapsed();
    for line in &final_lines {
        eprintln!("  final line: {line:?}");
    }
    transcriber.free_stream(stream).expect("free stream");

    let total_updates: Duration = update_costs.iter().sum();
    let max_update = update_costs.iter().max().copied().unwrap_or_default();
    eprintln!(
        "streaming: {} updates, mean {:.1} ms, max {:.1} ms; final {:.1} ms; add_audio total \
         {:.2} ms; all calls {:.1} ms (RTF {:.3}), VmRSS {}",
        update_costs.len(),
        ms(total_updates) / update_costs.len().max(1) as f64,
        ms(max_update),
        ms(final_cost),
        ms(add_cost),
        ms(wall),
        wall.as_secs_f64() / audio_secs,
        proc_status("VmRSS:")
    );

    assert!(
        saw_partial_before_complete,
        "no partial (incomplete line with text) was reported before the first completion"
    );
    assert!(
        final_lines.iter().all(|l| l.is_complete),
        "after stop every line should be complete: {final_lines:?}"
    );
    let complete: Vec<Line> = final_lines.into_iter().filter(|l| l.is_complete).collect();
    let text = normalise(&joined(&complete));
    for word in ["americans", "ask", "country", "do", "for", "you"] {
        assert!(
            text.split(' ').any(|w| w == word),
            "{word:?} missing from {text:?}"
        );
    }
}

/// Audio that ends mid-word: the tail must survive the end of the stream.
#[test]
fn finish_stream_keeps_the_tail() {
    let (samples, rate) = read_clip("jfk.wav");
    // Cut 0.3 s after the last regular update, inside "... for your country".
    let cut = &samples[..rate as usize * 103 / 10];
    let (_lib, transcriber) = load_engine();

    let run = |finish: &dyn Fn(ffi::StreamId) -> Vec<Line>| {
        let stream = transcriber.create_stream().expect("create stream");
        for (i, chunk) in cut.chunks(rate as usize / 50).enumerate() {
            transcriber.add_audio(stream, chunk, rate).expect("add");
            if (i + 1) % 25 == 0 {
                transcriber.transcribe_stream(stream, 0).expect("update");
            }
        }
        let lines = finish(stream);
        transcriber.free_stream(stream).expect("free");
        normalise(&joined(&lines))
    };

    let naive = run(&|s| {
        transcriber.stop_stream(s).expect("stop");
        transcriber.transcribe_stream(s, 0).expect("final")
    });
    let finished = run(&|s| transcriber.finish_stream(s).expect("finish"));
    eprintln!("stop then transcribe: {naive:?}\nfinish_stream:        {finished:?}");
    assert!(
        finished.ends_with("for your country"),
        "finish_stream lost the tail: {finished:?}"
    );
}

/// Telephone-rate audio: does the library take 8 kHz directly?
#[test]
fn accepts_8khz_audio() {
    let (samples, rate) = read_clip("jfk.wav");
    assert_eq!(rate, 16000);
    // Crude 2:1 decimation with a two-tap average; good enough to show the rate is accepted.
    let narrow: Vec<f32> = samples
        .chunks(2)
        .map(|p| p.iter().sum::<f32>() / 2.0)
        .collect();
    let (_lib, transcriber) = load_engine();

    let t = Instant::now();
    let lines = transcriber
        .transcribe_without_streaming(&narrow, 8000)
        .expect("8 kHz batch");
    eprintln!(
        "8 kHz batch: {:.1} ms: {:?}",
        ms(t.elapsed()),
        joined(&lines)
    );
    let text = normalise(&joined(&lines));
    assert!(text.contains("your country"), "8 kHz transcript: {text:?}");

    let stream = transcriber.create_stream().expect("create stream");
    for (i, chunk) in narrow.chunks(160).enumerate() {
        transcriber
            .add_audio(stream, chunk, 8000)
            .expect("add 8 kHz audio");
        if (i + 1) % 25 == 0 {
            transcriber.transcribe_stream(stream, 0).expect("update");
        }
    }
    let lines = transcriber.finish_stream(stream).expect("finish");
    eprintln!("8 kHz stream: {:?}", joined(&lines));
    assert!(normalise(&joined(&lines)).contains("your country"));
    // Left open on purpose: dropping the transcriber must free it.
}
