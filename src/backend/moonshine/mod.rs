//! The embedded default backend: Moonshine tiny-en through libmoonshine.so.
//!
//! A handle holds the model (~150 MB) and takes one call at a time, so hark loads a small
//! pool of them and gives each its own worker thread, which owns the handle outright (no
//! lock) and serves every channel assigned to it. A channel goes to the worker with the
//! fewest channels. Workers sleep on `park` and are unparked by pushes into the rings.
//!
//! hark finds the utterances itself ([`crate::segmenter`]) and decodes each with one batch
//! call, instead of the library's streams: the library only ends a line on a decode, which
//! put a floor of ~320–390 ms plus a decode under every final, and re-decoded every line
//! of the call on each update. A worker's loop first takes every channel's new audio (cheap:
//! resampling and the voice detector), then runs the single decode that matters most —
//! finals, then speculative decodes at pauses, then partials — so under load partials
//! thin out and finals stay on time.

pub mod fetch;
pub mod ffi;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tracing::{error, info};

use self::ffi::{Library, Transcriber};
use crate::audio::AudioSource;
use crate::backend::{Backend, BackendError, ChannelSpec, EventSink};
use crate::config::MoonshineConfig;
use crate::metrics as m;
use crate::resample::StreamResampler;
use crate::segmenter::{DecodeKind, Emit, Segmenter, SegmenterConfig};

/// The rate the model works at; other rates are converted with rubato first.
pub const MODEL_RATE: u32 = 16_000;
/// Longest a worker sleeps before looking at its channels again without being woken.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// Samples taken from a ring at a time.
const MAX_STEP_SAMPLES: usize = 16_000;
/// Library options; a config may override them. hark cuts the utterances itself, so the
/// library's own detector is turned off (threshold 0): with it on, a decode split the
/// pre-roll into a line of its own that the model heard as "You" (BENCHMARKS.md).
const DEFAULT_OPTIONS: [(&str, &str); 1] = [("vad_threshold", "0")];

pub struct Moonshine {
    workers: OnceLock<Vec<Worker>>,
    load_error: OnceLock<String>,
    partial_interval_ms: u64,
    endpoint_ms: u64,
}

struct Worker {
    jobs: Sender<Job>,
    thread: Thread,
    channels: Arc<AtomicUsize>,
}

struct Job {
    audio: AudioSource,
    events: EventSink,
    sample_rate: u32,
    cuts: SegmenterConfig,
}

impl Moonshine {
    /// Starts fetching (first run only) and loading the engine in the background;
    /// `is_ready` turns true once the whole pool is loaded.
    pub fn spawn(config: &MoonshineConfig) -> Arc<Self> {
        let backend = Arc::new(Self {
            workers: OnceLock::new(),
            load_error: OnceLock::new(),
            partial_interval_ms: config.partial_interval_ms,
            endpoint_ms: config.endpoint_ms,
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
        // A profile may ask for its own timing; otherwise the server-wide one.
        let ms = |name: &str, default: u64| {
            spec.options
                .get(name)
                .and_then(toml::Value::as_integer)
                .map_or(default, |v| v.max(0) as u64)
        };
        let cuts = SegmenterConfig::from_ms(
            ms("endpoint_ms", self.endpoint_ms),
            ms("partial_interval_ms", self.partial_interval_ms),
        );
        audio.wake_thread(worker.thread.clone());
        worker.channels.fetch_add(1, Ordering::AcqRel);
        worker
            .jobs
            .send(Job {
                audio,
                events,
                sample_rate: spec.sample_rate,
                cuts,
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

/// A worker thread: owns one handle and serves its channels' audio and decodes.
fn work(transcriber: Transcriber, jobs: Receiver<Job>, count: Arc<AtomicUsize>) {
    let mut channels: Vec<Recognition> = Vec::new();
    // Removes channel `index`, reporting `error` if it failed.
    let retire = |channels: &mut Vec<Recognition>, index: usize, error: Option<String>| {
        let r = channels.swap_remove(index);
        count.fetch_sub(1, Ordering::AcqRel);
        r.close(error);
    };
    loop {
        loop {
            match jobs.try_recv() {
                Ok(job) => match Recognition::open(job) {
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
        // Every channel's new audio first: it is cheap and keeps endpoints on time.
        let mut index = 0;
        while index < channels.len() {
            match std::panic::catch_unwind(AssertUnwindSafe(|| channels[index].ingest())) {
                Ok(Ok(true)) => index += 1,
                Ok(Ok(false)) => retire(&mut channels, index, None),
                Ok(Err(e)) => retire(&mut channels, index, Some(e)),
                Err(_) => retire(&mut channels, index, Some("recognizer panicked".into())),
            }
        }
        // Then the one decode that matters most: by kind, then the longest waiting.
        let next = channels
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.segmenter.want().map(|w| (w.kind, w.since, i)))
            .min();
        let Some((kind, since, index)) = next else {
            thread::park_timeout(IDLE_POLL);
            continue;
        };
        let decoded = std::panic::catch_unwind(AssertUnwindSafe(|| {
            channels[index].decode(&transcriber, kind, since)
        }));
        match decoded {
            Ok(Ok(())) => {}
            Ok(Err(e)) => retire(&mut channels, index, Some(e)),
            Err(_) => retire(&mut channels, index, Some("recognizer panicked".into())),
        }
    }
}

/// One channel being recognised on a worker's handle.
struct Recognition {
    audio: AudioSource,
    events: Option<EventSink>,
    resampler: Option<StreamResampler>,
    segmenter: Segmenter,
    /// Scratch buffers, kept to avoid allocating per step: ring samples, input-rate and
    /// model-rate audio, and what the segmenter has to say.
    pcm: Vec<i16>,
    input: Vec<f32>,
    samples: Vec<f32>,
    emits: Vec<Emit>,
    finished: bool,
}

impl Recognition {
    fn open(job: Job) -> Result<Self, (EventSink, String)> {
        let Job {
            audio,
            events,
            sample_rate,
            cuts,
        } = job;
        let resampler = if sample_rate == MODEL_RATE {
            None
        } else {
            match StreamResampler::new(sample_rate, MODEL_RATE) {
                Ok(r) => Some(r),
                Err(e) => return Err((events, e)),
            }
        };
        Ok(Self {
            audio,
            events: Some(events),
            resampler,
            segmenter: Segmenter::new(cuts),
            pcm: vec![0; MAX_STEP_SAMPLES],
            input: Vec::with_capacity(MAX_STEP_SAMPLES),
            samples: Vec::with_capacity(MAX_STEP_SAMPLES),
            emits: Vec::new(),
            finished: false,
        })
    }

    /// Takes all audio waiting in the ring through the segmenter. False once the channel
    /// is over: its session left, or its audio ended and every final was reported.
    fn ingest(&mut self) -> Result<bool, String> {
        if !self.events.as_ref().is_some_and(EventSink::is_open) {
            return Ok(false);
        }
        let now = Instant::now();
        loop {
            let n = self.audio.pop(&mut self.pcm);
            if n == 0 {
                break;
            }
            self.convert(n, false);
            self.segmenter
                .push(&self.samples, self.audio.position(), now, &mut self.emits);
        }
        if !self.finished && self.audio.is_finished() {
            self.finished = true;
            let at = self.audio.position();
            self.convert(0, true);
            self.segmenter.push(&self.samples, at, now, &mut self.emits);
            self.segmenter.finish(at, now, &mut self.emits);
        }
        self.report();
        if self.finished && self.segmenter.is_idle() {
            if let Some(events) = self.events.take() {
                events.done();
            }
            return Ok(false);
        }
        Ok(true)
    }

    /// Converts `n` popped samples to the model's rate and format, into `samples`.
    fn convert(&mut self, n: usize, last: bool) {
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
    }

    /// Runs the decode the segmenter asked for and reports what it means.
    fn decode(&mut self, t: &Transcriber, kind: DecodeKind, since: Instant) -> Result<(), String> {
        let started = Instant::now();
        metrics::histogram!(m::DECODE_WAIT, "kind" => kind.as_str())
            .record(started.saturating_duration_since(since).as_secs_f64());
        let lines = t
            .transcribe_without_streaming(self.segmenter.audio(kind), MODEL_RATE)
            .map_err(|e| e.to_string())?;
        metrics::histogram!(m::DECODE_SECONDS, "kind" => kind.as_str())
            .record(started.elapsed().as_secs_f64());
        let text = lines
            .iter()
            .map(|l| l.text.trim())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        self.segmenter
            .decoded(kind, text, Instant::now(), &mut self.emits);
        self.report();
        Ok(())
    }

    /// Sends what the segmenter emitted, and tells the session how far behind it is.
    fn report(&mut self) {
        self.audio.owe_from(self.segmenter.pending_since());
        let Some(events) = &self.events else {
            self.emits.clear();
            return;
        };
        for emit in self.emits.drain(..) {
            match emit {
                Emit::Partial(text) => events.partial(&text),
                Emit::Final(text, waited) => {
                    metrics::histogram!(m::TIME_TO_FINAL).record(waited.as_secs_f64());
                    events.final_text(&text);
                }
            }
        }
    }

    /// Reports `error` if recognition failed.
    fn close(mut self, error: Option<String>) {
        if let (Some(events), Some(e)) = (self.events.take(), error) {
            events.fail(e);
        }
    }
}
