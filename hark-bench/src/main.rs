//! `hark-bench` (also `hark bench`): benchmark a transcriber server the way the platform
//! calls it.

use std::process::ExitCode;

use clap::Parser;

/// Benchmark a custom-transcriber server the way the voice platform calls it.
#[derive(Parser)]
#[command(name = "hark bench", version)]
struct Cli {
    #[command(flatten)]
    args: hark_bench::BenchArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
