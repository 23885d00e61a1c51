//! The embedded recognizer: the engine itself, real speech through the server, the
//! end-of-turn model. Admission and shedding under load are `tests/capacity`'s: they need
//! the machine alone.
//!
//! One test binary per area, so the shared test kit (hark-testkit) and each area's
//! helpers compile once.

mod languages;
mod model_shapes;
mod moonshine_engine;
mod noise;
mod speech;
mod turn_model;
mod turns;
mod whisper_engine;

/// A text's words as the bench scores them (lower case, no punctuation), one space apart.
pub(crate) fn words(text: &str) -> String {
    hark_bench::wer::normalize(text).join(" ")
}

/// Adds profile `name`: the embedded Whisper with `options`, beside the default profile.
pub(crate) fn whisper_profile(
    config: &mut hark::config::Config,
    name: &str,
    options: hark::backend::Options,
) {
    config.profiles.insert(
        name.into(),
        hark::config::Profile {
            backend: "whisper".into(),
            options,
            ..Default::default()
        },
    );
}
