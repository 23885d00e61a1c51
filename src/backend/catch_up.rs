//! Catching up after a reconnect or a failover.
//!
//! A new provider connection starts with the channel's replay (the audio no final covers
//! yet) and then takes the live audio behind it. Providers take audio no faster than real
//! time (AssemblyAI) or 1.25× (Deepgram), so a channel that sent everything would stay as late
//! as its replay for the rest of the call (BENCHMARKS.md, "Relayed calls"). While a
//! connection is behind, the relay therefore leaves out the long part of each pause: it
//! keeps the start of every pause and the stretch just before the next voice (so a quiet
//! onset is not cut), drops the rest, and ends the provider's turn there with the
//! provider's own message (Deepgram `Finalize`, AssemblyAI `ForceEndpoint`), as the open
//! clients do when their voice detector says the speaker stopped, rather than make the
//! connection hear the provider's endpoint silence in full. Only pauses longer than about
//! 370 ms are touched (the kept part, a block and the lead-in must be silent): the
//! providers' own defaults end a turn at 300–400 ms. Voiced audio is
//! never dropped, so no word is lost; the provider's clock then runs behind the channel's,
//! and [`CatchUp::ring_position`] maps the provider's positions back, so what the provider
//! settles is exactly the audio it heard or that was dropped as silence.

use std::time::Duration;

use crate::audio::AudioSource;

/// A connection with more than this much audio waiting in its ring is behind. A live
/// connection holds at most a frame (AssemblyAI's are 50 ms); what is left when catching up
/// stops is at most this (BENCHMARKS.md, "Relayed calls").
const BEHIND: Duration = Duration::from_millis(100);
/// Silence is judged and dropped in blocks of this length.
const BLOCK: Duration = Duration::from_millis(20);
/// Silence kept before the next voiced block, for an onset quieter than the threshold. Near
/// the live edge only what has arrived can be looked at, but never less than this.
const LEAD_IN: Duration = Duration::from_millis(200);
const MIN_LOOKAHEAD: Duration = Duration::from_millis(60);
/// Silence kept at the start of every pause, so words are not glued.
const KEEP: Duration = Duration::from_millis(150);
/// A block whose RMS is above this (about −44 dBFS) may hold voice; phone-line noise sits
/// well below.
pub const VOICED_RMS: f64 = 200.0;

/// One connection's catching up: what it left out, and where.
pub struct CatchUp {
    behind: usize,
    block: usize,
    lead_in: usize,
    min_lookahead: usize,
    keep: u64,
    /// Silence sent since the last voiced frame.
    pause_sent: u64,
    /// This pause has had its turn ended (or had no turn to end).
    ended_turn: bool,
    /// Samples left out before the oldest entry of `skips` that may still be asked about.
    settled_offset: u64,
    /// (provider position, samples left out there), in provider order.
    skips: Vec<(u64, u64)>,
    scratch: Vec<i16>,
}

/// What [`CatchUp::skip`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub samples: u64,
    /// The first silence left out of this pause: end the provider's turn now.
    pub end_turn: bool,
}

impl CatchUp {
    pub fn new(rate: u32) -> Self {
        let samples = |d: Duration| (d.as_secs_f64() * f64::from(rate)).round() as usize;
        let block = samples(BLOCK).max(1);
        let lead_in = samples(LEAD_IN);
        let keep = samples(KEEP) as u64;
        Self {
            behind: samples(BEHIND),
            block,
            lead_in,
            min_lookahead: samples(MIN_LOOKAHEAD),
            keep,
            // A connection starts with no turn to end: silence at the front of its replay
            // is left out down to the lead-in before the first voice.
            pause_sent: keep,
            ended_turn: true,
            settled_offset: 0,
            skips: Vec::new(),
            scratch: vec![0; block + lead_in],
        }
    }

    /// True while the connection has more audio waiting than a live one would.
    pub fn is_behind(&self, available: usize) -> bool {
        available > self.behind
    }

    /// Counts a frame of `len` samples that went out, voiced (RMS above [`VOICED_RMS`]) or not.
    pub fn sent(&mut self, len: usize, voiced: bool) {
        if voiced {
            self.pause_sent = 0;
            self.ended_turn = false;
        } else {
            self.pause_sent += len as u64;
        }
    }

    /// While behind, drops the silent blocks at the front of the ring that a pause does not
    /// need; `position` is the provider's position (samples sent so far).
    pub fn skip(&mut self, audio: &mut AudioSource, position: u64) -> Skipped {
        let mut out = Skipped::default();
        loop {
            let available = audio.available();
            let want = (self.block + self.lead_in).min(available);
            if self.pause_sent < self.keep
                || available <= self.behind
                || want < self.block + self.min_lookahead
                || audio.peek(&mut self.scratch[..want]) != want
                || self.scratch[..want]
                    .chunks(self.block)
                    .any(|b| rms(b) > VOICED_RMS)
            {
                break;
            }
            let n = audio.pop(&mut self.scratch[..self.block]) as u64;
            if n == 0 {
                break;
            }
            out.samples += n;
        }
        if out.samples > 0 && !self.ended_turn {
            self.ended_turn = true;
            out.end_turn = true;
        }
        if out.samples > 0 {
            match self.skips.last_mut() {
                Some((at, n)) if *at == position => *n += out.samples,
                _ => self.skips.push((position, out.samples)),
            }
        }
        out
    }

    /// The ring position (samples taken from the channel's ring) that the provider's
    /// `position` stands for: silence left out at or before it counts as heard.
    pub fn ring_position(&self, position: u64) -> u64 {
        let later = self.skips.partition_point(|(at, _)| *at <= position);
        let skipped: u64 = self.skips[..later].iter().map(|(_, n)| n).sum();
        position + self.settled_offset + skipped
    }

    /// The provider settled up to `position`: it will not ask about earlier ones again.
    pub fn settled(&mut self, position: u64) {
        let done = self.skips.partition_point(|(at, _)| *at <= position);
        self.settled_offset += self.skips.drain(..done).map(|(_, n)| n).sum::<u64>();
    }
}

pub fn rms(samples: &[i16]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::channel_pipe;

    const RATE: u32 = 1000;

    fn catch_up() -> CatchUp {
        CatchUp::new(RATE)
    }

    #[test]
    fn the_long_part_of_a_pause_is_left_out_while_behind_and_positions_map_back() {
        let (mut sink, mut source) = channel_pipe(RATE, 10_000);
        let voice = vec![1000i16; 200];
        // 200 ms of voice, 1 s of silence, 200 ms of voice.
        sink.push(&voice).unwrap();
        sink.push(&[0; 1000]).unwrap();
        sink.push(&voice).unwrap();
        let mut c = catch_up();
        let mut buf = vec![0i16; 100];
        let mut sent = 0u64;
        let mut heard = Vec::new();
        let mut ended = 0;
        while source.available() > 0 {
            let s = c.skip(&mut source, sent);
            ended += usize::from(s.end_turn);
            let n = source.pop(&mut buf);
            c.sent(n, rms(&buf[..n]) > VOICED_RMS);
            heard.extend_from_slice(&buf[..n]);
            sent += n as u64;
        }
        // Every voiced sample went out, in order; of the pause, the kept part and the
        // lead-in before the voice, and no more than that and a block.
        assert_eq!(heard.iter().filter(|s| **s != 0).count(), 400);
        let silence = heard.len() - 400;
        assert!(
            (300..=400).contains(&silence),
            "{silence} ms of silence sent"
        );
        assert_eq!(ended, 1, "the pause cut ends the turn, once");
        // Where the second word starts for the provider, and for the channel.
        let second = heard.iter().skip(200).position(|s| *s != 0).unwrap() as u64 + 200;
        assert_eq!(c.ring_position(second), 1200);
        assert_eq!(c.ring_position(100), 100);
        assert_eq!(c.ring_position(sent), 1400);
        // Settling forgets what is behind without changing where things are.
        c.settled(second);
        assert_eq!(c.ring_position(sent), 1400);
    }

    #[test]
    fn nothing_is_left_out_on_time_or_inside_speech() {
        let (mut sink, mut source) = channel_pipe(RATE, 10_000);
        sink.push(&[0; 80]).unwrap();
        let mut c = catch_up();
        // 80 ms waiting is not behind.
        assert_eq!(c.skip(&mut source, 0), Skipped::default());
        // Behind, with voice 250 ms on: the silence goes down to the lead-in, no further.
        sink.push(&[0; 170]).unwrap();
        sink.push(&[900; 400]).unwrap();
        assert_eq!(c.skip(&mut source, 0).samples, 40);
        assert_eq!(source.available(), 610);
        // A pause not yet kept long enough is not cut.
        let mut c = catch_up();
        c.sent(10, true);
        c.sent(50, false);
        assert_eq!(c.skip(&mut source, 0).samples, 0);
    }

    #[test]
    fn a_replay_starts_at_the_lead_in_before_its_first_voice() {
        let (mut sink, mut source) = channel_pipe(RATE, 10_000);
        sink.push(&[0; 600]).unwrap();
        sink.push(&[900; 300]).unwrap();
        let mut c = catch_up();
        assert_eq!(c.skip(&mut source, 0).samples, 400);
        assert_eq!(c.ring_position(0), 400);
        // Near the live edge only what has come is looked at, down to `BEHIND`.
        let (mut sink, mut source) = channel_pipe(RATE, 10_000);
        sink.push(&[0; 150]).unwrap();
        assert_eq!(catch_up().skip(&mut source, 0).samples, 60);
    }
}
