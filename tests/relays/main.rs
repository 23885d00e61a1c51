//! Network backends against provider mocks that follow the providers' documented protocols:
//! relaying, reconnects and replay, failover, failure handling.
//!
//! One test binary per area, so the shared test kit (hark-testkit) and each area's
//! helpers compile once.

mod failures;
mod provider_mocks;
mod relay;
mod riva;
mod slow_providers;
