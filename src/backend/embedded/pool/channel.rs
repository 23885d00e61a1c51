//! One channel of a call as the pool holds it: its ring, its segmenter, and what it has
//! to tell the session.

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tracing::{debug, warn};

use super::super::MODEL_RATE;
use super::super::schedule::{InFlight, Why};
use super::super::segmenter::{
    DecodeKind, Emit, Event, Hold, Lead, Recovery, Room, Segmenter, Want,
};
use super::{Job, MAX_STEP_SAMPLES, lock};
use crate::audio::AudioSource;
use crate::backend::EventSink;
use crate::metrics as m;
use crate::resample::StreamResampler;

/// One channel of a call.
pub(super) struct Channel {
    state: Mutex<ChannelState>,
    pub(super) opened: Instant,
    pub(super) session: u64,
    /// Its call's language is one only the finals' model speaks (admission prices it so).
    pub(super) bound: bool,
}

pub(super) struct ChannelState {
    /// The backend's name, for metrics.
    backend: &'static str,
    pub(super) audio: AudioSource,
    pub(super) events: Option<EventSink>,
    resampler: Option<StreamResampler>,
    pub(super) segmenter: Segmenter,
    /// The language the call asked for, passed to every decode (empty: the default).
    pub(super) language: String,
    /// What the decoders are working on for this channel.
    pub(super) decoding: InFlight,
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
    pub(super) emits: Vec<Emit>,
}

impl Channel {
    pub(super) fn open(job: Job, backend: &'static str) -> Result<Self, (EventSink, String)> {
        let Job {
            audio,
            events,
            sample_rate,
            cuts,
            keyterms,
            language,
            session,
        } = job;
        let bound = cuts.speakers.finals_model_only();
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
            bound,
            state: Mutex::new(ChannelState {
                backend,
                audio,
                events: Some(events),
                resampler,
                segmenter,
                language,
                decoding: InFlight::default(),
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

    pub(super) fn lock(&self) -> MutexGuard<'_, ChannelState> {
        lock(&self.state)
    }
}

impl ChannelState {
    /// Since when this channel's oldest final has waited for a decoder, if one does (a
    /// final running is not waiting). Whether a final is wanted, and since when, does not
    /// depend on the room, so any will do.
    pub(super) fn final_since(&self) -> Option<Instant> {
        self.want_in(&Room::all(Lead::default()))
            .filter(|w| w.kind == DecodeKind::Final)
            .map(|w| w.since)
    }

    /// The decode this channel wants, if it may start beside what runs
    /// ([`InFlight::beside`]) and the channel is not over, with what the decoders have
    /// `room` for now (the scheduler's knobs, [`super::super::schedule::Knobs::room`]: its
    /// lead is the cost model's as decodes correct it, not the one the channel started
    /// with).
    pub(super) fn want_in(&self, room: &Room) -> Option<Want> {
        self.events.as_ref()?;
        self.decoding.beside(|partials| {
            self.segmenter.want_in(&Room {
                partials: room.partials && partials,
                judges: room.judges && partials,
                ..*room
            })
        })
    }

    /// Takes all audio waiting in the ring through the segmenter. `None` once the channel
    /// is over: its session left, it failed, or its audio ended and every final went out;
    /// else whether it wants a decode with what the decoders have `room` for.
    pub(super) fn ingest(&mut self, room: &Room) -> Option<bool> {
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
        self.report();
        if self.finished && self.decoding.idle() && self.segmenter.is_idle() {
            if let Some(events) = self.events.take() {
                events.done();
            }
            return None;
        }
        Some(self.want_in(room).is_some() || self.segmenter.wants_turn())
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
    pub(super) fn report(&mut self) {
        self.audio.owe_from(self.segmenter.pending_since());
        let Some(events) = &self.events else {
            self.emits.clear();
            self.segmenter.take_events().for_each(drop);
            return;
        };
        let channel = events.channel().as_str();
        for event in self.segmenter.take_events() {
            count_turns(event, channel);
        }
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

    /// Its wanted speculative decode is left out (`why`): counted once per pause.
    pub(super) fn shed_speculative(&mut self, why: Why, room: &Room) {
        if self.want_in(room).is_some() && self.segmenter.speculative_shed() {
            metrics::counter!(m::SHED_DECODES, "what" => "speculative", "why" => why.as_str())
                .increment(1);
        }
    }

    /// The ladder sheds judges while its pause waits for one: counted once per
    /// pause ([`Segmenter::judge_shed`]).
    pub(super) fn shed_judge(&mut self) {
        if self.segmenter.judge_shed() {
            metrics::counter!(m::SHED_DECODES, "what" => "judge", "why" => Why::Late.as_str())
                .increment(1);
        }
    }

    /// Ends the channel with an error the session will see.
    pub(super) fn fail(&mut self, error: String) {
        if let Some(events) = self.events.take() {
            warn!(error = %error, "recognition failed");
            events.fail(error);
        }
    }
}

/// Counts what the endpointer decided about `channel`'s turns ([`Event`]), and logs each
/// hold and turn end at debug level, for tuning the thresholds against live calls.
fn count_turns(event: Event, channel: &'static str) {
    match event {
        Event::Held { by } => debug!(channel, by = by.as_str(), "a pause held past the endpoint"),
        Event::Resumed {
            held: Some(by),
            silence,
        } => {
            metrics::counter!(m::TURN_HOLDS, "channel" => channel, "outcome" => "joined", "by" => by.as_str())
                .increment(1);
            debug!(
                channel,
                ?silence,
                by = by.as_str(),
                "a held pause resumed: its words join one final"
            );
        }
        Event::Endpoint {
            silence,
            ends_turn,
            sooner,
            held,
            after_turn_end,
        } => {
            if let Some(by) = held {
                metrics::counter!(m::TURN_HOLDS, "channel" => channel, "outcome" => "ended", "by" => by.as_str())
                    .increment(1);
            }
            if ends_turn {
                let after = match (held, sooner) {
                    (Some(_), _) => "hold",
                    (None, true) => "sooner",
                    (None, false) => "endpoint",
                };
                metrics::counter!(m::TURN_ENDS, "channel" => channel, "after" => after)
                    .increment(1);
            }
            if let Some(gap) = after_turn_end {
                metrics::counter!(m::TURN_ENDS_RESUMED, "channel" => channel).increment(1);
                debug!(channel, ?gap, "the speaker went on after a turn's end");
            }
            let held = held.map(Hold::as_str);
            debug!(channel, ?silence, ends_turn, held, "endpoint");
        }
        Event::Opened | Event::Paused | Event::Resumed { .. } | Event::Dropped => {}
    }
}
