//! The embedded default backend: Moonshine tiny-en through libmoonshine.so.
//!
//! A handle holds the model (~150 MB) and takes one call at a time, so hark loads a small
//! pool of them and gives each its own worker thread, which owns the handle outright (no
//! lock) and serves every channel assigned to it in turn. A channel goes to the worker with
//! the fewest channels. Workers sleep on `park` and are unparked by pushes into the rings.

pub mod fetch;
pub mod ffi;

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use self::ffi::{Library, Line, StreamId, Transcriber};
use crate::audio::AudioSource;
use crate::backend::{Backend, BackendError, ChannelSpec, EventSink};
use crate::config::MoonshineConfig;
use crate::resample::StreamResampler;

/// The rate the model works at; other rates are converted with rubato first.
pub const MODEL_RATE: u32 = 16_000;
/// Longest a worker sleeps before looking at its channels again without being woken.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// Samples taken from a ring per step, so one busy channel cannot starve the others.
const MAX_STEP_SAMPLES: usize = 16_000;
/// Library options measured to end segments sooner (detector delay ~390 → ~320 ms) at the
/// same accuracy (BENCHMARKS.md); a config may override them.
const DEFAULT_OPTIONS: [(&str, &str); 2] =
    [("vad_window_duration", "0.3"), ("vad_threshold", "0.4")];

pub struct Moonshine {
    workers: OnceLock<Vec<Worker>>,
    load_error: OnceLock<String>,
    partial_interval: Duration,
}

struct Worker {
    jobs: Sender<Job>,
    thread: Thread,
    channels: Arc<AtomicUsize>,
}

struct Job {
    spec: ChannelSpec,
    audio: AudioSource,
    events: EventSink,
    partial_interval_ms: u64,
}

impl Moonshine {
    /// Starts fetching (first run only) and loading the engine in the background;
    /// `is_ready` turns true once the whole pool is loaded.
    pub fn spawn(config: &MoonshineConfig) -> Arc<Self> {
        let backend = Arc::new(Self {
            workers: OnceLock::new(),
            load_error: OnceLock::new(),
            partial_interval: Duration::from_millis(config.partial_interval_ms),
        });
        let loader = backend.clone();
        let config = config.clone();
        let spawned = thread::Builder::new()
            .name("moonshine-load".into())
            .spawn(move || match load_pool(&config) {
                Ok(workers) => {
                    let _ = loader.workers.set(workers);
                }
                Err(e) => {
                    error!(error = %e, "embedded recognizer unavailable");
                    let _ = loader.load_error.set(e);
                }
            });
        if let Err(e) = spawned {
            let _ = backend
                .load_error
                .set(format!("cannot start loader thread: {e}"));
        }
        backend
    }

    /// Blocks until the pool is loaded or failed to load.
    pub fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            if self.workers.get().is_some() {
                return Ok(());
            }
            if let Some(e) = self.load_error.get() {
                return Err(e.clone());
            }
            if Instant::now() > deadline {
                return Err("timed out loading the embedded recognizer".into());
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Backend for Moonshine {
    fn is_ready(&self) -> bool {
        self.workers.get().is_some()
    }

    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        let Some(workers) = self.workers.get() else {
            return Err(BackendError::new(match self.load_error.get() {
                Some(e) => format!("embedded recognizer failed to load: {e}"),
                None => "embedded recognizer is still loading".into(),
            }));
        };
        let Some(worker) = workers
            .iter()
            .min_by_key(|w| w.channels.load(Ordering::Acquire))
        else {
            return Err(BackendError::new("no recognizer handles"));
        };
        audio.wake_thread(worker.thread.clone());
        worker.channels.fetch_add(1, Ordering::AcqRel);
        // A profile may ask for its own cadence; otherwise the server-wide one.
        let partial_interval_ms = spec
            .options
            .get("partial_interval_ms")
            .and_then(toml::Value::as_integer)
            .map_or(self.partial_interval.as_millis() as u64, |ms| {
                ms.max(0) as u64
            });
        worker
            .jobs
            .send(Job {
                spec,
                audio,
                events,
                partial_interval_ms,
            })
            .map_err(|_| {
                worker.channels.fetch_sub(1, Ordering::AcqRel);
                BackendError::new("recognizer worker has stopped")
            })?;
        worker.thread.unpark();
        Ok(())
    }
}

fn load_pool(config: &MoonshineConfig) -> Result<Vec<Worker>, String> {
    let paths = engine_paths(config)?;
    let lib = Library::load(&paths.lib).map_err(|e| e.to_string())?;
    let mut options: Vec<(String, String)> = DEFAULT_OPTIONS
        .iter()
        .filter(|(k, _)| !config.options.contains_key(*k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    options.extend(config.options.iter().map(|(k, v)| (k.clone(), v.clone())));
    let started = Instant::now();
    let mut workers = Vec::with_capacity(config.pool_size);
    for index in 0..config.pool_size {
        let transcriber =
            Transcriber::load(lib.clone(), &paths.model_dir, ffi::ARCH_TINY, &options).map_err(
                |e| format!("cannot load model from {}: {e}", paths.model_dir.display()),
            )?;
        workers.push(spawn_worker(index, transcriber)?);
    }
    info!(
        handles = config.pool_size,
        version = lib.version(),
        model = %paths.model_dir.display(),
        load_ms = started.elapsed().as_millis() as u64,
        "embedded recognizer ready"
    );
    Ok(workers)
}

/// Fetches the pinned engine on first use (with a progress bar) and returns where it is.
pub fn engine_paths(config: &MoonshineConfig) -> Result<fetch::EnginePaths, String> {
    let mut opts = fetch::FetchOptions::default();
    if let Some(dir) = &config.cache_dir {
        opts.cache_dir = dir.clone();
    }
    if let Some(wheel) = &config.wheel {
        opts.url = wheel.clone();
    }
    fetch::ensure_engine(&opts).map_err(|e| e.to_string())
}

fn spawn_worker(index: usize, transcriber: Transcriber) -> Result<Worker, String> {
    let (jobs, rx) = mpsc::channel();
    let channels = Arc::new(AtomicUsize::new(0));
    let count = channels.clone();
    let handle = thread::Builder::new()
        .name(format!("moonshine-{index}"))
        .spawn(move || work(transcriber, rx, count))
        .map_err(|e| format!("cannot start recognizer thread: {e}"))?;
    Ok(Worker {
        jobs,
        thread: handle.thread().clone(),
        channels,
    })
}

/// A worker thread: owns one handle and round-robins over its channels.
fn work(transcriber: Transcriber, jobs: Receiver<Job>, count: Arc<AtomicUsize>) {
    let mut channels: Vec<Recognition> = Vec::new();
    loop {
        loop {
            match jobs.try_recv() {
                Ok(job) => match Recognition::open(&transcriber, job) {
                    Ok(r) => channels.push(r),
                    Err((events, e)) => {
                        count.fetch_sub(1, Ordering::AcqRel);
                        events.fail(e);
                    }
                },
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) if channels.is_empty() => return,
                Err(TryRecvError::Disconnected) => break,
            }
        }
        let mut busy = false;
        let mut index = 0;
        while index < channels.len() {
            let step =
                std::panic::catch_unwind(AssertUnwindSafe(|| channels[index].step(&transcriber)));
            match step {
                Ok(Ok(Progress::Working)) => {
                    busy = true;
                    index += 1;
                }
                Ok(Ok(Progress::Waiting)) => index += 1,
                Ok(Ok(Progress::Finished)) => {
                    let r = channels.swap_remove(index);
                    count.fetch_sub(1, Ordering::AcqRel);
                    r.close(&transcriber, None);
                }
                Ok(Err(e)) => {
                    let r = channels.swap_remove(index);
                    count.fetch_sub(1, Ordering::AcqRel);
                    r.close(&transcriber, Some(e));
                }
                Err(_) => {
                    let r = channels.swap_remove(index);
                    count.fetch_sub(1, Ordering::AcqRel);
                    r.close(&transcriber, Some("recognizer panicked".into()));
                }
            }
        }
        if !busy {
            thread::park_timeout(IDLE_POLL);
        }
    }
}

enum Progress {
    /// Did work; there may be more.
    Working,
    /// Nothing to do until more audio arrives.
    Waiting,
    /// The audio ended and the last finals were reported.
    Finished,
}

/// One channel being recognised on a worker's handle.
struct Recognition {
    stream: StreamId,
    audio: AudioSource,
    events: Option<EventSink>,
    resampler: Option<StreamResampler>,
    pcm: Vec<i16>,
    /// Scratch buffers, kept to avoid allocating per step: input-rate and model-rate audio.
    input: Vec<f32>,
    samples: Vec<f32>,
    /// Model-rate samples fed since the last decode, and in all.
    since_decode: usize,
    fed: u64,
    decode_every: usize,
    finals: HashSet<u64>,
    last_partial: String,
}

impl Recognition {
    fn open(t: &Transcriber, job: Job) -> Result<Self, (EventSink, String)> {
        let Job {
            spec,
            audio,
            events,
            partial_interval_ms,
        } = job;
        let interval_ms = partial_interval_ms.clamp(50, 10_000) as usize;
        let resampler = if spec.sample_rate == MODEL_RATE {
            None
        } else {
            match StreamResampler::new(spec.sample_rate, MODEL_RATE) {
                Ok(r) => Some(r),
                Err(e) => return Err((events, e)),
            }
        };
        let stream = match t.create_stream() {
            Ok(s) => s,
            Err(e) => return Err((events, format!("cannot open a recognizer stream: {e}"))),
        };
        Ok(Self {
            stream,
            audio,
            events: Some(events),
            resampler,
            pcm: vec![0; MAX_STEP_SAMPLES],
            input: Vec::with_capacity(MAX_STEP_SAMPLES),
            samples: Vec::with_capacity(MAX_STEP_SAMPLES),
            since_decode: 0,
            fed: 0,
            decode_every: MODEL_RATE as usize * interval_ms / 1000,
            finals: HashSet::new(),
            last_partial: String::new(),
        })
    }

    fn step(&mut self, t: &Transcriber) -> Result<Progress, String> {
        let Some(events) = &self.events else {
            return Ok(Progress::Finished);
        };
        if !events.is_open() {
            return Ok(Progress::Finished);
        }
        let n = self.audio.pop(&mut self.pcm);
        if n > 0 {
            self.feed(t, n, false)?;
        }
        if self.since_decode >= self.decode_every {
            self.since_decode = 0;
            self.decode(t)?;
            return Ok(Progress::Working);
        }
        if self.audio.is_finished() {
            self.feed(t, 0, true)?;
            // A plain stop would drop audio not yet decoded; finish decodes it first.
            let started = Instant::now();
            let lines = t.finish_stream(self.stream).map_err(|e| e.to_string())?;
            self.report(&lines, true, started);
            if let Some(events) = self.events.take() {
                events.done();
            }
            return Ok(Progress::Finished);
        }
        Ok(if n > 0 {
            Progress::Working
        } else {
            Progress::Waiting
        })
    }

    /// Converts `n` popped samples to the model's rate and format and hands them over.
    fn feed(&mut self, t: &Transcriber, n: usize, last: bool) -> Result<(), String> {
        self.samples.clear();
        let pcm = &self.pcm[..n];
        match &mut self.resampler {
            None => self
                .samples
                .extend(pcm.iter().map(|&s| f32::from(s) / 32768.0)),
            Some(r) => {
                self.input.clear();
                self.input
                    .extend(pcm.iter().map(|&s| f32::from(s) / 32768.0));
                r.process(&self.input, &mut self.samples);
                if last {
                    r.flush(&mut self.samples);
                }
            }
        }
        self.since_decode += self.samples.len();
        self.fed += self.samples.len() as u64;
        t.add_audio(self.stream, &self.samples, MODEL_RATE)
            .map_err(|e| e.to_string())
    }

    /// Decodes the open line and reports what changed.
    fn decode(&mut self, t: &Transcriber) -> Result<(), String> {
        let started = Instant::now();
        let lines = t
            .transcribe_stream(self.stream, 0)
            .map_err(|e| e.to_string())?;
        self.report(&lines, false, started);
        Ok(())
    }

    /// Sends finals for newly completed lines and a partial for the open one; `at_end`
    /// completes every line, as nothing more will be heard.
    fn report(&mut self, lines: &[Line], at_end: bool, decode_started: Instant) {
        let Some(events) = &self.events else {
            return;
        };
        let now_in_stream = self.fed as f64 / f64::from(MODEL_RATE);
        // The library returns every line of the stream; only updated ones can be news.
        for line in lines.iter().filter(|l| l.is_updated || at_end) {
            if line.is_complete || at_end {
                if self.finals.insert(line.id) {
                    // Audio that arrived after the segment ended, plus this decode's time.
                    let waited = now_in_stream - f64::from(line.start_time + line.duration);
                    let ttf = waited.max(0.0) + decode_started.elapsed().as_secs_f64();
                    metrics::histogram!(crate::metrics::TIME_TO_FINAL).record(ttf);
                    events.final_text(&line.text);
                    self.last_partial.clear();
                }
            } else if line.text != self.last_partial {
                events.partial(&line.text);
                self.last_partial.clone_from(&line.text);
            }
        }
    }

    /// Releases the stream; reports `error` if recognition failed.
    fn close(mut self, t: &Transcriber, error: Option<String>) {
        if let Err(e) = t.free_stream(self.stream) {
            warn!(error = %e, "cannot free recognizer stream");
        }
        if let (Some(events), Some(e)) = (self.events.take(), error) {
            events.fail(e);
        }
    }
}
