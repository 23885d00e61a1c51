//! hark-bench's layers (ARCHITECTURE.md, "Modules of hark-bench"): each module uses only
//! modules of its own layer or below, and none of one layer use each other in a circle.

use std::path::Path;

/// Bottom first.
const LAYERS: &[&[&str]] = &[
    // The wire, audio files and words: what any measurement is made of.
    &[
        "protocol", "client", "wav", "resample", "wer", "phone", "fetch",
    ],
    // Speech arranged as calls: the folder index, conversations, the user's corpus.
    &["corpus_index", "conversation", "user_corpus"],
    // Measures per utterance and their statistics.
    &["report"],
    // Load shapes and capacity levels.
    &["shape"],
    // The run's report as written to --report.
    &["report_model"],
    // What is shown of it: the summary tables and the plots.
    &["summary", "plot"],
    // The flags and the run itself, or a saved run scored again.
    &["cli", "run", "rescore"],
];

#[test]
fn every_module_uses_only_its_own_layer_or_those_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let breaches = hark_testkit::layers::breaches(&src, LAYERS, &["main"]);
    assert!(breaches.is_empty(), "{}", breaches.join("\n"));
}
