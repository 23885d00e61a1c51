//! A profile's recognition settings, and the query overrides a call's URL may carry. They
//! live with the backends, which read them; the config only holds them per profile.

use serde::{Deserialize, Serialize};

use crate::untrusted::quoted;

/// A profile's recognition settings. Each backend reads those that mean something to it;
/// a key none of them knows is refused when the config is read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Embedded recognizer: overrides `moonshine.endpoint_ms`.
    pub endpoint_ms: Option<u64>,
    /// Embedded recognizer: overrides `moonshine.narrowband_endpoint_ms`.
    pub narrowband_endpoint_ms: Option<u64>,
    /// Embedded recognizer: overrides `whisper.assistant_endpoint_ms`.
    pub assistant_endpoint_ms: Option<u64>,
    /// Embedded recognizer: overrides `moonshine.partial_interval_ms`.
    pub partial_interval_ms: Option<u64>,
    /// Embedded recognizer: overrides the engine's `hold_unfinished` (customer channel only).
    pub hold_unfinished: Option<bool>,
    /// Embedded recognizer: overrides the engine's `turn_model` (customer channel only; the
    /// model is loaded only if the engine's `turn_model` is on or some profile on it turns
    /// it on).
    pub turn_model: Option<bool>,
    /// The language spoken (BCP 47, e.g. `es`, `en-US`), or `auto`: network recognizers
    /// pass it on (`auto` is refused there); Whisper decodes in it with its multilingual
    /// model (base), or detects it per utterance with `auto`; Moonshine speaks English only.
    pub language: Option<String>,
    /// Network recognizers: words and phrases to listen for (product names, jargon).
    pub keyterms: Option<Vec<String>>,
    /// Deepgram: silence in ms that ends an utterance (`endpointing`; 0 turns it off).
    pub endpointing_ms: Option<u64>,
    /// AssemblyAI: confidence above which a turn ends (`end_of_turn_confidence_threshold`);
    /// the embedded Whisper: its own probability of a sentence's end after a pause's words
    /// below which the pause is held (overrides `whisper.end_of_turn_confidence_threshold`).
    pub end_of_turn_confidence_threshold: Option<f64>,
    /// The embedded Whisper: the sentence-end probability from which a pause ends at the
    /// endpoint; between `end_of_turn_confidence_threshold` and this, the silence that ends it
    /// grows with the doubt up to the hold (overrides `whisper.end_of_turn_sure_threshold`).
    pub end_of_turn_sure_threshold: Option<f64>,
    /// The embedded Whisper: the sentence-end probability from which a pause ends after
    /// `min_turn_silence_ms` rather than the endpoint (overrides
    /// `whisper.end_of_turn_quick_threshold`; 0: off).
    pub end_of_turn_quick_threshold: Option<f64>,
    /// Silence before a confident turn end: AssemblyAI's `min_turn_silence`; the embedded
    /// Whisper's for a pause read `end_of_turn_quick_threshold` sure (overrides
    /// `whisper.min_turn_silence_ms`; at most the endpoint).
    pub min_turn_silence_ms: Option<u64>,
    /// Silence that ends a turn whatever the end-of-turn model says: AssemblyAI's
    /// `max_turn_silence`; the embedded recognizer's hold (overrides the engine's
    /// `max_turn_silence_ms`).
    pub max_turn_silence_ms: Option<u64>,
}

/// The one range of `endpoint_ms` (and `narrowband_endpoint_ms`, `assistant_endpoint_ms`),
/// in ms, wherever it is set:
/// `[moonshine]`, a profile's options, `--endpoint-ms` / `HARK_ENDPOINT_MS` and a call's
/// `?endpoint_ms=`. Below 50 ms the pauses between words end utterances; above 5 s a final
/// comes long after the caller stopped (the segmenter's own ceiling).
pub const ENDPOINT_MS_MIN: u64 = 50;
pub const ENDPOINT_MS_MAX: u64 = 5_000;

/// Whether `ms` is a usable endpoint; the problem, naming `key`, otherwise.
/// (The error is a 400's body or a config problem's line: read, never matched.)
pub fn check_endpoint_ms(key: &str, ms: u64) -> Result<(), String> {
    if (ENDPOINT_MS_MIN..=ENDPOINT_MS_MAX).contains(&ms) {
        Ok(())
    } else {
        Err(format!(
            "{key} must be from {ENDPOINT_MS_MIN} to {ENDPOINT_MS_MAX} ms (got {ms})"
        ))
    }
}

/// Whether `t` is a usable `end_of_turn_confidence_threshold` (AssemblyAI's, the embedded
/// Whisper's): a probability. The problem, naming `key`, otherwise.
pub fn check_confidence(key: &str, t: f64) -> Result<(), String> {
    match (0.0..=1.0).contains(&t) {
        true => Ok(()),
        false => Err(format!("{key} must be within 0–1 (got {t})")),
    }
}

/// Query parameters a call's URL may carry to override its profile's options.
pub const QUERY_OVERRIDES: &[&str] = &[
    "language",
    "keyterms",
    "endpointing_ms",
    "endpoint_ms",
    "max_turn_silence_ms",
    "min_turn_silence_ms",
    "end_of_turn_confidence_threshold",
    "end_of_turn_sure_threshold",
    "end_of_turn_quick_threshold",
];

impl Options {
    /// Applies a call URL's query overrides (`?language=es&keyterms=Acme,refund`),
    /// refusing anything else with a message for the client.
    /// (The error is the 400's body.)
    pub fn with_query(&self, query: &str) -> Result<Self, String> {
        let mut out = self.clone();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "language" => {
                    check_language(&value)?;
                    out.language = Some(value.into_owned());
                }
                "keyterms" => {
                    let terms: Vec<String> = value
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                        .collect();
                    check_keyterms(&terms)?;
                    out.keyterms = Some(terms);
                }
                "endpointing_ms" => out.endpointing_ms = Some(query_ms(&key, &value, 0, 10_000)?),
                "endpoint_ms" => {
                    out.endpoint_ms =
                        Some(query_ms(&key, &value, ENDPOINT_MS_MIN, ENDPOINT_MS_MAX)?)
                }
                "max_turn_silence_ms" => {
                    out.max_turn_silence_ms =
                        Some(query_ms(&key, &value, ENDPOINT_MS_MIN, ENDPOINT_MS_MAX)?)
                }
                "min_turn_silence_ms" => {
                    out.min_turn_silence_ms = Some(query_ms(&key, &value, 0, ENDPOINT_MS_MAX)?)
                }
                "end_of_turn_confidence_threshold" => {
                    out.end_of_turn_confidence_threshold = Some(query_confidence(&key, &value)?)
                }
                "end_of_turn_sure_threshold" => {
                    out.end_of_turn_sure_threshold = Some(query_confidence(&key, &value)?)
                }
                "end_of_turn_quick_threshold" => {
                    out.end_of_turn_quick_threshold = Some(query_confidence(&key, &value)?)
                }
                other => {
                    return Err(format!(
                        "unknown query parameter {} (known: {})",
                        quoted(other),
                        QUERY_OVERRIDES.join(", ")
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Every bad setting, each with its reason.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, ms) in [
            ("endpoint_ms", self.endpoint_ms),
            ("narrowband_endpoint_ms", self.narrowband_endpoint_ms),
            ("assistant_endpoint_ms", self.assistant_endpoint_ms),
            ("max_turn_silence_ms", self.max_turn_silence_ms),
        ] {
            if let Some(ms) = ms
                && let Err(e) = check_endpoint_ms(key, ms)
            {
                out.push(e);
            }
        }
        if let Some(language) = &self.language
            && let Err(e) = check_language(language)
        {
            out.push(e);
        }
        if let Some(terms) = &self.keyterms
            && let Err(e) = check_keyterms(terms)
        {
            out.push(e);
        }
        for (key, t) in [
            (
                "end_of_turn_confidence_threshold",
                self.end_of_turn_confidence_threshold,
            ),
            (
                "end_of_turn_sure_threshold",
                self.end_of_turn_sure_threshold,
            ),
            (
                "end_of_turn_quick_threshold",
                self.end_of_turn_quick_threshold,
            ),
        ] {
            if let Some(t) = t
                && let Err(e) = check_confidence(key, t)
            {
                out.push(e);
            }
        }
        out
    }
}

/// The `language` that asks the engine to find it: the embedded Whisper's detection.
pub const AUTO_LANGUAGE: &str = "auto";

/// What a relay says of `auto`: providers detect languages under options of their own, and
/// a tag they do not know fails the call at the provider, after it was admitted.
/// (The error is the 400's body or a config problem's line.)
pub fn relay_language(provider: &str, language: &str) -> Result<(), String> {
    match language == AUTO_LANGUAGE {
        true => Err(format!(
            "language \"auto\" is the embedded Whisper's detection; {provider} needs the \
             language named (a BCP 47 tag such as \"es\")"
        )),
        false => Ok(()),
    }
}

/// Longest keyterm list and term accepted (AssemblyAI's limits, the stricter provider's).
const MAX_KEYTERMS: usize = 100;
const MAX_KEYTERM_CHARS: usize = 50;

/// A BCP 47 tag (`es`, `en-US`), or `auto` (the embedded Whisper detects the language).
/// (The error is the 400's body or a config problem's line.)
pub(crate) fn check_language(value: &str) -> Result<(), String> {
    if value == AUTO_LANGUAGE {
        return Ok(());
    }
    let mut parts = value.split('-');
    let primary = parts.next().unwrap_or_default();
    let primary_ok =
        (2..=3).contains(&primary.len()) && primary.chars().all(|c| c.is_ascii_alphabetic());
    let rest_ok =
        parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if primary_ok && rest_ok {
        Ok(())
    } else {
        Err(format!(
            "language {} is not a language tag like \"es\" or \"en-US\", nor \"auto\"",
            quoted(value)
        ))
    }
}

/// At most `MAX_KEYTERMS` terms of at most `MAX_KEYTERM_CHARS`; the error is the 400's body.
fn check_keyterms(terms: &[String]) -> Result<(), String> {
    if terms.len() > MAX_KEYTERMS {
        return Err(format!(
            "at most {MAX_KEYTERMS} keyterms (got {})",
            terms.len()
        ));
    }
    match terms
        .iter()
        .find(|t| t.chars().count() > MAX_KEYTERM_CHARS || t.chars().any(char::is_control))
    {
        Some(t) => Err(format!(
            "keyterm {} is longer than {MAX_KEYTERM_CHARS} characters or has control characters",
            quoted(t)
        )),
        None => Ok(()),
    }
}

/// A query's probability ([`check_confidence`]); the error is the 400's body.
fn query_confidence(key: &str, value: &str) -> Result<f64, String> {
    let t = value
        .parse::<f64>()
        .map_err(|_| format!("{key} must be a number (got {})", quoted(value)))?;
    check_confidence(key, t)?;
    Ok(t)
}

/// A query's milliseconds within `min..=max`; the error is the 400's body.
fn query_ms(key: &str, value: &str, min: u64, max: u64) -> Result<u64, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| {
            format!(
                "{key} must be a whole number of ms from {min} to {max} (got {})",
                quoted(value)
            )
        })
}
