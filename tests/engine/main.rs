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
