//! The `hark` command: `serve` runs the transcriber server, `transcribe` runs the same
//! recognizer over files; `fetch` and `healthcheck` serve container images.

mod assistant_config;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use tracing::error;

use hark::backend::{moonshine, whisper};
use hark::config::LogFormat;
use hark::flags::{CommonArgs, ServeArgs};
use hark::server::Server;
use hark::{registry, transcribe};

#[derive(Parser)]
#[command(
    version,
    about = "Custom-transcriber streaming server for voice-assistant platforms"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the custom-transcriber websocket (`/api/custom-transcriber[/{profile}]`).
    Serve(ServeArgs),
    /// Print the config `serve` would run with (secrets masked) and every problem in it;
    /// exits non-zero if there is any. Takes the same file, environment and flags.
    CheckConfig(ServeArgs),
    /// Transcribe WAV files with the embedded recognizer and print the text.
    Transcribe(TranscribeArgs),
    /// Benchmark a transcriber server the way the platform calls it (runs `hark-bench`;
    /// `hark bench --help` lists its options).
    #[command(disable_help_flag = true)]
    Bench(BenchForward),
    /// Print (or apply) the platform's transcriber config that points an assistant at hark.
    AssistantConfig(assistant_config::Args),
    /// Fetch and verify everything the config needs into the cache dir, then exit (to bake
    /// the engine into an image, so that `serve` downloads nothing at start).
    Fetch(FetchArgs),
    /// GET a URL (default the local /healthz) and exit 0 on HTTP 200: a container
    /// HEALTHCHECK for images without curl.
    Healthcheck(HealthcheckArgs),
}

#[derive(Args)]
struct BenchForward {
    /// Passed to `hark-bench` as they are.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<std::ffi::OsString>,
}

#[derive(Args)]
struct FetchArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Also fetch the end-of-turn model when the config does not turn it on, so that a
    /// config mounted later may.
    #[arg(long)]
    turn_model: bool,
}

#[derive(Args)]
struct HealthcheckArgs {
    /// The URL to GET.
    #[arg(default_value = "http://127.0.0.1:8080/healthz")]
    url: String,
    /// Give up after this long.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
}

#[derive(Args)]
struct TranscribeArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// WAV files (8/16/24/32-bit PCM or 32-bit float, 8–48 kHz, mono or stereo).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{Layer, filter};
    let wanted = tracing_subscriber::EnvFilter::try_from_env("HARK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt.json().flatten_event(true).boxed(),
    };
    // Outside what HARK_LOG can turn on: tungstenite dumps each provider handshake request at
    // trace level, `Authorization` header (the provider's API key) included.
    let never = filter::filter_fn(|meta| !leaks_secrets(meta.target()));
    tracing_subscriber::registry()
        .with(fmt.with_filter(wanted).with_filter(never))
        .init();
}

/// Log targets that print request headers, and so credentials, whatever their level.
fn leaks_secrets(target: &str) -> bool {
    target.starts_with("tungstenite::handshake")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve(args),
        Command::CheckConfig(args) => check_config(args),
        Command::Transcribe(args) => run_transcribe(args),
        Command::Bench(args) => run_bench(args),
        Command::AssistantConfig(args) => assistant_config::run(args),
        Command::Fetch(args) => run_fetch(args),
        Command::Healthcheck(args) => run_healthcheck(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e:#}");
            eprintln!("hark: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.load()?;
    // All problems at once, before the engine starts loading.
    hark::config::refuse_problems(&registry::problems(&config))?;
    init_logging(config.log_format);
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let backends = registry::from_config(&config)?;
        let server = Server::bind(config, backends).await?;
        reload_on_hangup(server.tls())?;
        server.run(shutdown_signal()).await
    })
}

fn check_config(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.load()?;
    print!("{}", config.to_masked_toml()?);
    // Keys live only in the environment: say whether each is there, never what it is.
    for (name, backend) in &config.backends {
        let Some(var) = backend.api_key_env() else {
            println!("# backends.{name}: no API key (none configured)");
            continue;
        };
        let state = match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => "set",
            _ => "NOT SET",
        };
        println!("# backends.{name}: API key variable {var} is {state}");
    }
    for line in registry::engines(&config) {
        println!("# {line}");
    }
    let problems = registry::problems(&config);
    for p in &problems {
        eprintln!("problem: {p}");
    }
    if !problems.is_empty() {
        anyhow::bail!("{} problem(s) found in the config", problems.len());
    }
    eprintln!("config OK");
    Ok(())
}

fn run_transcribe(args: TranscribeArgs) -> anyhow::Result<()> {
    let config = args.common.load()?;
    init_logging(config.log_format);
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let backend = hark::registry::default_engine(&config);
        let waiter = backend.clone();
        tokio::task::spawn_blocking(move || waiter.wait_ready(Duration::from_secs(600)))
            .await?
            .map_err(anyhow::Error::msg)?;
        let mut failed = false;
        for file in &args.files {
            match transcribe::file(backend.clone(), file).await {
                Ok(channels) => {
                    for (label, text) in channels {
                        match label {
                            Some(label) => println!("{}\t{label}\t{text}", file.display()),
                            None => println!("{}\t{text}", file.display()),
                        }
                    }
                }
                Err(e) => {
                    failed = true;
                    eprintln!("hark: {}: {e:#}", file.display());
                }
            }
        }
        if failed {
            anyhow::bail!("some files could not be transcribed");
        }
        Ok(())
    })
}

/// `hark bench` is the `hark-bench` tool, a crate of its own so that the server carries none
/// of its dependencies: found beside this binary (`cargo build --release` builds both), else
/// on PATH, and run in this process's place.
fn run_bench(args: BenchForward) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("hark-bench")))
        .filter(|p| p.is_file());
    let program = beside.unwrap_or_else(|| PathBuf::from("hark-bench"));
    let err = std::process::Command::new(&program).args(&args.args).exec();
    anyhow::bail!(
        "cannot run {}: {err}. `hark bench` is the hark-bench tool: build it beside hark with \
         `cargo build --release` (or `cargo install --path hark-bench`)",
        program.display()
    )
}

/// Unpacks (or finds complete) the engine and, when wanted, the turn model, then opens the
/// engine's library so that an image whose system cannot load it fails at build time.
fn run_fetch(args: FetchArgs) -> anyhow::Result<()> {
    let config = args.common.load()?;
    init_logging(config.log_format);
    let turn_model = args.turn_model || config.wants_turn_model();
    if config.uses(moonshine::NAME) || turn_model {
        let engine = moonshine::engine_paths(&config.moonshine).map_err(anyhow::Error::msg)?;
        let lib = moonshine::ffi::Library::load(&engine.lib)?;
        println!(
            "engine\t{}\tlibmoonshine {}",
            engine.root.display(),
            lib.version()
        );
    }
    if config.uses(whisper::NAME) {
        let model = whisper::ensure_model(&config.whisper).map_err(anyhow::Error::msg)?;
        whisper::Model::load(&model).map_err(anyhow::Error::msg)?;
        println!("whisper\t{}\t{}", model.dir.display(), model.name);
    }
    if turn_model {
        let cache = config
            .moonshine
            .cache_dir
            .clone()
            .unwrap_or_else(hark::wheel::default_cache_dir);
        let model = hark::turn::ensure_model(&hark::turn::fetch_options(cache))?;
        println!("turn-model\t{}", model.display());
    }
    Ok(())
}

/// One GET; any answer but 200 (or none in time) is a failure.
fn run_healthcheck(args: HealthcheckArgs) -> anyhow::Result<()> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(args.timeout_ms)))
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .get(&args.url)
        .call()
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.url))?;
    let status = response.status();
    if status != ureq::http::StatusCode::OK {
        anyhow::bail!("{}: HTTP {status}", args.url);
    }
    Ok(())
}

/// On SIGHUP, reloads the TLS certificate pair (and, without TLS, ignores the signal
/// rather than die of it).
fn reload_on_hangup(tls: Option<std::sync::Arc<hark::tls::CertStore>>) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match &tls {
                    Some(tls) => tls.reload_logged("SIGHUP"),
                    None => tracing::info!("SIGHUP: nothing to reload (TLS is off)"),
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = tls;
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
