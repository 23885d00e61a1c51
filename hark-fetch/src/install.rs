//! Complete versus interrupted: a staging folder gets a marker file last and is renamed into
//! place, so a folder with the right marker is complete, without touching the network.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use crate::{Error, TempPath, cache_err};

/// Whether `root/<name>` holds `value` (compared trimmed, ignoring ASCII case).
pub fn marker_matches(root: &Path, name: &str, value: &str) -> bool {
    fs::read_to_string(root.join(name))
        .is_ok_and(|marker| marker.trim().eq_ignore_ascii_case(value.trim()))
}

/// Writes `value` to `dir/<name>` and syncs it: the last step before `install`.
pub fn write_marker(dir: &Path, name: &str, value: &str) -> Result<(), Error> {
    let path = dir.join(name);
    let mut file = File::create(&path).map_err(cache_err("create", &path))?;
    writeln!(file, "{}", value.trim().to_ascii_lowercase())
        .and_then(|()| file.sync_all())
        .map_err(cache_err("write", &path))
}

/// Moves a complete staging folder to `root`, replacing a stale one. If another process got
/// there first with a complete folder (as `complete` judges), theirs wins and ours is
/// discarded when `staging` drops. `prefix` names the stale folder moved aside.
pub fn install(
    staging: &TempPath,
    root: &Path,
    prefix: &str,
    complete: impl Fn(&Path) -> bool,
) -> Result<(), Error> {
    for _ in 0..3 {
        match fs::rename(&staging.path, root) {
            Ok(()) => return Ok(()),
            Err(_) if complete(root) => return Ok(()),
            Err(e) if !root.exists() => return Err(cache_err("create", root)(e)),
            Err(_) => {
                // Incomplete or from another pin: move it aside first, since a non-empty
                // directory cannot be renamed over.
                let stale = TempPath::new(root.parent().unwrap_or(root), prefix, "stale");
                match fs::rename(root, &stale.path) {
                    Ok(()) => {}
                    Err(_) if !root.exists() => {}
                    Err(e) => return Err(cache_err("replace", root)(e)),
                }
            }
        }
    }
    Err(cache_err("replace", root)(io::Error::other(
        "another process keeps replacing it",
    )))
}
