//! What a decode costs, per model: the one estimate admission, the shedding ladder and the
//! speculative decodes' lead all read.
//!
//! A batch of `b` utterances of `l` seconds costs, on one decoder,
//!
//! ```text
//! cost(b, l) = b·(e₀ + e₁·l) + steps(l)·(s₀ + s₁·b)
//! ```
//!
//! seconds: each utterance is encoded on its own (`e₀ + e₁·l`), and each decoder step reads
//! the weights once for the whole batch (`s₀`) plus each row's own attention (`s₁`). An
//! engine that does not batch has `s₀ = 0` in effect: its measured cost grows as `b` times
//! one decode's. The four figures are fitted at load from a few decodes of known size timed
//! on the idle decoders ([`CostModel::calibrate`]); from then on every real decode moves a
//! correction factor, rising fast and falling slowly, so a machine that turns out slower
//! (or busier) than at load is priced as it is now.

use std::time::{Duration, Instant};

use super::{Engine, Tier};

/// Decoder steps a decode takes for `seconds` of speech: the start, then about 3.5 tokens a
/// second (speech runs at 2–4; greedy search stops at the end of text).
fn steps(seconds: f64) -> f64 {
    STEPS_AT_START + STEPS_PER_SECOND * seconds
}
const STEPS_AT_START: f64 = 3.0;
const STEPS_PER_SECOND: f64 = 3.5;
/// How long an utterance is taken to be where its length is not known: a newcomer's first
/// one at the upgrade, a queued decode before its audio is copied out, the partial a wave
/// finds running. A caller's "Hello?" is short; the dev clips' median is about 3 s.
pub const TYPICAL_UTTERANCE: f64 = 3.0;

/// The decodes timed at load: (batch, seconds, steps). Enough spread in each of the three
/// for the four figures, small enough to take about a second per model.
const PROBES: [(usize, f32, usize); 5] = [
    (1, 1.0, 4),
    (1, 6.0, 4),
    (1, 1.0, 24),
    (6, 1.0, 24),
    (3, 4.0, 12),
];

/// How fast the correction follows decodes slower than the estimate, and faster ones: a
/// wave is as slow as its slowest decodes, so the estimate leans to them.
const RISE: f64 = 0.3;
const FALL: f64 = 0.03;
/// The correction stays within these bounds of the calibration.
const CORRECTION: (f64, f64) = (0.5, 4.0);

/// One model's cost figures (see the module).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub encode: f64,
    pub encode_per_second: f64,
    pub step: f64,
    pub step_per_row: f64,
}

/// As the start-up log shows them: ms, and what a 3 s utterance costs alone.
impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "encode {:.1} ms + {:.1} ms/s, step {:.2} ms + {:.2} ms/row ({:.0} ms for {TYPICAL_UTTERANCE} s alone)",
            self.encode * 1e3,
            self.encode_per_second * 1e3,
            self.step * 1e3,
            self.step_per_row * 1e3,
            self.batch(1, TYPICAL_UTTERANCE) * 1e3
        )
    }
}

impl Figures {
    /// Seconds one decoder takes for a batch of `batch` utterances of `seconds` each.
    pub fn batch(&self, batch: usize, seconds: f64) -> f64 {
        self.searched(batch, batch, seconds)
    }

    /// The same with `rows` hypotheses at each decoder step in all (a beam search's
    /// utterance is encoded once and has as many rows as the beam is wide).
    pub fn searched(&self, batch: usize, rows: usize, seconds: f64) -> f64 {
        let b = batch as f64;
        b * (self.encode + self.encode_per_second * seconds)
            + steps(seconds) * (self.step + self.step_per_row * rows.max(batch) as f64)
    }

    /// Least-squares fit of the four figures to timed decodes; figures that come out
    /// negative (noise) are refitted as zero.
    fn fit(samples: &[Sample]) -> Option<Self> {
        let mut keep = [true; 4];
        for _ in 0..4 {
            let x = solve(samples, &keep)?;
            if let Some(i) = (0..4).find(|&i| keep[i] && x[i] < 0.0) {
                keep[i] = false;
                continue;
            }
            return Some(Self {
                encode: x[0],
                encode_per_second: x[1],
                step: x[2],
                step_per_row: x[3],
            });
        }
        None
    }
}

/// A timed decode: a batch of `batch` utterances of `seconds`, `steps` decoder steps each,
/// took `took` seconds.
#[derive(Debug, Clone, Copy)]
struct Sample {
    batch: usize,
    seconds: f64,
    steps: f64,
    took: f64,
}

impl Sample {
    /// What each figure is multiplied by in its cost.
    fn terms(&self) -> [f64; 4] {
        let b = self.batch as f64;
        [b, b * self.seconds, self.steps, self.steps * b]
    }
}

/// Least squares over the figures `keep`s (the others zero), by the normal equations.
fn solve(samples: &[Sample], keep: &[bool; 4]) -> Option<[f64; 4]> {
    let cols: Vec<usize> = (0..4).filter(|&i| keep[i]).collect();
    let n = cols.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for s in samples {
        let r = s.terms();
        for (i, &ci) in cols.iter().enumerate() {
            for (j, &cj) in cols.iter().enumerate() {
                a[i][j] += r[ci] * r[cj];
            }
            a[i][n] += r[ci] * s.took;
        }
    }
    // Gauss-Jordan elimination with partial pivoting.
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (v, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *v -= f * p;
                }
            }
        }
    }
    let mut x = [0.0; 4];
    for (i, &ci) in cols.iter().enumerate() {
        x[ci] = a[i][n] / a[i][i];
    }
    Some(x)
}

/// The cost of each of an engine's models, and how far real decodes are from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// The partials' model, then the finals' (the same figures for a one-model engine).
    figures: [Figures; 2],
    correction: [f64; 2],
    /// The hypotheses of the finals' beam search while the decoders have room (1: none).
    beam: usize,
}

impl Default for CostModel {
    /// Before calibration: Whisper tiny.en's figures on one core of the machine in
    /// BENCHMARKS.md, for both tiers (only tests and an engine that failed to calibrate
    /// see these).
    fn default() -> Self {
        let tiny = Figures {
            encode: 0.004,
            encode_per_second: 0.004,
            step: 0.0025,
            step_per_row: 0.0006,
        };
        Self {
            figures: [tiny; 2],
            correction: [1.0; 2],
            beam: 1,
        }
    }
}

/// CPU time this thread has run. An engine decodes on the calling thread, so this is what
/// a decode costs whatever else the machine runs: the loader runs in the background class,
/// and on a machine busy at start-up wall time measured how long it waited for a core
/// (calibrations 10× too dear, then every call refused).
fn thread_cpu_seconds() -> Option<f64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, which lives on this stack.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then_some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
}

impl CostModel {
    /// Times `PROBES` on `engine` for each tier (`finals_model`: the finals' tier is a
    /// model of its own), each the faster of two runs in the thread's CPU time, and fits
    /// the figures. A fit that
    /// fails keeps the defaults for that tier.
    pub fn calibrate(engine: &mut dyn Engine, finals_model: bool) -> Self {
        let mut model = Self::default();
        let tiers: &[Tier] = match finals_model {
            true => &[Tier::Partials, Tier::Finals],
            false => &[Tier::Partials],
        };
        for &tier in tiers {
            let samples: Vec<_> = PROBES
                .iter()
                .map(|&(batch, seconds, steps)| {
                    let best = (0..2)
                        .map(|_| {
                            let (cpu, wall) = (thread_cpu_seconds(), Instant::now());
                            engine.exercise(tier, batch, seconds, steps);
                            match (cpu, thread_cpu_seconds()) {
                                (Some(before), Some(after)) => after - before,
                                // No thread clock (never on Linux): the wall clock.
                                _ => wall.elapsed().as_secs_f64(),
                            }
                        })
                        .fold(f64::INFINITY, f64::min);
                    Sample {
                        batch,
                        seconds: f64::from(seconds),
                        steps: steps as f64,
                        took: best,
                    }
                })
                .collect();
            if let Some(f) = Figures::fit(&samples) {
                model.figures[tier as usize] = f;
            }
        }
        if !finals_model {
            model.figures[Tier::Finals as usize] = model.figures[Tier::Partials as usize];
        }
        model
    }

    /// From figures known beforehand (tests, studies).
    pub fn from_figures(partials: Figures, finals: Figures) -> Self {
        Self {
            figures: [partials, finals],
            correction: [1.0; 2],
            beam: 1,
        }
    }

    /// Finals searched with `width` hypotheses while the decoders have room.
    pub fn with_beam(self, width: usize) -> Self {
        Self {
            beam: width.max(1),
            ..self
        }
    }

    /// The hypotheses of the finals' beam search (1: none).
    pub fn beam(&self) -> usize {
        self.beam
    }

    /// Seconds one decoder takes now for a final of `seconds` alone by `tier`'s model,
    /// searched with the beam or greedily: what a speculative decode's lead is (by the
    /// partials' model: a final that falls back to it).
    pub fn final_alone(&self, tier: Tier, seconds: f64, beam: bool) -> f64 {
        let tier = tier as usize;
        let rows = if beam { self.beam } else { 1 };
        self.figures[tier].searched(1, rows, seconds) * self.correction[tier]
    }

    /// How far `tier`'s real decodes are from the calibration now (1: as calibrated).
    pub fn correction(&self, tier: Tier) -> f64 {
        self.correction[tier as usize]
    }

    /// The figures of `tier`'s model as calibrated.
    pub fn figures(&self, tier: Tier) -> Figures {
        self.figures[tier as usize]
    }

    /// Seconds one decoder takes now for a batch of `batch` utterances of `seconds` each
    /// with `tier`'s model.
    pub fn batch(&self, tier: Tier, batch: usize, seconds: f64) -> f64 {
        self.figures[tier as usize].batch(batch, seconds) * self.correction[tier as usize]
    }

    /// A real decode of `lengths` (seconds of audio each) by `tier`'s model took `spent`,
    /// `beamed` of them searched with the finals' beam: moves the correction towards it.
    pub fn observe(&mut self, tier: Tier, lengths: &[f64], spent: Duration, beamed: usize) {
        if lengths.is_empty() {
            return;
        }
        let mean = lengths.iter().sum::<f64>() / lengths.len() as f64;
        let rows = self.rows(lengths.len(), beamed);
        let predicted = self.figures[tier as usize].searched(lengths.len(), rows, mean);
        if predicted <= 0.0 {
            return;
        }
        let ratio = spent.as_secs_f64() / predicted;
        let c = &mut self.correction[tier as usize];
        let rate = if ratio > *c { RISE } else { FALL };
        *c = (*c + rate * (ratio - *c)).clamp(CORRECTION.0, CORRECTION.1);
    }

    /// Decoder rows at each step of a batch of `batch` utterances, `beamed` of them searched
    /// with the beam.
    fn rows(&self, batch: usize, beamed: usize) -> usize {
        batch + beamed * (self.beam - 1)
    }

    /// The share of a decode of `lengths` (`beamed` of them searched with the beam) that
    /// greedy decodes would have taken, by the figures: what is left of it once the load or
    /// the ladder sheds the beam (the first thing either sheds), and so all that admission
    /// may count on.
    pub fn greedy_share(&self, tier: Tier, lengths: &[f64], beamed: usize) -> f64 {
        if lengths.is_empty() || beamed == 0 {
            return 1.0;
        }
        let n = lengths.len();
        let mean = lengths.iter().sum::<f64>() / n as f64;
        let f = &self.figures[tier as usize];
        let all = f.searched(n, self.rows(n, beamed), mean);
        match all > 0.0 {
            true => (f.searched(n, n, mean) / all).clamp(0.0, 1.0),
            false => 1.0,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Figures of a small model, for tests.
    /// Whisper-like figures: a finals' model three times the partials' cost.
    pub(crate) fn whisper_like() -> CostModel {
        let partials = Figures {
            encode: 0.003,
            encode_per_second: 0.003,
            step: 0.002,
            step_per_row: 0.0004,
        };
        let finals = Figures {
            encode: 0.009,
            encode_per_second: 0.009,
            step: 0.006,
            step_per_row: 0.0012,
        };
        CostModel::from_figures(partials, finals)
    }

    pub(crate) fn known() -> Figures {
        Figures {
            encode: 0.004,
            encode_per_second: 0.006,
            step: 0.003,
            step_per_row: 0.0005,
        }
    }

    #[test]
    fn the_fit_recovers_the_figures_that_made_the_timings() {
        let f = known();
        let samples: Vec<_> = PROBES
            .iter()
            .map(|&(b, l, s)| {
                let l = f64::from(l);
                let s = s as f64;
                let took = b as f64 * (f.encode + f.encode_per_second * l)
                    + s * (f.step + f.step_per_row * b as f64);
                Sample {
                    batch: b,
                    seconds: l,
                    steps: s,
                    took,
                }
            })
            .collect();
        let fit = Figures::fit(&samples).unwrap();
        for (got, want) in [
            (fit.encode, f.encode),
            (fit.encode_per_second, f.encode_per_second),
            (fit.step, f.step),
            (fit.step_per_row, f.step_per_row),
        ] {
            assert!((got - want).abs() < 1e-9, "{fit:?}");
        }
        // Noise that would make a figure negative leaves it at zero.
        let mut noisy = samples.clone();
        noisy[0].took += 0.02;
        let fit = Figures::fit(&noisy).unwrap();
        assert!(fit.encode >= 0.0 && fit.step >= 0.0 && fit.step_per_row >= 0.0);
    }

    #[test]
    fn a_batch_costs_less_than_its_decodes_one_by_one() {
        let f = known();
        assert!(f.batch(8, 3.0) < 8.0 * f.batch(1, 3.0));
        assert!(f.batch(8, 3.0) > f.batch(1, 3.0));
        assert!(f.batch(1, 6.0) > f.batch(1, 3.0));
    }

    #[test]
    fn real_decodes_move_the_estimate_up_fast_and_down_slowly() {
        let mut m = CostModel::from_figures(known(), known());
        let base = m.batch(Tier::Finals, 1, 3.0);
        m.observe(Tier::Finals, &[3.0], Duration::from_secs_f64(base * 2.0), 0);
        let up = m.batch(Tier::Finals, 1, 3.0);
        assert!(up > base * 1.25, "{up} vs {base}");
        // The other tier is another model.
        assert_eq!(m.batch(Tier::Partials, 1, 3.0), base);
        m.observe(Tier::Finals, &[3.0], Duration::from_secs_f64(base * 0.5), 0);
        assert!(m.batch(Tier::Finals, 1, 3.0) > up * 0.95);
        // Never beyond the bounds, however slow.
        for _ in 0..100 {
            m.observe(Tier::Finals, &[3.0], Duration::from_secs(60), 0);
        }
        assert!((m.batch(Tier::Finals, 1, 3.0) - base * CORRECTION.1).abs() < 1e-9);
    }

    #[test]
    fn a_beamed_final_is_priced_with_its_hypotheses_and_moves_the_estimate_only_past_that() {
        let greedy = CostModel::from_figures(known(), known());
        let beamed = greedy.with_beam(5);
        let alone = greedy.final_alone(Tier::Finals, 3.0, true);
        assert_eq!(alone, greedy.batch(Tier::Finals, 1, 3.0), "no beam: greedy");
        assert_eq!(beamed.final_alone(Tier::Finals, 3.0, false), alone);
        let wide = beamed.final_alone(Tier::Finals, 3.0, true);
        assert!(wide > alone && wide < 5.0 * alone, "{wide} vs {alone}");
        // A beam search that took what it is priced at leaves the estimate where it was;
        // read as a greedy decode, it would have raised it.
        let mut m = beamed;
        m.observe(Tier::Finals, &[3.0], Duration::from_secs_f64(wide), 1);
        assert!((m.final_alone(Tier::Finals, 3.0, true) - wide).abs() < 1e-9);
        m.observe(Tier::Finals, &[3.0], Duration::from_secs_f64(wide), 0);
        assert!(m.final_alone(Tier::Finals, 3.0, true) > wide);
        // Admission counts what is left once the beam is shed.
        let share = beamed.greedy_share(Tier::Finals, &[3.0], 1);
        assert!((share - alone / wide).abs() < 1e-9, "{share}");
        assert_eq!(beamed.greedy_share(Tier::Finals, &[3.0], 0), 1.0);
    }
}
