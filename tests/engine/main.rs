//! The embedded recognizer: the engine itself, real speech through the server, the
//! end-of-turn model, admission under overload.
//!
//! One test binary per area, so the shared test kit (hark-testkit) and each area's
//! helpers compile once.

mod languages;
mod model_shapes;
mod moonshine_engine;
mod noise;
mod overload;
mod shedding;
mod speech;
mod turn_model;
mod turns;
mod whisper_engine;
