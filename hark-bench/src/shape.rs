//! Load shapes: when each call starts, on which target, and which conversation it plays.
//! Kept apart from the run so that a schedule can be checked without timing anything.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::Stats;

/// Between a call's start on target A and the same call's start on target B (`--vs`): close
/// enough that both meet the same machine conditions, apart enough to keep their order.
pub const PAIR_GAP_MS: f64 = 5.0;

/// How the calls of a run start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Shape {
    /// Starts spread evenly over `over_s` seconds, each call with its own seed: independent
    /// calls, as a platform's traffic is.
    Staggered { over_s: f64 },
    /// All calls at once, all playing the same conversation timing, so every call's words
    /// end at the same instants: the worst case for a server.
    Burst,
    /// One more call every `every_s` seconds in one continuous run, all ending together.
    Ramp { every_s: f64 },
}

impl Shape {
    /// The default stagger: about one turn cycle, or the whole call if that is shorter.
    pub fn default_stagger(duration_s: f64) -> f64 {
        duration_s.min(6.0)
    }

    pub fn describe(&self) -> String {
        match self {
            Self::Staggered { over_s } => format!("staggered over {over_s:.1} s"),
            Self::Burst => "burst (in phase)".into(),
            Self::Ramp { every_s } => format!("ramp (+1 call every {every_s:.1} s)"),
        }
    }
}

/// One call's place in the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Start {
    /// 0 for `--url`, 1 for `--vs`.
    pub target: usize,
    pub call: usize,
    /// When to dial, after the run starts.
    pub offset_ms: f64,
    /// The conversation's seed: the same call plays the same audio on every target.
    pub seed: u64,
    /// Length of its conversation.
    pub duration_s: f64,
}

/// Every call's start, in the order they are dialed: A0, B0, A1, B1…
pub fn schedule(
    shape: Shape,
    calls: usize,
    targets: usize,
    seed: u64,
    duration_s: f64,
) -> Vec<Start> {
    let mut out = Vec::with_capacity(calls * targets);
    for call in 0..calls {
        let (base_ms, seed, duration_s) = match shape {
            Shape::Staggered { over_s } => (
                call as f64 * over_s * 1000.0 / calls as f64,
                seed.wrapping_add(call as u64),
                duration_s,
            ),
            Shape::Burst => (0.0, seed, duration_s),
            Shape::Ramp { every_s } => (
                call as f64 * every_s * 1000.0,
                seed.wrapping_add(call as u64),
                // Every call lasts to the end of the run, so the last level is held for a
                // whole `duration_s`.
                duration_s + (calls - 1 - call) as f64 * every_s,
            ),
        };
        for target in 0..targets {
            out.push(Start {
                target,
                call,
                offset_ms: base_ms + target as f64 * PAIR_GAP_MS,
                seed,
                duration_s,
            });
        }
    }
    out
}

/// Calls whose audio is flowing at `at_ms`, from their (from, to) spans in ms.
pub fn open_calls(spans: &[(f64, f64)], at_ms: f64) -> usize {
    spans
        .iter()
        .filter(|(from, to)| *from <= at_ms && at_ms < *to)
        .count()
}

/// One call of a `--ramp` run, as the levels see it.
#[derive(Debug, Clone)]
pub struct RampCall {
    /// When it was dialed, ms after the run started.
    pub dialed_ms: f64,
    /// From its first audio frame to its last, if it ever started.
    pub span: Option<(f64, f64)>,
    /// It opened and then failed, or could not be opened for want of an answer.
    pub failed: bool,
    /// The server refused it at the upgrade: not a failure (the platform takes it to its
    /// fallback at once, and the calls held are what a ramp measures).
    pub refused: bool,
    /// When each utterance's words ended, its time to final if one came, and whether the
    /// level's latency counts it (the customer's: the platform's reply waits on those).
    pub utterances: Vec<(f64, Option<f64>, bool)>,
}

/// `--ramp` levels: each utterance counts at the number of calls open when its words ended,
/// a failed call at the level of its first missing final. A call that never started counts
/// at the level it would have made: as refused if the server refused it at the upgrade (not
/// a failure: a server that refuses what it cannot carry holds the calls it took), as failed
/// if no answer came. Its planned utterances are not missing finals: they were never
/// spoken, and counted at their planned instants they would land on the ramp's way down.
pub fn ramp_levels(calls: &[RampCall], max_p95_ms: f64) -> Vec<Level> {
    let spans: Vec<(f64, f64)> = calls.iter().filter_map(|c| c.span).collect();
    let level_at = |ms: f64| open_calls(&spans, ms).max(1);
    // calls open → (times to final, missing finals, failed calls, refused calls)
    let mut by: BTreeMap<usize, (Vec<f64>, usize, usize, usize)> = BTreeMap::new();
    for call in calls {
        let Some((from, _)) = call.span else {
            let level = by
                .entry(open_calls(&spans, call.dialed_ms) + 1)
                .or_default();
            if call.refused {
                level.3 += 1;
            } else {
                level.2 += 1;
            }
            continue;
        };
        let mut first_missing = None;
        for &(ended_ms, time_to_final, timed) in &call.utterances {
            let level = level_at(ended_ms);
            let entry = by.entry(level).or_default();
            match time_to_final {
                Some(ms) if timed => entry.0.push(ms),
                Some(_) => {}
                None => {
                    entry.1 += 1;
                    first_missing.get_or_insert(level);
                }
            }
        }
        if call.failed {
            let level = first_missing.unwrap_or_else(|| level_at(from));
            by.entry(level).or_default().2 += 1;
        }
    }
    by.into_iter()
        .map(|(calls, (ttf, missing, failed, refused))| {
            Level::new(calls, Stats::of(ttf), missing, failed, max_p95_ms).with_refused(refused)
        })
        .collect()
}

/// One concurrency level of `--find-capacity`: a step (a run with this many calls) or, with
/// `--ramp`, the utterances whose words ended while this many calls were open.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Level {
    pub calls: usize,
    /// The customer's: the assistant's finals hold up no reply. (Both channels' before
    /// schema 4.)
    pub time_to_final_ms: Stats,
    pub missing_finals: usize,
    pub failed_calls: usize,
    /// Calls refused at the upgrade: in a step's run, or dialed on a ramp while one fewer
    /// were open. Not failures. (Absent from older reports: 0.)
    #[serde(default)]
    pub refused_calls: usize,
    /// p95 time to final within the threshold, and no missing final or failure.
    pub held: bool,
}

impl Level {
    pub fn new(
        calls: usize,
        time_to_final_ms: Stats,
        missing_finals: usize,
        failed_calls: usize,
        max_p95_ms: f64,
    ) -> Self {
        let held = missing_finals == 0
            && failed_calls == 0
            && time_to_final_ms.count > 0
            && time_to_final_ms.p95 <= max_p95_ms;
        Self {
            calls,
            time_to_final_ms,
            missing_finals,
            failed_calls,
            refused_calls: 0,
            held,
        }
    }

    /// The same level with `refused` calls refused at the upgrade, which change nothing of
    /// whether it held.
    pub fn with_refused(self, refused: usize) -> Self {
        Self {
            refused_calls: refused,
            ..self
        }
    }

    /// Whether anything was measured at this level: a final, a missing one or a failure.
    /// A level that only saw refusals says nothing of what the server holds.
    pub fn measured(&self) -> bool {
        self.time_to_final_ms.count > 0 || self.missing_finals > 0 || self.failed_calls > 0
    }
}

/// The largest level that held with every level below it holding too; a level with nothing
/// measured (only refusals) neither holds nor breaks the run of levels.
pub fn capacity(levels: &[Level]) -> Option<usize> {
    let mut sorted: Vec<&Level> = levels.iter().filter(|l| l.measured()).collect();
    sorted.sort_by_key(|l| l.calls);
    sorted.iter().take_while(|l| l.held).last().map(|l| l.calls)
}

/// `MIN-MAX` or a single value, for the density flags.
pub fn parse_range_f64(s: &str) -> Result<(f64, f64), String> {
    parse_range(s, parse_secs)
}

/// Seconds, 0 or more: `--stagger`, `--ramp`.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("`{s}` is not a number of seconds (0 or more)"))
}

/// `N` or `MIN-MAX` utterances, at least 1.
pub fn parse_range_usize(s: &str) -> Result<(usize, usize), String> {
    parse_range(s, |v| {
        v.trim()
            .parse::<usize>()
            .ok()
            .filter(|x| *x >= 1)
            .ok_or_else(|| format!("`{v}` is not a count of 1 or more"))
    })
}

/// `MIN-MAX` or one value for both, each side read by `parse`.
fn parse_range<T: PartialOrd + Copy>(
    s: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<(T, T), String> {
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (parse(a)?, parse(b)?),
        None => (parse(s)?, parse(s)?),
    };
    if lo > hi {
        return Err(format!("`{s}`: the minimum is above the maximum"));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staggered_calls_spread_with_their_own_seeds_and_pairs_interleave() {
        let s = schedule(Shape::Staggered { over_s: 6.0 }, 3, 2, 10, 20.0);
        let order: Vec<(usize, usize)> = s.iter().map(|x| (x.target, x.call)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
        let offsets: Vec<f64> = s.iter().map(|x| x.offset_ms).collect();
        assert_eq!(offsets, [0.0, 5.0, 2000.0, 2005.0, 4000.0, 4005.0]);
        let seeds: Vec<u64> = s.iter().map(|x| x.seed).collect();
        assert_eq!(seeds, [10, 10, 11, 11, 12, 12]);
    }

    #[test]
    fn burst_calls_start_together_and_play_the_same_timing() {
        let s = schedule(Shape::Burst, 3, 1, 10, 20.0);
        assert!(s.iter().all(|x| x.offset_ms == 0.0 && x.seed == 10));
    }

    #[test]
    fn a_ramp_adds_calls_that_all_end_together() {
        let s = schedule(Shape::Ramp { every_s: 5.0 }, 3, 1, 1, 10.0);
        let ends: Vec<f64> = s
            .iter()
            .map(|x| x.offset_ms + x.duration_s * 1000.0)
            .collect();
        assert_eq!(ends, [20_000.0; 3]);
        let spans: Vec<(f64, f64)> = s
            .iter()
            .map(|x| (x.offset_ms, x.offset_ms + x.duration_s * 1000.0))
            .collect();
        assert_eq!(open_calls(&spans, 1000.0), 1);
        assert_eq!(open_calls(&spans, 7000.0), 2);
        assert_eq!(open_calls(&spans, 19_000.0), 3);
        assert_eq!(open_calls(&spans, 20_000.0), 0);
    }

    #[test]
    fn capacity_is_the_last_level_held_from_the_bottom() {
        let level =
            |calls, p95: f64, missing| Level::new(calls, Stats::of(vec![p95]), missing, 0, 800.0);
        let levels = [
            level(2, 500.0, 0),
            level(1, 300.0, 0),
            level(3, 900.0, 0),
            level(4, 400.0, 0),
        ];
        assert_eq!(capacity(&levels), Some(2));
        assert_eq!(capacity(&[level(1, 300.0, 1)]), None);
    }

    #[test]
    fn a_ramp_call_refused_at_the_upgrade_is_no_failure_and_the_calls_held_count() {
        let call = |from: f64, failed, utterances: Vec<(f64, Option<f64>)>| RampCall {
            dialed_ms: from,
            span: Some((from, 30_000.0)),
            failed,
            refused: false,
            utterances: utterances.into_iter().map(|(t, f)| (t, f, true)).collect(),
        };
        let never_opened = |dialed_ms: f64, refused: bool| RampCall {
            dialed_ms,
            span: None,
            failed: !refused,
            refused,
            // Planned turns, never spoken: not missing finals.
            utterances: vec![(29_000.0, None, true), (31_000.0, None, true)],
        };
        let calls = [
            call(
                0.0,
                false,
                vec![(5_000.0, Some(300.0)), (25_000.0, Some(400.0))],
            ),
            call(10_000.0, false, vec![(15_000.0, Some(350.0))]),
            // Refused at the door while two were open; the next call was taken, and three
            // calls held.
            never_opened(20_000.0, true),
            call(22_000.0, false, vec![(26_000.0, Some(500.0))]),
            // Refused while three were open: a level of refusals only, nothing measured.
            never_opened(28_000.0, true),
        ];
        let levels = ramp_levels(&calls, 800.0);
        let summary: Vec<(usize, usize, usize, usize, bool)> = levels
            .iter()
            .map(|l| {
                (
                    l.calls,
                    l.missing_finals,
                    l.failed_calls,
                    l.refused_calls,
                    l.held,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (1, 0, 0, 0, true),
                (2, 0, 0, 0, true),
                (3, 0, 0, 1, true),
                (4, 0, 0, 1, false)
            ]
        );
        assert!(!levels[3].measured());
        assert_eq!(
            capacity(&levels),
            Some(3),
            "the calls held, not the first refusal's"
        );
        // A call no answer came for failed at the level it would have made.
        let unanswered = [
            call(0.0, false, vec![(5_000.0, Some(300.0))]),
            never_opened(6_000.0, false),
        ];
        let levels = ramp_levels(&unanswered, 800.0);
        assert_eq!((levels[1].calls, levels[1].failed_calls), (2, 1));
        assert_eq!(capacity(&levels), Some(1));
        // A call that started and then lost a final fails where the final went missing.
        let lost = [call(
            0.0,
            true,
            vec![(5_000.0, Some(300.0)), (6_000.0, None)],
        )];
        let levels = ramp_levels(&lost, 800.0);
        assert_eq!((levels[0].missing_finals, levels[0].failed_calls), (1, 1));
        assert_eq!(capacity(&levels), None);
    }

    #[test]
    fn a_ramp_level_is_timed_by_the_customers_finals_and_loses_none_of_either() {
        let call = |utterances| RampCall {
            dialed_ms: 0.0,
            span: Some((0.0, 30_000.0)),
            failed: false,
            refused: false,
            utterances,
        };
        // The assistant's final is slow (a long endpoint on synthetic speech): not timed.
        let slow_assistant = [call(vec![
            (5_000.0, Some(300.0), true),
            (9_000.0, Some(1_900.0), false),
        ])];
        let levels = ramp_levels(&slow_assistant, 800.0);
        assert_eq!(levels[0].time_to_final_ms.count, 1);
        assert!(levels[0].held);
        // Its missing final still breaks the level.
        let lost_assistant = [call(vec![
            (5_000.0, Some(300.0), true),
            (9_000.0, None, false),
        ])];
        let levels = ramp_levels(&lost_assistant, 800.0);
        assert_eq!(levels[0].missing_finals, 1);
        assert!(!levels[0].held);
    }

    #[test]
    fn ranges_parse_or_say_why_not() {
        assert_eq!(parse_range_f64("0.8-1.6"), Ok((0.8, 1.6)));
        assert_eq!(parse_range_f64("2"), Ok((2.0, 2.0)));
        assert!(parse_range_f64("2-1").is_err());
        assert!(parse_range_f64("x").is_err());
        assert_eq!(parse_secs("2.5"), Ok(2.5));
        assert!(parse_secs("-1").is_err());
        assert_eq!(parse_range_usize("3"), Ok((3, 3)));
        assert_eq!(parse_range_usize("1-4"), Ok((1, 4)));
        assert!(parse_range_usize("0").is_err());
    }
}
