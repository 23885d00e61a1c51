//! The shedding ladder: what the decoders leave out while finals are late, one step at a
//! time, in the order a caller misses it least.

use std::time::{Duration, Instant};

use crate::backend::embedded::Shed;

impl Shed {
    pub(crate) const ALL: [Shed; 6] = [
        Self::Nothing,
        Self::Beam,
        Self::Partials,
        Self::Context,
        Self::FinalsModel,
        Self::Speculative,
    ];

    /// How late the oldest waiting final may be before this step is taken.
    pub(super) fn late_at(self) -> Duration {
        match self {
            Self::Nothing => Duration::ZERO,
            // The beam is for decoders with room: a final that waits at all for one
            // (behind another decode) is decoded greedily.
            Self::Beam => Duration::from_millis(50),
            Self::Partials => Duration::from_millis(100),
            Self::Context => Duration::from_millis(250),
            Self::FinalsModel => Duration::from_millis(400),
            // A speculative decode at a pause that does end is that utterance's final, ready
            // at the endpoint: in a wave of finals most are. Shed only when finals are
            // already about to miss the time to final the platform needs.
            Self::Speculative => Duration::from_millis(600),
        }
    }

    /// Whether a ladder on this step leaves the pauses' judges out: from the step that
    /// sheds the finals' model on. Below it a judge (the partials' model reading a pause's
    /// words, due by its endpoint) is worth its decode: the pause's own decode, reading in
    /// its place, holds more finished turns and lets more pauses end (BENCHMARKS.md, "A
    /// judge kept under load"). From it on, a wave's finals are already late and each
    /// judge, decoded before its final, would make them later.
    pub(crate) fn sheds_judges(self) -> bool {
        self >= Self::FinalsModel
    }
}

/// The degradation ladder: climbs at once to the step that how late the oldest waiting
/// final is calls for, and comes down one step per `CALM` in which no final was that late,
/// so partials come back when the load falls. It takes only the steps it may: up to the
/// configured last one, the beam and the finals' model only where the engine has them.
#[derive(Debug)]
pub(super) struct Ladder {
    pub(super) step: Shed,
    /// The last step it may take, and whether the engine has a finals' model to shed.
    pub(super) last: Shed,
    pub(super) finals_model: bool,
    /// Whether the engine has a beam search for finals to shed.
    pub(super) beam: bool,
    /// Since when no final has been late enough for `step`.
    calm_since: Instant,
    /// Seconds spent on each step since the last count went to the metrics, and when.
    spent: [f64; 6],
    counted: Instant,
}

/// Why a decode was left out or cut short: counted in `hark_shed_decodes_total{why}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// The ladder: finals are (or will be) late.
    Late,
    /// The essential load averaged over the last seconds is high.
    Load,
    /// Finals queue behind the one being claimed.
    Queued,
    /// The finals' model would not have this final ready within `FINAL_BUDGET` of its
    /// endpoint, even alone: a long utterance on a slow machine.
    Long,
    /// The finals' model would have this final ready after it is due, counting the time
    /// it waited for a decoder.
    Due,
}

impl Why {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Late => "late",
            Self::Load => "load",
            Self::Queued => "queued",
            Self::Long => "long",
            Self::Due => "due",
        }
    }
}

/// What a claim leaves out, and why: one decision from the ladder's step, the load average
/// (the beam, speculative decodes and its share of the context span) and the finals queued.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shedding {
    /// Finals are searched greedily.
    pub beam: Option<Why>,
    pub partials: bool,
    /// The pauses' judges are left out ([`Shed::sheds_judges`]).
    pub judges: bool,
    pub speculative: Option<Why>,
    /// The share of the context span finals may read (1: all), and why it is less.
    pub context: (f64, Option<Why>),
}

impl Shedding {
    pub(super) fn decide(step: Shed, load: LoadSheds) -> Self {
        let LoadSheds {
            beam,
            speculative: load_sheds_speculative,
            context: load_context,
        } = load;
        let beam = match (step >= Shed::Beam, beam) {
            (true, _) => Some(Why::Late),
            (false, true) => Some(Why::Load),
            _ => None,
        };
        let speculative = match (step >= Shed::Speculative, load_sheds_speculative) {
            (true, _) => Some(Why::Late),
            (false, true) => Some(Why::Load),
            _ => None,
        };
        let context = match (step >= Shed::Context, load_context < 1.0) {
            (true, _) => (0.0, Some(Why::Late)),
            (false, true) => (load_context, Some(Why::Load)),
            _ => (1.0, None),
        };
        Self {
            beam,
            partials: step >= Shed::Partials,
            judges: step.sheds_judges(),
            speculative,
            context,
        }
    }

    /// The same for a final or speculative decode with `finals` finals waiting: with more
    /// than one, the decoders are behind now, whatever the load average says, and it is
    /// decoded without context until they catch up.
    pub(super) fn context_for(&self, finals: usize) -> (f64, Option<Why>) {
        match (self.context, finals > 1) {
            ((_, Some(Why::Late)), _) => (0.0, Some(Why::Late)),
            (_, true) => (0.0, Some(Why::Queued)),
            (context, false) => context,
        }
    }
}

/// Essential load from which finals are searched greedily: the beam takes a third more
/// decoder time for a few per cent of the errors, and where finals queue behind one
/// another that time is better spent on them (BENCHMARKS.md, "Beam search for finals").
/// The load leaves the beam's own share out, so turning it off does not turn it back on.
const SHED_BEAM_LOAD: f64 = 0.3;
/// Essential load over which finals' left context shrinks, and at which it is gone: it
/// makes finals more accurate but their decodes longer, and goes right after the beam.
const SHED_CONTEXT_FROM: f64 = 0.4;
const SHED_CONTEXT_AT: f64 = 0.6;
/// Essential load above which speculative decodes are shed: they save a decode only when
/// the pause really is the end, and under that much load finals need the time.
const SHED_SPECULATIVE_LOAD: f64 = 0.9;

/// What the load average alone sheds: the beam, speculative decodes, and the share of the
/// context span finals may read (1: all).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LoadSheds {
    pub beam: bool,
    pub speculative: bool,
    pub context: f64,
}

impl LoadSheds {
    /// What an essential load of `share` (of the decoders' time) sheds.
    pub(super) fn at(share: f64) -> Self {
        Self {
            beam: share >= SHED_BEAM_LOAD,
            speculative: share > SHED_SPECULATIVE_LOAD,
            context: ((SHED_CONTEXT_AT - share) / (SHED_CONTEXT_AT - SHED_CONTEXT_FROM))
                .clamp(0.0, 1.0),
        }
    }
}

/// How long finals must be on time before the ladder comes down a step.
const CALM: Duration = Duration::from_secs(2);

impl Ladder {
    pub(super) fn new(last: Shed, now: Instant) -> Self {
        Self {
            step: Shed::Nothing,
            last,
            finals_model: false,
            beam: false,
            calm_since: now,
            spent: [0.0; 6],
            counted: now,
        }
    }

    /// Whether the ladder may stand on `step`.
    pub(super) fn takes(&self, step: Shed) -> bool {
        step <= self.last
            && (step != Shed::FinalsModel || self.finals_model)
            && (step != Shed::Beam || self.beam)
    }

    /// The step for the oldest waiting final being `late` at `now`.
    pub(super) fn update(&mut self, late: Duration, now: Instant) -> Shed {
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

    /// The highest step this ladder may stand on: where admission prices a wave of
    /// finals, since the ladder can still get there.
    pub(super) fn last_step(&self) -> Shed {
        Shed::ALL
            .into_iter()
            .rev()
            .find(|&s| self.takes(s))
            .unwrap_or(Shed::Nothing)
    }

    /// The whole seconds spent on each step (by `Shed as usize`) since the last call, the
    /// fractions kept for the next: for the metrics.
    pub(super) fn take_whole_seconds(&mut self) -> [u64; 6] {
        let mut whole = [0; 6];
        for (spent, out) in self.spent.iter_mut().zip(&mut whole) {
            let w = spent.floor();
            *spent -= w;
            *out = w as u64;
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_decision_says_what_is_shed_and_why() {
        let load = |beam, speculative, context| LoadSheds {
            beam,
            speculative,
            context,
        };
        let calm = Shedding::decide(Shed::Nothing, load(false, false, 1.0));
        assert_eq!(
            calm,
            Shedding {
                beam: None,
                partials: false,
                judges: false,
                speculative: None,
                context: (1.0, None)
            }
        );
        assert_eq!(calm.context_for(1), (1.0, None));
        assert_eq!(calm.context_for(3), (0.0, Some(Why::Queued)));
        // The load average alone: the beam, speculative decodes and part of the context.
        let busy = Shedding::decide(Shed::Nothing, load(true, false, 1.0));
        assert_eq!(busy.beam, Some(Why::Load));
        assert!(!busy.partials);
        let loaded = Shedding::decide(Shed::Partials, load(true, true, 0.5));
        assert_eq!(loaded.beam, Some(Why::Late));
        assert!(loaded.partials);
        assert!(!loaded.judges, "the judges outlast partials");
        assert_eq!(loaded.speculative, Some(Why::Load));
        assert_eq!(loaded.context, (0.5, Some(Why::Load)));
        // The load sheds the beam first, then context, then speculative decodes.
        assert_eq!(LoadSheds::at(0.0), load(false, false, 1.0));
        assert_eq!(LoadSheds::at(0.35), load(true, false, 1.0));
        assert_eq!(LoadSheds::at(0.5), load(true, false, 0.5));
        assert_eq!(LoadSheds::at(0.95), load(true, true, 0.0));
        // The ladder wins where both say so.
        let wave = Shedding::decide(Shed::FinalsModel, load(false, false, 1.0));
        assert!(
            wave.judges,
            "a wave the finals' model cannot clear sheds the judges"
        );
        let late = Shedding::decide(Shed::Speculative, load(true, true, 0.5));
        assert_eq!(late.speculative, Some(Why::Late));
        assert_eq!(late.context_for(3), (0.0, Some(Why::Late)));
    }

    #[test]
    fn the_ladder_sheds_the_beam_then_partials_then_context_then_the_finals_model_then_speculative_and_comes_back_down()
     {
        let t0 = Instant::now();
        let ms = |v: u64| Duration::from_millis(v);
        let mut ladder = Ladder::new(Shed::Speculative, t0);
        ladder.finals_model = true;
        ladder.beam = true;
        assert_eq!(ladder.update(ms(0), t0), Shed::Nothing);
        assert_eq!(ladder.update(ms(20), t0), Shed::Nothing);
        for step in [
            Shed::Beam,
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
        assert_eq!(ladder.update(ms(0), at), Shed::Beam);
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
        // One model and no beam: nothing to shed between context and speculative decodes,
        // nor before partials, up or down.
        let mut one = Ladder::new(Shed::Speculative, t0);
        assert_eq!(one.update(Shed::Beam.late_at(), t0), Shed::Nothing);
        assert_eq!(one.update(Shed::FinalsModel.late_at(), t0), Shed::Context);
        assert_eq!(one.update(late, t0), Shed::Speculative);
        assert_eq!(one.update(Duration::ZERO, t0 + CALM), Shed::Context);
        assert_eq!(one.update(Duration::ZERO, t0 + CALM * 2), Shed::Partials);
        assert_eq!(one.update(Duration::ZERO, t0 + CALM * 3), Shed::Nothing);
        // Capped: never past the last step allowed, however late.
        for last in Shed::ALL {
            let mut capped = Ladder::new(last, t0);
            capped.finals_model = true;
            capped.beam = true;
            assert_eq!(capped.update(late, t0), last);
            assert_eq!(
                capped.update(Duration::ZERO, t0 + CALM * 5),
                Shed::ALL[(last as usize).saturating_sub(1)]
            );
        }
    }
}
