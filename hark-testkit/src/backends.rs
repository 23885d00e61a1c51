//! Test-only backends: each misbehaves in one way a real recognizer can, or records exactly
//! what reached it. They live in tests/ and are never part of the product.

use std::sync::Arc;
use std::time::Duration;

use hark::audio::AudioSource;
use hark::backend::{Backend, BackendError, Booking, ChannelSpec, EventSink, Refusal, Registry};

/// Reports, as a final after every batch it takes, how many samples reached it and a hash of
/// them in order: `n=<count> h=<fnv1a>` (partial `n=<count>` too), so a test can check that
/// no byte was dropped or misaligned.
pub struct Recorder;

/// Refuses to start.
pub struct FailStart;

/// Reports an error after taking this many samples.
pub struct FailAfter(pub usize);

/// Panics on its own thread after taking this many samples.
pub struct PanicAfter(pub usize);

/// Takes the channel and then never reads a sample: a recognizer stuck in a call.
pub struct Wedge;

/// Reads audio at this fraction of real time.
pub struct Slow(pub f64);

/// A [`Recorder`] that is not ready until the flag is set: a recognizer still loading.
pub struct Gated(pub Arc<std::sync::atomic::AtomicBool>);

/// Ready, but refuses every call at admission with this refusal, as the embedded
/// recognizer does when it has no headroom; `start` is never reached.
pub struct NoHeadroom(pub Refusal);

pub fn registry() -> Registry {
    let mut r = Registry::default();
    r.insert("recorder", Arc::new(Recorder));
    r.insert("fail-start", Arc::new(FailStart));
    r.insert("fail-after", Arc::new(FailAfter(8000)));
    r.insert("panic-after", Arc::new(PanicAfter(8000)));
    r.insert("wedge", Arc::new(Wedge));
    r.insert("slow", Arc::new(Slow(0.5)));
    r.insert("no-headroom", Arc::new(NoHeadroom(no_headroom_refusal())));
    r
}

/// What the registry's `no-headroom` backend says when it refuses.
pub fn no_headroom_refusal() -> Refusal {
    Refusal::Wave {
        finals: 17,
        seconds: 3.0,
        wave_ms: 710.0,
        free: 2.0,
        model: "finals'",
        max_batch: 16,
        budget_ms: 600.0,
    }
}

pub fn fnv1a(hash: u64, sample: i16) -> u64 {
    sample.to_le_bytes().iter().fold(hash, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

impl Backend for Gated {
    fn is_ready(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn start(
        &self,
        spec: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        Recorder.start(spec, audio, events)
    }
}

impl Backend for Recorder {
    fn start(
        &self,
        _: ChannelSpec,
        mut audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        tokio::spawn(async move {
            let mut buf = vec![0i16; 4096];
            let (mut count, mut hash) = (0usize, FNV_OFFSET);
            loop {
                audio.readable().await;
                let n = audio.pop(&mut buf);
                if n == 0 && audio.is_finished() {
                    events.done();
                    return;
                }
                if !events.is_open() {
                    return;
                }
                for &s in &buf[..n] {
                    hash = fnv1a(hash, s);
                }
                count += n;
                if n > 0 {
                    events.partial(&format!("n={count}"));
                    events.final_text(&format!("n={count} h={hash:016x}"));
                }
            }
        });
        Ok(())
    }
}

impl Backend for FailStart {
    fn start(&self, _: ChannelSpec, _: AudioSource, _: EventSink) -> Result<(), BackendError> {
        Err(BackendError::new("test backend refuses to start"))
    }
}

/// Takes samples on a plain thread until `limit`, then hands the sink to `then`.
fn consume_then(
    mut audio: AudioSource,
    events: EventSink,
    limit: usize,
    then: impl FnOnce(EventSink) + Send + 'static,
) {
    std::thread::spawn(move || {
        audio.wake_thread(std::thread::current());
        let mut buf = vec![0i16; 1024];
        let mut taken = 0;
        while taken < limit {
            taken += audio.pop(&mut buf);
            if audio.is_finished() {
                events.done();
                return;
            }
            std::thread::park_timeout(Duration::from_millis(10));
        }
        then(events);
    });
}

impl Backend for FailAfter {
    fn start(
        &self,
        _: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        consume_then(audio, events, self.0, |events| {
            events.fail("test backend lost its connection")
        });
        Ok(())
    }
}

impl Backend for PanicAfter {
    fn start(
        &self,
        _: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        consume_then(audio, events, self.0, |events| {
            let _keep = events;
            panic!("test backend panics on purpose");
        });
        Ok(())
    }
}

impl Backend for Wedge {
    fn start(
        &self,
        _: ChannelSpec,
        audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        std::thread::spawn(move || {
            // Holds both ends, reads nothing, and only notices when the session is gone.
            let _audio = audio;
            while events.is_open() {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::mem::forget(events);
        });
        Ok(())
    }
}

impl Backend for Slow {
    fn start(
        &self,
        spec: ChannelSpec,
        mut audio: AudioSource,
        events: EventSink,
    ) -> Result<(), BackendError> {
        let per_tick = (f64::from(spec.sample_rate) * 0.02 * self.0) as usize;
        tokio::spawn(async move {
            let mut buf = vec![0i16; per_tick.max(1)];
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while events.is_open() {
                tick.tick().await;
                audio.pop(&mut buf);
                if audio.is_finished() {
                    events.done();
                    return;
                }
            }
        });
        Ok(())
    }
}

impl Backend for NoHeadroom {
    fn has_headroom(&self, _channels: usize, _language: &str) -> bool {
        false
    }

    fn reserve(&self, _channels: usize, _language: &str) -> Result<Booking, Refusal> {
        Err(self.0.clone())
    }

    fn start(&self, _: ChannelSpec, _: AudioSource, _: EventSink) -> Result<(), BackendError> {
        Err(BackendError::new(
            "no headroom: the call should have been refused",
        ))
    }
}
