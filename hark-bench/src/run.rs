//! `hark bench`: the platform's side, simulated. Opens N concurrent calls to any server that
//! speaks the custom-transcriber protocol (or to two, side by side, with `--vs`), plays a
//! conversation on each, and measures per utterance how fast and how well the transcripts
//! come back.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::BenchArgs;
use crate::client::{Call, DialError, Received, Target};
use crate::conversation::Conversation;
use crate::plot;
use crate::protocol::Channel;
use crate::report::{self, CallResult, Stats};
use crate::report_model::{
    CallTiming, Capacity, CloseCount, Report, RunReport, SCHEMA_VERSION, Settings,
};
use crate::rescore;
use crate::shape::{self, Level, Start};
use crate::summary;
use crate::user_corpus::{Conversations, Speech};

/// How long the bench waits for a server that is still loading its recognizer (a first
/// start fetches the models).
const READY_WAIT: Duration = Duration::from_secs(600);

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(saved) = &args.rescore {
        let run = rescore::rescore_file(saved)?;
        show(&run, summary_shown(&args));
        return write_outputs(&args, &run);
    }
    // Bad labels are refused before the clips are fetched, and so is a server that will
    // not take the calls' credentials or this URL: a run of refused calls measures nothing.
    // A full server (503) is measured: its refusals are what a capacity run looks for.
    let targets = args.targets()?;
    for (i, (_, target)) in targets.iter().enumerate() {
        if let Some(tag) = args.foreign_to_the_clips(&target.url) {
            eprintln!(
                "warning: {} asks for language {tag:?}, but the built-in clips are English: \
                 expect nearly every word wrong (give a --corpus of {tag} speech)",
                target.url
            );
        }
        Call::reachable(target).await.map_err(anyhow::Error::msg)?;
        let asked = Instant::now();
        let mut said = false;
        loop {
            match Call::refused(target).await {
                Some(r) if matches!(r.status, 401 | 403) => {
                    bail!("{}", credentials_refused(target, r.status, i == 1));
                }
                // A server started a moment ago is still loading its recognizer (hark's 503
                // says "not ready"): wait for it rather than measure a row of refusals.
                Some(r) if r.status == 503 && r.body.contains("not ready") => {
                    if asked.elapsed() > READY_WAIT {
                        bail!(
                            "{} was still not ready after {} s: {r}",
                            target.url,
                            READY_WAIT.as_secs()
                        );
                    }
                    if !said {
                        eprintln!(
                            "{}: the server is not ready yet ({r}); waiting for it, up to {} s",
                            target.url,
                            READY_WAIT.as_secs()
                        );
                        said = true;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Some(r) if r.status != 503 => bail!("{} refused the call with {r}", target.url),
                _ => break,
            }
        }
        if said {
            eprintln!(
                "{}: ready after {:.0} s",
                target.url,
                asked.elapsed().as_secs_f64()
            );
        }
    }
    let corpus = Speech::for_source(&args.source()).await?;
    let run = if args.find_capacity {
        find_capacity(&args, &corpus).await?
    } else {
        measure_run(&args, &corpus, args.calls).await?
    };
    show(&run, summary_shown(&args));
    write_outputs(&args, &run)?;
    if args.find_capacity {
        return Ok(());
    }
    // A run that measured nothing, or calls the platform would have lost, is not a success
    // for a script or CI job to read: exit 1 (README, "Exit status").
    for t in &run.targets {
        if !t.per_call.is_empty() && t.refused_calls == t.per_call.len() {
            let why = t
                .refusals
                .first()
                .map(|r| format!(": HTTP {} {:?}", r.status, r.body))
                .unwrap_or_default();
            bail!(
                "{} admitted none of the {} calls{why}; the run measured nothing",
                t.url,
                t.refused_calls
            );
        }
    }
    let failed: usize = run.targets.iter().map(|t| t.failed_calls).sum();
    if failed > 0 {
        bail!("{failed} calls failed");
    }
    Ok(())
}

/// The per-call tables of every target, then the summary unless `with_summary` is false.
pub fn show(run: &RunReport, with_summary: bool) {
    for t in &run.targets {
        if run.targets.len() > 1 {
            println!("== {} ({})", t.label, t.url);
        }
        print!(
            "{}",
            report::table(&t.per_call, &t.time_to_final_ms, &t.first_partial_ms)
        );
    }
    if with_summary {
        print!("{}", summary::text(run));
    }
}

/// Whether the terminal summary is printed: not with `--markdown -`, which prints the same
/// figures as Markdown on stdout (both would show the table twice).
fn summary_shown(args: &BenchArgs) -> bool {
    args.markdown.as_deref() != Some(Path::new("-"))
}

/// What to do about a server that answered the upgrade 401 or 403; `vs`: the server is
/// the `--vs` one, whose credentials have flags of their own.
fn credentials_refused(target: &Target, status: u16, vs: bool) -> String {
    let (secret, bearer, env) = if vs {
        ("--vs-secret", "--vs-bearer", "HARK_BENCH_VS_")
    } else {
        ("--secret", "--bearer", "HARK_BENCH_")
    };
    let given = match (&target.secret, &target.bearer) {
        (None, None) => "no credential was given".to_string(),
        (Some(_), None) => format!("the secret given ({env}SECRET or {secret}) was refused"),
        (None, Some(_)) => format!("the bearer token given ({env}BEARER or {bearer}) was refused"),
        (Some(_), Some(_)) => format!(
            "neither the secret ({env}SECRET, {secret}) nor the bearer token ({env}BEARER, \
             {bearer}) given was taken"
        ),
    };
    format!(
        "{} refused the call with HTTP {status}: {given}. Give the server's secret in \
         {env}SECRET (or {secret} S; sent as x-vapi-secret, hark serve's HARK_SECRET), or a \
         bearer token in {env}BEARER (or {bearer} T; sent as Authorization: Bearer, one of hark \
         serve's HARK_BEARER_TOKENS)",
        target.url
    )
}

/// Plays `calls` concurrent conversations on `--url` and measures them: the first target's
/// report of [`measure_run`].
pub async fn measure(
    args: &BenchArgs,
    corpus: &(impl Conversations + ?Sized),
    calls: usize,
) -> anyhow::Result<Report> {
    let mut run = measure_run(args, corpus, calls).await?;
    Ok(run.targets.remove(0))
}

/// Plays `calls` conversations on every target in the run's shape and measures them.
pub async fn measure_run(
    args: &BenchArgs,
    corpus: &(impl Conversations + ?Sized),
    calls: usize,
) -> anyhow::Result<RunReport> {
    let targets = args.targets()?;
    let shape = args.shape();
    let density = args.density();
    let starts = shape::schedule(shape, calls, targets.len(), args.seed, args.duration);
    // One conversation per call, shared by the targets; a burst's calls share one (each
    // real call still plays its own recording).
    let mut built: HashMap<(u64, u64, usize), Arc<Conversation>> = HashMap::new();
    let mut conversations = Vec::with_capacity(calls);
    for s in starts.iter().filter(|s| s.target == 0) {
        let key = (s.seed, s.duration_s.to_bits(), s.call % corpus.variants());
        let conv = match built.get(&key) {
            Some(c) => c.clone(),
            None => {
                let c = Arc::new(
                    corpus
                        .conversation(args.rate, s.duration_s, s.seed, s.call, &density)
                        .context("cannot build the conversations")?,
                );
                built.insert(key, c.clone());
                c
            }
        };
        conversations.push(conv);
    }
    let end_s = starts
        .iter()
        .map(|s| s.offset_ms / 1000.0 + conversations[s.call].duration_secs())
        .fold(0.0, f64::max);
    let bar = ProgressBar::new(end_s.ceil() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} s {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("{calls} calls × {}", targets.len()));
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t0 = Instant::now();
    let ticker = {
        let bar = bar.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                bar.set_position(t0.elapsed().as_secs());
            }
        })
    };
    let frame_ms = args.frame_ms.max(1);
    let due0 = tokio::time::Instant::from_std(t0);
    let mut tasks = Vec::with_capacity(starts.len());
    for s in &starts {
        let target = targets[s.target].1.clone();
        let conv = conversations[s.call].clone();
        let Start {
            target: which,
            call,
            offset_ms,
            ..
        } = *s;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(due0 + Duration::from_secs_f64(offset_ms / 1000.0)).await;
            let dialed_ms = ms_since(t0, Instant::now());
            let (log, from, started) = play(&target, &conv, frame_ms).await;
            let timing = CallTiming {
                call,
                dialed_ms,
                audio_from_ms: ms_since(t0, from),
                // A call that never started was never open.
                audio_s: if started { conv.duration_secs() } else { 0.0 },
            };
            (which, timing, report::analyze(call, &conv, &log, from))
        }));
    }
    let mut per_target: Vec<Vec<(CallTiming, CallResult)>> =
        targets.iter().map(|_| Vec::new()).collect();
    for t in tasks {
        let (which, timing, result) = t.await.context("a call task panicked")?;
        per_target[which].push((timing, result));
    }
    ticker.abort();
    bar.finish_and_clear();
    let longest = conversations
        .iter()
        .map(|c| c.duration_secs())
        .fold(0.0, f64::max);
    let reports: Vec<Report> = targets
        .iter()
        .zip(per_target)
        .map(|((label, target), mut calls)| {
            calls.sort_by_key(|(t, _)| t.call);
            target_report(label, &target.url, longest, calls)
        })
        .collect();
    let ratios = summary::ratios_between(&reports);
    Ok(RunReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_s,
        settings: Settings {
            urls: targets.iter().map(|(_, t)| t.url.clone()).collect(),
            labels: targets.iter().map(|(l, _)| l.clone()).collect(),
            calls,
            duration_s: args.duration,
            each: args.each,
            recorded: corpus.recorded(),
            rate: args.rate,
            frame_ms: args.frame_ms,
            shape,
            density,
            seed: args.seed,
            machine_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            find_capacity: args.find_capacity,
            max_p95_ms: args.max_p95_ms,
            max_calls: args.max_calls,
            corpus: args.corpus.as_ref().map(|d| d.display().to_string()),
            phone_band: args.phone_band,
            mu_law: args.mu_law,
        },
        targets: reports,
        ratios,
    })
}

fn ms_since(t0: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(t0).as_secs_f64() * 1000.0
}

/// One target's figures from its calls.
fn target_report(
    label: &str,
    url: &str,
    duration_s: f64,
    calls: Vec<(CallTiming, CallResult)>,
) -> Report {
    let (timing, per_call): (Vec<CallTiming>, Vec<CallResult>) = calls.into_iter().unzip();
    let all: Vec<_> = per_call.iter().flat_map(|c| c.utterances.clone()).collect();
    // How the calls that opened ended: a refused call has no close to count.
    let mut closes: BTreeMap<(Option<u16>, String), usize> = BTreeMap::new();
    for c in per_call.iter().filter(|c| c.refused.is_none()) {
        *closes
            .entry((c.close_code, c.close_reason.clone().unwrap_or_default()))
            .or_default() += 1;
    }
    Report {
        label: label.to_string(),
        url: url.to_string(),
        calls: per_call.len(),
        duration_s,
        time_to_final_ms: Stats::of(all.iter().filter_map(|u| u.time_to_final_ms).collect()),
        first_partial_ms: Stats::of(all.iter().filter_map(|u| u.first_partial_ms).collect()),
        reply_wait_ms: report::reply_waits(&per_call),
        customer: report::overall(&per_call, Channel::Customer),
        assistant: report::overall(&per_call, Channel::Assistant),
        failed_calls: per_call.iter().filter(|c| c.failed()).count(),
        refused_calls: per_call.iter().filter(|c| c.refused.is_some()).count(),
        refusals: report::refusals(&per_call),
        stray_transcripts: per_call.iter().map(|c| c.stray_transcripts).sum(),
        transport_errors: per_call
            .iter()
            .filter(|c| c.transport_error.is_some())
            .count(),
        unparseable: per_call.iter().map(|c| c.unparseable).sum(),
        close_codes: closes
            .into_iter()
            .map(|((code, reason), count)| CloseCount {
                code,
                reason,
                count,
            })
            .collect(),
        timing,
        capacity: None,
        per_call,
    }
}

/// How long to keep listening after the last frame, for the last finals.
const GRACE: Duration = Duration::from_millis(1500);

/// Plays one conversation as a call; returns what came back, when the first audio frame
/// went out, and whether it did.
async fn play(target: &Target, conv: &Conversation, frame_ms: u32) -> (Received, Instant, bool) {
    let failed = |e: String| {
        let got = Received {
            transport_error: Some(e),
            ..Received::default()
        };
        (got, Instant::now(), false)
    };
    let mut call = match Call::dial(target).await {
        Ok(call) => call,
        Err(DialError::Failed(e)) => return failed(e),
        Err(DialError::Refused(refusal)) => {
            let got = Received {
                refused: Some(refusal),
                ..Received::default()
            };
            return (got, Instant::now(), false);
        }
    };
    if let Err(e) = call.start(conv.rate, 2).await {
        return failed(e);
    }
    let t0 = Instant::now();
    let planes = [conv.customer.as_slice(), conv.assistant.as_slice()];
    if call.play(&planes, conv.rate, frame_ms, true).await {
        tokio::time::sleep(GRACE).await;
        return (call.hang_up().await, t0, true);
    }
    (call.finish(Duration::from_secs(5)).await, t0, true)
}

/// `--report`, `--plot` (and its capacity plot) and `--markdown`.
pub fn write_outputs(args: &BenchArgs, run: &RunReport) -> anyhow::Result<()> {
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(run)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
        println!("report: {}", path.display());
    }
    if let Some(path) = &args.plot {
        let named = |t: &Report, what: &str| {
            if run.targets.len() > 1 {
                format!("{}: {what}", t.label)
            } else {
                what.to_string()
            }
        };
        let mut series = Vec::new();
        for t in &run.targets {
            let all: Vec<_> = t
                .per_call
                .iter()
                .flat_map(|c| c.utterances.iter())
                .collect();
            series.push((
                named(t, "time to final"),
                all.iter().filter_map(|u| u.time_to_final_ms).collect(),
            ));
            series.push((
                named(t, "first partial"),
                all.iter().filter_map(|u| u.first_partial_ms).collect(),
            ));
            series.push((
                named(t, "reply wait (customer)"),
                all.iter()
                    .filter(|u| u.channel == Channel::Customer)
                    .filter_map(|u| u.reply_wait_ms)
                    .collect(),
            ));
        }
        plot::cdf_svg(
            path,
            &format!(
                "{} calls at {} Hz, {}: latency",
                run.settings.calls,
                run.settings.rate,
                run.settings.shape.describe()
            ),
            &series,
        )?;
        println!("plot: {}", path.display());
        if run.targets.iter().any(|t| t.capacity.is_some()) {
            let cap_path = capacity_plot_path(path);
            let mut lines = Vec::new();
            for t in &run.targets {
                let Some(cap) = &t.capacity else { continue };
                for (p, pick) in [
                    ("p50", (|s: &Stats| s.p50) as fn(&Stats) -> f64),
                    ("p95", |s: &Stats| s.p95),
                ] {
                    lines.push((
                        named(t, &format!("time to final {p}")),
                        cap.levels
                            .iter()
                            .filter(|l| l.time_to_final_ms.count > 0)
                            .map(|l| (l.calls as f64, pick(&l.time_to_final_ms)))
                            .collect(),
                    ));
                }
            }
            plot::capacity_svg(
                &cap_path,
                "time to final against concurrent calls",
                &lines,
                args.max_p95_ms,
            )?;
            println!("capacity plot: {}", cap_path.display());
        }
    }
    if let Some(path) = &args.markdown {
        let md = summary::markdown(run);
        if path == Path::new("-") {
            print!("\n{md}");
        } else {
            std::fs::write(path, md).with_context(|| format!("cannot write {}", path.display()))?;
            println!("markdown: {}", path.display());
        }
    }
    Ok(())
}

/// `--plot out.svg` draws the capacity curve into `out-capacity.svg`.
pub fn capacity_plot_path(plot: &Path) -> PathBuf {
    let stem = plot
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = plot
        .extension()
        .map_or_else(|| "svg".into(), |e| e.to_string_lossy().into_owned());
    plot.with_file_name(format!("{stem}-capacity.{ext}"))
}

/// Raises the call count until every target failed a level; reports each target's
/// largest count that held along with the last run. A count is of calls offered at once:
/// those the server refused at the upgrade are not failures, so a server that refuses
/// what it cannot carry holds every count; the levels say how many it refused.
pub async fn find_capacity(
    args: &BenchArgs,
    corpus: &(impl Conversations + ?Sized),
) -> anyhow::Result<RunReport> {
    if args.max_calls == 0 {
        bail!("--max-calls is 0: no call to measure");
    }
    if args.ramp.is_some() {
        return ramp_capacity(args, corpus).await;
    }
    let mut levels: Vec<Vec<Level>> = Vec::new();
    let mut last = None;
    let mut n = 1;
    println!(
        "{:>6} | {:>10} {:>10} | {:>9} | {:>8} | {:>6} | {:>7} | held (customer's p95 ≤ {:.0} ms, no failure) | target",
        "offered",
        "ttf p50",
        "ttf p95",
        "asst. p95",
        "fp p95",
        "failed",
        "refused",
        args.max_p95_ms
    );
    while n <= args.max_calls {
        let r = measure_run(args, corpus, n).await?;
        levels.resize_with(r.targets.len(), Vec::new);
        let mut any_holds = false;
        for (t, so_far) in r.targets.iter().zip(levels.iter_mut()) {
            let level = Level::new(
                n,
                t.customer.time_to_final_ms.clone(),
                t.customer.missing_finals + t.assistant.missing_finals,
                t.failed_calls,
                args.max_p95_ms,
            )
            .with_refused(t.refused_calls);
            println!(
                "{n:>7} | {:>10.0} {:>10.0} | {:>9.0} | {:>8.0} | {:>6} | {:>7} | {:<47} | {}",
                t.customer.time_to_final_ms.p50,
                t.customer.time_to_final_ms.p95,
                t.assistant.time_to_final_ms.p95,
                t.first_partial_ms.p95,
                t.failed_calls,
                t.refused_calls,
                if level.held { "yes" } else { "no" },
                t.label
            );
            any_holds |= level.held && so_far.iter().all(|l| l.held);
            so_far.push(level);
        }
        last = Some(r);
        if !any_holds {
            break;
        }
        n = if n < 4 { n + 1 } else { n + 2 };
    }
    let mut run = last.context("no step ran")?;
    for (t, levels) in run.targets.iter_mut().zip(levels) {
        t.capacity = Some(Capacity {
            mode: "steps".into(),
            calls: shape::capacity(&levels),
            levels,
        });
    }
    Ok(run)
}

/// `--ramp`: one run adding a call every `--ramp` seconds up to `--max-calls`, measured by
/// calls open ([`shape::ramp_levels`]): the capacity is the most calls held at once, the
/// calls the server refused at the upgrade on the way counted but not failures.
async fn ramp_capacity(
    args: &BenchArgs,
    corpus: &(impl Conversations + ?Sized),
) -> anyhow::Result<RunReport> {
    if corpus.recorded() {
        anyhow::bail!(
            "--ramp keeps every call open until the last one has played, and real calls last as \
             recorded: use --find-capacity without --ramp for a corpus of calls"
        );
    }
    let mut run = measure_run(args, corpus, args.max_calls).await?;
    for t in &mut run.targets {
        let calls: Vec<shape::RampCall> = t
            .per_call
            .iter()
            .zip(&t.timing)
            .map(|(c, timing)| shape::RampCall {
                dialed_ms: timing.dialed_ms,
                span: (timing.audio_s > 0.0).then_some((
                    timing.audio_from_ms,
                    timing.audio_from_ms + timing.audio_s * 1000.0,
                )),
                failed: c.failed(),
                refused: c.refused.is_some(),
                utterances: c
                    .utterances
                    .iter()
                    .map(|u| {
                        (
                            timing.audio_from_ms + u.offset_s * 1000.0,
                            u.time_to_final_ms,
                            u.channel == Channel::Customer,
                        )
                    })
                    .collect(),
            })
            .collect();
        let levels = shape::ramp_levels(&calls, args.max_p95_ms);
        t.capacity = Some(Capacity {
            mode: "ramp".into(),
            calls: shape::capacity(&levels),
            levels,
        });
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Refusal;
    use crate::conversation::{Density, Utterance};

    /// A run of two calls, the second refused at the upgrade with `body`.
    fn run_with_a_refusal(body: &[u8]) -> RunReport {
        let conv = Conversation {
            rate: 1000,
            customer: vec![0; 3000],
            assistant: vec![0; 3000],
            utterances: vec![Utterance {
                channel: Channel::Customer,
                recording: "c".into(),
                reference: "hello".into(),
                onset: 1000,
                offset: 2000,
                pauses: Vec::new(),
            }],
            call_references: None,
        };
        let t0 = Instant::now();
        let heard = Received {
            messages: vec![(
                t0 + Duration::from_millis(2300),
                crate::protocol::ServerMessage::TranscriberResponse {
                    transcription: "Hello.".into(),
                    channel: Channel::Customer,
                    transcript_type: crate::protocol::TranscriptType::Final,
                },
            )],
            close: Some((1000, String::new())),
            ..Received::default()
        };
        let refused = Received {
            refused: Some(Refusal::new(503, body)),
            ..Received::default()
        };
        let timing = |call| CallTiming {
            call,
            dialed_ms: 0.0,
            audio_from_ms: 0.0,
            audio_s: 3.0,
        };
        let calls = vec![
            (timing(0), report::analyze(0, &conv, &heard, t0)),
            (timing(1), report::analyze(1, &conv, &refused, t0)),
        ];
        RunReport {
            schema_version: SCHEMA_VERSION,
            tool_version: "0".into(),
            started_unix_s: 0,
            settings: Settings {
                urls: vec!["ws://a".into()],
                labels: vec!["a".into()],
                calls: 2,
                duration_s: 3.0,
                each: false,
                recorded: false,
                rate: 1000,
                frame_ms: 20,
                shape: shape::Shape::Burst,
                density: Density::default(),
                seed: 1,
                machine_cores: 2,
                find_capacity: false,
                max_p95_ms: 800.0,
                max_calls: 2,
                corpus: None,
                phone_band: false,
                mu_law: false,
            },
            targets: vec![target_report("a", "ws://a", 3.0, calls)],
            ratios: None,
        }
    }

    /// A refused call is counted with its status and words, has no close code and no
    /// figure: the one call that opened makes them all.
    #[test]
    fn a_refused_call_is_counted_apart_from_the_calls_that_opened() {
        let run = run_with_a_refusal(b"no headroom: 0.71 s of finals (budget 0.60 s)");
        let t = &run.targets[0];
        assert_eq!((t.calls, t.refused_calls, t.failed_calls), (2, 1, 0));
        assert_eq!(t.refusals.len(), 1);
        assert_eq!((t.refusals[0].status, t.refusals[0].count), (503, 1));
        assert_eq!(t.close_codes.len(), 1, "{:?}", t.close_codes);
        assert_eq!(t.close_codes[0].code, Some(1000));
        assert_eq!((t.customer.words, t.customer.missing_finals), (1, 0));
        assert_eq!(t.time_to_final_ms.count, 1);
        let text = summary::text(&run);
        assert!(
            text.contains(
                "refused at the upgrade 1 of 2 calls (HTTP 503 ×1: \"no headroom: 0.71 s of \
                 finals (budget 0.60 s)\")"
            ),
            "{text}"
        );
        assert!(text.contains("failed calls 0 of 1 opened"), "{text}");
    }

    /// `--rescore` reads a schema 2 report, whose refusals were flags, and writes this
    /// version's layout with the refusals counted by status.
    #[test]
    fn a_schema_2_report_is_rescored_into_this_layout() {
        let mut saved = serde_json::to_value(run_with_a_refusal(b"")).unwrap();
        saved["schema_version"] = 2.into();
        saved["targets"][0]["per_call"][1]["refused"] = true.into();
        saved["targets"][0]
            .as_object_mut()
            .unwrap()
            .remove("refusals");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.json");
        std::fs::write(&path, saved.to_string()).unwrap();
        let run = rescore::rescore_file(&path).expect("a schema 2 report is read");
        assert_eq!(run.schema_version, SCHEMA_VERSION);
        let t = &run.targets[0];
        assert_eq!(t.refusals.len(), 1);
        assert_eq!(
            (t.refusals[0].status, t.refusals[0].body.as_str()),
            (503, "")
        );
        assert_eq!(t.customer.words, 1);
        saved["schema_version"] = 1.into();
        std::fs::write(&path, saved.to_string()).unwrap();
        assert!(
            rescore::rescore_file(&path).is_err(),
            "schema 1 is not read"
        );
    }

    /// A schema 4 report's premature ends were finals ending . ? ! before a turn's last:
    /// rescored, those are `terminal_before_last`, and with no pauses known none is
    /// premature; its reply wait is the customer's.
    #[test]
    fn a_schema_4_report_is_rescored_without_pauses() {
        let mut saved = serde_json::to_value(run_with_a_refusal(b"")).unwrap();
        saved["schema_version"] = 4.into();
        let u = &mut saved["targets"][0]["per_call"][0]["utterances"][0];
        u["finals"] = serde_json::json!(["Hello.", "Hello."]);
        u["premature_ends"] = 1.into();
        u["reply_wait_ms"] = 400.0.into();
        for k in ["inner_pauses", "terminal_before_last", "ends_answerable"] {
            u.as_object_mut().unwrap().remove(k);
        }
        let mut assistant = u.clone();
        assistant["channel"] = "assistant".into();
        assistant["reply_wait_ms"] = 9000.0.into();
        saved["targets"][0]["per_call"][0]["utterances"]
            .as_array_mut()
            .unwrap()
            .push(assistant);
        saved["targets"][0]["reply_wait_ms"]["max"] = 9000.0.into();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v4.json");
        std::fs::write(&path, saved.to_string()).unwrap();
        let run = rescore::rescore_file(&path).expect("a schema 4 report is read");
        let t = &run.targets[0];
        let c = &t.customer;
        assert_eq!(
            (c.premature_ends, c.inner_pauses, c.terminal_before_last),
            (0, 0, 1)
        );
        assert_eq!(c.turns_ending_answerable, 1);
        assert_eq!((t.reply_wait_ms.count, t.reply_wait_ms.max), (1, 400.0));
    }

    #[test]
    fn markdown_on_stdout_takes_the_place_of_the_terminal_summary() {
        let mut args = BenchArgs::default();
        assert!(summary_shown(&args));
        args.markdown = Some("report.md".into());
        assert!(summary_shown(&args));
        args.markdown = Some("-".into());
        assert!(!summary_shown(&args), "the figures table would print twice");
    }
}
