//! Offline study of hark's endpointing on the dev clips: where the segmenter cuts each
//! clip, what a batch decode of each piece says, and how long the decodes take.
//!
//! ```text
//! cargo run --release --example segment_study -- [ENDPOINT_MS] [THRESHOLD] [MIN_VOICE_MS] [PREROLL_MS]
//!   OPTS=name=value,…   library options for the handle (hark's default: vad_threshold=0)
//!   RATE=8000           pass each clip through 8 kHz (a call's line) and back (the server's resampler)
//!   WHOLE=1             the engine alone: one decode per whole clip, no segmenter
//!   LINES=1             print every line of every decode
//!   CLIPS=DIR           another folder of clips with a transcripts.tsv (default: the dev clips)
//!   QUIET=1             only the totals, per source (the file name's prefix before `_`)
//!   PAD=MS              silence a final's decode ends with (hark's default: DECODE_PAD_MS)
//!   CONTEXT=MS          longest decode with left context (hark's default: CONTEXT_SPAN_MS; 0 off)
//!   GAP=MS              longest pause inside a turn (hark's default: TURN_GAP_MS)
//!   RELEASE=SCORE       detector score that keeps an open utterance voiced (hark's default: RELEASE)
//!   LOUD=DB             margin over the noise floor at which RELEASE opens an utterance (hark's default: LOUD_MARGIN_DB; inf never)
//!   LOUD_FRAMES=N       frames in a row that LOUD needs (hark's default: LOUD_FRAMES)
//!   SAME=1              one segmenter for all clips in turn, as one channel of a call hears them
//!   SILENCE=MS          silence before and after each clip (default 1000, or the hold and
//!                       500 ms more where pauses are held: a held turn ends as on a call)
//!   ENGINE=whisper      decode with Whisper instead of Moonshine
//!   MODEL=tiny.en|base|DIR  the Whisper model (default tiny.en)
//!   FINAL_MODEL=base|DIR    Whisper's finals (and speculative decodes) from this model
//!                       (default: the server's, base for tiny.en; FINAL_MODEL=tiny.en: tiny.en alone)
//!   CONTEXT_AS=audio|text   how finals read the turn's earlier finals (default: the engine's
//!                       own, `[whisper] context_as`); text is a prompt Moonshine ignores
//!   LANGUAGE=es|auto    the language the decodes are told (Whisper; default English)
//!   ENCODER=float32     Whisper's encoder layers in float32 rather than int8
//!   BEAM=N              hypotheses of Whisper's beam search for finals (default: the
//!                       server's, `[whisper] beam`; 1 greedy). Which finals it takes, and
//!                       how early speculative decodes start, come from the cost model
//!   COST=calibrate|A,B,C,D/E,F,G,H  the cost model the leads and the beam's finals come
//!                       from: calibrated on the engine at start, as the server does (it
//!                       moves with what else the machine runs), or the partials' and
//!                       finals' figures in ms (encode, per audio second, step, per row).
//!                       Default: machine F's figures for the default pair (tiny.en, base),
//!                       so its words are the same on any machine; a calibration for others
//!   FADE=DB             frames this far under the utterance's voiced level end it (hark's
//!                       default: FADE_DB; inf never)
//!   TURN=1              judge each pause with the end-of-turn model, as the server does
//!                       with `turn_model` (its verdict at once, in audio time). With or
//!                       without it, a CLIPS/pauses.tsv gives the turn figures: premature
//!                       ends at its pauses
//!                       (`hark-bench`'s rule), finished turns ending in . ? ! or a digit,
//!                       and the reply wait in audio time (the final's position after the
//!                       words' end, decode time not counted, plus the platform's wait)
//!   WORDS=0             end every pause at the endpoint, as decoded: no pause held after
//!                       words that go on (the server's `hold_unfinished`, on by default)
//!   HOLD=MS             how long a held pause is held: `max_turn_silence_ms` (hark's
//!                       default: TURN_HOLD_MS)
//!   UNSURE=P            hold a pause too where the model's own probability of a sentence's
//!                       end after its words is below P: `end_of_turn_confidence_threshold`
//!                       (hark's default: whisper::END_CONFIDENCE; 0: not)
//!   QUICK=P             a pause read at least this sure of a sentence's end ends sooner:
//!                       `end_of_turn_quick_threshold` (hark's default: whisper::QUICK_END;
//!                       0: not)
//!   QUICK_MS=MS         after this much silence: `min_turn_silence_ms` (hark's default:
//!                       whisper::MIN_TURN_SILENCE_MS)
//!   TURN_THRESHOLD=P    with TURN: probability at which a pause is the turn's end (0.5)
//!   POOLED=FILE         no decodes: write each clip's (its first 10 s) mean encoding by
//!                       base, as the sound probe reads a final's, one TSV line a clip
//!                       (`name`, then the numbers), for `hark-bench/study/sound_probe.py`
//! ```
//!
//! Prints the decoders' CPU time per second of audio decoded (both engines' threads). The
//! segmenters run on the audio's own time (decodes take none of it), so everything but the
//! decodes' measured milliseconds and CPU is the same on an idle machine and a busy one.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hark::backend::embedded::cost::{CostModel, Figures};
use hark::backend::embedded::segmenter::{DecodeKind, Emit, Lead, Segmenter, SegmenterConfig};
use hark::backend::embedded::{ContextKind, Engine, Tier, Utterance};
use hark::backend::{moonshine, whisper};
use hark::turn::TurnModel;
use hark_bench::report::{platform_wait_ms, premature_ends};
use hark_bench::wer;

/// One utterance to decode, in `language` (empty: English); `beam`: a final the engine's
/// beam may take (as the server's decoders with room; BEAM=1: greedy).
fn utterance<'a>(
    audio: &'a [f32],
    prompt: &'a str,
    language: &'a str,
    beam: bool,
) -> Utterance<'a> {
    Utterance {
        audio,
        prompt,
        draft: "",
        language,
        beam,
    }
}

/// This process's CPU time so far, in seconds.
fn cpu_secs() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let language = std::env::var("LANGUAGE").unwrap_or_default();
    let arg = |i: usize, d: f64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let mut config = SegmenterConfig::from_ms(arg(0, 200.0) as u64, 500);
    config.threshold = arg(1, 0.5) as f32;
    config.release = std::env::var("RELEASE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(config.threshold.min(config.release));
    config.min_voice = (arg(2, 64.0) * 16.0) as usize;
    config.preroll = (arg(3, config.preroll as f64 / 16.0) * 16.0) as usize;
    if let Some(pad) = std::env::var("PAD")
        .ok()
        .and_then(|p| p.parse::<usize>().ok())
    {
        config.pad = pad * 16;
    }
    let ms_var = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
    };
    if let Some(ms) = ms_var("CONTEXT") {
        config.context_span = ms * 16;
    }
    if let Some(ms) = ms_var("GAP") {
        config.turn_gap = ms * 16;
    }
    if let Some(db) = std::env::var("LOUD").ok().and_then(|v| v.parse().ok()) {
        config.loud_margin_db = db;
    }
    if let Some(db) = std::env::var("FADE").ok().and_then(|v| v.parse().ok()) {
        config.fade_db = db;
    }
    if let Some(frames) = ms_var("LOUD_FRAMES") {
        config.loud_frames = frames;
    }
    // Pauses after words that go on are held, as the server's default (`WORDS=0`: not);
    // `HOLD=MS` is how long (`max_turn_silence_ms`).
    config.hold_unfinished = std::env::var("WORDS").map_or(true, |v| v != "0");
    config.english = hark::turn::words::english(&language);
    // A pause is held too where the model found a sentence's end unlikely, as the server's
    // default (`UNSURE=P`: below P; 0: not).
    config.unsure_end = std::env::var("UNSURE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(whisper::END_CONFIDENCE as f32);
    // A pause judged between `UNSURE` and `SURE=P` waits in proportion to the doubt, as the
    // server's default (`SURE=0`: one threshold).
    config.sure_end = std::env::var("SURE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(whisper::SURE_END as f32);
    // A pause read this sure of a sentence's end ends at `QUICK_MS` of silence (the
    // server's `end_of_turn_quick_threshold`, `quick_endpoint_ms`).
    config.quick_end = std::env::var("QUICK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(whisper::QUICK_END as f32);
    let quick_ms = ms_var("QUICK_MS").unwrap_or(whisper::MIN_TURN_SILENCE_MS as usize);
    config.quick_endpoint = (quick_ms * 16).min(config.endpoint);
    if let Some(ms) = ms_var("HOLD") {
        config.turn_hold = ms * 16;
    }
    // After a held pause the call goes on: the silence outlasts the hold, so the last turn
    // ends by it (with . ? !), not by the clip's end.
    let held = match config.holds() {
        true => config.turn_hold / 16 + 500,
        false => 0,
    };
    let silence = ms_var("SILENCE").unwrap_or(held.max(1000)) * 16;
    let same = std::env::var("SAME").is_ok();
    let whisper_config = whisper::WhisperConfig {
        model: std::env::var("MODEL").unwrap_or_else(|_| "tiny.en".into()),
        final_model: std::env::var("FINAL_MODEL").ok(),
        encoder: match std::env::var("ENCODER").as_deref() {
            Ok("float32") => hark_whisper::EncoderProducts::F32,
            _ => hark_whisper::EncoderProducts::Int8,
        },
        decoders: 1,
        beam: std::env::var("BEAM")
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(whisper::WhisperConfig::default().beam),
        ..Default::default()
    };
    let mut loaded = match std::env::var("ENGINE").as_deref() {
        Ok("whisper") => whisper::load(&whisper_config, false).map_err(|e| e.to_string()),
        _ => {
            let mut c = moonshine::MoonshineConfig::default();
            // OPTS="name=value,name=value": library options for the handle.
            if let Ok(opts) = std::env::var("OPTS") {
                c.options = opts
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            }
            moonshine::load(&c, false)
        }
    }
    .expect("engine");
    eprintln!("engine: {}", loaded.describe);
    config.context_as_text = match std::env::var("CONTEXT_AS").as_deref() {
        Ok("audio") => false,
        Ok("text") => true,
        _ => loaded.context == ContextKind::Text,
    };
    config.prompted = loaded.prompted;
    let mut t: Box<dyn Engine> = loaded.engines.remove(0);
    // How early speculative decodes start and which finals the beam takes (those it leaves
    // ready by the endpoint), as the server decides them: from a cost model. Fixed figures
    // give the same words on any machine, idle or busy; a calibration here, as the server
    // makes at start, moves with what else the machine runs.
    let default_pair = std::env::var("ENGINE").as_deref() == Ok("whisper")
        && whisper_config.model == whisper::DEFAULT_MODEL
        && whisper_config.finals_model() == Some(whisper::DEFAULT_FINAL_MODEL)
        && whisper_config.encoder == hark_whisper::EncoderProducts::Int8;
    let cost = match std::env::var("COST").as_deref() {
        Ok("calibrate") => CostModel::calibrate(t.as_mut(), loaded.finals_model),
        Ok(figures) => {
            let (partials, finals) = parse_figures(figures).expect(
                "COST=calibrate or COST=ENCODE,PER_S,STEP,PER_ROW/ENCODE,PER_S,STEP,PER_ROW (ms)",
            );
            CostModel::from_figures(partials, finals)
        }
        Err(_) if default_pair => CostModel::from_figures(REFERENCE.0, REFERENCE.1),
        Err(_) => CostModel::calibrate(t.as_mut(), loaded.finals_model),
    }
    .with_beam(loaded.beam);
    eprintln!(
        "cost: partials {}, finals {}",
        cost.figures(Tier::Partials),
        cost.figures(Tier::Finals)
    );
    config.lead = Lead::of(&cost, loaded.finals_model);
    let mut judge = std::env::var("TURN").is_ok().then(|| {
        config.judge_turns = true;
        let cache = hark::wheel::default_cache_dir();
        let paths = hark::turn::ensure(cache).expect("the turn model");
        TurnModel::load(&paths).expect("the turn model loads")
    });
    let threshold: f32 = std::env::var("TURN_THRESHOLD")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.5);
    let mut turn_audio = Vec::new();
    // The turn figures: premature ends and inner pauses, finished turns answerable, reply
    // waits (ms).
    let (mut premature, mut inner_pauses, mut answerable, mut turns) = (0, 0, 0, 0);
    let mut reply_waits: Vec<f64> = Vec::new();
    let mut prompt = String::new();
    let (mut cpu, mut decoded_secs) = (0.0f64, 0.0f64);
    let mut shared = Segmenter::new(config);
    // Finals by `Recovery`: none, retried, partial, sound, wordless.
    let mut recoveries = [0usize; 5];
    let mut input = Vec::new();
    let (mut finals_seen, mut finals_terminal) = (0usize, 0usize);
    let dir = std::env::var("CLIPS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/hark/clips")
        });
    let quiet = std::env::var("QUIET").is_ok();
    let mut pooled = PooledDump::open();
    let tsv = std::fs::read_to_string(dir.join("transcripts.tsv")).expect("transcripts.tsv");
    // `file<TAB>start_ms-end_ms[,…]`: where each clip's pauses inside its turn are.
    let pauses: std::collections::HashMap<String, Vec<(f64, f64)>> =
        std::fs::read_to_string(dir.join("pauses.tsv"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(file, spans)| {
                let spans = spans
                    .split(',')
                    .filter_map(|span| span.split_once('-'))
                    .filter_map(|(a, b)| {
                        Some((
                            a.trim().parse::<f64>().ok()? / 1e3,
                            b.trim().parse::<f64>().ok()? / 1e3,
                        ))
                    })
                    .collect();
                (file.to_string(), spans)
            })
            .collect();
    let mut pairs = Vec::new();
    // The segmenters' clock is the audio fed so far, every clip's after the last: decodes
    // take no time on it, so each decision, and each final's reported wait, is the same on
    // an idle machine and a busy one. Only the decodes' measured milliseconds and CPU move.
    let epoch = Instant::now();
    let mut fed = 0u64;
    let clock = |fed: u64| epoch + Duration::from_secs_f64(fed as f64 / 16e3);
    for line in tsv.lines().filter(|l| !l.trim().is_empty()) {
        let (name, reference) = line.split_once('\t').expect("name<TAB>reference");
        let (mut clip, clip_rate) = hark_bench::wav::read_mono_f32(&dir.join(name)).expect("wav");
        // A clip at another rate reaches the engine as the server brings it: to 16 kHz by
        // hark's resampler.
        if clip_rate != 16_000 {
            clip = through(&clip, clip_rate, 16_000);
        }
        if let Some(rate) = std::env::var("RATE").ok().and_then(|r| r.parse().ok()) {
            clip = through(&phone_line(&clip, rate), rate, 16_000);
        }
        if let Some(dump) = pooled.as_mut() {
            dump.write(name, &clip);
            continue;
        }
        if std::env::var("WHOLE").is_ok() {
            let before = cpu_secs();
            let text = t
                .transcribe(&[utterance(&clip, "", &language, true)], Tier::Finals)
                .remove(0)
                .expect("decode")
                .text;
            cpu += cpu_secs() - before;
            decoded_secs += clip.len() as f64 / 16e3;
            if !quiet {
                println!(
                    "{name}: {} errors\n  {text}",
                    wer::word_errors(reference, &text)
                );
            }
            pairs.push((name.to_string(), reference.to_string(), text));
            continue;
        }
        let words_end = words_end(&clip);
        let mut audio = vec![0.0f32; silence];
        audio.extend(clip);
        audio.extend(vec![0.0f32; silence]);
        let mut own = Segmenter::new(config);
        let seg = if same { &mut shared } else { &mut own };
        let mut out = Vec::new();
        let mut finals = Vec::new();
        // Each final's position in the clip, seconds.
        let mut timed: Vec<(f64, String)> = Vec::new();
        let mut decode_ms = 0.0;
        let mut at = 0u64;
        for chunk in audio.chunks(320) {
            at += chunk.len() as u64;
            fed += chunk.len() as u64;
            seg.push(chunk, at, clock(fed), &mut out);
            if let Some(model) = judge.as_mut()
                && let Some(ticket) = seg.claim_turn(&mut turn_audio)
            {
                let p = model.complete_probability(&turn_audio).expect("verdict");
                if std::env::var("TURN_LOG").is_ok() {
                    println!(
                        "  verdict {name} at {:5.2}s: {p:.3}",
                        at as f64 / 16e3 - silence as f64 / 16e3
                    );
                }
                seg.judged(ticket, Some(p >= threshold), clock(fed), &mut out);
            }
            while let Some(want) = seg.want() {
                seg.decode_input(&want, &mut input);
                seg.prompt(&want, &mut prompt);
                let piece = seg.audio(want.ticket);
                let started = Instant::now();
                let before = cpu_secs();
                let heard = t
                    .transcribe(
                        &[utterance(&input, &prompt, &language, want.ticket.beam)],
                        want.tier(),
                    )
                    .remove(0)
                    .expect("decode");
                let text = heard.text.clone();
                cpu += cpu_secs() - before;
                decoded_secs += input.len() as f64 / 16e3;
                decode_ms += started.elapsed().as_secs_f64() * 1000.0;
                if std::env::var("LINES").is_ok() {
                    println!(
                        "    {:?} at {:5.2}s {prompt:?} -> {text:?} (sentence end {:?})",
                        want.kind,
                        at as f64 / 16e3 - silence as f64 / 16e3,
                        heard.ends
                    );
                }
                if want.kind == DecodeKind::Final && !quiet {
                    println!(
                        "  final  {:5.2}s..{:5.2}s ({:4.2}s) {:?}",
                        (at as f64 - piece.len() as f64) / 16e3 - silence as f64 / 16e3,
                        at as f64 / 16e3 - silence as f64 / 16e3,
                        piece.len() as f64 / 16e3,
                        text
                    );
                }
                seg.decoded(want.ticket, heard, clock(fed), &mut out);
                if want.kind != DecodeKind::Final {
                    break;
                }
            }
            for e in out.drain(..) {
                if let Emit::Final(text, waited, recovery) = e {
                    recoveries[recovery as usize] += 1;
                    // Audio time of the final, and the silence the segmenter waited.
                    if !quiet {
                        println!(
                            "  final at {:5.2}s (waited {:3.0} ms, {}): {text}",
                            at as f64 / 16e3 - silence as f64 / 16e3,
                            waited.as_secs_f64() * 1000.0,
                            recovery.as_str()
                        );
                    }
                    timed.push((at as f64 / 16e3 - silence as f64 / 16e3, text.clone()));
                    finals.push(text);
                }
            }
        }
        seg.finish(at, clock(fed), &mut out);
        while let Some(want) = seg.want() {
            seg.decode_input(&want, &mut input);
            seg.prompt(&want, &mut prompt);
            let heard = t
                .transcribe(
                    &[utterance(&input, &prompt, &language, want.ticket.beam)],
                    want.tier(),
                )
                .remove(0)
                .expect("decode");
            seg.decoded(want.ticket, heard, clock(fed), &mut out);
        }
        for e in out.drain(..) {
            if let Emit::Final(text, _, recovery) = e {
                recoveries[recovery as usize] += 1;
                timed.push((at as f64 / 16e3 - silence as f64 / 16e3, text.clone()));
                finals.push(text);
            }
        }
        if config.holds() || !pauses.is_empty() {
            let spans = pauses.get(name).cloned().unwrap_or_default();
            let refs: Vec<(f64, &str)> = timed.iter().map(|(t, f)| (*t, f.as_str())).collect();
            let cut = premature_ends(&refs, &spans);
            premature += cut;
            inner_pauses += spans.len();
            if let Some((t, last)) = timed.last() {
                turns += 1;
                let wait = platform_wait_ms(last);
                answerable += usize::from(wait < 1000.0);
                reply_waits.push((t - words_end) * 1000.0 + wait);
            }
            if !quiet || cut > 0 {
                println!(
                    "  turn {name}: {cut} premature of {} pauses: {timed:?}",
                    spans.len()
                );
            }
        }
        for f in &finals {
            finals_seen += 1;
            finals_terminal += usize::from(f.trim_end().ends_with(['.', '?', '!']));
        }
        let hyp = finals.join(" | ");
        let errors = wer::word_errors(reference, &finals.join(" "));
        if !quiet {
            println!("{name}: {errors} errors, decodes {decode_ms:.0} ms\n  {hyp}");
        }
        pairs.push((name.to_string(), reference.to_string(), finals.join(" ")));
    }
    let mut sources: Vec<&str> = pairs
        .iter()
        .map(|(n, _, _)| n.split('_').next().unwrap_or(n))
        .collect();
    sources.sort_unstable();
    sources.dedup();
    if sources.len() > 1 {
        for source in sources {
            let of = pairs
                .iter()
                .filter(|(n, _, _)| n.split('_').next() == Some(source));
            let words: usize = of.clone().map(|(_, r, _)| wer::normalize(r).len()).sum();
            let errors: usize = of.map(|(_, r, h)| wer::word_errors(r, h)).sum();
            println!("  {source:<14} {errors:4} errors / {words:5} words");
        }
    }
    let total = wer::wer(pairs.iter().map(|(_, r, h)| (r.as_str(), h.as_str())));
    println!("WER {:.1} %", total * 100.0);
    if decoded_secs > 0.0 {
        println!(
            "decoders' CPU {cpu:.1} s for {decoded_secs:.1} s decoded: {:.3} s per audio s",
            cpu / decoded_secs
        );
    }
    let silent: Vec<&str> = pairs
        .iter()
        .filter(|(_, _, h)| h.trim().is_empty())
        .map(|(n, _, _)| n.as_str())
        .collect();
    println!("clips without a final: {} {silent:?}", silent.len());
    println!(
        "finals found on a retry {}, from a partial {}, a sound {}, wordless {}",
        recoveries[1], recoveries[2], recoveries[3], recoveries[4]
    );
    if finals_seen > 0 {
        println!(
            "finals ending in . ? ! : {finals_terminal} of {finals_seen} ({:.0} %)",
            100.0 * finals_terminal as f64 / finals_seen as f64
        );
    }
    if config.holds() || !pauses.is_empty() {
        let waits = hark_bench::report::Stats::of(reply_waits);
        println!(
            "turns: premature ends {premature} of {inner_pauses} pauses ({:.1} %); finished \
             turns ending in . ? ! or a digit {answerable} of {turns}; reply wait in audio \
             time p50 / p95 / p99 {:.0} / {:.0} / {:.0} ms",
            100.0 * premature as f64 / inner_pauses.max(1) as f64,
            waits.p50,
            waits.p95,
            waits.p99
        );
    }
}

/// Where a clip's words end: its last 10 ms louder than -40 dBFS, seconds (as
/// `hark-bench` finds it).
fn words_end(clip: &[f32]) -> f64 {
    let loud = clip
        .chunks(160)
        .rposition(|w| (w.iter().map(|x| x * x).sum::<f32>() / w.len() as f32).sqrt() > 0.01)
        .map_or(0, |i| i + 1);
    (loud * 160).min(clip.len()) as f64 / 16e3
}

/// A clip as a call at `rate` carries it: band-limited by the bench's resampler, as
/// `hark-bench --rate` sends it (a phone line passes up to its Nyquist frequency; the
/// server's streaming resampler, with its 10 ms blocks, cuts from about 3.2 kHz at 8 kHz
/// and would narrow the band twice).
fn phone_line(audio: &[f32], rate: u32) -> Vec<f32> {
    let pcm: Vec<i16> = audio
        .iter()
        .map(|&s| (s * 32768.0).clamp(-32768.0, 32767.0) as i16)
        .collect();
    hark_bench::resample::resample(&pcm, 16_000, rate)
        .expect("resample")
        .iter()
        .map(|&s| f32::from(s) / 32768.0)
        .collect()
}

/// Converts a whole clip from one rate to another, as the server's resampler would.
fn through(audio: &[f32], from: u32, to: u32) -> Vec<f32> {
    let mut r = hark::resample::StreamResampler::new(from, to).expect("resampler");
    let mut out = Vec::new();
    for piece in audio.chunks(from as usize / 50) {
        r.process(piece, &mut out);
    }
    r.flush(&mut out);
    out
}

/// `POOLED=FILE`: each clip's mean encoding by base, as the sound probe reads a final's
/// ([`hark_whisper::Decoder::pooled_encoding`]).
struct PooledDump {
    model: std::sync::Arc<hark_whisper::Model>,
    decoder: hark_whisper::Decoder,
    out: std::io::BufWriter<std::fs::File>,
}

impl PooledDump {
    fn open() -> Option<Self> {
        let path = std::env::var("POOLED").ok()?;
        let config = whisper::WhisperConfig {
            model: "base".into(),
            ..Default::default()
        };
        let paths = whisper::ensure_model(&config).expect("base");
        let model = hark_whisper::Model::load(&paths).expect("base");
        Some(Self {
            decoder: hark_whisper::Decoder::new(model.clone()),
            model,
            out: std::io::BufWriter::new(std::fs::File::create(path).expect("POOLED file")),
        })
    }

    fn write(&mut self, name: &str, clip: &[f32]) {
        use std::io::Write;
        let audio = &clip[..clip.len().min(10 * 16_000)];
        let mean = self.decoder.pooled_encoding(&self.model, audio);
        let numbers: Vec<String> = mean.iter().map(|x| format!("{x:.5}")).collect();
        writeln!(self.out, "{name}\t{}", numbers.join("\t")).expect("POOLED write");
    }
}

/// The decode cost of the server's default pair (tiny.en partials, base finals, int8
/// encoder), as a server calibrated it at start on machine F (BENCHMARKS.md's machines),
/// idle: the leads and beam decisions `COST` unset gives that pair, the same on any
/// machine.
const REFERENCE: (Figures, Figures) = (
    Figures {
        encode: 0.0218,
        encode_per_second: 0.0187,
        step: 0.00465,
        step_per_row: 0.00370,
    },
    Figures {
        encode: 0.0861,
        encode_per_second: 0.0383,
        step: 0.00740,
        step_per_row: 0.00666,
    },
);

/// `COST=a,b,c,d/e,f,g,h`: the partials' and finals' figures in ms, as the server's
/// start-up log shows them (encode, per second of audio, step, per row).
fn parse_figures(text: &str) -> Option<(Figures, Figures)> {
    let one = |part: &str| -> Option<Figures> {
        let ms: Vec<f64> = part
            .split(',')
            .map(|v| v.trim().parse::<f64>().ok())
            .collect::<Option<_>>()?;
        let [encode, encode_per_second, step, step_per_row] = ms[..] else {
            return None;
        };
        Some(Figures {
            encode: encode / 1e3,
            encode_per_second: encode_per_second / 1e3,
            step: step / 1e3,
            step_per_row: step_per_row / 1e3,
        })
    };
    let (partials, finals) = text.split_once('/')?;
    Some((one(partials)?, one(finals)?))
}
