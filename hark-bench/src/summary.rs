//! The figures of a run as one table (a column per target, and B/A with `--vs`): printed at
//! the end of a run, and as the Markdown summary a user pastes into an issue.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::report::{self, Stats};
use crate::report_model::{Capacity, Ratios, Report, RunReport};

/// How a figure reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Ms,
    Percent,
    Count,
}

/// One figure of a target: `key` is its dotted path in the JSON report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub key: String,
    pub label: String,
    pub value: f64,
    pub unit: Unit,
}

/// Every figure of a target, in the order the tables show them: what the platform
/// experiences first.
pub fn figures(r: &Report) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut push = |key: String, label: String, value: f64, unit: Unit| {
        out.push(Figure {
            key,
            label,
            value,
            unit,
        });
    };
    let latency: [(&str, &str, &Stats); 3] = [
        ("reply_wait_ms", "reply wait", &r.reply_wait_ms),
        ("time_to_final_ms", "time to final", &r.time_to_final_ms),
        ("first_partial_ms", "first partial", &r.first_partial_ms),
    ];
    for (key, label, s) in latency {
        // No sample is no figure: a server that never sent a final must not read as 0 ms.
        let v = |x: f64| if s.count == 0 { f64::NAN } else { x };
        for (p, v) in [
            ("p50", v(s.p50)),
            ("p95", v(s.p95)),
            ("p99", v(s.p99)),
            ("max", v(s.max)),
            ("mean", v(s.mean)),
        ] {
            push(
                format!("{key}.{p}"),
                format!("{label} {p} (ms)"),
                v,
                Unit::Ms,
            );
        }
        push(
            format!("{key}.count"),
            format!("{label}: utterances"),
            s.count as f64,
            Unit::Count,
        );
    }
    for (ch, t) in [("customer", &r.customer), ("assistant", &r.assistant)] {
        let count = |name: &str, label: &str, v: usize| {
            (format!("{ch}.{name}"), format!("{ch}: {label}"), v as f64)
        };
        push(
            format!("{ch}.wer"),
            format!("{ch}: WER (%)"),
            if t.words == 0 {
                f64::NAN
            } else {
                t.wer * 100.0
            },
            Unit::Percent,
        );
        let ttf = &t.time_to_final_ms;
        for (p, v) in [("p50", ttf.p50), ("p95", ttf.p95)] {
            push(
                format!("{ch}.time_to_final_ms.{p}"),
                format!("{ch}: time to final {p} (ms)"),
                if ttf.count == 0 { f64::NAN } else { v },
                Unit::Ms,
            );
        }
        for (key, label, v) in [
            count("premature_ends", "premature turn ends", t.premature_ends),
            count("inner_pauses", "pauses inside turns", t.inner_pauses),
            count(
                "terminal_before_last",
                "finals ending in . ? ! before the turn's last",
                t.terminal_before_last,
            ),
            count(
                "turns_ending_terminal",
                "turns ending in . ? !",
                t.turns_ending_terminal,
            ),
            count(
                "turns_ending_answerable",
                "turns ending in . ? ! or a digit",
                t.turns_ending_answerable,
            ),
            count("turns_with_final", "turns with a final", t.turns_with_final),
            count("missing_finals", "missing finals", t.missing_finals),
            count(
                "partial_words_lost",
                "partial words lost",
                t.partial_words_lost,
            ),
            count("leaked_words", "leaked words", t.leaked_words),
            count("duplicate_finals", "duplicate finals", t.duplicate_finals),
            count("repeated_words", "repeated words", t.repeated_words),
        ] {
            push(key, label, v, Unit::Count);
        }
    }
    for (key, label, v) in [
        (
            "stray_transcripts",
            "stray transcripts",
            r.stray_transcripts,
        ),
        ("failed_calls", "failed calls", r.failed_calls),
        (
            "refused_calls",
            "calls refused at the upgrade",
            r.refused_calls,
        ),
        ("transport_errors", "transport errors", r.transport_errors),
        ("unparseable", "unparseable messages", r.unparseable),
    ] {
        push(key.into(), label.into(), v as f64, Unit::Count);
    }
    out
}

/// With two targets, the second's figures over the first's: the report's `ratios`.
pub fn ratios_between(targets: &[Report]) -> Option<Ratios> {
    match targets {
        [a, b] => Some(Ratios {
            numerator: b.label.clone(),
            denominator: a.label.clone(),
            figures: ratios(a, b),
        }),
        _ => None,
    }
}

/// B ÷ A for every figure; None where A's is 0 (or either is not a number).
pub fn ratios(a: &Report, b: &Report) -> BTreeMap<String, Option<f64>> {
    figures(a)
        .into_iter()
        .zip(figures(b))
        .map(|(fa, fb)| (fa.key, ratio(fa.value, fb.value)))
        .collect()
}

pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (a != 0.0 && a.is_finite() && b.is_finite()).then(|| b / a)
}

fn cell(value: f64, unit: Unit) -> String {
    if !value.is_finite() {
        return "–".into();
    }
    match unit {
        Unit::Ms => format!("{value:.0}"),
        Unit::Percent => format!("{value:.1}"),
        Unit::Count => format!("{value:.0}"),
    }
}

/// A Markdown table whose columns line up, so it reads in a terminal as well.
fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .chain([&header[i]])
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(3)
                .max(3)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut s = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i == 0 {
                let _ = write!(s, " {c}{} |", " ".repeat(pad));
            } else {
                let _ = write!(s, " {}{c} |", " ".repeat(pad));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(header);
    out.push('|');
    for (i, w) in widths.iter().enumerate() {
        if i == 0 {
            let _ = write!(out, "{}|", "-".repeat(w + 2));
        } else {
            let _ = write!(out, "{}:|", "-".repeat(w + 1));
        }
    }
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// How a row's cell shows its figures.
enum Show {
    /// Each figure (by key), " / " apart.
    Each(&'static [&'static str]),
    /// `N of T` (with `noun` after T), and its share in % with `percent`: `part` of
    /// `whole`, by key. B/A compares the shares.
    Of {
        part: &'static str,
        whole: &'static str,
        noun: &'static str,
        percent: bool,
    },
}

/// The table's rows: a label and what its cells show.
const ROWS: &[(&str, Show)] = &[
    (
        "reply wait p50 / p95 / p99 / max, customer (ms)",
        Show::Each(&[
            "reply_wait_ms.p50",
            "reply_wait_ms.p95",
            "reply_wait_ms.p99",
            "reply_wait_ms.max",
        ]),
    ),
    (
        "time to final p50 / p95 / p99 / max (ms)",
        Show::Each(&[
            "time_to_final_ms.p50",
            "time_to_final_ms.p95",
            "time_to_final_ms.p99",
            "time_to_final_ms.max",
        ]),
    ),
    (
        "first partial p50 / p95 / p99 / max (ms)",
        Show::Each(&[
            "first_partial_ms.p50",
            "first_partial_ms.p95",
            "first_partial_ms.p99",
            "first_partial_ms.max",
        ]),
    ),
    (
        "utterances with a final",
        Show::Each(&["time_to_final_ms.count"]),
    ),
    (
        "time to final p50 / p95, customer (ms)",
        Show::Each(&[
            "customer.time_to_final_ms.p50",
            "customer.time_to_final_ms.p95",
        ]),
    ),
    (
        "time to final p50 / p95, assistant (ms)",
        Show::Each(&[
            "assistant.time_to_final_ms.p50",
            "assistant.time_to_final_ms.p95",
        ]),
    ),
    (
        "WER customer / assistant (%)",
        Show::Each(&["customer.wer", "assistant.wer"]),
    ),
    (
        "premature turn ends, customer (of pauses inside turns)",
        Show::Of {
            part: "customer.premature_ends",
            whole: "customer.inner_pauses",
            noun: " pauses",
            percent: true,
        },
    ),
    (
        "finished turns ending in . ? ! or a digit, customer",
        Show::Of {
            part: "customer.turns_ending_answerable",
            whole: "customer.turns_with_final",
            noun: "",
            percent: false,
        },
    ),
    (
        "missing finals (cust. / asst.)",
        Show::Each(&["customer.missing_finals", "assistant.missing_finals"]),
    ),
    (
        "partial words lost (cust. / asst.)",
        Show::Each(&[
            "customer.partial_words_lost",
            "assistant.partial_words_lost",
        ]),
    ),
    (
        "leaked words (cust. / asst.)",
        Show::Each(&["customer.leaked_words", "assistant.leaked_words"]),
    ),
    (
        "duplicate finals (cust. / asst.)",
        Show::Each(&["customer.duplicate_finals", "assistant.duplicate_finals"]),
    ),
    (
        "repeated words (cust. / asst.)",
        Show::Each(&["customer.repeated_words", "assistant.repeated_words"]),
    ),
    ("stray transcripts", Show::Each(&["stray_transcripts"])),
    ("failed calls", Show::Each(&["failed_calls"])),
    (
        "calls refused at the upgrade",
        Show::Each(&["refused_calls"]),
    ),
    ("transport errors", Show::Each(&["transport_errors"])),
    ("unparseable messages", Show::Each(&["unparseable"])),
];

/// The figures table: one column per target, then B/A with two targets.
pub fn figures_table(run: &RunReport) -> String {
    let mut header = vec!["figure".to_string()];
    header.extend(run.targets.iter().map(|t| t.label.clone()));
    let pair = run.targets.len() == 2;
    if pair {
        header.push("B/A".into());
    }
    let per_target: Vec<BTreeMap<String, Figure>> = run
        .targets
        .iter()
        .map(|t| figures(t).into_iter().map(|f| (f.key.clone(), f)).collect())
        .collect();
    let join = |cells: Vec<String>| cells.join(" / ");
    let show_ratio = |r: Option<f64>| r.map_or_else(|| "–".into(), |r| format!("{r:.2}"));
    let mut rows = Vec::new();
    for (label, show) in ROWS {
        let mut row = vec![label.to_string()];
        match show {
            Show::Each(keys) => {
                for t in &per_target {
                    row.push(join(
                        keys.iter()
                            .map(|k| {
                                t.get(*k)
                                    .map_or_else(|| "?".into(), |f| cell(f.value, f.unit))
                            })
                            .collect(),
                    ));
                }
                if let [a, b] = per_target.as_slice() {
                    row.push(join(
                        keys.iter()
                            .map(|k| {
                                show_ratio(
                                    a.get(*k)
                                        .zip(b.get(*k))
                                        .and_then(|(a, b)| ratio(a.value, b.value)),
                                )
                            })
                            .collect(),
                    ));
                }
            }
            &Show::Of {
                part,
                whole,
                noun,
                percent,
            } => {
                let of = |t: &BTreeMap<String, Figure>| {
                    t.get(part)
                        .zip(t.get(whole))
                        .map(|(p, w)| (p.value, w.value))
                };
                for t in &per_target {
                    row.push(
                        of(t).map_or_else(|| "?".into(), |(p, w)| share_cell(p, w, noun, percent)),
                    );
                }
                if let [a, b] = per_target.as_slice() {
                    let share = |t| of(t).filter(|(_, w)| *w > 0.0).map(|(p, w)| p / w);
                    let r = share(a).zip(share(b)).and_then(|(a, b)| ratio(a, b));
                    row.push(show_ratio(r));
                }
            }
        }
        rows.push(row);
    }
    table(&header, &rows)
}

/// `N of T` (with `noun` after T), then its share, `(x.x %)`, with `percent` and a T.
fn share_cell(part: f64, whole: f64, noun: &str, percent: bool) -> String {
    let mut s = format!("{part:.0} of {whole:.0}{noun}");
    if percent && whole > 0.0 {
        let _ = write!(s, " ({:.1} %)", part / whole * 100.0);
    }
    s
}

/// Close codes and failures per target, one line each.
fn endings(run: &RunReport, bullet: &str) -> String {
    let mut out = String::new();
    for t in &run.targets {
        let codes: Vec<String> = t
            .close_codes
            .iter()
            .map(|c| {
                let code = c.code.map_or_else(|| "no code".into(), |c| c.to_string());
                if c.reason.is_empty() {
                    format!("{code} ×{}", c.count)
                } else {
                    format!("{code} {} ×{}", c.reason, c.count)
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "{bullet}{}: close codes {}; failed calls {} of {} opened",
            t.label,
            codes.join(", "),
            t.failed_calls,
            t.calls.saturating_sub(t.refused_calls),
        );
        // Refusals from older reports have no bodies: the count says enough.
        let refusals = if t.refusals.is_empty() {
            String::new()
        } else {
            format!(" ({})", report::describe_refusals(&t.refusals))
        };
        if t.refused_calls > 0 {
            let _ = writeln!(
                out,
                "{bullet}{}: refused at the upgrade {} of {} calls{refusals}: not failures \
                 (the platform takes them to its fallback at once), and out of every figure",
                t.label, t.refused_calls, t.calls,
            );
        }
        for c in t.per_call.iter().filter(|c| c.failed()) {
            let why = c
                .errors
                .first()
                .cloned()
                .or_else(|| c.transport_error.clone())
                .unwrap_or_else(|| {
                    format!(
                        "closed {} {}",
                        c.close_code.map_or_else(|| "-".into(), |c| c.to_string()),
                        c.close_reason.clone().unwrap_or_default()
                    )
                });
            let _ = writeln!(out, "{bullet}  call {}: {why}", c.call);
        }
    }
    out
}

/// What `--find-capacity` found for one target, saying what it counted: with `--ramp`,
/// the calls held open at once (refusals on the way are not failures); in steps, the calls
/// offered at once in a fresh run per count, some of which the server may have refused.
pub fn capacity_headline(label: &str, cap: &Capacity, max_p95_ms: f64) -> String {
    let refused: usize = cap.levels.iter().map(|l| l.refused_calls).sum();
    let first_refused = cap
        .levels
        .iter()
        .filter(|l| l.refused_calls > 0)
        .map(|l| l.calls)
        .min();
    if cap.mode == "ramp" {
        let held = cap.calls.map_or_else(
            || "not even one call held".into(),
            |n| format!("held {n} calls open at once"),
        );
        let refusals = first_refused.map_or_else(String::new, |from| {
            format!(
                "; refused {refused} at the upgrade, the first with {} open \
                 (not failures: the calls held are what counts)",
                from.saturating_sub(1)
            )
        });
        return format!(
            "capacity of {label} (ramp: every level's p95 time to final ≤ {max_p95_ms:.0} ms, \
             no admitted call failed): {held}{refusals}"
        );
    }
    let held = cap.calls.map_or_else(
        || "not even one call held".into(),
        |n| format!("{n} calls offered at once held"),
    );
    let refusals = match (first_refused, cap.calls) {
        (Some(from), Some(n)) if from <= n => {
            let at = cap.levels.iter().find(|l| l.calls == n);
            let admitted = at.map_or(n, |l| n.saturating_sub(l.refused_calls));
            format!(
                ", the server refusing calls at the upgrade from {from} offered on \
                 ({admitted} of {n} admitted)"
            )
        }
        _ => String::new(),
    };
    format!(
        "capacity of {label} (steps, a fresh run per count: p95 time to final ≤ \
         {max_p95_ms:.0} ms, no failure): {held}{refusals}"
    )
}

/// A capacity level's columns per target.
const COLUMNS: usize = 6;

/// Capacity per target, and its levels as a table.
fn capacity(run: &RunReport, bullet: &str) -> String {
    let mut out = String::new();
    let with: Vec<&Report> = run
        .targets
        .iter()
        .filter(|t| t.capacity.is_some())
        .collect();
    if with.is_empty() {
        return out;
    }
    let mut header = vec!["calls".to_string()];
    let mut levels: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (k, t) in with.iter().enumerate() {
        let Some(cap) = &t.capacity else { continue };
        let _ = writeln!(
            out,
            "{bullet}{}",
            capacity_headline(&t.label, cap, run.settings.max_p95_ms)
        );
        header.extend([
            format!("{} ttf p50", t.label),
            "p95".into(),
            "missing".into(),
            "failed".into(),
            "refused".into(),
            "held".into(),
        ]);
        for l in &cap.levels {
            // No final at a level is no figure, not 0 ms.
            let ms = |v: f64| {
                let v = if l.time_to_final_ms.count == 0 {
                    f64::NAN
                } else {
                    v
                };
                cell(v, Unit::Ms)
            };
            let row = levels
                .entry(l.calls)
                .or_insert_with(|| vec!["".into(); COLUMNS * with.len()]);
            row.splice(
                COLUMNS * k..COLUMNS * (k + 1),
                [
                    ms(l.time_to_final_ms.p50),
                    ms(l.time_to_final_ms.p95),
                    l.missing_finals.to_string(),
                    l.failed_calls.to_string(),
                    l.refused_calls.to_string(),
                    match (l.measured(), l.held) {
                        (false, _) => "–",
                        (true, true) => "yes",
                        (true, false) => "no",
                    }
                    .into(),
                ],
            );
        }
    }
    let rows: Vec<Vec<String>> = levels
        .into_iter()
        .map(|(calls, rest)| std::iter::once(calls.to_string()).chain(rest).collect())
        .collect();
    out.push('\n');
    out.push_str(&table(&header, &rows));
    out
}

/// The settings in one line.
fn settings_line(run: &RunReport) -> String {
    let s = &run.settings;
    let servers: Vec<String> = s
        .labels
        .iter()
        .zip(&s.urls)
        .zip(["A", "B"])
        .map(|((label, url), which)| {
            if label == url {
                format!("{which} = `{url}`")
            } else {
                format!("{which} = {label} `{url}`")
            }
        })
        .collect();
    let d = &s.density;
    let per_turn = if d.turn_utterances.0 == d.turn_utterances.1 {
        d.turn_utterances.0.to_string()
    } else {
        format!("{}–{}", d.turn_utterances.0, d.turn_utterances.1)
    };
    let speech = match &s.corpus {
        Some(dir) => format!("corpus `{dir}`"),
        None => "built-in clips".into(),
    };
    let line = match (s.phone_band, s.mu_law) {
        (true, true) => ", phone band + μ-law",
        (true, false) => ", phone band",
        _ => "",
    };
    // How long the calls are: --duration, unless they play the recordings as they are.
    let plural = if s.calls == 1 { "" } else { "s" };
    let calls = if s.each {
        format!(
            "{} call{plural} saying every utterance of the {speech} once between them",
            s.calls
        )
    } else if s.recorded {
        format!("{} call{plural} of {speech}, each played whole", s.calls)
    } else {
        format!(
            "{} call{plural} × {:.0} s of {speech}",
            s.calls, s.duration_s
        )
    };
    format!(
        "{}; {calls}{line}, {}, {} Hz, {} ms frames, pauses {:.1}–{:.1} s, {per_turn} utterance(s) per turn, seed {}; {} cores; hark-bench {}",
        servers.join(", "),
        s.shape.describe(),
        s.rate,
        s.frame_ms,
        d.pause_s.0,
        d.pause_s.1,
        s.seed,
        s.machine_cores,
        run.tool_version
    )
}

/// What the terminal shows after the per-call tables.
pub fn text(run: &RunReport) -> String {
    render(run, false)
}

/// The summary to paste into an issue.
pub fn markdown(run: &RunReport) -> String {
    render(run, true)
}

/// The same summary for the terminal or as Markdown (headings and bullets).
fn render(run: &RunReport, md: bool) -> String {
    let mut out = String::from(if md { "### hark bench\n\n" } else { "\n" });
    let _ = writeln!(out, "{}\n", settings_line(run));
    if run.targets.len() == 2 {
        let _ = writeln!(
            out,
            "B/A = {} ÷ {} (below 1: B is lower){}",
            run.targets[1].label,
            run.targets[0].label,
            if md { ".\n" } else { "" }
        );
    }
    out.push_str(&figures_table(run));
    let bullet = if md { "- " } else { "" };
    out.push_str(if md {
        "\n**Close codes and failures**\n\n"
    } else {
        "\n"
    });
    out.push_str(&endings(run, bullet));
    let cap = capacity(run, bullet);
    if !cap.is_empty() {
        out.push_str(if md { "\n**Capacity**\n\n" } else { "\n" });
        out.push_str(&cap);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Channel;
    use crate::report::totals;
    use crate::report_model::{CloseCount, Settings};
    use crate::shape::Shape;

    fn target(label: &str, ttf_p95: f64, failed: usize) -> Report {
        Report {
            label: label.into(),
            url: format!("ws://{label}"),
            calls: 2,
            duration_s: 10.0,
            time_to_final_ms: Stats {
                count: 8,
                p50: 200.0,
                p95: ttf_p95,
                p99: ttf_p95,
                max: ttf_p95,
                mean: 250.0,
            },
            first_partial_ms: Stats::default(),
            reply_wait_ms: Stats::default(),
            customer: totals(&[], Channel::Customer),
            assistant: totals(&[], Channel::Assistant),
            failed_calls: failed,
            refused_calls: 0,
            refusals: Vec::new(),
            stray_transcripts: 0,
            transport_errors: 0,
            unparseable: 0,
            close_codes: vec![CloseCount {
                code: Some(1000),
                reason: String::new(),
                count: 2,
            }],
            timing: Vec::new(),
            capacity: None,
            per_call: Vec::new(),
        }
    }

    fn run(targets: Vec<Report>) -> RunReport {
        RunReport {
            schema_version: crate::report_model::SCHEMA_VERSION,
            tool_version: "0".into(),
            started_unix_s: 0,
            settings: Settings {
                urls: targets.iter().map(|t| t.url.clone()).collect(),
                labels: targets.iter().map(|t| t.label.clone()).collect(),
                calls: 2,
                duration_s: 10.0,
                each: false,
                recorded: false,
                rate: 16000,
                frame_ms: 20,
                shape: Shape::Burst,
                density: Default::default(),
                seed: 1,
                machine_cores: 2,
                find_capacity: false,
                max_p95_ms: 800.0,
                max_calls: 2,
                corpus: None,
                phone_band: false,
                mu_law: false,
            },
            targets,
            ratios: None,
        }
    }

    #[test]
    fn ratios_are_b_over_a_and_none_over_zero() {
        let r = ratios(&target("a", 400.0, 0), &target("b", 600.0, 1));
        assert_eq!(r["time_to_final_ms.p95"], Some(1.5));
        assert_eq!(r["time_to_final_ms.p50"], Some(1.0));
        assert_eq!(r["failed_calls"], None);
        assert_eq!(ratio(2.0, 1.0), Some(0.5));
        assert_eq!(ratio(0.0, 1.0), None);
    }

    #[test]
    fn markdown_has_the_settings_the_table_and_the_close_codes() {
        let md = markdown(&run(vec![
            target("embedded", 400.0, 0),
            target("cloud", 600.0, 0),
        ]));
        assert!(md.contains("burst (in phase)"), "{md}");
        assert!(md.contains("| figure"), "{md}");
        assert!(md.contains(" embedded |"), "{md}");
        assert!(md.contains("B/A"), "{md}");
        let row = md
            .lines()
            .find(|l| l.starts_with("| time to final p50 / p95"))
            .unwrap_or_default();
        assert!(
            row.contains("200 / 400 / 400 / 400")
                && row.contains("200 / 600 / 600 / 600")
                && row.contains("1.00 / 1.50 / 1.50 / 1.50"),
            "{row}"
        );
        assert!(md.contains("WER customer / assistant (%)"));
        // Every figure a row names exists.
        assert!(!md.contains(" ? |") && !md.contains(" ? /"), "{md}");
        assert!(md.contains("embedded: close codes 1000 ×2"), "{md}");
        // One target: no ratio column.
        assert!(!markdown(&run(vec![target("a", 1.0, 0)])).contains("B/A"));
    }

    /// The customer's premature turn ends read as a share of the pauses inside turns, and
    /// its finished turns the platform answers soon as a share of those with a final; B/A
    /// compares the shares.
    #[test]
    fn premature_ends_and_answerable_turns_show_as_shares() {
        let mut a = target("a", 400.0, 0);
        let mut b = target("b", 400.0, 0);
        (a.customer.premature_ends, a.customer.inner_pauses) = (3, 40);
        (b.customer.premature_ends, b.customer.inner_pauses) = (6, 40);
        (
            a.customer.turns_ending_answerable,
            a.customer.turns_with_final,
        ) = (18, 20);
        (
            b.customer.turns_ending_answerable,
            b.customer.turns_with_final,
        ) = (9, 10);
        // The assistant's pauses are not the customer's.
        a.assistant.premature_ends = 7;
        let md = markdown(&run(vec![a, b]));
        let row = |start: &str| {
            md.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_default()
                .split('|')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            row("| premature turn ends, customer")[2..5],
            ["3 of 40 pauses (7.5 %)", "6 of 40 pauses (15.0 %)", "2.00"],
            "{md}"
        );
        assert_eq!(
            row("| finished turns ending in . ? ! or a digit, customer")[2..5],
            ["18 of 20", "9 of 10", "1.00"],
            "{md}"
        );
        assert!(
            md.contains("| reply wait p50 / p95 / p99 / max, customer (ms)"),
            "{md}"
        );
        // No pauses: none of none, no share and no ratio.
        let text = text(&run(vec![target("a", 1.0, 0), target("b", 1.0, 0)]));
        let none = text
            .lines()
            .find(|l| l.starts_with("| premature turn ends"))
            .unwrap_or_default();
        assert!(
            none.matches(" 0 of 0 pauses |").count() == 2 && none.ends_with("– |"),
            "{none}"
        );
    }

    /// A ramp's capacity is the calls held open at once, its refusals on the way counted
    /// but no failures; a step's is the calls offered at once, saying how many were taken.
    #[test]
    fn the_capacity_headline_says_what_was_counted_and_what_was_refused() {
        use crate::shape::{Level, capacity as held};
        let level = |calls, p95: f64, refused| {
            Level::new(calls, Stats::of(vec![p95]), 0, 0, 800.0).with_refused(refused)
        };
        // Refused at the door with two open, then three held.
        let levels = vec![
            level(1, 300.0, 0),
            level(2, 400.0, 0),
            level(3, 500.0, 1),
            Level::new(4, Stats::default(), 0, 0, 800.0).with_refused(2),
        ];
        let ramp = Capacity {
            mode: "ramp".into(),
            calls: held(&levels),
            levels,
        };
        let line = capacity_headline("hark", &ramp, 800.0);
        assert!(line.contains("held 3 calls open at once"), "{line}");
        assert!(
            line.contains("refused 3 at the upgrade, the first with 2 open"),
            "{line}"
        );
        let mut r = run(vec![target("hark", 400.0, 0)]);
        r.targets[0].capacity = Some(ramp);
        let md = markdown(&r);
        let row: Vec<&str> = md
            .lines()
            .find(|l| l.starts_with("| 4 "))
            .unwrap_or_default()
            .split('|')
            .map(str::trim)
            .collect();
        assert_eq!(row, ["", "4", "–", "–", "0", "0", "2", "–", ""], "{md}");

        let levels = vec![level(1, 300.0, 0), level(2, 400.0, 0), level(3, 500.0, 1)];
        let steps = Capacity {
            mode: "steps".into(),
            calls: held(&levels),
            levels,
        };
        let line = capacity_headline("hark", &steps, 800.0);
        assert!(line.contains("3 calls offered at once held"), "{line}");
        assert!(
            line.contains("refusing calls at the upgrade from 3 offered on (2 of 3 admitted)"),
            "{line}"
        );
    }

    /// The settings line says how long the calls were as the flags' help says: --duration,
    /// except with --each (every utterance once) and for real calls (played whole).
    #[test]
    fn the_settings_line_gives_the_calls_length_as_the_flags_say() {
        let mut r = run(vec![target("a", 1.0, 0)]);
        assert!(
            settings_line(&r).contains("2 calls × 10 s of built-in clips"),
            "{}",
            settings_line(&r)
        );
        r.settings.corpus = Some("my-calls".into());
        (r.settings.each, r.settings.recorded) = (true, true);
        let t = settings_line(&r);
        assert!(
            t.contains("2 calls saying every utterance of the corpus `my-calls` once"),
            "{t}"
        );
        assert!(!t.contains("10 s"), "{t}");
        r.settings.each = false;
        let t = settings_line(&r);
        assert!(
            t.contains("2 calls of corpus `my-calls`, each played whole"),
            "{t}"
        );
        assert!(!t.contains("10 s"), "{t}");
    }
}
