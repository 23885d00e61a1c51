//! Property tests of the two parsers of client input (the start frame and the PCM framing),
//! run by `cargo test`; the coverage-guided fuzzer in fuzz/ goes deeper on the same
//! invariants.

use hark::audio::PcmDecoder;
use hark::protocol::{MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, Start};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, of the kinds a start frame's fields could wrongly hold.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (0u64..100_000).prop_map(|n| json!(n)),
        (0u64..4).prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![
            Just("start"),
            Just("linear16"),
            Just("raw"),
            Just("wav"),
            Just("16000")
        ]
        .prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
        prop::collection::vec(any::<u8>(), 0..3).prop_map(|v| json!(v)),
    ]
}

/// A JSON object with any subset of the start frame's keys, any values, and extra keys.
fn start_like() -> impl Strategy<Value = Map<String, Value>> {
    let key = prop_oneof![
        Just("type".to_string()),
        Just("encoding".to_string()),
        Just("container".to_string()),
        Just("sampleRate".to_string()),
        Just("channels".to_string()),
        "[a-zA-Z]{1,10}",
    ];
    prop::collection::vec((key, any_value()), 0..8).prop_map(|pairs| pairs.into_iter().collect())
}

/// What `Start::parse` must decide for an object: `Some` for a valid frame.
fn expected(frame: &Map<String, Value>) -> Option<Start> {
    let str_of = |k: &str| frame.get(k).and_then(Value::as_str);
    // `type` and `encoding` must be strings (a null `encoding` counts as missing), and
    // `container` a string or absent / null.
    if str_of("type") != Some("start") || str_of("encoding") != Some("linear16") {
        return None;
    }
    match frame.get("container") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "raw" => {}
        Some(_) => return None,
    }
    let rate = frame.get("sampleRate")?.as_u64()?;
    let channels = frame.get("channels")?.as_u64()?;
    if !(u64::from(MIN_SAMPLE_RATE)..=u64::from(MAX_SAMPLE_RATE)).contains(&rate)
        || !(1..=2).contains(&channels)
    {
        return None;
    }
    Some(Start {
        sample_rate: rate as u32,
        channels: channels as usize,
    })
}

/// The reference de-interleaving of a whole stream: complete sample frames only.
fn deinterleave(bytes: &[u8], channels: usize) -> Vec<Vec<i16>> {
    let mut out = vec![Vec::new(); channels];
    for frame in bytes.chunks_exact(channels * 2) {
        for (ch, s) in frame.chunks_exact(2).enumerate() {
            out[ch].push(i16::from_le_bytes([s[0], s[1]]));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn any_text_is_answered_without_panic(text in any::<String>()) {
        let _ = Start::parse(&text);
    }

    #[test]
    fn start_like_objects_are_judged_by_the_contract(frame in start_like()) {
        let text = Value::Object(frame.clone()).to_string();
        let got = Start::parse(&text);
        match expected(&frame) {
            Some(start) => prop_assert_eq!(got, Ok(start)),
            None => prop_assert!(got.is_err(), "{} accepted as {:?}", text, got),
        }
    }

    #[test]
    fn valid_start_frames_round_trip(
        rate in MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE,
        channels in 1usize..=2,
        container in prop::option::of(Just("raw")),
        extra in prop::collection::btree_map("[a-z]{1,8}", any_value(), 0..3),
    ) {
        let mut frame: Map<String, Value> = extra
            .into_iter()
            .filter(|(k, _)| !["type", "encoding", "container"].contains(&k.as_str()))
            .collect();
        frame.insert("type".into(), json!("start"));
        frame.insert("encoding".into(), json!("linear16"));
        frame.insert("sampleRate".into(), json!(rate));
        frame.insert("channels".into(), json!(channels));
        if let Some(c) = container {
            frame.insert("container".into(), json!(c));
        }
        let text = Value::Object(frame).to_string();
        prop_assert_eq!(
            Start::parse(&text),
            Ok(Start { sample_rate: rate, channels })
        );
    }

    #[test]
    fn any_chunking_of_any_pcm_deinterleaves_exactly(
        channels in 1usize..=2,
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.push(0);
        cuts.push(bytes.len());
        cuts.sort_unstable();
        let mut decoder = PcmDecoder::new(channels);
        let mut got = vec![Vec::new(); channels];
        for w in cuts.windows(2) {
            let out = decoder.decode(&bytes[w[0]..w[1]]);
            prop_assert_eq!(out.len(), channels);
            for (ch, samples) in out.iter().enumerate() {
                got[ch].extend_from_slice(samples);
            }
        }
        prop_assert_eq!(got, deinterleave(&bytes, channels));
        prop_assert_eq!(decoder.pending_bytes(), bytes.len() % (channels * 2));
    }
}
