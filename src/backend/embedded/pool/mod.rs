//! The threads behind the embedded backend: one listener and a decoder per handle.
//!
//! The **listener** takes every channel's audio from its ring as it arrives, resamples it
//! and runs it through the channel's `Segmenter` (voice detector and endpointing: tens of
//! microseconds per frame), so endpoints are found on time whatever the decoders are doing,
//! and a final that a decode already covers goes out the moment its endpoint passes.
//!
//! Each **decoder** owns one recognizer handle outright (a handle takes one call at a time)
//! and loops: claim the batch the `Scheduler` plans from what every channel wants (the
//! most urgent first: finals and speculative decodes at pauses by when they are due, then
//! first partials, then partials), copy that audio, decode it without holding any lock, hand the text
//! back. A channel has at most one decode running. Under load partials thin out and
//! finals stay on time. The threads are the scheduler's shell: they read the clock, take
//! the locks and write the metrics; every decision is the scheduler's. A claim plans
//! from each channel's want, then takes each planned channel's want again under its lock,
//! decoding it only if it still fits the plan (`schedule::Wanted::still`): the listener
//! may have moved the channel's audio on in between.
//!
//! The **judge** (when the end-of-turn model is on) owns that model and, at each pause of
//! a customer's channel that is nearly an endpoint, decides whether the turn is over, so
//! the final it closes ends accordingly ([`super::segmenter::end_turn`]). It runs beside
//! the decoders, so its verdict is ready about when the final is.
//!
//! Locks: a channel's state is one mutex, held for microseconds by either side; the channel
//! list is a mutex changed only by the listener. Order: list, then channel; never the
//! reverse. The scheduler's mutex is taken with no channel's held. No lock is held across
//! a decode.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tracing::warn;

mod channel;

use self::channel::{Channel, ChannelState};
use super::Shed;
use super::cost::CostModel;
use super::schedule::{
    Booked, Hold, LeftOut, Live, Plan, Present, Scheduler, Wanted, held_bookings, want,
};
use super::segmenter::{Room, SegmenterConfig, Want};
use super::{Engine, Speakers, StartError, Tier, Utterance};
use crate::audio::AudioSource;
use crate::backend::{Booking, EventSink, Refusal};
use crate::metrics as m;
use crate::turn::TurnModel;

/// Longest a thread sleeps before looking at its channels again without being woken.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// Samples taken from a ring at a time.
pub(super) const MAX_STEP_SAMPLES: usize = 16_000;

/// A channel handed to the backend.
pub struct Job {
    pub audio: AudioSource,
    pub events: EventSink,
    pub sample_rate: u32,
    pub cuts: SegmenterConfig,
    /// The call's keyterms, for engines that take a prompt.
    pub keyterms: String,
    /// The language the call asked for (empty: the engine's default).
    pub language: String,
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
    /// Channels of admitted calls whose start frame is still to come, booked by their
    /// [`Booking`]s: counted as present, so a burst of upgrades cannot all pass, and given
    /// back the moment the call starts or ends, or after `BOOKING_HOLD` without a start
    /// frame.
    booked: Mutex<Vec<Hold>>,
    next_booking: AtomicU64,
    /// Calls (session id, and whether only the finals' model speaks its language) of
    /// channels handed to the listener that it has not made live yet, one entry per channel.
    starting: Mutex<Vec<(u64, bool)>>,
    /// Every decision: what to decode, what to shed, whether a call fits. Locked for
    /// microseconds, never while a channel is.
    scheduler: Mutex<Scheduler>,
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
            booked: Mutex::new(Vec::new()),
            next_booking: AtomicU64::new(0),
            starting: Mutex::new(Vec::new()),
            scheduler: Mutex::new(Scheduler::new(decoders, last, Instant::now())),
        })
    }

    /// The engine's cost model and how many utterances it decodes as one batch: set once
    /// it has loaded and been calibrated.
    pub fn set_engine(&self, cost: CostModel, max_batch: usize) {
        lock(&self.scheduler).set_engine(cost, max_batch);
    }

    /// Whether a call of `channels` more channels, in a language `speakers` transcribe, can
    /// be taken without putting the calls already here at risk (see `Scheduler::admits`):
    /// what readiness reports.
    pub fn has_headroom(&self, channels: usize, speakers: Speakers, limit: f64) -> bool {
        let now = Instant::now();
        let mut booked = lock(&self.booked);
        self.admits(&mut booked, channels, speakers, limit, now)
            .is_ok()
    }

    /// [`Pool::has_headroom`] for a call in a language `speakers` transcribe, and on yes the
    /// room held for the new channels until the booking is dropped (the call started its
    /// channels, or ended before it could).
    pub fn book(
        self: &Arc<Self>,
        channels: usize,
        speakers: Speakers,
        limit: f64,
    ) -> Result<Booking, Refusal> {
        let now = Instant::now();
        let mut booked = lock(&self.booked);
        self.admits(&mut booked, channels, speakers, limit, now)?;
        let id = self.next_booking.fetch_add(1, Ordering::Relaxed);
        booked.push(Hold {
            id,
            channels,
            at: now,
            bound: speakers.finals_model_only(),
        });
        let pool = Arc::downgrade(self);
        Ok(Booking::new(move || {
            if let Some(pool) = pool.upgrade() {
                lock(&pool.booked).retain(|h| h.id != id);
            }
        }))
    }

    /// The scheduler's answer for the call, beside the calls here and those `booked` (the
    /// lock held by the caller, so a booking that follows is counted by the next ask).
    fn admits(
        &self,
        booked: &mut Vec<Hold>,
        channels: usize,
        speakers: Speakers,
        limit: f64,
        now: Instant,
    ) -> Result<(), Refusal> {
        let present = self.present(held_bookings(booked, now), now);
        lock(&self.scheduler).admits(&present, channels, speakers, limit, now)
    }

    /// The calls here, starting and `booked`, as admission counts them.
    fn present(&self, booked: Booked, now: Instant) -> Present {
        let live: Vec<Live> = lock(&self.channels)
            .iter()
            .map(|c| Live {
                session: c.session,
                opened: c.opened,
                final_since: c.lock().final_since(),
                bound: c.bound,
            })
            .collect();
        let starting = lock(&self.starting).clone();
        Present::count(&live, &starting, booked, now)
    }

    /// Whether the engine decodes finals with a model of their own, which the ladder may
    /// then shed.
    pub fn set_finals_model(&self, has: bool) {
        lock(&self.scheduler).set_finals_model(has);
    }

    /// Whether the engine searches finals with a beam while the decoders have room, which
    /// the ladder may then shed.
    pub fn set_beam(&self, has: bool) {
        lock(&self.scheduler).set_beam(has);
    }

    /// Decoder slots.
    pub fn decoders(&self) -> usize {
        self.busy.len()
    }

    /// A channel of call `session` was handed to the listener: it counts as present from
    /// now on.
    pub fn starting(&self, session: u64, speakers: Speakers) {
        lock(&self.starting).push((session, speakers.finals_model_only()));
    }

    /// The listener took a channel of `session` in (or the hand-over failed).
    pub fn started(&self, session: u64) {
        let mut starting = lock(&self.starting);
        if let Some(i) = starting.iter().position(|s| s.0 == session) {
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

    /// Decoders not decoding now.
    fn idle_decoders(&self) -> usize {
        self.busy
            .iter()
            .filter(|b| b.load(Ordering::Acquire) == 0)
            .count()
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
pub fn spawn_listener(pool: Arc<Pool>, jobs: Receiver<Job>) -> Result<Thread, StartError> {
    let shared = pool.clone();
    let handle = thread::Builder::new()
        .name(format!("{}-listen", pool.name))
        .spawn(move || listen(&shared, &jobs))
        .map_err(|source| StartError::Thread {
            what: "listener",
            source,
        })?;
    let listener = handle.thread().clone();
    let _ = pool.listener.set(listener.clone());
    Ok(listener)
}

/// Starts the thread that owns the end-of-turn model.
pub fn spawn_judge(pool: Arc<Pool>, model: TurnModel) -> Result<(), StartError> {
    thread::Builder::new()
        .name(format!("{}-turn", pool.name))
        .spawn(move || judge_loop(&pool, model))
        .map(|_| ())
        .map_err(|source| StartError::Thread {
            what: "end-of-turn",
            source,
        })
}

/// Starts a decoder thread that owns `engine`.
pub fn spawn_decoder(
    pool: Arc<Pool>,
    index: usize,
    engine: Box<dyn Engine>,
) -> Result<(), StartError> {
    thread::Builder::new()
        .name(format!("{}-{index}", pool.name))
        .spawn(move || decode_loop(&pool, index, engine))
        .map(|_| ())
        .map_err(|source| StartError::Thread {
            what: "decoder",
            source,
        })
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
        // Whether a channel wants a decode is asked as a claim would ask it: with the
        // scheduler's knobs now (the live lead), so a pause whose speculative decode is due
        // wakes the decoders when the claim would take it.
        let room = lock(&pool.scheduler).knobs(Instant::now()).room();
        channels.retain(|channel| {
            let ingested =
                std::panic::catch_unwind(AssertUnwindSafe(|| channel.lock().ingest(&room)));
            match ingested {
                Ok(Some(want)) => {
                    wants |= want;
                    true
                }
                Ok(None) => {
                    pool.departed(channel);
                    false
                }
                Err(_) => {
                    channel.lock().fail("recognizer panicked".into());
                    pool.departed(channel);
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
        let longest = {
            let channels = lock(&pool.channels);
            let pauses = channels
                .iter()
                .enumerate()
                .filter_map(|(key, c)| Some((key, c.lock().segmenter.turn_pause()?)));
            want::next_turn(pauses).map(|key| channels[key].clone())
        };
        let claimed = longest.and_then(|c| {
            let ticket = c.lock().segmenter.claim_turn(&mut audio)?;
            Some((c, ticket))
        });
        let Some((channel, ticket)) = claimed else {
            pool.wait_for_work(seen);
            continue;
        };
        let started = Instant::now();
        let result =
            std::panic::catch_unwind(AssertUnwindSafe(|| model.complete_probability(&audio)));
        let spent = started.elapsed();
        metrics::histogram!(m::TURN_SECONDS).record(spent.as_secs_f64());
        let share = lock(&pool.scheduler).judged(spent, Instant::now());
        metrics::gauge!(m::DECODER_LOAD).set(share);
        let complete = match result {
            Ok(Ok(p)) => Some(want::turn_complete(p)),
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
        segmenter.judged(ticket, complete, Instant::now(), emits);
        state.report();
    }
}

/// What a decoder copies out of a channel for one utterance of a batch.
#[derive(Default)]
struct Input {
    audio: Vec<f32>,
    prompt: String,
    draft: String,
    language: String,
}

/// A batch a decoder claimed: the channels, what each wants, which model decodes it, and
/// whether finals may be searched with the engine's beam (neither the ladder nor the load
/// sheds it; each final's ticket says whether its endpoint leaves the time for it).
struct Batch {
    items: Vec<(Arc<Channel>, Want)>,
    tier: Tier,
    beam: bool,
}

fn decode_loop(pool: &Pool, index: usize, mut engine: Box<dyn Engine>) {
    let mut inputs: Vec<Input> = Vec::new();
    while !pool.closed.load(Ordering::Acquire) {
        let seen = *lock(&pool.work);
        let Some(batch) = claim(pool, &mut inputs) else {
            pool.wait_for_work(seen);
            continue;
        };
        let started = Instant::now();
        for (_, want) in &batch.items {
            metrics::histogram!(m::DECODE_WAIT, "kind" => want.kind.as_str())
                .record(started.saturating_duration_since(want.since).as_secs_f64());
        }
        let utterances: Vec<Utterance<'_>> = inputs[..batch.items.len()]
            .iter()
            .zip(&batch.items)
            .map(|(i, (_, want))| Utterance {
                audio: &i.audio,
                prompt: &i.prompt,
                draft: &i.draft,
                language: &i.language,
                beam: batch.beam && want.ticket.beam,
            })
            .collect();
        let beamed = utterances.iter().filter(|u| u.beam).count();
        pool.set_busy(index, true);
        let waited_before = m::thread_run_queue_wait();
        let results = std::panic::catch_unwind(AssertUnwindSafe(|| {
            engine.transcribe(&utterances, batch.tier)
        }));
        let waited_after = m::thread_run_queue_wait();
        pool.set_busy(index, false);
        let spent = started.elapsed();
        metrics::histogram!(m::DECODE_BATCH).record(batch.items.len() as f64);
        // SCHED_IDLE decoders get only the CPU the rest of the box leaves: time spent
        // runnable but not running is what other load took from this decode. Both are
        // recorded per decode of the batch (each waited the whole batch), so their sums
        // stay comparable.
        let starved = match (waited_before, waited_after) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        let model = batch.tier.as_str();
        for (_, want) in &batch.items {
            let kind = want.kind.as_str();
            metrics::histogram!(m::DECODE_SECONDS, "kind" => kind, "model" => model)
                .record(spent.as_secs_f64());
            if let Some(starved) = starved {
                metrics::histogram!(m::DECODE_STARVED, "kind" => kind)
                    .record(starved.as_secs_f64());
            }
        }
        let lengths: Vec<f64> = utterances
            .iter()
            .map(|u| u.audio.len() as f64 / f64::from(super::MODEL_RATE))
            .collect();
        let essential = batch.items.iter().any(|(_, w)| w.kind.is_essential());
        let (share, correction) = {
            let mut scheduler = lock(&pool.scheduler);
            let share = scheduler.decoded(
                batch.tier,
                &lengths,
                spent,
                beamed,
                essential,
                Instant::now(),
            );
            (share, scheduler.cost().correction(batch.tier))
        };
        metrics::gauge!(m::DECODER_LOAD).set(share);
        metrics::gauge!(m::DECODE_COST_CORRECTION, "model" => model).set(correction);
        let results = match results {
            Ok(r) if r.len() == batch.items.len() => r,
            Ok(_) => batch
                .items
                .iter()
                .map(|_| Err("the recognizer answered another number of utterances".into()))
                .collect(),
            Err(_) => batch
                .items
                .iter()
                .map(|_| Err("recognizer panicked".into()))
                .collect(),
        };
        for ((channel, want), result) in batch.items.into_iter().zip(results) {
            let mut state = channel.lock();
            state.decoding.end(want.kind);
            match result {
                Ok(text) => {
                    let now = Instant::now();
                    let ChannelState {
                        segmenter, emits, ..
                    } = &mut *state;
                    segmenter.decoded(want.ticket, text, now, emits);
                    state.report();
                }
                Err(e) => state.fail(e.to_string()),
            }
        }
        // The channels may now be finished, or want another decode.
        pool.wake_listener();
    }
}

/// Claims a batch as the scheduler plans it ([`Scheduler::plan`]): marks its channels as
/// decoding and copies their inputs into `inputs`.
fn claim(pool: &Pool, inputs: &mut Vec<Input>) -> Option<Batch> {
    loop {
        let now = Instant::now();
        let knobs = lock(&pool.scheduler).knobs(now);
        metrics::gauge!(m::DECODER_LOAD).set(knobs.share);
        let channels = lock(&pool.channels).clone();
        let room = knobs.room();
        let mut wanted: Vec<Wanted> = Vec::new();
        for (key, c) in channels.iter().enumerate() {
            let mut state = c.lock();
            if !room.judges {
                state.shed_judge();
            }
            let Some(w) = state.want_in(&room) else {
                continue;
            };
            if let Some(LeftOut::Speculative(why)) = knobs.left_out(w.kind) {
                state.shed_speculative(why, &room);
            }
            wanted.push(Wanted::of(key, &w));
        }
        let idle = pool.idle_decoders();
        let plan = lock(&pool.scheduler).plan(&knobs, &wanted, idle, now);
        count_steps(&plan);
        if plan.replan {
            continue;
        }
        let step = plan.step;
        let batch = plan.batch?;
        let mut items = Vec::with_capacity(batch.keys.len());
        let (context, why) = batch.context;
        let room = Room { context, ..room };
        for &key in &batch.keys {
            let (Some(channel), Some(planned)) =
                (channels.get(key), wanted.iter().find(|w| w.key == key))
            else {
                continue;
            };
            let mut state = channel.lock();
            // Another decoder may have claimed it since, or its audio moved on.
            let Some(want) = state.want_in(&room).filter(|w| planned.still(w)) else {
                continue;
            };
            if let Some(why) = why
                && want.kind.is_essential()
            {
                metrics::counter!(m::SHED_DECODES, "what" => "context", "why" => why.as_str())
                    .increment(1);
            }
            if let Some(why) = batch.partials_for(&want, step) {
                let why = why.as_str();
                metrics::counter!(m::SHED_DECODES, "what" => "finals_model", "why" => why)
                    .increment(1);
            }
            state.decoding.start(want.kind);
            if inputs.len() <= items.len() {
                inputs.push(Input::default());
            }
            let input = &mut inputs[items.len()];
            state.segmenter.decode_input(&want, &mut input.audio);
            state.segmenter.prompt(&want, &mut input.prompt);
            state.segmenter.draft(&want, &mut input.draft);
            input.language.clone_from(&state.language);
            drop(state);
            items.push((channel.clone(), want));
        }
        if items.is_empty() {
            continue;
        }
        return Some(Batch {
            items,
            tier: batch.tier,
            beam: batch.beam,
        });
    }
}

/// The ladder's step and the seconds spent on each step, into the metrics.
fn count_steps(plan: &Plan) {
    metrics::gauge!(m::SHED_STEP).set(plan.step as u8 as f64);
    for step in Shed::ALL.into_iter().skip(1) {
        let whole = plan.step_seconds[step as usize];
        if whole > 0 {
            metrics::counter!(m::SHED_SECONDS, "step" => step.as_str()).increment(whole);
        }
    }
}

impl Pool {
    /// A channel left: its share of the load stays a while.
    fn departed(&self, channel: &Channel) {
        let now = Instant::now();
        lock(&self.scheduler).departed(channel.opened, now);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock is caught and fails that channel; the data stays usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::embedded::ContextKind;
    use crate::backend::embedded::cost::tests::whisper_like;
    use crate::backend::embedded::segmenter::{DecodeKind, FRAME, Lead};
    use crate::backend::whisper::{WhisperConfig, settings};
    use crate::backend::{ChannelSpec, Options};
    use crate::protocol::Channel as Role;

    /// A Whisper pool on machine F's figures with one call's two channels, each having
    /// heard voice over `voice[role]` (seconds) of `heard` seconds of audio that ended
    /// just now: the frames go to the segmenters with their instants, as the listener
    /// would have pushed them.
    fn call(voice: [(f64, f64); 2], heard: f64) -> Arc<Pool> {
        let pool = Pool::new("test", 2, Shed::Speculative);
        let machine = crate::backend::embedded::sim::Machine::f();
        pool.set_engine(machine.calibration().with_beam(5), 16);
        pool.set_finals_model(true);
        pool.set_beam(true);
        let settings = settings(&WhisperConfig::default());
        let frame = Duration::from_secs_f64(FRAME as f64 / 16_000.0);
        let frames = (heard / frame.as_secs_f64()) as u32;
        let t0 = Instant::now() - frame * frames;
        for (role, (from, to)) in [Role::Customer, Role::Assistant].into_iter().zip(voice) {
            let spec = ChannelSpec {
                session_id: 1,
                channel: role,
                sample_rate: 16_000,
                options: Arc::new(Options::default()),
            };
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let job = Job {
                audio: crate::audio::channel_pipe(16_000, 1_024).1,
                events: EventSink::new(tx, role, 0),
                sample_rate: 16_000,
                cuts: settings.cuts(&spec, false, ContextKind::Audio, true),
                keyterms: String::new(),
                language: String::new(),
                session: 1,
            };
            let Ok(channel) = Channel::open(job, "test") else {
                panic!("the channel opens");
            };
            {
                let mut state = channel.lock();
                let mut emits = Vec::new();
                for i in 1..=frames {
                    let t = (frame * i).as_secs_f64();
                    let at = u64::from(i) * FRAME as u64;
                    let voiced = from <= t && t < to;
                    state
                        .segmenter
                        .push_heard(voiced, at, t0 + frame * i, &mut emits);
                }
            }
            lock(&pool.channels).push(Arc::new(channel));
        }
        pool
    }

    /// What a claim took: the channels' roles, the model, and how much audio each read.
    fn claimed(pool: &Pool, inputs: &mut Vec<Input>) -> Option<(Vec<Role>, Tier, Vec<usize>)> {
        let batch = claim(pool, inputs)?;
        let channels = lock(&pool.channels).clone();
        let roles = batch
            .items
            .iter()
            .map(|(c, _)| match Arc::ptr_eq(c, &channels[0]) {
                true => Role::Customer,
                false => Role::Assistant,
            })
            .collect();
        let read = inputs[..batch.items.len()]
            .iter()
            .map(|i| i.audio.len())
            .collect();
        Some((roles, batch.tier, read))
    }

    /// The customer paused 0.1 s ago, the assistant 0.8 s ago: both channels want their
    /// pause decoded by base, the assistant's since earlier. The customer's pause is due
    /// first (0.2 s endpoint against the assistant's 1 s): a decoder claims its judge (the
    /// partials' model reading the words to their end) first, then its speculative decode
    /// beside it; the other then claims the assistant's; nothing more is wanted while they
    /// run.
    #[test]
    fn a_claim_takes_the_pause_due_first_with_its_audio() {
        let pool = call([(1.0, 2.9), (0.2, 2.2)], 3.0);
        let mut inputs = Vec::new();
        let (roles, tier, read) = claimed(&pool, &mut inputs).expect("a decode is wanted");
        assert_eq!((roles, tier), (vec![Role::Customer], Tier::Partials));
        assert!(
            read[0] >= 16_000 * 19 / 10,
            "the utterance's audio: {read:?}"
        );
        let (roles, tier, read) = claimed(&pool, &mut inputs).expect("the customer's pause");
        assert_eq!((roles, tier), (vec![Role::Customer], Tier::Finals));
        assert!(
            read[0] >= 16_000 * 19 / 10,
            "the utterance's audio: {read:?}"
        );
        let (roles, tier, _) = claimed(&pool, &mut inputs).expect("the assistant's");
        assert_eq!((roles, tier), (vec![Role::Assistant], Tier::Finals));
        assert!(claimed(&pool, &mut inputs).is_none());
    }

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

    /// The assistant spoke 2 s and paused 0.5 s ago. On machine F's figures base needs
    /// most of its 1 s endpoint for that final, so by the scheduler's lead the channel wants
    /// the pause's speculative decode now; by the lead a channel is configured with
    /// (Moonshine's figures, for callers without a scheduler) only 0.85 s into the pause.
    /// A channel wants by the room it is asked with, never by its configuration.
    #[test]
    fn a_channel_wants_by_the_rooms_live_lead_not_the_one_it_was_configured_with() {
        let pool = call([(0.0, 0.0), (0.0, 2.0)], 2.5);
        let room = lock(&pool.scheduler).knobs(Instant::now()).room();
        let channels = lock(&pool.channels).clone();
        let assistant = channels[1].lock();
        let live = assistant.want_in(&room).map(|w| w.kind);
        assert_eq!(live, Some(DecodeKind::Speculative));
        // `Settings::cuts` leaves a channel's configured lead at its default.
        let configured = Room {
            lead: Lead::default(),
            ..room
        };
        assert!(assistant.want_in(&configured).is_none());
    }

    #[test]
    fn an_idle_pool_takes_a_burst_only_as_large_as_its_decoders_clear_in_time() {
        let pool = Pool::new("test", 2, Shed::Speculative);
        pool.set_engine(CostModel::default(), 16);
        let mut held = Vec::new();
        while let Ok(booking) = pool.book(2, Speakers::Both, 1.0) {
            held.push(booking);
            assert!(held.len() <= 200, "the burst was never cut");
        }
        assert!(held.len() >= 6, "a burst of {} calls", held.len());
        let Err(refused) = pool.book(2, Speakers::Both, 1.0) else {
            panic!("the burst was never cut");
        };
        assert!(matches!(refused, Refusal::Wave { .. }), "{refused}");
        // A call that ended (or started and settled) gives its room back.
        held.pop();
        assert!(pool.book(2, Speakers::Both, 1.0).is_ok());
        // Without batches the same decoders take fewer.
        let alone = Pool::new("test", 2, Shed::Speculative);
        let mut single = Vec::new();
        while let Ok(booking) = alone.book(2, Speakers::Both, 1.0) {
            single.push(booking);
        }
        assert!(
            single.len() < held.len(),
            "{} vs {}",
            single.len(),
            held.len()
        );
        // Calls in a language only the finals' model speaks cannot shed it: fewer.
        let burst = |speakers| {
            let pool = Pool::new("test", 2, Shed::Speculative);
            pool.set_engine(whisper_like(), 16);
            pool.set_finals_model(true);
            let mut held = Vec::new();
            while let Ok(booking) = pool.book(2, speakers, 1.0) {
                held.push(booking);
            }
            // Readiness asks the same question of a call in that language.
            assert!(!pool.has_headroom(2, speakers, 1.0));
            held.pop();
            assert!(pool.has_headroom(2, speakers, 1.0));
            held.len() + 1
        };
        let english = burst(Speakers::Both);
        let spanish = burst(Speakers::Only(Tier::Finals));
        assert!(spanish < english, "{spanish} vs {english}");
        assert!(spanish >= 1);
    }
}
