//! Builds the named backends a config refers to. A new backend gets its line here.

use crate::backend::Registry;
use crate::backend::moonshine::Moonshine;
use crate::config::Config;

/// The name of the embedded default backend.
pub const MOONSHINE: &str = "moonshine";

/// Creates every built-in backend. Backends that load models start loading now, in the
/// background, so the server can answer health checks meanwhile.
pub fn from_config(config: &Config) -> Registry {
    let mut registry = Registry::default();
    registry.insert(MOONSHINE, Moonshine::spawn(&config.moonshine));
    registry
}
