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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tracing::warn;

use super::segmenter::{DecodeKind, Emit, Recovery, Segmenter, SegmenterConfig, Want};
use super::{Engine, MODEL_RATE, Tier};
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
/// What a final or speculative decode is taken to cost, in decoder seconds, before the
/// pool has measured any: Whisper tiny.en's finals of 5–6 s utterances on 2 cores
/// (BENCHMARKS.md, "Load shapes"). Then an envelope of those measured, rising fast
/// (`COST_RISE`) and falling slowly (`COST_FALL`): a wave is as slow as its longest
/// utterances, not its average one.
const PRIOR_COST: f64 = 0.2;
const COST_RISE: f64 = 0.3;
const COST_FALL: f64 = 0.03;
/// A newly admitted call promises one final in its first seconds (callers answer "Hello?"
/// together, dialers start calls in waves): that promise fades by `e^(-age/PROMISE_DECAY)`
/// as the call's own decodes show in the measured load.
const PROMISE_DECAY: Duration = Duration::from_secs(3);
/// The decoders must be able to clear a wave of finals, one per newly admitted call all
/// due at the same instant, within this much time: what is left of the 800 ms time to final
/// once the voice has been heard to stop (BENCHMARKS.md, "Load shapes"). The wave's last
/// final is the one that counts (see [`wave_seconds`]).
const WAVE_BUDGET: f64 = 0.55;

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
    /// The call it belongs to: admission counts a call's promise once.
    pub session: u64,
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
    /// Calls (session ids) of channels handed to the listener that it has not made live
    /// yet, one entry per channel.
    starting: Mutex<Vec<u64>>,
    /// What a final or speculative decode costs lately, seconds (`f64` bits; see
    /// `PRIOR_COST`).
    cost: AtomicU64,
    /// What is shed while finals are late (see [`Ladder`]).
    ladder: Mutex<Ladder>,
}

impl Pool {
    /// A pool of `decoders` decoders whose ladder sheds at most up to `last`.
    pub fn new(name: &'static str, decoders: usize, last: Shed) -> Arc<Self> {
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
            starting: Mutex::new(Vec::new()),
            cost: AtomicU64::new(PRIOR_COST.to_bits()),
            ladder: Mutex::new(Ladder::new(last, Instant::now())),
        })
    }

    /// Counts a final or speculative decode's time into the recognizer's essential load:
    /// the share of its decoders' time such decodes took over the last `LOAD_WINDOW` or so
    /// (1.0: all of it), and into the running mean of what such a decode costs. Partials do
    /// not count: they only fill the time that is left.
    fn add_load(&self, spent: Duration, priced: bool) {
        let spent = spent.as_secs_f64();
        if priced {
            let cost = self.cost();
            let rate = if spent > cost { COST_RISE } else { COST_FALL };
            let cost = cost + rate * (spent - cost);
            self.cost.store(cost.to_bits(), Ordering::Relaxed);
        }
        self.update(spent, 0.0);
    }

    /// What a final or speculative decode costs lately, in decoder seconds.
    fn cost(&self) -> f64 {
        f64::from_bits(self.cost.load(Ordering::Relaxed))
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
    /// calls already here at risk (see [`Demand::admits`]).
    pub fn has_headroom(&self, channels: usize, limit: f64) -> bool {
        let mut booked = lock(&self.booked);
        let calls = held_bookings(&mut booked);
        self.demand(calls).admits(channels, limit)
    }

    /// [`Pool::has_headroom`], and on yes the room held for the new channels until the
    /// booking is dropped (the call started its channels, or ended before it could).
    pub fn book(self: &Arc<Self>, channels: usize, limit: f64) -> Option<Booking> {
        let mut booked = lock(&self.booked);
        let calls = held_bookings(&mut booked);
        if !self.demand(calls).admits(channels, limit) {
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

    /// What the calls here, starting and `booked` (calls, channels) demand of the decoders.
    fn demand(&self, booked: (usize, usize)) -> Demand {
        let live = lock(&self.channels).clone();
        let mut demand = Demand {
            decoders: self.busy.len().max(1),
            cost: self.cost(),
            ..Demand::default()
        };
        // The youngest channel of each call: its promise.
        let mut calls: Vec<(u64, f64)> = Vec::with_capacity(live.len());
        for c in &live {
            let behind = c
                .lock()
                .want()
                .is_some_and(|w| w.kind == DecodeKind::Final && w.since.elapsed() > FINAL_BACKLOG);
            demand.behind |= behind;
            demand.weight += c.weight();
            let promise = promise(c.opened.elapsed());
            match calls.iter_mut().find(|(s, _)| *s == c.session) {
                Some((_, p)) => *p = p.max(promise),
                None => calls.push((c.session, promise)),
            }
        }
        let mut starting = lock(&self.starting).clone();
        demand.channels = live.len() + starting.len() + booked.1;
        starting.sort_unstable();
        starting.dedup();
        starting.retain(|s| calls.iter().all(|(live, _)| live != s));
        demand.promised =
            calls.iter().map(|(_, p)| p).sum::<f64>() + (starting.len() + booked.0) as f64;
        // Channels that left still count for the load they brought, as it decays.
        (demand.load, demand.gone) = self.update(0.0, 0.0);
        demand.shedding = lock(&self.ladder).step >= Shed::Context;
        demand
    }

    /// Whether the engine decodes finals with a model of their own, which the ladder may
    /// then shed.
    pub fn set_finals_model(&self, has: bool) {
        lock(&self.ladder).finals_model = has;
    }

    /// Decoder slots.
    pub fn decoders(&self) -> usize {
        self.busy.len()
    }

    /// A channel of call `session` was handed to the listener: it counts as present from
    /// now on.
    pub fn starting(&self, session: u64) {
        lock(&self.starting).push(session);
    }

    /// The listener took a channel of `session` in (or the hand-over failed).
    pub fn started(&self, session: u64) {
        let mut starting = lock(&self.starting);
        if let Some(i) = starting.iter().position(|s| *s == session) {
            starting.swap_remove(i);
        }
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

/// Calls booked and still held, and their channels: bookings older than `BOOKING_HOLD`
/// are forgotten.
fn held_bookings(booked: &mut Vec<(u64, usize, Instant)>) -> (usize, usize) {
    booked.retain(|(_, _, at)| at.elapsed() < BOOKING_HOLD);
    (booked.len(), booked.iter().map(|(_, n, _)| n).sum())
}

/// How long after a wave of `finals` finals, all due at once, the last of them is decoded
/// at `cost` each by `decoders` decoders' worth of time: it waits for the ones ahead of it,
/// `finals − 1` shared among the decoders, then takes its own decode. Decodes are whole:
/// five finals on two decoders take three decodes' time, not two and a half (the in-phase
/// bursts of BENCHMARKS.md "Load shapes": the fifth final of each wave came about a decode
/// after the fourth), and a decoder busy with a partial when the wave comes holds it that
/// much longer.
fn wave_seconds(finals: f64, decoders: f64, cost: f64) -> f64 {
    ((finals - 1.0).max(0.0) / decoders.max(1e-3) + 1.0) * cost
}

/// What is left of a call's promise of a final (see `PROMISE_DECAY`) at `age`.
fn promise(age: Duration) -> f64 {
    (-age.as_secs_f64() / PROMISE_DECAY.as_secs_f64()).exp()
}

/// What the calls present ask of the decoders, as admission weighs it.
#[derive(Debug, Default, Clone, Copy)]
struct Demand {
    decoders: usize,
    /// Channels live, starting or booked.
    channels: usize,
    /// The measured essential load (share of the decoders' time) and the age weights of
    /// the channels that brought it: those here (`weight`) and those gone.
    load: f64,
    weight: f64,
    gone: f64,
    /// Finals of newly admitted calls still to come (see `PROMISE_DECAY`), in calls.
    promised: f64,
    /// What one of those finals costs, in decoder seconds.
    cost: f64,
    /// A final has waited over `FINAL_BACKLOG`.
    behind: bool,
    /// Finals were late enough lately that the ladder sheds context or more.
    shedding: bool,
}

impl Demand {
    /// Whether a call of `channels` more channels can be taken without putting the calls
    /// already here at risk. Three conditions:
    ///
    /// - no final is late now and the decoders are not shedding context or more;
    /// - **the wave**: if every newly admitted call, this one included, said its first words
    ///   at the same instant, the decoders would clear their last final within
    ///   `WAVE_BUDGET`.
    ///   This is what a burst of calls opened together costs before any of it shows in the
    ///   measured load;
    /// - **the average**: the load the channels will bring once all have been here a while
    ///   stays under `limit`. The load is an average over `LOAD_WINDOW`, so a channel of age
    ///   `a` has put only `w = 1 − e^(−a/window)` of its demand into it. One channel's demand
    ///   is estimated as `(load + PRIOR·K) / (Σw + K)`: the measured share per fully
    ///   observed channel, pulled towards a conversational channel's while there is little
    ///   history.
    fn admits(&self, channels: usize, limit: f64) -> bool {
        /// A channel's share of the decoders before it has history: what conversational
        /// calls take on 2 cores when spread out (BENCHMARKS.md, "Against the targets").
        const PRIOR: f64 = 0.015;
        /// How many fully observed channels the prior weighs as.
        const K: f64 = 4.0;
        if self.behind || self.shedding {
            return false;
        }
        // The calls already here keep their share of the decoders while the wave drains
        // (their finals come oldest first among its own), and the newcomers' utterances are
        // unknown: as long as the prior's, however short the decodes measured lately (an
        // in-phase burst on 8 settled calls, admitted at their ~0.15 s decodes, reached p95
        // 880 ms; BENCHMARKS.md "Load shapes").
        let free = self.decoders as f64 * (1.0 - self.load).max(0.0);
        if wave_seconds(self.promised + 1.0, free, self.cost.max(PRIOR_COST)) > WAVE_BUDGET {
            return false;
        }
        let per_channel = (self.load + PRIOR * K) / (self.weight + self.gone + K);
        per_channel * (self.channels + channels) as f64 <= limit
    }
}

fn listen(pool: &Pool, jobs: &Receiver<Job>) {
    let mut channels: Vec<Arc<Channel>> = Vec::new();
    loop {
        let mut added = false;
        // Calls of the jobs taken in this round: they stop counting as starting once
        // published.
        let mut added_sessions = Vec::new();
        loop {
            match jobs.try_recv() {
                Ok(job) => {
                    added_sessions.push(job.session);
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
        for session in added_sessions {
            pool.started(session);
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
        let Some((channel, want, tier)) = claim(pool, &mut audio, &mut prompt, &mut draft) else {
            pool.wait_for_work(seen);
            continue;
        };
        let started = Instant::now();
        metrics::histogram!(m::DECODE_WAIT, "kind" => want.kind.as_str())
            .record(started.saturating_duration_since(want.since).as_secs_f64());
        pool.set_busy(index, true);
        let waited_before = m::thread_run_queue_wait();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            engine.transcribe(&audio, &prompt, &draft, tier)
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
            // A final by the partials' model (the ladder shed the finals' one) is load, but
            // not what a final costs once the ladder is down again.
            pool.add_load(spent, tier == Tier::Finals);
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

/// Picks the most urgent wanted decode of any idle channel that is not shed, marks that
/// channel as decoding and copies the audio into `audio`; and which model decodes it.
fn claim(
    pool: &Pool,
    audio: &mut Vec<f32>,
    prompt: &mut String,
    draft: &mut String,
) -> Option<(Arc<Channel>, Want, Tier)> {
    loop {
        let step = lock(&pool.ladder).step;
        let (best, finals, late) = {
            let channels = lock(&pool.channels);
            let shedding = pool.shedding.load(Ordering::Relaxed) || step >= Shed::Speculative;
            let scale = match step >= Shed::Context {
                true => 0.0,
                false => f64::from_bits(pool.context_scale.load(Ordering::Relaxed)),
            };
            let now = Instant::now();
            let mut best: Option<((DecodeKind, Instant), &Arc<Channel>)> = None;
            let mut finals = 0;
            let mut late = Duration::ZERO;
            for c in channels.iter() {
                let mut state = c.lock();
                state.segmenter.scale_context(scale);
                let Some(w) = state.want() else { continue };
                match w.kind {
                    DecodeKind::Final => {
                        finals += 1;
                        late = late.max(now.saturating_duration_since(w.since));
                    }
                    DecodeKind::Speculative if shedding => continue,
                    DecodeKind::FirstPartial | DecodeKind::Partial if step >= Shed::Partials => {
                        continue;
                    }
                    _ => {}
                }
                if best.is_none_or(|(urgency, _)| (w.kind, w.since) < urgency) {
                    best = Some(((w.kind, w.since), c));
                }
            }
            (best.map(|(_, c)| c.clone()), finals, late)
        };
        // The model is chosen on the step this very wave calls for.
        let step = pool.climb(late);
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
        let tier = match step >= Shed::FinalsModel {
            true => Tier::Partials,
            false => Tier::of(want.kind),
        };
        return Some((channel, want, tier));
    }
}

/// What the decoders leave out while finals are late, in the order a caller misses it
/// least: each step sheds its own work and every step's before it. The config names the
/// last step the ladder may take (`shed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shed {
    Nothing,
    /// Partials (and first partials): the platform acts on finals.
    Partials,
    /// Finals' left context: their decodes get shorter, a little less accurate.
    Context,
    /// The finals' own model, for an engine that has one (Whisper's default: base):
    /// finals are decoded by the partials' model, in about half the time, with more
    /// errors (BENCHMARKS.md, "Whisper").
    FinalsModel,
    /// Speculative decodes: finals are decoded only once their endpoint has passed.
    Speculative,
}

impl Shed {
    const ALL: [Shed; 5] = [
        Self::Nothing,
        Self::Partials,
        Self::Context,
        Self::FinalsModel,
        Self::Speculative,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nothing => "nothing",
            Self::Partials => "partials",
            Self::Context => "context",
            Self::FinalsModel => "finals_model",
            Self::Speculative => "speculative",
        }
    }

    /// How late the oldest waiting final may be before this step is taken.
    fn late_at(self) -> Duration {
        match self {
            Self::Nothing => Duration::ZERO,
            Self::Partials => Duration::from_millis(100),
            Self::Context => Duration::from_millis(250),
            Self::FinalsModel => Duration::from_millis(400),
            // A speculative decode at a pause that does end is that utterance's final, ready
            // at the endpoint: in a wave of finals most are. Shed only when finals are
            // already about to miss the time to final the platform needs.
            Self::Speculative => Duration::from_millis(600),
        }
    }
}

/// The degradation ladder: climbs at once to the step that how late the oldest waiting
/// final is calls for, and comes down one step per `CALM` in which no final was that late,
/// so partials come back when the load falls. It takes only the steps it may: up to the
/// configured last one, and the finals' model only where the engine has one.
#[derive(Debug)]
struct Ladder {
    step: Shed,
    /// The last step it may take, and whether the engine has a finals' model to shed.
    last: Shed,
    finals_model: bool,
    /// Since when no final has been late enough for `step`.
    calm_since: Instant,
    /// Seconds spent on each step since the last count went to the metrics, and when.
    spent: [f64; 5],
    counted: Instant,
}

/// How long finals must be on time before the ladder comes down a step.
const CALM: Duration = Duration::from_secs(2);

impl Ladder {
    fn new(last: Shed, now: Instant) -> Self {
        Self {
            step: Shed::Nothing,
            last,
            finals_model: false,
            calm_since: now,
            spent: [0.0; 5],
            counted: now,
        }
    }

    /// Whether the ladder may stand on `step`.
    fn takes(&self, step: Shed) -> bool {
        step <= self.last && (step != Shed::FinalsModel || self.finals_model)
    }

    /// The step for the oldest waiting final being `late` at `now`.
    fn update(&mut self, late: Duration, now: Instant) -> Shed {
        let called = Shed::ALL
            .into_iter()
            .rev()
            .find(|&s| self.takes(s) && late >= s.late_at())
            .unwrap_or(Shed::Nothing);
        if self.step != Shed::Nothing {
            self.spent[self.step as usize] +=
                now.saturating_duration_since(self.counted).as_secs_f64();
        }
        self.counted = now;
        if called >= self.step {
            self.step = called;
            self.calm_since = now;
        } else if now.saturating_duration_since(self.calm_since) >= CALM {
            self.step = Shed::ALL
                .into_iter()
                .rev()
                .find(|&s| s < self.step && self.takes(s))
                .unwrap_or(Shed::Nothing);
            self.calm_since = now;
        }
        self.step
    }
}

impl Pool {
    /// Moves the ladder for the oldest waiting final being `late`, counts the time on each
    /// step into the metrics in whole seconds, and returns the step it stands on.
    fn climb(&self, late: Duration) -> Shed {
        let mut ladder = lock(&self.ladder);
        let step = ladder.update(late, Instant::now());
        metrics::gauge!(m::SHED_STEP).set(step as u8 as f64);
        for s in Shed::ALL.into_iter().skip(1) {
            let spent = &mut ladder.spent[s as usize];
            if *spent >= 1.0 {
                let whole = spent.floor();
                *spent -= whole;
                metrics::counter!(m::SHED_SECONDS, "step" => s.as_str()).increment(whole as u64);
            }
        }
        step
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
    session: u64,
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
            session,
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
            session,
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
        let pool = Pool::new("test", 2, Shed::Speculative);
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

    /// Calls an idle pool of `decoders` takes at once before its measurements say more.
    fn wave(decoders: usize, cost: f64) -> usize {
        (1..=64)
            .take_while(|&n| wave_seconds(n as f64, decoders as f64, cost) <= WAVE_BUDGET)
            .count()
    }

    #[test]
    fn a_wave_lasts_as_many_whole_decodes_as_its_last_final_waits_for() {
        // One decoder: one decode after another.
        assert!((wave_seconds(3.0, 1.0, 0.2) - 0.6).abs() < 1e-9);
        // Two decoders: the fifth final starts once four are done, two decodes in.
        assert!((wave_seconds(5.0, 2.0, 0.2) - 0.6).abs() < 1e-9);
        assert!((wave_seconds(1.0, 2.0, 0.2) - 0.2).abs() < 1e-9);
        // No wave still costs the decode of the call asking.
        assert!((wave_seconds(0.0, 2.0, 0.2) - 0.2).abs() < 1e-9);
        // Decoders half taken by the calls already here drain the queue half as fast.
        assert!((wave_seconds(5.0, 1.0, 0.2) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn an_idle_pool_takes_a_burst_only_as_large_as_its_decoders_clear_in_time() {
        let pool = Pool::new("test", 2, Shed::Speculative);
        let mut held = Vec::new();
        while let Some(booking) = pool.book(2, 0.8) {
            held.push(booking);
            assert!(held.len() <= 64, "the burst was never cut");
        }
        assert_eq!(held.len(), wave(2, PRIOR_COST));
        assert!(held.len() >= 2, "a burst of calls should not be cut at one");
        // A call that ended (or started and settled) gives its room back.
        held.pop();
        assert!(pool.book(2, 0.8).is_some());
        // One decoder clears half the finals in the same time.
        let one = Pool::new("test", 1, Shed::Speculative);
        let mut held = Vec::new();
        while let Some(booking) = one.book(2, 0.8) {
            held.push(booking);
        }
        assert_eq!(held.len(), wave(1, PRIOR_COST));
    }

    #[test]
    fn slower_decodes_measured_make_the_wave_smaller_and_faster_ones_no_larger() {
        let pool = Pool::new("test", 2, Shed::Speculative);
        for _ in 0..20 {
            pool.add_load(Duration::from_secs_f64(PRIOR_COST * 2.0), true);
        }
        let slow = pool.cost();
        assert!(slow > PRIOR_COST * 1.9, "cost {slow}");
        let mut held = Vec::new();
        while let Some(booking) = pool.book(2, 1.0) {
            held.push(booking);
        }
        assert!(held.len() < wave(2, PRIOR_COST), "{} calls", held.len());
        // One fast decode moves the estimate only a little: a wave is as slow as its
        // longest utterances.
        pool.add_load(Duration::from_secs_f64(PRIOR_COST / 4.0), true);
        assert!(pool.cost() > slow * 0.9);
        // Calls whose decodes are short say nothing of the utterances of the calls to come:
        // a wave is never taken as cheaper than the prior's.
        let quick = Demand {
            decoders: 2,
            cost: PRIOR_COST / 4.0,
            ..Demand::default()
        };
        let prior = Demand {
            cost: PRIOR_COST,
            ..quick
        };
        for promised in 0..16 {
            let promised = f64::from(promised);
            assert_eq!(
                Demand { promised, ..quick }.admits(2, 1.0),
                Demand { promised, ..prior }.admits(2, 1.0),
                "{promised} calls promised"
            );
        }
    }

    #[test]
    fn a_wave_is_smaller_on_decoders_the_calls_here_keep_busy() {
        let taken = |load: f64| {
            (0..64)
                .take_while(|&promised| {
                    Demand {
                        decoders: 2,
                        cost: PRIOR_COST,
                        promised: f64::from(promised),
                        load,
                        weight: 8.0,
                        ..Demand::default()
                    }
                    .admits(2, 1.0)
                })
                .count()
        };
        assert_eq!(taken(0.0), wave(2, PRIOR_COST));
        assert!(taken(0.3) < taken(0.0), "{} calls", taken(0.3));
        assert!(taken(0.3) >= 1, "a busy pool still takes a call at a time");
    }

    #[test]
    fn a_promise_fades_as_the_call_ages() {
        assert_eq!(promise(Duration::ZERO), 1.0);
        assert!(promise(PROMISE_DECAY) < 0.4);
        assert!(promise(PROMISE_DECAY * 10) < 0.001);
        // The same demand with the promises kept or faded.
        let young = Demand {
            decoders: 2,
            cost: PRIOR_COST,
            channels: 2 * wave(2, PRIOR_COST),
            promised: wave(2, PRIOR_COST) as f64,
            ..Demand::default()
        };
        assert!(!young.admits(2, 0.8));
        let settled = Demand {
            promised: young.promised * promise(PROMISE_DECAY * 10),
            weight: young.channels as f64,
            load: 0.2,
            ..young
        };
        assert!(settled.admits(2, 0.8));
        // The measured load still refuses what would take the decoders over the limit.
        let busy = Demand {
            load: 1.0,
            ..settled
        };
        assert!(!busy.admits(2, 0.8));
        // And so do late finals, or shedding, whatever the averages say.
        assert!(
            !Demand {
                behind: true,
                ..settled
            }
            .admits(2, 0.8)
        );
        assert!(
            !Demand {
                shedding: true,
                ..settled
            }
            .admits(2, 0.8)
        );
    }

    #[test]
    fn the_ladder_sheds_partials_then_context_then_the_finals_model_then_speculative_and_comes_back_down()
     {
        let t0 = Instant::now();
        let ms = |v: u64| Duration::from_millis(v);
        let mut ladder = Ladder::new(Shed::Speculative, t0);
        ladder.finals_model = true;
        assert_eq!(ladder.update(ms(0), t0), Shed::Nothing);
        assert_eq!(ladder.update(ms(50), t0), Shed::Nothing);
        for step in [
            Shed::Partials,
            Shed::Context,
            Shed::FinalsModel,
            Shed::Speculative,
        ] {
            assert_eq!(ladder.update(step.late_at(), t0), step);
        }
        // Finals on time again: one step down per calm stretch, partials last.
        let mut at = t0 + CALM / 2;
        assert_eq!(ladder.update(ms(0), at), Shed::Speculative);
        at = t0 + CALM;
        assert_eq!(ladder.update(ms(0), at), Shed::FinalsModel);
        at += CALM;
        assert_eq!(ladder.update(ms(0), at), Shed::Context);
        // A final late enough for the step held restarts the calm.
        at += CALM / 2;
        assert_eq!(ladder.update(Shed::Context.late_at(), at), Shed::Context);
        at += CALM / 2;
        assert_eq!(ladder.update(ms(0), at), Shed::Context);
        at += CALM / 2;
        assert_eq!(ladder.update(ms(0), at), Shed::Partials);
        at += CALM;
        assert_eq!(ladder.update(ms(0), at), Shed::Nothing);
        // Very late finals climb every step at once.
        assert_eq!(ladder.update(ms(2_000), at), Shed::Speculative);
        assert!(ladder.spent[Shed::Context as usize] > 0.0);
    }

    #[test]
    fn the_ladder_takes_only_the_steps_it_may() {
        let t0 = Instant::now();
        let late = Duration::from_secs(2);
        // One model: nothing to shed between context and speculative decodes, up or down.
        let mut one = Ladder::new(Shed::Speculative, t0);
        assert_eq!(one.update(Shed::FinalsModel.late_at(), t0), Shed::Context);
        assert_eq!(one.update(late, t0), Shed::Speculative);
        assert_eq!(one.update(Duration::ZERO, t0 + CALM), Shed::Context);
        // Capped: never past the last step allowed, however late.
        for last in Shed::ALL {
            let mut capped = Ladder::new(last, t0);
            capped.finals_model = true;
            assert_eq!(capped.update(late, t0), last);
            assert_eq!(
                capped.update(Duration::ZERO, t0 + CALM * 5),
                Shed::ALL[(last as usize).saturating_sub(1)]
            );
        }
    }
}
