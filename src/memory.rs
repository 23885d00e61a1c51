//! Giving freed heap back to the kernel once calls end.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena for reuse, so after
//! calls end the process stays at the high-water mark of every arena it ever used: resident
//! memory climbs round after round of calls though nothing leaks (BENCHMARKS.md, "Soak").
//! `malloc_trim` hands the free pages of every arena back. It runs on its own thread a
//! moment after calls end, at most once per `MIN_INTERVAL`, so a busy server trims rarely
//! and the arenas' locks are taken only briefly.

use std::sync::{Condvar, Mutex, Once};
use std::time::{Duration, Instant};

use tracing::debug;

/// Calls often end together (a burst, a drain): wait this long for the others.
const SETTLE: Duration = Duration::from_secs(2);
/// At most one trim per this long.
const MIN_INTERVAL: Duration = Duration::from_secs(10);

/// Asks for the heap to be trimmed soon: a call ended and freed its buffers.
pub fn call_ended() {
    static START: Once = Once::new();
    // Without the thread nothing is trimmed, and nothing else changes.
    START.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("hark-trim".into())
            .spawn(|| run(&TRIMMER));
    });
    if let Ok(mut pending) = TRIMMER.pending.lock() {
        *pending = true;
        TRIMMER.wake.notify_one();
    }
}

struct Trimmer {
    pending: Mutex<bool>,
    wake: Condvar,
}

static TRIMMER: Trimmer = Trimmer {
    pending: Mutex::new(false),
    wake: Condvar::new(),
};

fn run(trimmer: &Trimmer) {
    loop {
        {
            let Ok(mut pending) = trimmer.pending.lock() else {
                return;
            };
            while !*pending {
                pending = match trimmer.wake.wait(pending) {
                    Ok(p) => p,
                    Err(_) => return,
                };
            }
            *pending = false;
        }
        std::thread::sleep(SETTLE);
        let started = Instant::now();
        let before = resident_bytes();
        trim();
        debug!(
            took_ms = started.elapsed().as_secs_f64() * 1e3,
            released_mb = before.saturating_sub(resident_bytes()) as f64 / 1e6,
            "heap trimmed"
        );
        std::thread::sleep(MIN_INTERVAL.saturating_sub(SETTLE));
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks the allocator's own arenas, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// Resident memory from /proc/self/statm (0 where it cannot be read).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}
