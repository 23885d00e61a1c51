//! The embedded path every CPU engine shares: hark finds the utterances itself
//! ([`segmenter`]) and decodes each with one call of an [`Engine`], on threads of its own
//! ([`pool`]): one listener for every channel's audio, one decoder per engine instance, and
//! (with the turn model) one judge. An engine only turns 16 kHz samples into text; the
//! segmenter, decode scheduling, admission by load and the recovery of empty finals are here,
//! so a new engine is one module beside `moonshine` and `whisper`.

pub mod cost;
mod decode;
pub mod pool;
mod schedule;
pub mod segmenter;
mod settings;
#[cfg(test)]
mod sim;

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use self::pool::{Job, Pool};
use self::segmenter::SegmenterConfig;
pub use self::settings::{Settings, Shed};
use crate::audio::AudioSource;
use crate::backend::{Backend, BackendError, Booking, ChannelSpec, EventSink, Refusal};
use crate::protocol::Channel;
use crate::turn::TurnModel;

/// The rate engines work at; other rates are converted with rubato first.
pub const MODEL_RATE: u32 = 16_000;
/// Nice value of the decoding threads where `SCHED_IDLE` is refused. Decodes keep both
/// cores busy under load; below the runtime and the listener, they rarely delay a frame or a
/// transcript (BENCHMARKS.md: server overhead).
const DECODE_NICE: i32 = 10;
/// A decode running this long is stuck in the engine (the longest utterance, 24 s, decodes
/// in about a second): readiness turns false so no more calls are sent here.
const WEDGED_AFTER: Duration = Duration::from_secs(10);
/// A failed load is tried again after this long, doubling up to `RETRY_MAX` (a download
/// that failed on a network blip, a cache being filled by another process).
const RETRY_FIRST: Duration = Duration::from_secs(5);
const RETRY_MAX: Duration = Duration::from_secs(300);

/// An engine's failure as the embedded path carries it: logged, counted, and said to the
/// channel it failed or by `/readyz`, never matched on, so each engine keeps its own typed
/// errors ([`crate::backend::whisper::LoadError`], Moonshine's `ffi::Error`).
pub type EngineError = Box<dyn std::error::Error + Send + Sync>;

/// One utterance to decode (see [`Engine::transcribe`]).
#[derive(Debug, Clone, Copy)]
pub struct Utterance<'a> {
    /// 16 kHz mono, f32 in [-1, 1].
    pub audio: &'a [f32],
    /// For engines that read one ([`Loaded::prompted`]), the words to expect (keyterms),
    /// then the turn's earlier finals if they read context as text ([`ContextKind::Text`]);
    /// empty otherwise.
    pub prompt: &'a str,
    /// What the latest decode of the same utterance heard (empty if none, and perhaps by
    /// another model of the engine's): an engine may check it rather than find it again, as
    /// long as the text it returns is its own.
    pub draft: &'a str,
    /// The language spoken, as the call's options name it (a BCP 47 tag or `auto`, checked
    /// by [`Loaded::speaks`] when the call started); empty: the engine's default, English.
    pub language: &'a str,
    /// The decoders have room: a final (or a speculative decode) may be searched with the
    /// engine's beam ([`Loaded::beam`]); the ladder sheds this first ([`Shed::Beam`]).
    pub beam: bool,
}

/// What one decode of an utterance heard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcribed {
    pub text: String,
    /// No words: the engine heard a sound, not speech (Whisper's likeliest first token was a
    /// sound's caption). The segmenter takes that as the utterance's verdict and puts no
    /// other decode's words there, a retry's or a partial's.
    pub sound: bool,
    /// How likely the engine found a sentence's end right after the words, if it can say
    /// (Whisper: the probability of ". ? !" at the step after the last word). Low at a
    /// pause, the speaker is probably going on (BENCHMARKS.md, "End of turn").
    pub ends: Option<f32>,
}

impl Transcribed {
    /// Words, or none, heard as speech.
    pub fn words(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            sound: false,
            ends: None,
        }
    }

    /// No words: a sound.
    pub fn sound() -> Self {
        Self {
            text: String::new(),
            sound: true,
            ends: None,
        }
    }
}

impl From<&str> for Transcribed {
    fn from(text: &str) -> Self {
        Self::words(text)
    }
}

impl From<String> for Transcribed {
    fn from(text: String) -> Self {
        Self::words(text)
    }
}

/// A speech recognizer the embedded path runs: one instance per decoder thread, owned by
/// that thread alone.
pub trait Engine: Send {
    /// The text of each utterance of `batch`, in order: one decode is a batch of one. An
    /// engine that batches ([`Loaded::max_batch`] above 1) decodes them together, each with
    /// the words it would get alone; an error fails only its own utterance's channel.
    /// `tier` says which of its models decodes: an engine with a finals' model
    /// ([`Loaded::finals_model`]) uses it for [`Tier::Finals`].
    fn transcribe(
        &mut self,
        batch: &[Utterance<'_>],
        tier: Tier,
    ) -> Vec<Result<Transcribed, EngineError>>;

    /// One utterance alone: a batch of one.
    fn transcribe_one(
        &mut self,
        audio: &[f32],
        prompt: &str,
        draft: &str,
        tier: Tier,
    ) -> Result<Transcribed, EngineError> {
        let one = Utterance {
            audio,
            prompt,
            draft,
            language: "",
            beam: false,
        };
        self.transcribe(&[one], tier)
            .pop()
            .unwrap_or_else(|| Err("the engine gave no answer".into()))
    }

    /// Decodes a batch of `batch` utterances of `seconds` of quiet audio with `tier`'s
    /// model, each made to run `steps` decoder steps where the engine has steps, however
    /// little it hears: the pool times these at load to calibrate what a decode costs
    /// ([`cost::CostModel`]).
    fn exercise(&mut self, tier: Tier, batch: usize, seconds: f32, steps: usize) {
        let _ = steps;
        let audio = vec![0.0; (seconds * MODEL_RATE as f32) as usize];
        let batch = vec![
            Utterance {
                audio: &audio,
                prompt: "",
                draft: "",
                language: "",
                beam: false,
            };
            batch
        ];
        let _ = self.transcribe(&batch, tier);
    }
}

/// How long after its endpoint a final may come: what is left of the platform's 800 ms
/// time to final once the voice has been heard to stop (200 ms). Admission prices a wave
/// of finals against it; a final whose finals'-model decode would take longer falls back to
/// the partials' model ([`decode::Lead::for_final`]).
pub(crate) const FINAL_BUDGET: Duration = Duration::from_millis(600);

/// Which of an engine's models decodes. The scheduler asks for the finals' one for finals
/// and the speculative decodes that may become them, unless its ladder sheds it under load
/// or a final's deadline needs the partials' model (`schedule::Scheduler::plan`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Partials,
    Finals,
}

/// How an engine reads the turn's earlier finals (left context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextKind {
    /// Their audio before the utterance's own; their words are aligned off the text.
    Audio,
    /// Their text as a prompt: nothing to align off.
    Text,
}

impl ContextKind {
    /// As the config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Audio => "audio",
            Self::Text => "text",
        }
    }
}

/// What an engine's loader hands the embedded path.
pub struct Loaded {
    /// One per decoder thread.
    pub engines: Vec<Box<dyn Engine>>,
    pub context: ContextKind,
    /// The engine reads a text prompt: the keyterms reach it (and the earlier finals, with
    /// [`ContextKind::Text`]).
    pub prompted: bool,
    /// For the start-up log: engine, model, compute type, threads.
    pub describe: String,
    /// Whether the engine transcribes a language a call asks for (a BCP 47 tag or
    /// `auto`): `Err` says why not and what it does transcribe.
    pub speaks: Speaks,
    /// The end-of-turn model, when one was wanted and loaded.
    pub judge: Option<TurnModel>,
    /// The engine decodes [`Tier::Finals`] with a stronger, slower model than partials:
    /// the ladder may shed it ([`Shed::FinalsModel`]).
    pub finals_model: bool,
    /// The most utterances it decodes as one batch (1: one at a time).
    pub max_batch: usize,
    /// The hypotheses its beam search for finals keeps while the decoders have room (1:
    /// greedy always): the ladder may shed it ([`Shed::Beam`]).
    pub beam: usize,
}

/// Loads an engine (fetching it first if needed): runs on the loader thread, which is
/// already in the background scheduling class, so threads it starts inherit it.
pub type Loader = Box<dyn Fn() -> Result<Loaded, EngineError> + Send + Sync>;

/// An embedded recognizer: a [`Backend`] over an engine's decoder threads.
pub struct Embedded {
    name: &'static str,
    pool: OnceLock<Running>,
    load_error: std::sync::Mutex<Option<Arc<StartError>>>,
    settings: Settings,
}

/// The loaded pool and the way to hand it channels.
struct Running {
    pool: Arc<Pool>,
    jobs: Sender<Job>,
    listener: Thread,
    /// The end-of-turn model is loaded.
    judging: bool,
    context: ContextKind,
    prompted: bool,
    speaks: Speaks,
}

impl Running {
    /// Which models a call in `language` takes, as admission prices it: a language the
    /// engine does not speak was refused (400) before admission is asked.
    fn speakers(&self, language: &str) -> Speakers {
        (self.speaks)(language).unwrap_or(Speakers::Both)
    }
}

/// [`Loaded::speaks`]: which of the engine's models transcribe a language.
/// The error is the 400's body, for the caller.
pub type Speaks = Box<dyn Fn(&str) -> Result<Speakers, String> + Send + Sync>;

/// Which of an engine's models transcribe a call's language. The scheduler gives every
/// decode of a call a model that speaks it; the engine never swaps one in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speakers {
    /// Both (or the engine's one model): partials by the partials' model, finals by the
    /// finals', and the ladder may shed the finals' model.
    Both,
    /// This tier's model alone (tiny.en's partials of a Spanish call come from base):
    /// every decode of the call takes it, and nothing sheds it.
    Only(Tier),
}

impl Speakers {
    /// Every decode of the call takes the finals' model, at every step of the ladder:
    /// admission prices its finals at that model.
    pub fn finals_model_only(self) -> bool {
        self == Self::Only(Tier::Finals)
    }
}

/// Whether a BCP 47 tag names English (or none: English is the default).
pub fn is_english(tag: &str) -> bool {
    let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
    primary.is_empty() || primary.eq_ignore_ascii_case("en")
}

/// [`Loaded::speaks`] for an engine that transcribes English alone.
pub fn english_only(engine: &'static str) -> Speaks {
    Box::new(move |tag| match is_english(tag) {
        true => Ok(Speakers::Both),
        false => Err(format!(
            "{engine} transcribes English only, not {}: use a backend that speaks it \
             (whisper with a multilingual model, or a network backend)",
            crate::untrusted::quoted(tag)
        )),
    })
}

/// Why an embedded recognizer is not running: shown by `/readyz`, logged, and tried again.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The engine's loader failed (models missing, damaged, of another shape; a fetch).
    #[error("{0}")]
    Load(EngineError),
    /// The loader panicked: a model of a shape nothing checked.
    #[error("the engine's loader panicked")]
    Panicked,
    /// The engine loaded without a decoder.
    #[error("the engine loaded no decoder")]
    NoDecoder,
    /// The system would not start one of the recognizer's threads.
    #[error("cannot start the {what} thread: {source}")]
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
    /// The first load took longer than the caller would wait.
    #[error("timed out loading the {0} recognizer")]
    TimedOut(&'static str),
}

/// What [`start_pool`] hands the running backend.
struct Started {
    judging: bool,
    context: ContextKind,
    prompted: bool,
    speaks: Speaks,
}

impl Embedded {
    /// Starts loading the engine in the background (`name` labels its threads, logs and
    /// metrics); `is_ready` turns true once it is loaded. A load that fails is logged and
    /// tried again with backoff, so a cache filled late or a network back up is picked up
    /// without a restart; meanwhile the backend is not ready (`/readyz` 503).
    pub fn spawn(name: &'static str, settings: Settings, loader: Loader) -> Arc<Self> {
        let backend = Arc::new(Self {
            name,
            pool: OnceLock::new(),
            load_error: std::sync::Mutex::new(None),
            settings,
        });
        let weak = Arc::downgrade(&backend);
        let spawned = thread::Builder::new()
            .name(format!("{name}-load"))
            .spawn(move || {
                // The listener keeps the server's priority; everything started after
                // `run_in_background` on this thread (the engine's own threads, the
                // decoders) runs below it.
                let Some((decoders, shed, calibrate)) = weak.upgrade().map(|b| {
                    let s = &b.settings;
                    (s.decoders.max(1), s.shed, s.calibrate)
                }) else {
                    return;
                };
                let pool = Pool::new(name, decoders, shed);
                let (jobs, rx) = mpsc::channel();
                let listener = match pool::spawn_listener(pool.clone(), rx) {
                    Ok(listener) => listener,
                    Err(e) => {
                        if let Some(backend) = weak.upgrade() {
                            *lock(&backend.load_error) = Some(Arc::new(e));
                        }
                        return;
                    }
                };
                run_in_background();
                let mut wait = RETRY_FIRST;
                loop {
                    let Some(backend) = weak.upgrade() else {
                        return;
                    };
                    // A loader that panics (a model file of a shape nothing checked) is a
                    // load error like any other: logged, shown, tried again.
                    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        start_pool(name, &loader, &pool, calibrate)
                    }))
                    .unwrap_or_else(|_| Err(StartError::Panicked));
                    match started {
                        Ok(Started {
                            judging,
                            context,
                            prompted,
                            speaks,
                        }) => {
                            *lock(&backend.load_error) = None;
                            let _ = backend.pool.set(Running {
                                pool,
                                jobs,
                                listener,
                                judging,
                                context,
                                prompted,
                                speaks,
                            });
                            return;
                        }
                        Err(e) => {
                            error!(
                                backend = name,
                                error = %e,
                                retry_in_s = wait.as_secs(),
                                "embedded recognizer unavailable; retrying"
                            );
                            *lock(&backend.load_error) = Some(Arc::new(e));
                        }
                    }
                    drop(backend);
                    thread::sleep(wait);
                    wait = (wait * 2).min(RETRY_MAX);
                }
            });
        if let Err(e) = spawned {
            *lock(&backend.load_error) = Some(Arc::new(StartError::Thread {
                what: "loader",
                source: e,
            }));
        }
        backend
    }

    /// Blocks until the engine is loaded, or its first load failed.
    pub fn wait_ready(&self, limit: Duration) -> Result<(), Arc<StartError>> {
        let deadline = Instant::now() + limit;
        loop {
            if self.pool.get().is_some() {
                return Ok(());
            }
            if let Some(e) = lock(&self.load_error).clone() {
                return Err(e);
            }
            if Instant::now() > deadline {
                return Err(Arc::new(StartError::TimedOut(self.name)));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Why the engine is not loaded, while it is not.
    pub fn load_error(&self) -> Option<Arc<StartError>> {
        lock(&self.load_error).clone()
    }
}

impl Backend for Embedded {
    fn is_ready(&self) -> bool {
        self.pool
            .get()
            .is_some_and(|r| r.pool.is_healthy(WEDGED_AFTER))
    }

    fn has_headroom(&self, channels: usize, language: &str) -> bool {
        self.pool.get().is_some_and(|r| {
            r.pool
                .has_headroom(channels, r.speakers(language), self.settings.max_load)
        })
    }

    fn reserve(&self, channels: usize, language: &str) -> Result<Booking, Refusal> {
        let Some(running) = self.pool.get() else {
            return Err(Refusal::NotLoaded { backend: self.name });
        };
        running
            .pool
            .book(channels, running.speakers(language), self.settings.max_load)
    }

    fn check_language(&self, language: &str) -> Result<(), String> {
        match self.pool.get() {
            Some(running) => (running.speaks)(language).map(drop),
            // Not loaded: the call is refused as not ready anyway.
            None => Ok(()),
        }
    }

    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        let Some(running) = self.pool.get() else {
            return Err(BackendError::new(match self.load_error() {
                Some(e) => format!("the {} recognizer failed to load: {e}", self.name),
                None => format!("the {} recognizer is still loading", self.name),
            }));
        };
        let language = spec.options.language.clone().unwrap_or_default();
        let speakers = (running.speaks)(&language).map_err(BackendError::new)?;
        let mut cuts =
            self.settings
                .cuts(&spec, running.judging, running.context, running.prompted);
        cuts.speakers = speakers;
        audio.wake_thread(running.listener.clone());
        running.pool.starting(spec.session_id, speakers);
        let session = spec.session_id;
        let sent = running.jobs.send(Job {
            audio,
            events,
            sample_rate: spec.sample_rate,
            cuts,
            keyterms: spec
                .options
                .keyterms
                .as_deref()
                .unwrap_or_default()
                .join(", "),
            language,
            session,
        });
        if sent.is_err() {
            running.pool.started(session);
            return Err(BackendError::new("recognizer listener has stopped"));
        }
        running.listener.unpark();
        Ok(())
    }
}

impl Settings {
    /// Where a channel's utterances end: the profile's timing if it has one, else the
    /// server-wide one; the assistant's channel gets its own endpoint, and customers below
    /// the model's rate the narrowband one.
    pub(super) fn cuts(
        &self,
        spec: &ChannelSpec,
        judging: bool,
        context: ContextKind,
        prompted: bool,
    ) -> SegmenterConfig {
        let o = &spec.options;
        let endpoint = if spec.channel == Channel::Assistant {
            o.assistant_endpoint_ms
                .unwrap_or(self.assistant_endpoint_ms)
        } else if spec.sample_rate < MODEL_RATE {
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
        cuts.context_as_text = context == ContextKind::Text;
        cuts.prompted = prompted;
        // Measured on customers' speech; on text-to-speech prompts it is unreliable.
        cuts.judge_turns =
            judging && spec.channel == Channel::Customer && o.turn_model.unwrap_or(self.turn_model);
        cuts.hold_unfinished =
            spec.channel == Channel::Customer && o.hold_unfinished.unwrap_or(self.hold_unfinished);
        cuts.english = crate::turn::words::english(o.language.as_deref().unwrap_or_default());
        // The sentence-end thresholds judge customers' pauses only. The engine's were
        // measured on English: a call in another language reads a threshold only where it
        // or its profile sets one (on Spanish calls the English one held finished turns
        // to the hold and cut no fewer pauses: BENCHMARKS.md, "Languages").
        let engine_default = |engine: f64| if cuts.english { engine } else { 0.0 };
        let customers = |call: Option<f64>, engine: f64| match spec.channel {
            Channel::Customer => call.unwrap_or(engine_default(engine)).clamp(0.0, 1.0) as f32,
            Channel::Assistant => 0.0,
        };
        cuts.unsure_end = customers(o.end_of_turn_confidence_threshold, self.end_confidence);
        cuts.sure_end = customers(o.end_of_turn_sure_threshold, self.sure_end);
        cuts.quick_end = customers(o.end_of_turn_quick_threshold, self.quick_end);
        let quick = o.min_turn_silence_ms.unwrap_or(self.min_turn_silence_ms);
        cuts.quick_endpoint = ((quick.clamp(32, 60_000) as usize) * 16).min(cuts.endpoint);
        cuts.deadline = spec.channel == Channel::Customer;
        let hold = o.max_turn_silence_ms.unwrap_or(self.max_turn_silence_ms);
        cuts.turn_hold = ((hold as usize).min(60_000) * 16).max(cuts.endpoint);
        cuts
    }
}

/// Loads the engine and starts its decoders (and judge) on `pool`: whether the judge runs,
/// how the engine reads context and whether it reads a prompt.
fn start_pool(
    name: &'static str,
    loader: &Loader,
    pool: &Arc<Pool>,
    calibrate: bool,
) -> Result<Started, StartError> {
    let started = Instant::now();
    info!(
        backend = name,
        "loading the recognizer (models fetched on first use)"
    );
    let loaded = loader().map_err(StartError::Load)?;
    if loaded.engines.is_empty() {
        return Err(StartError::NoDecoder);
    }
    let decoders = loaded.engines.len().min(pool.decoders());
    pool.set_finals_model(loaded.finals_model);
    pool.set_beam(loaded.beam > 1);
    let mut engines = loaded.engines;
    // Timed on one decoder while nothing else runs: what a decode of each model costs.
    let cost = if calibrate {
        info!(
            backend = name,
            "timing the decoders for admission's cost model"
        );
        let calibrating = Instant::now();
        let cost = cost::CostModel::calibrate(engines[0].as_mut(), loaded.finals_model);
        info!(
            backend = name,
            partials = %cost.figures(Tier::Partials),
            finals = %cost.figures(Tier::Finals),
            max_batch = loaded.max_batch,
            beam = loaded.beam,
            calibrate_ms = calibrating.elapsed().as_millis() as u64,
            "decode cost calibrated"
        );
        cost
    } else {
        cost::CostModel::default()
    };
    pool.set_engine(cost.with_beam(loaded.beam), loaded.max_batch);
    for (index, engine) in engines.into_iter().take(decoders).enumerate() {
        pool::spawn_decoder(pool.clone(), index, engine)?;
    }
    let judging = match loaded.judge {
        Some(model) => match pool::spawn_judge(pool.clone(), model) {
            Ok(()) => true,
            Err(e) => {
                warn!(error = %e, "end-of-turn model unavailable; customer finals end as decoded");
                false
            }
        },
        None => false,
    };
    info!(
        backend = name,
        engine = %loaded.describe,
        decoders,
        turn_model = judging,
        load_ms = started.elapsed().as_millis() as u64,
        "embedded recognizer ready"
    );
    Ok(Started {
        judging,
        context: loaded.context,
        prompted: loaded.prompted,
        speaks: loaded.speaks,
    })
}

/// Puts the calling thread in the `SCHED_IDLE` class (nice `DECODE_NICE` if that is
/// refused). Linux keeps both per thread and new threads inherit them, so the recognizer's
/// threads, started afterwards, all run below the server. A nice value only lowers the
/// share: the scheduler still lets a decode finish its time slice before a woken runtime
/// thread runs, which put 1–5 ms into the frame and event paths now and then; a
/// `SCHED_IDLE` thread gives way at once to any ordinary one. The listener is started by
/// [`pool::spawn_listener`] at the server's priority.
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

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The clock reads in a source file's code above its tests: the parts of the embedded path
/// that take the time from their caller check with it that they read none.
#[cfg(test)]
fn clock_reads(source: &str) -> Vec<&'static str> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    ["Instant::now", ".elapsed()", "SystemTime"]
        .into_iter()
        .filter(|clock| code.contains(clock))
        .collect()
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
                "assistant_endpoint_ms" => o.assistant_endpoint_ms = Some(*v),
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
    fn each_channel_and_band_gets_its_endpoint_and_profiles_override_them() {
        let backend = Embedded {
            name: "test",
            pool: OnceLock::new(),
            load_error: std::sync::Mutex::new(None),
            settings: Settings {
                turn_model: true,
                context_span_ms: 6_000,
                hold_unfinished: true,
                end_confidence: 0.5,
                ..Settings::default()
            },
        };
        let ms = |v: u64| SegmenterConfig::from_ms(v, 500).endpoint;
        let cut = |spec: &ChannelSpec, judging| {
            backend
                .settings
                .cuts(spec, judging, ContextKind::Audio, false)
        };
        assert_eq!(cut(&spec(16_000, &[]), false).endpoint, ms(200));
        assert_eq!(cut(&spec(48_000, &[]), false).endpoint, ms(200));
        assert_eq!(cut(&spec(8_000, &[]), false).endpoint, ms(300));
        let profile = [("endpoint_ms", 150), ("narrowband_endpoint_ms", 400)];
        assert_eq!(cut(&spec(16_000, &profile), false).endpoint, ms(150));
        assert_eq!(cut(&spec(8_000, &profile), false).endpoint, ms(400));
        // The assistant's synthetic speech: its own endpoint at every rate.
        for rate in [8_000, 16_000] {
            let mut assistant = spec(rate, &[]);
            assistant.channel = Channel::Assistant;
            assert_eq!(cut(&assistant, false).endpoint, ms(1_000));
            let mut assistant = spec(rate, &[("assistant_endpoint_ms", 700)]);
            assistant.channel = Channel::Assistant;
            assert_eq!(cut(&assistant, false).endpoint, ms(700));
        }
        // The end-of-turn model: customers only, when loaded, unless the profile says no.
        assert!(cut(&spec(16_000, &[]), true).judge_turns);
        assert!(!cut(&spec(16_000, &[]), false).judge_turns);
        let mut assistant = spec(16_000, &[]);
        assistant.channel = Channel::Assistant;
        assert!(!cut(&assistant, true).judge_turns);
        let off = ChannelSpec {
            options: Arc::new(crate::backend::Options {
                turn_model: Some(false),
                ..Default::default()
            }),
            ..spec(16_000, &[])
        };
        assert!(!cut(&off, true).judge_turns);
        // Holding a pause whose words go on: customers only, unless the profile says no.
        assert!(cut(&spec(16_000, &[]), false).hold_unfinished);
        assert!(!cut(&assistant, false).hold_unfinished);
        let off = ChannelSpec {
            options: Arc::new(crate::backend::Options {
                hold_unfinished: Some(false),
                language: Some("es".into()),
                ..Default::default()
            }),
            ..spec(16_000, &[])
        };
        assert!(!cut(&off, false).hold_unfinished);
        assert!(!cut(&off, false).english && cut(&spec(16_000, &[]), false).english);
        // The model's own sentence ending: the engine's threshold, a profile's or a call's
        // over it; never on the assistant's channel.
        assert_eq!(cut(&spec(16_000, &[]), false).unsure_end, 0.5);
        assert_eq!(cut(&assistant, false).unsure_end, 0.0);
        let stricter = ChannelSpec {
            options: Arc::new(crate::backend::Options {
                end_of_turn_confidence_threshold: Some(0.7),
                ..Default::default()
            }),
            ..spec(16_000, &[])
        };
        assert!((cut(&stricter, false).unsure_end - 0.7).abs() < 1e-6);
        // Measured on English: a call in another language reads it only where it or its
        // profile sets it.
        assert_eq!(cut(&off, false).unsure_end, 0.0);
        let spanish_set = ChannelSpec {
            options: Arc::new(crate::backend::Options {
                end_of_turn_confidence_threshold: Some(0.7),
                language: Some("es".into()),
                ..Default::default()
            }),
            ..spec(16_000, &[])
        };
        assert!((cut(&spanish_set, false).unsure_end - 0.7).abs() < 1e-6);
        let cadence = cut(&spec(8_000, &[("partial_interval_ms", 300)]), false);
        assert_eq!(
            cadence.partial_every,
            SegmenterConfig::from_ms(300, 300).partial_every
        );
        assert!(
            backend
                .settings
                .cuts(&spec(16_000, &[]), false, ContextKind::Text, true)
                .context_as_text
        );
        let whisper = backend
            .settings
            .cuts(&spec(16_000, &[]), false, ContextKind::Audio, true);
        assert!(whisper.prompted && !whisper.context_as_text);
    }

    #[test]
    fn an_engine_that_cannot_load_is_tried_again_and_becomes_ready() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Echo;
        impl Engine for Echo {
            fn transcribe(
                &mut self,
                b: &[Utterance<'_>],
                _: Tier,
            ) -> Vec<Result<Transcribed, EngineError>> {
                b.iter().map(|_| Ok(Transcribed::default())).collect()
            }
        }
        let tries = Arc::new(AtomicUsize::new(0));
        let counted = tries.clone();
        let backend = Embedded::spawn(
            "retry-test",
            Settings::default(),
            Box::new(move || {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err("the cache is not there yet".into());
                }
                Ok(Loaded {
                    engines: vec![Box::new(Echo)],
                    context: ContextKind::Audio,
                    prompted: false,
                    describe: "echo".into(),
                    speaks: Box::new(|_| Ok(Speakers::Both)),
                    judge: None,
                    finals_model: false,
                    max_batch: 1,
                    beam: 1,
                })
            }),
        );
        // Returns as soon as the first load fails; the bound only stops a hang.
        let first = backend.wait_ready(Duration::from_secs(60));
        assert_eq!(first.unwrap_err().to_string(), "the cache is not there yet");
        assert!(!backend.is_ready());
        let deadline = Instant::now() + RETRY_FIRST * 3;
        while !backend.is_ready() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(50));
        }
        assert!(backend.is_ready(), "the second load should have been tried");
        assert_eq!(tries.load(Ordering::SeqCst), 2);
        assert!(backend.load_error().is_none());
    }

    #[test]
    fn a_loader_that_panics_is_a_load_error_not_a_silent_thread() {
        let backend = Embedded::spawn(
            "panic-test",
            Settings::default(),
            Box::new(|| panic!("a model of a shape nothing checked")),
        );
        // Returns as soon as the load fails; the bound only stops a hang (a loaded machine
        // took over 2 s to print the panic's backtrace).
        let first = backend.wait_ready(Duration::from_secs(60));
        assert!(matches!(*first.unwrap_err(), StartError::Panicked));
        assert!(!backend.is_ready());
    }
}
