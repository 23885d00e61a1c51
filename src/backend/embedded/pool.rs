//! The threads behind the embedded backend: one listener and a decoder per handle.
//!
//! The **listener** takes every channel's audio from its ring as it arrives, resamples it
//! and runs it through the channel's [`Segmenter`] (voice detector and endpointing: tens of
//! microseconds per frame), so endpoints are found on time whatever the decoders are doing,
//! and a final that a decode already covers goes out the moment its endpoint passes.
//!
//! Each **decoder** owns one recognizer handle outright (a handle takes one call at a time)
//! and loops: pick the most urgent decode any channel wants — finals, then speculative
//! decodes at pauses, then first partials, then partials; oldest first within a kind —
//! copy that audio, decode it without holding any lock, hand the text back. A channel has
//! at most one decode running. Under load partials thin out and finals stay on time.
//!
//! The **judge** (when the end-of-turn model is on) owns that model and, at each pause of
//! a customer's channel that is nearly an endpoint, decides whether the turn is over, so
//! the final it closes ends accordingly ([`super::segmenter::end_turn`]). It runs beside
//! the decoders, so its verdict is ready about when the final is.
//!
//! Locks: a channel's state is one mutex, held for microseconds by either side; the channel
//! list is a mutex changed only by the listener. Order: list, then channel; never the
//! reverse. No lock is held across a decode.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tracing::warn;

use super::segmenter::{DecodeKind, Emit, Recovery, Segmenter, SegmenterConfig, Want};
use super::{Engine, MODEL_RATE};
use crate::audio::AudioSource;
use crate::backend::{Booking, EventSink};
use crate::metrics as m;
use crate::resample::StreamResampler;
use crate::turn::TurnModel;

/// Over how long the recognizer's essential load is averaged (see [`Pool::load`]).
const LOAD_WINDOW: Duration = Duration::from_secs(10);
/// Essential load above which speculative decodes are shed: they save a decode only when
/// the pause really is the end, and under that much load finals need the time.
const SHED_SPECULATIVE_LOAD: f64 = 0.9;
/// Essential load over which finals' left context shrinks, and at which it is gone: it
/// makes finals more accurate but their decodes longer, and is the first work to shed.
const SHED_CONTEXT_FROM: f64 = 0.4;
const SHED_CONTEXT_AT: f64 = 0.6;
/// Room booked for a call whose start frame has not come within this long is given back:
/// the platform sends it right after the upgrade, so a connection still silent by then is
/// not a call the room must wait for (it still starts, counted as present from then on).
const BOOKING_HOLD: Duration = Duration::from_secs(3);
/// A final waiting this long for a decoder means the recognizer is behind now.
const FINAL_BACKLOG: Duration = Duration::from_millis(400);

/// Longest a thread sleeps before looking at its channels again without being woken.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// Samples taken from a ring at a time.
const MAX_STEP_SAMPLES: usize = 16_000;

/// A channel handed to the backend.
pub struct Job {
    pub audio: AudioSource,
    pub events: EventSink,
    pub sample_rate: u32,
    pub cuts: SegmenterConfig,
    /// The call's keyterms, for engines that take a prompt.
    pub keyterms: String,
}

/// What the listener and the decoders share.
pub struct Pool {
    /// The backend's name: threads, metrics.
    name: &'static str,
    /// Live channels, for decoders to choose from. Only the listener adds and removes.
    channels: Mutex<Vec<Arc<Channel>>>,
    /// Bumped whenever there may be new work; decoders wait on it.
    work: Mutex<u64>,
    work_ready: Condvar,
    listener: OnceLock<Thread>,
    /// The backend is gone and the listener has served its last channel.
    closed: AtomicBool,
    /// Per decoder: when its running decode started, in ms after `epoch` plus one (0: idle).
    busy: Vec<AtomicU64>,
    epoch: Instant,
    /// Decode seconds spent on finals and speculative decodes, and the age weights of the
    /// channels that brought some of them and have left, both decaying over `LOAD_WINDOW`;
    /// and when they were last brought up to date.
    load: Mutex<(f64, f64, Instant)>,
    /// Speculative decodes are not wanted (the load is too high).
    shedding: AtomicBool,
    /// The share of each channel's context span finals may use now (`f64` bits).
    context_scale: AtomicU64,
    /// Channels of admitted calls whose start frame is still to come, booked by their
    /// [`Booking`]s (id, channels, when): counted as present, so a burst of upgrades cannot
    /// all pass, and given back the moment the call starts or ends, or after
    /// `BOOKING_HOLD` without a start frame.
    booked: Mutex<Vec<(u64, usize, Instant)>>,
    next_booking: AtomicU64,
    /// Channels handed to the listener that it has not made live yet.
    starting: AtomicUsize,
}

impl Pool {
    pub fn new(name: &'static str, decoders: usize) -> Arc<Self> {
        Arc::new(Self {
            name,
            channels: Mutex::new(Vec::new()),
            work: Mutex::new(0),
            work_ready: Condvar::new(),
            listener: OnceLock::new(),
            closed: AtomicBool::new(false),
            busy: (0..decoders).map(|_| AtomicU64::new(0)).collect(),
            epoch: Instant::now(),
            load: Mutex::new((0.0, 0.0, Instant::now())),
            shedding: AtomicBool::new(false),
            context_scale: AtomicU64::new(1f64.to_bits()),
            booked: Mutex::new(Vec::new()),
            next_booking: AtomicU64::new(0),
            starting: AtomicUsize::new(0),
        })
    }

    /// Counts a final or speculative decode's time into the recognizer's essential load:
    /// the share of its decoders' time such decodes took over the last `LOAD_WINDOW` or so
    /// (1.0: all of it). Partials do not count: they only fill the time that is left.
    fn add_load(&self, spent: Duration) {
        self.update(spent.as_secs_f64(), 0.0);
    }

    /// A channel of age weight `weight` left: its share of the load stays a while.
    fn departed(&self, weight: f64) {
        self.update(0.0, weight);
    }

    /// Decays the load and the departed weight to now, adds to them, and returns the
    /// load as a share of the decoders' time, and the departed weight.
    fn update(&self, spent: f64, gone: f64) -> (f64, f64) {
        let mut load = lock(&self.load);
        let now = Instant::now();
        let decay = (-now.duration_since(load.2).as_secs_f64() / LOAD_WINDOW.as_secs_f64()).exp();
        load.0 = load.0 * decay + spent;
        load.1 = load.1 * decay + gone;
        load.2 = now;
        let share = load.0 / (LOAD_WINDOW.as_secs_f64() * self.busy.len().max(1) as f64);
        self.shedding
            .store(share > SHED_SPECULATIVE_LOAD, Ordering::Relaxed);
        let scale =
            ((SHED_CONTEXT_AT - share) / (SHED_CONTEXT_AT - SHED_CONTEXT_FROM)).clamp(0.0, 1.0);
        self.context_scale.store(scale.to_bits(), Ordering::Relaxed);
        metrics::gauge!(m::DECODER_LOAD).set(share);
        (share, load.1)
    }

    /// Whether a call of `channels` more channels can be taken without putting the
    /// calls already here at risk: no final is queueing now, and the load the channels
    /// will bring once all of them have been here a while, plus the new ones, stays under
    /// `limit`.
    ///
    /// The load is an average over `LOAD_WINDOW`, so a channel of age `a` has put only
    /// `w = 1 − e^(−a/window)` of its demand into it. One channel's demand is estimated as
    /// `(load + PRIOR·K) / (Σw + K)`: the measured share per fully observed channel, pulled
    /// towards a dense channel's share while there is little history, so a burst of calls
    /// arriving together is not all admitted on the strength of a load they have not yet
    /// brought.
    pub fn has_headroom(&self, channels: usize, limit: f64) -> bool {
        let held = booked_channels(&mut lock(&self.booked));
        self.fits(held, channels, limit)
    }

    /// [`Pool::has_headroom`], and on yes the room held for the new channels until the
    /// booking is dropped (the call started its channels, or ended before it could).
    pub fn book(self: &Arc<Self>, channels: usize, limit: f64) -> Option<Booking> {
        let mut booked = lock(&self.booked);
        if !self.fits(booked_channels(&mut booked), channels, limit) {
            return None;
        }
        let id = self.next_booking.fetch_add(1, Ordering::Relaxed);
        booked.push((id, channels, Instant::now()));
        let pool = Arc::downgrade(self);
        Some(Booking::new(move || {
            if let Some(pool) = pool.upgrade() {
                lock(&pool.booked).retain(|(b, _, _)| *b != id);
            }
        }))
    }

    /// Whether `channels` more fit beside the live, starting and `booked` ones.
    fn fits(&self, booked: usize, channels: usize, limit: f64) -> bool {
        /// A channel's share of the decoders before it has history: what conversational
        /// calls take on 2 cores (26 held: BENCHMARKS.md, "Against the targets"), so an
        /// idle server admits a burst up to that. Denser speech shows in the measured load
        /// and the final backlog within seconds, and the calls after it are refused
        /// (BENCHMARKS.md, "Overload").
        const PRIOR: f64 = 0.015;
        /// How many fully observed channels the prior weighs as.
        const K: f64 = 4.0;
        let live = lock(&self.channels).clone();
        let mut weight = 0.0;
        for c in &live {
            let behind = c
                .lock()
                .want()
                .is_some_and(|w| w.kind == DecodeKind::Final && w.since.elapsed() > FINAL_BACKLOG);
            if behind {
                return false;
            }
            weight += c.weight();
        }
        // Channels that left still count for the load they brought, as it decays.
        let (load, gone) = self.update(0.0, 0.0);
        let per_channel = (load + PRIOR * K) / (weight + gone + K);
        let starting = self.starting.load(Ordering::Acquire);
        per_channel * (live.len() + starting + booked + channels) as f64 <= limit
    }

    /// Decoder slots.
    pub fn decoders(&self) -> usize {
        self.busy.len()
    }

    /// A channel was handed to the listener: it counts as present from now on.
    pub fn starting(&self) {
        self.starting.fetch_add(1, Ordering::AcqRel);
    }

    /// The listener took a channel in (or the hand-over failed).
    pub fn started(&self) {
        let _ = self
            .starting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// False while a decode has run longer than `limit`: a library call that never returns
    /// holds its handle for good, so the backend should take no more calls.
    pub fn is_healthy(&self, limit: Duration) -> bool {
        let now = self.epoch.elapsed().as_millis() as u64;
        let limit = limit.as_millis() as u64;
        self.busy.iter().all(|b| match b.load(Ordering::Acquire) {
            0 => true,
            started => now.saturating_sub(started - 1) <= limit,
        })
    }

    fn set_busy(&self, decoder: usize, busy: bool) {
        let value = if busy {
            self.epoch.elapsed().as_millis() as u64 + 1
        } else {
            0
        };
        if let Some(b) = self.busy.get(decoder) {
            b.store(value, Ordering::Release);
        }
    }

    fn notify_work(&self) {
        *lock(&self.work) += 1;
        self.work_ready.notify_all();
    }

    /// Sleeps until new work is noticed after `seen`, or the poll in case a notice came
    /// between looking for work and waiting.
    fn wait_for_work(&self, seen: u64) {
        let work = lock(&self.work);
        if *work == seen {
            let _ = self.work_ready.wait_timeout(work, IDLE_POLL);
        }
    }

    fn wake_listener(&self) {
        if let Some(t) = self.listener.get() {
            t.unpark();
        }
    }
}

/// Starts the listener thread, which serves the channels sent on `jobs`; pushes into their
/// rings should wake the thread returned.
pub fn spawn_listener(pool: Arc<Pool>, jobs: Receiver<Job>) -> Result<Thread, String> {
    let shared = pool.clone();
    let handle = thread::Builder::new()
        .name(format!("{}-listen", pool.name))
        .spawn(move || listen(&shared, &jobs))
        .map_err(|e| format!("cannot start listener thread: {e}"))?;
    let listener = handle.thread().clone();
    let _ = pool.listener.set(listener.clone());
    Ok(listener)
}

/// Starts the thread that owns the end-of-turn model.
pub fn spawn_judge(pool: Arc<Pool>, model: TurnModel) -> Result<(), String> {
    thread::Builder::new()
        .name(format!("{}-turn", pool.name))
        .spawn(move || judge_loop(&pool, model))
        .map(|_| ())
        .map_err(|e| format!("cannot start end-of-turn thread: {e}"))
}

/// Starts a decoder thread that owns `engine`.
pub fn spawn_decoder(pool: Arc<Pool>, index: usize, engine: Box<dyn Engine>) -> Result<(), String> {
    thread::Builder::new()
        .name(format!("{}-{index}", pool.name))
        .spawn(move || decode_loop(&pool, index, engine))
        .map(|_| ())
        .map_err(|e| format!("cannot start decoder thread: {e}"))
}

/// Channels booked and still held: bookings older than `BOOKING_HOLD` are forgotten.
fn booked_channels(booked: &mut Vec<(u64, usize, Instant)>) -> usize {
    booked.retain(|(_, _, at)| at.elapsed() < BOOKING_HOLD);
    booked.iter().map(|(_, n, _)| n).sum()
}

fn listen(pool: &Pool, jobs: &Receiver<Job>) {
    let mut channels: Vec<Arc<Channel>> = Vec::new();
    loop {
        let mut added = false;
        // Jobs taken in this round: they stop counting as starting once published.
        let mut added_count = 0;
        loop {
            match jobs.try_recv() {
                Ok(job) => {
                    added_count += 1;
                    match Channel::open(job, pool.name) {
                        Ok(channel) => {
                            channels.push(Arc::new(channel));
                            added = true;
                        }
                        Err((events, e)) => events.fail(e),
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) if channels.is_empty() => {
                    *lock(&pool.channels) = Vec::new();
                    pool.closed.store(true, Ordering::Release);
                    pool.notify_work();
                    return;
                }
                Err(TryRecvError::Disconnected) => break,
            }
        }
        let before = channels.len();
        let mut wants = false;
        channels.retain(|channel| {
            let ingested = std::panic::catch_unwind(AssertUnwindSafe(|| channel.lock().ingest()));
            match ingested {
                Ok(Some(want)) => {
                    wants |= want;
                    true
                }
                Ok(None) => {
                    pool.departed(channel.weight());
                    false
                }
                Err(_) => {
                    channel.lock().fail("recognizer panicked".into());
                    pool.departed(channel.weight());
                    false
                }
            }
        });
        if added || channels.len() != before {
            *lock(&pool.channels) = channels.clone();
        }
        for _ in 0..added_count {
            pool.started();
        }
        if wants {
            pool.notify_work();
        }
        thread::park_timeout(IDLE_POLL);
    }
}

fn judge_loop(pool: &Pool, mut model: TurnModel) {
    let mut audio = Vec::new();
    while !pool.closed.load(Ordering::Acquire) {
        let seen = *lock(&pool.work);
        let claimed = lock(&pool.channels).iter().find_map(|c| {
            let ticket = c.lock().segmenter.claim_turn(&mut audio)?;
            Some((c.clone(), ticket))
        });
        let Some((channel, ticket)) = claimed else {
            pool.wait_for_work(seen);
            continue;
        };
        let started = Instant::now();
        let result =
            std::panic::catch_unwind(AssertUnwindSafe(|| model.complete_probability(&audio)));
        metrics::histogram!(m::TURN_SECONDS).record(started.elapsed().as_secs_f64());
        let complete = match result {
            Ok(Ok(p)) => Some(p >= 0.5),
            Ok(Err(e)) => {
                warn!(error = %e, "end-of-turn model failed; the final goes as decoded");
                None
            }
            Err(_) => None,
        };
        let verdict = match complete {
            Some(true) => "complete",
            Some(false) => "incomplete",
            None => "failed",
        };
        metrics::counter!(m::TURN_VERDICTS, "verdict" => verdict).increment(1);
        let mut state = channel.lock();
        let ChannelState {
            segmenter, emits, ..
        } = &mut *state;
        segmenter.judged(ticket, complete, emits);
        state.report();
    }
}

fn decode_loop(pool: &Pool, index: usize, mut engine: Box<dyn Engine>) {
    let mut audio = Vec::new();
    let mut prompt = String::new();
    let mut draft = String::new();
    while !pool.closed.load(Ordering::Acquire) {
        let seen = *lock(&pool.work);
        let Some((channel, want)) = claim(pool, &mut audio, &mut prompt, &mut draft) else {
            pool.wait_for_work(seen);
            continue;
        };
        let started = Instant::now();
        metrics::histogram!(m::DECODE_WAIT, "kind" => want.kind.as_str())
            .record(started.saturating_duration_since(want.since).as_secs_f64());
        pool.set_busy(index, true);
        let waited_before = m::thread_run_queue_wait();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            engine.transcribe(&audio, &prompt, &draft)
        }));
        let waited_after = m::thread_run_queue_wait();
        pool.set_busy(index, false);
        let spent = started.elapsed();
        metrics::histogram!(m::DECODE_SECONDS, "kind" => want.kind.as_str())
            .record(spent.as_secs_f64());
        // SCHED_IDLE decoders get only the CPU the rest of the box leaves: time spent
        // runnable but not running is what other load took from this decode.
        if let (Some(before), Some(after)) = (waited_before, waited_after) {
            metrics::histogram!(m::DECODE_STARVED, "kind" => want.kind.as_str())
                .record(after.saturating_sub(before).as_secs_f64());
        }
        if matches!(want.kind, DecodeKind::Final | DecodeKind::Speculative) {
            // Context included: it is shed as the load grows, but until then it is work the
            // decoders really do, and admission must not count on time they do not have.
            pool.add_load(spent);
        }
        let mut state = channel.lock();
        state.decoding = false;
        match result {
            Ok(Ok(text)) => {
                let now = Instant::now();
                let ChannelState {
                    segmenter, emits, ..
                } = &mut *state;
                segmenter.decoded(want.ticket, text, now, emits);
                state.report();
            }
            Ok(Err(e)) => state.fail(e),
            Err(_) => state.fail("recognizer panicked".into()),
        }
        drop(state);
        // The channel may now be finished, or want another decode.
        pool.wake_listener();
    }
}

/// Picks the most urgent wanted decode of any idle channel, marks that channel as
/// decoding and copies the audio into `audio`.
fn claim(
    pool: &Pool,
    audio: &mut Vec<f32>,
    prompt: &mut String,
    draft: &mut String,
) -> Option<(Arc<Channel>, Want)> {
    loop {
        let (best, finals) = {
            let channels = lock(&pool.channels);
            let shedding = pool.shedding.load(Ordering::Relaxed);
            let scale = f64::from_bits(pool.context_scale.load(Ordering::Relaxed));
            let mut best: Option<((DecodeKind, Instant), &Arc<Channel>)> = None;
            let mut finals = 0;
            for c in channels.iter() {
                let mut state = c.lock();
                state.segmenter.scale_context(scale);
                let Some(w) = state.want() else { continue };
                if shedding && w.kind == DecodeKind::Speculative {
                    continue;
                }
                finals += usize::from(w.kind == DecodeKind::Final);
                if best.is_none_or(|(urgency, _)| (w.kind, w.since) < urgency) {
                    best = Some(((w.kind, w.since), c));
                }
            }
            (best.map(|(_, c)| c.clone()), finals)
        };
        let channel = best?;
        let mut state = channel.lock();
        // Finals queueing behind this one: the decoders are behind now, whatever the load
        // average says. Decode without context until they catch up.
        if finals > 1 {
            state.segmenter.scale_context(0.0);
        }
        // Another decoder may have claimed it since.
        let Some(want) = state.want() else { continue };
        state.decoding = true;
        state.segmenter.decode_input(&want, audio);
        state.segmenter.prompt(&want, prompt);
        state.segmenter.draft(&want, draft);
        drop(state);
        return Some((channel, want));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock is caught and fails that channel; the data stays usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One channel of a call.
struct Channel {
    state: Mutex<ChannelState>,
    opened: Instant,
}

impl Channel {
    /// How much of its demand this channel has put into the decaying load so far.
    fn weight(&self) -> f64 {
        1.0 - (-self.opened.elapsed().as_secs_f64() / LOAD_WINDOW.as_secs_f64()).exp()
    }
}

struct ChannelState {
    /// The backend's name, for metrics.
    backend: &'static str,
    audio: AudioSource,
    events: Option<EventSink>,
    resampler: Option<StreamResampler>,
    segmenter: Segmenter,
    /// A decoder is working on this channel.
    decoding: bool,
    /// The audio has ended and the segmenter was told.
    finished: bool,
    /// The last position reported settled, and how often to report it (see `report`).
    settled: u64,
    settle_every: u64,
    /// Scratch buffers, kept to avoid allocating per step: ring samples, input-rate and
    /// model-rate audio, and what the segmenter has to say.
    pcm: Vec<i16>,
    input: Vec<f32>,
    samples: Vec<f32>,
    emits: Vec<Emit>,
}

impl Channel {
    fn open(job: Job, backend: &'static str) -> Result<Self, (EventSink, String)> {
        let Job {
            audio,
            events,
            sample_rate,
            cuts,
            keyterms,
        } = job;
        let mut segmenter = Segmenter::new(cuts);
        segmenter.set_keyterms(keyterms);
        let resampler = if sample_rate == MODEL_RATE {
            None
        } else {
            match StreamResampler::new(sample_rate, MODEL_RATE) {
                Ok(r) => Some(r),
                Err(e) => return Err((events, e)),
            }
        };
        Ok(Self {
            opened: Instant::now(),
            state: Mutex::new(ChannelState {
                backend,
                audio,
                events: Some(events),
                resampler,
                segmenter,
                decoding: false,
                finished: false,
                settled: 0,
                settle_every: u64::from(sample_rate),
                pcm: vec![0; MAX_STEP_SAMPLES],
                input: Vec::with_capacity(MAX_STEP_SAMPLES),
                samples: Vec::with_capacity(MAX_STEP_SAMPLES),
                emits: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, ChannelState> {
        lock(&self.state)
    }
}

impl ChannelState {
    /// The decode this channel wants, unless one is running or the channel is over.
    fn want(&self) -> Option<Want> {
        if self.decoding || self.events.is_none() {
            return None;
        }
        self.segmenter.want()
    }

    /// Takes all audio waiting in the ring through the segmenter. `None` once the channel
    /// is over: its session left, it failed, or its audio ended and every final went out;
    /// else whether it wants a decode.
    fn ingest(&mut self) -> Option<bool> {
        if !self.events.as_ref().is_some_and(EventSink::is_open) {
            return None;
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
        self.segmenter.poll(&mut self.emits);
        self.report();
        if self.finished && !self.decoding && self.segmenter.is_idle() {
            if let Some(events) = self.events.take() {
                events.done();
            }
            return None;
        }
        Some(self.want().is_some() || self.segmenter.wants_turn())
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

    /// Sends what the segmenter emitted, and tells the session how far behind it is and,
    /// about once a second while nobody speaks, how far its finals reach (so that a backend
    /// taking over replays only what it has not finalized).
    fn report(&mut self) {
        self.audio.owe_from(self.segmenter.pending_since());
        let Some(events) = &self.events else {
            self.emits.clear();
            return;
        };
        for emit in self.emits.drain(..) {
            match emit {
                Emit::Partial(text) => events.partial(&text),
                Emit::Final(text, waited, recovery) => {
                    metrics::histogram!(m::TIME_TO_FINAL, "backend" => self.backend)
                        .record(waited.as_secs_f64());
                    if recovery != Recovery::None {
                        metrics::counter!(m::FINAL_RECOVERIES, "how" => recovery.as_str())
                            .increment(1);
                    }
                    events.final_text(&text);
                }
            }
        }
        if self.segmenter.is_idle() {
            // Behind the position by the pre-roll, the detector's frame and the
            // resampler's delay, all well under this margin.
            let margin = self.settle_every * 3 / 10;
            let settled = self.audio.position().saturating_sub(margin);
            if settled >= self.settled + self.settle_every {
                self.settled = settled;
                events.settled(settled);
            }
        }
    }

    /// Ends the channel with an error the session will see.
    fn fail(&mut self, error: String) {
        if let Some(events) = self.events.take() {
            warn!(error = %error, "recognition failed");
            events.fail(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_that_does_not_return_makes_the_pool_unhealthy() {
        let pool = Pool::new("test", 2);
        let limit = Duration::from_secs(10);
        assert!(pool.is_healthy(limit));
        pool.set_busy(1, true);
        assert!(pool.is_healthy(limit), "a decode just started");
        // The same decode, 11 s later.
        pool.busy[1].store(1, Ordering::Release);
        let pool = Pool {
            epoch: Instant::now() - Duration::from_secs(11),
            ..Arc::into_inner(pool).unwrap()
        };
        assert!(!pool.is_healthy(limit));
        pool.set_busy(1, false);
        assert!(pool.is_healthy(limit));
    }
}
