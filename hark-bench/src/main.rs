//! `hark-bench` (also `hark bench`): benchmark a transcriber server the way the platform
//! calls it.

use std::process::ExitCode;

use clap::Parser;

/// Benchmark a custom-transcriber server the way the voice platform calls it.
#[derive(Parser)]
#[command(name = "hark bench", bin_name = "hark bench", version)]
struct Cli {
    #[command(flatten)]
    args: hark_bench::BenchArgs,
}

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
