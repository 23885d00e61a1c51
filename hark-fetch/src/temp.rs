//! Temporary paths in the cache folder itself, so that the final step is a rename on one
//! file system.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A path in the cache dir that is deleted (file or tree) when dropped, so that failures and
/// panics leave no half-written downloads or unpacks behind.
#[derive(Debug)]
pub struct TempPath {
    pub path: PathBuf,
}

impl TempPath {
    /// `<dir>/.<prefix>-<what>-<pid>-<nanos>-<n>.tmp`: unique across processes and threads.
    pub fn new(dir: &Path, prefix: &str, what: &str) -> TempPath {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".{prefix}-{what}-{}-{nanos}-{n}.tmp", std::process::id());
        TempPath {
            path: dir.join(name),
        }
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = match fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&self.path),
            Ok(_) => fs::remove_file(&self.path),
            Err(_) => Ok(()),
        };
    }
}
