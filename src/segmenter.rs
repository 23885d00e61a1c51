//! Endpointing: cuts one channel's audio into utterances and says when each needs decoding.
//!
//! A batch recognizer re-reads a whole utterance per decode, so when to decode decides both
//! latency and cost. A neural voice-activity detector (earshot, ~0.5 ms per second of audio)
//! marks every 16 ms frame as voice or not. An utterance opens on voice (with a pre-roll so
//! no onset is clipped) and ends after `endpoint` of silence. Decoding is asked for:
//!
//! - as a **final** when an utterance has ended and no decode covers its last word yet;
//! - **speculatively** when a pause has lasted so long that a decode started now would be
//!   ready about when the endpoint fires: if the pause does become the endpoint, that decode
//!   already is the final and goes out the moment the endpoint is reached; if speech resumes,
//!   its text is a partial;
//! - as a **partial** once the utterance has some voice, then every `partial_every` of audio.
//!
//! The scheduler (the recognizer's worker) serves requests by [`DecodeKind`] order, so under
//! load partials wait and finals do not. Everything here is plain computation; the decoding
//! itself is the caller's.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Samples per detector frame, at 16 kHz.
pub const FRAME: usize = 256;
/// The rate the detector works at.
pub const RATE: usize = 16_000;
/// Peak of the uniform dither added to what the detector hears (about -70 dBFS RMS); the
/// audio decoded is untouched. Measured with `examples/segment_study.rs RATE=8000`.
const DITHER: f32 = 0.001;

/// How the audio is cut, in samples at 16 kHz.
#[derive(Debug, Clone, Copy)]
pub struct SegmenterConfig {
    /// Silence that ends an utterance.
    pub endpoint: usize,
    /// Audio kept before the first voiced frame.
    pub preroll: usize,
    /// Audio after the onset before the first partial, and between retries while the
    /// decodes hear no words yet.
    pub first_partial: usize,
    /// New audio between partials.
    pub partial_every: usize,
    /// Longer utterances are cut at the next unvoiced frame, and hard at twice this.
    pub max_utterance: usize,
    /// Utterances with less voice than this are noise: dropped without a decode.
    pub min_voice: usize,
    /// Detector score at or above which a frame is voice.
    pub threshold: f32,
    /// Silence a decode that may become a final ends with, after the last voiced frame
    /// (zeros appended where the utterance has less). Cut right after its last word, the
    /// model repeats words and ends sentences on commas (BENCHMARKS.md, "decode padding").
    pub pad: usize,
}

/// See [`SegmenterConfig::pad`].
pub const DECODE_PAD_MS: u64 = 400;

impl SegmenterConfig {
    pub fn from_ms(endpoint_ms: u64, partial_every_ms: u64) -> Self {
        let ms = |v: u64| (v as usize) * RATE / 1000;
        Self {
            endpoint: ms(endpoint_ms.clamp(32, 5_000)),
            preroll: ms(150),
            first_partial: ms(160),
            partial_every: ms(partial_every_ms.clamp(50, 10_000)),
            max_utterance: ms(12_000),
            min_voice: ms(64),
            threshold: 0.5,
            pad: ms(DECODE_PAD_MS),
        }
    }
}

/// Why a decode is wanted, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DecodeKind {
    Final,
    Speculative,
    FirstPartial,
    Partial,
}

impl DecodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Final => "final",
            Self::Speculative => "speculative",
            Self::FirstPartial => "first_partial",
            Self::Partial => "partial",
        }
    }
}

/// A decode a channel would like, for the scheduler to rank against other channels'.
#[derive(Debug, Clone, Copy)]
pub struct Want {
    pub kind: DecodeKind,
    /// Since when it has been wanted; older first within a kind.
    pub since: Instant,
    pub ticket: Ticket,
}

/// Which audio a decode reads: the first `len` samples of one utterance. The segmenter
/// keeps taking audio while the decode runs elsewhere; the ticket says what it covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    utterance: u64,
    len: usize,
}

/// Text for the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    Partial(String),
    /// With the time from the end of the voice to now.
    Final(String, Duration),
}

/// What a decode costs, `base + per second × length` (tiny-en on 2 cores, BENCHMARKS.md
/// "decode cost by length"), in samples of audio time: how long before the endpoint a
/// speculative decode must start to be ready when it passes.
fn decode_lead(audio: usize) -> usize {
    const BASE_MS: f64 = 50.0;
    const PER_SECOND_MS: f64 = 40.0;
    let ms = BASE_MS + PER_SECOND_MS * audio as f64 / RATE as f64;
    (ms * RATE as f64 / 1000.0) as usize
}

/// The utterance being spoken.
struct Open {
    id: u64,
    audio: Vec<f32>,
    /// How much of `audio` came before the onset.
    preroll: usize,
    voice: usize,
    /// Samples since the last voiced frame (0 while voiced).
    silence: usize,
    /// Length of `audio` at the end of its last voiced frame.
    voiced_end: usize,
    /// Length of `audio` when it was last decoded, and that decode's text.
    decoded_len: usize,
    decoded_text: Option<String>,
    /// When the current want began: the opening, the last decode or the pause.
    since: Instant,
}

/// An utterance whose endpoint has passed, waiting for its final.
struct Ended {
    id: u64,
    audio: Vec<f32>,
    voiced_end: usize,
    /// Known once a decode covers its last voiced frame.
    text: Option<String>,
    /// Input position (samples at the caller's rate) of its endpoint, for lag.
    at_input: u64,
    /// When the endpoint was reached, and the silence before it.
    since: Instant,
    silence: usize,
}

pub struct Segmenter {
    config: SegmenterConfig,
    detector: earshot::Detector,
    /// What the detector hears: the frame plus dither (see `DITHER`).
    heard: Vec<f32>,
    dither: u32,
    /// Samples short of a whole detector frame.
    carry: Vec<f32>,
    /// The last `preroll` samples while nobody speaks.
    recent: VecDeque<f32>,
    open: Option<Open>,
    ended: VecDeque<Ended>,
    last_partial: String,
    next_id: u64,
}

impl Segmenter {
    pub fn new(config: SegmenterConfig) -> Self {
        Self {
            config,
            detector: earshot::Detector::default(),
            heard: Vec::with_capacity(FRAME),
            dither: 0x9E37_79B9,
            carry: Vec::with_capacity(FRAME),
            recent: VecDeque::with_capacity(config.preroll + FRAME),
            open: None,
            ended: VecDeque::new(),
            last_partial: String::new(),
            next_id: 0,
        }
    }

    /// Takes 16 kHz samples in [-1, 1]; `at_input` is the caller's input position after
    /// them. Finals that need no decode are appended to `out`.
    pub fn push(&mut self, samples: &[f32], at_input: u64, now: Instant, out: &mut Vec<Emit>) {
        let mut rest = samples;
        while !rest.is_empty() {
            let take = (FRAME - self.carry.len()).min(rest.len());
            self.carry.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.carry.len() == FRAME {
                let frame = std::mem::take(&mut self.carry);
                let voiced = self.score(&frame) >= self.config.threshold;
                self.frame(&frame, voiced, at_input, now);
                self.carry = frame;
                self.carry.clear();
            }
        }
        self.drain_ready(out);
    }

    /// Ends the audio: whatever is open becomes an utterance to finish.
    pub fn finish(&mut self, at_input: u64, now: Instant, out: &mut Vec<Emit>) {
        if !self.carry.is_empty() {
            if let Some(open) = &mut self.open {
                open.audio.extend_from_slice(&self.carry);
            }
            self.carry.clear();
        }
        self.close(at_input, now);
        self.drain_ready(out);
    }

    /// The one decode this channel wants most now, if any.
    pub fn want(&self) -> Option<Want> {
        if let Some(ended) = self.ended.front() {
            return Some(Want {
                kind: DecodeKind::Final,
                since: ended.since,
                ticket: Ticket {
                    utterance: ended.id,
                    len: ended.audio.len(),
                },
            });
        }
        let open = self.open.as_ref()?;
        if open.decoded_len >= open.voiced_end {
            return None;
        }
        let kind = if open.silence > 0 {
            let lead = decode_lead(open.audio.len().max(open.voiced_end + self.config.pad));
            let start_at = self.config.endpoint.saturating_sub(lead).max(2 * FRAME);
            (open.silence >= start_at).then_some(DecodeKind::Speculative)
        } else if open
            .decoded_text
            .as_ref()
            .is_none_or(|t| t.trim().is_empty())
        {
            let heard = open.audio.len() - open.preroll;
            let retry = open.decoded_len == 0
                || open.audio.len() - open.decoded_len >= self.config.first_partial / 2;
            (heard >= self.config.first_partial && retry).then_some(DecodeKind::FirstPartial)
        } else {
            (open.audio.len() - open.decoded_len >= self.config.partial_every)
                .then_some(DecodeKind::Partial)
        };
        kind.map(|kind| Want {
            kind,
            since: open.since,
            ticket: Ticket {
                utterance: open.id,
                len: open.audio.len(),
            },
        })
    }

    /// The audio a ticket's decode is to read (empty if that utterance is gone).
    pub fn audio(&self, ticket: Ticket) -> &[f32] {
        let audio = match &self.open {
            Some(open) if open.id == ticket.utterance => &open.audio,
            _ => match self.ended.iter().find(|e| e.id == ticket.utterance) {
                Some(ended) => &ended.audio,
                None => return &[],
            },
        };
        &audio[..ticket.len.min(audio.len())]
    }

    /// Copies what a decode reads into `out`: the ticket's audio and, for a decode that
    /// may become a final, zeros up to `pad` of silence after the last voiced frame.
    pub fn decode_input(&self, want: &Want, out: &mut Vec<f32>) {
        out.clear();
        out.extend_from_slice(self.audio(want.ticket));
        if matches!(want.kind, DecodeKind::Final | DecodeKind::Speculative) {
            let voiced_end = match &self.open {
                Some(open) if open.id == want.ticket.utterance => open.voiced_end,
                _ => self
                    .ended
                    .iter()
                    .find(|e| e.id == want.ticket.utterance)
                    .map_or(out.len(), |e| e.voiced_end),
            };
            let silence = out.len().saturating_sub(voiced_end);
            out.resize(out.len() + self.config.pad.saturating_sub(silence), 0.0);
        }
    }

    /// Takes the text of a ticket's decode, emitting what it means: a final if it covers
    /// the last word of an utterance that has ended, else a partial of the open one.
    pub fn decoded(&mut self, ticket: Ticket, text: String, now: Instant, out: &mut Vec<Emit>) {
        if let Some(ended) = self.ended.iter_mut().find(|e| e.id == ticket.utterance) {
            if ticket.len >= ended.voiced_end && ended.text.is_none() {
                ended.text = Some(text);
                self.drain_ready(out);
            }
            return;
        }
        let Some(open) = &mut self.open else { return };
        if open.id != ticket.utterance || ticket.len < open.decoded_len {
            return;
        }
        open.decoded_len = ticket.len;
        open.since = now;
        if !text.trim().is_empty() && text != self.last_partial {
            self.last_partial.clone_from(&text);
            out.push(Emit::Partial(text.clone()));
        }
        open.decoded_text = Some(text);
    }

    /// Input position of the endpoint of the oldest utterance still without its final:
    /// the recognizer is behind real time from there.
    pub fn pending_since(&self) -> Option<u64> {
        self.ended.front().map(|e| e.at_input)
    }

    /// Whether nothing is open or waiting.
    pub fn is_idle(&self) -> bool {
        self.open.is_none() && self.ended.is_empty()
    }

    /// The detector's voice score for one frame, heard with a little dither: after exact
    /// digital silence (a muted channel, the gaps a platform fills with zeros) the detector
    /// scored the faint noise of phone-band audio as voice and never found the pauses.
    fn score(&mut self, frame: &[f32]) -> f32 {
        self.heard.clear();
        for &x in frame {
            // xorshift32: cheap, and the same every run.
            self.dither ^= self.dither << 13;
            self.dither ^= self.dither >> 17;
            self.dither ^= self.dither << 5;
            let noise = self.dither as f32 / u32::MAX as f32 - 0.5;
            self.heard.push(x + DITHER * noise);
        }
        self.detector.predict_f32(&self.heard)
    }

    fn frame(&mut self, frame: &[f32], voiced: bool, at_input: u64, now: Instant) {
        let config = self.config;
        match &mut self.open {
            None if voiced => {
                let mut audio = Vec::with_capacity(config.preroll + 4 * RATE);
                audio.extend(self.recent.drain(..));
                let preroll = audio.len();
                audio.extend_from_slice(frame);
                self.next_id += 1;
                self.open = Some(Open {
                    id: self.next_id,
                    preroll,
                    voiced_end: audio.len(),
                    audio,
                    voice: FRAME,
                    silence: 0,
                    decoded_len: 0,
                    decoded_text: None,
                    since: now,
                });
            }
            None => {
                self.recent.extend(frame);
                let excess = self.recent.len().saturating_sub(config.preroll);
                self.recent.drain(..excess);
            }
            Some(open) => {
                open.audio.extend_from_slice(frame);
                if voiced {
                    open.voice += FRAME;
                    open.silence = 0;
                    open.voiced_end = open.audio.len();
                } else {
                    if open.silence == 0 {
                        open.since = now;
                    }
                    open.silence += FRAME;
                }
                let long = open.audio.len() >= config.max_utterance;
                if open.silence >= config.endpoint
                    || (long && !voiced)
                    || open.audio.len() >= 2 * config.max_utterance
                {
                    self.close(at_input, now);
                }
            }
        }
    }

    /// Turns the open utterance into one waiting for its final.
    fn close(&mut self, at_input: u64, now: Instant) {
        let Some(open) = self.open.take() else { return };
        // What follows the endpoint is the next utterance's pre-roll.
        let tail = open.silence.min(self.config.preroll);
        let mut audio = open.audio;
        self.recent.extend(&audio[audio.len() - tail..]);
        if open.voice < self.config.min_voice {
            return;
        }
        let covered = open.decoded_len >= open.voiced_end;
        self.ended.push_back(Ended {
            id: open.id,
            voiced_end: open.voiced_end,
            audio: std::mem::take(&mut audio),
            text: if covered { open.decoded_text } else { None },
            at_input,
            since: now,
            silence: open.silence,
        });
    }

    /// Emits, in order, the finals whose text is known.
    fn drain_ready(&mut self, out: &mut Vec<Emit>) {
        while self.ended.front().is_some_and(|e| e.text.is_some()) {
            let Some(Ended {
                text: Some(text),
                since,
                silence,
                ..
            }) = self.ended.pop_front()
            else {
                break;
            };
            self.last_partial.clear();
            let silence = Duration::from_secs_f64(silence as f64 / RATE as f64);
            out.push(Emit::Final(text, silence + since.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SegmenterConfig {
        SegmenterConfig::from_ms(192, 480)
    }

    /// What the channel wants decoded now, or else its open utterance as it is.
    fn ticket(s: &Segmenter) -> Ticket {
        s.want().map_or_else(|| open_ticket(s), |w| w.ticket)
    }

    /// The open utterance as it is, whatever the channel wants.
    fn open_ticket(s: &Segmenter) -> Ticket {
        let open = s.open.as_ref().unwrap();
        Ticket {
            utterance: open.id,
            len: open.audio.len(),
        }
    }

    fn finals(out: &[Emit]) -> Vec<&str> {
        out.iter()
            .filter_map(|e| match e {
                Emit::Final(text, _) => Some(text.as_str()),
                Emit::Partial(_) => None,
            })
            .collect()
    }

    /// Feeds `frames` frames, all voiced or all not, through the policy (no detector).
    fn feed(s: &mut Segmenter, frames: usize, voiced: bool, at: &mut u64) {
        let frame = [if voiced { 0.1 } else { 0.0 }; FRAME];
        for _ in 0..frames {
            *at += FRAME as u64;
            s.frame(&frame, voiced, *at, Instant::now());
        }
    }

    #[test]
    fn decodes_that_may_become_finals_end_in_the_padding_silence_and_partials_do_not() {
        let mut s = Segmenter::new(config());
        let pad = s.config.pad;
        let mut at = 0;
        let mut input = Vec::new();
        feed(&mut s, 40, true, &mut at);
        // A partial reads the audio as it is.
        let partial = Want {
            kind: DecodeKind::Partial,
            since: Instant::now(),
            ticket: open_ticket(&s),
        };
        s.decode_input(&partial, &mut input);
        assert_eq!(input.len(), s.audio(partial.ticket).len());
        // A speculative decode during a pause gets zeros up to `pad` after the voice.
        feed(&mut s, 3, false, &mut at);
        let speculative = Want {
            kind: DecodeKind::Speculative,
            ..partial
        };
        let speculative = Want {
            ticket: open_ticket(&s),
            ..speculative
        };
        s.decode_input(&speculative, &mut input);
        let voiced = s.audio(speculative.ticket).len() - 3 * FRAME;
        assert_eq!(input.len(), voiced + pad);
        assert!(input[voiced..].iter().all(|&x| x == 0.0));
        // A final whose endpoint silence is shorter than `pad` is topped up to it.
        feed(&mut s, 9, false, &mut at);
        let want = s.want().unwrap();
        assert_eq!(want.kind, DecodeKind::Final);
        s.decode_input(&want, &mut input);
        let audio = s.audio(want.ticket);
        assert_eq!(&input[..audio.len()], audio);
        assert_eq!(input.len(), audio.len() - 12 * FRAME + pad.max(12 * FRAME));
    }

    #[test]
    fn an_utterance_ends_after_the_endpoint_and_asks_for_its_final() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 10, false, &mut at);
        assert!(s.is_idle());
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 11, false, &mut at);
        assert!(s.pending_since().is_none(), "11 frames < 192 ms endpoint");
        feed(&mut s, 1, false, &mut at);
        assert_eq!(s.pending_since(), Some(at));
        let want = s.want().unwrap();
        assert_eq!(want.kind, DecodeKind::Final);
        // Pre-roll (150 ms of the 160 ms of silence) + voice + the pause that ended it.
        let audio = s.audio(want.ticket).len();
        assert_eq!(audio, config().preroll + (40 + 12) * FRAME);
        let mut out = Vec::new();
        s.decoded(want.ticket, "hello".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["hello"]);
        assert!(s.is_idle());
        assert!(s.want().is_none());
    }

    #[test]
    fn partials_come_soon_after_the_onset_then_at_the_cadence() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 9, true, &mut at);
        assert!(s.want().is_none(), "144 ms of speech is not enough yet");
        feed(&mut s, 1, true, &mut at);
        assert_eq!(s.want().unwrap().kind, DecodeKind::FirstPartial);
        let mut out = Vec::new();
        // Nothing heard yet: try again 80 ms later.
        s.decoded(ticket(&s), " ".into(), Instant::now(), &mut out);
        assert!(out.is_empty());
        feed(&mut s, 4, true, &mut at);
        assert!(s.want().is_none());
        feed(&mut s, 1, true, &mut at);
        assert_eq!(s.want().unwrap().kind, DecodeKind::FirstPartial);
        s.decoded(ticket(&s), "he".into(), Instant::now(), &mut out);
        assert_eq!(out, [Emit::Partial("he".into())]);
        feed(&mut s, 29, true, &mut at);
        assert!(s.want().is_none());
        feed(&mut s, 1, true, &mut at);
        assert_eq!(s.want().unwrap().kind, DecodeKind::Partial);
        // The same text again is not news.
        out.clear();
        s.decoded(ticket(&s), "he".into(), Instant::now(), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_decode_during_the_pause_becomes_the_final_without_another_decode() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 60, true, &mut at);
        let mut out = Vec::new();
        feed(&mut s, 2, false, &mut at);
        // A second of audio costs ~90 ms to decode: ask about 100 ms before the endpoint.
        let mut frames = 2;
        while s.want().is_none_or(|w| w.kind != DecodeKind::Speculative) {
            feed(&mut s, 1, false, &mut at);
            frames += 1;
        }
        assert!((4..12).contains(&frames), "asked after {frames} frames");
        s.decoded(ticket(&s), "all of it".into(), Instant::now(), &mut out);
        assert_eq!(out, [Emit::Partial("all of it".into())]);
        out.clear();
        assert!(s.want().is_none(), "nothing new to decode");
        feed(&mut s, 12 - frames, false, &mut at);
        s.drain_ready(&mut out);
        assert_eq!(finals(&out), ["all of it"]);
        assert_eq!(out.len(), 1);
        assert!(s.is_idle());
    }

    #[test]
    fn speech_after_a_speculative_decode_needs_a_new_final() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 8, false, &mut at);
        let mut out = Vec::new();
        s.decoded(ticket(&s), "first".into(), Instant::now(), &mut out);
        feed(&mut s, 10, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(&mut out);
        assert_eq!(out, [Emit::Partial("first".into())]);
        assert_eq!(s.want().unwrap().kind, DecodeKind::Final);
    }

    #[test]
    fn finals_keep_their_order_and_noise_is_dropped() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 20, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        // A 32 ms blip: too little voice to decode.
        feed(&mut s, 2, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        feed(&mut s, 20, true, &mut at);
        feed(&mut s, 2, false, &mut at);
        let mut out = Vec::new();
        // The open utterance is decoded while the first still waits...
        s.decoded(open_ticket(&s), "two".into(), Instant::now(), &mut out);
        feed(&mut s, 10, false, &mut at);
        s.drain_ready(&mut out);
        // ...but its final does not overtake the first's.
        assert_eq!(out, [Emit::Partial("two".into())]);
        out.clear();
        s.decoded(ticket(&s), "one".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["one", "two"]);
        assert_eq!(out.len(), 2);
        assert!(s.is_idle());
    }

    #[test]
    fn a_decode_that_returns_after_the_endpoint_still_makes_the_final() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 9, false, &mut at);
        let in_flight = s.want().unwrap();
        assert_eq!(in_flight.kind, DecodeKind::Speculative);
        // The endpoint passes while the decode runs elsewhere.
        feed(&mut s, 3, false, &mut at);
        assert_eq!(s.want().unwrap().kind, DecodeKind::Final);
        let mut out = Vec::new();
        s.decoded(in_flight.ticket, "late".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["late"]);
        assert!(s.is_idle());
    }

    #[test]
    fn a_decode_that_misses_the_last_word_is_not_the_final() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 30, true, &mut at);
        let early = ticket(&s);
        feed(&mut s, 5, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        let mut out = Vec::new();
        s.decoded(early, "partly".into(), Instant::now(), &mut out);
        assert!(out.is_empty());
        let want = s.want().unwrap();
        assert_eq!(want.kind, DecodeKind::Final);
        assert_eq!(s.audio(want.ticket).len(), s.ended[0].audio.len());
    }

    #[test]
    fn long_speech_is_cut_at_a_dip() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        let frames = config().max_utterance / FRAME;
        feed(&mut s, frames, true, &mut at);
        assert!(s.pending_since().is_none());
        feed(&mut s, 1, false, &mut at);
        assert!(s.pending_since().is_some());
        // Without any dip, at twice the limit.
        feed(&mut s, 2 * frames, true, &mut at);
        assert_eq!(s.ended.len(), 2);
    }

    #[test]
    fn finish_flushes_the_open_utterance() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 20, true, &mut at);
        let mut out = Vec::new();
        s.finish(at, Instant::now(), &mut out);
        assert_eq!(s.want().unwrap().kind, DecodeKind::Final);
    }
}
