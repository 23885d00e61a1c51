//! AssemblyAI Universal Streaming v3 (`/v3/ws`). Facts: docs/PROVIDERS.md, "AssemblyAI".
//!
//! One connection per channel (the service takes mono audio). It refuses audio faster than
//! real time and frames outside 50–1000 ms, so the relay paces at 1.0× in frames of at
//! least 50 ms: a replay after a reconnect is caught up only by leaving out the long part of
//! pauses (`catch_up`), ending the turn there with `ForceEndpoint`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::relay::{self, Heard, Pacing, Provider, RelaySettings};
use super::{ApiKey, Backend, BackendError, ChannelSpec, EventSink};
use crate::audio::AudioSource;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AssemblyAiConfig {
    /// The streaming endpoint (`wss://streaming.eu.assemblyai.com/v3/ws` for the EU).
    pub url: String,
    /// The environment variable holding the API key (sent as `Authorization: <key>`).
    pub api_key_env: String,
    pub speech_model: String,
    /// Punctuated, cased finals: the platform answers 0.1 s after a final ending in
    /// punctuation and 1.5 s after one without (docs/PROVIDERS.md, "How a final's ending costs time").
    pub format_turns: bool,
    /// Terms to listen for (`keyterms_prompt`).
    pub keyterms: Vec<String>,
    pub end_of_turn_confidence_threshold: Option<f64>,
    pub min_turn_silence_ms: Option<u64>,
    pub max_turn_silence_ms: Option<u64>,
    /// Other query parameters, passed as they are.
    pub query: BTreeMap<String, toml::Value>,
    pub connect_timeout_ms: u64,
    /// Voiced audio flowing with no answer for this long counts as a stall.
    pub stall_timeout_ms: u64,
    /// Reconnects in a row before the channel fails over.
    pub max_reconnects: u32,
    /// Allow a `ws://` URL to a host other than this machine: the API key would cross the
    /// network in clear, so it takes saying so (e.g. a provider's proxy on a private link).
    pub allow_insecure: bool,
}

impl AssemblyAiConfig {
    /// What `hark check-config` and `hark serve` refuse in this section.
    pub fn problems(&self) -> Vec<String> {
        super::relay::check_url(&self.url, self.allow_insecure)
            .err()
            .into_iter()
            .collect()
    }
}

impl Default for AssemblyAiConfig {
    fn default() -> Self {
        Self {
            url: "wss://streaming.assemblyai.com/v3/ws".into(),
            api_key_env: "ASSEMBLYAI_API_KEY".into(),
            speech_model: "universal-streaming-english".into(),
            format_turns: true,
            keyterms: Vec::new(),
            end_of_turn_confidence_threshold: None,
            min_turn_silence_ms: None,
            max_turn_silence_ms: None,
            query: BTreeMap::new(),
            connect_timeout_ms: 3_000,
            stall_timeout_ms: 2_500,
            max_reconnects: 3,
            allow_insecure: false,
        }
    }
}

pub struct AssemblyAi {
    name: Arc<str>,
    config: AssemblyAiConfig,
    key: ApiKey,
}

impl AssemblyAi {
    pub fn new(name: &str, config: AssemblyAiConfig, key: ApiKey) -> Self {
        Self {
            name: name.into(),
            config,
            key,
        }
    }

    fn query(&self, spec: &ChannelSpec) -> Vec<(String, String)> {
        let c = &self.config;
        let o = &spec.options;
        let mut q: Vec<(String, String)> = vec![
            ("sample_rate".into(), spec.sample_rate.to_string()),
            ("encoding".into(), "pcm_s16le".into()),
            ("speech_model".into(), c.speech_model.clone()),
            ("format_turns".into(), c.format_turns.to_string()),
        ];
        let terms = o.keyterms.as_ref().unwrap_or(&c.keyterms);
        if !terms.is_empty() {
            let json = serde_json::to_string(terms).unwrap_or_else(|_| "[]".into());
            q.push(("keyterms_prompt".into(), json));
        }
        if let Some(t) = o
            .end_of_turn_confidence_threshold
            .or(c.end_of_turn_confidence_threshold)
        {
            q.push(("end_of_turn_confidence_threshold".into(), t.to_string()));
        }
        if let Some(ms) = o.min_turn_silence_ms.or(c.min_turn_silence_ms) {
            q.push(("min_turn_silence".into(), ms.to_string()));
        }
        if let Some(ms) = o.max_turn_silence_ms.or(c.max_turn_silence_ms) {
            q.push(("max_turn_silence".into(), ms.to_string()));
        }
        relay::pass_through(&mut q, &c.query);
        q
    }
}

impl Backend for AssemblyAi {
    fn check_language(&self, language: &str) -> Result<(), String> {
        crate::backend::options::relay_language("AssemblyAI", language)
    }

    fn max_retries(&self) -> u32 {
        self.config.max_reconnects
    }

    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        let query = self.query(&spec);
        let request = relay::request(&self.config.url, &query, &self.key, "")?;
        let settings = RelaySettings::from_ms(
            self.config.connect_timeout_ms,
            self.config.stall_timeout_ms,
            5_000,
        );
        let stream = Stream {
            format_turns: self.config.format_turns,
            open: false,
            last_final: None,
        };
        relay::spawn(self.name.clone(), stream, request, settings, audio, events);
        Ok(())
    }
}

/// One AssemblyAI connection: which turn is open and which was last made final.
struct Stream {
    format_turns: bool,
    open: bool,
    last_final: Option<i64>,
}

impl Provider for Stream {
    fn pacing(&self) -> Pacing {
        Pacing {
            max_speed: 1.0,
            burst: Duration::ZERO,
            min_frame: Duration::from_millis(50),
            max_frame: Duration::from_millis(1000),
        }
    }

    fn end_turn(&self) -> Option<Message> {
        Some(Message::text(r#"{"type":"ForceEndpoint"}"#))
    }

    fn keepalive(&self) -> Option<Message> {
        // Only an `inactivity_timeout` session needs one, and audio flows all call long.
        None
    }

    fn closing(&self) -> Vec<Message> {
        vec![Message::text(r#"{"type":"Terminate"}"#)]
    }

    fn idle(&self) -> bool {
        !self.open
    }

    fn read(&mut self, text: &str, heard: &mut Vec<Heard>) {
        let Some(msg) = relay::parse::<Streaming>(text, heard) else {
            return;
        };
        match msg {
            Streaming::Turn(turn) => self.turn(turn, heard),
            Streaming::Termination {} => heard.push(Heard::Ended),
            Streaming::Error(e) => heard.push(Heard::Error {
                code: match e.error_code {
                    None | Some(Value::Null) => None,
                    Some(Value::String(code)) => Some(code),
                    Some(code) => Some(code.to_string()),
                },
                message: e.error,
            }),
            // Begin, and Warning, SpeechStarted, … carry no text.
            Streaming::Other => {}
        }
    }

    fn close_is_permanent(&self, code: u16) -> bool {
        // 1008 unauthorized, 3006 invalid message, 3007 input out of bounds, 3009 too many
        // sessions: the same request would be refused again. 3005 (server error) and 3008
        // (session expired after 3 h) are worth a new connection.
        matches!(code, 1008 | 3006 | 3007 | 3009)
    }
}

impl Stream {
    /// A turn is final when it ended and, if formatting was asked for, is formatted: the
    /// rule for both server behaviours (formatted inline, or in a second message).
    fn turn(&mut self, turn: Turn, heard: &mut Vec<Heard>) {
        let order = Some(turn.turn_order);
        if order == self.last_final {
            return;
        }
        if turn.end_of_turn && (!self.format_turns || turn.turn_is_formatted) {
            heard.push(Heard::Final(turn.transcript));
            if let Some(word) = turn.words.last() {
                heard.push(Heard::Settled(word.end / 1000.0));
            }
            self.open = false;
            self.last_final = order;
        } else {
            self.open |= !turn.transcript.trim().is_empty();
            heard.push(Heard::Partial(turn.transcript));
        }
    }
}

/// A message of AssemblyAI's Universal Streaming v3 API (docs/PROVIDERS.md): the fields hark
/// reads, required where the protocol always sends them; others are ignored.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Streaming {
    Turn(Turn),
    /// After `Terminate`: every turn has been answered.
    Termination {},
    Error(StreamingError),
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct Turn {
    turn_order: i64,
    end_of_turn: bool,
    /// Absent from sessions without `format_turns`.
    #[serde(default)]
    turn_is_formatted: bool,
    /// Every word of the turn so far.
    transcript: String,
    #[serde(default)]
    words: Vec<TurnWord>,
}

#[derive(Debug, Deserialize)]
struct TurnWord {
    /// Milliseconds from the stream's start.
    end: f64,
}

#[derive(Debug, Deserialize)]
struct StreamingError {
    error_code: Option<Value>,
    error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(order: i64, text: &str, end: bool, formatted: bool) -> String {
        format!(
            r#"{{"type":"Turn","turn_order":{order},"end_of_turn":{end},"turn_is_formatted":{formatted},
                "transcript":"{text}","words":[{{"start":100,"end":640,"text":"x","word_is_final":true}}]}}"#
        )
    }

    fn heard(format_turns: bool, messages: &[String]) -> Vec<Heard> {
        let mut s = Stream {
            format_turns,
            open: false,
            last_final: None,
        };
        let mut out = Vec::new();
        for m in messages {
            s.read(m, &mut out);
        }
        out
    }

    #[test]
    fn older_servers_final_is_the_formatted_second_message() {
        let out = heard(
            true,
            &[
                turn(0, "hi my", false, false),
                turn(0, "hi my name", true, false),
                turn(0, "Hi, my name.", true, true),
                // A late repeat of a turn already final changes nothing.
                turn(0, "Hi, my name.", true, true),
            ],
        );
        assert_eq!(
            out,
            [
                Heard::Partial("hi my".into()),
                Heard::Partial("hi my name".into()),
                Heard::Final("Hi, my name.".into()),
                Heard::Settled(0.64),
            ]
        );
    }

    #[test]
    fn a_turn_missing_what_the_protocol_always_sends_is_an_error_not_silence() {
        let out = heard(
            true,
            &[
                // The transcript renamed: read with a default it would be an empty final.
                r#"{"type":"Turn","turn_order":0,"end_of_turn":true,"turn_is_formatted":true,"text":"Hi."}"#.into(),
                r#"{"type":"Turn","turn_order":0,"transcript":"Hi."}"#.into(),
                r#"{"type":"Turn","turn_order":0,"end_of_turn":true,"transcript":"Hi.","words":[{"start":1}]}"#.into(),
            ],
        );
        assert_eq!(out.len(), 3, "{out:?}");
        for h in &out {
            assert!(matches!(h, Heard::Unreadable(_)), "{h:?}");
        }
        let out = heard(
            false,
            &[
                r#"{"type":"Begin","id":"x","expires_at":1}"#.into(),
                r#"{"type":"Error","error_code":3008,"error":"Session Expired"}"#.into(),
            ],
        );
        assert_eq!(
            out,
            [Heard::Error {
                code: Some("3008".into()),
                message: Some("Session Expired".into())
            }]
        );
    }

    #[test]
    fn newer_servers_and_unformatted_sessions_end_turns_in_one_message() {
        let inline = heard(true, &[turn(3, "Yes.", true, true)]);
        assert_eq!(inline[0], Heard::Final("Yes.".into()));
        let plain = heard(false, &[turn(0, "yes", true, false)]);
        assert_eq!(plain[0], Heard::Final("yes".into()));
        let ended = heard(
            false,
            &[r#"{"type":"Termination","audio_duration_seconds":1}"#.into()],
        );
        assert_eq!(ended, [Heard::Ended]);
    }

    #[test]
    fn query_has_the_rate_model_and_keyterms_as_json() {
        let config = AssemblyAiConfig {
            keyterms: vec!["Acme".into(), "refund".into()],
            min_turn_silence_ms: Some(160),
            ..AssemblyAiConfig::default()
        };
        let aai = AssemblyAi::new("aai", config, ApiKey::new("AAI", "k".into()));
        let spec = ChannelSpec {
            session_id: 1,
            channel: crate::protocol::Channel::Customer,
            sample_rate: 8000,
            options: Arc::new(crate::backend::Options::default()),
        };
        let q = aai.query(&spec);
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("sample_rate"), Some("8000"));
        assert_eq!(get("speech_model"), Some("universal-streaming-english"));
        assert_eq!(get("keyterms_prompt"), Some(r#"["Acme","refund"]"#));
        assert_eq!(get("min_turn_silence"), Some("160"));
        assert_eq!(get("format_turns"), Some("true"));
    }
}
