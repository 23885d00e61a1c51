//! `hark bench --corpus DIR` on a real hark on loopback: the user's mono utterances at other
//! rates and formats, a stereo real call split into its utterances per channel, the same
//! call through a phone line, and a broken folder reported in one error.

use std::path::{Path, PathBuf};

use hark_bench::conversation::Corpus;
use hark_bench::protocol::Channel;
use hark_bench::user_corpus::Speech;
use hark_bench::{BenchArgs, measure};
use hark_testkit::{Clip, TestServer, clips, moonshine_registry, resample};

fn args(url: String, duration: f64) -> BenchArgs {
    BenchArgs {
        url,
        calls: 1,
        duration,
        max_calls: 1,
        seed: 5,
        ..BenchArgs::default()
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hark-user-corpus-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `planes` (equal length) at `rate` as 16-bit PCM, or 32-bit float with `float`.
fn write_wav(path: &Path, rate: u32, planes: &[&[i16]], float: bool) {
    let spec = hound::WavSpec {
        channels: planes.len() as u16,
        sample_rate: rate,
        bits_per_sample: if float { 32 } else { 16 },
        sample_format: if float {
            hound::SampleFormat::Float
        } else {
            hound::SampleFormat::Int
        },
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..planes[0].len() {
        for p in planes {
            if float {
                w.write_sample(f32::from(p[i]) / 32768.0).unwrap();
            } else {
                w.write_sample(p[i]).unwrap();
            }
        }
    }
    w.finalize().unwrap();
}

fn clip<'a>(all: &'a [Clip], name: &str) -> &'a Clip {
    all.iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("dev clip {name}"))
}

/// The dev clips and the built-in assistant prompts (`assistant.tsv`).
fn all_clips() -> Vec<Clip> {
    let mut all = clips();
    let corpus = Corpus::load(&builtin().expect("built-in clips")).expect("corpus loads");
    all.extend(corpus.assistant.into_iter().map(|r| Clip {
        name: r.name,
        rate: r.rate,
        samples: r.samples,
        reference: r.reference,
    }));
    all
}

fn builtin() -> anyhow::Result<PathBuf> {
    Ok(hark_bench::fetch::clips_dir(None)?)
}

const CUSTOMER: [&str; 3] = [
    "goforward.wav",
    "sense_and_sensibility_01_austen_64kb-0880.wav",
    "sense_and_sensibility_01_austen_64kb-0930.wav",
];
const ASSISTANT: [&str; 2] = ["assistant-1.wav", "assistant-4.wav"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mono_utterances_at_any_rate_play_as_customer_turns() {
    let all = clips();
    let dir = temp_dir("mono");
    let mut tsv = String::from("# my utterances\n\n");
    for (i, (name, rate, float)) in [
        (CUSTOMER[0], 44100, true),
        (CUSTOMER[1], 8000, false),
        (CUSTOMER[2], 22050, false),
    ]
    .into_iter()
    .enumerate()
    {
        let c = clip(&all, name);
        let file = format!("u{i}.wav");
        write_wav(
            &dir.join(&file),
            rate,
            &[&resample(&c.samples, c.rate, rate)],
            float,
        );
        tsv.push_str(&format!("{file}\t{}\n", c.reference));
    }
    std::fs::write(dir.join("transcripts.tsv"), tsv).unwrap();
    std::fs::write(dir.join("notes.txt"), "not listed, ignored").unwrap();

    let speech = Speech::load_user(&dir, builtin).expect("the corpus loads");
    let Speech::Turns(corpus) = &speech else {
        panic!("mono files are utterances")
    };
    assert_eq!(corpus.customer.len(), 3);
    assert!(!corpus.assistant.is_empty(), "the built-in assistant turns");

    let server = TestServer::start(hark_testkit::moonshine_config(), moonshine_registry()).await;
    let a = args(server.ws_url("/api/custom-transcriber"), 14.0);
    let report = measure(&a, &speech, 1).await.expect("bench runs");
    assert_eq!(report.failed_calls, 0, "{:?}", report.per_call[0].errors);
    let utts = &report.per_call[0].utterances;
    assert!(
        utts.iter()
            .filter(|u| u.channel == Channel::Customer)
            .count()
            >= 2
    );
    for u in utts {
        assert!(u.time_to_final_ms.is_some(), "no final for {}", u.recording);
        if u.channel == Channel::Customer {
            assert!(u.recording.starts_with('u'), "{}", u.recording);
        }
    }
    assert!(report.customer.words > 0);
    assert!(
        report.customer.wer < 0.25,
        "customer WER {}",
        report.customer.wer
    );
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

/// A real call: the customer's clips on channel 0 and the assistant's on channel 1, taking
/// turns, with the customer speaking twice across a long pause, and each side's faint echo
/// (-40 dB) on the other channel. Returns the folder and where each side's clips are.
fn real_call(all: &[Clip]) -> (PathBuf, [Vec<(usize, usize)>; 2]) {
    let rate = 48000;
    let dir = temp_dir("call");
    let mut planes = [Vec::<i16>::new(), Vec::new()];
    let mut placed = [Vec::new(), Vec::new()];
    let pause = |planes: &mut [Vec<i16>; 2], secs: f64| {
        let n = planes[0].len() + (secs * f64::from(rate)) as usize;
        planes[0].resize(n, 0);
        planes[1].resize(n, 0);
    };
    pause(&mut planes, 0.6);
    let turns = [
        (0, CUSTOMER[0], 1.0),
        (1, ASSISTANT[0], 1.2),
        (0, CUSTOMER[1], 3.0), // the long pause: the customer goes on after it
        (0, CUSTOMER[2], 0.9),
        (1, ASSISTANT[1], 1.5),
    ];
    for (channel, name, after) in turns {
        let c = clip(all, name);
        let samples = resample(&c.samples, c.rate, rate);
        let start = planes[channel].len();
        placed[channel].push((start, start + samples.len()));
        for &s in &samples {
            planes[channel].push(s);
            planes[1 - channel].push(s / 100);
        }
        pause(&mut planes, after);
    }
    let refs = |channel: usize| {
        turns
            .iter()
            .filter(|t| t.0 == channel)
            .map(|t| clip(all, t.1).reference.clone())
            .collect::<Vec<_>>()
            .join(" ")
    };
    write_wav(
        &dir.join("call.wav"),
        rate,
        &[&planes[0], &planes[1]],
        false,
    );
    std::fs::write(
        dir.join("transcripts.tsv"),
        format!("call.wav\t{}\t{}\n", refs(0), refs(1)),
    )
    .unwrap();
    (dir, placed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stereo_real_call_is_measured_per_utterance_and_channel() {
    let all = all_clips();
    let (dir, placed) = real_call(&all);
    let speech = Speech::load_user(&dir, || panic!("a real call needs no built-in clips"))
        .expect("the call loads");
    let Speech::Calls(calls) = &speech else {
        panic!("a stereo file is a real call")
    };
    assert_eq!(calls.len(), 1);
    for channel in 0..2 {
        let found = &calls[0].utterances[channel];
        assert_eq!(
            found.len(),
            placed[channel].len(),
            "channel {channel}: found {found:?}, placed {:?}",
            placed[channel]
        );
        // Each found utterance lies within the clip placed there (to a 10 ms window).
        let slack = 480;
        for (&(on, off), &(start, end)) in found.iter().zip(&placed[channel]) {
            assert!(
                on + slack >= start && off <= end + slack && off > on,
                "{found:?} vs {placed:?}"
            );
        }
    }

    let server = TestServer::start(hark_testkit::moonshine_config(), moonshine_registry()).await;
    let a = args(server.ws_url("/api/custom-transcriber"), 5.0);
    let report = measure(&a, &speech, 1).await.expect("bench runs");
    let call = &report.per_call[0];
    assert_eq!(report.failed_calls, 0, "{:?}", call.errors);
    assert_eq!(call.utterances.len(), 5);
    for u in &call.utterances {
        assert!(u.time_to_final_ms.is_some(), "no final at {} s", u.onset_s);
        assert!(u.first_partial_ms.is_some() && u.reply_wait_ms.is_some());
        assert_eq!((u.words, u.word_errors), (0, 0), "WER is per call");
    }
    assert_eq!(call.whole_call.len(), 2);
    for (totals, name) in [
        (&report.customer, "customer"),
        (&report.assistant, "assistant"),
    ] {
        assert!(totals.words > 10, "{name}: {} words", totals.words);
        assert!(
            totals.wer < 0.25,
            "{name} WER {}: {:?}",
            totals.wer,
            call.whole_call
        );
    }
    assert_eq!(report.customer.words, call.customer.words);

    // The same call through a phone line with mu-law still transcribes.
    let phoned = speech.through_phone(16000, true).expect("phone line");
    let report = measure(&a, &phoned, 1).await.expect("bench runs");
    let call = &report.per_call[0];
    assert_eq!(report.failed_calls, 0, "{:?}", call.errors);
    assert_eq!(call.utterances.len(), 5);
    assert!(
        report.customer.wer < 0.5,
        "phone-band customer WER {}: {:?}",
        report.customer.wer,
        call.whole_call
    );
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_broken_corpus_is_reported_in_one_error() {
    let all = clips();
    let dir = temp_dir("broken");
    let go = clip(&all, CUSTOMER[0]);
    let s = go.samples.as_slice();
    write_wav(&dir.join("ok.wav"), go.rate, &[s], false);
    write_wav(&dir.join("three.wav"), go.rate, &[s, s, s], false);
    write_wav(&dir.join("call.wav"), go.rate, &[s, s], false);
    write_wav(&dir.join("silent.wav"), 16000, &[&[0i16; 16000]], false);
    write_wav(&dir.join("noref.wav"), go.rate, &[s], false);
    std::fs::write(dir.join("text.wav"), "not audio at all").unwrap();
    std::fs::write(dir.join("junk.bin"), [0u8; 64]).unwrap();
    std::fs::write(
        dir.join("transcripts.tsv"),
        "ok.wav\tgo forward ten meters\n\
         missing.wav\tsome words\n\
         three.wav\tthree channels\n\
         silent.wav\tnothing here\n\
         noref.wav\n\
         text.wav\thello\n\
         \tbad line\n\
         ok.wav\tagain\n\
         call.wav\tgo forward ten meters\n\
         ok.wav go forward ten meters\n",
    )
    .unwrap();
    let e = Speech::load_user(&dir, builtin)
        .err()
        .expect("a broken corpus is refused")
        .to_string();
    let tsv = dir.join("transcripts.tsv").display().to_string();
    for want in [
        format!("{tsv}:2: missing.wav: file not found"),
        format!("{tsv}:3: three.wav: 3 channels"),
        format!("{tsv}:4: silent.wav: no speech found"),
        format!("{tsv}:5: noref.wav: no reference"),
        format!("{tsv}:6: text.wav: not a WAV file"),
        format!("{tsv}:7: no file name"),
        format!("{tsv}:8: ok.wav: listed twice"),
        // Spaces where the TAB belongs: said so, with the line, not "file not found".
        format!("{tsv}:10: ok.wav go forward ten meters: the line has no TAB"),
        "separate folders".to_string(),
    ] {
        assert!(e.contains(&want), "missing {want:?} in:\n{e}");
    }
    assert!(!e.contains("junk.bin"), "{e}");
    assert_eq!(e.lines().count(), 10, "{e}");

    std::fs::write(dir.join("transcripts.tsv"), "# nothing yet\n").unwrap();
    let e = Speech::load_user(&dir, builtin)
        .err()
        .expect("empty")
        .to_string();
    assert!(
        e.contains("lists no files") && e.contains("file<TAB>reference"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
