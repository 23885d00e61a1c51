//! What the embedded path decodes next, and whether it can take another call.
//!
//! [`Scheduler`] owns every input to those decisions that is not a channel's own: the
//! decoders and the engine's batch, the cost model, the shedding [`Ladder`] and the
//! measured load. It is pure: time is the `now` its caller passes, it takes no lock and
//! writes no metric, so the same inputs give the same decisions on any machine. The pool's
//! threads are its shell: they read the clock, lock the channels, run the decodes and
//! count what the plans say.
//!
//! A claim asks twice. [`Scheduler::knobs`] first: what the load and the ladder shed now
//! and the speculative decodes' lead, which change what a channel wants (the lead moves a
//! pause's decode, the beam a final's ticket): each channel is asked with them
//! ([`Knobs::room`]), and keeps nothing of them. Then, with every channel's wanted decode,
//! [`Scheduler::plan`]: the ladder moves for the wave those wants make, and the plan names
//! the batch to decode. The knobs are the step before that climb: a claim on a rising wave
//! decodes one batch on the previous step's beam and context, the climb's step rules from
//! the next claim on (the model is chosen on the new step at once).

mod admission;
mod ladder;
mod queue;
pub(super) mod want;

use std::time::{Duration, Instant};

pub(crate) use self::admission::{Booked, Hold, held_bookings};
use self::admission::{Demand, promise};
use self::ladder::{Ladder, LoadSheds};
pub(crate) use self::ladder::{Shedding, Why};
use super::cost::{CostModel, TYPICAL_UTTERANCE};
use super::decode::{DecodeKind, Due, Lead, Room, Want};
use super::{Shed, Speakers, Tier};
use crate::backend::Refusal;

/// Over how long the recognizer's essential load is averaged (see [`Scheduler::share`]).
pub(crate) const LOAD_WINDOW: Duration = Duration::from_secs(10);
/// A final waiting this long for a decoder means the recognizer is behind now.
pub(crate) const FINAL_BACKLOG: Duration = Duration::from_millis(400);

/// The embedded path's decisions: which decodes run, with which model, beam and context,
/// what is shed, and whether another call fits.
#[derive(Debug)]
pub(crate) struct Scheduler {
    decoders: usize,
    /// The most utterances a decoder takes as one batch (the engine's).
    max_batch: usize,
    /// What decodes cost, per model: calibrated at load, kept current by every decode.
    cost: CostModel,
    ladder: Ladder,
    load: Load,
    /// The recent finals' and speculative decodes' own length (seconds, padding
    /// included), a running mean over about the last `UTTERANCES_MEANT` of them: what a
    /// new call's first final is priced at. `None` before any.
    utterance: Option<f64>,
}

/// How many of the latest utterances the running mean of their length mostly reflects.
const UTTERANCES_MEANT: f64 = 16.0;

/// Decode seconds spent on finals and speculative decodes, and the age weights of the
/// channels that brought some of them and have left, both decaying over `LOAD_WINDOW`,
/// as they stood at `at`.
#[derive(Debug, Clone, Copy)]
struct Load {
    spent: f64,
    gone: f64,
    at: Instant,
}

impl Load {
    /// Both figures decayed to `now` (a `now` before `at`, from a thread that read the
    /// clock before another updated the load, reads them as they are).
    fn at(&self, now: Instant) -> (f64, f64) {
        let age = now.saturating_duration_since(self.at).as_secs_f64();
        let decay = (-age / LOAD_WINDOW.as_secs_f64()).exp();
        (self.spent * decay, self.gone * decay)
    }

    fn add(&mut self, spent: f64, gone: f64, now: Instant) {
        let (s, g) = self.at(now);
        *self = Self {
            spent: s + spent,
            gone: g + gone,
            at: self.at.max(now),
        };
    }
}

/// What a claim applies to every channel before asking what it wants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Knobs {
    pub shed: Shedding,
    /// The finals' price as decodes now show it, for the speculative decodes' lead.
    pub lead: Lead,
    /// The essential load now, as a share of the decoders' time (the gauge's value).
    pub share: f64,
}

/// What a claim does with a wanted decode other than rank it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeftOut {
    /// A speculative decode shed (the load, or the ladder at its last step): its pause
    /// is told, so it is not held for words that will not come.
    Speculative(Why),
    /// A partial, while the ladder sheds them.
    Partial,
    /// A pause's judge, while the ladder sheds them ([`Shed::sheds_judges`]): its pause is
    /// told, so its own decode judges it.
    Judge,
}

impl Knobs {
    /// What a channel is asked with, by a claim and by the listener (the rule,
    /// [`want::want`], decides from it): the context share, the beam and the lead these
    /// knobs give.
    pub fn room(&self) -> Room {
        Room {
            context: self.shed.context.0,
            beam: self.shed.beam.is_none(),
            lead: self.lead,
            partials: !self.shed.partials,
            judges: !self.shed.judges,
        }
    }

    /// Whether a wanted decode of `kind` is left out of this claim, and how.
    pub fn left_out(&self, kind: DecodeKind) -> Option<LeftOut> {
        match kind {
            DecodeKind::Speculative => self.shed.speculative.map(LeftOut::Speculative),
            DecodeKind::FirstPartial | DecodeKind::Partial if self.shed.partials => {
                Some(LeftOut::Partial)
            }
            DecodeKind::Judge if self.shed.judges => Some(LeftOut::Judge),
            _ => None,
        }
    }
}

/// What the decoders are working on for one channel. A channel has at most one partial and
/// one final (or speculative decode) running at once: a pause's decode never waits for a
/// partial still running (on an idle decoder it starts at once, rather than after a
/// partial of the whole utterance: BENCHMARKS.md, "A final's model by its deadline"), and
/// nothing else starts while a final runs. Tickets keep the two apart: a partial that
/// comes back after its utterance's final is dropped by the segmenter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct InFlight {
    partial: bool,
    essential: bool,
}

impl InFlight {
    /// Nothing running.
    pub fn idle(&self) -> bool {
        !self.partial && !self.essential
    }

    /// What the channel wants (`ask`, told whether a partial may start), if it may start
    /// beside what runs: nothing while a final runs (the channel is not asked), no second
    /// partial.
    pub fn beside(&self, ask: impl FnOnce(bool) -> Option<Want>) -> Option<Want> {
        match self.essential {
            true => None,
            false => ask(!self.partial).filter(|w| w.kind.is_essential() || !self.partial),
        }
    }

    pub fn start(&mut self, kind: DecodeKind) {
        match kind.is_essential() {
            true => self.essential = true,
            false => self.partial = true,
        }
    }

    pub fn end(&mut self, kind: DecodeKind) {
        match kind.is_essential() {
            true => self.essential = false,
            false => self.partial = false,
        }
    }
}

/// One channel's wanted decode, as the shell read it: `key` is the shell's name for the
/// channel (its index in the list it read).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted {
    pub key: usize,
    pub kind: DecodeKind,
    pub since: Instant,
    /// The model it is for while the ladder sheds none ([`super::decode::Want::tier`]).
    pub tier: Tier,
    /// The ladder may give it the partials' model: both models speak the channel's
    /// language ([`Speakers::Both`]).
    pub sheds_model: bool,
    /// When a final or speculative decode is needed.
    pub due: Option<Due>,
}

impl Wanted {
    /// Where it comes in the queue, most urgent first: finals, speculative decodes and
    /// the judges of pauses (due by their endpoint) by when they are due (a
    /// customer's before an assistant's whose voice ended earlier: the platform waits on
    /// the customer's), then first partials, then partials, oldest first; the channel's
    /// key breaks ties.
    fn rank(&self) -> (u8, Instant, Instant, usize) {
        let class = match self.kind {
            DecodeKind::Final | DecodeKind::Speculative | DecodeKind::Judge => 0,
            DecodeKind::FirstPartial => 1,
            DecodeKind::Partial => 2,
        };
        let by = self.due.map_or(self.since, |due| due.at);
        (class, by, self.since, self.key)
    }

    /// Channel `key`'s `want`.
    pub fn of(key: usize, want: &Want) -> Self {
        Self {
            key,
            kind: want.kind,
            since: want.since,
            tier: want.tier(),
            sheds_model: want.speakers == Speakers::Both,
            due: want.due,
        }
    }

    /// Whether what the channel wants when its batch is taken (`now`: its audio may have
    /// moved on since the plan, which the claim made without holding every channel's lock)
    /// still belongs in the batch planned for this want: as essential, for the same model.
    /// A partial that became a pause's speculative decode is not decoded by the partials'
    /// model in a batch of partials; the next claim plans it as what it is.
    pub fn still(&self, now: &Want) -> bool {
        now.kind.is_essential() == self.kind.is_essential() && now.tier() == self.tier
    }
}

/// What one claim decodes, and the ladder it leaves.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub batch: Option<Batch>,
    /// The step the ladder stands on after this claim's wave.
    pub step: Shed,
    /// How late the wave's last final will be when it starts: what moved the ladder.
    pub projected: Duration,
    /// Whole seconds spent on each step (by `Shed as usize`) since the last plan counted
    /// them: the metrics' share.
    pub step_seconds: [u64; 6],
    /// The ladder climbed to a step that sheds the judges these knobs kept and some
    /// channels want: no batch; the shell sheds them and plans again.
    pub replan: bool,
}

/// A batch to decode: one model, finals and speculative decodes or partials, never both.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batch {
    /// The channels, most urgent first.
    pub keys: Vec<usize>,
    pub tier: Tier,
    /// Whether finals may be searched with the engine's beam (neither the ladder nor the
    /// load sheds it; each final's ticket says whether its endpoint leaves the time).
    pub beam: bool,
    /// The share of the context span each decode may read, and why it is less than all.
    pub context: (f64, Option<Why>),
}

impl Batch {
    /// Why `want`, decoded in this batch on the ladder's `step`, goes to the partials' model
    /// rather than the finals' (for the metrics): too long for its budget (`Long`, the
    /// rule's pick, `want::pick_context`), or late for its due (`Due`, the plan's). `None`
    /// for a decode the partials' model was always for, and from the step that sheds the
    /// finals' model on (the ladder's reason, counted as such).
    pub fn partials_for(&self, want: &Want, step: Shed) -> Option<Why> {
        if self.tier != Tier::Partials || step >= Shed::FinalsModel {
            return None;
        }
        match want.ticket.quick {
            true => Some(Why::Long),
            false => (want.tier() == Tier::Finals).then_some(Why::Due),
        }
    }
}

impl Scheduler {
    /// A scheduler for `decoders` decoders whose ladder sheds at most up to `last`.
    pub fn new(decoders: usize, last: Shed, now: Instant) -> Self {
        Self {
            decoders,
            max_batch: 1,
            cost: CostModel::default(),
            ladder: Ladder::new(last, now),
            load: Load {
                spent: 0.0,
                gone: 0.0,
                at: now,
            },
            utterance: None,
        }
    }

    /// The engine's cost model and batch: set once it has loaded and been calibrated.
    pub fn set_engine(&mut self, cost: CostModel, max_batch: usize) {
        self.cost = cost;
        self.max_batch = max_batch.max(1);
    }

    /// Whether the engine has a finals' model the ladder may shed.
    pub fn set_finals_model(&mut self, has: bool) {
        self.ladder.finals_model = has;
    }

    /// Whether the engine has a beam search for finals the ladder may shed.
    pub fn set_beam(&mut self, has: bool) {
        self.ladder.beam = has;
    }

    /// What decodes cost now, as admission and the ladder price them.
    pub fn cost(&self) -> &CostModel {
        &self.cost
    }

    /// What a final's decode costs now, for the speculative decodes' lead, and by the
    /// partials' model where a final may fall back to it (the ladder may shed the finals').
    pub fn lead(&self) -> Lead {
        Lead::of(&self.cost, self.ladder.takes(Shed::FinalsModel))
    }

    /// The essential load at `now`: the share of the decoders' time finals and speculative
    /// decodes (and the end-of-turn model) took over the last `LOAD_WINDOW` or so (1.0:
    /// all of it). Partials do not count: they only fill the time that is left.
    pub fn share(&self, now: Instant) -> f64 {
        self.load.at(now).0 / (LOAD_WINDOW.as_secs_f64() * self.decoders.max(1) as f64)
    }

    /// What this claim sheds before ranking (see the module's doc for why before).
    /// `shed = "nothing"` keeps the beam whatever the load, as it keeps partials.
    pub fn knobs(&self, now: Instant) -> Knobs {
        let share = self.share(now);
        let mut load = LoadSheds::at(share);
        load.beam &= self.ladder.takes(Shed::Beam);
        Knobs {
            shed: Shedding::decide(self.ladder.step, load),
            lead: self.lead(),
            share,
        }
    }

    /// The decode to run next of those `wanted`, with `idle` decoders idle (this one
    /// included): the most urgent ([`Wanted::rank`]: finals and speculative decodes by when
    /// they are due, then first partials, then partials) — and with it the next most
    /// urgent of its class that the same model decodes, up to the engine's batch and this
    /// decoder's share of them (the idle decoders split the queue, so all work on a
    /// wave). Moves the ladder.
    ///
    /// The ladder climbs on how late the wave's last final (the finals, and the
    /// speculative decodes that will be finals at their endpoint, shed ones included) will
    /// be when it starts, priced by the cost model at the wave's own mean length, so a
    /// wave sheds at once rather than once its first finals are late (BENCHMARKS.md, "The
    /// shapes simulated": priced at a typical 3 s instead, a wave of long sentences came
    /// late by decoding): with the finals' model if that is on time, else
    /// with the partials' (the step that sheds the finals' model, and beyond it only if
    /// even those are late). A pause waiting for its judge is one more of the wave (its
    /// speculative decode comes next), so a wave that would make its finals late sheds its
    /// judges at once ([`Shed::sheds_judges`]) and a pause or two keep theirs. The judges'
    /// own decodes (the partials' model, beside their pauses' decodes) are not priced:
    /// priced before the wave, they climbed the ladder no more usefully (BENCHMARKS.md, "A
    /// judge kept under load").
    ///
    /// Where the climb sheds judges the knobs kept, the plan decodes nothing and says so
    /// (`replan`): the shell sheds them and asks again, on the new step.
    pub fn plan(&mut self, knobs: &Knobs, wanted: &[Wanted], idle: usize, now: Instant) -> Plan {
        let in_wave = |w: &&Wanted| w.kind.is_essential() || w.kind == DecodeKind::Judge;
        let mut finals = 0;
        let mut wave = 0;
        let mut late = Duration::ZERO;
        for w in wanted {
            wave += usize::from(in_wave(&w));
            if w.kind == DecodeKind::Final {
                finals += 1;
                late = late.max(now.saturating_duration_since(w.since));
            }
        }
        let seconds = mean_seconds(wanted.iter().filter(in_wave));
        let (cost, decoders, max_batch) = (self.cost, self.decoders, self.max_batch);
        let queued = |tier| {
            let queue = queue::Queue {
                tier,
                queued: wave,
                decoders,
                seconds,
                max_batch,
            };
            late + Duration::from_secs_f64(queue.wait(&cost))
        };
        let finals_on_time = queued(Tier::Finals);
        let threshold = Shed::FinalsModel.late_at();
        let projected = match finals_on_time < threshold || !self.ladder.takes(Shed::FinalsModel) {
            true => finals_on_time,
            false => queued(Tier::Partials).max(threshold),
        };
        let step = self.ladder.update(projected, now);
        let step_seconds = self.ladder.take_whole_seconds();
        let replan = step.sheds_judges()
            && !knobs.shed.judges
            && wanted.iter().any(|w| w.kind == DecodeKind::Judge);
        let batch = match replan {
            true => None,
            false => self.batch(knobs, wanted, finals, step, idle, now),
        };
        if let Some(b) = &batch {
            let handed = wanted.iter().filter(|w| b.keys.contains(&w.key));
            for due in handed
                .filter(|w| w.kind.is_essential())
                .filter_map(|w| w.due)
            {
                self.heard_utterance(due.alone);
            }
        }
        Plan {
            batch,
            step,
            projected,
            step_seconds,
            replan,
        }
    }

    /// The model a wanted decode takes at `now` while the ladder keeps the finals' model:
    /// the partials' where, started now, the finals' would have it ready after it is due
    /// and the partials' in time (where neither would, the better words). Its segmenter
    /// chose for a decode started at once; this counts the wait for a decoder
    /// (BENCHMARKS.md, "A final's model by its deadline").
    fn tier_by_due(&self, w: &Wanted, now: Instant) -> Tier {
        match w.due {
            Some(due) if due.quickens && w.tier == Tier::Finals => {
                let ready = |tier| {
                    now + Duration::from_secs_f64(self.cost.final_alone(tier, due.seconds, false))
                };
                match ready(Tier::Finals) > due.at && ready(Tier::Partials) <= due.at {
                    true => Tier::Partials,
                    false => Tier::Finals,
                }
            }
            _ => w.tier,
        }
    }

    /// [`Scheduler::plan`]'s batch, on the ladder's new `step`.
    fn batch(
        &self,
        knobs: &Knobs,
        wanted: &[Wanted],
        finals: usize,
        step: Shed,
        idle: usize,
        now: Instant,
    ) -> Option<Batch> {
        let tier_of = |w: &Wanted| match step >= Shed::FinalsModel && w.sheds_model {
            true => Tier::Partials,
            false => self.tier_by_due(w, now),
        };
        let mut ranked: Vec<&Wanted> = wanted
            .iter()
            .filter(|w| knobs.left_out(w.kind).is_none())
            .collect();
        ranked.sort_by_key(|w| w.rank());
        let first = ranked.first()?;
        let (tier, essential) = (tier_of(first), first.kind.is_essential());
        let alike: Vec<&Wanted> = ranked
            .into_iter()
            .filter(|w| tier_of(w) == tier && w.kind.is_essential() == essential)
            .collect();
        let seconds = mean_seconds(alike.iter().copied());
        let queue = queue::Queue {
            tier,
            queued: alike.len(),
            decoders: idle.max(1),
            seconds,
            max_batch: self.max_batch,
        };
        let take = queue.batch_size(&self.cost);
        Some(Batch {
            keys: alike.iter().take(take).map(|w| w.key).collect(),
            tier,
            beam: tier == Tier::Finals && knobs.shed.beam.is_none(),
            context: knobs.shed.context_for(finals),
        })
    }

    /// A final or speculative decode of an utterance `alone` seconds long (padding
    /// included) goes to a decoder: the running mean admission prices a wave by moves
    /// towards it.
    fn heard_utterance(&mut self, alone: f64) {
        let alone = alone.clamp(0.5, 30.0);
        self.utterance = Some(match self.utterance {
            None => alone,
            Some(mean) => mean + (alone - mean) / UTTERANCES_MEANT,
        });
    }

    /// A batch of `tier` decoded `lengths` (seconds of audio) in `spent`, `beamed` of them
    /// with the beam: the cost model learns from it and, if it held finals or speculative
    /// decodes (`essential`), it counts into the load. Returns the share now.
    pub fn decoded(
        &mut self,
        tier: Tier,
        lengths: &[f64],
        spent: Duration,
        beamed: usize,
        essential: bool,
        now: Instant,
    ) -> f64 {
        self.cost.observe(tier, lengths, spent, beamed);
        if essential {
            // Context included: it is shed as the load grows, but until then it is work
            // the decoders really do, and admission must not count on time they do not
            // have. The beam's share is left out: the load and the ladder shed it before
            // anything else.
            let greedy = self.cost.greedy_share(tier, lengths, beamed);
            self.load.add(spent.as_secs_f64() * greedy, 0.0, now);
        }
        self.share(now)
    }

    /// The end-of-turn model took `spent`: it runs on the decoders' cores for the finals
    /// it holds, essential work. Returns the share now.
    pub fn judged(&mut self, spent: Duration, now: Instant) -> f64 {
        self.load.add(spent.as_secs_f64(), 0.0, now);
        self.share(now)
    }

    /// A channel opened at `opened` left: its share of the load stays a while, as much
    /// as it had put in (its age weight).
    pub fn departed(&mut self, opened: Instant, now: Instant) {
        self.load.add(0.0, weight(opened, now), now);
    }

    /// Whether a call of `channels` more channels, in a language `speakers` transcribe, can
    /// be taken beside those `present` without putting them at risk, or why not (see
    /// [`Demand::admits`]).
    pub fn admits(
        &self,
        present: &Present,
        channels: usize,
        speakers: Speakers,
        limit: f64,
        now: Instant,
    ) -> Result<(), Refusal> {
        let last = self.ladder.last_step();
        let demand = Demand {
            decoders: self.decoders.max(1),
            channels: present.channels,
            load: self.share(now),
            weight: present.weight,
            gone: self.load.at(now).1,
            promised: present.promised,
            bound: present.bound + f64::from(u8::from(speakers.finals_model_only())),
            cost: self.cost,
            max_batch: self.max_batch,
            last,
            finals_model: self.ladder.finals_model,
            behind: present.behind,
            exhausted: last > Shed::Nothing && self.ladder.step >= last,
            utterance: self.utterance,
        };
        demand.admits(channels, limit)
    }
}

/// The calls present, as admission counts them.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Present {
    /// Channels live, starting or booked.
    pub channels: usize,
    /// The age weights of the live channels (how much of their demand is in the load).
    pub weight: f64,
    /// Finals of newly admitted calls still to come (see [`promise`]), in calls.
    pub promised: f64,
    /// Of those, the finals of calls only the finals' model speaks.
    pub bound: f64,
    /// A final has waited over `FINAL_BACKLOG`.
    pub behind: bool,
}

/// One live channel, as the shell read it for admission.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Live {
    /// The call it belongs to.
    pub session: u64,
    pub opened: Instant,
    /// Since when its oldest final has waited for a decoder, if one does.
    pub final_since: Option<Instant>,
    /// Its call's language is one only the finals' model speaks.
    pub bound: bool,
}

impl Present {
    /// The calls of the `live` channels, the channels handed over but not live yet
    /// (`starting`, one (session id, bound) per channel) and those `booked` at `now`. A
    /// call's promise is its youngest channel's; a call starting or booked promises a
    /// whole final.
    pub fn count(live: &[Live], starting: &[(u64, bool)], booked: Booked, now: Instant) -> Self {
        let mut present = Self {
            channels: live.len() + starting.len() + booked.channels,
            ..Self::default()
        };
        // (session, promise, bound) per call.
        let mut calls: Vec<(u64, f64, bool)> = Vec::with_capacity(live.len());
        for c in live {
            present.behind |= c
                .final_since
                .is_some_and(|since| now.saturating_duration_since(since) > FINAL_BACKLOG);
            present.weight += weight(c.opened, now);
            let promise = promise(now.saturating_duration_since(c.opened));
            match calls.iter_mut().find(|(s, _, _)| *s == c.session) {
                Some((_, p, _)) => *p = p.max(promise),
                None => calls.push((c.session, promise, c.bound)),
            }
        }
        let mut waiting = starting.to_vec();
        waiting.sort_unstable();
        waiting.dedup();
        waiting.retain(|(s, _)| calls.iter().all(|(live, _, _)| live != s));
        present.promised =
            calls.iter().map(|c| c.1).sum::<f64>() + (waiting.len() + booked.calls) as f64;
        present.bound = calls.iter().filter(|c| c.2).map(|c| c.1).sum::<f64>()
            + (waiting.iter().filter(|w| w.1).count() + booked.bound) as f64;
        present
    }
}

/// How much of its demand a channel opened at `opened` has put into the decaying load by
/// `now`.
fn weight(opened: Instant, now: Instant) -> f64 {
    let age = now.saturating_duration_since(opened).as_secs_f64();
    1.0 - (-age / LOAD_WINDOW.as_secs_f64()).exp()
}

/// The mean length (seconds of audio read) of the `wanted` decodes that say theirs; a
/// typical utterance's where none does. Prices a wave by what it is: a wave of long
/// utterances (every caller finishing a long sentence at once) costs more than three
/// seconds each.
fn mean_seconds<'a>(wanted: impl Iterator<Item = &'a Wanted>) -> f64 {
    let (sum, n) = wanted
        .filter_map(|w| w.due.map(|d| d.seconds))
        .fold((0.0, 0usize), |(sum, n), s| (sum + s, n + 1));
    match n {
        0 => TYPICAL_UTTERANCE,
        n => sum / n as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::super::decode::Ticket;
    use super::admission::tests::cost;
    use super::*;

    /// Whisper's pool: 2 decoders, batches of 8, a finals' model and a beam to shed.
    fn whisper(last: Shed, t0: Instant) -> Scheduler {
        let mut s = Scheduler::new(2, last, t0);
        s.set_engine(cost(), 8);
        s.set_finals_model(true);
        s.set_beam(true);
        s
    }

    fn want(key: usize, kind: DecodeKind, since: Instant) -> Wanted {
        Wanted {
            key,
            kind,
            since,
            tier: Tier::of(kind),
            sheds_model: true,
            due: None,
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A final or speculative decode of `seconds` due at `at`.
    fn due(w: Wanted, at: Instant, seconds: f64, quickens: bool) -> Wanted {
        Wanted {
            due: Some(Due {
                at,
                seconds,
                alone: seconds,
                quickens,
            }),
            ..w
        }
    }

    /// A channel's want of `kind` (for the partials' model where `quick`), since `since`.
    fn wanting(kind: DecodeKind, quick: bool, since: Instant) -> Want {
        Want {
            kind,
            since,
            due: None,
            speakers: Speakers::Both,
            ticket: Ticket {
                utterance: 1,
                len: 16_000,
                context_from: 0,
                whole: kind.is_essential(),
                retry: false,
                beam: false,
                quick,
            },
        }
    }

    /// A claim takes each planned channel's want again under its lock; the audio may have
    /// moved on since the plan. What still fits the batch (as essential, for the same
    /// model) is decoded; what became another class of decode waits for the next plan.
    #[test]
    fn a_want_that_moved_on_since_the_plan_waits_for_the_next() {
        let t0 = Instant::now();
        let now = |kind, quick| wanting(kind, quick, t0);
        let partial = want(0, DecodeKind::Partial, t0);
        assert!(partial.still(&now(DecodeKind::Partial, false)));
        // The partial's pause began: its judge is a partial of the same model.
        assert!(partial.still(&now(DecodeKind::Judge, false)));
        // Its speculative decode is wanted instead: not in a batch of partials.
        assert!(!partial.still(&now(DecodeKind::Speculative, false)));
        let speculative = want(0, DecodeKind::Speculative, t0);
        // The endpoint passed: the final is decoded where the speculative decode would be.
        assert!(speculative.still(&now(DecodeKind::Final, false)));
        // The voice came back: a partial is not decoded by the finals' model.
        assert!(!speculative.still(&now(DecodeKind::Partial, false)));
        // The final now needs the partials' model (too long for the finals' in time).
        assert!(!speculative.still(&now(DecodeKind::Final, true)));
    }

    /// A final decoded by the partials' model says why, for the metrics: its length (the
    /// rule's pick) or its due (the plan's); a partial, or any decode once the ladder sheds
    /// the finals' model, gives no reason of its own.
    #[test]
    fn a_batch_says_why_a_final_went_to_the_partials_model() {
        let want = |kind, quick| wanting(kind, quick, Instant::now());
        let batch = |tier| Batch {
            keys: vec![0],
            tier,
            beam: false,
            context: (1.0, None),
        };
        let (partials, finals) = (batch(Tier::Partials), batch(Tier::Finals));
        let long = want(DecodeKind::Final, true);
        let due = want(DecodeKind::Final, false);
        assert_eq!(partials.partials_for(&long, Shed::Nothing), Some(Why::Long));
        assert_eq!(partials.partials_for(&due, Shed::Context), Some(Why::Due));
        assert_eq!(partials.partials_for(&due, Shed::FinalsModel), None);
        assert_eq!(finals.partials_for(&due, Shed::Nothing), None);
        let partial = want(DecodeKind::Partial, false);
        assert_eq!(partials.partials_for(&partial, Shed::Nothing), None);
    }

    #[test]
    fn the_most_urgent_kind_goes_first_then_the_oldest() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(1000);
        let knobs = s.knobs(now);
        let wanted = [
            want(0, DecodeKind::Partial, t0),
            want(1, DecodeKind::FirstPartial, t0 + ms(900)),
            due(
                want(2, DecodeKind::Speculative, t0 + ms(950)),
                now + ms(650),
                2.0,
                false,
            ),
            due(
                want(3, DecodeKind::Final, now - ms(10)),
                now + ms(600),
                2.0,
                false,
            ),
            due(
                want(4, DecodeKind::Final, now - ms(20)),
                now + ms(580),
                2.0,
                false,
            ),
        ];
        let batch = s.plan(&knobs, &wanted, 2, now).batch.expect("a batch");
        // Finals and speculative decodes are one class (the finals' model), the first due
        // first. A partial is never batched with them.
        assert_eq!(batch.tier, Tier::Finals);
        assert_eq!(batch.keys.first(), Some(&4));
        assert!(!batch.keys.contains(&0) && !batch.keys.contains(&1));
        // With no finals or speculative decodes, the first partial before the partial.
        let wanted = [
            want(0, DecodeKind::Partial, t0),
            want(1, DecodeKind::FirstPartial, t0 + ms(900)),
        ];
        let batch = s.plan(&knobs, &wanted, 1, now).batch.expect("a batch");
        assert_eq!((batch.tier, batch.keys[0]), (Tier::Partials, 1));
        // Ties broken by key: the same wants in another order give the same plan.
        let same = [
            want(7, DecodeKind::Final, t0),
            want(3, DecodeKind::Final, t0),
        ];
        let mut other = same;
        other.reverse();
        let mut a = whisper(Shed::Speculative, t0);
        let mut b = whisper(Shed::Speculative, t0);
        assert_eq!(
            a.plan(&knobs, &same, 1, now),
            b.plan(&knobs, &other, 1, now)
        );
    }

    /// The platform waits on a customer's final, not on an assistant's: a customer's
    /// speculative decode due before an assistant's final whose voice ended earlier goes
    /// first, whichever has waited longer.
    #[test]
    fn the_first_due_goes_first_whatever_its_kind_or_age() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(2000);
        let knobs = s.knobs(now);
        // The assistant's voice ended 900 ms ago (its endpoint 1,000 ms, then 600 ms); the
        // customer's 100 ms ago (200 ms, then 600 ms).
        let wanted = [
            due(
                want(0, DecodeKind::Final, now - ms(10)),
                now + ms(700),
                3.0,
                false,
            ),
            due(
                want(1, DecodeKind::Speculative, now - ms(100)),
                now + ms(700) - ms(1),
                3.0,
                true,
            ),
        ];
        let batch = s.plan(&knobs, &wanted, 1, now).batch.expect("a batch");
        assert_eq!(batch.keys.first(), Some(&1));
    }

    /// A final that has waited for a decoder so long that the finals' model, started now,
    /// would have it ready after it is due, and the partials' model in time, goes to the
    /// partials' model, where it may; the same final fresh, one that may not give its model
    /// up, or one neither model has in time (the words are worth more then) keeps the
    /// finals' model.
    #[test]
    fn a_final_the_finals_model_would_have_after_its_due_takes_the_partials_model() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(1000);
        let knobs = s.knobs(now);
        let takes = s.cost.final_alone(Tier::Finals, 3.0, false);
        let takes = Duration::from_secs_f64(takes);
        let late = due(want(0, DecodeKind::Final, now), now + takes / 2, 3.0, true);
        let batch = s.plan(&knobs, &[late], 1, now).batch.expect("a batch");
        assert_eq!(batch.tier, Tier::Partials);
        let fresh = due(want(0, DecodeKind::Final, now), now + takes * 2, 3.0, true);
        let batch = s.plan(&knobs, &[fresh], 1, now).batch.expect("a batch");
        assert_eq!(batch.tier, Tier::Finals);
        let kept = due(want(0, DecodeKind::Final, now), now + takes / 2, 3.0, false);
        let batch = s.plan(&knobs, &[kept], 1, now).batch.expect("a batch");
        assert_eq!(batch.tier, Tier::Finals);
        let hopeless = due(want(0, DecodeKind::Final, now), now, 3.0, true);
        let batch = s.plan(&knobs, &[hopeless], 1, now).batch.expect("a batch");
        assert_eq!(batch.tier, Tier::Finals);
        // Finals it moves are not batched with those the finals' model keeps.
        let both = [
            due(want(0, DecodeKind::Final, now), now + takes / 2, 3.0, true),
            due(want(1, DecodeKind::Final, now), now + takes * 2, 3.0, true),
        ];
        let batch = s.plan(&knobs, &both, 2, now).batch.expect("a batch");
        assert_eq!((batch.tier, batch.keys.clone()), (Tier::Partials, vec![0]));
    }

    /// A final whose finals'-model decode would be late even alone (its ticket says so) is
    /// decoded by the partials' model with the ladder on its first step, and is not
    /// batched with finals the finals' model takes; a ladder that may not shed the finals'
    /// model gives no lead to fall back on.
    #[test]
    fn a_final_too_long_for_its_budget_is_decoded_by_the_partials_model() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(100);
        let knobs = s.knobs(now);
        assert!(knobs.lead.quick.is_some());
        let long = Wanted {
            tier: Tier::Partials,
            ..want(0, DecodeKind::Final, now - ms(20))
        };
        let wanted = [long, want(1, DecodeKind::Final, now - ms(10))];
        let plan = s.plan(&knobs, &wanted, 1, now);
        assert_eq!(plan.step, Shed::Nothing, "{plan:?}");
        let batch = plan.batch.expect("a batch");
        assert_eq!((batch.tier, batch.keys.clone()), (Tier::Partials, vec![0]));
        let wanted = [want(1, DecodeKind::Final, now - ms(10))];
        let batch = s.plan(&knobs, &wanted, 1, now).batch.expect("a batch");
        assert_eq!((batch.tier, batch.keys), (Tier::Finals, vec![1]));
        let kept = whisper(Shed::Context, t0);
        assert!(kept.knobs(now).lead.quick.is_none());
    }

    #[test]
    fn a_wave_of_finals_climbs_before_any_is_late() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(100);
        let knobs = s.knobs(now);
        // Two finals just due: nothing is late, nothing shed.
        let few: Vec<Wanted> = (0..2).map(|k| want(k, DecodeKind::Final, now)).collect();
        let plan = s.plan(&knobs, &few, 2, now);
        assert_eq!(plan.step, Shed::Nothing, "{plan:?}");
        // Sixty due at once, none waited yet: the queue behind the first batch would make
        // the last late, so the ladder is up before any final has waited.
        let many: Vec<Wanted> = (0..60).map(|k| want(k, DecodeKind::Final, now)).collect();
        let plan = s.plan(&knobs, &many, 2, now);
        assert!(plan.step > Shed::Partials, "{plan:?}");
        assert!(plan.projected > Shed::Partials.late_at());
        // The step that sheds the finals' model decodes them with the partials'.
        if plan.step >= Shed::FinalsModel {
            assert_eq!(plan.batch.map(|b| b.tier), Some(Tier::Partials));
        }
    }

    #[test]
    fn the_model_follows_the_new_step_and_the_beam_and_context_the_knobs() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(100);
        let knobs = s.knobs(now);
        assert_eq!(knobs.shed.beam, None, "an idle pool keeps the beam");
        // A final that has waited 450 ms: the finals' model goes at once, in this plan...
        let late = [want(0, DecodeKind::Final, now - ms(450))];
        let plan = s.plan(&knobs, &late, 1, now);
        assert!(plan.step >= Shed::FinalsModel, "{plan:?}");
        let batch = plan.batch.expect("a batch");
        assert_eq!(batch.tier, Tier::Partials);
        // ... while the beam and the context follow the knobs read before the climb
        // (the module's doc: one claim's lag, deliberate).
        assert!(!batch.beam, "the partials' model has no beam");
        assert_eq!(batch.context, (1.0, None));
        // The next claim's knobs stand on the new step.
        let next = s.knobs(now);
        assert_eq!(next.shed.beam, Some(Why::Late));
        assert_eq!(next.shed.context, (0.0, Some(Why::Late)));
        // As the channels are asked with them.
        let room = next.room();
        assert!(!room.beam && room.context == 0.0 && room.lead == next.lead);
        assert!(knobs.room().beam && knobs.room().context == 1.0);
    }

    /// The step that sheds the finals' model leaves a call whose language only that model
    /// speaks on it: its final is not given to a model that cannot write it, nor batched
    /// with the finals that step moves.
    #[test]
    fn a_call_only_the_finals_model_speaks_keeps_it_on_the_ladders_last_steps() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(100);
        let knobs = s.knobs(now);
        let spanish = Wanted {
            sheds_model: false,
            ..want(0, DecodeKind::Final, now - ms(460))
        };
        let late = [spanish, want(1, DecodeKind::Final, now - ms(450))];
        let plan = s.plan(&knobs, &late, 1, now);
        assert!(plan.step >= Shed::FinalsModel, "{plan:?}");
        let batch = plan.batch.expect("a batch");
        assert_eq!((batch.tier, batch.keys), (Tier::Finals, vec![0]));
        let batch = s.plan(&knobs, &late[1..], 1, now).batch.expect("a batch");
        assert_eq!((batch.tier, batch.keys), (Tier::Partials, vec![1]));
    }

    /// Whisper's scheduler with its ladder on the step that sheds partials, at `t0` +
    /// 100 ms, and its knobs then.
    fn on_partials(t0: Instant) -> (Scheduler, Instant, Knobs) {
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(100);
        s.ladder.update(Shed::Partials.late_at(), now);
        let knobs = s.knobs(now);
        (s, now, knobs)
    }

    #[test]
    fn partials_and_speculative_decodes_are_left_out_as_the_knobs_say() {
        let t0 = Instant::now();
        // The ladder on Partials: partials left out, a speculative decode and a pause's
        // judge still taken.
        let (mut s, now, knobs) = on_partials(t0);
        assert_eq!(knobs.left_out(DecodeKind::Partial), Some(LeftOut::Partial));
        assert_eq!(
            knobs.left_out(DecodeKind::FirstPartial),
            Some(LeftOut::Partial)
        );
        assert_eq!(knobs.left_out(DecodeKind::Speculative), None);
        assert_eq!(knobs.left_out(DecodeKind::Judge), None);
        assert!(knobs.room().judges && !knobs.room().partials);
        assert_eq!(knobs.left_out(DecodeKind::Final), None);
        let partials = [want(0, DecodeKind::Partial, t0)];
        assert_eq!(s.plan(&knobs, &partials, 1, now).batch, None);
        // A load over 0.9 of the decoders sheds speculative decodes, for the load.
        s.load.add(0.95 * 20.0, 0.0, now);
        let knobs = s.knobs(now);
        assert_eq!(
            knobs.left_out(DecodeKind::Speculative),
            Some(LeftOut::Speculative(Why::Load))
        );
        let pause = [want(0, DecodeKind::Speculative, t0)];
        assert_eq!(s.plan(&knobs, &pause, 1, now).batch, None);
    }

    /// The ladder keeps a pause's judge after partials: a pause with partials shed is
    /// still judged. A wave of pauses the finals' model could not clear in time climbs
    /// to the step that sheds that model, and the judges go with it at once: no batch of
    /// judges before the wave's finals, the shell asks again on the new step.
    #[test]
    fn a_pause_keeps_its_judge_under_load_and_a_wave_sheds_the_judges_at_once() {
        let (mut s, now, knobs) = on_partials(Instant::now());
        let judge = |key| due(want(key, DecodeKind::Judge, now), now + ms(200), 3.0, false);
        let plan = s.plan(&knobs, &[judge(0), judge(1)], 2, now);
        assert!(!plan.replan, "{plan:?}");
        assert_eq!(plan.step, Shed::Partials);
        let batch = plan.batch.expect("the judges");
        assert_eq!((batch.tier, batch.keys), (Tier::Partials, vec![0]));
        // Forty pauses at once.
        let wave: Vec<Wanted> = (0..40).map(judge).collect();
        let plan = s.plan(&knobs, &wave, 2, now);
        assert!(plan.step >= Shed::FinalsModel, "{plan:?}");
        assert!(plan.replan && plan.batch.is_none(), "{plan:?}");
        let knobs = s.knobs(now);
        assert_eq!(knobs.left_out(DecodeKind::Judge), Some(LeftOut::Judge));
        assert!(!knobs.room().judges);
        // Asked again, the pauses want their speculative decodes: a batch of them.
        let pause = |k| {
            due(
                want(k, DecodeKind::Speculative, now),
                now + ms(800),
                3.0,
                true,
            )
        };
        let pauses: Vec<Wanted> = (0..40).map(pause).collect();
        let plan = s.plan(&knobs, &pauses, 2, now);
        assert!(!plan.replan);
        assert!(plan.batch.is_some_and(|b| b.keys.len() > 1));
    }

    #[test]
    fn with_more_than_one_final_queued_context_is_shed_for_the_queue() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        let now = t0 + ms(10);
        let knobs = s.knobs(now);
        let one = [want(0, DecodeKind::Final, now)];
        let batch = s.plan(&knobs, &one, 2, now).batch.expect("a batch");
        assert_eq!(batch.context, (1.0, None));
        let two = [
            want(0, DecodeKind::Final, now),
            want(1, DecodeKind::Final, now),
        ];
        let batch = s.plan(&knobs, &two, 2, now).batch.expect("a batch");
        assert_eq!(batch.context, (0.0, Some(Why::Queued)));
    }

    #[test]
    fn the_batch_is_the_cost_models_size_for_the_idle_decoders() {
        let t0 = Instant::now();
        let now = t0 + ms(10);
        let wanted: Vec<Wanted> = (0..6).map(|k| want(k, DecodeKind::Final, now)).collect();
        for idle in [1, 2] {
            let mut s = whisper(Shed::Speculative, t0);
            let knobs = s.knobs(now);
            let plan = s.plan(&knobs, &wanted, idle, now);
            let tier = match plan.step >= Shed::FinalsModel {
                true => Tier::Partials,
                false => Tier::Finals,
            };
            let batch = plan.batch.expect("a batch");
            assert_eq!(batch.tier, tier);
            let queue = queue::Queue {
                tier,
                queued: 6,
                decoders: idle,
                seconds: TYPICAL_UTTERANCE,
                max_batch: 8,
            };
            let expected = queue.batch_size(&cost());
            assert_eq!(batch.keys, (0..expected).collect::<Vec<_>>(), "idle {idle}");
        }
    }

    #[test]
    fn the_load_decays_over_its_window_and_a_query_changes_nothing() {
        let t0 = Instant::now();
        let mut s = whisper(Shed::Speculative, t0);
        // Two decoders for 10 s: 10 decode-seconds are half their time.
        let share = s.judged(Duration::from_secs(10), t0);
        assert!((share - 0.5).abs() < 1e-9, "{share}");
        let later = t0 + LOAD_WINDOW;
        assert!((s.share(later) - 0.5 / std::f64::consts::E).abs() < 1e-9);
        // Asking (admission, the knobs) does not move it.
        let present = Present {
            channels: 2,
            weight: 1.0,
            ..Present::default()
        };
        let _ = s.admits(&present, 2, Speakers::Both, 1.0, later);
        let _ = s.knobs(later);
        assert!((s.share(later) - 0.5 / std::f64::consts::E).abs() < 1e-9);
        // Partials do not count; finals count their greedy share.
        let before = s.share(later);
        s.decoded(Tier::Partials, &[3.0], ms(100), 0, false, later);
        assert_eq!(s.share(later), before);
        s.decoded(Tier::Finals, &[3.0], ms(100), 0, true, later);
        assert!(s.share(later) > before);
    }

    #[test]
    fn the_same_inputs_give_the_same_plans() {
        let t0 = Instant::now();
        let run = || {
            let mut s = whisper(Shed::Speculative, t0);
            let mut plans = Vec::new();
            for i in 0..50u64 {
                let now = t0 + ms(20 * i);
                let knobs = s.knobs(now);
                let wanted: Vec<Wanted> = (0..(i as usize % 13))
                    .map(|k| {
                        let kind = [
                            DecodeKind::Final,
                            DecodeKind::Speculative,
                            DecodeKind::Partial,
                        ][k % 3];
                        want(k, kind, t0 + ms(7 * k as u64))
                    })
                    .collect();
                plans.push(s.plan(&knobs, &wanted, 1 + i as usize % 2, now));
                if i % 5 == 0 {
                    s.decoded(Tier::Finals, &[2.0, 3.0], ms(300), 1, true, now);
                }
            }
            plans
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn a_call_promises_once_by_its_youngest_channel_and_a_late_final_is_behind() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(30);
        let old = Live {
            session: 1,
            opened: t0,
            final_since: None,
            bound: false,
        };
        // Call 2: one channel live a second ago, its other still starting; in a language
        // only the finals' model speaks.
        let young = Live {
            session: 2,
            opened: now - Duration::from_secs(1),
            final_since: Some(now - ms(100)),
            bound: true,
        };
        let booked = Booked {
            calls: 2,
            channels: 3,
            bound: 1,
        };
        let starting = [(2, true), (3, false), (3, false)];
        let p = Present::count(&[old, old, young], &starting, booked, now);
        assert_eq!(p.channels, 3 + 3 + 3);
        // Call 1 has settled, call 2 promises what is left of its final; call 3 (both
        // channels starting) and the booked calls a whole final each.
        let expected = promise(Duration::from_secs(30)) + promise(Duration::from_secs(1)) + 3.0;
        assert!((p.promised - expected).abs() < 1e-9, "{p:?}");
        let bound = promise(Duration::from_secs(1)) + 1.0;
        assert!((p.bound - bound).abs() < 1e-9, "{p:?}");
        assert!(!p.behind);
        let waiting = Live {
            final_since: Some(now - FINAL_BACKLOG - ms(1)),
            ..young
        };
        assert!(Present::count(&[waiting], &[], Booked::default(), now).behind);
    }

    /// A newcomer only the finals' model speaks is priced at it: where an idle pool takes
    /// a burst of English calls, it takes fewer Spanish ones.
    #[test]
    fn a_burst_in_a_language_only_the_finals_model_speaks_is_smaller() {
        let t0 = Instant::now();
        let s = whisper(Shed::Speculative, t0);
        let burst = |speakers: Speakers| {
            (0..200)
                .take_while(|&n| {
                    let present = Present {
                        channels: 2 * n,
                        promised: n as f64,
                        bound: match speakers {
                            Speakers::Both => 0.0,
                            Speakers::Only(_) => n as f64,
                        },
                        ..Present::default()
                    };
                    s.admits(&present, 2, speakers, 100.0, t0).is_ok()
                })
                .count()
        };
        let english = burst(Speakers::Both);
        let spanish = burst(Speakers::Only(Tier::Finals));
        assert!(spanish < english, "{spanish} vs {english}");
        assert!(spanish >= 1, "an idle pool takes one");
    }

    /// Admission prices a wave of new calls' finals at the length the calls here have
    /// been speaking in (their utterances alone, not the context their finals read), a
    /// typical utterance's before any: after long utterances it takes fewer calls at once,
    /// after short ones more.
    #[test]
    fn a_wave_is_priced_at_the_recent_utterances_own_length() {
        let t0 = Instant::now();
        let now = t0 + ms(100);
        // Calls an idle pool (one call here, settled) takes at once as far as the wave goes.
        let burst = |s: &Scheduler| {
            (0..200)
                .take_while(|&n| {
                    let present = Present {
                        channels: 2 + 2 * n,
                        weight: 2.0,
                        promised: n as f64,
                        ..Present::default()
                    };
                    s.admits(&present, 2, Speakers::Both, 100.0, now).is_ok()
                })
                .count()
        };
        let spoken = |alone: f64| {
            let mut s = whisper(Shed::Speculative, t0);
            for key in 0..40 {
                let mut w = due(want(key, DecodeKind::Final, now), now, 9.0, false);
                if let Some(d) = w.due.as_mut() {
                    d.alone = alone;
                }
                s.plan(&s.knobs(now), &[w], 2, now);
            }
            s
        };
        let typical = burst(&whisper(Shed::Speculative, t0));
        let (long, short) = (burst(&spoken(8.0)), burst(&spoken(1.5)));
        // Short utterances read 9 s with their context: priced by the 1.5 s alone.
        assert!(
            long < typical && typical < short,
            "{long} < {typical} < {short}"
        );
    }

    #[test]
    fn no_clock_is_read() {
        for (file, text) in [
            ("mod.rs", include_str!("mod.rs")),
            ("ladder.rs", include_str!("ladder.rs")),
            ("admission.rs", include_str!("admission.rs")),
            ("want.rs", include_str!("want.rs")),
            ("../decode.rs", include_str!("../decode.rs")),
        ] {
            let reads = super::super::clock_reads(text);
            assert!(reads.is_empty(), "{file} reads the clock: {reads:?}");
        }
    }
}
