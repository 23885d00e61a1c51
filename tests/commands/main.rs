//! The `hark` command as a user runs it: check-config, assistant-config, bench, the
//! container's steps, scale-out behind nginx, and the test command's prerequisites.
//!
//! One test binary per area, so the shared test kit (hark-testkit) and each area's
//! helpers compile once.

mod assistant_config;
mod bench_forward;
mod check_config;
mod deploy;
mod logs;
mod prerequisites;
mod scale_out;
mod tls;
mod transcribe;
