//! Scheduling study for the embedded Moonshine recognizer.
//!
//! Simulates real-time streaming in "audio time" (no sleeping, except in `load`): the dev
//! clips from ~/.cache/hark/clips are laid out on a timeline separated by silence, fed in
//! 20 ms chunks, and `transcribe_stream` is called according to a policy. Reports
//! time-to-final (clip speech offset -> line reported complete), first partial (speech onset
//! -> first text), CPU per audio second and WER.
//!
//! ```text
//! cargo run --release --example moonshine_tuning -- MODE [FLAGS]
//!   probe                       Q1: where completion happens, cost of transcribe_stream calls
//!   sweep                       Q2: cadence x FORCE policy sweep
//!   options                     Q3: which options load, and their effect (uses --cadence etc.)
//!   silence                     Q4: CPU per second on zeros / low noise
//!   parallel                    Q5: 2 handles x 2 threads vs 1 handle x 2 streams; 16 channels
//!   load                        16 channels paced in real time on a pool (wall-clock TTF)
//!   run                         one configuration
//! flags: --cadence MS  --force  --poll MS  --opt NAME=VALUE (repeatable)  --rounds N
//!        --pool N  --channels N  --seconds S
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hark::backend::moonshine::fetch::{self, FetchOptions};
use hark::backend::moonshine::ffi::{
    ARCH_TINY, FLAG_FORCE_UPDATE, Library, Line, StreamId, Transcriber,
};

const SR: usize = 16_000;
const CHUNK_MS: u32 = 20;
const CHUNK: usize = SR * CHUNK_MS as usize / 1000;

// ---------------------------------------------------------------- clips and timeline

struct Clip {
    name: String,
    samples: Vec<f32>,
    reference: String,
    onset: f64,
    offset: f64,
}

fn load_clips() -> Vec<Clip> {
    let dir = PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/hark/clips");
    let tsv = std::fs::read_to_string(dir.join("transcripts.tsv")).expect("transcripts.tsv");
    let mut clips = Vec::new();
    for line in tsv.lines().filter(|l| !l.trim().is_empty()) {
        let (name, reference) = line.split_once('\t').expect("name<TAB>reference");
        let mut reader = hound::WavReader::open(dir.join(name)).expect("wav");
        let spec = reader.spec();
        assert_eq!(spec.sample_rate as usize, SR, "{name}");
        assert_eq!(spec.channels, 1, "{name}");
        let samples: Vec<f32> = reader
            .samples::<i16>()
            .map(|s| f32::from(s.unwrap()) / 32768.0)
            .collect();
        let (onset, offset) = speech_bounds(name, &samples);
        clips.push(Clip {
            name: name.to_owned(),
            samples,
            reference: reference.to_owned(),
            onset,
            offset,
        });
    }
    clips
}

/// First and last 10 ms frame above -40 dBFS after a 100 Hz high-pass (some LibriVox clips
/// carry a DC offset / hum around -40 dBFS after the last word), in seconds from the clip
/// start. Energy cannot tell jfk.wav's trailing crowd noise (-38..-23 dBFS, 10.2-11.0 s)
/// from speech, so its offset is set by hand to the end of "country" (10.20 s; checked
/// frame by frame on level and zero-crossing rate).
fn speech_bounds(name: &str, s: &[f32]) -> (f64, f64) {
    let a = (-2.0 * std::f32::consts::PI * 100.0 / SR as f32).exp();
    let (mut px, mut py) = (0.0f32, 0.0f32);
    let hp: Vec<f32> = s
        .iter()
        .map(|&x| {
            py = a * (py + x - px);
            px = x;
            py
        })
        .collect();
    let loud: Vec<bool> = hp
        .chunks(SR / 100)
        .map(|f| {
            let rms = (f.iter().map(|x| x * x).sum::<f32>() / f.len() as f32).sqrt();
            20.0 * (rms.max(1e-9)).log10() > -40.0
        })
        .collect();
    let first = loud.iter().position(|&l| l).unwrap_or(0);
    let last = loud.iter().rposition(|&l| l).unwrap_or(loud.len() - 1);
    let offset = if name == "jfk.wav" {
        10.20
    } else {
        (last + 1) as f64 * 0.01
    };
    (first as f64 * 0.01, offset)
}

struct Placed {
    clip: usize,
    start: f64,
    end: f64,
    onset: f64,
    offset: f64,
}

struct Timeline {
    audio: Vec<f32>,
    placed: Vec<Placed>,
}

impl Timeline {
    fn seconds(&self) -> f64 {
        self.audio.len() as f64 / SR as f64
    }
}

/// `lead` s of silence, then the clips (starting at `rotate`) each followed by a gap: fixed
/// `gap` s, or in conversational mode as long as the clip (at least `gap`).
fn timeline(clips: &[Clip], lead: f64, gap: f64, conversational: bool, rotate: usize) -> Timeline {
    let mut audio = vec![0.0f32; (lead * SR as f64) as usize];
    let mut placed = Vec::new();
    for k in 0..clips.len() {
        let i = (k + rotate) % clips.len();
        let c = &clips[i];
        let start = audio.len() as f64 / SR as f64;
        audio.extend_from_slice(&c.samples);
        let end = audio.len() as f64 / SR as f64;
        placed.push(Placed {
            clip: i,
            start,
            end,
            onset: start + c.onset,
            offset: start + c.offset,
        });
        let g = if conversational {
            gap.max(end - start)
        } else {
            gap
        };
        audio.extend(std::iter::repeat_n(0.0, (g * SR as f64) as usize));
    }
    Timeline { audio, placed }
}

// ---------------------------------------------------------------- policy

#[derive(Clone, Debug)]
struct Policy {
    /// transcribe_stream every this many ms of audio ...
    cadence_ms: u32,
    /// ... with FLAG_FORCE_UPDATE
    force: bool,
    /// plus cheap non-forced calls every this many ms in between
    poll_ms: Option<u32>,
}

impl Policy {
    fn label(&self) -> String {
        let mut s = format!(
            "{}ms{}",
            self.cadence_ms,
            if self.force { "+F" } else { "" }
        );
        if let Some(p) = self.poll_ms {
            s += &format!(" poll{p}");
        }
        s
    }
    /// Flags for a call due after `ms` of audio, or None.
    fn due(&self, ms: u64) -> Option<u32> {
        if ms.is_multiple_of(self.cadence_ms as u64) {
            Some(if self.force { FLAG_FORCE_UPDATE } else { 0 })
        } else if self.poll_ms.is_some_and(|p| ms.is_multiple_of(p as u64)) {
            Some(0)
        } else {
            None
        }
    }
}

// ---------------------------------------------------------------- one streamed run

struct CallRec {
    t: f64,
    wall: f64,
    flags: u32,
    /// Some line came back updated (i.e. the call decoded or completed something).
    updated: bool,
}

#[derive(Default, Clone)]
struct LineRec {
    first_seen: f64,
    /// (audio time, wall s of that call)
    first_text: Option<(f64, f64)>,
    /// (audio time, wall s of that call, is_updated on that call, reported by finish_stream)
    complete: Option<(f64, f64, bool, bool)>,
    text: String,
    start_time: f64,
    duration: f64,
}

#[derive(Default)]
struct RunOut {
    calls: Vec<CallRec>,
    add_walls: Vec<f64>,
    /// wall s of the VAD-only handle's calls (trigger policy)
    vad_walls: Vec<f64>,
    lines: BTreeMap<u64, LineRec>,
    audio_s: f64,
    proc_cpu: f64,
    wall_total: f64,
}

impl RunOut {
    fn record(&mut self, lines: &[Line], t: f64, wall: f64, at_end: bool) {
        for l in lines {
            let rec = self.lines.entry(l.id).or_insert_with(|| LineRec {
                first_seen: t,
                ..Default::default()
            });
            if rec.first_text.is_none() && !l.text.trim().is_empty() {
                rec.first_text = Some((t, wall));
            }
            if l.is_complete && rec.complete.is_none() {
                rec.complete = Some((t, wall, l.is_updated, at_end));
            }
            rec.text.clone_from(&l.text);
            rec.start_time = f64::from(l.start_time);
            rec.duration = f64::from(l.duration);
        }
    }
}

fn run_stream(t: &Transcriber, tl: &Timeline, pol: &Policy) -> RunOut {
    let mut out = RunOut {
        audio_s: tl.seconds(),
        ..Default::default()
    };
    let s = t.create_stream().expect("create_stream");
    let cpu0 = proc_cpu();
    let w0 = Instant::now();
    for (k, chunk) in tl.audio.chunks(CHUNK).enumerate() {
        let a = Instant::now();
        t.add_audio(s, chunk, SR as u32).expect("add_audio");
        out.add_walls.push(a.elapsed().as_secs_f64());
        let ms = (k as u64 + 1) * CHUNK_MS as u64;
        if let Some(flags) = pol.due(ms) {
            let now = ms as f64 / 1000.0;
            let a = Instant::now();
            let lines = t.transcribe_stream(s, flags).expect("transcribe_stream");
            let wall = a.elapsed().as_secs_f64();
            out.calls.push(CallRec {
                t: now,
                wall,
                flags,
                updated: lines.iter().any(|l| l.is_updated),
            });
            out.record(&lines, now, wall, false);
        }
    }
    let a = Instant::now();
    let lines = t.finish_stream(s).expect("finish_stream");
    let wall = a.elapsed().as_secs_f64();
    out.record(&lines, tl.seconds(), wall, true);
    out.wall_total = w0.elapsed().as_secs_f64();
    out.proc_cpu = proc_cpu() - cpu0;
    t.free_stream(s).expect("free_stream");
    out
}

// ---------------------------------------------------------------- analysis

#[derive(Default)]
struct Metrics {
    /// clip-final TTF: audio time + wall of the reporting call, seconds
    ttf: Vec<f64>,
    ttf_audio: Vec<f64>,
    first_partial: Vec<f64>,
    word_errors: usize,
    words: usize,
    compute_per_s: Vec<f64>,
    proc_per_s: Vec<f64>,
    /// completions seen on a call where the line had is_updated == false
    not_updated: usize,
    /// clips whose last line only completed at finish_stream
    at_end: usize,
    lines: usize,
    stray_lines: usize,
    calls: usize,
}

impl Metrics {
    fn add(&mut self, clips: &[Clip], tl: &Timeline, out: &RunOut) {
        let mut per_clip: Vec<Vec<&LineRec>> = vec![Vec::new(); tl.placed.len()];
        for rec in out.lines.values() {
            if rec.text.trim().is_empty() && rec.complete.is_some() {
                // empty completed lines carry no words; keep them out of the mapping
            }
            let mid = rec.start_time + rec.duration / 2.0;
            match tl
                .placed
                .iter()
                .position(|p| mid >= p.start - 0.75 && mid < p.end + 0.75)
            {
                Some(i) => per_clip[i].push(rec),
                None => self.stray_lines += 1,
            }
            self.lines += 1;
            if let Some((_, _, updated, end)) = rec.complete
                && !updated
                && !end
            {
                self.not_updated += 1;
            }
        }
        for (p, lines) in tl.placed.iter().zip(per_clip.iter_mut()) {
            lines.sort_by(|a, b| a.start_time.total_cmp(&b.start_time));
            let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            let text = text.join(" ");
            let reference = &clips[p.clip].reference;
            self.word_errors += hark::wer::word_errors(reference, &text);
            self.words += hark::wer::normalize(reference).len();
            if let Some(last) = lines.iter().rfind(|l| l.complete.is_some()) {
                let (ct, cw, _, end) = last.complete.unwrap();
                if end {
                    self.at_end += 1;
                } else {
                    self.ttf_audio.push(ct - p.offset);
                    self.ttf.push(ct - p.offset + cw);
                }
            }
            if let Some((ft, fw)) = lines
                .iter()
                .filter_map(|l| l.first_text)
                .min_by(|a, b| a.0.total_cmp(&b.0))
            {
                self.first_partial.push(ft - p.onset + fw);
            }
        }
        let compute: f64 = out.add_walls.iter().sum::<f64>()
            + out.vad_walls.iter().sum::<f64>()
            + out.calls.iter().map(|c| c.wall).sum::<f64>();
        self.compute_per_s.push(compute / out.audio_s);
        self.proc_per_s.push(out.proc_cpu / out.audio_s);
        self.calls += out.calls.len();
    }

    fn wer(&self) -> f64 {
        self.word_errors as f64 / self.words.max(1) as f64
    }

    fn row(&self, label: &str) -> String {
        let ms = |v: f64| format!("{:.0}", v * 1000.0);
        let runs = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join("/")
        };
        format!(
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1}% | {} |",
            self.ttf.len(),
            ms(pct(&self.ttf, 50.0)),
            ms(pct(&self.ttf, 95.0)),
            ms(pct(&self.ttf, 100.0)),
            ms(pct(&self.ttf_audio, 50.0)),
            ms(pct(&self.first_partial, 50.0)),
            ms(pct(&self.first_partial, 95.0)),
            runs(&self.compute_per_s),
            runs(&self.proc_per_s),
            self.wer() * 100.0,
            {
                let mut n = Vec::new();
                if self.at_end > 0 {
                    n.push(format!("{} clip(s) final only at finish", self.at_end));
                }
                if self.not_updated > 0 {
                    n.push(format!(
                        "{} completion(s) with is_updated=0",
                        self.not_updated
                    ));
                }
                if self.stray_lines > 0 {
                    n.push(format!("{} stray line(s)", self.stray_lines));
                }
                n.push(format!("{} lines", self.lines));
                n.join("; ")
            }
        )
    }
}

const HEADER: &str = "| config | n | TTF p50 ms | TTF p95 ms | TTF max ms | TTF audio-only p50 | 1st partial p50 ms | 1st partial p95 ms | compute s/s (per run) | process CPU s/s (per run) | WER | notes |\n|---|---|---|---|---|---|---|---|---|---|---|---|";

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

// ---------------------------------------------------------------- process helpers

/// utime + stime of this process, seconds.
fn proc_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn thread_names() -> BTreeMap<String, usize> {
    let mut names = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            *names.entry(comm.trim().to_owned()).or_insert(0) += 1;
        }
    }
    names
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------- engine

struct Engine {
    lib: Arc<Library>,
    model_dir: PathBuf,
}

impl Engine {
    fn open() -> Engine {
        let paths = fetch::ensure_engine(&FetchOptions::default()).expect("engine");
        let lib = Library::load(&paths.lib).expect("library");
        Engine {
            lib,
            model_dir: paths.model_dir,
        }
    }
    fn load(&self, opts: &[(String, String)]) -> Result<Transcriber, String> {
        Transcriber::load(self.lib.clone(), &self.model_dir, ARCH_TINY, opts)
            .map_err(|e| e.to_string())
    }
}

// ---------------------------------------------------------------- CLI

struct Args {
    mode: String,
    policy: Policy,
    opts: Vec<(String, String)>,
    rounds: usize,
    pool: usize,
    channels: usize,
    seconds: f64,
    trigger: Option<Trigger>,
}

fn parse_args() -> Args {
    let mut a = std::env::args().skip(1);
    let mode = a.next().unwrap_or_else(|| "run".into());
    let mut args = Args {
        mode,
        policy: Policy {
            cadence_ms: 200,
            force: false,
            poll_ms: None,
        },
        opts: Vec::new(),
        rounds: 2,
        pool: 2,
        channels: 16,
        seconds: 60.0,
        trigger: None,
    };
    while let Some(flag) = a.next() {
        let mut val = || a.next().expect("flag value");
        match flag.as_str() {
            "--cadence" => args.policy.cadence_ms = val().parse().unwrap(),
            "--force" => args.policy.force = true,
            "--poll" => args.policy.poll_ms = Some(val().parse().unwrap()),
            "--opt" => {
                let v = val();
                let (k, v) = v.split_once('=').expect("NAME=VALUE");
                args.opts.push((k.into(), v.into()));
            }
            "--rounds" => args.rounds = val().parse().unwrap(),
            "--pool" => args.pool = val().parse().unwrap(),
            "--channels" => args.channels = val().parse().unwrap(),
            "--seconds" => args.seconds = val().parse().unwrap(),
            "--vadpoll" => {
                let v = val().parse().unwrap();
                let t = args.trigger.get_or_insert(Trigger {
                    vad_poll_ms: 50,
                    partial_ms: 500,
                });
                t.vad_poll_ms = v;
            }
            "--partial" => {
                let v = val().parse().unwrap();
                let t = args.trigger.get_or_insert(Trigger {
                    vad_poll_ms: 50,
                    partial_ms: 500,
                });
                t.partial_ms = v;
            }
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

/// Round r shifts the timeline by r*130 ms so cadence boundaries fall elsewhere.
fn round_timeline(clips: &[Clip], r: usize) -> Timeline {
    timeline(clips, 0.5 + 0.13 * r as f64, 1.5, false, 0)
}

fn measure(t: &Transcriber, clips: &[Clip], pol: &Policy, rounds: usize) -> Metrics {
    let mut m = Metrics::default();
    for r in 0..rounds {
        let tl = round_timeline(clips, r);
        let out = run_stream(t, &tl, pol);
        m.add(clips, &tl, &out);
    }
    m
}

fn main() {
    let args = parse_args();
    let clips = load_clips();
    let engine = Engine::open();
    println!(
        "<!-- mode {} | library version {} | loadavg at start {} | {} clips, {:.1} s of speech -->",
        args.mode,
        engine.lib.version(),
        loadavg(),
        clips.len(),
        clips.iter().map(|c| c.offset - c.onset).sum::<f64>()
    );
    match args.mode.as_str() {
        "clips" => {
            for c in &clips {
                println!(
                    "{} len {:.2}s onset {:.2} offset {:.2}",
                    c.name,
                    c.samples.len() as f64 / SR as f64,
                    c.onset,
                    c.offset
                );
            }
        }
        "run" => {
            let t = engine.load(&args.opts).expect("load");
            let m = measure(&t, &clips, &args.policy, args.rounds);
            println!("{HEADER}");
            println!(
                "{}",
                m.row(&format!("{} {:?}", args.policy.label(), args.opts))
            );
        }
        "lines" => {
            // debugging: dump every line of one run
            let t = engine.load(&args.opts).expect("load");
            let tl = round_timeline(&clips, 0);
            for p in &tl.placed {
                println!(
                    "clip {} start {:.2} onset {:.2} offset {:.2} end {:.2}",
                    clips[p.clip].name, p.start, p.onset, p.offset, p.end
                );
            }
            let out = run_stream(&t, &tl, &args.policy);
            for (id, l) in &out.lines {
                println!(
                    "line {id} start {:.2} dur {:.2} seen {:.2} text@{:?} complete@{:?} {:?}",
                    l.start_time, l.duration, l.first_seen, l.first_text, l.complete, l.text
                );
            }
        }
        "probe" => probe(&engine, &clips),
        "trigger" => trigger(&engine, &clips, &args),
        "sweep" => sweep(&engine, &clips, args.rounds),
        "options" => options(&engine, &clips, &args),
        "silence" => silence(&engine, &args),
        "parallel" => parallel(&engine, &clips, &args),
        "load" => load(&engine, &clips, &args),
        other => panic!("unknown mode {other}"),
    }
    println!("<!-- loadavg at end {} -->", loadavg());
}

// ---------------------------------------------------------------- VAD-triggered policy

/// "VAD trigger" policy: a second handle loaded with skip_transcription=true runs only the
/// library's VAD on the same audio, polled with FORCE every `vad_poll_ms`. The main stream
/// is force-decoded when the VAD stream shows a new line (first partial), when it shows a
/// line completed (final), and otherwise every `partial_ms` while a line is open. Nothing
/// is decoded in silence.
#[derive(Clone, Debug)]
struct Trigger {
    vad_poll_ms: u32,
    partial_ms: u32,
}

impl Trigger {
    fn label(&self) -> String {
        format!(
            "VAD poll {}ms, partial {}ms",
            self.vad_poll_ms, self.partial_ms
        )
    }
}

/// State of one channel under the trigger policy.
struct TriggerChan {
    main: StreamId,
    vad: StreamId,
    seen: std::collections::HashSet<u64>,
    done: std::collections::HashSet<u64>,
    last_decode_ms: u64,
    /// no open line with text at the last decode: retry after 100 ms, not `partial_ms`
    open_empty: bool,
}

impl TriggerChan {
    fn open(main: &Transcriber, vad: &Transcriber) -> TriggerChan {
        TriggerChan {
            main: main.create_stream().unwrap(),
            vad: vad.create_stream().unwrap(),
            seen: Default::default(),
            done: Default::default(),
            last_decode_ms: 0,
            open_empty: false,
        }
    }

    /// Polls the VAD stream after `ms` of audio; returns the main stream's lines if it was
    /// decoded, plus the wall of the VAD call and of the decode.
    fn poll(
        &mut self,
        main: &Transcriber,
        vad: &Transcriber,
        tr: &Trigger,
        ms: u64,
    ) -> (Option<Vec<Line>>, f64, f64) {
        let a = Instant::now();
        let vl = vad.transcribe_stream(self.vad, FLAG_FORCE_UPDATE).unwrap();
        let vad_wall = a.elapsed().as_secs_f64();
        let mut trigger = false;
        let mut open = false;
        for l in &vl {
            if l.is_complete {
                trigger |= self.done.insert(l.id);
            } else {
                open = true;
                trigger |= self.seen.insert(l.id);
            }
        }
        let wait = if self.open_empty {
            100
        } else {
            tr.partial_ms as u64
        };
        if trigger || (open && ms - self.last_decode_ms >= wait) {
            self.last_decode_ms = ms;
            let a = Instant::now();
            let lines = main
                .transcribe_stream(self.main, FLAG_FORCE_UPDATE)
                .unwrap();
            // no open line with text yet (the library omits or blanks it): retry soon
            self.open_empty = !lines
                .iter()
                .any(|l| !l.is_complete && !l.text.trim().is_empty());
            (Some(lines), vad_wall, a.elapsed().as_secs_f64())
        } else {
            (None, vad_wall, 0.0)
        }
    }

    fn close(self, main: &Transcriber, vad: &Transcriber) -> Vec<Line> {
        let lines = main.finish_stream(self.main).unwrap();
        main.free_stream(self.main).unwrap();
        vad.free_stream(self.vad).unwrap();
        lines
    }
}

fn run_trigger(main: &Transcriber, vad: &Transcriber, tl: &Timeline, tr: &Trigger) -> RunOut {
    let mut out = RunOut {
        audio_s: tl.seconds(),
        ..Default::default()
    };
    let mut ch = TriggerChan::open(main, vad);
    let cpu0 = proc_cpu();
    let w0 = Instant::now();
    for (k, chunk) in tl.audio.chunks(CHUNK).enumerate() {
        let a = Instant::now();
        main.add_audio(ch.main, chunk, SR as u32).unwrap();
        vad.add_audio(ch.vad, chunk, SR as u32).unwrap();
        out.add_walls.push(a.elapsed().as_secs_f64());
        let ms = (k as u64 + 1) * CHUNK_MS as u64;
        if ms.is_multiple_of(tr.vad_poll_ms as u64) {
            let (lines, vw, dw) = ch.poll(main, vad, tr, ms);
            out.vad_walls.push(vw);
            if let Some(lines) = lines {
                let now = ms as f64 / 1000.0;
                out.calls.push(CallRec {
                    t: now,
                    wall: dw,
                    flags: FLAG_FORCE_UPDATE,
                    updated: lines.iter().any(|l| l.is_updated),
                });
                out.record(&lines, now, dw, false);
            }
        }
    }
    let a = Instant::now();
    let lines = ch.close(main, vad);
    let wall = a.elapsed().as_secs_f64();
    out.record(&lines, tl.seconds(), wall, true);
    out.wall_total = w0.elapsed().as_secs_f64();
    out.proc_cpu = proc_cpu() - cpu0;
    out
}

fn vad_options(opts: &[(String, String)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = opts.to_vec();
    v.push(("skip_transcription".into(), "true".into()));
    v
}

/// Trigger-policy runs: given --vadpoll/--partial, or a small grid.
fn trigger(engine: &Engine, clips: &[Clip], args: &Args) {
    let main = engine.load(&args.opts).expect("load main");
    let vad = engine
        .load(&vad_options(&args.opts))
        .expect("load VAD-only handle");
    let grid: Vec<Trigger> = match &args.trigger {
        Some(t) => vec![t.clone()],
        None => [(20, 500), (20, 1000), (20, 2000), (50, 1000), (100, 1000)]
            .iter()
            .map(|&(v, p)| Trigger {
                vad_poll_ms: v,
                partial_ms: p,
            })
            .collect(),
    };
    println!(
        "\n### VAD-triggered policy, options {:?} ({} rounds)\n",
        args.opts, args.rounds
    );
    println!("{HEADER} VAD call p50/p95 µs | main decodes |");
    for tr in grid {
        let mut m = Metrics::default();
        let mut vw = Vec::new();
        let mut decodes = 0;
        for r in 0..args.rounds {
            let tl = round_timeline(clips, r);
            let out = run_trigger(&main, &vad, &tl, &tr);
            vw.extend(out.vad_walls.iter().copied());
            decodes += out.calls.len();
            m.add(clips, &tl, &out);
        }
        println!(
            "{} {:.0}/{:.0} | {} |",
            m.row(&tr.label()),
            pct(&vw, 50.0) * 1e6,
            pct(&vw, 95.0) * 1e6,
            decodes
        );
    }
}

// ---------------------------------------------------------------- Q1

fn probe(engine: &Engine, clips: &[Clip]) {
    let t = engine.load(&[]).expect("load");
    for round in 0..2 {
        let tl = round_timeline(clips, round);
        // (a) 20 ms polling without FORCE: cost per call by situation.
        let pol = Policy {
            cadence_ms: 20,
            force: false,
            poll_ms: None,
        };
        let out = run_stream(&t, &tl, &pol);
        let state = |tt: f64| {
            for p in &tl.placed {
                if tt >= p.onset && tt <= p.offset {
                    return "speech";
                }
                if tt > p.offset && tt <= p.offset + 1.0 {
                    return "<=1 s after speech";
                }
            }
            "silence"
        };
        let completing: Vec<f64> = out
            .lines
            .values()
            .filter_map(|l| l.complete.filter(|c| !c.3).map(|c| c.0))
            .collect();
        let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for c in &out.calls {
            let kind = if completing.iter().any(|&x| (x - c.t).abs() < 1e-6) {
                "call that reported a completion".to_owned()
            } else {
                format!(
                    "{}, {}",
                    state(c.t),
                    if c.updated {
                        "returned an update (decoded)"
                    } else {
                        "no update (cached)"
                    }
                )
            };
            groups.entry(kind).or_default().push(c.wall);
        }
        println!(
            "\n### Q1a round {round}: transcribe_stream(flags=0) every 20 ms of audio — wall time per call\n"
        );
        println!(
            "| situation | calls | p50 µs | p95 µs | max µs | total s |\n|---|---|---|---|---|---|"
        );
        for (k, v) in &groups {
            println!(
                "| {k} | {} | {:.0} | {:.0} | {:.0} | {:.2} |",
                v.len(),
                pct(v, 50.0) * 1e6,
                pct(v, 95.0) * 1e6,
                pct(v, 100.0) * 1e6,
                v.iter().sum::<f64>()
            );
        }
        let aw = &out.add_walls;
        println!(
            "| add_audio (20 ms chunk), all | {} | {:.0} | {:.0} | {:.0} | {:.2} |",
            aw.len(),
            pct(aw, 50.0) * 1e6,
            pct(aw, 95.0) * 1e6,
            pct(aw, 100.0) * 1e6,
            aw.iter().sum::<f64>()
        );
        // Updated-call spacing during speech: how often does a non-forced call decode?
        let upd: Vec<f64> = out
            .calls
            .iter()
            .filter(|c| c.updated && state(c.t) == "speech")
            .map(|c| c.t)
            .collect();
        let gaps: Vec<f64> = upd
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|g| *g < 1.0)
            .collect();
        println!(
            "\nDuring speech, non-forced calls returned an update every {:.0} ms (median spacing; {} updates).",
            pct(&gaps, 50.0) * 1000.0,
            upd.len()
        );
        let mut m = Metrics::default();
        m.add(clips, &tl, &out);
        println!("\n{HEADER}\n{}", m.row("20ms no FORCE"));
        let _ = out.calls.iter().map(|c| c.flags).sum::<u32>();

        // (b) All audio added with no transcribe call at all, then one call.
        let s = t.create_stream().unwrap();
        let a = Instant::now();
        for chunk in tl.audio.chunks(CHUNK) {
            t.add_audio(s, chunk, SR as u32).unwrap();
        }
        let add = a.elapsed().as_secs_f64();
        let a = Instant::now();
        let lines = t.transcribe_stream(s, 0).unwrap();
        let first = a.elapsed().as_secs_f64();
        let complete = lines.iter().filter(|l| l.is_complete).count();
        let upd = lines.iter().filter(|l| l.is_updated).count();
        let a = Instant::now();
        let lines2 = t.transcribe_stream(s, 0).unwrap();
        let second = a.elapsed().as_secs_f64();
        let upd2 = lines2.iter().filter(|l| l.is_updated).count();
        t.free_stream(s).unwrap();
        println!(
            "\nQ1b round {round}: {:.1} s of audio added with no transcribe call: add_audio total {:.3} s; \
             then ONE transcribe_stream(0) took {:.3} s and returned {} lines ({} complete, {} updated); \
             an immediate second call took {:.6} s ({} updated).",
            tl.seconds(),
            add,
            first,
            lines.len(),
            complete,
            upd,
            second,
            upd2
        );
        for l in &lines {
            println!(
                "    id {} start {:.2} dur {:.2} complete {} {:?}",
                l.id, l.start_time, l.duration, l.is_complete, l.text
            );
        }
    }
}

// ---------------------------------------------------------------- Q2

fn sweep(engine: &Engine, clips: &[Clip], rounds: usize) {
    let t = engine.load(&[]).expect("load");
    println!(
        "\n### Q2: policy sweep (default options; {rounds} rounds, timeline shifted 130 ms per round)\n"
    );
    println!("{HEADER}");
    let mut policies = Vec::new();
    for force in [false, true] {
        for c in [100, 200, 300, 500] {
            policies.push(Policy {
                cadence_ms: c,
                force,
                poll_ms: None,
            });
        }
    }
    // FORCE every 100 ms costs ~2-3x real time on this machine: one round only (see note).
    let rounds_for = |p: &Policy| {
        if p.force && p.cadence_ms < 200 {
            1
        } else {
            rounds
        }
    };
    for pol in &policies {
        let m = measure(&t, clips, pol, rounds_for(pol));
        println!("{}", m.row(&pol.label()));
    }
}

// ---------------------------------------------------------------- Q3

fn options(engine: &Engine, clips: &[Clip], args: &Args) {
    println!("\n### Q3a: which options load (one handle per option, then freed)\n");
    println!("| option | value | load |\n|---|---|---|");
    let probes: &[(&str, &str)] = &[
        ("vad_threshold", "0.3"),
        ("vad_window_duration", "0.25"),
        ("vad_hop_size", "256"),
        ("vad_look_behind_sample_count", "4096"),
        ("transcription_interval", "0.1"),
        ("max_tokens_per_second", "6.5"),
        ("vad_max_segment_duration", "10"),
        ("return_audio_data", "false"),
        ("identify_speakers", "false"),
        ("word_timestamps", "false"),
        ("log_output_text", "false"),
        ("vad_threshold", "abc"),
        ("vad_hop_size", "100"),
        ("no_such_option", "1"),
    ];
    for (k, v) in probes {
        let r = engine.load(&[(k.to_string(), v.to_string())]);
        println!(
            "| {k} | {v} | {} |",
            match r {
                Ok(_) => "ok".to_owned(),
                Err(e) => format!("error: {e}"),
            }
        );
    }
    println!(
        "\n### Q3b: effect on TTF/WER under policy {} ({} rounds)\n",
        args.trigger
            .as_ref()
            .map_or(args.policy.label(), |t| t.label()),
        args.rounds
    );
    println!("{HEADER}");
    let mut configs: Vec<Vec<(&str, &str)>> = vec![vec![]];
    for v in ["0.3", "0.4", "0.6", "0.7"] {
        configs.push(vec![("vad_threshold", v)]);
    }
    for v in ["0.15", "0.25", "0.35"] {
        configs.push(vec![("vad_window_duration", v)]);
    }
    for v in ["256", "1024"] {
        configs.push(vec![("vad_hop_size", v)]);
    }
    for v in ["4096", "12288"] {
        configs.push(vec![("vad_look_behind_sample_count", v)]);
    }
    for v in ["0.1", "0.2", "1.0"] {
        configs.push(vec![("transcription_interval", v)]);
    }
    configs.push(vec![("max_tokens_per_second", "13")]);
    configs.push(vec![
        ("return_audio_data", "false"),
        ("identify_speakers", "false"),
    ]);
    let only: Option<String> = std::env::var("ONLY").ok();
    for cfg in configs {
        let label = if cfg.is_empty() {
            "defaults".to_owned()
        } else {
            cfg.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        if let Some(o) = &only
            && !label.contains(o.as_str())
            && !cfg.is_empty()
        {
            continue;
        }
        let mut opts: Vec<(String, String)> = args.opts.clone();
        opts.extend(cfg.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        match engine.load(&opts) {
            Ok(t) => {
                let m = match &args.trigger {
                    None => measure(&t, clips, &args.policy, args.rounds),
                    Some(tr) => {
                        let vad = engine.load(&vad_options(&opts)).expect("VAD handle");
                        let mut m = Metrics::default();
                        for r in 0..args.rounds {
                            let tl = round_timeline(clips, r);
                            let out = run_trigger(&t, &vad, &tl, tr);
                            m.add(clips, &tl, &out);
                        }
                        m
                    }
                };
                println!("{}", m.row(&label));
            }
            Err(e) => println!("| {label} | load failed: {e} |"),
        }
    }
}

// ---------------------------------------------------------------- Q4

fn silence(engine: &Engine, args: &Args) {
    let t = engine.load(&args.opts).expect("load");
    let secs = 60.0;
    let n = (secs * SR as f64) as usize;
    let mut rng = 0x2545F4914F6CDD1Du64;
    let mut noise = |dbfs: f64| -> Vec<f32> {
        // uniform white noise with the given RMS
        let amp = 10f64.powf(dbfs / 20.0) * 3f64.sqrt();
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                ((rng >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32 * amp as f32
            })
            .collect()
    };
    let inputs: Vec<(String, Vec<f32>)> = vec![
        ("digital silence (zeros)".into(), vec![0.0; n]),
        ("white noise -70 dBFS".into(), noise(-70.0)),
        ("white noise -55 dBFS".into(), noise(-55.0)),
        ("white noise -40 dBFS".into(), noise(-40.0)),
    ];
    println!(
        "\n### Q4: cost of a channel with no speech, policy {} {:?}, 60 s each, 2 runs\n",
        args.policy.label(),
        args.opts
    );
    println!(
        "| input | compute s/s (runs) | process CPU s/s (runs) | add_audio share | calls that decoded | lines with text |\n|---|---|---|---|---|---|"
    );
    for (label, audio) in inputs {
        let tl = Timeline {
            audio,
            placed: Vec::new(),
        };
        let mut comp = Vec::new();
        let mut procs = Vec::new();
        let mut share = 0.0;
        let mut decoded = 0;
        let mut texts = 0;
        for _ in 0..2 {
            let out = match &args.trigger {
                None => run_stream(&t, &tl, &args.policy),
                Some(tr) => {
                    let vad = engine.load(&vad_options(&args.opts)).expect("VAD handle");
                    run_trigger(&t, &vad, &tl, tr)
                }
            };
            let add: f64 = out.add_walls.iter().sum::<f64>() + out.vad_walls.iter().sum::<f64>();
            let calls: f64 = out.calls.iter().map(|c| c.wall).sum();
            comp.push(format!("{:.4}", (add + calls) / secs));
            procs.push(format!("{:.3}", out.proc_cpu / secs));
            share = add / (add + calls);
            decoded = out.calls.iter().filter(|c| c.updated).count();
            texts = out
                .lines
                .values()
                .filter(|l| !l.text.trim().is_empty())
                .count();
        }
        println!(
            "| {label} | {} | {} | {:.0}% | {decoded} | {texts} |",
            comp.join("/"),
            procs.join("/"),
            share * 100.0
        );
    }
}

// ---------------------------------------------------------------- Q5

/// Feeds `streams` streams on one handle, interleaved chunk by chunk, as fast as possible.
/// Returns (audio seconds processed, compute seconds).
fn interleaved(t: &Transcriber, tls: &[Timeline], pol: &Policy) -> (f64, f64) {
    let streams: Vec<StreamId> = tls.iter().map(|_| t.create_stream().unwrap()).collect();
    let len = tls.iter().map(|tl| tl.audio.len()).max().unwrap();
    let a = Instant::now();
    let mut k = 0;
    while k * CHUNK < len {
        let ms = (k as u64 + 1) * CHUNK_MS as u64;
        for (s, tl) in streams.iter().zip(tls) {
            if k * CHUNK >= tl.audio.len() {
                continue;
            }
            let end = ((k + 1) * CHUNK).min(tl.audio.len());
            t.add_audio(*s, &tl.audio[k * CHUNK..end], SR as u32)
                .unwrap();
            if let Some(flags) = pol.due(ms) {
                t.transcribe_stream(*s, flags).unwrap();
            }
        }
        k += 1;
    }
    for s in &streams {
        t.finish_stream(*s).unwrap();
        t.free_stream(*s).unwrap();
    }
    (
        tls.iter().map(|tl| tl.seconds()).sum(),
        a.elapsed().as_secs_f64(),
    )
}

fn parallel(engine: &Engine, clips: &[Clip], args: &Args) {
    let pol = &args.policy;
    println!(
        "\n### Q5: throughput, policy {} {:?} (audio seconds processed per wall second; ≥ channels means real time)\n",
        pol.label(),
        args.opts
    );
    let before = thread_names();
    let t0 = engine.load(&args.opts).expect("load");
    let after_load = thread_names();
    let tl = round_timeline(clips, 0);
    let _ = run_stream(&t0, &tl, pol);
    let after_run = thread_names();
    let t1 = engine.load(&args.opts).expect("load");
    let _ = run_stream(&t1, &tl, pol);
    let after_two = thread_names();
    let fmt = |m: &BTreeMap<String, usize>| {
        format!(
            "{} threads: {}",
            m.values().sum::<usize>(),
            m.iter()
                .map(|(k, v)| format!("{k}×{v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    println!("- threads before any handle: {}", fmt(&before));
    println!("- after loading 1 handle: {}", fmt(&after_load));
    println!("- after 1 handle ran a stream: {}", fmt(&after_run));
    println!("- after 2 handles ran: {}\n", fmt(&after_two));

    println!(
        "| setup | channels | audio s | wall s (runs) | throughput audio-s/wall-s (runs) | process CPU cores used |\n|---|---|---|---|---|---|"
    );
    let conv = |n: usize| -> Vec<Timeline> {
        (0..n)
            .map(|i| {
                let mut tl = timeline(clips, 0.5 + 0.37 * i as f64, 1.5, true, i % clips.len());
                tl.audio.truncate((args.seconds * SR as f64) as usize);
                tl
            })
            .collect()
    };
    let tls1 = vec![round_timeline(clips, 0)];
    let tls2 = vec![round_timeline(clips, 0), round_timeline(clips, 1)];
    type Setup<'a> = (&'a str, usize, Vec<Timeline>);
    let setups: Vec<Setup> = vec![
        ("1 handle, 1 stream", 1, tls1),
        ("1 handle, 2 streams interleaved", 1, tls2),
        (
            "2 handles in 2 threads, 1 stream each",
            2,
            vec![round_timeline(clips, 0), round_timeline(clips, 1)],
        ),
        ("1 handle, 16 conversational streams", 1, conv(16)),
        (
            "2 handles in 2 threads, 8 conversational streams each",
            2,
            conv(16),
        ),
    ];
    let handles = [t0, t1];
    let mut extra = None;
    for (label, nh, tls) in setups {
        if nh == 3 && extra.is_none() {
            extra = Some(engine.load(&args.opts).expect("load"));
        }
        let mut walls = Vec::new();
        let mut tputs = Vec::new();
        let mut cores = Vec::new();
        let audio: f64 = tls.iter().map(|t| t.seconds()).sum();
        for _ in 0..2 {
            let cpu0 = proc_cpu();
            let a = Instant::now();
            if nh == 1 {
                interleaved(&handles[0], &tls, pol);
            } else {
                // split channels round-robin over handles, one thread per handle
                let mut groups: Vec<Vec<&Timeline>> = vec![Vec::new(); nh];
                for (i, tl) in tls.iter().enumerate() {
                    groups[i % nh].push(tl);
                }
                let hs: Vec<&Transcriber> = handles.iter().chain(extra.iter()).collect();
                std::thread::scope(|sc| {
                    for (h, g) in hs.iter().zip(groups) {
                        let h = SendRef(h);
                        sc.spawn(move || {
                            let h = h;
                            let owned: Vec<Timeline> = g
                                .iter()
                                .map(|tl| Timeline {
                                    audio: tl.audio.clone(),
                                    placed: Vec::new(),
                                })
                                .collect();
                            interleaved(h.0, &owned, pol);
                        });
                    }
                });
            }
            let wall = a.elapsed().as_secs_f64();
            walls.push(format!("{wall:.1}"));
            tputs.push(format!("{:.1}", audio / wall));
            cores.push(format!("{:.2}", (proc_cpu() - cpu0) / wall));
        }
        println!(
            "| {label} | {} | {:.0} | {} | {} | {} |",
            tls.len(),
            audio,
            walls.join("/"),
            tputs.join("/"),
            cores.join("/")
        );
    }
}

/// A handle used from one other thread while the owner waits (scoped); the library allows
/// one call at a time per handle and each handle is used by exactly one thread here.
struct SendRef<'a>(&'a Transcriber);
// SAFETY: see above — each Transcriber is touched by exactly one thread at a time.
unsafe impl Send for SendRef<'_> {}

// ---------------------------------------------------------------- paced load test

/// `channels` conversational channels paced in real time on `pool` handles (one thread
/// each, round-robin like the server's worker), for `seconds`. Wall-clock TTF.
fn load(engine: &Engine, clips: &[Clip], args: &Args) {
    let pol = args.policy.clone();
    let handles: Vec<Transcriber> = (0..args.pool)
        .map(|_| engine.load(&args.opts).expect("load"))
        .collect();
    let tls: Vec<Timeline> = (0..args.channels)
        .map(|i| {
            let mut tl = timeline(clips, 0.5 + 0.37 * i as f64, 1.5, true, i % clips.len());
            tl.audio.truncate((args.seconds * SR as f64) as usize);
            tl.placed.retain(|p| p.offset + 1.5 < args.seconds);
            tl
        })
        .collect();
    let start = Instant::now() + Duration::from_millis(200);
    let cpu0 = proc_cpu();
    let results: Vec<(Metrics, f64)> = std::thread::scope(|sc| {
        let mut joins = Vec::new();
        for (w, h) in handles.iter().enumerate() {
            let mine: Vec<&Timeline> = tls.iter().skip(w).step_by(args.pool).collect();
            let h = SendRef(h);
            let pol = pol.clone();
            joins.push(sc.spawn(move || {
                let h = h;
                let t = h.0;
                let streams: Vec<StreamId> =
                    mine.iter().map(|_| t.create_stream().unwrap()).collect();
                let mut pos = vec![0usize; mine.len()];
                let mut outs: Vec<RunOut> = mine
                    .iter()
                    .map(|tl| RunOut {
                        audio_s: tl.seconds(),
                        ..Default::default()
                    })
                    .collect();
                let mut max_lag = 0.0f64;
                std::thread::sleep(start.saturating_duration_since(Instant::now()));
                loop {
                    let mut done = true;
                    for (i, tl) in mine.iter().enumerate() {
                        if pos[i] >= tl.audio.len() {
                            continue;
                        }
                        done = false;
                        let now = start.elapsed().as_secs_f64();
                        let due = ((now * SR as f64) as usize / CHUNK * CHUNK).min(tl.audio.len());
                        if due <= pos[i] {
                            continue;
                        }
                        max_lag = max_lag.max(now - pos[i] as f64 / SR as f64);
                        let before_ms = (pos[i] / CHUNK) as u64 * CHUNK_MS as u64;
                        let a = Instant::now();
                        t.add_audio(streams[i], &tl.audio[pos[i]..due], SR as u32)
                            .unwrap();
                        outs[i].add_walls.push(a.elapsed().as_secs_f64());
                        pos[i] = due;
                        let after_ms = (due / CHUNK) as u64 * CHUNK_MS as u64;
                        // the strongest call that fell due in the chunks just fed
                        let mut flags = None;
                        let mut ms = before_ms + CHUNK_MS as u64;
                        while ms <= after_ms {
                            if let Some(f) = pol.due(ms) {
                                flags = Some(flags.map_or(f, |g: u32| g | f));
                            }
                            ms += CHUNK_MS as u64;
                        }
                        if let Some(f) = flags {
                            let a = Instant::now();
                            let lines = t.transcribe_stream(streams[i], f).unwrap();
                            let wall = a.elapsed().as_secs_f64();
                            // time stamps are wall-clock seconds since start (= audio time
                            // of live audio), taken after the call: wall already included
                            let tnow = start.elapsed().as_secs_f64();
                            outs[i].calls.push(CallRec {
                                t: tnow,
                                wall,
                                flags: f,
                                updated: false,
                            });
                            outs[i].record(&lines, tnow, 0.0, false);
                        }
                    }
                    if done {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                let mut m = Metrics::default();
                for (i, tl) in mine.iter().enumerate() {
                    let lines = t.finish_stream(streams[i]).unwrap();
                    let tnow = start.elapsed().as_secs_f64();
                    outs[i].record(&lines, tnow, 0.0, true);
                    m.add(clips, tl, &outs[i]);
                }
                (m, max_lag)
            }));
        }
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    });
    let wall = start.elapsed().as_secs_f64();
    let mut all = Metrics::default();
    let mut lag: f64 = 0.0;
    for (m, l) in results {
        all.ttf.extend(m.ttf);
        all.ttf_audio.extend(m.ttf_audio);
        all.first_partial.extend(m.first_partial);
        all.word_errors += m.word_errors;
        all.words += m.words;
        all.at_end += m.at_end;
        all.not_updated += m.not_updated;
        all.lines += m.lines;
        all.stray_lines += m.stray_lines;
        all.compute_per_s.extend(m.compute_per_s.iter().copied());
        all.proc_per_s.clear();
        lag = lag.max(l);
    }
    let comp: f64 = all.compute_per_s.iter().sum::<f64>() / all.compute_per_s.len() as f64;
    all.compute_per_s = vec![comp];
    all.proc_per_s = vec![(proc_cpu() - cpu0) / wall];
    println!(
        "\n### paced load: {} channels (conversational) on {} handle(s), policy {} {:?}, {:.0} s wall; max feed lag {:.2} s\n(TTF here is wall-clock; 'process CPU' column = cores used; 'compute' = mean per-channel compute s/s)\n",
        args.channels,
        args.pool,
        pol.label(),
        args.opts,
        wall,
        lag
    );
    println!(
        "{HEADER}\n{}",
        all.row(&format!("{}ch/{}h", args.channels, args.pool))
    );
}
