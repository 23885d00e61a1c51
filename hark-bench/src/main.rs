//! `hark-bench` (also `hark bench`): benchmark a transcriber server the way the platform
//! calls it.

use std::process::ExitCode;

use clap::Parser;

/// Benchmark a custom-transcriber server the way the voice platform calls it.
#[derive(Parser)]
#[command(name = "hark bench", bin_name = "hark bench", version, after_help = SHAPES)]
struct Cli {
    #[command(flatten)]
    args: hark_bench::BenchArgs,
}

/// The load shapes worth running against a deployment (hark's own figures: BENCHMARKS.md,
/// "Load shapes").
const SHAPES: &str = "\
Load shapes: run each at your server's capacity (N calls; --find-capacity finds it) and at
twice it. A call refused at the upgrade (HTTP 503 when the server is full: the platform
takes it to its fallbackPlan at once) is shown as refused, with the server's status and
words, not failed, and left out of the figures; a call that opened and then failed is the
one to worry about.
  staggered, independent calls   --calls N --stagger 6
  a burst of independent calls   --calls N --stagger 0.1
  an in-phase burst (worst case) --calls N --burst
  a ramp past capacity           --find-capacity --ramp 2 --max-calls 2N --duration 30
On the server's own machine, run the bench below it: nice -n 10 hark bench ...";

fn main() -> ExitCode {
    let cli = Cli::parse();
    // What the run says besides its tables (fetching the corpus on first use, with progress;
    // a missing espeak-ng) goes to stderr. Info and above only: the websocket library's
    // debug and trace lines carry the request headers, credentials included.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_max_level(tracing::Level::INFO)
        .init();
    let result = tokio::runtime::Runtime::new()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(hark_bench::run(cli.args)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
