//! The audio path from socket bytes to a recognizer: PCM decoding with carry-over between
//! frames, de-interleaving, and one lock-free single-producer single-consumer ring per channel.
//!
//! The websocket reader is the only producer of a ring and a backend the only consumer, so
//! the reader never takes a lock and never waits: a full ring means the recognizer fell
//! behind, which the session treats as a failure instead of queueing without bound.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::thread::Thread;
use std::time::{Duration, Instant};

use atomic_waker::AtomicWaker;
use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

/// Splits a byte stream of interleaved little-endian s16 PCM into per-channel samples.
///
/// Websocket frames need not hold whole sample frames; the remainder of one frame is kept
/// and completed by the next, so no byte is dropped and channels never swap.
#[derive(Debug)]
pub struct PcmDecoder {
    channels: usize,
    carry: Vec<u8>,
    scratch: Vec<Vec<i16>>,
}

impl PcmDecoder {
    pub fn new(channels: usize) -> Self {
        Self {
            channels,
            carry: Vec::with_capacity(channels * 2),
            scratch: vec![Vec::new(); channels],
        }
    }

    /// Decodes `bytes` and returns one slice of new samples per channel (possibly empty).
    pub fn decode(&mut self, mut bytes: &[u8]) -> &[Vec<i16>] {
        let stride = self.channels * 2;
        for ch in &mut self.scratch {
            ch.clear();
        }
        if !self.carry.is_empty() {
            let need = stride - self.carry.len();
            let take = need.min(bytes.len());
            self.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.carry.len() == stride {
                let carry = std::mem::take(&mut self.carry);
                self.push_frames(&carry);
                self.carry = carry;
                self.carry.clear();
            }
        }
        let whole = bytes.len() - bytes.len() % stride;
        self.push_frames(&bytes[..whole]);
        self.carry.extend_from_slice(&bytes[whole..]);
        &self.scratch
    }

    /// Bytes held back waiting for the rest of their sample frame.
    pub fn pending_bytes(&self) -> usize {
        self.carry.len()
    }

    fn push_frames(&mut self, bytes: &[u8]) {
        for frame in bytes.chunks_exact(self.channels * 2) {
            for (ch, s) in frame.chunks_exact(2).enumerate() {
                self.scratch[ch].push(i16::from_le_bytes([s[0], s[1]]));
            }
        }
    }
}

/// State shared by the two ends of one channel's ring.
#[derive(Debug, Default)]
struct Shared {
    pushed: AtomicU64,
    consumed: AtomicU64,
    /// One past the position from which the backend still owes results (0: owes none).
    /// A backend that takes audio at once but decodes it later reports its backlog here.
    owed_from: AtomicU64,
    ended: AtomicBool,
    waker: AtomicWaker,
    thread: OnceLock<Thread>,
}

impl Shared {
    fn readable(&self) -> bool {
        self.ended.load(Ordering::Acquire)
            || self.pushed.load(Ordering::Acquire) > self.consumed.load(Ordering::Acquire)
    }

    fn wake(&self) {
        self.waker.wake();
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// Creates the ring for one channel, holding up to `capacity` samples.
pub fn channel_pipe(sample_rate: u32, capacity: usize) -> (AudioSink, AudioSource) {
    let (prod, cons) = HeapRb::<i16>::new(capacity.max(1)).split();
    let (marks_in, marks_out) = HeapRb::<Mark>::new(MARKS).split();
    let shared = Arc::new(Shared::default());
    (
        AudioSink {
            prod,
            marks: marks_in,
            shared: shared.clone(),
            sample_rate,
        },
        AudioSource {
            cons,
            marks: marks_out,
            shared,
            sample_rate,
            consumed: 0,
        },
    )
}

/// When the frame that ended at sample `end` arrived; measures frame-to-recognizer time.
#[derive(Debug, Clone, Copy)]
struct Mark {
    end: u64,
    at: Instant,
}

/// Frames whose arrival is remembered; when more are waiting, newer ones go unmeasured.
const MARKS: usize = 512;

/// The session's end of a channel's ring.
pub struct AudioSink {
    prod: HeapProd<i16>,
    marks: HeapProd<Mark>,
    shared: Arc<Shared>,
    sample_rate: u32,
}

/// The ring is full: the recognizer is more than the ring's length behind real time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

impl AudioSink {
    /// Appends samples without blocking. On overflow nothing is written.
    pub fn push(&mut self, samples: &[i16]) -> Result<(), Overflow> {
        if samples.is_empty() {
            return Ok(());
        }
        if self.prod.vacant_len() < samples.len() {
            return Err(Overflow);
        }
        let n = self.prod.push_slice(samples);
        debug_assert_eq!(n, samples.len());
        let end = self.shared.pushed.fetch_add(n as u64, Ordering::Release) + n as u64;
        // Measurement only: a full mark ring skips this frame's timing, nothing else.
        let _ = self.marks.try_push(Mark {
            end,
            at: Instant::now(),
        });
        self.shared.wake();
        Ok(())
    }

    /// Marks the end of the audio: the backend flushes its last finals and stops.
    pub fn finish(&self) {
        self.shared.ended.store(true, Ordering::Release);
        self.shared.wake();
    }

    /// How far the consumer is behind the producer: audio not taken yet, or, if earlier,
    /// audio taken whose results the backend still owes.
    pub fn lag(&self) -> Duration {
        let pushed = self.shared.pushed.load(Ordering::Acquire);
        let mut done = self.shared.consumed.load(Ordering::Acquire);
        if let Some(owed) = self.shared.owed_from.load(Ordering::Acquire).checked_sub(1) {
            done = done.min(owed);
        }
        samples_to_duration(pushed.saturating_sub(done), self.sample_rate)
    }

    /// Samples the consumer has taken so far.
    pub fn taken(&self) -> u64 {
        self.shared.consumed.load(Ordering::Acquire)
    }

    /// Total audio pushed so far.
    pub fn pushed(&self) -> Duration {
        samples_to_duration(self.shared.pushed.load(Ordering::Acquire), self.sample_rate)
    }
}

impl Drop for AudioSink {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A backend's end of a channel's ring.
pub struct AudioSource {
    cons: HeapCons<i16>,
    marks: HeapCons<Mark>,
    /// Samples taken so far (the consumer's own copy of `Shared::consumed`).
    consumed: u64,
    shared: Arc<Shared>,
    sample_rate: u32,
}

impl AudioSource {
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// Takes up to `out.len()` samples without blocking; returns how many were taken.
    pub fn pop(&mut self, out: &mut [i16]) -> usize {
        let n = self.cons.pop_slice(out);
        if n > 0 {
            self.shared.consumed.fetch_add(n as u64, Ordering::Release);
            self.consumed += n as u64;
            // Every frame now wholly taken has reached the recognizer.
            while let Some(mark) = self.marks.first().copied() {
                if mark.end > self.consumed {
                    break;
                }
                self.marks.try_pop();
                metrics::histogram!(crate::metrics::FRAME_TO_RECOGNIZER)
                    .record(mark.at.elapsed().as_secs_f64());
            }
        }
        n
    }

    /// Copies up to `out.len()` samples from the front without taking them.
    pub fn peek(&self, out: &mut [i16]) -> usize {
        self.cons.peek_slice(out)
    }

    /// Samples taken so far: the position of the next sample `pop` returns.
    pub fn position(&self) -> u64 {
        self.consumed
    }

    /// Reports that results for audio from `position` on are still owed (`None`: none
    /// are), so the session counts the backlog as lag even though the samples were taken.
    pub fn owe_from(&self, position: Option<u64>) {
        let value = position.map_or(0, |p| p.saturating_add(1));
        self.shared.owed_from.store(value, Ordering::Release);
    }

    /// Samples waiting in the ring.
    pub fn available(&self) -> usize {
        self.cons.occupied_len()
    }

    /// True once the session has ended the audio: what is in the ring is all there is.
    pub fn has_ended(&self) -> bool {
        self.shared.ended.load(Ordering::Acquire)
    }

    /// True once the session has ended the audio and every sample has been taken.
    pub fn is_finished(&self) -> bool {
        self.shared.ended.load(Ordering::Acquire) && self.cons.is_empty()
    }

    /// Has pushes unpark `thread`, for backends that wait on a plain thread.
    /// Only the first registration counts: a source is served by one thread for its life.
    pub fn wake_thread(&self, thread: Thread) {
        let _ = self.shared.thread.set(thread);
    }

    /// Waits until samples are available or the audio has ended, for async backends.
    /// The future holds only the shared counters, so it is `Send` and outlives no borrow.
    pub fn readable(&self) -> impl Future<Output = ()> + Send + 'static {
        let shared = self.shared.clone();
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            if shared.readable() {
                return Poll::Ready(());
            }
            shared.waker.register(cx.waker());
            if shared.readable() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

pub fn samples_to_duration(samples: u64, rate: u32) -> Duration {
    Duration::from_secs_f64(samples as f64 / f64::from(rate.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_partial_sample_frames_across_calls() {
        let mut d = PcmDecoder::new(2);
        // L=1, R=-2, L=3, R=-4 split at odd offsets.
        let bytes: Vec<u8> = [1i16, -2, 3, -4]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        let mut left = Vec::new();
        let mut right = Vec::new();
        for piece in [&bytes[..1], &bytes[1..5], &bytes[5..7], &bytes[7..]] {
            let out = d.decode(piece);
            left.extend_from_slice(&out[0]);
            right.extend_from_slice(&out[1]);
        }
        assert_eq!(left, vec![1, 3]);
        assert_eq!(right, vec![-2, -4]);
        assert_eq!(d.pending_bytes(), 0);
    }

    #[test]
    fn mono_decodes_every_sample() {
        let mut d = PcmDecoder::new(1);
        let out = d.decode(&[0x01, 0x00, 0xff, 0xff, 0x05]);
        assert_eq!(out[0], vec![1, -1]);
        assert_eq!(d.pending_bytes(), 1);
        let out = d.decode(&[0x00]);
        assert_eq!(out[0], vec![5]);
    }

    #[test]
    fn ring_reports_lag_and_refuses_overflow() {
        let (mut sink, mut source) = channel_pipe(1000, 100);
        sink.push(&[0; 60]).unwrap();
        assert_eq!(sink.lag(), Duration::from_millis(60));
        assert_eq!(sink.push(&[0; 60]), Err(Overflow));
        let mut buf = [0i16; 50];
        assert_eq!(source.pop(&mut buf), 50);
        assert_eq!(sink.lag(), Duration::from_millis(10));
        // Taken but owed counts as behind, until the backend settles it.
        source.owe_from(Some(source.position() - 10));
        assert_eq!(sink.lag(), Duration::from_millis(20));
        source.owe_from(None);
        assert_eq!(sink.lag(), Duration::from_millis(10));
        assert!(!source.is_finished());
        sink.finish();
        assert!(!source.is_finished());
        source.pop(&mut buf);
        assert!(source.is_finished());
    }
}
