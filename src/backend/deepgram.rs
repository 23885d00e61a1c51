//! Deepgram live streaming (`/v1/listen`) and every service that speaks its protocol at
//! another URL (self-hosted Deepgram, compatible vendors). Facts: docs/PROVIDERS.md, "Deepgram".
//!
//! One connection per channel, mono, at the call's own rate and encoding: a channel fails
//! over and replays on its own, a profile that transcribes only the customer sends only
//! the customer's audio, and the two channels' results never have to be told apart.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::{self, Message};

use super::relay::{self, Heard, Pacing, Provider, RelaySettings};
use super::{ApiKey, Backend, BackendError, ChannelSpec, EventSink};
use crate::audio::AudioSource;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeepgramConfig {
    /// Any Deepgram-compatible streaming endpoint; `ws://` works too.
    pub url: String,
    /// The environment variable holding the API key (sent as `Authorization: Token …`).
    pub api_key_env: String,
    pub model: String,
    /// The language spoken (`language`); unset leaves the service's default (`en`).
    pub language: Option<String>,
    /// Terms to listen for: `keyterm` on Nova-3 models, `keywords` before them.
    pub keyterms: Vec<String>,
    /// Silence in ms that ends an utterance (`endpointing`); 0 turns it off.
    pub endpointing_ms: Option<u64>,
    pub punctuate: bool,
    pub smart_format: bool,
    pub numerals: bool,
    pub interim_results: bool,
    /// Other query parameters, passed as they are (a list repeats the parameter).
    pub query: BTreeMap<String, toml::Value>,
    pub connect_timeout_ms: u64,
    /// Voiced audio flowing with no answer for this long counts as a stall.
    pub stall_timeout_ms: u64,
    /// KeepAlive after this long without audio (the service closes after 10 s).
    pub keepalive_ms: u64,
    /// Reconnects in a row before the channel fails over.
    pub max_reconnects: u32,
    /// Allow a `ws://` URL to a host other than this machine: the API key would cross the
    /// network in clear, so it takes saying so (e.g. a provider's proxy on a private link).
    pub allow_insecure: bool,
}

impl DeepgramConfig {
    /// What `hark check-config` and `hark serve` refuse in this section.
    pub fn problems(&self) -> Vec<String> {
        super::relay::check_url(&self.url, self.allow_insecure)
            .err()
            .into_iter()
            .collect()
    }
}

impl Default for DeepgramConfig {
    fn default() -> Self {
        Self {
            url: "wss://api.deepgram.com/v1/listen".into(),
            api_key_env: "DEEPGRAM_API_KEY".into(),
            model: "nova-3".into(),
            language: None,
            keyterms: Vec::new(),
            endpointing_ms: None,
            punctuate: true,
            smart_format: false,
            numerals: false,
            interim_results: true,
            query: BTreeMap::new(),
            connect_timeout_ms: 3_000,
            stall_timeout_ms: 2_500,
            keepalive_ms: 4_000,
            max_reconnects: 3,
            allow_insecure: false,
        }
    }
}

/// Deepgram ingests at most 1.25× real time (docs/PROVIDERS.md, "Deepgram"): a replay drains that fast.
const MAX_SPEED: f64 = 1.25;

pub struct Deepgram {
    name: Arc<str>,
    config: DeepgramConfig,
    key: ApiKey,
}

impl Deepgram {
    pub fn new(name: &str, config: DeepgramConfig, key: ApiKey) -> Self {
        Self {
            name: name.into(),
            config,
            key,
        }
    }

    /// The query for one channel: the config, then the profile's (and URL's) overrides.
    fn query(&self, spec: &ChannelSpec) -> Vec<(String, String)> {
        let c = &self.config;
        let o = &spec.options;
        let mut q: Vec<(String, String)> = vec![
            ("model".into(), c.model.clone()),
            ("encoding".into(), "linear16".into()),
            ("sample_rate".into(), spec.sample_rate.to_string()),
            ("channels".into(), "1".into()),
            ("interim_results".into(), c.interim_results.to_string()),
            ("punctuate".into(), c.punctuate.to_string()),
            ("smart_format".into(), c.smart_format.to_string()),
            ("numerals".into(), c.numerals.to_string()),
        ];
        if let Some(language) = o.language.as_ref().or(c.language.as_ref()) {
            q.push(("language".into(), language.clone()));
        }
        match o.endpointing_ms.or(c.endpointing_ms) {
            Some(0) => q.push(("endpointing".into(), "false".into())),
            Some(ms) => q.push(("endpointing".into(), ms.to_string())),
            None => {}
        }
        let terms = o.keyterms.as_ref().unwrap_or(&c.keyterms);
        let param = if c.model.starts_with("nova-3") {
            "keyterm"
        } else {
            "keywords"
        };
        q.extend(terms.iter().map(|t| (param.to_string(), t.clone())));
        relay::pass_through(&mut q, &c.query);
        q
    }
}

impl Backend for Deepgram {
    fn check_language(&self, language: &str) -> Result<(), String> {
        crate::backend::options::relay_language("Deepgram", language)
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
        let request = relay::request(&self.config.url, &query, &self.key, "Token ")?;
        let settings = RelaySettings::from_ms(
            self.config.connect_timeout_ms,
            self.config.stall_timeout_ms,
            self.config.keepalive_ms,
        );
        let stream = Stream { open: false };
        relay::spawn(self.name.clone(), stream, request, settings, audio, events);
        Ok(())
    }
}

/// One Deepgram connection: whether words are pending (an interim with text since the
/// last final).
struct Stream {
    open: bool,
}

/// A message of Deepgram's live API (docs/PROVIDERS.md): the fields hark reads, required
/// where the protocol always sends them; others are ignored.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Live {
    Results(Results),
    /// The stream's summary after `CloseStream`: everything has been answered.
    Metadata {},
    Error(LiveError),
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct Results {
    channel: ResultsChannel,
    /// Seconds of the stream this result covers.
    start: f64,
    duration: f64,
    is_final: bool,
    /// The endpoint: the speaker paused (absent: not one).
    #[serde(default)]
    speech_final: bool,
    /// The final that answers our `Finalize` (newer servers).
    #[serde(default)]
    from_finalize: bool,
}

#[derive(Debug, Deserialize)]
struct ResultsChannel {
    alternatives: Vec<Alternative>,
}

#[derive(Debug, Deserialize)]
struct Alternative {
    transcript: String,
}

/// Deepgram's error message; older servers name its fields `err_code` and `err_msg`.
#[derive(Debug, Deserialize)]
struct LiveError {
    #[serde(alias = "err_code")]
    code: Option<String>,
    #[serde(alias = "err_msg")]
    description: Option<String>,
}

impl Provider for Stream {
    fn pacing(&self) -> Pacing {
        Pacing {
            max_speed: MAX_SPEED,
            burst: Duration::from_millis(250),
            min_frame: Duration::ZERO,
            max_frame: Duration::from_millis(250),
        }
    }

    fn end_turn(&self) -> Option<Message> {
        Some(Message::text(r#"{"type":"Finalize"}"#))
    }

    fn keepalive(&self) -> Option<Message> {
        Some(Message::text(r#"{"type":"KeepAlive"}"#))
    }

    fn idle(&self) -> bool {
        !self.open
    }

    fn closing(&self) -> Vec<Message> {
        vec![
            Message::text(r#"{"type":"Finalize"}"#),
            Message::text(r#"{"type":"CloseStream"}"#),
        ]
    }

    fn read(&mut self, text: &str, heard: &mut Vec<Heard>) {
        let Some(msg) = relay::parse::<Live>(text, heard) else {
            return;
        };
        match msg {
            Live::Results(r) => {
                let transcript = r
                    .channel
                    .alternatives
                    .first()
                    .map_or("", |a| a.transcript.as_str());
                let end = r.start + r.duration;
                if r.is_final {
                    self.open = false;
                    // Deepgram's turn signal: a final without `speech_final` (nor answering
                    // our `Finalize`) was cut while the speaker goes on. Its sentence-like
                    // ending would let the platform answer mid-turn; without one the
                    // platform waits for more (docs/PROVIDERS.md).
                    let ended = r.speech_final || r.from_finalize;
                    heard.push(Heard::Final(crate::turn::end_turn(transcript, ended)));
                    heard.push(Heard::Settled(end));
                } else {
                    self.open |= !transcript.trim().is_empty();
                    heard.push(Heard::Partial(transcript.to_string()));
                    // An interim covers the audio processed so far.
                    heard.push(Heard::Processed(end));
                }
            }
            Live::Metadata {} => heard.push(Heard::Ended),
            Live::Error(e) => heard.push(Heard::Error {
                code: e.code,
                message: e.description,
            }),
            // UtteranceEnd, SpeechStarted and whatever comes later carry no text.
            Live::Other => {}
        }
    }

    fn close_is_permanent(&self, code: u16) -> bool {
        // 1008 DATA-0000: the audio cannot be decoded; sending it again will not help.
        code == 1008
    }

    fn describe_refusal(&self, response: &tungstenite::http::Response<Option<Vec<u8>>>) -> String {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let mut what = format!("HTTP {}", response.status());
        if let Some(reason) = header("dg-error") {
            what.push_str(&format!(" ({})", crate::untrusted::quote(&reason)));
        }
        if let Some(id) = header("dg-request-id") {
            what.push_str(&format!(", request {}", crate::untrusted::quote(&id)));
        }
        what
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Options;
    use crate::protocol::Channel;

    fn spec(options: Options) -> ChannelSpec {
        ChannelSpec {
            session_id: 1,
            channel: Channel::Customer,
            sample_rate: 8000,
            options: Arc::new(options),
        }
    }

    fn values<'a>(q: &'a [(String, String)], key: &str) -> Vec<&'a str> {
        q.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    #[test]
    fn query_carries_the_call_rate_settings_and_overrides() {
        let config: DeepgramConfig = toml::from_str(
            r#"
            keyterms = ["Acme"]
            language = "en"
            endpointing_ms = 300
            query = { tag = ["a", "b"], diarize = true }
            "#,
        )
        .unwrap();
        let dg = Deepgram::new("dg", config, ApiKey::new("DG", "k".into()));
        let q = dg.query(&spec(Options::default()));
        assert_eq!(values(&q, "sample_rate"), ["8000"]);
        assert_eq!(values(&q, "encoding"), ["linear16"]);
        assert_eq!(values(&q, "keyterm"), ["Acme"]);
        assert_eq!(values(&q, "endpointing"), ["300"]);
        assert_eq!(values(&q, "tag"), ["a", "b"]);
        assert_eq!(values(&q, "diarize"), ["true"]);
        let o = Options {
            language: Some("es".into()),
            keyterms: Some(vec!["refund".into(), "Acme".into()]),
            endpointing_ms: Some(0),
            ..Options::default()
        };
        let q = dg.query(&spec(o));
        assert_eq!(values(&q, "language"), ["es"]);
        assert_eq!(values(&q, "keyterm"), ["refund", "Acme"]);
        assert_eq!(values(&q, "endpointing"), ["false"]);
    }

    #[test]
    fn older_models_get_keywords() {
        let config = DeepgramConfig {
            model: "nova-2-phonecall".into(),
            keyterms: vec!["Acme".into()],
            ..DeepgramConfig::default()
        };
        let dg = Deepgram::new("dg", config, ApiKey::new("DG", "k".into()));
        let q = dg.query(&spec(Options::default()));
        assert_eq!(values(&q, "keywords"), ["Acme"]);
        assert!(values(&q, "keyterm").is_empty());
    }

    #[test]
    fn results_become_partials_finals_and_processed_and_settled_times() {
        let mut s = Stream { open: false };
        let mut heard = Vec::new();
        s.read(
            r#"{"type":"Results","channel_index":[0,1],"start":1.0,"duration":0.5,"is_final":false,
               "channel":{"alternatives":[{"transcript":"hello wor"}]}}"#,
            &mut heard,
        );
        s.read(
            r#"{"type":"Results","channel_index":[0,1],"start":1.0,"duration":1.25,"is_final":true,
               "speech_final":true,"channel":{"alternatives":[{"transcript":"Hello world."}]}}"#,
            &mut heard,
        );
        s.read(
            r#"{"type":"UtteranceEnd","channel":[0,1],"last_word_end":2.2}"#,
            &mut heard,
        );
        s.read("not json", &mut heard);
        assert_eq!(heard[0], Heard::Partial("hello wor".into()));
        assert_eq!(heard[1], Heard::Processed(1.5), "what the interim covers");
        assert!(s.idle(), "a final closes what the interim opened");
        assert_eq!(heard[2], Heard::Final("Hello world.".into()));
        assert_eq!(heard[3], Heard::Settled(2.25));
        assert!(matches!(heard[4], Heard::Unreadable(_)));
        assert_eq!(heard.len(), 5);
    }

    #[test]
    fn a_result_missing_what_the_protocol_always_sends_is_an_error_not_silence() {
        let mut s = Stream { open: false };
        let mut heard = Vec::new();
        for broken in [
            // The transcript renamed: read with a default it would be an empty final.
            r#"{"type":"Results","start":0.0,"duration":1.0,"is_final":true,
               "channel":{"alternatives":[{"text":"Hello."}]}}"#,
            // No timing: the replay buffer would settle at 0.
            r#"{"type":"Results","is_final":true,"channel":{"alternatives":[{"transcript":"Hi."}]}}"#,
            r#"{"type":"Results","start":"soon","duration":1.0,"is_final":false,
               "channel":{"alternatives":[{"transcript":"Hi"}]}}"#,
        ] {
            s.read(broken, &mut heard);
        }
        assert_eq!(heard.len(), 3, "{heard:?}");
        for h in &heard {
            assert!(matches!(h, Heard::Unreadable(_)), "{h:?}");
        }
        // Messages of other types, and fields hark does not read, change nothing.
        heard.clear();
        s.read(
            r#"{"type":"SpeechStarted","channel":[0],"timestamp":1.5}"#,
            &mut heard,
        );
        s.read(
            r#"{"type":"Error","err_code":"DATA-0000","err_msg":"bad audio"}"#,
            &mut heard,
        );
        assert_eq!(
            heard,
            [Heard::Error {
                code: Some("DATA-0000".into()),
                message: Some("bad audio".into())
            }]
        );
    }

    #[test]
    fn a_final_cut_while_the_speaker_goes_on_does_not_end_the_turn() {
        let mut s = Stream { open: false };
        let mut heard = Vec::new();
        let result = |extra: &str, text: &str| {
            format!(
                r#"{{"type":"Results","start":0.0,"duration":1.0,"is_final":true,{extra}
                    "channel":{{"alternatives":[{{"transcript":"{text}"}}]}}}}"#
            )
        };
        s.read(&result(r#""speech_final":false,"#, "Front."), &mut heard);
        s.read(&result(r#""speech_final":true,"#, "Left."), &mut heard);
        s.read(&result(r#""from_finalize":true,"#, "Right?"), &mut heard);
        s.read(&result("", "Center!"), &mut heard);
        let finals: Vec<&Heard> = heard
            .iter()
            .filter(|h| matches!(h, Heard::Final(_)))
            .collect();
        assert_eq!(
            finals,
            [
                &Heard::Final("Front".into()),
                &Heard::Final("Left.".into()),
                &Heard::Final("Right?".into()),
                &Heard::Final("Center".into()),
            ]
        );
    }
}
