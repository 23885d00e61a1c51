//! One channel's recognition: which backend hears it, and what happens when one fails.
//!
//! The session hands each channel's samples to its supervisor and sends on what comes
//! back. Everything about backends lives here: the profile's ordered chain, the attempt
//! running now, reconnecting with backoff, failing over to the next backend, lag, and the
//! replay buffer of audio that no final covers yet, so that a new attempt hears again what
//! the failed one heard but never settled and no word is lost or sent twice.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tracing::{error, info, warn};

use crate::audio::{AudioSink, channel_pipe, samples_to_duration};
use crate::backend::{Backend, ChannelSpec, Event, EventKind, EventSink};
use crate::metrics as m;
use crate::protocol::Channel;

/// A backend of a profile's chain, with the name the config gives it.
#[derive(Clone)]
pub struct Link {
    pub name: Arc<str>,
    pub backend: Arc<dyn Backend>,
}

/// Longest stretch of unsettled audio kept for replay. A backend that settles nothing for
/// this long (the embedded recognizer never reports settlement) loses only what is older.
const REPLAY_LIMIT: Duration = Duration::from_secs(30);
/// An attempt that ran this long before failing was healthy: its failure is a routine
/// close (a provider's idle or maximum-duration limit, a load balancer's), and the
/// reconnect budget starts over, so a long call survives any number of them even on a
/// channel that produces no final for hours.
const HEALTHY_STRETCH: Duration = Duration::from_secs(10);
/// Reconnect delays after the first immediate retry, doubled per attempt up to the cap.
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_CAP: Duration = Duration::from_secs(2);

/// Why a channel cannot be recognised any more: the call fails with the pipeline error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted {
    /// Labels the failure metric: `backend-start`, `backend-error` or `lag`.
    pub reason: &'static str,
    pub message: String,
}

/// A transcript to send to the platform.
#[derive(Debug, Clone)]
pub struct Transcript {
    pub channel: Channel,
    pub text: String,
    pub is_final: bool,
    /// When the backend reported it.
    pub at: Instant,
    pub backend: Arc<str>,
}

/// The attempt now recognising the channel.
struct Attempt {
    sink: AudioSink,
    /// Channel position of the first sample the attempt was given.
    base: u64,
    generation: u32,
    /// The replay it started with: audio it must hear again before it is on time, so it
    /// may be that much later than `max_lag` without having fallen behind.
    allowance: Duration,
    started: Instant,
}

/// Audio from the last settled position on, in channel positions.
struct Replay {
    start: u64,
    samples: VecDeque<i16>,
    limit: usize,
}

impl Replay {
    fn extend(&mut self, samples: &[i16]) {
        self.samples.extend(samples);
        let over = self.samples.len().saturating_sub(self.limit);
        if over > 0 {
            self.samples.drain(..over);
            self.start += over as u64;
        }
    }

    fn settle(&mut self, position: u64) {
        let n = position
            .saturating_sub(self.start)
            .min(self.samples.len() as u64);
        self.samples.drain(..n as usize);
        self.start += n;
    }
}

pub struct Supervisor {
    spec: ChannelSpec,
    chain: Arc<[Link]>,
    events: mpsc::UnboundedSender<Event>,
    max_lag: Duration,
    /// Position in the chain of the backend in use.
    position: usize,
    attempt: Option<Attempt>,
    /// Generation of the newest attempt; events of older ones are ignored.
    generation: u32,
    /// Failed attempts of the current backend since it last produced a final.
    retries: u32,
    /// A reconnect is due then.
    retry_at: Option<Instant>,
    /// Kept only when a later attempt could be started (a retry or a fallback).
    replay: Option<Replay>,
    /// Samples pushed since the call started.
    pushed: u64,
    /// Pushed but not yet counted in `hark_audio_seconds_total` (whole seconds).
    uncounted: u64,
    /// Channel position up to which the last attempt took audio (lag while none runs).
    taken: u64,
    last_transcript: Option<Instant>,
    /// When the current outage began; cleared by the first transcript after it.
    outage: Option<Instant>,
    done: bool,
}

impl Supervisor {
    /// Starts recognising a channel with the first backend of `chain` that starts.
    pub fn start(
        spec: ChannelSpec,
        chain: Arc<[Link]>,
        events: mpsc::UnboundedSender<Event>,
        max_lag: Duration,
    ) -> Result<Self, Exhausted> {
        let replays = chain.len() > 1 || chain.iter().any(|l| l.backend.max_retries() > 0);
        let limit = (REPLAY_LIMIT.as_secs() * u64::from(spec.sample_rate)) as usize;
        let mut supervisor = Self {
            spec,
            chain,
            events,
            max_lag,
            position: 0,
            attempt: None,
            generation: 0,
            retries: 0,
            retry_at: None,
            replay: replays.then(|| Replay {
                start: 0,
                samples: VecDeque::new(),
                limit,
            }),
            pushed: 0,
            uncounted: 0,
            taken: 0,
            last_transcript: None,
            outage: None,
            done: false,
        };
        // A first backend that cannot start is a failover from the outset (`start_from`
        // logs and counts it).
        supervisor.start_from(0, "backend-start", Vec::new())?;
        Ok(supervisor)
    }

    pub fn channel(&self) -> Channel {
        self.spec.channel
    }

    /// Bytes of audio held for a replay: what this channel holds that grows with the call.
    pub fn held_bytes(&self) -> usize {
        self.replay
            .as_ref()
            .map_or(0, |r| r.samples.capacity() * size_of::<i16>())
    }

    /// The name of the backend in use.
    pub fn backend(&self) -> &str {
        &self.chain[self.position].name
    }

    /// Counts audio in whole seconds by the backend carrying the channel now; `last`: the
    /// rest, rounded, as the call ends.
    fn count_audio(&mut self, samples: u64, last: bool) {
        self.uncounted += samples;
        let rate = u64::from(self.spec.sample_rate.max(1));
        let secs = if last {
            (self.uncounted + rate / 2) / rate
        } else {
            self.uncounted / rate
        };
        if secs > 0 {
            metrics::counter!(m::AUDIO_SECONDS, "backend" => self.backend().to_string(), "channel" => self.spec.channel.as_str())
                .increment(secs);
            self.uncounted -= (secs * rate).min(self.uncounted);
        }
    }

    /// Takes the channel's new samples. Never blocks.
    pub fn push(&mut self, samples: &[i16]) -> Result<(), Exhausted> {
        if samples.is_empty() {
            return Ok(());
        }
        self.pushed += samples.len() as u64;
        self.count_audio(samples.len() as u64, false);
        if let Some(replay) = &mut self.replay {
            replay.extend(samples);
        }
        let overflow = self
            .attempt
            .as_mut()
            .is_some_and(|a| a.sink.push(samples).is_err());
        if overflow {
            return self.fall_behind();
        }
        Ok(())
    }

    /// Ends the audio: the backend flushes its last finals. A reconnect still pending
    /// starts now, so the audio it would replay still gets transcribed.
    pub fn finish(&mut self) -> Result<(), Exhausted> {
        if self.attempt.is_none() && self.retry_at.take().is_some() {
            self.start_from(self.position, "backend-error", Vec::new())?;
        }
        if let Some(a) = &self.attempt {
            a.sink.finish();
        }
        Ok(())
    }

    /// True once the backend has reported every final, or nothing more can come.
    pub fn is_done(&self) -> bool {
        self.done || (self.attempt.is_none() && self.retry_at.is_none())
    }

    /// When [`Supervisor::tick`] has work to do besides the periodic lag check.
    pub fn next_due(&self) -> Option<Instant> {
        self.retry_at
    }

    /// Handles what a backend reported; returns the transcript to send, if any.
    pub fn on_event(&mut self, event: Event) -> Result<Option<Transcript>, Exhausted> {
        let Some(attempt) = &self.attempt else {
            return Ok(None);
        };
        if event.generation != attempt.generation {
            return Ok(None);
        }
        let (text, is_final) = match event.kind {
            EventKind::Partial(text) => (text, false),
            EventKind::Final(text) => {
                self.retries = 0;
                (text, true)
            }
            EventKind::Settled(position) => {
                if let Some(replay) = &mut self.replay {
                    replay.settle(attempt.base + position);
                }
                return Ok(None);
            }
            EventKind::Done => {
                self.done = true;
                return Ok(None);
            }
            EventKind::Failed { message, retry } => return self.on_failure(message, retry),
        };
        let now = Instant::now();
        if let Some(since) = self.outage.take() {
            let gap = self.last_transcript.unwrap_or(since);
            let name = self.backend().to_string();
            metrics::histogram!(m::FAILOVER_GAP, "backend" => name)
                .record(now.duration_since(gap).as_secs_f64());
        }
        self.last_transcript = Some(now);
        Ok(Some(Transcript {
            channel: self.spec.channel,
            text,
            is_final,
            at: event.at,
            backend: self.chain[self.position].name.clone(),
        }))
    }

    /// Starts a due reconnect and checks lag; called every watch interval and when due.
    pub fn tick(&mut self, now: Instant) -> Result<(), Exhausted> {
        if self.retry_at.is_some_and(|at| at <= now) {
            self.retry_at = None;
            self.start_from(self.position, "backend-error", Vec::new())?;
        }
        let lag = self.lag();
        metrics::histogram!(m::RECOGNIZER_LAG, "backend" => self.backend().to_string(), "channel" => self.spec.channel.as_str())
            .record(lag.as_secs_f64());
        let allowance = self
            .attempt
            .as_ref()
            .map_or(Duration::ZERO, |a| a.allowance);
        if lag > self.max_lag + allowance {
            return self.fall_behind();
        }
        Ok(())
    }

    /// How far recognition is behind the audio received: samples not yet taken by the
    /// attempt (replay included), or, between attempts, everything since the last one.
    pub fn lag(&self) -> Duration {
        match &self.attempt {
            Some(a) => a.sink.lag(),
            None => samples_to_duration(self.pushed.saturating_sub(self.taken), self.rate()),
        }
    }

    fn rate(&self) -> u32 {
        self.spec.sample_rate
    }

    fn on_failure(
        &mut self,
        message: String,
        retry: bool,
    ) -> Result<Option<Transcript>, Exhausted> {
        let link = self.chain[self.position].clone();
        error!(channel = self.spec.channel.as_str(), backend = %link.name, %message, retry, "recognizer failed");
        if self
            .attempt
            .as_ref()
            .is_some_and(|a| a.started.elapsed() >= HEALTHY_STRETCH)
        {
            self.retries = 0;
        }
        self.end_attempt();
        if retry && self.retries < link.backend.max_retries() {
            self.retries += 1;
            metrics::counter!(m::RECONNECTS, "backend" => link.name.to_string()).increment(1);
            let delay = backoff(self.retries);
            info!(channel = self.spec.channel.as_str(), backend = %link.name, attempt = self.retries, delay_ms = delay.as_millis() as u64, "reconnecting");
            if delay.is_zero() {
                self.start_from(
                    self.position,
                    "backend-error",
                    vec![format!("{}: {message}", link.name)],
                )?;
            } else {
                self.retry_at = Some(Instant::now() + delay);
            }
            return Ok(None);
        }
        self.fail_over(format!("{}: {message}", link.name), "backend-error")?;
        Ok(None)
    }

    /// Recognition is too far behind real time: the next backend takes over with the
    /// replay, or the call fails.
    fn fall_behind(&mut self) -> Result<(), Exhausted> {
        let allowance = self
            .attempt
            .as_ref()
            .map_or(Duration::ZERO, |a| a.allowance);
        let message = format!(
            "{}: {:.1} s behind real time (limit {:.1} s)",
            self.backend(),
            self.lag().as_secs_f64(),
            (self.max_lag + allowance).as_secs_f64()
        );
        warn!(channel = self.spec.channel.as_str(), %message, "recognizer fell behind");
        self.end_attempt();
        self.fail_over(message, "lag")
    }

    fn end_attempt(&mut self) {
        if let Some(a) = self.attempt.take() {
            self.taken = a.base + a.sink.taken();
            // Dropping the sink ends the attempt's audio; a live backend stops there.
        }
        self.retry_at = None;
        self.outage.get_or_insert_with(Instant::now);
    }

    fn fail_over(&mut self, message: String, reason: &'static str) -> Result<(), Exhausted> {
        self.retries = 0;
        self.start_from(self.position + 1, reason, vec![message])
    }

    /// Starts the first backend of the chain from `from` on that starts, handing it the
    /// replay; `errors` says what failed before, for the message if none starts.
    ///
    /// Every move off the backend that carried the channel is logged and counted here,
    /// whichever way it came: a failover, a first backend that would not start, or a
    /// reconnect that found its backend not ready (cooling) or unable to start and went on
    /// down the chain.
    fn start_from(
        &mut self,
        from: usize,
        reason: &'static str,
        mut errors: Vec<String>,
    ) -> Result<(), Exhausted> {
        let carried = self.position;
        for position in from..self.chain.len() {
            let link = self.chain[position].clone();
            if !link.backend.is_ready() {
                errors.push(format!("{}: not ready", link.name));
                continue;
            }
            match self.start_attempt(&link) {
                Ok(attempt) => {
                    if position != self.position || self.generation == 1 {
                        metrics::counter!(m::BACKEND_CHANNELS, "backend" => link.name.to_string())
                            .increment(1);
                    }
                    self.position = position;
                    self.attempt = Some(attempt);
                    if position != carried {
                        self.count_failover(carried, &errors);
                    }
                    return Ok(());
                }
                Err(e) => errors.push(format!("{}: {e}", link.name)),
            }
        }
        self.done = true;
        let what = if self.generation <= 1 && reason == "backend-start" {
            "could not start"
        } else {
            "failed"
        };
        Err(Exhausted {
            reason,
            message: format!(
                "recognizer for the {} channel {what} ({}); no fallback backend could take over",
                self.spec.channel.as_str(),
                errors.join("; ")
            ),
        })
    }

    /// The channel moved from the chain's backend at `from` to the one now in use; `why`:
    /// what failed on the way (backends' own words are already quoted where they arise).
    fn count_failover(&self, from: usize, why: &[String]) {
        let (from, to) = (
            self.chain[from].name.to_string(),
            self.backend().to_string(),
        );
        let why = why.join("; ");
        warn!(channel = self.spec.channel.as_str(), %from, %to, %why, "failing over");
        metrics::counter!(m::FALLBACKS, "backend" => to.clone()).increment(1);
        metrics::counter!(m::FAILOVERS, "from" => from, "to" => to).increment(1);
    }

    /// The error is the `why` of the failover line, for the operator; nothing branches on it.
    fn start_attempt(&mut self, link: &Link) -> Result<Attempt, String> {
        let backlog = self.replay.as_ref().map_or(0, |r| r.samples.len());
        let room = u64::from(self.rate())
            * (self.max_lag + Duration::from_secs(1)).as_millis() as u64
            / 1000;
        let (mut sink, source) = channel_pipe(self.rate(), backlog + room as usize);
        let base = match &self.replay {
            Some(replay) => {
                let (a, b) = replay.samples.as_slices();
                for part in [a, b] {
                    // The ring was sized for the whole replay.
                    let _ = sink.push(part);
                }
                replay.start
            }
            None => self.pushed,
        };
        self.generation += 1;
        let events = EventSink::new(self.events.clone(), self.spec.channel, self.generation);
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            link.backend.start(self.spec.clone(), source, events)
        }));
        match started {
            Ok(Ok(())) => {
                if self.generation > 1 {
                    metrics::histogram!(m::REPLAY_SECONDS, "backend" => link.name.to_string())
                        .record(backlog as f64 / f64::from(self.rate().max(1)));
                }
                Ok(Attempt {
                    sink,
                    base,
                    generation: self.generation,
                    allowance: samples_to_duration(backlog as u64, self.rate()),
                    started: Instant::now(),
                })
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("panicked while starting".into()),
        }
    }
}

/// The first reconnect is immediate; later ones wait longer, up to a cap.
fn backoff(retry: u32) -> Duration {
    match retry {
        0 | 1 => Duration::ZERO,
        n => (BACKOFF_FIRST * 2u32.saturating_pow(n - 2)).min(BACKOFF_CAP),
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.count_audio(0, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_keeps_what_is_not_settled_within_its_limit() {
        let mut r = Replay {
            start: 0,
            samples: VecDeque::new(),
            limit: 10,
        };
        r.extend(&[1, 2, 3, 4, 5, 6]);
        r.settle(4);
        assert_eq!(
            (r.start, r.samples.iter().copied().collect::<Vec<_>>()),
            (4, vec![5, 6])
        );
        // Settling backwards or past the end changes nothing wrong.
        r.settle(2);
        assert_eq!(r.start, 4);
        r.extend(&[7, 8, 9, 10, 11, 12, 13, 14, 15]);
        assert_eq!((r.start, r.samples.len()), (5, 10));
        assert_eq!(r.samples.front(), Some(&6));
        r.settle(100);
        assert_eq!((r.start, r.samples.len()), (15, 0));
    }

    #[test]
    fn backoff_starts_at_once_then_doubles_to_a_cap() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), BACKOFF_FIRST);
        assert_eq!(backoff(3), BACKOFF_FIRST * 2);
        assert_eq!(backoff(30), BACKOFF_CAP);
    }
}
