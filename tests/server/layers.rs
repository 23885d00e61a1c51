//! The server crate's layers (ARCHITECTURE.md, "Layers"): each module uses only modules of
//! its own layer or below, and none of one layer use each other in a circle.

use std::path::Path;

/// Bottom first.
pub const LAYERS: &[&[&str]] = &[
    // What every layer above may use: the wire, audio, and process-wide services.
    &[
        "protocol",
        "audio",
        "resample",
        "metrics",
        "memory",
        "untrusted",
        "wheel",
    ],
    // Recognition: the backends (the embedded recognizer with its segmenter) and the
    // end-of-turn model.
    &["backend", "turn"],
    // The config file: it holds each backend's own section type.
    &["config"],
    // Backends built from the config.
    &["registry"],
    // One channel's recognition: the chain, reconnects, failover.
    &["supervisor"],
    // One call over the websocket; files through the same path.
    &["session", "transcribe"],
    // The HTTP front.
    &["auth", "tls", "connections", "server"],
    // The command's flags over the config file.
    &["flags"],
];

/// The binary's own modules (`main.rs` declares them), outside the library.
const BINARY: &[&str] = &["main", "assistant_config", "healthcheck"];

#[test]
fn every_module_uses_only_its_own_layer_or_those_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let breaches = hark_testkit::layers::breaches(&src, LAYERS, BINARY);
    assert!(breaches.is_empty(), "{}", breaches.join("\n"));
}
