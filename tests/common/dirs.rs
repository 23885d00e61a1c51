//! Where the engine and the dev clips are, for tests that load them without a server
//! (`#[path = "common/dirs.rs"] mod dirs;`): the same places `hark` itself uses.

use std::path::PathBuf;

use hark::backend::moonshine::fetch;

/// `HARK_CACHE_DIR`, or hark's default cache.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("HARK_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => fetch::default_cache_dir(),
    }
}

/// `HARK_CLIPS_DIR`, or where `samples/fetch-clips.sh` puts them.
pub fn clips_dir() -> PathBuf {
    match std::env::var_os("HARK_CLIPS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => fetch::default_cache_dir().join("clips"),
    }
}
