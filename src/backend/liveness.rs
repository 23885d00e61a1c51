//! One provider connection's pace and liveness, the same for the websocket relays
//! (`relay`: Deepgram, AssemblyAI) and Riva's gRPC streams (`riva`).
//!
//! [`Liveness`] decides, from the audio sent and the time given to it (never the clock
//! itself, so it is tested on simulated time):
//!
//! - pacing: the frame sizes a provider takes, and how much of the ring may go now at its
//!   pace (the relays hold audio back to it; Riva sends at once, in chunks);
//! - stall detection: voiced audio sent, and no answer for longer than the stall bound
//!   since the provider, taking audio at its pace, had it: a fault, so the channel
//!   reconnects and then fails over;
//! - idle settling: with no turn open and every voiced frame processed, what was sent less
//!   a margin holds no word still to come, so the replay need not keep it.
//!
//! The callers keep what is their transport's: sockets, pings and keepalives, catching up
//! (`catch_up`), how an answer is read, and the errors they count.

use std::fmt;
use std::time::{Duration, Instant};

use super::catch_up::{VOICED_RMS, rms};

/// How often a connection checks for a stall and settles what the provider left idle.
pub(super) const HOUSEKEEPING: Duration = Duration::from_millis(100);
/// Audio kept unsettled behind the send position while the provider is idle, for words it
/// has heard but not yet answered.
pub(super) const IDLE_SETTLE_MARGIN: Duration = Duration::from_secs(1);
/// Shortest frame sent while the pace holds audio back (a provider that takes any size
/// would otherwise get a message per sliver the clock allows).
const PACED_FRAME: Duration = Duration::from_millis(20);
/// Longest frame while catching up, so that a pause is judged before it is sent.
const CATCH_UP_FRAME: Duration = Duration::from_millis(100);

/// How fast and in what pieces a provider takes audio.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    /// Most seconds of audio per second of connection time (1.0 = never ahead of real time).
    pub max_speed: f64,
    /// Audio that may go ahead of that pace.
    pub burst: Duration,
    /// Shortest and longest frame; a shorter tail is padded with silence at the end.
    pub min_frame: Duration,
    pub max_frame: Duration,
}

/// What [`Liveness::next_frame`] says to do with the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Take `take` samples and send them as one frame of `len` (the rest silence: a tail
    /// shorter than the provider's shortest frame).
    Frame { take: usize, len: usize },
    /// Ask again after this long: the pace holds audio back, or a frame is still filling.
    Wait(Duration),
    /// Nothing is waiting in the ring.
    Empty,
}

/// What [`Liveness::sent`] made of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    /// The frame may hold voice (RMS above [`VOICED_RMS`]).
    pub voiced: bool,
    /// It started the stall clock: the first voice since the provider's last answer.
    pub unanswered: bool,
}

/// Voiced audio unanswered past the stall bound, for this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stall(pub Duration);

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no answer for {:.1} s while audio was flowing",
            self.0.as_secs_f64()
        )
    }
}

/// One connection (a websocket, a gRPC stream): its pace, the audio it sent, and what the
/// provider has answered of it.
#[derive(Debug, Clone)]
pub(super) struct Liveness {
    per_sec: f64,
    pacing: Pacing,
    stall_timeout: Duration,
    /// When the provider could first take audio: the pace counts from here.
    start: Instant,
    min_frame: usize,
    max_frame: usize,
    catch_up_frame: usize,
    paced_frame: usize,
    /// Samples sent on this connection: the provider's stream position.
    sent: u64,
    /// The furthest stream position the provider said it processed.
    processed: u64,
    /// The end of the last voiced frame sent: audio up to here may hold words.
    voiced_until: u64,
    /// When the provider should have had the first voiced frame sent since its last answer.
    unanswered_since: Option<Instant>,
}

impl Liveness {
    /// A connection at `rate` samples a second, open since `start`, whose provider takes
    /// audio at `pacing` and is stalled after `stall_timeout` without an answer.
    pub fn new(rate: u32, pacing: Pacing, stall_timeout: Duration, start: Instant) -> Self {
        let per_sec = f64::from(rate);
        let min_frame = (pacing.min_frame.as_secs_f64() * per_sec).round() as usize;
        let max_frame = ((pacing.max_frame.as_secs_f64() * per_sec) as usize).max(min_frame.max(1));
        let catch_up_frame =
            ((CATCH_UP_FRAME.as_secs_f64() * per_sec) as usize).clamp(min_frame.max(1), max_frame);
        let paced_frame = ((PACED_FRAME.as_secs_f64() * per_sec) as usize).clamp(1, max_frame);
        Self {
            per_sec,
            pacing,
            stall_timeout,
            start,
            min_frame,
            max_frame,
            catch_up_frame,
            paced_frame,
            sent: 0,
            processed: 0,
            voiced_until: 0,
            unanswered_since: None,
        }
    }

    /// The longest frame, in samples: the send buffer's size.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Samples sent so far: the provider's stream position.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// What to send now, with `available` samples in the ring; `behind` while catching up
    /// (smaller frames, so each pause is judged before it goes), `ended` once no more audio
    /// will come (a short tail goes out padded rather than wait for a whole frame).
    pub fn next_frame(&self, now: Instant, available: usize, behind: bool, ended: bool) -> Next {
        let per_sec = self.per_sec;
        let pacing = &self.pacing;
        let elapsed = now.saturating_duration_since(self.start).as_secs_f64();
        let budget = ((elapsed * pacing.max_speed + pacing.burst.as_secs_f64()) * per_sec) as u64;
        let allowed = budget.saturating_sub(self.sent) as usize;
        let frame_cap = if behind {
            self.catch_up_frame
        } else {
            self.max_frame
        };
        let ready = available.min(frame_cap);
        if ready == 0 {
            return Next::Empty;
        }
        let min_frame = self.min_frame;
        let tail = ready < min_frame && ended;
        if ready < min_frame && !tail {
            // Too little for a frame yet: it fills in real time.
            let fill = Duration::from_secs_f64((min_frame - ready) as f64 / per_sec);
            return Next::Wait(fill.max(Duration::from_millis(1)));
        }
        // As much as the pace allows, but never less than a whole frame, nor (while paced)
        // a sliver of one.
        let n = if tail { ready } else { ready.min(allowed) };
        let padded = n.max(min_frame);
        let sliver = n < ready && n < self.paced_frame;
        if n > 0 && allowed >= padded && !sliver {
            return Next::Frame {
                take: n,
                len: padded,
            };
        }
        // Paced: wait until the budget covers a frame.
        let need = self.sent + padded.max(self.paced_frame.min(ready)).max(1) as u64;
        let at = (need as f64 / per_sec - pacing.burst.as_secs_f64()) / pacing.max_speed;
        Next::Wait(Duration::from_secs_f64((at - elapsed).max(0.001)))
    }

    /// When a provider taking audio at its pace has had the stream up to `position`. A
    /// relay sends only what its pace allows, so for what it sent this is never later than
    /// the send; Riva's replay goes at once and a server working at real time reaches its
    /// end only later.
    fn due(&self, position: u64) -> Instant {
        let at = (position as f64 / self.per_sec - self.pacing.burst.as_secs_f64())
            / self.pacing.max_speed;
        self.start + Duration::from_secs_f64(at.max(0.0))
    }

    /// Counts `frame` as sent at `now`. The first voice since the provider's last answer
    /// starts the stall clock, from when the provider can have had it: a provider still
    /// working through audio sent before it, at its pace, is not silent yet.
    pub fn sent_frame(&mut self, now: Instant, frame: &[i16]) -> Sent {
        let voiced = rms(frame) > VOICED_RMS;
        let unanswered = voiced && self.unanswered_since.is_none();
        if unanswered {
            self.unanswered_since = Some(now.max(self.due(self.sent)));
        }
        self.sent += frame.len() as u64;
        if voiced {
            self.voiced_until = self.sent;
        }
        Sent { voiced, unanswered }
    }

    /// The provider answered: it has been heard since the last voice, so no stall is running.
    pub fn answered(&mut self) {
        self.unanswered_since = None;
    }

    /// The provider says it processed the stream up to `position` (a final's end, an
    /// interim's, Riva's `audio_processed`).
    pub fn processed(&mut self, position: u64) {
        self.processed = self.processed.max(position);
    }

    /// Voiced audio unanswered for longer than the stall bound at `now`: the provider is
    /// stalled (a half-open connection, a server that stopped working, answers hark cannot
    /// read), and a new connection is worth more than waiting.
    pub fn stalled(&self, now: Instant) -> Option<Stall> {
        let unanswered = now.saturating_duration_since(self.unanswered_since?);
        (unanswered > self.stall_timeout).then_some(Stall(unanswered))
    }

    /// The stream position the connection may settle on its own, with `idle` true while the
    /// provider has no turn open. Only when every voiced frame is answered and processed by
    /// the provider's own positions (not just any answer: a late provider's answer may be
    /// about audio sent seconds ago), and never the last [`IDLE_SETTLE_MARGIN`] sent, which
    /// may hold words it heard but has not answered yet.
    pub fn idle_settle(&self, idle: bool) -> Option<u64> {
        if !idle || self.unanswered_since.is_some() || self.processed < self.voiced_until {
            return None;
        }
        let margin = (IDLE_SETTLE_MARGIN.as_secs_f64() * self.per_sec) as u64;
        (self.sent > margin).then(|| self.sent - margin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STALL: Duration = Duration::from_millis(2_500);

    /// AssemblyAI's pace: real time, frames of 50–1000 ms.
    const REAL_TIME: Pacing = Pacing {
        max_speed: 1.0,
        burst: Duration::ZERO,
        min_frame: Duration::from_millis(50),
        max_frame: Duration::from_millis(1000),
    };
    /// Deepgram's: 1.25×, 250 ms ahead, any frame up to 250 ms.
    const FAST: Pacing = Pacing {
        max_speed: 1.25,
        burst: Duration::from_millis(250),
        min_frame: Duration::ZERO,
        max_frame: Duration::from_millis(250),
    };
    /// Riva's: real time, chunks of at most 100 ms (sent unpaced).
    const CHUNKS: Pacing = Pacing {
        max_speed: 1.0,
        burst: Duration::ZERO,
        min_frame: Duration::ZERO,
        max_frame: Duration::from_millis(100),
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn voice(n: usize) -> Vec<i16> {
        (0..n)
            .map(|i| if i % 2 == 0 { 1000 } else { -1000 })
            .collect()
    }

    fn frame(take: usize, len: usize) -> Next {
        Next::Frame { take, len }
    }

    /// The wait `next` says, in ms, to a microsecond.
    fn wait_ms(next: Next) -> f64 {
        match next {
            Next::Wait(d) => (d.as_secs_f64() * 1e6).round() / 1e3,
            other => panic!("expected a wait, got {other:?}"),
        }
    }

    #[test]
    fn loudness_separates_voice_from_line_noise() {
        assert!(rms(&[512, -512, 512, -512]) > VOICED_RMS);
        assert!(rms(&[20, -30, 10, -5]) < VOICED_RMS);
        assert_eq!(rms(&[]), 0.0);
    }

    #[test]
    fn frame_sizes_follow_the_providers_pace_and_rate() {
        let t0 = Instant::now();
        let l = Liveness::new(8_000, REAL_TIME, STALL, t0);
        assert_eq!(
            (l.min_frame, l.max_frame, l.catch_up_frame, l.paced_frame),
            (400, 8_000, 800, 160)
        );
        let l = Liveness::new(16_000, FAST, STALL, t0);
        assert_eq!(
            (l.min_frame, l.max_frame, l.catch_up_frame, l.paced_frame),
            (0, 4_000, 1_600, 320)
        );
        assert_eq!(Liveness::new(8_000, CHUNKS, STALL, t0).max_frame(), 800);
        assert_eq!(Liveness::new(16_000, CHUNKS, STALL, t0).max_frame(), 1_600);
    }

    #[test]
    fn a_real_time_provider_gets_whole_frames_no_sooner_than_their_audio_lasts() {
        let t0 = Instant::now();
        let mut l = Liveness::new(8_000, REAL_TIME, STALL, t0);
        // A replay of 3 s waiting at the start: nothing may go yet; the first 50 ms frame
        // is due at 50 ms.
        assert_eq!(wait_ms(l.next_frame(t0, 24_000, false, false)), 50.0);
        assert_eq!(
            l.next_frame(t0 + ms(51), 24_000, false, false),
            frame(408, 408)
        );
        // After a second, a second's worth goes as one frame; behind, 100 ms at most.
        assert_eq!(
            l.next_frame(t0 + ms(1_000), 24_000, false, false),
            frame(8_000, 8_000)
        );
        assert_eq!(
            l.next_frame(t0 + ms(1_000), 24_000, true, false),
            frame(800, 800)
        );
        l.sent_frame(t0 + ms(1_000), &[0; 8_000]);
        // A live 30 ms waits for the rest of its frame (20 ms) to arrive.
        assert_eq!(
            wait_ms(l.next_frame(t0 + ms(1_100), 240, false, false)),
            20.0
        );
        // The call's last 30 ms goes padded to 50 ms, once its pace allows 50 ms.
        assert_eq!(
            l.next_frame(t0 + ms(1_100), 240, false, true),
            frame(240, 400)
        );
        assert_eq!(wait_ms(l.next_frame(t0 + ms(1_041), 240, false, true)), 9.0);
        assert_eq!(l.next_frame(t0 + ms(1_100), 0, false, true), Next::Empty);
    }

    #[test]
    fn a_fast_provider_takes_its_burst_at_once_then_no_slivers() {
        let t0 = Instant::now();
        let mut l = Liveness::new(16_000, FAST, STALL, t0);
        assert_eq!(l.next_frame(t0, 32_000, false, false), frame(4_000, 4_000));
        l.sent_frame(t0, &[0; 4_000]);
        // 10 ms later the pace allows 12.5 ms, less than the 20 ms paced frame: wait for
        // 20 ms' worth, due at 16 ms.
        assert_eq!(
            wait_ms(l.next_frame(t0 + ms(10), 32_000, false, false)),
            6.0
        );
        // At 17 ms, 21.25 ms' worth.
        assert_eq!(
            l.next_frame(t0 + ms(17), 32_000, false, false),
            frame(340, 340)
        );
        // All the ring holds, even less than a paced frame, goes when allowed.
        assert_eq!(
            l.next_frame(t0 + ms(17), 100, false, false),
            frame(100, 100)
        );
    }

    #[test]
    fn a_stall_is_declared_after_the_limit_and_not_before() {
        let t0 = Instant::now();
        let mut l = Liveness::new(8_000, REAL_TIME, STALL, t0);
        // Silence never starts the clock: nothing is owed.
        let sent = l.sent_frame(t0, &[0; 8_000]);
        assert_eq!(
            sent,
            Sent {
                voiced: false,
                unanswered: false
            }
        );
        assert_eq!(l.stalled(t0 + ms(60_000)), None);
        // Voice at 1 s starts it; more voice does not restart it.
        let at = t0 + ms(1_000);
        assert!(l.sent_frame(at, &voice(400)).unanswered);
        assert!(!l.sent_frame(at + ms(50), &voice(400)).unanswered);
        assert_eq!(l.stalled(at + STALL), None);
        assert_eq!(
            l.stalled(at + STALL + ms(100)),
            Some(Stall(STALL + ms(100)))
        );
        assert_eq!(
            Stall(ms(2_600)).to_string(),
            "no answer for 2.6 s while audio was flowing"
        );
        // An answer stops it; the next voice starts it again from then.
        l.answered();
        assert_eq!(l.stalled(at + ms(10_000)), None);
        assert!(l.sent_frame(at + ms(10_000), &voice(400)).unanswered);
        assert_eq!(l.stalled(at + ms(10_000) + STALL), None);
        assert!(l.stalled(at + ms(10_001) + STALL).is_some());
    }

    #[test]
    fn the_stall_clock_waits_for_a_real_time_provider_to_reach_the_voice() {
        // Riva: a 3 s silent replay sent at once, then voice 100 ms later; a server
        // working at real time reaches that voice at 3 s, and owes an answer from there.
        let t0 = Instant::now();
        let mut l = Liveness::new(8_000, CHUNKS, STALL, t0);
        for _ in 0..30 {
            l.sent_frame(t0, &[0; 800]);
        }
        assert!(l.sent_frame(t0 + ms(100), &voice(800)).unanswered);
        assert_eq!(l.stalled(t0 + ms(3_000) + STALL), None);
        assert!(l.stalled(t0 + ms(3_001) + STALL).is_some());
    }

    #[test]
    fn a_paced_relays_stall_clock_starts_at_the_send() {
        // The relays send only what their pace allows, so the provider has every frame
        // when it goes: each voiced frame's clock starts at its send, on a replay too.
        for (rate, pacing) in [(8_000, REAL_TIME), (16_000, FAST), (48_000, FAST)] {
            let t0 = Instant::now();
            let mut l = Liveness::new(rate, pacing, STALL, t0);
            let mut now = t0;
            let mut frames = 0;
            while now < t0 + ms(3_000) {
                if let Next::Frame { len, .. } = l.next_frame(now, 1_000_000, false, false) {
                    l.answered();
                    assert!(l.sent_frame(now, &voice(len)).unanswered);
                    assert_eq!(l.unanswered_since, Some(now), "{rate} Hz, frame {frames}");
                    frames += 1;
                }
                now += Duration::from_micros(700);
            }
            assert!(frames > 50, "{frames}");
        }
    }

    #[test]
    fn an_idle_provider_settles_what_was_sent_less_the_margin_once_its_voice_is_processed() {
        let t0 = Instant::now();
        let mut l = Liveness::new(8_000, REAL_TIME, STALL, t0);
        l.sent_frame(t0, &[0; 4_000]);
        // Less than the margin sent: nothing to settle.
        assert_eq!(l.idle_settle(true), None);
        l.sent_frame(t0, &voice(8_000));
        l.sent_frame(t0, &[0; 16_000]);
        // Voice sent, unanswered and unprocessed.
        assert_eq!(l.idle_settle(true), None);
        l.answered();
        // Answered, but about audio before the voice's end (a late provider).
        l.processed(11_999);
        assert_eq!(l.idle_settle(true), None);
        // Processed past the voice: the caller's silence since, less 1 s, is settled.
        l.processed(12_000);
        assert_eq!(l.idle_settle(true), Some(28_000 - 8_000));
        // Not while a turn is open.
        assert_eq!(l.idle_settle(false), None);
        // Nor while new voice is unanswered, even past what a server said it processed.
        l.processed(30_000);
        l.sent_frame(t0, &voice(400));
        assert_eq!(l.idle_settle(true), None);
        l.answered();
        assert_eq!(l.idle_settle(true), Some(28_400 - 8_000));
        // Positions only move forward.
        l.sent_frame(t0, &voice(2_600));
        l.answered();
        l.processed(31_000);
        l.processed(100);
        assert_eq!(l.idle_settle(true), Some(31_000 - 8_000));
    }
}
