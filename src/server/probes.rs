//! Liveness, readiness and `/metrics`: one readiness rule behind `/readyz` and the
//! `hark_ready` gauge.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::config::DEFAULT_PROFILE;
use crate::metrics as m;

/// Why an instance should get no new calls now.
enum NotReady {
    ShuttingDown,
    /// The default profile's first backend is missing or still loading.
    Loading(String),
    /// At `max_sessions`, or its recognizer has no headroom for a call.
    AtCapacity,
}

/// The one readiness rule. `capacity`: also whether a call would be admitted now (the
/// probe asks; the gauge does not, so that a busy instance is not an unready one).
fn readiness(state: &AppState, capacity: bool) -> Result<(), NotReady> {
    if *state.shutdown.borrow() {
        return Err(NotReady::ShuttingDown);
    }
    let default = state.config.profile(DEFAULT_PROFILE);
    let default_backend = default
        .as_ref()
        .map(|p| p.backend.clone())
        .unwrap_or_default();
    let Some(backend) = state
        .backends
        .get(&default_backend)
        .filter(|b| b.is_ready())
    else {
        return Err(NotReady::Loading(default_backend));
    };
    // A call of the default profile, as its upgrade would be asked: its channels, its
    // language (a call only the dearer model speaks costs more).
    let (channels, language) = default.as_ref().map_or((2, ""), |p| {
        (
            p.channels.len(),
            p.options.language.as_deref().unwrap_or_default(),
        )
    });
    if capacity
        && (state.active.load(Ordering::Acquire) >= state.config.max_sessions
            || !backend.has_headroom(channels, language))
    {
        return Err(NotReady::AtCapacity);
    }
    Ok(())
}

pub(super) async fn ready(State(state): State<Arc<AppState>>) -> Response {
    match readiness(&state, true) {
        Ok(()) => "ready\n".into_response(),
        Err(NotReady::ShuttingDown) => {
            (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response()
        }
        Err(NotReady::Loading(backend)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("backend {backend:?} not ready\n"),
        )
            .into_response(),
        Err(NotReady::AtCapacity) => {
            (StatusCode::SERVICE_UNAVAILABLE, "at capacity\n").into_response()
        }
    }
}

pub(super) async fn render_metrics(State(state): State<Arc<AppState>>) -> Response {
    // States, not events: sampled at each scrape so an alert sees an instance that stays
    // unready even if no probe asks. Capacity is left out (see hark_sessions_active against
    // hark_sessions_max instead).
    for name in state.backends.names() {
        let up = state.backends.get(name).is_some_and(|b| b.is_ready());
        metrics::gauge!(m::BACKEND_READY, "backend" => name.to_string())
            .set(f64::from(u8::from(up)));
    }
    let ready = readiness(&state, false).is_ok();
    metrics::gauge!(m::READY).set(f64::from(u8::from(ready)));
    metrics::gauge!(m::SESSIONS_MAX).set(state.config.max_sessions as f64);
    metrics::gauge!(m::BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
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
