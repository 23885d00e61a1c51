//! HTTP routes: the websocket upgrade (with authentication, profile lookup and admission
//! control before the upgrade), health, readiness and metrics; and graceful shutdown.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Extension;
use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;
use tracing::{debug, info, warn};

mod admission;
mod connection;
mod probes;

use self::admission::{ActiveGuard, Admission, PendingGuard, take_slot};
use self::connection::serve_connection;
use self::probes::{ready, render_metrics};
use crate::auth;
use crate::backend::{Refusal, Registry};
use crate::config::{Config, DEFAULT_PROFILE};
use crate::connections::{Admitted, Connections, Handle};
use crate::metrics as m;
use crate::session::{self, SessionSettings};
use crate::supervisor::Link;
use crate::tls::CertStore;
use crate::untrusted::{LogBudget, cut, quote};

/// Refused upgrades logged per window; the rest are counted in the next line (and always
/// in `hark_rejected_upgrades_total`).
static REFUSAL_LOG: LogBudget = LogBudget::new(5, Duration::from_secs(10));

/// Headroom refusals logged per window, a budget of their own: a flood of unauthenticated
/// upgrades must not hide from the operator why real calls are being turned away.
static HEADROOM_LOG: LogBudget = LogBudget::new(5, Duration::from_secs(10));

/// The start-up lines: where calls go (the URL the platform is given), how they must
/// authenticate (the mode, never a credential), and each profile's URL and backend chain.
fn log_start(config: &Config, addr: SocketAddr, tls: bool) {
    let base = format!(
        "{}://{addr}/api/custom-transcriber",
        if tls { "wss" } else { "ws" }
    );
    let auth = match (
        config.auth.secret.is_some(),
        config.auth.bearer_tokens.len(),
    ) {
        (false, 0) => "none".to_string(),
        (true, 0) => "secret (x-vapi-secret)".to_string(),
        (false, n) => format!("bearer ({n} token(s))"),
        (true, n) => format!("secret (x-vapi-secret) or bearer ({n} token(s))"),
    };
    info!(%addr, tls, url = %base, auth = %auth, "hark listening");
    for name in config.profile_names() {
        let Some(profile) = config.profile(name) else {
            continue;
        };
        let url = if name == DEFAULT_PROFILE {
            base.clone()
        } else {
            format!("{base}/{name}")
        };
        let chain: Vec<&str> = profile.chain().collect();
        let channels: Vec<&str> = profile.channels.iter().map(|c| c.as_str()).collect();
        info!(
            profile = name,
            %url,
            backends = %chain.join(" -> "),
            channels = %channels.join(","),
            language = profile.options.language.as_deref().unwrap_or("en (default)"),
            "profile"
        );
    }
}

/// A websocket's read buffer: a quarter second of 16 kHz stereo, several frames per read.
const WS_READ_BUFFER: usize = 16 * 1024;

/// Sent with 503 so the platform (or a load balancer) retries shortly.
const RETRY_AFTER_SECS: &str = "2";

struct AppState {
    config: Config,
    backends: Arc<Registry>,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
    /// Calls holding a slot, from their upgrade on (bounded by `max_sessions`).
    active: AtomicUsize,
    /// Upgraded calls still waiting for their start frame (bounded by `max_pending_starts`).
    pending: AtomicUsize,
    next_id: AtomicU64,
    shutdown: watch::Receiver<bool>,
}

/// A bound server, ready to run.
pub struct Server {
    listener: TcpListener,
    /// `/metrics` and the probes, when they have an address of their own.
    admin: Option<TcpListener>,
    state: Arc<AppState>,
    shutdown_tx: watch::Sender<bool>,
    tls: Option<Arc<CertStore>>,
}

impl Server {
    pub async fn bind(config: Config, backends: Registry) -> anyhow::Result<Self> {
        let names: Vec<&str> = backends.names().collect();
        config.validate(&names)?;
        let tls = match (&config.tls.cert, &config.tls.key) {
            (Some(cert), Some(key)) => Some(CertStore::load(cert, key)?),
            _ => None,
        };
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        let admin = match config.admin_listen {
            Some(at) => Some(
                TcpListener::bind(at)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot listen on {at} (admin_listen): {e}"))?,
            ),
            None => None,
        };
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && !config.auth.is_enabled() {
            warn!(%addr, "serving a non-loopback address without authentication: set auth.secret or auth.bearer_tokens (HARK_SECRET / HARK_BEARER_TOKENS)");
        }
        let (shutdown_tx, shutdown) = watch::channel(false);
        let state = Arc::new(AppState {
            config,
            backends: Arc::new(backends),
            metrics: m::handle(),
            active: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            shutdown,
        });
        Ok(Self {
            listener,
            admin,
            state,
            shutdown_tx,
            tls,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or(self.state.config.listen)
    }

    /// Where `/metrics` and the probes are served apart from calls, if they are.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The certificate pair served, when TLS is on: `reload` it on SIGHUP.
    pub fn tls(&self) -> Option<Arc<CertStore>> {
        self.tls.clone()
    }

    /// Serves until `signal` completes, then drains live calls (up to the drain timeout)
    /// and returns once every call has closed.
    pub async fn run(
        mut self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let state = self.state.clone();
        let app = router(state.clone(), self.admin.is_none());
        // The admin port serves until the server stops; it is private, so plain axum.
        let admin = self.admin.take().map(|listener| {
            let addr = listener
                .local_addr()
                .ok()
                .or(state.config.admin_listen)
                .map_or_else(String::new, |a| a.to_string());
            info!(addr = %addr, "metrics and probes listening");
            tokio::spawn(axum::serve(listener, admin_router(state.clone())).into_future())
        });
        let acceptor = self.tls.as_ref().map(|t| t.acceptor()).transpose()?;
        log_start(&state.config, self.local_addr(), acceptor.is_some());
        let watcher = match &self.tls {
            Some(tls) if state.config.tls.watch_interval_ms > 0 => Some(tokio::spawn(
                tls.clone()
                    .watch(Duration::from_millis(state.config.tls.watch_interval_ms)),
            )),
            _ => None,
        };
        let open = Connections::new(state.config.max_connections);
        let header_timeout = state.config.header_timeout();
        let mut connections = JoinSet::new();
        let mut signal = std::pin::pin!(signal);
        // From the signal on, the listener stays up while live calls finish: probes still get
        // their answer (`/healthz` 200, `/readyz` 503) and new calls a 503 with Retry-After,
        // so load balancers take this instance out because its readiness turned false and
        // Kubernetes does not kill it for a failing liveness probe in the middle of a drain.
        let mut drain_until: Option<tokio::time::Instant> = None;
        // Made at the signal: an interval idle since start-up would fire once per missed tick.
        let mut recheck: Option<tokio::time::Interval> = None;
        loop {
            tokio::select! {
                _ = &mut signal, if drain_until.is_none() => {
                    info!("shutdown requested: no new calls; draining live calls");
                    let _ = self.shutdown_tx.send(true);
                    if let Some(watcher) = &watcher {
                        watcher.abort();
                    }
                    // Sessions close themselves at the drain deadline; allow for their
                    // flush and close.
                    drain_until = Some(
                        tokio::time::Instant::now()
                            + state.config.drain_timeout()
                            + Duration::from_secs(10),
                    );
                    let mut every = tokio::time::interval(DRAIN_RECHECK);
                    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
                    recheck = Some(every);
                }
                _ = async { recheck.as_mut()?.tick().await; Some(()) }, if recheck.is_some() => {
                    if no_calls(&state) {
                        break;
                    }
                }
                _ = tokio::time::sleep_until(drain_until.unwrap_or_else(tokio::time::Instant::now)),
                    if drain_until.is_some() =>
                {
                    warn!(
                        active = state.active.load(Ordering::Acquire),
                        "calls still open after the drain timeout"
                    );
                    break;
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = self.listener.accept() => {
                    let tcp = match accepted {
                        Ok((tcp, _peer)) => tcp,
                        Err(e) => {
                            // Out of file descriptors, mostly: wait for some to close.
                            warn!("accept failed: {e}");
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                            continue;
                        }
                    };
                    let slot = match open.admit() {
                        Admitted::Free(slot) => slot,
                        Admitted::Evicted(slot) => {
                            metrics::counter!(m::EVICTED_CONNECTIONS).increment(1);
                            slot
                        }
                        Admitted::Full => {
                            metrics::counter!(m::REFUSED_CONNECTIONS).increment(1);
                            debug!("connection refused: max_connections are being set up");
                            continue;
                        }
                    };
                    let handle = slot.handle();
                    let task = connections.spawn(serve_connection(
                        tcp,
                        slot,
                        acceptor.clone(),
                        app.clone(),
                        header_timeout,
                        state.shutdown.clone(),
                    ));
                    open.spawned(&handle, task);
                }
            }
        }
        drop(self.listener);
        // HTTP connections finish the request under way; a slow one is cut at its timeout.
        let idle = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(header_timeout + Duration::from_secs(5), idle)
            .await
            .is_err()
        {
            connections.shutdown().await;
        }
        // An upgrade answered as the loop ended has a call now: let it drain too.
        if let Some(until) = drain_until {
            while !no_calls(&state) && tokio::time::Instant::now() < until {
                tokio::time::sleep(DRAIN_RECHECK).await;
            }
        }
        if let Some(admin) = admin {
            admin.abort();
        }
        info!("hark stopped");
        Ok(())
    }
}

/// Pause after a failed accept, so a lack of file descriptors is not a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// No call holds a slot, started or not.
fn no_calls(state: &AppState) -> bool {
    state.active.load(Ordering::Acquire) == 0 && state.pending.load(Ordering::Acquire) == 0
}

/// While draining, how often the server looks whether the last call has gone.
const DRAIN_RECHECK: Duration = Duration::from_millis(250);

/// The call port: upgrades and liveness, and the probes and metrics unless they have an
/// address of their own.
fn router(state: Arc<AppState>, with_admin: bool) -> Router {
    // A trailing slash is the same URL to a user (and to `hark assistant-config`): accepted.
    let calls = Router::new()
        .route("/api/custom-transcriber", get(upgrade_default))
        .route("/api/custom-transcriber/", get(upgrade_default))
        .route("/api/custom-transcriber/{profile}", get(upgrade_profile))
        .route("/api/custom-transcriber/{profile}/", get(upgrade_profile))
        .route("/healthz", get(|| async { "ok\n" }));
    let calls = if with_admin {
        calls
            .route("/readyz", get(ready))
            .route("/metrics", get(render_metrics))
            .fallback(|uri: Uri| not_found(uri, CALL_AND_ADMIN_PATHS))
    } else {
        calls.fallback(|uri: Uri| not_found(uri, CALL_PATHS))
    };
    calls.with_state(state)
}

/// `admin_listen`: what Prometheus and the orchestrator ask.
fn admin_router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(render_metrics))
        .fallback(|uri: Uri| not_found(uri, ADMIN_PATHS))
        .with_state(state)
}

const CALL_PATHS: &str = "GET /api/custom-transcriber (websocket, the default profile), \
GET /api/custom-transcriber/{profile} (websocket), GET /healthz";
const CALL_AND_ADMIN_PATHS: &str = "GET /api/custom-transcriber (websocket, the default profile), \
GET /api/custom-transcriber/{profile} (websocket), GET /healthz, GET /readyz, GET /metrics";
const ADMIN_PATHS: &str = "GET /healthz, GET /readyz, GET /metrics";

/// A path hark does not serve: a 404 that says which ones it does (never an empty body,
/// which a user cannot tell from a proxy's or a dead server's). The path is the client's
/// own text, so it is only quoted and cut.
async fn not_found(uri: Uri, paths: &'static str) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!(
            "no such path {}; this server answers {paths}\n",
            quote(uri.path())
        ),
    )
        .into_response()
}

async fn upgrade_default(
    state: State<Arc<AppState>>,
    connection: Option<Extension<Handle>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let profile = DEFAULT_PROFILE.to_string();
    upgrade(state, connection, profile, query, headers, ws)
}

async fn upgrade_profile(
    state: State<Arc<AppState>>,
    connection: Option<Extension<Handle>>,
    Path(profile): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    upgrade(state, connection, profile, query, headers, ws)
}

/// A headroom refusal's 503 body: what happened, with the backend's figures, and what the
/// caller (or the operator reading a bench report) can do about it.
fn headroom_body(refusal: &Refusal) -> String {
    let figures = refusal.to_string();
    format!(
        "hark has no headroom for another call now: {figures}. The calls here keep their \
         finals on time; retry after {RETRY_AFTER_SECS} s (Retry-After), send the call to \
         another instance, or give this one more cores (README, \"Failure behaviour\").\n"
    )
}

fn upgrade(
    State(state): State<Arc<AppState>>,
    connection: Option<Extension<Handle>>,
    profile_name: String,
    query: Option<String>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let reject = |status: StatusCode, reason: &'static str, body: String| {
        metrics::counter!(m::REJECTED_UPGRADES, "reason" => reason).increment(1);
        let mut resp = (status, body).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        resp
    };
    // A client's refusals (no credentials, a profile that is not there, a query hark cannot
    // take) are worth a line to whoever runs hark, but anyone can send them: logged within
    // a budget, the path only cut.
    let refused = |status: StatusCode, reason: &'static str, why: String| {
        if let Some(left_out) = REFUSAL_LOG.allow() {
            warn!(
                profile = cut(&profile_name).as_ref(),
                status = status.as_u16(),
                reason,
                left_out,
                "upgrade refused: {}",
                why.trim_end()
            );
        }
        reject(status, reason, why)
    };
    // Credentials first, so that unauthenticated clients cannot probe profile names.
    if !auth::check(&state.config.auth, &headers) {
        return refused(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong x-vapi-secret / Authorization header\n".into(),
        );
    }
    let Some(profile) = state.config.profile(&profile_name) else {
        return refused(
            StatusCode::NOT_FOUND,
            "unknown-profile",
            format!(
                "no profile named {}; the profiles here: {}\n",
                quote(&profile_name),
                state.config.profile_names().join(", ")
            ),
        );
    };
    let options = match profile
        .options
        .with_query(query.as_deref().unwrap_or_default())
    {
        Ok(options) => options,
        Err(e) => {
            return refused(StatusCode::BAD_REQUEST, "bad-query", format!("{e}\n"));
        }
    };
    // Every backend of the chain must speak it: a fallback that cannot would carry the
    // call on in the wrong language (Whisper's English-only models translate, they do not
    // refuse).
    if let Some(language) = &options.language {
        let unspoken = profile.chain().find_map(|name| {
            let backend = state.backends.get(name)?;
            backend
                .check_language(language)
                .err()
                .map(|e| format!("backend {name}: {e}"))
        });
        if let Some(e) = unspoken {
            return refused(StatusCode::BAD_REQUEST, "bad-query", format!("{e}\n"));
        }
    }
    // A call holds one of `max_sessions` from its upgrade on, so a call that opened is never
    // refused later: the platform retries a 503, but takes a call closed after it opened for
    // a failed transcriber. Until its start frame it also holds one of `max_pending_starts`,
    // so a flood of upgrades that never start is bounded in number as well as in time. Both
    // are taken before anything else is checked: a drain that sees no call held has none
    // coming, and a refusal below gives them back as the guards drop.
    let max = state.config.max_sessions;
    if !take_slot(&state.active, max) {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "capacity",
            format!(
                "hark holds max_sessions = {max} calls now. Retry after {RETRY_AFTER_SECS} s \
                 (Retry-After), send the call to another instance, or raise max_sessions if \
                 this machine has room for more (README, \"Limits and close codes\").\n"
            ),
        );
    }
    // Labelled by the profile's first backend: both come from the config, so the series
    // stay few whatever URLs clients try.
    let labels = [
        ("profile", profile_name.clone()),
        ("backend", profile.backend.clone()),
    ];
    let gauge = metrics::gauge!(m::SESSIONS_ACTIVE, &labels);
    gauge.increment(1.0);
    let active = ActiveGuard(state.clone(), gauge);
    let max_pending = state.config.max_pending_starts;
    if !take_slot(&state.pending, max_pending) {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "pending-capacity",
            format!("{max_pending} calls are already waiting to send their start frame\n"),
        );
    }
    metrics::gauge!(m::SESSIONS_PENDING).increment(1.0);
    let pending = PendingGuard(state.clone());
    if *state.shutdown.borrow() {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting-down",
            "server is shutting down\n".into(),
        );
    }
    // Any backend of the chain will do: the supervisor starts the first one that is ready.
    let ready = profile
        .chain()
        .any(|name| state.backends.get(name).is_some_and(|b| b.is_ready()));
    if !ready {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-ready",
            format!("backend {:?} is not ready yet\n", profile.backend),
        );
    }
    // The first backend of the chain carries the call; one that runs on this machine's
    // CPU refuses it here rather than let the calls it has fall behind. Asked last, since a
    // yes books room for the call. A first backend still loading leaves the call to the
    // chain's next.
    let booking = match state.backends.get(&profile.backend) {
        Some(backend) if backend.is_ready() => match backend.reserve(
            profile.channels.len(),
            options.language.as_deref().unwrap_or_default(),
        ) {
            Ok(booking) => Some(booking),
            Err(refusal) => {
                // The calls held include this one's slot, given back as the refusal returns.
                let calls = state.active.load(Ordering::Acquire).saturating_sub(1);
                if let Some(left_out) = HEADROOM_LOG.allow() {
                    warn!(
                        profile = %profile_name,
                        backend = %profile.backend,
                        calls,
                        left_out,
                        reason = refusal.reason(),
                        "upgrade refused: no headroom for another call: {refusal}"
                    );
                }
                return reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    refusal.reason(),
                    headroom_body(&refusal),
                );
            }
        },
        _ => None,
    };
    let admission = Admission {
        active: Some(active),
        pending: Some(pending),
        booking,
        total: metrics::counter!(m::SESSIONS_TOTAL, &labels),
    };
    let chain = profile
        .chain()
        .filter_map(|name| {
            Some(Link {
                name: name.into(),
                backend: state.backends.get(name)?.clone(),
            })
        })
        .collect();
    let settings = SessionSettings {
        id: state.next_id.fetch_add(1, Ordering::Relaxed),
        profile_name,
        chain,
        profile,
        options,
        max_lag: state.config.max_lag(),
        start_timeout: state.config.start_timeout(),
        max_frame_bytes: state.config.max_frame_bytes,
        max_frame: Duration::from_millis(state.config.max_frame_ms),
        limits: state.config.call_limits(),
        drain_timeout: state.config.drain_timeout(),
    };
    let shutdown = state.shutdown.clone();
    // A call now: bounded by `max_sessions`, no longer by the connection slots.
    if let Some(Extension(connection)) = connection {
        connection.upgraded();
    }
    // Let oversized frames through to the session, which answers them with a clear error.
    // tungstenite zero-fills its whole read buffer (128 KiB by default) on the first read,
    // so every call, started or not, held that much; larger frames still grow it.
    ws.read_buffer_size(WS_READ_BUFFER)
        .max_message_size(state.config.max_frame_bytes * 4 + 1024)
        .max_frame_size(state.config.max_frame_bytes * 4 + 1024)
        .on_upgrade(move |socket| async move {
            session::run(socket, settings, shutdown, Box::new(admission)).await;
        })
}
