//! Tests of the test-side provider mocks themselves (tests/common/provider_mock.rs) and of the
//! word code they hear (tests/common/words.rs), with a raw websocket client and no hark
//! backend: proof that the mocks follow the providers' documented protocols
//! (docs/PROVIDERS.md) before a backend is tested against them.
//!
//! Deepgram audio is sent as fast as the socket takes it (Deepgram only records the ingest
//! rate); AssemblyAI audio is paced in real time in 50 ms frames, as that service requires.
//! Scenarios that wait on the clock run concurrently inside one test, so the file stays fast
//! on two cores.

use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use hark_testkit::provider_mock::{Connection, Fault, MockOptions, MockProvider, Provider};
use hark_testkit::words::{
    self, VOCAB, Word, WordDecoder, amplitude, indices, sentence, silence, speak,
};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderName;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

const KEY: &str = "mock-key-123";
/// How long a test waits for something that should come promptly.
const PROMPT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// A raw websocket client

#[derive(Debug)]
enum Event {
    Text(Value),
    /// The server's close frame: (code, reason), or None for a close without a frame body.
    Close(Option<(u16, String)>),
    /// The connection ended without a close frame.
    Gone,
}

struct Client {
    tx: SplitSink<Ws, Message>,
    rx: mpsc::UnboundedReceiver<(Instant, Event)>,
    got: Vec<(Instant, Event)>,
    opened: Instant,
}

impl Client {
    async fn connect(url: &str, headers: &[(&str, &str)]) -> Result<Self, tungstenite::Error> {
        let mut req = url.into_client_request()?;
        for (k, v) in headers {
            req.headers_mut().insert(
                HeaderName::from_bytes(k.as_bytes()).expect("header name"),
                v.parse().expect("header value"),
            );
        }
        let (ws, _) = connect_async(req).await?;
        let (tx, rx) = ws.split();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        tokio::spawn(read_all(rx, in_tx));
        Ok(Self {
            tx,
            rx: in_rx,
            got: Vec::new(),
            opened: Instant::now(),
        })
    }

    async fn open(url: &str, headers: &[(&str, &str)]) -> Self {
        Self::connect(url, headers)
            .await
            .unwrap_or_else(|e| panic!("{url} refused the upgrade: {e}"))
    }

    async fn text(&mut self, v: Value) -> bool {
        self.tx.send(Message::text(v.to_string())).await.is_ok()
    }

    async fn bytes(&mut self, b: Vec<u8>) -> bool {
        self.tx.send(Message::binary(b)).await.is_ok()
    }

    /// Streams per-channel samples as interleaved s16le frames of `frame_ms`, paced in real
    /// time when `paced`. Returns false if the socket stopped taking audio.
    async fn play(&mut self, planes: &[&[i16]], rate: u32, frame_ms: u32, paced: bool) -> bool {
        let per_frame = words::samples(rate, frame_ms);
        let len = planes.iter().map(|p| p.len()).max().unwrap_or(0);
        let started = tokio::time::Instant::now();
        let mut sent = 0;
        while sent < len {
            let n = per_frame.min(len - sent);
            let bytes = hark_bench::protocol::interleave(planes, sent, n);
            if !self.bytes(bytes).await {
                return false;
            }
            sent += n;
            if paced {
                let due = started + Duration::from_secs_f64(sent as f64 / f64::from(rate));
                tokio::time::sleep_until(due).await;
            }
        }
        true
    }

    async fn mono(&mut self, samples: &[i16], rate: u32, frame_ms: u32, paced: bool) -> bool {
        self.play(&[samples], rate, frame_ms, paced).await
    }

    fn poll(&mut self) {
        while let Ok(item) = self.rx.try_recv() {
            self.got.push(item);
        }
    }

    /// Waits (bounded) for an event matching `pred`; true if one came.
    async fn wait_for(&mut self, limit: Duration, pred: impl Fn(&Event) -> bool) -> bool {
        self.poll();
        if self.got.iter().any(|(_, e)| pred(e)) {
            return true;
        }
        let deadline = tokio::time::Instant::now() + limit;
        while let Ok(Some(item)) = tokio::time::timeout_at(deadline, self.rx.recv()).await {
            let hit = pred(&item.1);
            self.got.push(item);
            if hit {
                return true;
            }
        }
        false
    }

    /// Waits (bounded) for the connection to end; panics if it does not.
    async fn end(mut self, limit: Duration) -> Session {
        let ended = self
            .wait_for(limit, |e| matches!(e, Event::Close(_) | Event::Gone))
            .await;
        assert!(
            ended,
            "the mock did not end the connection within {limit:?}"
        );
        Session {
            opened: self.opened,
            events: self.got,
        }
    }

    /// Sends a close frame and collects what came until the end.
    async fn hang_up(mut self) -> Session {
        let _ = self.tx.send(Message::Close(None)).await;
        self.end(PROMPT).await
    }

    fn messages(&mut self) -> Vec<Value> {
        self.poll();
        texts(&self.got)
    }
}

async fn read_all(mut rx: SplitStream<Ws>, tx: mpsc::UnboundedSender<(Instant, Event)>) {
    while let Some(msg) = rx.next().await {
        let event = match msg {
            Ok(Message::Text(t)) => Event::Text(
                serde_json::from_str(&t).unwrap_or_else(|e| panic!("mock sent non-JSON {t}: {e}")),
            ),
            Ok(Message::Close(frame)) => {
                Event::Close(frame.map(|f| (u16::from(f.code), f.reason.to_string())))
            }
            Ok(_) => continue,
            Err(_) => break,
        };
        let end = matches!(event, Event::Close(_));
        let _ = tx.send((Instant::now(), event));
        if end {
            return;
        }
    }
    let _ = tx.send((Instant::now(), Event::Gone));
}

fn texts(events: &[(Instant, Event)]) -> Vec<Value> {
    events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Text(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

/// Everything one connection received.
struct Session {
    opened: Instant,
    events: Vec<(Instant, Event)>,
}

impl Session {
    fn messages(&self) -> Vec<Value> {
        texts(&self.events)
    }

    fn of_type(&self, kind: &str) -> Vec<Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["type"] == kind)
            .collect()
    }

    fn close(&self) -> Option<(u16, String)> {
        self.events.iter().find_map(|(_, e)| match e {
            Event::Close(c) => c.clone(),
            _ => None,
        })
    }

    fn gone_without_close(&self) -> bool {
        matches!(self.events.last(), Some((_, Event::Gone)))
            && !self
                .events
                .iter()
                .any(|(_, e)| matches!(e, Event::Close(_)))
    }
}

/// Expects the upgrade to be refused with `status`; returns the response headers.
async fn refused(url: &str, headers: &[(&str, &str)], status: u16) -> Vec<(String, String)> {
    match Client::connect(url, headers).await {
        Err(tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status().as_u16(), status, "{url}");
            resp.headers()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                .collect()
        }
        Err(e) => panic!("{url}: expected HTTP {status}, got {e}"),
        Ok(_) => panic!("{url}: expected HTTP {status}, the upgrade succeeded"),
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

async fn mock(provider: Provider, two_message_formatting: bool) -> MockProvider {
    MockProvider::start(MockOptions {
        provider,
        api_key: KEY.into(),
        two_message_formatting,
    })
    .await
}

/// Percent-encodes a query value.
fn pct(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn words_of(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

fn close_enough(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

// ---------------------------------------------------------------------------------------------
// The word code

/// Builds a stream from segments and the words it should decode to.
struct Script {
    rate: u32,
    samples: Vec<i16>,
    words: Vec<Word>,
}

impl Script {
    fn new(rate: u32) -> Self {
        Self {
            rate,
            samples: Vec::new(),
            words: Vec::new(),
        }
    }

    fn say(&mut self, k: usize, word_ms: u32, gap_ms: u32) {
        let start = self.samples.len() as u64;
        let spoken = speak(&[k], self.rate, word_ms, gap_ms);
        let end = start + words::samples(self.rate, word_ms) as u64;
        self.samples.extend(spoken);
        self.words.push(Word {
            index: k,
            text: VOCAB[k],
            start,
            end,
        });
    }

    fn pause(&mut self, ms: u32) {
        self.samples.extend(silence(self.rate, ms));
    }
}

fn decode_in_chunks(samples: &[i16], rate: u32, chunk: impl Fn(usize) -> usize) -> Vec<Word> {
    let mut d = WordDecoder::new(rate);
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < samples.len() {
        let n = chunk(i).clamp(1, samples.len() - at);
        out.extend(d.push(&samples[at..at + n]));
        at += n;
        i += 1;
    }
    assert_eq!(d.position(), samples.len() as u64);
    out
}

#[test]
fn words_decode_exactly_under_any_chunking() {
    assert_eq!(VOCAB.len(), 32);
    let mut distinct = VOCAB.to_vec();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), VOCAB.len(), "vocabulary words are distinct");
    assert!(VOCAB.iter().all(|w| *w == w.to_lowercase()));
    assert_eq!(amplitude(0), 512);
    assert_eq!(amplitude(31), 16384);

    for rate in [8000, 16000] {
        let mut s = Script::new(rate);
        s.pause(137);
        for k in 0..VOCAB.len() {
            s.say(k, 200, 100);
        }
        // Shortest words, back-to-back words of different amplitude, 1 ms gaps.
        s.say(3, 10, 0);
        s.say(4, 10, 1);
        s.say(5, 11, 0);
        s.say(6, 250, 3);
        s.pause(500);
        let expected = s.words.clone();

        let mut rng = fastrand::Rng::with_seed(u64::from(rate));
        let sizes: Vec<usize> = (0..100_000).map(|_| rng.usize(1..2000)).collect();
        for (name, got) in [
            ("whole", decode_in_chunks(&s.samples, rate, |_| usize::MAX)),
            ("1 sample", decode_in_chunks(&s.samples, rate, |_| 1)),
            (
                "20 ms",
                decode_in_chunks(&s.samples, rate, |_| rate as usize / 50),
            ),
            (
                "random",
                decode_in_chunks(&s.samples, rate, |i| sizes[i % sizes.len()]),
            ),
        ] {
            assert_eq!(got, expected, "{rate} Hz, chunks: {name}");
        }

        // Position and trailing silence after the stream.
        let mut d = WordDecoder::new(rate);
        d.push(&s.samples);
        assert_eq!(d.position(), s.samples.len() as u64);
        assert_eq!(d.trailing_silence(), words::samples(rate, 503) as u64);
        assert!((d.trailing_silence_ms() - 503.0).abs() < 0.2);
        assert!(!d.in_word());
        assert_eq!(d.flush(), None);
    }
}

#[test]
fn words_ignore_short_runs_and_noise() {
    let rate = 8000;
    let mut d = WordDecoder::new(rate);
    // 9 ms of a word is too short; 10 ms is a word.
    assert!(d.push(&speak(&[2], rate, 9, 5)).is_empty());
    let w = d.push(&speak(&[2], rate, 10, 5));
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].text, VOCAB[2]);
    // A magnitude outside the vocabulary is noise: no word, and not silence.
    assert!(d.push(&[700, -700, 700, 700]).is_empty());
    assert_eq!(d.trailing_silence(), 0);
    // A word still being spoken is reported by flush, ending where the stream is.
    let before = d.position();
    assert!(d.push(&speak(&[7], rate, 50, 0)).is_empty());
    assert!(d.in_word());
    let w = d.flush().expect("word in progress");
    assert_eq!((w.index, w.start, w.end), (7, before, before + 400));
    assert_eq!(indices("Hello world"), vec![26, 27]);
    assert_eq!(sentence("hello", rate).len(), words::samples(rate, 300));
}

// ---------------------------------------------------------------------------------------------
// Deepgram

fn dg_auth() -> [(&'static str, String); 1] {
    [("authorization", format!("Token {KEY}"))]
}

async fn dg_open(mock: &MockProvider, query: &str) -> Client {
    let auth = dg_auth();
    let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Client::open(&format!("{}?{query}", mock.url()), &headers).await
}

fn transcript(m: &Value) -> &str {
    m["channel"]["alternatives"][0]["transcript"]
        .as_str()
        .unwrap_or("")
}

fn is_final(m: &Value) -> bool {
    m["is_final"] == true
}

/// Non-empty final transcripts, in order.
fn dg_finals(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["type"] == "Results" && is_final(m) && !transcript(m).is_empty())
        .map(|m| transcript(m).to_string())
        .collect()
}

/// Checks the `is_final` results tile the stream: each starts where the previous ended.
fn assert_finals_contiguous(messages: &[Value], channel: u64) -> f64 {
    let mut at = 0.0;
    for m in messages.iter().filter(|m| {
        m["type"] == "Results" && is_final(m) && m["channel_index"][0].as_u64() == Some(channel)
    }) {
        let start = m["start"].as_f64().expect("start");
        assert!(
            close_enough(start, at),
            "final starts at {start}, not {at}: {m}"
        );
        at = start + m["duration"].as_f64().expect("duration");
    }
    at
}

/// A normal mono stream: two utterances, then silence long enough for an empty final, then
/// CloseStream. Checks message shapes, times, partial-before-final order and the record.
async fn deepgram_normal_stream(rate: u32, punctuate: bool) {
    let mock = mock(Provider::Deepgram, false).await;
    let query = format!(
        "model=nova-3&language=en&encoding=linear16&sample_rate={rate}&channels=1\
         &interim_results=true&punctuate={punctuate}&keyterm=hello&keyterm=world%20cup\
         &endpointing=300&tag=t1&vad_events={punctuate}"
    );
    let mut client = dg_open(&mock, &query).await;
    let mut audio = silence(rate, 500);
    audio.extend(sentence("hello world please", rate));
    audio.extend(silence(rate, 600));
    audio.extend(sentence("alpha bravo", rate));
    audio.extend(silence(rate, 2500));
    assert!(client.mono(&audio, rate, 20, false).await);
    assert!(client.text(json!({"type": "CloseStream"})).await);
    let session = client.end(PROMPT).await;
    let messages = session.messages();

    assert_eq!(session.close(), Some((1000, String::new())));
    let last = messages.last().expect("messages");
    assert_eq!(last["type"], "Metadata", "Metadata comes last: {last}");
    let request_id = last["request_id"].as_str().expect("request_id").to_string();
    assert!(close_enough(
        last["duration"].as_f64().unwrap(),
        audio.len() as f64 / f64::from(rate)
    ));
    let results: Vec<&Value> = messages.iter().filter(|m| m["type"] == "Results").collect();
    // vad_events: SpeechStarted at each utterance's first word, before its first interim.
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    let started = messages.iter().filter(|m| m["type"] == "SpeechStarted");
    let starts: Vec<f64> = started.map(|m| m["timestamp"].as_f64().unwrap()).collect();
    if punctuate {
        assert_eq!(starts, [0.5, 2.0]);
        assert_eq!(kinds[0], "SpeechStarted");
    } else {
        assert!(starts.is_empty());
    }
    for m in &results {
        assert_eq!(m["channel_index"], json!([0, 1]));
        assert_eq!(m["metadata"]["request_id"], request_id.as_str());
        for key in [
            "duration",
            "start",
            "is_final",
            "speech_final",
            "from_finalize",
        ] {
            assert!(!m[key].is_null(), "{key} missing: {m}");
        }
    }

    let expected = if punctuate {
        vec!["Hello world please.", "Alpha bravo."]
    } else {
        vec!["hello world please", "alpha bravo"]
    };
    assert_eq!(dg_finals(&messages), expected, "{rate} Hz");
    // Both ended at the endpoint, neither from Finalize.
    let finals: Vec<&&Value> = results
        .iter()
        .filter(|m| is_final(m) && !transcript(m).is_empty())
        .collect();
    assert!(finals.iter().all(|m| m["speech_final"] == true));
    assert!(finals.iter().all(|m| m["from_finalize"] == false));
    // Interims grow word by word, each utterance's before its final.
    let sequence: Vec<(bool, String)> = results
        .iter()
        .filter(|m| !transcript(m).is_empty())
        .map(|m| (is_final(m), transcript(m).to_lowercase().replace('.', "")))
        .collect();
    let expect_sequence: Vec<(bool, String)> = [
        (false, "hello"),
        (false, "hello world"),
        (false, "hello world please"),
        (true, "hello world please"),
        (false, "alpha"),
        (false, "alpha bravo"),
        (true, "alpha bravo"),
    ]
    .iter()
    .map(|(f, t)| (*f, t.to_string()))
    .collect();
    assert_eq!(sequence, expect_sequence, "{rate} Hz");

    // Word times in seconds from the stream's start, exact.
    let w = &finals[0]["channel"]["alternatives"][0]["words"];
    assert_eq!(w[0]["word"], "hello");
    assert!(close_enough(w[0]["start"].as_f64().unwrap(), 0.5));
    assert!(close_enough(w[0]["end"].as_f64().unwrap(), 0.7));
    assert!(close_enough(w[2]["end"].as_f64().unwrap(), 0.5 + 0.6 + 0.2));
    if punctuate {
        assert_eq!(w[0]["punctuated_word"], "Hello");
        assert_eq!(w[2]["punctuated_word"], "please.");
    } else {
        assert!(w[0].get("punctuated_word").is_none());
    }
    // The first final ends at the endpoint: 300 ms after the last word (20 ms frames).
    let end0 = finals[0]["start"].as_f64().unwrap() + finals[0]["duration"].as_f64().unwrap();
    assert!((1.6..=1.62).contains(&end0), "first final ends at {end0}");

    // Finals (empty ones included) tile the stream up to its end.
    let covered = assert_finals_contiguous(&messages, 0);
    assert!(close_enough(covered, audio.len() as f64 / f64::from(rate)));
    let empty = results
        .iter()
        .filter(|m| is_final(m) && transcript(m).is_empty())
        .count();
    assert!(
        empty >= 1,
        "silence after speech is covered by an empty final"
    );

    assert!(mock.wait_closed(1, PROMPT).await);
    let c = &mock.connections()[0];
    assert_eq!(c.path, "/v1/listen");
    let keyterms: Vec<&str> = c
        .query
        .iter()
        .filter(|(k, _)| k == "keyterm")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(keyterms, ["hello", "world cup"]);
    assert!(
        c.headers
            .contains(&("authorization".into(), format!("Token {KEY}")))
    );
    assert_eq!(c.refused, None);
    assert_eq!(c.audio_samples, audio.len() as u64);
    assert_eq!(
        c.audio_frames,
        audio.len().div_ceil(words::samples(rate, 20))
    );
    assert!(c.frame_ms.iter().take(10).all(|ms| close_enough(*ms, 20.0)));
    assert_eq!(c.control, ["CloseStream"]);
    let spoken = words_of("hello world please alpha bravo");
    assert_eq!(c.words_heard, spoken);
    assert_eq!(c.words_sent_final, spoken);
    assert_eq!(c.close_sent, Some((1000, String::new())));
    assert_eq!(c.zero_length_frames, 0);
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    assert!(c.closed);
}

#[tokio::test]
async fn deepgram_transcribes_mono_streams_at_16k_and_8k() {
    tokio::join!(
        deepgram_normal_stream(16000, true),
        deepgram_normal_stream(8000, false),
    );
}

#[tokio::test]
async fn deepgram_answers_each_channel_with_multichannel() {
    let mock = mock(Provider::Deepgram, false).await;
    let rate = 16000;
    let mut left = sentence("hello world", rate);
    left.extend(silence(rate, 1500));
    let mut right = silence(rate, 1000);
    right.extend(sentence("yes no thanks", rate));
    right.extend(silence(rate, 400));

    let mut stereo = dg_open(
        &mock,
        "encoding=linear16&sample_rate=16000&channels=2&multichannel=true",
    )
    .await;
    assert!(stereo.play(&[&left, &right], rate, 20, false).await);
    assert!(stereo.text(json!({"type": "CloseStream"})).await);
    let s = stereo.end(PROMPT).await;
    let messages = s.messages();
    let per_channel = |c: u64| -> Vec<String> {
        messages
            .iter()
            .filter(|m| m["channel_index"] == json!([c, 2]))
            .filter(|m| is_final(m) && !transcript(m).is_empty())
            .map(|m| transcript(m).to_string())
            .collect()
    };
    assert_eq!(per_channel(0), ["hello world"]);
    assert_eq!(per_channel(1), ["yes no thanks"]);
    assert!(
        messages
            .iter()
            .all(|m| m["type"] != "Results" || m["channel_index"][1] == 2)
    );
    assert_finals_contiguous(&messages, 0);
    assert_finals_contiguous(&messages, 1);
    assert_eq!(s.of_type("Metadata")[0]["channels"], 2);

    // Without multichannel the channels are mixed into one transcript ([0,1]).
    let mut mixed = dg_open(&mock, "encoding=linear16&sample_rate=16000&channels=2").await;
    assert!(mixed.play(&[&left, &right], rate, 20, false).await);
    assert!(mixed.text(json!({"type": "CloseStream"})).await);
    let s = mixed.end(PROMPT).await;
    let messages = s.messages();
    assert_eq!(dg_finals(&messages), ["hello world", "yes no thanks"]);
    assert!(
        messages
            .iter()
            .all(|m| m["type"] != "Results" || m["channel_index"] == json!([0, 1]))
    );

    assert!(mock.wait_closed(2, PROMPT).await);
    let c = mock.connections();
    assert_eq!(c[0].audio_samples, left.len().max(right.len()) as u64);
    assert_eq!(c[0].words_heard.len(), 5);
    assert!(c.iter().all(|c| c.violations.is_empty()));
}

#[tokio::test]
async fn deepgram_refuses_bad_keys_and_parameters_at_the_upgrade() {
    let mock = mock(Provider::Deepgram, false).await;
    let url = |q: &str| format!("{}?{q}", mock.url());
    let good = format!("Token {KEY}");
    let ok_query = "encoding=linear16&sample_rate=16000";

    for auth in [
        None,
        Some("Token wrong"),
        Some(KEY),
        Some("Basic mock-key-123"),
    ] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", *a)).collect();
        let h = refused(&url(ok_query), &headers, 401).await;
        assert!(header(&h, "dg-error").is_some_and(|e| !e.is_empty()));
        assert!(header(&h, "dg-request-id").is_some_and(|e| !e.is_empty()));
    }
    let h = refused(
        &url("encoding=flac&sample_rate=16000"),
        &[("authorization", &good)],
        400,
    )
    .await;
    assert!(header(&h, "dg-error").unwrap().contains("encoding"));
    let h = refused(&url("encoding=linear16"), &[("authorization", &good)], 400).await;
    assert!(header(&h, "dg-error").unwrap().contains("sample_rate"));
    refused(
        &format!("ws://{}/v2/listen", mock.addr),
        &[("authorization", &good)],
        404,
    )
    .await;

    // Token and Bearer (short-lived JWT) schemes are both accepted.
    for auth in [good.clone(), format!("Bearer {KEY}")] {
        let c = Client::open(&url(ok_query), &[("authorization", &auth)]).await;
        c.hang_up().await;
    }
    // A scripted refusal applies to the next connection only, whatever its key.
    mock.script(vec![Fault::Refuse(429)]);
    let h = refused(&url(ok_query), &[("authorization", &good)], 429).await;
    assert!(header(&h, "dg-error").is_some());
    Client::open(&url(ok_query), &[("authorization", &good)])
        .await
        .hang_up()
        .await;

    assert!(mock.wait_closed(11, PROMPT).await);
    let refusals: Vec<Option<u16>> = mock.connections().iter().map(|c| c.refused).collect();
    let four01 = Some(401);
    assert_eq!(
        refusals,
        [
            four01,
            four01,
            four01,
            four01,
            Some(400),
            Some(400),
            Some(404),
            None,
            None,
            Some(429),
            None
        ]
    );
    // The refused ones still record what they asked for.
    assert_eq!(
        mock.connections()[4].query[0],
        ("encoding".into(), "flac".into())
    );
}

#[tokio::test]
async fn deepgram_control_messages_and_data_errors() {
    let mock = mock(Provider::Deepgram, false).await;
    let rate = 16000;
    let q = "encoding=linear16&sample_rate=16000&interim_results=true";

    // Finalize flushes pending words (and one being spoken) with from_finalize; KeepAlive
    // gets no reply; CloseStream after that has nothing left to flush.
    let finalize = async {
        let mut c = dg_open(&mock, q).await;
        let mut audio = sentence("hello world", rate);
        audio.extend(speak(&indices("yes"), rate, 100, 0)); // still being spoken
        assert!(c.mono(&audio, rate, 20, false).await);
        assert!(c.text(json!({"type": "Finalize"})).await);
        assert!(
            c.wait_for(
                PROMPT,
                |e| matches!(e, Event::Text(m) if m["from_finalize"] == true)
            )
            .await
        );
        let before = c.messages().len();
        assert!(c.text(json!({"type": "KeepAlive"})).await);
        assert!(c.text(json!({"type": "NoSuchThing"})).await);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(c.messages().len(), before, "KeepAlive gets no reply");
        assert!(c.text(json!({"type": "CloseStream"})).await);
        let s = c.end(PROMPT).await;
        let m = s.messages();
        let f: Vec<&Value> = m.iter().filter(|m| m["from_finalize"] == true).collect();
        assert_eq!(f.len(), 1);
        assert_eq!(transcript(f[0]), "hello world yes");
        assert_eq!(f[0]["is_final"], true);
        assert_eq!(f[0]["speech_final"], false);
        assert_eq!(dg_finals(&m), ["hello world yes"]);
        let types: Vec<&str> = m.iter().map(|m| m["type"].as_str().unwrap()).collect();
        assert_eq!(types.last(), Some(&"Metadata"));
        assert_eq!(s.close(), Some((1000, String::new())));
    };

    // endpointing=false: no endpoint however long the pause; UtteranceEnd after
    // utterance_end_ms of silence; words wait for Finalize.
    let no_endpoint = async {
        let mut c = dg_open(
            &mock,
            &format!("{q}&endpointing=false&utterance_end_ms=1000"),
        )
        .await;
        let mut audio = sentence("alpha", rate);
        audio.extend(silence(rate, 1500));
        assert!(c.mono(&audio, rate, 20, false).await);
        assert!(
            c.wait_for(
                PROMPT,
                |e| matches!(e, Event::Text(m) if m["type"] == "UtteranceEnd")
            )
            .await
        );
        assert!(c.text(json!({"type": "Finalize"})).await);
        assert!(c.text(json!({"type": "CloseStream"})).await);
        let s = c.end(PROMPT).await;
        let m = s.messages();
        let ue = &s.of_type("UtteranceEnd")[0];
        assert_eq!(ue["channel"], json!([0, 1]));
        assert!(close_enough(ue["last_word_end"].as_f64().unwrap(), 0.2));
        let finals: Vec<&Value> = m.iter().filter(|m| is_final(m)).collect();
        assert_eq!(finals.len(), 1, "only Finalize ends the utterance: {m:?}");
        assert_eq!(finals[0]["from_finalize"], true);
        assert_eq!(transcript(finals[0]), "alpha");
    };

    // Audio that is not whole 16-bit samples: close 1008 DATA-0000.
    let odd = async {
        let mut c = dg_open(&mock, q).await;
        assert!(c.bytes(vec![1, 2, 3]).await);
        let s = c.end(PROMPT).await;
        assert_eq!(s.close(), Some((1008, "DATA-0000".into())));
    };

    // A zero-length frame ends the stream like CloseStream (and is a recorded violation).
    let zero = async {
        let mut c = dg_open(&mock, q).await;
        let mut audio = sentence("golf hotel", rate);
        audio.extend(silence(rate, 100));
        assert!(c.mono(&audio, rate, 20, false).await);
        assert!(c.bytes(Vec::new()).await);
        let s = c.end(PROMPT).await;
        assert_eq!(dg_finals(&s.messages()), ["golf hotel"]);
        assert_eq!(s.of_type("Metadata").len(), 1);
        assert_eq!(s.close(), Some((1000, String::new())));
    };
    tokio::join!(finalize, no_endpoint, odd, zero);

    assert!(mock.wait_closed(4, PROMPT).await);
    for c in mock.connections() {
        let q: std::collections::HashMap<_, _> = c.query.iter().cloned().collect();
        if c.control.contains(&"NoSuchThing".to_string()) {
            assert_eq!(
                c.control,
                ["Finalize", "KeepAlive", "NoSuchThing", "CloseStream"]
            );
            assert_eq!(c.violations.len(), 1, "{:?}", c.violations);
            assert!(c.violations[0].contains("NoSuchThing"));
            assert_eq!(c.words_sent_final, words_of("hello world yes"));
        } else if q.contains_key("endpointing") {
            assert!(c.violations.is_empty(), "{:?}", c.violations);
        } else if c.zero_length_frames == 1 {
            assert!(c.violations.iter().any(|v| v.contains("zero-length")));
        } else {
            assert_eq!(c.close_sent, Some((1008, "DATA-0000".into())));
            assert!(c.violations.iter().any(|v| v.contains("3 bytes")));
        }
    }
}

#[tokio::test]
async fn deepgram_closes_streams_idle_for_10_s() {
    let mock = mock(Provider::Deepgram, false).await;
    let q = "encoding=linear16&sample_rate=16000";
    let started = Instant::now();
    let in_window = |s: &Session| {
        let at = s.events.last().unwrap().0 - s.opened;
        assert!(
            (Duration::from_millis(9800)..Duration::from_millis(11500)).contains(&at),
            "closed after {at:?}"
        );
    };

    // Nothing at all from the client.
    let silent = async {
        let c = dg_open(&mock, q).await;
        let s = c.end(Duration::from_secs(15)).await;
        assert_eq!(s.close(), Some((1011, "NET-0001".into())));
        in_window(&s);
    };
    // KeepAlives but never audio: still closed 10 s after connecting.
    let no_audio = async {
        let mut c = dg_open(&mock, q).await;
        for _ in 0..4 {
            assert!(c.text(json!({"type": "KeepAlive"})).await);
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let s = c.end(Duration::from_secs(15)).await;
        assert_eq!(s.close(), Some((1011, "NET-0001".into())));
        in_window(&s);
    };
    // Audio once, then KeepAlive every 4 s: open for 13 s, then a normal close.
    let kept_alive = async {
        let mut c = dg_open(&mock, q).await;
        assert!(c.mono(&silence(16000, 100), 16000, 20, false).await);
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_secs(4)).await;
            assert!(c.text(json!({"type": "KeepAlive"})).await);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(c.text(json!({"type": "CloseStream"})).await);
        let s = c.end(PROMPT).await;
        assert_eq!(s.close(), Some((1000, String::new())));
    };
    tokio::join!(silent, no_audio, kept_alive);
    assert!(started.elapsed() < Duration::from_secs(16));
    let conns = mock.connections();
    let idle: Vec<&Connection> = conns
        .iter()
        .filter(|c| c.close_sent == Some((1011, "NET-0001".into())))
        .collect();
    assert_eq!(idle.len(), 2);
    assert!(
        idle.iter()
            .all(|c| c.violations.iter().any(|v| v.contains("no audio")))
    );
}

#[tokio::test]
async fn deepgram_idle_rule_can_be_shortened_for_tests() {
    let mock = mock(Provider::Deepgram, false).await;
    mock.set_idle_timeout(Duration::from_millis(600));
    let q = "encoding=linear16&sample_rate=16000";
    let quiet = async {
        let mut c = dg_open(&mock, q).await;
        assert!(c.mono(&silence(16000, 100), 16000, 20, false).await);
        let s = c.end(PROMPT).await;
        assert_eq!(s.close(), Some((1011, "NET-0001".into())));
        let at = s.events.last().unwrap().0 - s.opened;
        assert!(
            at >= Duration::from_millis(590) && at < Duration::from_secs(2),
            "{at:?}"
        );
    };
    let chatty = async {
        let mut c = dg_open(&mock, q).await;
        assert!(c.mono(&silence(16000, 100), 16000, 20, false).await);
        for _ in 0..6 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(c.text(json!({"type": "KeepAlive"})).await);
        }
        assert!(c.text(json!({"type": "CloseStream"})).await);
        assert_eq!(c.end(PROMPT).await.close(), Some((1000, String::new())));
    };
    tokio::join!(quiet, chatty);
}

#[tokio::test]
async fn deepgram_records_the_ingest_rate() {
    let mock = mock(Provider::Deepgram, false).await;
    let q = "encoding=linear16&sample_rate=16000";
    let rate = 16000;
    let paced = async {
        let mut c = dg_open(&mock, q).await;
        assert!(c.mono(&silence(rate, 1500), rate, 20, true).await);
        c.hang_up().await;
    };
    let burst = async {
        let mut c = dg_open(&mock, q).await;
        assert!(c.mono(&silence(rate, 1100), rate, 20, true).await);
        assert!(c.mono(&silence(rate, 3000), rate, 100, false).await);
        c.hang_up().await;
    };
    tokio::join!(paced, burst);
    assert!(mock.wait_closed(2, PROMPT).await);
    let ratios: Vec<f64> = mock
        .connections()
        .iter()
        .map(|c| c.max_rate_ratio)
        .collect();
    let (low, high) = (ratios[0].min(ratios[1]), ratios[0].max(ratios[1]));
    assert!(low > 0.8 && low < 1.1, "paced stream: {ratios:?}");
    assert!(high > 2.0, "replayed burst: {ratios:?}");
}

#[tokio::test]
async fn deepgram_faults() {
    let rate = 16000;
    let q = "encoding=linear16&sample_rate=16000&interim_results=true";
    let mut audio = sentence("alpha", rate);
    audio.extend(silence(rate, 1000));
    audio.extend(sentence("bravo", rate));
    audio.extend(silence(rate, 1500));

    // DropAfter: the TCP connection ends with no close frame.
    let drop = async {
        let mock = mock(Provider::Deepgram, false).await;
        mock.script(vec![Fault::DropAfter(1.0)]);
        let mut c = dg_open(&mock, q).await;
        c.mono(&audio, rate, 20, true).await;
        let s = c.end(PROMPT).await;
        assert!(s.gone_without_close(), "{:?}", s.events);
        assert_eq!(dg_finals(&s.messages()), ["alpha"]);
        assert!(mock.wait_closed(1, PROMPT).await);
        let c = &mock.connections()[0];
        assert_eq!(c.close_sent, None);
        assert_eq!(c.audio_samples, words::samples(rate, 1000) as u64);
    };
    // CloseAfter: a server-side failure, 1011 NET-0000.
    let close = async {
        let mock = mock(Provider::Deepgram, false).await;
        mock.script(vec![Fault::CloseAfter(1.0, 1011, "NET-0000")]);
        let mut c = dg_open(&mock, q).await;
        c.mono(&audio, rate, 20, false).await;
        let s = c.end(PROMPT).await;
        assert_eq!(s.close(), Some((1011, "NET-0000".into())));
        assert_eq!(dg_finals(&s.messages()), ["alpha"]);
        assert!(mock.wait_closed(1, PROMPT).await);
        assert_eq!(
            mock.connections()[0].close_sent,
            Some((1011, "NET-0000".into()))
        );
    };
    // StallAfter: audio is still read and heard, nothing is ever sent again, not even an
    // answer to CloseStream or to the client's close.
    let stall = async {
        let mock = mock(Provider::Deepgram, false).await;
        mock.script(vec![Fault::StallAfter(1.0)]);
        let mut c = dg_open(&mock, q).await;
        assert!(c.mono(&audio, rate, 20, false).await);
        assert!(c.text(json!({"type": "CloseStream"})).await);
        tokio::time::sleep(Duration::from_millis(700)).await;
        let m = c.messages();
        assert_eq!(dg_finals(&m), ["alpha"]);
        assert!(m.iter().all(|m| m["type"] != "Metadata"), "{m:?}");
        let _ = c.tx.send(Message::Close(None)).await;
        assert!(
            !c.wait_for(Duration::from_millis(700), |e| matches!(
                e,
                Event::Close(_) | Event::Gone
            ))
            .await,
            "a stalled mock does not answer the close"
        );
        assert!(mock.wait_closed(1, PROMPT).await);
        let conn = &mock.connections()[0];
        assert_eq!(conn.words_heard, ["alpha", "bravo"]);
        assert_eq!(conn.words_sent_final, ["alpha"]);
        assert_eq!(conn.control, ["CloseStream"]);
        assert_eq!(conn.close_sent, None);
    };
    // Slow: every answer comes late, in the same order as without the fault.
    let slow = async {
        let fast_mock = mock(Provider::Deepgram, false).await;
        let mut fast = dg_open(&fast_mock, q).await;
        let mock = mock(Provider::Deepgram, false).await;
        mock.script(vec![Fault::Slow(Duration::from_millis(400))]);
        let mut slow = dg_open(&mock, q).await;
        let sent = Instant::now();
        assert!(fast.mono(&audio, rate, 20, false).await);
        assert!(slow.mono(&audio, rate, 20, false).await);
        assert!(fast.text(json!({"type": "CloseStream"})).await);
        assert!(slow.text(json!({"type": "CloseStream"})).await);
        let (fast, slow) = (fast.end(PROMPT).await, slow.end(PROMPT).await);
        let first = slow.events[0].0;
        assert!(
            first - sent >= Duration::from_millis(400),
            "{:?}",
            first - sent
        );
        let shape = |s: &Session| -> Vec<(String, String, bool)> {
            s.messages()
                .iter()
                .map(|m| {
                    (
                        m["type"].to_string(),
                        transcript(m).to_string(),
                        is_final(m),
                    )
                })
                .collect()
        };
        assert_eq!(shape(&fast), shape(&slow));
        assert_eq!(slow.close(), Some((1000, String::new())));
    };
    // A script is taken one entry per connection, in order, then connections are normal.
    let scripted = async {
        let mock = mock(Provider::Deepgram, false).await;
        mock.script(vec![
            Fault::CloseAfter(0.2, 1011, "NET-0000"),
            Fault::DropAfter(0.2),
        ]);
        let mut outcomes = Vec::new();
        for _ in 0..3 {
            let mut c = dg_open(&mock, q).await;
            c.mono(&audio, rate, 20, false).await;
            c.text(json!({"type": "CloseStream"})).await;
            let s = c.end(PROMPT).await;
            outcomes.push(if s.gone_without_close() {
                None
            } else {
                s.close().map(|c| c.0)
            });
        }
        assert_eq!(outcomes, [Some(1011), None, Some(1000)]);
    };
    tokio::join!(drop, close, stall, slow, scripted);
}

// ---------------------------------------------------------------------------------------------
// AssemblyAI

async fn aai_open(mock: &MockProvider, query: &str) -> Client {
    Client::open(
        &format!("{}?{query}", mock.url()),
        &[("authorization", KEY)],
    )
    .await
}

fn aai_query(rate: u32, extra: &str) -> String {
    format!("sample_rate={rate}&encoding=pcm_s16le&speech_model=universal-streaming-english{extra}")
}

/// Final transcripts by the rule both open clients use.
fn aai_finals(messages: &[Value], format_turns: bool) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["type"] == "Turn" && m["end_of_turn"] == true)
        .filter(|m| !format_turns || m["turn_is_formatted"] == true)
        .map(|m| m["transcript"].as_str().unwrap().to_string())
        .collect()
}

/// Two turns in real time, the second ended by Terminate.
async fn aai_normal_stream(mock: &MockProvider, rate: u32, format_turns: bool) -> (Session, usize) {
    let extra =
        format!("&format_turns={format_turns}&keyterms_prompt=%5B%22hello%22%2C%22world%22%5D");
    let mut c = aai_open(mock, &aai_query(rate, &extra)).await;
    let mut audio = silence(rate, 200);
    audio.extend(sentence("hello world", rate)); // ends 0.8 s, 100 ms silence after the last word
    audio.extend(silence(rate, 400)); // 500 ms silence ≥ 400 ms: end of turn
    audio.extend(speak(&indices("yes please"), rate, 200, 50));
    assert!(c.mono(&audio, rate, 50, true).await);
    assert!(c.text(json!({"type": "Terminate"})).await);
    (c.end(PROMPT).await, audio.len())
}

async fn aai_check_normal(rate: u32, format_turns: bool) {
    let mock = mock(Provider::AssemblyAi, false).await;
    let (s, samples) = aai_normal_stream(&mock, rate, format_turns).await;
    let m = s.messages();
    assert_eq!(m[0]["type"], "Begin");
    assert!(m[0]["id"].as_str().is_some_and(|id| id.len() == 36));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(m[0]["expires_at"].as_u64().unwrap() > now);
    let termination = m.last().unwrap();
    assert_eq!(termination["type"], "Termination");
    assert_eq!(termination["audio_duration_seconds"], 2);
    assert!(termination["session_duration_seconds"].as_u64().is_some());
    assert_eq!(s.close(), Some((1000, String::new())));

    let turns: Vec<&Value> = m.iter().filter(|m| m["type"] == "Turn").collect();
    let summary: Vec<(u64, bool, bool, &str)> = turns
        .iter()
        .map(|t| {
            (
                t["turn_order"].as_u64().unwrap(),
                t["end_of_turn"] == true,
                t["turn_is_formatted"] == true,
                t["transcript"].as_str().unwrap(),
            )
        })
        .collect();
    let (first, second) = if format_turns {
        ("Hello world.", "Yes please.")
    } else {
        ("hello world", "yes please")
    };
    assert_eq!(
        summary,
        [
            (0, false, false, "hello"),
            (0, false, false, "hello world"),
            (0, true, format_turns, first),
            (1, false, false, "yes"),
            (1, false, false, "yes please"),
            (1, true, format_turns, second),
        ],
        "{rate} Hz"
    );
    assert_eq!(aai_finals(&m, format_turns), [first, second]);
    // A message type clients must ignore, at the start of each turn.
    let started: Vec<u64> = s
        .of_type("SpeechStarted")
        .iter()
        .map(|m| m["timestamp"].as_u64().unwrap())
        .collect();
    assert_eq!(started, [200, 1200]);
    // Word times: integer ms from the stream's start.
    let w = &turns[2]["words"];
    assert_eq!(
        (w[0]["start"].as_u64(), w[0]["end"].as_u64()),
        (Some(200), Some(400))
    );
    assert_eq!(
        (w[1]["start"].as_u64(), w[1]["end"].as_u64()),
        (Some(500), Some(700))
    );
    assert_eq!(w[1]["text"], if format_turns { "world." } else { "world" });
    assert_eq!(w[1]["word_is_final"], true);
    assert!(turns[2]["end_of_turn_confidence"].as_f64().is_some());

    assert!(mock.wait_closed(1, PROMPT).await);
    let c = &mock.connections()[0];
    assert_eq!(c.path, "/v3/ws");
    assert!(
        c.query
            .contains(&("keyterms_prompt".into(), r#"["hello","world"]"#.into()))
    );
    assert_eq!(c.audio_samples, samples as u64);
    assert!(c.frame_ms.iter().all(|ms| (50.0..=1000.0).contains(ms)));
    assert_eq!(c.control, ["Terminate"]);
    let spoken = words_of("hello world yes please");
    assert_eq!(c.words_heard, spoken);
    assert_eq!(c.words_sent_final, spoken);
    assert!(c.max_rate_ratio < 1.1, "{}", c.max_rate_ratio);
    assert!(c.violations.is_empty(), "{:?}", c.violations);
}

#[tokio::test]
async fn assemblyai_transcribes_turns_at_16k_and_8k() {
    tokio::join!(
        aai_check_normal(16000, true),
        aai_check_normal(8000, false),
        aai_check_normal(8000, true),
    );
}

#[tokio::test]
async fn assemblyai_older_servers_format_in_a_second_message() {
    let mock = mock(Provider::AssemblyAi, true).await;
    let formatted = aai_normal_stream(&mock, 16000, true);
    let unformatted = aai_normal_stream(&mock, 16000, false);
    let ((s, _), (u, _)) = tokio::join!(formatted, unformatted);

    let eot = |s: &Session| -> Vec<(u64, bool, String)> {
        s.of_type("Turn")
            .iter()
            .filter(|t| t["end_of_turn"] == true)
            .map(|t| {
                let order = t["turn_order"].as_u64().unwrap();
                let text = t["transcript"].as_str().unwrap().to_string();
                (order, t["turn_is_formatted"] == true, text)
            })
            .collect()
    };
    assert_eq!(
        eot(&s),
        [
            (0, false, "hello world".into()),
            (0, true, "Hello world.".into()),
            (1, false, "yes please".into()),
            (1, true, "Yes please.".into()),
        ]
    );
    assert_eq!(
        aai_finals(&s.messages(), true),
        ["Hello world.", "Yes please."]
    );
    // Without format_turns, one unformatted end-of-turn Turn each.
    assert_eq!(
        eot(&u),
        [
            (0, false, "hello world".into()),
            (1, false, "yes please".into())
        ]
    );
    assert!(mock.wait_closed(2, PROMPT).await);
    for c in mock.connections() {
        assert_eq!(c.words_sent_final, words_of("hello world yes please"));
    }
}

#[tokio::test]
async fn assemblyai_auth() {
    let mock = mock(Provider::AssemblyAi, false).await;
    let query = aai_query(16000, "");
    let url = format!("{}?{query}", mock.url());

    // The raw key in the header, or the token in the query: Begin.
    for (url, headers) in [
        (url.clone(), vec![("authorization", KEY)]),
        (format!("{url}&token={KEY}"), vec![]),
    ] {
        let mut c = Client::open(&url, &headers).await;
        assert!(
            c.wait_for(
                PROMPT,
                |e| matches!(e, Event::Text(m) if m["type"] == "Begin")
            )
            .await
        );
        c.hang_up().await;
    }
    // No key, a wrong key, or a scheme before it: upgraded, then Error and close 1008.
    let bearer = format!("Bearer {KEY}");
    for headers in [
        vec![],
        vec![("authorization", "wrong")],
        vec![("authorization", bearer.as_str())],
    ] {
        let c = Client::open(&url, &headers).await;
        let s = c.end(PROMPT).await;
        let m = s.messages();
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0]["type"], "Error");
        assert_eq!(m[0]["error_code"], 1008);
        assert_eq!(s.close(), Some((1008, "Unauthorized".into())));
    }
    // A scripted refusal is an HTTP status at the upgrade.
    mock.script(vec![Fault::Refuse(429)]);
    refused(&url, &[("authorization", KEY)], 429).await;

    assert!(mock.wait_closed(6, PROMPT).await);
    let c = mock.connections();
    assert_eq!(c[5].refused, Some(429));
    assert!(
        c[2..5]
            .iter()
            .all(|c| c.close_sent == Some((1008, "Unauthorized".into())))
    );
    assert!(c[..2].iter().all(|c| c.violations.is_empty()));
}

#[tokio::test]
async fn assemblyai_validates_the_query() {
    let mock = mock(Provider::AssemblyAi, false).await;
    let too_many = serde_json::to_string(&vec!["term"; 101]).unwrap();
    let too_long = serde_json::to_string(&vec!["x".repeat(51)]).unwrap();
    for (extra, what) in [
        ("&encoding=flac".to_string(), "encoding"),
        ("&keyterms_prompt=hello".into(), "keyterms_prompt"),
        (
            format!("&keyterms_prompt={}", pct(&too_many)),
            "keyterms_prompt",
        ),
        (
            format!("&keyterms_prompt={}", pct(&too_long)),
            "keyterms_prompt",
        ),
        ("&sample_rate=fast".into(), "sample_rate"),
        ("&inactivity_timeout=2".into(), "inactivity_timeout"),
    ] {
        let url = format!(
            "{}?speech_model=universal-streaming-english{extra}",
            mock.url()
        );
        let s = Client::open(&url, &[("authorization", KEY)])
            .await
            .end(PROMPT)
            .await;
        let m = s.messages();
        assert_eq!(m.len(), 1, "{extra}: {m:?}");
        assert_eq!(m[0]["type"], "Error");
        assert_eq!(m[0]["error_code"], 3006);
        let (code, reason) = s.close().expect("close frame");
        assert_eq!(code, 3006);
        assert!(reason.contains(what), "{reason}");
    }

    // The old name of min_turn_silence still works: 150 ms ends a turn at a 200 ms gap.
    // And no speech_model: accepted, but recorded as a violation.
    let mut c = Client::open(
        &format!(
            "{}?sample_rate=16000&min_end_of_turn_silence_when_confident=150",
            mock.url()
        ),
        &[("authorization", KEY)],
    )
    .await;
    let mut audio = speak(&indices("hello world"), 16000, 200, 200);
    audio.extend(silence(16000, 100));
    assert!(c.mono(&audio, 16000, 50, true).await);
    assert!(c.text(json!({"type": "Terminate"})).await);
    let s = c.end(PROMPT).await;
    assert_eq!(aai_finals(&s.messages(), false), ["hello", "world"]);

    assert!(mock.wait_closed(7, PROMPT).await);
    let c = mock.connections();
    assert!(c[..6].iter().all(|c| c.violations.len() == 1));
    assert_eq!(c[6].violations.len(), 1);
    assert!(c[6].violations[0].contains("speech_model"));
}

/// `inactivity_timeout`: with no message for that long the session ends normally
/// (Termination, close 1000); KeepAlive resets the timer.
#[tokio::test]
async fn assemblyai_inactivity_timeout_ends_the_session() {
    let rate = 16000;
    let mock = mock(Provider::AssemblyAi, false).await;
    let q = aai_query(rate, "&inactivity_timeout=5");
    let session = |keep_alive: bool| {
        let mock = &mock;
        let q = &q;
        async move {
            let mut c = aai_open(mock, q).await;
            assert!(c.mono(&sentence("hello", rate), rate, 50, true).await);
            if keep_alive {
                tokio::time::sleep(Duration::from_secs(2)).await;
                assert!(c.text(json!({"type": "KeepAlive"})).await);
            }
            let s = c.end(Duration::from_secs(10)).await;
            let m = s.messages();
            assert_eq!(aai_finals(&m, false), ["hello"]);
            assert_eq!(m.last().unwrap()["type"], "Termination");
            assert_eq!(s.close(), Some((1000, String::new())));
            s.events.last().unwrap().0 - s.opened
        }
    };
    let (plain, kept) = tokio::join!(session(false), session(true));
    let secs = |d: Duration| d.as_secs_f64();
    assert!((5.2..6.5).contains(&secs(plain)), "{plain:?}");
    assert!((7.2..8.5).contains(&secs(kept)), "{kept:?}");
}

#[tokio::test]
async fn assemblyai_enforces_frame_duration_and_real_time() {
    let rate = 16000;
    let mock = mock(Provider::AssemblyAi, false).await;
    let q = aai_query(rate, "");
    let audio = silence(rate, 1000);
    let expect_3007 = |s: &Session, what: &str| {
        let m = s.messages();
        assert_eq!(m[0]["type"], "Begin");
        let e = s.of_type("Error");
        assert_eq!(e.len(), 1, "{m:?}");
        assert_eq!(e[0]["error_code"], 3007);
        let (code, reason) = s.close().expect("close frame");
        assert_eq!(code, 3007);
        assert!(reason.contains(what), "{reason}");
    };
    let short_frames = async {
        let mut c = aai_open(&mock, &q).await;
        c.mono(&audio, rate, 20, true).await;
        expect_3007(&c.end(PROMPT).await, "20 ms");
    };
    let long_frame = async {
        let mut c = aai_open(&mock, &q).await;
        c.mono(&silence(rate, 1200), rate, 1200, false).await;
        expect_3007(&c.end(PROMPT).await, "1200 ms");
    };
    let too_fast = async {
        let mut c = aai_open(&mock, &q).await;
        c.mono(&audio, rate, 100, false).await;
        expect_3007(&c.end(PROMPT).await, "faster than real time");
    };
    let fine = async {
        let mut c = aai_open(&mock, &q).await;
        assert!(c.mono(&audio, rate, 50, true).await);
        // A 1000 ms frame, sent once its second has passed, as a live source would.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(c.mono(&silence(rate, 1000), rate, 1000, false).await);
        assert!(c.text(json!({"type": "Terminate"})).await);
        assert_eq!(c.end(PROMPT).await.close(), Some((1000, String::new())));
    };
    tokio::join!(short_frames, long_frame, too_fast, fine);

    assert!(mock.wait_closed(4, PROMPT).await);
    let conns = mock.connections();
    let broke: Vec<&String> = conns.iter().flat_map(|c| &c.violations).collect();
    assert_eq!(broke.len(), 3, "{broke:?}");
    assert!(broke.iter().any(|v| v.contains("20.0 ms")));
    assert!(broke.iter().any(|v| v.contains("1200.0 ms")));
    assert!(broke.iter().any(|v| v.contains("faster than real time")));
}

#[tokio::test]
async fn assemblyai_control_messages() {
    let rate = 16000;
    let mock = mock(Provider::AssemblyAi, false).await;
    let mut c = aai_open(&mock, &aai_query(rate, "&min_turn_silence=5000")).await;
    let mut audio = sentence("hello world", rate);
    audio.extend(silence(rate, 200));
    assert!(c.mono(&audio, rate, 50, true).await);
    let eot = |e: &Event| matches!(e, Event::Text(m) if m["end_of_turn"] == true);
    assert!(!c.wait_for(Duration::from_millis(100), eot).await);
    // ForceEndpoint ends the turn now; KeepAlive gets nothing.
    assert!(c.text(json!({"type": "ForceEndpoint"})).await);
    assert!(c.wait_for(PROMPT, eot).await);
    assert!(c.text(json!({"type": "KeepAlive"})).await);
    assert!(
        c.text(json!({"type": "UpdateConfiguration", "min_turn_silence": 100}))
            .await
    );
    assert!(c.mono(&sentence("yes", rate), rate, 50, true).await);
    assert!(
        c.wait_for(
            PROMPT,
            |e| matches!(e, Event::Text(m) if m["end_of_turn"] == true && m["turn_order"] == 1)
        )
        .await
    );
    // An unknown message type: Error and close 3006.
    assert!(c.text(json!({"type": "Bogus"})).await);
    let s = c.end(PROMPT).await;
    assert_eq!(aai_finals(&s.messages(), false), ["hello world", "yes"]);
    let e = s.of_type("Error");
    assert_eq!(e[0]["error_code"], 3006);
    assert_eq!(s.close().map(|c| c.0), Some(3006));

    assert!(mock.wait_closed(1, PROMPT).await);
    let c = &mock.connections()[0];
    assert_eq!(
        c.control,
        ["ForceEndpoint", "KeepAlive", "UpdateConfiguration", "Bogus"]
    );
    assert_eq!(c.violations.len(), 1);
    assert!(c.violations[0].contains("Bogus"));
}

#[tokio::test]
async fn assemblyai_faults() {
    let rate = 16000;
    let q = aai_query(rate, "&format_turns=true&min_turn_silence=200");
    let mut audio = sentence("alpha", rate);
    audio.extend(silence(rate, 400));
    audio.extend(sentence("bravo", rate));
    audio.extend(silence(rate, 300));

    // CloseAfter: Error frame with the code, then the close.
    let close = async {
        let mock = mock(Provider::AssemblyAi, false).await;
        mock.script(vec![Fault::CloseAfter(0.7, 3005, "Internal server error")]);
        let mut c = aai_open(&mock, &q).await;
        c.mono(&audio, rate, 50, true).await;
        let s = c.end(PROMPT).await;
        let m = s.messages();
        assert_eq!(aai_finals(&m, true), ["Alpha."]);
        let last = m.last().unwrap();
        assert_eq!(last["type"], "Error");
        assert_eq!(last["error_code"], 3005);
        assert_eq!(s.close(), Some((3005, "Internal server error".into())));
    };
    // DropAfter: no close frame.
    let drop = async {
        let mock = mock(Provider::AssemblyAi, false).await;
        mock.script(vec![Fault::DropAfter(0.7)]);
        let mut c = aai_open(&mock, &q).await;
        c.mono(&audio, rate, 50, true).await;
        let s = c.end(PROMPT).await;
        assert!(s.gone_without_close());
        assert_eq!(aai_finals(&s.messages(), true), ["Alpha."]);
    };
    // StallAfter: nothing more, not even for Terminate.
    let stall = async {
        let mock = mock(Provider::AssemblyAi, false).await;
        mock.script(vec![Fault::StallAfter(0.7)]);
        let mut c = aai_open(&mock, &q).await;
        assert!(c.mono(&audio, rate, 50, true).await);
        assert!(c.text(json!({"type": "Terminate"})).await);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let m = c.messages();
        assert_eq!(aai_finals(&m, true), ["Alpha."]);
        assert!(m.iter().all(|m| m["type"] != "Termination"));
        assert!(mock.connections()[0].words_heard == ["alpha", "bravo"]);
        assert!(!mock.connections()[0].closed);
    };
    // Slow: everything, Begin included, comes late and in order.
    let slow = async {
        let mock = mock(Provider::AssemblyAi, false).await;
        mock.script(vec![Fault::Slow(Duration::from_millis(300))]);
        let mut c = aai_open(&mock, &q).await;
        assert!(!c.wait_for(Duration::from_millis(200), |_| true).await);
        assert!(
            c.wait_for(
                PROMPT,
                |e| matches!(e, Event::Text(m) if m["type"] == "Begin")
            )
            .await
        );
        assert!(c.mono(&audio, rate, 50, true).await);
        assert!(c.text(json!({"type": "Terminate"})).await);
        let s = c.end(PROMPT).await;
        let types: Vec<String> = s.messages().iter().map(|m| m["type"].to_string()).collect();
        assert_eq!(types.first().map(String::as_str), Some("\"Begin\""));
        assert_eq!(types.last().map(String::as_str), Some("\"Termination\""));
        assert_eq!(aai_finals(&s.messages(), true), ["Alpha.", "Bravo."]);
        assert_eq!(s.close(), Some((1000, String::new())));
    };
    // The script goes connection by connection, then connections are normal.
    let scripted = async {
        let mock = mock(Provider::AssemblyAi, false).await;
        mock.script(vec![Fault::DropAfter(0.2), Fault::Refuse(503)]);
        let mut c = aai_open(&mock, &q).await;
        c.mono(&silence(rate, 400), rate, 50, true).await;
        assert!(c.end(PROMPT).await.gone_without_close());
        refused(
            &format!("{}?{q}", mock.url()),
            &[("authorization", KEY)],
            503,
        )
        .await;
        let mut c = aai_open(&mock, &q).await;
        assert!(c.mono(&silence(rate, 300), rate, 50, true).await);
        assert!(c.text(json!({"type": "Terminate"})).await);
        assert_eq!(c.end(PROMPT).await.close(), Some((1000, String::new())));
    };
    tokio::join!(close, drop, stall, slow, scripted);
}
