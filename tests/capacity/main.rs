//! What the machine carries: admission under overload and the shedding ladder under load.
//!
//! These tests measure the decoders, so they need the machine to themselves. Cargo runs
//! test binaries one after another, so no other area's tests run beside these, and within
//! this binary each test holds `MACHINE` throughout, so they run one at a time too. (Beside
//! the engine tests, a test sharing the Moonshine decoders and the two cores made admission
//! rightly refuse calls it takes on an idle machine.)

mod overload;
mod shedding;

/// Held for the whole of a test that measures the machine: `.lock().await` in an async
/// test, `blocking_lock()` in a thread's. Not poisoned by a test that fails holding it.
pub(crate) static MACHINE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
