//! How the decoders take a queue of alike decodes: in batches of the size that brings
//! them out soonest, each idle decoder its share ([`Queue::batch_size`]). The plan batches
//! by it, the ladder climbs on the wait it gives the last of a wave ([`Queue::wait`]), and
//! admission prices a newcomer's wave by it ([`wave`]): one policy, priced by the
//! [`CostModel`].

use super::super::Tier;
use super::super::cost::{CostModel, TYPICAL_UTTERANCE};

/// A queue of alike decodes: `queued` of `seconds` each for `tier`'s model, on
/// `decoders` idle decoders taking batches of at most `max_batch`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queue {
    pub tier: Tier,
    pub queued: usize,
    pub decoders: usize,
    pub seconds: f64,
    pub max_batch: usize,
}

impl Queue {
    /// How many of the queue one idle decoder should take as one batch: its share of
    /// them, in the batch size that brings its share's decodes out soonest on average (a
    /// batch's decodes all come out when it ends, so a batch pays only where it costs much
    /// less than its decodes one by one).
    pub fn batch_size(&self, cost: &CostModel) -> usize {
        let share = self.share().max(1);
        let mean_out = |k: usize| {
            let batches = share.div_ceil(k) as f64;
            cost.batch(self.tier, k, self.seconds) * (batches + 1.0) / 2.0
        };
        (1..=share.min(self.max_batch.max(1)))
            .min_by(|&a, &b| mean_out(a).total_cmp(&mean_out(b)))
            .unwrap_or(1)
    }

    /// How long the last of the queue waits to start, the decoders taking it in batches
    /// as [`Queue::batch_size`] says: what the shedding ladder climbs on, so a wave sheds
    /// at once rather than once its first finals are late.
    pub fn wait(&self, cost: &CostModel) -> f64 {
        let share = self.share();
        if share <= 1 {
            return 0.0;
        }
        let k = self.batch_size(cost);
        (share.div_ceil(k) - 1) as f64 * cost.batch(self.tier, k, self.seconds)
    }

    /// Each decoder's share of the queue.
    fn share(&self) -> usize {
        self.queued.div_ceil(self.decoders.max(1))
    }
}

/// How long after a wave of finals of `seconds` each, all due at one instant (`(model,
/// how many)`: a call in a language only the finals' model speaks keeps it), the last of
/// them is decoded by `decoders` decoders (fractional: what the calls here leave of them)
/// taking batches of at most `max_batch`, each decoder first finishing a decode of its own
/// (a partial) that the wave found running. Decodes are whole: each model's finals are
/// split into batches as the decoders would take them, one model after the other.
pub(crate) fn wave(
    cost: &CostModel,
    finals: &[(Tier, usize)],
    seconds: f64,
    decoders: f64,
    max_batch: usize,
) -> f64 {
    let running = cost.batch(Tier::Partials, 1, TYPICAL_UTTERANCE);
    if finals.iter().all(|&(_, n)| n == 0) {
        return running;
    }
    let whole = decoders.floor().max(1.0);
    let mut time = running;
    // The decoders take the wave in turns; the last one to finish ends it. A share of
    // a decoder (the calls here keep the rest busy) stretches its turns.
    for &(tier, queued) in finals.iter().filter(|&&(_, n)| n > 0) {
        let per_decoder = queued.div_ceil(whole as usize);
        let k = Queue {
            tier,
            queued,
            decoders: whole as usize,
            seconds,
            max_batch,
        }
        .batch_size(cost);
        let rounds = per_decoder.div_ceil(k);
        let mut left = per_decoder;
        for r in 0..rounds {
            let size = left.div_ceil(rounds - r);
            time += cost.batch(tier, size, seconds);
            left -= size;
        }
    }
    time * whole / decoders.max(1e-3)
}

#[cfg(test)]
mod tests {
    use super::super::super::cost::Figures;
    use super::super::super::cost::tests::known;
    use super::*;

    /// `cost`'s batch size for `queued` decodes of 3 s on `decoders`, batches up to
    /// `max_batch`.
    fn batch_size(
        cost: &CostModel,
        tier: Tier,
        queued: usize,
        decoders: usize,
        max_batch: usize,
    ) -> usize {
        let queue = Queue {
            tier,
            queued,
            decoders,
            seconds: 3.0,
            max_batch,
        };
        queue.batch_size(cost)
    }

    /// A model whose decoder steps are bound by reading its weights: batches pay.
    fn weight_bound() -> Figures {
        Figures {
            encode: 0.001,
            encode_per_second: 0.001,
            step: 0.01,
            step_per_row: 0.0002,
        }
    }

    #[test]
    fn batches_are_taken_where_they_bring_decodes_out_sooner() {
        // Steps bound by each row's own work: one at a time brings most out soonest.
        let rows = CostModel::from_figures(
            Figures {
                step: 0.0003,
                step_per_row: 0.001,
                ..known()
            },
            known(),
        );
        assert_eq!(batch_size(&rows, Tier::Partials, 8, 1, 16), 1);
        // Steps bound by the weights: the whole share in one batch.
        let weights = CostModel::from_figures(weight_bound(), weight_bound());
        assert_eq!(batch_size(&weights, Tier::Finals, 8, 2, 16), 4);
        // A share over the batch's limit: in as few batches as the limit allows.
        assert_eq!(batch_size(&weights, Tier::Finals, 40, 2, 16), 10);
        assert_eq!(batch_size(&weights, Tier::Finals, 8, 2, 1), 1);
    }

    #[test]
    fn a_wave_is_cleared_in_batches_by_every_decoder() {
        let m = CostModel::from_figures(weight_bound(), weight_bound());
        let one = |n| wave(&m, &[(Tier::Finals, n)], 3.0, 2.0, 1);
        let batched = |n| wave(&m, &[(Tier::Finals, n)], 3.0, 2.0, 16);
        // One at a time: a wave of 8 on 2 decoders takes 4 decodes after the running one.
        let running = m.batch(Tier::Partials, 1, TYPICAL_UTTERANCE);
        assert!((one(8) - (running + 4.0 * m.batch(Tier::Finals, 1, 3.0))).abs() < 1e-9);
        // Batched: one batch of 4 each.
        assert!((batched(8) - (running + m.batch(Tier::Finals, 4, 3.0))).abs() < 1e-9);
        assert!(batched(8) < one(8));
        // Half a decoder free: twice as long.
        let half = wave(&m, &[(Tier::Finals, 8)], 3.0, 0.5, 16);
        assert!((wave(&m, &[(Tier::Finals, 8)], 3.0, 1.0, 16) * 2.0 - half).abs() < 1e-9);
        assert!(batched(0) > 0.0, "the running decode still counts");
        // The last of a queue starts once the decodes before it are out.
        let queue = |queued| Queue {
            tier: Tier::Finals,
            queued,
            decoders: 2,
            seconds: 3.0,
            max_batch: 1,
        };
        assert_eq!(queue(2).wait(&m), 0.0);
        let waits = queue(6).wait(&m);
        assert!((waits - 2.0 * m.batch(Tier::Finals, 1, 3.0)).abs() < 1e-9);
    }

    #[test]
    fn a_wave_of_two_models_takes_each_models_batches_after_one_running_decode() {
        let m = super::super::admission::tests::cost();
        let mixed = wave(&m, &[(Tier::Finals, 2), (Tier::Partials, 6)], 3.0, 2.0, 1);
        let running = m.batch(Tier::Partials, 1, TYPICAL_UTTERANCE);
        let expected =
            running + m.batch(Tier::Finals, 1, 3.0) + 3.0 * m.batch(Tier::Partials, 1, 3.0);
        assert!(
            (mixed - expected).abs() < 1e-9,
            "{mixed} against {expected}"
        );
        // Dearer than the same wave all on the partials' model, cheaper than all on the
        // finals'.
        assert!(mixed > wave(&m, &[(Tier::Partials, 8)], 3.0, 2.0, 1));
        assert!(mixed < wave(&m, &[(Tier::Finals, 8)], 3.0, 2.0, 1));
        assert_eq!(
            wave(&m, &[(Tier::Finals, 0), (Tier::Partials, 4)], 3.0, 2.0, 4),
            wave(&m, &[(Tier::Partials, 4)], 3.0, 2.0, 4)
        );
    }
}
