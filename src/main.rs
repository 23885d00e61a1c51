//! The `hark` command: `serve` runs the transcriber server, `transcribe` runs the same
//! recognizer over files; `fetch` and `healthcheck` serve container images.

mod assistant_config;
mod healthcheck;

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
    Healthcheck(healthcheck::HealthcheckArgs),
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
    /// config mounted later may turn it on without a download.
    #[arg(long)]
    turn_model: bool,
}

#[derive(Args)]
struct TranscribeArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Decode as this profile's calls are: its embedded engine (the first in its chain),
    /// its options and, of a stereo file, its channels.
    #[arg(long, default_value = hark::config::DEFAULT_PROFILE)]
    profile: String,
    /// The language spoken, as a call's `?language=` sets it (a BCP 47 tag such as `es`, or
    /// `auto` for Whisper's detection); default: the profile's.
    #[arg(long)]
    language: Option<String>,
    /// Words and names to favour, comma-separated, as a call's `?keyterms=`.
    #[arg(long)]
    keyterms: Option<String>,
    /// WAV files (8/16/24/32-bit PCM or 32-bit float, 8–48 kHz, mono or stereo).
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{Layer, filter};
    // A filter that does not parse is said once logging is up, not silently replaced.
    let (wanted, unparsed) = match std::env::var("HARK_LOG") {
        Ok(spec) => match tracing_subscriber::EnvFilter::try_new(&spec) {
            Ok(filter) => (filter, None),
            Err(e) => (tracing_subscriber::EnvFilter::new("info"), Some((spec, e))),
        },
        Err(_) => (tracing_subscriber::EnvFilter::new("info"), None),
    };
    // Colours only on a terminal: a log file or journald gets plain `key=value` text.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
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
    let _ = LOGGING.set(());
    if let Some((spec, e)) = unparsed {
        tracing::warn!(HARK_LOG = %spec, error = %e, "HARK_LOG does not parse: logging at info");
    }
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
        Command::Healthcheck(args) => healthcheck::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Once: as a log line when the log is set up (JSON logs stay JSON), else plainly.
            if LOGGING.get().is_some() {
                error!("{e:#}");
            } else {
                eprintln!("hark: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Set once the log is set up: errors then go to it instead of a plain line.
static LOGGING: std::sync::OnceLock<()> = std::sync::OnceLock::new();

/// A `HARK_…` variable hark does not read, and the known one it resembles: a typo.
struct UnknownEnv {
    name: String,
    close: Option<String>,
}

impl std::fmt::Display for UnknownEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown environment variable {}, ignored", self.name)?;
        match &self.close {
            Some(known) => write!(f, " (did you mean {known}?)"),
            None => Ok(()),
        }
    }
}

/// Variables named `HARK_…` that no part of hark reads: a typo (`HARK_LISTN`) would
/// otherwise leave a setting at its default without a word. Each with the closest known
/// name, if one is close. Variables a config names for an API key are not hark's own and
/// pass, as do the bench's (`HARK_BENCH_…`, read by hark-bench).
fn unknown_env_vars(config: &hark::config::Config) -> Vec<UnknownEnv> {
    let known = known_env_vars();
    let keys: Vec<&str> = config
        .backends
        .values()
        .filter_map(|b| b.api_key_env())
        .collect();
    let mut out = Vec::new();
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with("HARK_")
            || name.starts_with("HARK_BENCH_")
            || known.iter().any(|k| k == name)
            || keys.contains(&name)
        {
            continue;
        }
        let close = known
            .iter()
            .map(|k| (strsim::levenshtein(k, name), k))
            .filter(|(d, _)| *d <= 3)
            .min();
        out.push(UnknownEnv {
            name: name.to_string(),
            close: close.map(|(_, k)| k.clone()),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Every `HARK_…` variable hark reads: those behind the commands' flags, and the others.
fn known_env_vars() -> Vec<String> {
    use clap::CommandFactory;
    fn walk(command: &clap::Command, out: &mut Vec<String>) {
        for arg in command.get_arguments() {
            if let Some(env) = arg.get_env().and_then(|e| e.to_str()) {
                out.push(env.to_string());
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out: Vec<String> = [
        "HARK_LOG",
        "HARK_TURN_WHEEL",
        "HARK_ONNXRUNTIME_WHEEL",
        "HARK_CLIPS_DIR",
        "HARK_SBIN_DIRS",
    ]
    .map(String::from)
    .into();
    walk(&Cli::command(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// The unknown-variable warnings, into the log (which must be set up).
fn warn_unknown_env(config: &hark::config::Config) {
    for warning in unknown_env_vars(config) {
        tracing::warn!("{warning}");
    }
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.load()?;
    // All problems at once, before the engine starts loading.
    hark::config::refuse_problems(&problems(&config))?;
    init_logging(config.log_format);
    warn_unknown_env(&config);
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let backends = registry::from_config(&config)?;
        let server = Server::bind(config, backends).await?;
        reload_on_hangup(server.tls())?;
        server.run(shutdown_signal()).await
    })
}

/// Everything `serve` would refuse the config for, found before anything loads or binds:
/// the config's own problems, unset API-key variables, and a TLS pair that does not load.
fn problems(config: &hark::config::Config) -> Vec<String> {
    let mut out = registry::problems(config);
    out.extend(hark::tls::problems(&config.tls));
    out
}

fn check_config(args: ServeArgs) -> anyhow::Result<()> {
    let config = args.load()?;
    print!("{}", config.to_masked_toml()?);
    // As the deploy gate, a variable that is a typo of one hark reads fails the check: the
    // setting it meant would silently stay at its default. Other unknown ones are warned of.
    let (typos, unknown): (Vec<_>, Vec<_>) = unknown_env_vars(&config)
        .into_iter()
        .partition(|v| v.close.is_some());
    for warning in unknown
        .iter()
        .map(ToString::to_string)
        .chain(config.warnings())
    {
        eprintln!("warning: {warning}");
    }
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
    let mut problems = problems(&config);
    problems.extend(typos.iter().map(ToString::to_string));
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
    warn_unknown_env(&config);
    config.validate(&hark::registry::names(&config))?;
    // Unreadable files are said before the engine loads (seconds), not after.
    for file in &args.files {
        transcribe::read_wav(file).map_err(|e| anyhow::anyhow!("{}: {e:#}", file.display()))?;
    }
    // The flags are a call's query overrides: the same checks, the same effect.
    let mut query = form_urlencoded::Serializer::new(String::new());
    if let Some(language) = &args.language {
        query.append_pair("language", language);
    }
    if let Some(keyterms) = &args.keyterms {
        query.append_pair("keyterms", keyterms);
    }
    let query = query.finish();
    hark::backend::Options::default()
        .with_query(&query)
        .map_err(anyhow::Error::msg)?;
    let (backend, mut profile) = hark::registry::profile_engine(&config, &args.profile)?;
    profile.options = profile
        .options
        .with_query(&query)
        .map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let waiter = backend.clone();
        tokio::task::spawn_blocking(move || waiter.wait_ready(Duration::from_secs(600)))
            .await?
            .map_err(anyhow::Error::msg)?;
        let mut failed = false;
        for file in &args.files {
            match transcribe::file(backend.clone(), file, &profile).await {
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
    warn_unknown_env(&config);
    let uses_moonshine = config.uses(moonshine::NAME);
    let turn_model = args.turn_model
        || (uses_moonshine && config.wants_turn_model(moonshine::NAME))
        || (config.uses(whisper::NAME) && config.wants_turn_model(whisper::NAME));
    // `--turn-model` bakes Moonshine too, as it always has: an image baked so can take a
    // config mounted later that runs either engine with the model.
    if uses_moonshine || args.turn_model {
        let engine = moonshine::engine_paths(&config.moonshine).map_err(anyhow::Error::msg)?;
        let lib = moonshine::ffi::Library::load(&engine.lib)?;
        println!(
            "moonshine\t{}\tlibmoonshine {}",
            engine.root.display(),
            lib.version()
        );
    }
    if config.uses(whisper::NAME) {
        let model = whisper::ensure_model(&config.whisper).map_err(anyhow::Error::msg)?;
        hark_whisper::Model::load_with(&model, config.whisper.encoder)
            .map_err(anyhow::Error::msg)?;
        println!("whisper\t{}\t{}", model.dir.display(), model.name);
        if let Some(finals) =
            whisper::ensure_final_model(&config.whisper).map_err(anyhow::Error::msg)?
        {
            hark_whisper::Model::load_with(&finals, config.whisper.encoder)
                .map_err(anyhow::Error::msg)?;
            println!("whisper-finals\t{}\t{}", finals.dir.display(), finals.name);
        }
    }
    if turn_model {
        // The model and the onnxruntime it runs on beside Whisper, both loaded once here
        // so that an image whose system cannot run them fails at build time.
        let cache = config
            .whisper
            .cache_dir
            .clone()
            .or_else(|| config.moonshine.cache_dir.clone())
            .unwrap_or_else(hark::wheel::default_cache_dir);
        let paths = hark::turn::ensure(cache)?;
        hark::turn::TurnModel::load(&paths)?;
        println!(
            "turn-model\t{}\tonnxruntime {}",
            paths.model.display(),
            paths.onnxruntime.display()
        );
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

/// Completes on SIGINT or SIGTERM, and from then on a second one stops the process at once:
/// an operator who presses Ctrl-C again during the drain does not want to wait for it.
async fn shutdown_signal() {
    stop_signal().await;
    tokio::spawn(async {
        stop_signal().await;
        tracing::warn!("a second stop signal: stopping now, without finishing the live calls");
        std::process::exit(130);
    });
}

/// Completes on the next SIGINT or SIGTERM.
async fn stop_signal() {
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
