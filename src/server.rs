//! HTTP routes: the websocket upgrade (with authentication, profile lookup and admission
//! control before the upgrade), health, readiness and metrics; and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::auth;
use crate::backend::Registry;
use crate::config::{Config, DEFAULT_PROFILE};
use crate::metrics as m;
use crate::session::{self, SessionSettings};

/// Sent with 503 so the platform (or a load balancer) retries shortly.
const RETRY_AFTER_SECS: &str = "2";

struct AppState {
    config: Config,
    backends: Arc<Registry>,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
    active: AtomicUsize,
    idle: Notify,
    next_id: AtomicU64,
    shutdown: watch::Receiver<bool>,
}

/// Counts a live session and wakes shutdown when the last one ends.
struct ActiveGuard(Arc<AppState>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let left = self.0.active.fetch_sub(1, Ordering::AcqRel) - 1;
        metrics::gauge!(m::SESSIONS_ACTIVE).set(left as f64);
        if left == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A bound server, ready to run.
pub struct Server {
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown_tx: watch::Sender<bool>,
}

impl Server {
    pub async fn bind(config: Config, backends: Registry) -> anyhow::Result<Self> {
        let names: Vec<&str> = backends.names().collect();
        config.validate(&names)?;
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
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
            idle: Notify::new(),
            next_id: AtomicU64::new(1),
            shutdown,
        });
        Ok(Self {
            listener,
            state,
            shutdown_tx,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or(self.state.config.listen)
    }

    /// Serves until `signal` completes, then drains live calls (up to the drain timeout)
    /// and returns once every call has closed.
    pub async fn run(
        self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let state = self.state.clone();
        let app = router(state.clone());
        info!(addr = %self.local_addr(), "hark listening");
        let shutdown_tx = self.shutdown_tx;
        let stop = async move {
            signal.await;
            info!("shutdown requested: no new calls; draining live calls");
            let _ = shutdown_tx.send(true);
        };
        // Transcripts are small and latency-bound: send them without Nagle's delay.
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await?;
        // Sessions close themselves at the drain deadline; allow for their flush and close.
        let wait = state.config.drain_timeout() + Duration::from_secs(10);
        let drained = tokio::time::timeout(wait, async {
            loop {
                let idle = state.idle.notified();
                if state.active.load(Ordering::Acquire) == 0 {
                    break;
                }
                idle.await;
            }
        })
        .await;
        if drained.is_err() {
            warn!(
                active = state.active.load(Ordering::Acquire),
                "calls still open after the drain timeout"
            );
        }
        info!("hark stopped");
        Ok(())
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/api/custom-transcriber", get(upgrade_default))
        .route("/api/custom-transcriber/{profile}", get(upgrade_profile))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(render_metrics))
        .with_state(state)
}

async fn upgrade_default(
    state: State<Arc<AppState>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    upgrade(state, DEFAULT_PROFILE.to_string(), query, headers, ws)
}

async fn upgrade_profile(
    state: State<Arc<AppState>>,
    Path(profile): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    upgrade(state, profile, query, headers, ws)
}

fn upgrade(
    State(state): State<Arc<AppState>>,
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
    // Credentials first, so that unauthenticated clients cannot probe profile names.
    if !auth::check(&state.config.auth, &headers) {
        warn!(profile = %profile_name, "upgrade refused: missing or wrong credentials");
        return reject(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong x-vapi-secret / Authorization header\n".into(),
        );
    }
    let Some(profile) = state.config.profile(&profile_name) else {
        return reject(
            StatusCode::NOT_FOUND,
            "unknown-profile",
            format!("no profile named {profile_name:?}\n"),
        );
    };
    let options = match profile
        .options
        .with_query(query.as_deref().unwrap_or_default())
    {
        Ok(options) => options,
        Err(e) => {
            return reject(StatusCode::BAD_REQUEST, "bad-query", format!("{e}\n"));
        }
    };
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
    // CPU refuses it here rather than let the calls it has fall behind.
    if !state
        .backends
        .get(&profile.backend)
        .is_none_or(|b| b.has_headroom(profile.channels.len()))
    {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "capacity",
            format!(
                "backend {:?} has no headroom for another call\n",
                profile.backend
            ),
        );
    }
    let max = state.config.max_sessions;
    let admitted = state
        .active
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        });
    let Ok(previous) = admitted else {
        return reject(
            StatusCode::SERVICE_UNAVAILABLE,
            "capacity",
            format!("server at capacity ({max} calls)\n"),
        );
    };
    metrics::gauge!(m::SESSIONS_ACTIVE).set((previous + 1) as f64);
    metrics::counter!(m::SESSIONS_TOTAL, "profile" => profile_name.clone()).increment(1);
    let guard = ActiveGuard(state.clone());
    let settings = SessionSettings {
        id: state.next_id.fetch_add(1, Ordering::Relaxed),
        profile_name,
        profile,
        options,
        max_lag: state.config.max_lag(),
        start_timeout: state.config.start_timeout(),
        max_frame_bytes: state.config.max_frame_bytes,
        limits: state.config.call_limits(),
        drain_timeout: state.config.drain_timeout(),
    };
    let backends = state.backends.clone();
    let shutdown = state.shutdown.clone();
    // Let oversized frames through to the session, which answers them with a clear error.
    ws.max_message_size(state.config.max_frame_bytes * 4 + 1024)
        .max_frame_size(state.config.max_frame_bytes * 4 + 1024)
        .on_upgrade(move |socket| async move {
            session::run(socket, settings, backends, shutdown).await;
            drop(guard);
        })
}

async fn ready(State(state): State<Arc<AppState>>) -> Response {
    let default_backend = state
        .config
        .profile(DEFAULT_PROFILE)
        .map(|p| p.backend)
        .unwrap_or_default();
    let ready = state
        .backends
        .get(&default_backend)
        .is_some_and(|b| b.is_ready());
    if *state.shutdown.borrow() {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response()
    } else if !ready {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("backend {default_backend:?} not ready\n"),
        )
            .into_response()
    } else if state.active.load(Ordering::Acquire) >= state.config.max_sessions
        || !state
            .backends
            .get(&default_backend)
            .is_some_and(|b| b.has_headroom(2))
    {
        (StatusCode::SERVICE_UNAVAILABLE, "at capacity\n").into_response()
    } else {
        "ready\n".into_response()
    }
}

async fn render_metrics(State(state): State<Arc<AppState>>) -> Response {
    state.metrics.run_upkeep();
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4"),
        )],
        state.metrics.render(),
    )
        .into_response()
}
