//! Per-call limits that need state of their own: the message rate.

use tokio::time::Instant;

/// Average and burst message rate a call may send (a token bucket): one token per
/// message, `burst` at most, refilled at `rate` a second.
pub(super) struct RateLimit {
    tokens: f64,
    pub(super) rate: f64,
    pub(super) burst: f64,
    at: Instant,
}

impl RateLimit {
    pub(super) fn new(rate: u32, burst: u32) -> Self {
        Self {
            tokens: f64::from(burst),
            rate: f64::from(rate),
            burst: f64::from(burst),
            at: Instant::now(),
        }
    }

    /// Takes a token for one message; false when the bucket is empty.
    pub(super) fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * self.rate;
        self.at = now;
        self.tokens = (self.tokens + refill).min(self.burst);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}
