//! Whether the decoders can take another call: a wave of finals priced at what the shedding
//! ladder can still do, and the measured load.

use std::time::{Duration, Instant};

use super::super::cost::{CostModel, TYPICAL_UTTERANCE};
use super::super::{FINAL_BUDGET, Tier};
use super::FINAL_BACKLOG;
use crate::backend::Refusal;
use crate::backend::embedded::Shed;

/// A newly admitted call promises one final in its first seconds (callers answer "Hello?"
/// together, dialers start calls in waves): that promise fades by `e^(-age/PROMISE_DECAY)`
/// as the call's own decodes show in the measured load.
pub(super) const PROMISE_DECAY: Duration = Duration::from_secs(3);
/// The decoders must be able to clear a wave of finals, one per newly admitted call all
/// due at the same instant, within [`FINAL_BUDGET`] after the endpoint. The wave's last
/// final is the one that counts; the estimate's own margins (a decode found running, 3.5
/// tokens a second) are the slack (BENCHMARKS.md, "Load shapes").
pub(super) const WAVE_BUDGET: f64 = FINAL_BUDGET.as_secs_f64();
/// Finals and speculative decodes a channel of a conversation asks for per second, before
/// its own show in the measured load: an utterance every 4–5 s, and a speculative decode at
/// some pauses that do not end it.
const ESSENTIAL_PER_SECOND: f64 = 0.25;
/// Room booked for a call whose start frame has not come within this long is given back:
/// the platform sends it right after the upgrade, so a connection still silent by then is
/// not a call the room must wait for (it still starts, counted as present from then on).
pub(super) const BOOKING_HOLD: Duration = Duration::from_secs(3);

/// Room booked at `at` for a call of `channels` channels (`bound`: in a language only the
/// finals' model speaks) that has not started them yet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hold {
    pub id: u64,
    pub channels: usize,
    pub at: Instant,
    pub bound: bool,
}

/// Calls booked and still held: bookings older than `BOOKING_HOLD` are forgotten.
pub(crate) fn held_bookings(booked: &mut Vec<Hold>, now: Instant) -> Booked {
    booked.retain(|h| now.saturating_duration_since(h.at) < BOOKING_HOLD);
    Booked {
        calls: booked.len(),
        channels: booked.iter().map(|h| h.channels).sum(),
        bound: booked.iter().filter(|h| h.bound).count(),
    }
}

/// What the bookings held add up to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Booked {
    pub calls: usize,
    pub channels: usize,
    /// Calls in a language only the finals' model speaks.
    pub bound: usize,
}

/// What is left of a call's promise of a final (see `PROMISE_DECAY`) at `age`.
pub(super) fn promise(age: Duration) -> f64 {
    (-age.as_secs_f64() / PROMISE_DECAY.as_secs_f64()).exp()
}

/// What the calls present ask of the decoders, as admission weighs it.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Demand {
    pub decoders: usize,
    /// Channels live, starting or booked.
    pub channels: usize,
    /// The measured essential load (share of the decoders' time) and the age weights of
    /// the channels that brought it: those here (`weight`) and those gone.
    pub load: f64,
    pub weight: f64,
    pub gone: f64,
    /// Finals of newly admitted calls still to come (see `PROMISE_DECAY`), in calls.
    pub promised: f64,
    /// Of those and the newcomer's, the finals only the finals' model may decode (calls in
    /// a language the partials' model does not speak: nothing sheds them to it).
    pub bound: f64,
    /// What decodes cost, per model.
    pub cost: CostModel,
    /// The most utterances a decoder decodes as one batch.
    pub max_batch: usize,
    /// The last step the ladder may take, and whether the engine has a finals' model (the
    /// step that sheds it then decodes finals with the partials' model).
    pub last: Shed,
    pub finals_model: bool,
    /// A final has waited over `FINAL_BACKLOG`.
    pub behind: bool,
    /// The ladder stands on its last step: nothing is left to shed.
    pub exhausted: bool,
    /// How long the utterances decoded lately were, alone with their padding (seconds):
    /// what a new call's finals are priced at. `None` (none yet): a typical utterance's.
    pub utterance: Option<f64>,
}

impl Demand {
    /// The model a wave's finals are decoded by once the ladder has climbed as far as it
    /// may.
    fn wave_tier(&self) -> Tier {
        match self.finals_model && self.last < Shed::FinalsModel {
            true => Tier::Finals,
            false => Tier::Partials,
        }
    }

    /// Whether a call of `channels` more channels can be taken without putting the calls
    /// already here at risk, or why not (the figures behind it, for the log and the 503).
    /// Three conditions:
    ///
    /// - no final is late now and the ladder still has a step to take;
    /// - **the wave**: if every newly admitted call, this one included, said its first words
    ///   at the same instant, the decoders, shedding as far as the ladder may (partials,
    ///   context, the finals' model and with it the pauses' judges) and taking the finals in
    ///   batches, would clear the last of them within `WAVE_BUDGET` of the endpoint. This
    ///   is what a burst of calls opened together costs before any of it shows in the
    ///   measured load. A call in a language only the finals' model speaks keeps that model
    ///   at every step (`bound`);
    /// - **the average**: the load the channels will bring once all have been here a while
    ///   stays under `limit`. The load is an average over the load window, so a channel of
    ///   age `a` has put only `w = 1 − e^(−a/window)` of its demand into it. One channel's
    ///   demand is estimated as `(load + prior·K) / (Σw + K)`: the measured share per fully
    ///   observed channel, pulled towards a conversational channel's (priced by the cost
    ///   model) while there is little history.
    pub fn admits(&self, channels: usize, limit: f64) -> Result<(), Refusal> {
        /// How many fully observed channels the prior weighs as.
        const K: f64 = 4.0;
        // The calls here speak in utterances this long: a new call's will be alike.
        let utterance = self.utterance.unwrap_or(TYPICAL_UTTERANCE);
        // A channel's share of the decoders before it has history: its finals by the
        // finals' model, on the decoders there are.
        let prior = ESSENTIAL_PER_SECOND * self.cost.batch(Tier::Finals, 1, utterance)
            / self.decoders.max(1) as f64;
        // An idle pool takes a call whatever the estimate says: refusing it protects no one
        // and waiting cannot make the decodes cheaper, and only real decodes correct an
        // estimate that came out high (a calibration on a machine busy at start-up).
        if self.channels == 0 {
            return Ok(());
        }
        if self.behind {
            return Err(Refusal::Backlog {
                waited_ms: FINAL_BACKLOG.as_millis() as u64,
            });
        }
        if self.exhausted {
            return Err(Refusal::Exhausted {
                step: self.last.as_str(),
            });
        }
        // The calls already here keep their share of the decoders while the wave drains
        // (their finals come oldest first among its own).
        let free = self.decoders as f64 * (1.0 - self.load).max(0.0);
        let finals = (self.promised + 1.0).ceil() as usize;
        let tier = self.wave_tier();
        let bound = match tier {
            Tier::Finals => 0,
            Tier::Partials => (self.bound.ceil() as usize).min(finals),
        };
        let parts = [(Tier::Finals, bound), (tier, finals - bound)];
        let wave = super::queue::wave(&self.cost, &parts, utterance, free, self.max_batch);
        if wave > WAVE_BUDGET {
            return Err(Refusal::Wave {
                finals,
                seconds: utterance,
                wave_ms: wave * 1e3,
                free,
                model: match (tier, bound) {
                    (Tier::Finals, _) => "finals'",
                    (Tier::Partials, 0) => "partials'",
                    (Tier::Partials, b) if b == finals => "finals'",
                    (Tier::Partials, _) => "finals' and partials'",
                },
                max_batch: self.max_batch,
                budget_ms: WAVE_BUDGET * 1e3,
            });
        }
        let per_channel = (self.load + prior * K) / (self.weight + self.gone + K);
        let after = per_channel * (self.channels + channels) as f64;
        if after > limit {
            return Err(Refusal::Average {
                channels: self.channels + channels,
                load: after,
                limit,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::cost::Figures;
    use super::*;

    /// Whisper-like figures: a finals' model three times the partials' cost.
    pub(in super::super) fn cost() -> CostModel {
        super::super::super::cost::tests::whisper_like()
    }

    fn idle(last: Shed, max_batch: usize) -> Demand {
        Demand {
            decoders: 2,
            cost: cost(),
            max_batch,
            last,
            finals_model: true,
            ..Demand::default()
        }
    }

    /// Calls an idle pool takes at once, all promising a final, as far as the wave goes
    /// (the average's limit out of the way).
    fn burst(d: Demand) -> usize {
        (0..200)
            .take_while(|&n| {
                Demand {
                    promised: n as f64,
                    channels: 2 * n,
                    ..d
                }
                .admits(2, 100.0)
                .is_ok()
            })
            .count()
    }

    /// A booking holds its room for `BOOKING_HOLD` of the time it is given, then is
    /// forgotten; admission reads no clock of its own.
    #[test]
    fn a_booking_is_held_for_booking_hold_then_forgotten() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(2);
        let hold = |id, channels, at, bound| Hold {
            id,
            channels,
            at,
            bound,
        };
        let mut booked = vec![hold(0, 2, t0, false), hold(1, 1, later, true)];
        let held = |calls, channels, bound| Booked {
            calls,
            channels,
            bound,
        };
        assert_eq!(
            held_bookings(&mut booked, t0 + Duration::from_secs(1)),
            held(2, 3, 1)
        );
        assert_eq!(held_bookings(&mut booked, t0 + BOOKING_HOLD), held(1, 1, 1));
        assert_eq!(
            held_bookings(&mut booked, later + BOOKING_HOLD),
            held(0, 0, 0)
        );
        let reads = super::super::super::clock_reads(include_str!("admission.rs"));
        assert!(reads.is_empty(), "admission reads the clock: {reads:?}");
    }

    #[test]
    fn a_burst_is_priced_at_the_last_step_the_ladder_may_take() {
        let whole = burst(idle(Shed::Speculative, 16));
        let keep_finals = burst(idle(Shed::Context, 16));
        assert!(
            whole > keep_finals,
            "shedding the finals' model must admit more: {whole} vs {keep_finals}"
        );
        // A one-model engine has no finals' model to shed.
        let one = Demand {
            finals_model: false,
            ..idle(Shed::Speculative, 16)
        };
        assert!(burst(one) > 0);
    }

    /// Decodes priced far over the budget (a calibration taken while the machine was busy)
    /// still let an idle pool take its first call, and only it.
    #[test]
    fn an_idle_pool_takes_one_call_however_dear_the_estimate() {
        let dear = Figures {
            encode: 1.0,
            encode_per_second: 1.0,
            step: 0.1,
            step_per_row: 0.1,
        };
        let d = Demand {
            cost: CostModel::from_figures(dear, dear),
            ..idle(Shed::Speculative, 16)
        };
        assert!(d.admits(2, 1.0).is_ok(), "the first call");
        let second = Demand {
            channels: 2,
            promised: 1.0,
            ..d
        };
        assert!(
            second.admits(2, 1.0).is_err(),
            "a second call at that price"
        );
    }

    /// Calls in a language only the finals' model speaks cannot fall to the partials'
    /// model at the ladder's last step: their wave is priced at the finals' model.
    #[test]
    fn a_burst_of_calls_only_the_finals_model_speaks_is_priced_at_that_model() {
        let english = burst(idle(Shed::Speculative, 16));
        let bound = |n: usize| {
            (0..200)
                .take_while(|&k| {
                    Demand {
                        promised: k as f64,
                        bound: (k.min(n) + 1) as f64,
                        channels: 2 * k,
                        ..idle(Shed::Speculative, 16)
                    }
                    .admits(2, 100.0)
                    .is_ok()
                })
                .count()
        };
        let spanish = bound(usize::MAX);
        let keep_finals = burst(idle(Shed::Context, 16));
        assert_eq!(
            spanish, keep_finals,
            "as if the ladder kept the finals' model"
        );
        assert!(spanish < english, "{spanish} vs {english}");
        // One such call among English ones costs its final alone at the finals' model.
        let one = bound(0);
        assert!(
            spanish <= one && one <= english,
            "{spanish} {one} {english}"
        );
        let refused = Demand {
            promised: english as f64,
            bound: 1.0,
            channels: 2 * english,
            ..idle(Shed::Speculative, 16)
        }
        .admits(2, 100.0)
        .unwrap_err();
        assert!(
            refused.to_string().contains("finals' and partials' model"),
            "{refused}"
        );
    }

    #[test]
    fn batching_takes_a_larger_burst() {
        let batched = burst(idle(Shed::Speculative, 16));
        let alone = burst(idle(Shed::Speculative, 1));
        assert!(batched > alone, "{batched} vs {alone}");
        assert!(alone >= 2, "two calls at once on an idle server");
        // The admitted wave is one the cost model clears in time, and one more is not.
        let c = cost();
        let free = 2.0;
        let wave =
            |n| super::super::queue::wave(&c, &[(Tier::Partials, n)], TYPICAL_UTTERANCE, free, 16);
        assert!(wave(batched) <= WAVE_BUDGET);
        assert!(wave(batched + 1) > WAVE_BUDGET);
    }

    #[test]
    fn slower_decodes_measured_make_the_wave_smaller() {
        let fast = burst(idle(Shed::Speculative, 16));
        let mut slow = cost();
        for _ in 0..20 {
            let lengths = [TYPICAL_UTTERANCE];
            let took = slow.batch(Tier::Partials, 1, TYPICAL_UTTERANCE) * 2.0;
            slow.observe(Tier::Partials, &lengths, Duration::from_secs_f64(took), 0);
        }
        let slower = burst(Demand {
            cost: slow,
            ..idle(Shed::Speculative, 16)
        });
        assert!(slower < fast, "{slower} vs {fast}");
    }

    #[test]
    fn a_wave_is_smaller_on_decoders_the_calls_here_keep_busy() {
        let taken = |load: f64| {
            burst(Demand {
                load,
                weight: 8.0,
                ..idle(Shed::Speculative, 16)
            })
        };
        assert!(taken(0.5) < taken(0.0), "{} calls", taken(0.5));
        assert!(taken(0.5) >= 1, "a busy pool still takes a call at a time");
    }

    #[test]
    fn a_promise_fades_and_late_finals_or_an_exhausted_ladder_refuse() {
        assert_eq!(promise(Duration::ZERO), 1.0);
        assert!(promise(PROMISE_DECAY) < 0.4);
        assert!(promise(PROMISE_DECAY * 10) < 0.001);
        let n = burst(idle(Shed::Speculative, 16));
        let young = Demand {
            channels: 2 * n,
            promised: n as f64,
            ..idle(Shed::Speculative, 16)
        };
        let refused = young.admits(2, 1.0).unwrap_err();
        assert!(matches!(refused, Refusal::Wave { .. }), "{refused}");
        assert_eq!(refused.reason(), "headroom-wave");
        assert!(refused.to_string().starts_with("a wave of"), "{refused}");
        assert!(
            refused
                .to_string()
                .contains("at once, of 3.0 s each, would take"),
            "{refused}"
        );
        let settled = Demand {
            promised: young.promised * promise(PROMISE_DECAY * 10),
            weight: young.channels as f64,
            load: 0.1,
            ..young
        };
        assert!(settled.admits(2, 1.0).is_ok());
        // The measured load still refuses what would take the decoders over the limit.
        let busy = Demand {
            load: 0.3,
            ..settled
        };
        assert!(busy.admits(2, 1.0).is_ok());
        assert!(matches!(
            busy.admits(2, 0.2),
            Err(Refusal::Average { limit: 0.2, .. })
        ));
        // Before any history, a channel is priced at a conversation's finals by the cost
        // model: more channels than that carries are refused on the average alone.
        let fresh = idle(Shed::Speculative, 16);
        let per_channel =
            ESSENTIAL_PER_SECOND * cost().batch(Tier::Finals, 1, TYPICAL_UTTERANCE) / 2.0;
        let most = (1.0 / per_channel) as usize;
        let at = |channels| Demand { channels, ..fresh }.admits(2, 1.0);
        assert!(at(most - 4).is_ok());
        let refused = at(most).unwrap_err();
        assert!(
            refused.to_string().contains("max_load"),
            "{most} channels: {refused}"
        );
        assert_eq!(refused.reason(), "headroom-average");
        // And so do late finals, or a ladder with nothing left to shed.
        assert!(
            Demand {
                behind: true,
                ..settled
            }
            .admits(2, 1.0)
            .is_err_and(|r| r.reason() == "headroom-backlog")
        );
        assert!(
            Demand {
                exhausted: true,
                ..settled
            }
            .admits(2, 1.0)
            .is_err_and(|r| r
                == Refusal::Exhausted {
                    step: "speculative"
                })
        );
    }
}
