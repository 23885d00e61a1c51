//! The embedded default backend: Moonshine tiny-en through libmoonshine.so.
//!
//! hark finds the utterances itself ([`segmenter`]) and decodes each with one batch
//! call, instead of the library's streams: the library only ends a line on a decode, which
//! put a floor of ~320–390 ms plus a decode under every final, and re-decoded every line
//! of the call on each update. [`pool`] has the threads: one listener for all channels'
//! audio and one decoder per recognizer handle (a handle holds the model, ~150 MB, and
//! takes one call at a time).

mod config;
pub mod ffi;
mod pool;
pub mod segmenter;

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

pub use self::config::{MoonshineConfig, NAME};
use self::ffi::{Library, Transcriber};
use self::pool::{Job, Pool};
use self::segmenter::SegmenterConfig;
use crate::audio::AudioSource;
use crate::backend::{Backend, BackendError, Booking, ChannelSpec, EventSink};
use crate::protocol::Channel;
use crate::turn::{TurnModel, TurnPaths};
use crate::wheel;

/// The rate the model works at; other rates are converted with rubato first.
pub const MODEL_RATE: u32 = 16_000;
/// Library options; a config may override them. hark cuts the utterances itself, so the
/// library's own detector is turned off (threshold 0): with it on, a decode split the
/// pre-roll into a line of its own that the model heard as "You" (BENCHMARKS.md).
const DEFAULT_OPTIONS: [(&str, &str); 1] = [("vad_threshold", "0")];
/// Nice value of the decoding threads where `SCHED_IDLE` is refused. Decodes keep both
/// cores busy under load; below the runtime and the listener, they rarely delay a frame or a
/// transcript (BENCHMARKS.md: server overhead).
const DECODE_NICE: i32 = 10;
/// A decode running this long is stuck in the library (the longest utterance, 24 s, decodes
/// in about a second): readiness turns false so no more calls are sent here.
const WEDGED_AFTER: Duration = Duration::from_secs(10);

pub struct Moonshine {
    pool: OnceLock<Running>,
    load_error: OnceLock<String>,
    partial_interval_ms: u64,
    endpoint_ms: u64,
    narrowband_endpoint_ms: u64,
    max_load: f64,
    turn_model: bool,
    context_span_ms: u64,
}

/// The loaded pool and the way to hand it channels.
struct Running {
    pool: Arc<Pool>,
    jobs: Sender<Job>,
    listener: Thread,
    /// The end-of-turn model is loaded.
    judging: bool,
}

impl Moonshine {
    /// Starts fetching (first run only) and loading the engine in the background;
    /// `is_ready` turns true once the whole pool is loaded. The end-of-turn model is loaded
    /// too if `turn_model` (some profile may want it where the default does not).
    pub fn spawn(config: &MoonshineConfig, turn_model: bool) -> Arc<Self> {
        let backend = Arc::new(Self {
            pool: OnceLock::new(),
            load_error: OnceLock::new(),
            partial_interval_ms: config.partial_interval_ms,
            endpoint_ms: config.endpoint_ms,
            narrowband_endpoint_ms: config.narrowband_endpoint_ms,
            max_load: config.max_load,
            turn_model: config.turn_model,
            context_span_ms: config.context_span_ms,
        });
        let loader = backend.clone();
        let config = config.clone();
        let spawned = thread::Builder::new()
            .name("moonshine-load".into())
            .spawn(move || match load_pool(&config, turn_model) {
                Ok(running) => {
                    let _ = loader.pool.set(running);
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

    /// Where a channel's utterances end: the profile's timing if it has one, else the
    /// server-wide one; calls below the model's rate get the narrowband endpoint.
    fn cuts(&self, spec: &ChannelSpec, judging: bool) -> SegmenterConfig {
        let o = &spec.options;
        let endpoint = if spec.sample_rate < MODEL_RATE {
            o.narrowband_endpoint_ms
                .unwrap_or(self.narrowband_endpoint_ms)
        } else {
            o.endpoint_ms.unwrap_or(self.endpoint_ms)
        };
        let mut cuts = SegmenterConfig::from_ms(
            endpoint,
            o.partial_interval_ms.unwrap_or(self.partial_interval_ms),
        );
        cuts.context_span = (self.context_span_ms as usize).min(60_000) * 16;
        // Measured on customers' speech; on text-to-speech prompts it is unreliable.
        cuts.judge_turns =
            judging && spec.channel == Channel::Customer && o.turn_model.unwrap_or(self.turn_model);
        cuts
    }

    /// Blocks until the pool is loaded or failed to load.
    pub fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            if self.pool.get().is_some() {
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
        self.pool
            .get()
            .is_some_and(|r| r.pool.is_healthy(WEDGED_AFTER))
    }

    fn has_headroom(&self, channels: usize) -> bool {
        self.pool
            .get()
            .is_some_and(|r| r.pool.has_headroom(channels, self.max_load))
    }

    fn reserve(&self, channels: usize) -> Option<Booking> {
        self.pool.get()?.pool.book(channels, self.max_load)
    }

    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        let Some(running) = self.pool.get() else {
            return Err(BackendError::new(match self.load_error.get() {
                Some(e) => format!("embedded recognizer failed to load: {e}"),
                None => "embedded recognizer is still loading".into(),
            }));
        };
        let cuts = self.cuts(&spec, running.judging);
        audio.wake_thread(running.listener.clone());
        running.pool.starting();
        let sent = running.jobs.send(Job {
            audio,
            events,
            sample_rate: spec.sample_rate,
            cuts,
        });
        if sent.is_err() {
            running.pool.started();
            return Err(BackendError::new("recognizer listener has stopped"));
        }
        running.listener.unpark();
        Ok(())
    }
}

fn load_pool(config: &MoonshineConfig, turn_model: bool) -> Result<Running, String> {
    let paths = engine_paths(config)?;
    let (jobs, rx) = mpsc::channel();
    let pool = Pool::new(config.pool_size);
    // The listener keeps the server's priority; everything started after this line on this
    // thread (onnxruntime's threads, the decoders) runs below it.
    let listener = pool::spawn_listener(pool.clone(), rx)?;
    run_in_background();
    let lib = Library::load(&paths.lib).map_err(|e| e.to_string())?;
    let mut options: Vec<(String, String)> = DEFAULT_OPTIONS
        .iter()
        .filter(|(k, _)| !config.options.contains_key(*k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    options.extend(config.options.iter().map(|(k, v)| (k.clone(), v.clone())));
    let started = Instant::now();
    for index in 0..config.pool_size {
        let transcriber =
            Transcriber::load(lib.clone(), &paths.model_dir, ffi::ARCH_TINY, &options).map_err(
                |e| format!("cannot load model from {}: {e}", paths.model_dir.display()),
            )?;
        pool::spawn_decoder(pool.clone(), index, transcriber)?;
    }
    let judging = turn_model && load_judge(config, &paths, &pool);
    info!(
        handles = config.pool_size,
        version = lib.version(),
        model = %paths.model_dir.display(),
        load_ms = started.elapsed().as_millis() as u64,
        "embedded recognizer ready"
    );
    Ok(Running {
        pool,
        jobs,
        listener,
        judging,
    })
}

/// Fetches (first run only) and loads the end-of-turn model onto its own thread. Finals
/// are still right without it, only less well ended: a failure is a warning.
fn load_judge(config: &MoonshineConfig, engine: &wheel::EnginePaths, pool: &Arc<Pool>) -> bool {
    let cache = config
        .cache_dir
        .clone()
        .unwrap_or_else(wheel::default_cache_dir);
    let loaded = crate::turn::ensure_model(&crate::turn::fetch_options(cache))
        .map_err(|e| e.to_string())
        .and_then(|model| {
            TurnModel::load(&TurnPaths::new(model, engine)).map_err(|e| e.to_string())
        })
        .and_then(|model| pool::spawn_judge(pool.clone(), model));
    match loaded {
        Ok(()) => true,
        Err(e) => {
            warn!(error = %e, "end-of-turn model unavailable; customer finals end as decoded");
            false
        }
    }
}

/// Puts the calling thread in the `SCHED_IDLE` class (nice `DECODE_NICE` if that is
/// refused). Linux keeps both per thread and new threads inherit them, so the recognizer's
/// threads, started afterwards, all run below the server. A nice value only lowers the
/// share: the scheduler still lets a decode finish its time slice before a woken runtime
/// thread runs, which put 1–5 ms into the frame and event paths now and then; a
/// `SCHED_IDLE` thread gives way at once to any ordinary one.
fn run_in_background() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain system calls about the calling thread (pid 0).
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0 {
        return;
    }
    let idle_error = std::io::Error::last_os_error();
    // SAFETY: as above.
    let code = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, DECODE_NICE)
    };
    if code != 0 {
        warn!(
            idle_error = %idle_error,
            error = %std::io::Error::last_os_error(),
            "cannot lower the recognizer's priority; decodes may delay network I/O"
        );
    }
}

/// Fetches the pinned engine on first use (with a progress bar) and returns where it is.
pub fn engine_paths(config: &MoonshineConfig) -> Result<wheel::EnginePaths, String> {
    let mut opts = wheel::FetchOptions::default();
    if let Some(dir) = &config.cache_dir {
        opts.cache_dir = dir.clone();
    }
    if let Some(wheel) = &config.wheel {
        opts.url = wheel.clone();
    }
    wheel::ensure_engine(&opts).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sample_rate: u32, options: &[(&str, u64)]) -> ChannelSpec {
        let mut o = crate::backend::Options::default();
        for (k, v) in options {
            match *k {
                "endpoint_ms" => o.endpoint_ms = Some(*v),
                "narrowband_endpoint_ms" => o.narrowband_endpoint_ms = Some(*v),
                "partial_interval_ms" => o.partial_interval_ms = Some(*v),
                _ => unreachable!("test option {k}"),
            }
        }
        ChannelSpec {
            session_id: 1,
            channel: Channel::Customer,
            sample_rate,
            options: Arc::new(o),
        }
    }

    #[test]
    fn phone_band_calls_get_the_narrowband_endpoint_and_profiles_override_both() {
        let backend = Moonshine {
            pool: OnceLock::new(),
            load_error: OnceLock::new(),
            partial_interval_ms: 500,
            endpoint_ms: 200,
            narrowband_endpoint_ms: 300,
            max_load: 0.8,
            turn_model: true,
            context_span_ms: 6_000,
        };
        let ms = |v: u64| SegmenterConfig::from_ms(v, 500).endpoint;
        assert_eq!(backend.cuts(&spec(16_000, &[]), false).endpoint, ms(200));
        assert_eq!(backend.cuts(&spec(48_000, &[]), false).endpoint, ms(200));
        assert_eq!(backend.cuts(&spec(8_000, &[]), false).endpoint, ms(300));
        let profile = [("endpoint_ms", 150), ("narrowband_endpoint_ms", 400)];
        assert_eq!(
            backend.cuts(&spec(16_000, &profile), false).endpoint,
            ms(150)
        );
        assert_eq!(
            backend.cuts(&spec(8_000, &profile), false).endpoint,
            ms(400)
        );
        // The end-of-turn model: customers only, when loaded, unless the profile says no.
        assert!(backend.cuts(&spec(16_000, &[]), true).judge_turns);
        assert!(!backend.cuts(&spec(16_000, &[]), false).judge_turns);
        let mut assistant = spec(16_000, &[]);
        assistant.channel = Channel::Assistant;
        assert!(!backend.cuts(&assistant, true).judge_turns);
        let off = ChannelSpec {
            options: Arc::new(crate::backend::Options {
                turn_model: Some(false),
                ..Default::default()
            }),
            ..spec(16_000, &[])
        };
        assert!(!backend.cuts(&off, true).judge_turns);
        let cadence = backend.cuts(&spec(8_000, &[("partial_interval_ms", 300)]), false);
        assert_eq!(
            cadence.partial_every,
            SegmenterConfig::from_ms(300, 300).partial_every
        );
    }
}
