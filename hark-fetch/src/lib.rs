//! Pinned downloads into hark's cache: a file named by URL (or a local path) and its sha256
//! is downloaded once into a temporary file while hashed, checked, and handed to the caller
//! to unpack into a staging folder that is renamed into place with a marker written last.
//!
//! Shared by the server's engine and turn-model fetch and by `hark bench`'s speech corpus,
//! so that they fail, report progress and survive interruptions the same way.

mod download;
mod hash;
mod install;
mod progress;
mod temp;

use std::io;
use std::path::PathBuf;

pub use download::{Fetched, Pinned, fetch_file, local_path, root_certs};
pub use hash::{hash_file, hex, sha256_hex};
pub use install::{install, marker_matches, write_marker};
pub use temp::TempPath;

/// What went wrong, in terms the caller turns into advice for its own users.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The network or server failed; `cause` is the transport's words.
    #[error("could not download {url}: {cause}")]
    Download { url: String, cause: String },

    /// The file arrived (or was found) but is not the pinned one.
    #[error("{url} has sha256 {actual}, expected {expected}")]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },

    /// A local path or `file://` URL could not be read.
    #[error("could not read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },

    /// The cache folder could not be written.
    #[error("could not {action} {}: {source}", path.display())]
    Cache {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

/// `$XDG_CACHE_HOME/hark`, else `$HOME/.cache/hark`, else `./.cache/hark`.
pub fn default_cache_dir() -> PathBuf {
    let non_empty = |key| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return PathBuf::from(xdg).join("hark");
    }
    let home = non_empty("HOME").map(PathBuf::from).unwrap_or_default();
    home.join(".cache").join("hark")
}

/// An `Error::Cache` maker for `map_err`.
pub fn cache_err(action: &'static str, path: &std::path::Path) -> impl FnOnce(io::Error) -> Error {
    let path = path.to_owned();
    move |source| Error::Cache {
        action,
        path,
        source,
    }
}
