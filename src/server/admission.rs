//! A call's admission: its `max_sessions` slot from the upgrade on, its
//! `max_pending_starts` slot until the start frame, each given back when dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::AppState;
use crate::backend::Booking;
use crate::metrics as m;
use crate::session;

/// Counts a live session; the gauge is the session's labelled `hark_sessions_active`.
pub(super) struct ActiveGuard(pub(super) Arc<AppState>, pub(super) metrics::Gauge);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
        self.1.decrement(1.0);
        crate::memory::call_ended();
    }
}

/// Takes one of `max` slots counted by `held`; false when all are taken.
pub(super) fn take_slot(held: &AtomicUsize, max: usize) -> bool {
    held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < max).then_some(n + 1)
    })
    .is_ok()
}

/// Counts a call waiting for its start frame.
pub(super) struct PendingGuard(pub(super) Arc<AppState>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::AcqRel);
        metrics::gauge!(m::SESSIONS_PENDING).decrement(1.0);
    }
}

/// An upgraded call's slots: at its start frame the pending one goes and the call keeps its
/// `max_sessions` slot until it ends; the room its first backend booked goes back once its
/// channels started, or when the call ends before that.
pub(super) struct Admission {
    pub(super) active: Option<ActiveGuard>,
    pub(super) pending: Option<PendingGuard>,
    pub(super) booking: Option<Booking>,
    /// Calls that started, by profile and backend.
    pub(super) total: metrics::Counter,
}

impl session::Admit for Admission {
    fn admit(&mut self) -> Box<dyn Send> {
        self.total.increment(1);
        self.pending = None;
        Box::new(self.active.take())
    }

    fn started(&mut self) {
        self.booking = None;
    }
}
