//! Any bytes as the first text frame: `Start::parse` answers without panic, and whatever
//! it accepts is within the contract (linear16, 8–48 kHz, 1 or 2 channels).
#![no_main]

use hark::protocol::{MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, Start};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The websocket layer hands text frames as UTF-8 only.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(start) = Start::parse(text) {
        assert!((MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&start.sample_rate));
        assert!((1..=2).contains(&start.channels));
        assert!(text.contains("linear16"));
    }
});
