//! The shedding ladder's finals' model and finals' beam search: while finals
//! queue, the embedded path has them decoded greedily, then by the partials' model, and by
//! their own with the beam again once the load falls; a ladder whose last step is below the
//! finals' model never sheds it. An engine of two models whose cost
//! the test sets stands in for the recognizer, so the load is the same on any machine and
//! each final says which model decoded it; the audio path, segmenter, pool and ladder are
//! hark's own, fed the dev clips at real time.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hark::audio::{AudioSink, channel_pipe};
use hark::backend::embedded::{
    ContextKind, Embedded, Engine, EngineError, Loaded, Settings, Shed, Speakers, Tier,
    Transcribed, Utterance,
};
use hark::backend::{Backend, ChannelSpec, Event, EventKind, EventSink};
use hark::protocol::Channel;
use hark_testkit::clips;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::overload::back_to_back;

const RATE: u32 = 16_000;
/// Calls speaking in phase on one decoder: each wave of finals takes `CALLS × FINALS_COST`.
const CALLS: usize = 8;
const FINALS_COST: Duration = Duration::from_millis(300);
const PARTIALS_COST: Duration = Duration::from_millis(40);
/// How long the calls speak together, then the first alone, with pauses long enough for
/// the ladder to come all the way down (a step per 2 s of finals on time).
const TOGETHER_SECS: f64 = 10.0;
const ALONE_SECS: f64 = 16.0;

/// Two models: a slow one for finals, a fast one for partials; the text says which, and
/// whether the final was searched with the beam.
struct TwoModels;

impl Engine for TwoModels {
    /// One utterance after another, as an engine that does not batch.
    fn transcribe(
        &mut self,
        batch: &[Utterance<'_>],
        tier: Tier,
    ) -> Vec<Result<Transcribed, EngineError>> {
        let (cost, text) = match tier {
            Tier::Finals => (FINALS_COST, "finals model"),
            Tier::Partials => (PARTIALS_COST, "partials model"),
        };
        thread::sleep(cost * batch.len() as u32);
        batch
            .iter()
            .map(|u| match (tier, u.beam) {
                (Tier::Finals, true) => Ok(format!("{text}, beam").into()),
                _ => Ok(text.into()),
            })
            .collect()
    }
}

fn backend(name: &'static str, shed: Shed) -> Arc<Embedded> {
    let settings = Settings {
        shed,
        // Time for the beam: a final of this engine takes 300 ms, and the beam takes a final
        // only where its decode is ready by the endpoint.
        endpoint_ms: 600,
        ..Settings::default()
    };
    let backend = Embedded::spawn(
        name,
        settings,
        Box::new(|| {
            Ok(Loaded {
                engines: vec![Box::new(TwoModels)],
                context: ContextKind::Audio,
                prompted: false,
                describe: "two models".into(),
                speaks: Box::new(|_| Ok(Speakers::Both)),
                judge: None,
                finals_model: true,
                max_batch: 1,
                beam: 5,
            })
        }),
    );
    backend
        .wait_ready(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
    backend
}

/// What one channel's events said: its finals with when they came, whether it ended well.
struct Heard {
    finals: Vec<(Duration, String)>,
    failed: Option<String>,
    done: bool,
}

/// Plays `audio` into each of `backends`' channels at real time in 20 ms frames (every
/// channel of every backend in phase), then collects what each channel heard.
fn play(backends: &[Arc<Embedded>], audio: &[Vec<i16>]) -> Vec<Vec<Heard>> {
    let start = Instant::now();
    let mut sinks: Vec<(AudioSink, usize)> = Vec::new();
    let mut events = Vec::new();
    for (b, backend) in backends.iter().enumerate() {
        events.push(Vec::new());
        for (c, _) in audio.iter().enumerate() {
            let (sink, source) = channel_pipe(RATE, RATE as usize * 30);
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let spec = ChannelSpec {
                session_id: (b * audio.len() + c) as u64,
                channel: Channel::Customer,
                sample_rate: RATE,
                options: Arc::default(),
            };
            backend
                .start(spec, source, EventSink::new(tx, Channel::Customer, 0))
                .expect("channel starts");
            sinks.push((sink, c));
            events[b].push(rx);
        }
    }
    let frame = RATE as usize / 50;
    let longest = audio.iter().map(Vec::len).max().unwrap_or(0);
    for (n, at) in (0..longest).step_by(frame).enumerate() {
        for (sink, c) in &mut sinks {
            let a = &audio[*c];
            if at < a.len() {
                sink.push(&a[at..(at + frame).min(a.len())])
                    .expect("the ring has room");
            } else if at < a.len() + frame {
                sink.finish();
            }
        }
        let due = start + Duration::from_millis(20 * (n as u64 + 1));
        thread::sleep(due.saturating_duration_since(Instant::now()));
    }
    for (sink, _) in &sinks {
        sink.finish();
    }
    events
        .into_iter()
        .map(|channels| channels.into_iter().map(|rx| heard(rx, start)).collect())
        .collect()
}

/// What a channel's events say until it ends (or 30 s), times counted from `start`.
fn heard(mut rx: UnboundedReceiver<Event>, start: Instant) -> Heard {
    let mut heard = Heard {
        finals: Vec::new(),
        failed: None,
        done: false,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !heard.done && heard.failed.is_none() && Instant::now() < deadline {
        let Ok(event) = rx.try_recv() else {
            thread::sleep(Duration::from_millis(20));
            continue;
        };
        match event.kind {
            EventKind::Final(text) => heard.finals.push((event.at - start, text)),
            EventKind::Failed { message, .. } => heard.failed = Some(message),
            EventKind::Done => heard.done = true,
            _ => {}
        }
    }
    heard
}

#[test]
fn finals_shed_the_beam_then_fall_back_to_the_partials_model_under_load_and_return_after_it() {
    let _machine = crate::MACHINE.blocking_lock();
    let all = clips();
    let audio: Vec<Vec<i16>> = (0..CALLS)
        .map(|c| {
            let secs = if c == 0 {
                TOGETHER_SECS + ALONE_SECS
            } else {
                TOGETHER_SECS
            };
            let mut a = back_to_back(&all, 0, secs, Duration::from_secs(1));
            a.truncate((secs * RATE as f64) as usize);
            a
        })
        .collect();
    let backends = [
        backend("shed-all", Shed::Speculative),
        backend("shed-context", Shed::Context),
    ];
    let heard = play(&backends, &audio);
    for (b, channels) in heard.iter().enumerate() {
        for (c, h) in channels.iter().enumerate() {
            assert!(
                h.failed.is_none(),
                "backend {b} channel {c}: {:?}",
                h.failed
            );
            assert!(h.done, "backend {b} channel {c} never finished");
            assert!(!h.finals.is_empty(), "backend {b} channel {c}: no final");
        }
    }
    let from_partials = |h: &Heard| {
        h.finals
            .iter()
            .filter(|(_, t)| t == "partials model")
            .count()
    };
    let shed: usize = heard[0].iter().map(from_partials).sum();
    assert!(
        shed > 0,
        "{CALLS} calls in phase on one decoder and no final shed the finals' model"
    );
    let capped: usize = heard[1].iter().map(from_partials).sum();
    assert_eq!(
        capped, 0,
        "a ladder capped at context shed the finals' model"
    );
    // Before the finals' model, the beam: both ladders decoded finals greedily under load.
    for (b, channels) in heard.iter().enumerate() {
        let greedy = channels
            .iter()
            .flat_map(|h| &h.finals)
            .filter(|(_, t)| t == "finals model")
            .count();
        assert!(greedy > 0, "backend {b}: no final shed the beam under load");
    }
    // Alone again: the ladder has come down and the last finals are the finals' model's.
    let last = heard[0][0].finals.last().expect("a final");
    assert!(
        last.0.as_secs_f64() > TOGETHER_SECS + 8.0,
        "the lone call's last final came at {:?}",
        last.0
    );
    assert_eq!(
        last.1, "finals model, beam",
        "finals did not get their model and beam back"
    );
}
