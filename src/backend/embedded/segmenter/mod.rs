//! Endpointing: cuts one channel's audio into utterances and reports what each has for the
//! decoders.
//!
//! A batch recognizer re-reads a whole utterance per decode, so when to decode decides both
//! latency and cost. A neural voice-activity detector (earshot, ~0.5 ms per second of audio)
//! marks every 16 ms frame as voice or not. An utterance opens on voice (with a pre-roll so
//! no onset is clipped) and ends after `endpoint` of silence, unless the pause is held (its
//! words go on, or the model doubts a sentence's end: `verdict`). What the segmenter has
//! for the decoders it reports as facts ([`Segmenter::need`]): an utterance ended and
//! waiting for its final, the open one in a pause, or voiced with audio no decode read. The
//! scheduler's rule (`schedule::want`) decides from them what is decoded and when:
//!
//! - a **final** when an utterance has ended and no decode covers its last word yet;
//! - a **judge** at a pause's first silent frame, the partials' model reading the words for
//!   the probability of a sentence's end;
//! - a **speculative** decode when a pause has lasted so long that a decode started now would
//!   be ready about when the endpoint fires: if the pause does become the endpoint, that
//!   decode already is the final and goes out the moment the endpoint is reached; if speech
//!   resumes, its text is a partial;
//! - a **partial** once the utterance has some voice, then every `partial_every` of audio.
//!
//! The segmenter takes each decode's text back ([`Segmenter::decoded`]) and emits partials
//! and finals. Everything here is plain computation on audio time; the decoding is the
//! caller's.

mod context;
mod event;
mod verdict;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use context::Said;

use super::decode::samples_as_time;
pub use super::decode::{
    DecodeKind, Due, FRAME, Lead, Need, Pick, Piece, RATE, Room, State, Ticket, Want,
};
use super::{Speakers, Transcribed};
pub use crate::turn::end_turn;
use crate::turn::words::{goes_on, lone_word};
pub use context::{drop_repeat, strip_context};
pub use event::{Event, Hold};
use verdict::Verdict;
pub use verdict::{TURN_WINDOW, TurnTicket};

/// Peak of the uniform dither added to what the detector hears (about -70 dBFS RMS); the
/// audio decoded is untouched. Measured with `examples/segment_study.rs RATE=8000`.
const DITHER: f32 = 0.001;
/// A frame no louder than this is the dither alone (its RMS, `DITHER / √12`, is -70.8
/// dBFS), give or take 3 dB: digital silence, whatever the detector scores. After a quiet
/// speaker (-41 dBFS, so the fade's line 30 dB under fell at -71) the detector scored the
/// dithered zeros after the words at 0.38, over `release`, so the pause never counted as
/// quiet and the final waited 8.8 s for a decode it already had.
const SILENT_DB: f32 = -67.8;

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
    /// Detector score at or above which a frame opens an utterance.
    pub threshold: f32,
    /// Once an utterance is open, frames scoring at or above this still count as voice
    /// (hysteresis): a distorted or quiet voice dips below `threshold` inside its words.
    /// The endpoint still runs from the last frame at `threshold` (the score takes tens of
    /// ms to fall under `release` after a word, which cost time to final), but waits for
    /// half of it under `release` as well.
    pub release: f32,
    /// `loud_frames` frames in a row this many dB above the channel's noise floor open an
    /// utterance at `release` rather than `threshold` (`f32::INFINITY`: never). After a
    /// distorted voice the detector's recurrent state kept the next short word of it under
    /// `threshold`, on a line where nothing else was that loud; a run rather than one frame,
    /// so that a click does not open one (BENCHMARKS.md, "Hard speech").
    pub loud_margin_db: f32,
    pub loud_frames: usize,
    /// A frame of an open utterance this many dB under the mean of its voiced frames is
    /// silence to the endpoint's clock, whatever the detector scores it: the score takes tens
    /// of ms to fall after the last word, and every one of them was added to time to final
    /// (`f32::INFINITY`: never; BENCHMARKS.md, "Whisper").
    pub fade_db: f32,
    /// Silence a decode that may become a final ends with, after the last voiced frame
    /// (zeros appended where the utterance has less). Cut right after its last word, the
    /// model repeats words and ends sentences on commas (BENCHMARKS.md, "decode padding").
    pub pad: usize,
    /// The longest a decode that may become a final is made by putting the same turn's
    /// earlier utterances before it (the words already sent for them are taken off its
    /// text): a piece cut at a short pause and decoded alone loses the sentence it belongs
    /// to. Decode time grows with length, so this bounds what context adds to a final's
    /// latency (BENCHMARKS.md, "left context"). 0 turns it off.
    pub context_span: usize,
    /// Earlier utterances count as the same turn while the pauses between them are no longer
    /// than this.
    pub turn_gap: usize,
    /// A pause after words that go on ([`goes_on`]: a number read out, a spelled letter,
    /// "and", a trailing comma; or, as a turn opens, one word that is no answer alone,
    /// [`lone_word`]) does not end the utterance at `endpoint`: it is held, so the
    /// words after it join the same final, until `turn_hold` of silence ends it anyway. Any
    /// other pause ends the turn: its final ends in . ? !.
    pub hold_unfinished: bool,
    /// With `hold_unfinished`: a pause is held too when the recognizer found a sentence's
    /// end after the words less likely than this ([`Transcribed::ends`]: the model's own
    /// reading of whether they are finished). 0 leaves it out.
    pub unsure_end: f32,
    /// With `unsure_end`: the probability from which a pause ends at `endpoint`. Under it
    /// (and at or over `unsure_end`) the silence that ends the pause grows with the doubt,
    /// from `endpoint` to `turn_hold` (`Open::silence_needed`). At or under `unsure_end`:
    /// every pause the words let end ends at `endpoint`.
    pub sure_end: f32,
    /// With `unsure_end`: the probability from which a pause the words let end ends
    /// sooner, at `quick_endpoint` of silence rather than `endpoint` (0: never). The judge
    /// reads the pause at its first silent frame, so its verdict is there before the
    /// endpoint; where it is this sure, waiting out the rest of the endpoint only delays the
    /// reply (BENCHMARKS.md, "A sooner end where the judge is sure").
    pub quick_end: f32,
    /// See `quick_end`; at most `endpoint`.
    pub quick_endpoint: usize,
    /// The call's language is (or may be) English: [`goes_on`] reads English words too.
    pub english: bool,
    /// An end-of-turn model judges each pause of the speaker's: one it hears as the turn's
    /// end closes the utterance at `endpoint`, its final ending in . ? ! (see [`end_turn`]);
    /// one it hears as a pause inside the turn keeps the utterance open, so the words after
    /// it join the same final, until `turn_hold` of silence ends it anyway.
    pub judge_turns: bool,
    /// With `judge_turns`: the silence that ends an utterance whatever the model said (or
    /// before it could say), its final then ending in . ? ! as well. The platform answers
    /// 0.1 s after such a final (docs/PROVIDERS.md), so this bounds the reply wait of a
    /// finished turn the model took for a pause (BENCHMARKS.md, "End of turn").
    pub turn_hold: usize,
    /// The engine reads left context as text (a prompt) rather than audio.
    pub context_as_text: bool,
    /// The engine reads a text prompt: the keyterms go to it whatever `context_as_text`.
    pub prompted: bool,
    /// How early a speculative decode starts, for callers that ask without the scheduler's
    /// knobs ([`Segmenter::want`]: the offline study, tests). The pool never reads it: it
    /// asks with the scheduler's live lead ([`Segmenter::want_in`]).
    pub lead: Lead,
    /// A final whose decode would be late gives up its context, then the finals' model,
    /// for its budget ([`Lead::for_final`]): the customer's, whose finals the platform
    /// answers. The assistant's keep both (no reply waits on them, and the context is
    /// what makes their text-to-speech prompts' finals whole).
    pub deadline: bool,
    /// Which of the engine's models speak the call's language: where only one does,
    /// every decode takes it.
    pub speakers: Speakers,
}

/// See [`SegmenterConfig::release`]. Silero VAD's default hysteresis (0.15 under the
/// opening score); measured with `examples/segment_study.rs RELEASE=…` (BENCHMARKS.md,
/// "Hysteresis").
pub const RELEASE: f32 = 0.35;
/// See [`SegmenterConfig::loud_margin_db`].
pub const LOUD_MARGIN_DB: f32 = 30.0;
/// See [`SegmenterConfig::loud_margin_db`].
pub const LOUD_FRAMES: usize = 2;
/// See [`SegmenterConfig::fade_db`].
pub const FADE_DB: f32 = 30.0;
/// How fast the noise floor rises while the line is louder than it (it falls at once).
const FLOOR_RISE_DB_PER_FRAME: f32 = 1.0 * FRAME as f32 / RATE as f32;
/// See [`SegmenterConfig::pad`].
pub const DECODE_PAD_MS: u64 = 400;
/// See [`SegmenterConfig::context_span`].
pub const CONTEXT_SPAN_MS: u64 = 6_000;
/// See [`SegmenterConfig::turn_gap`].
pub const TURN_GAP_MS: u64 = 1_500;
/// See [`SegmenterConfig::turn_hold`].
/// A second: digits and letters read out pause up to about that long between groups, and a
/// held turn that ends waits this plus the platform's 0.1 s (BENCHMARKS.md, "End of turn":
/// 800 ms cut a third more pauses and lost a fifth more words on the turn set).
pub const TURN_HOLD_MS: u64 = 1_000;

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
            release: RELEASE,
            loud_margin_db: LOUD_MARGIN_DB,
            loud_frames: LOUD_FRAMES,
            fade_db: FADE_DB,
            pad: ms(DECODE_PAD_MS),
            context_span: ms(CONTEXT_SPAN_MS),
            turn_gap: ms(TURN_GAP_MS),
            hold_unfinished: false,
            unsure_end: 0.0,
            sure_end: 0.0,
            quick_end: 0.0,
            quick_endpoint: ms(endpoint_ms.clamp(32, 5_000)),
            english: true,
            judge_turns: false,
            turn_hold: ms(TURN_HOLD_MS),
            context_as_text: false,
            prompted: false,
            lead: Lead::default(),
            deadline: true,
            speakers: Speakers::Both,
        }
    }
}

/// What the detector made of a frame: at `threshold` (or opening on a loud line), at
/// `release` only, or under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heard {
    Voice,
    Weak,
    Silence,
}

/// Text for the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    Partial(String),
    /// With the time from the end of the voice to now, and how its text was found.
    Final(String, Duration, Recovery),
}

/// How a final's text was found: every utterance the voice detector opened (and that had
/// enough voice not to be noise) ends in a final, unless no decode of it had a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The first decode that could be the final had words.
    None,
    /// It had none; a retry (alone, after more silence) did.
    Retried,
    /// No decode that could be the final had words; the utterance's last partial did.
    Partial,
    /// The decode that could be the final heard a sound, not speech: nothing is sent, and
    /// neither a retry nor the partial puts words there (over a bang, the partials'
    /// smaller model invents whole sentences the finals' model calls a sound).
    Sound,
    /// Nothing had words: the final is empty, and a transcript may not be (docs/PROTOCOL.md),
    /// so nothing is sent.
    Wordless,
}

impl Recovery {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Retried => "retried",
            Self::Partial => "partial",
            Self::Sound => "sound",
            Self::Wordless => "wordless",
        }
    }
}

/// Silence a retry's decode starts with, so that it reads other input than the first try
/// (decoding is deterministic) and the onset is not at the very start. No gain: on sound
/// effects a louder retry turned noise into words (BENCHMARKS.md, "Hard speech").
const RETRY_LEAD: usize = RATE * 3 / 10;

/// The utterance being spoken.
struct Open {
    id: u64,
    /// Position of `audio[0]` in the channel's audio (16 kHz samples).
    start: u64,
    audio: Vec<f32>,
    /// How much of `audio` came before the onset.
    preroll: usize,
    voice: usize,
    /// Samples since the last frame at `threshold` (0 while voiced): the endpoint's clock.
    silence: usize,
    /// Mean power of its frames at `threshold`, dB against full scale (see `fade_db`), and
    /// how many there were.
    level_db: f32,
    level_frames: u32,
    /// Samples since the last frame at `release`: the endpoint also waits for this much
    /// quiet, so that a voice dipping under `threshold` is not cut (hysteresis), while the
    /// usual fall of the score after a word does not delay the final.
    quiet: usize,
    /// Length of `audio` at the end of its last voiced frame.
    voiced_end: usize,
    /// Length of `audio` when it was last decoded, and that decode's text.
    decoded_len: usize,
    decoded_text: Option<String>,
    /// The latest decode of it that had words.
    heard: Option<String>,
    /// The longest decode that could be the final ([`Ticket::whole`]): length and what it
    /// heard.
    whole: Option<(usize, Transcribed)>,
    /// The partials' model's probability of a sentence's end after the words, from the
    /// latest partial that covered every voiced frame then (its length; `None` where the
    /// decode gave none): the pause's judge ([`Open::sentence_end`]).
    judge: Option<(usize, Option<f32>)>,
    /// What the end-of-turn model made of the current pause.
    verdict: Verdict,
    /// The decoders shed the current pause's speculative decode.
    words_shed: bool,
    /// The ladder shed judges (a wave) while the current pause waited for its judge: the
    /// pause's own decode judges it ([`Open::sentence_end`]).
    judge_shed: bool,
    /// It opens the speaker's turn: no voice of theirs ended within `turn_gap` before it
    /// ([`lone_word`] holds only here).
    opens_turn: bool,
    /// The speaker's voice before it ended this long before, in an utterance closed as the
    /// turn's end ([`Event::Endpoint`]).
    after_turn_end: Option<Duration>,
    /// The current pause outlasted the endpoint and this judge held it ([`Event::Held`]).
    held: Option<Hold>,
    /// When the current want began: the opening, the last decode or the pause.
    since: Instant,
    /// When the current pause began (its first silent frame).
    paused_at: Instant,
}

/// An utterance whose endpoint has passed, waiting for its final.
struct Ended {
    id: u64,
    start: u64,
    preroll: usize,
    audio: Vec<f32>,
    voiced_end: usize,
    /// Known once a decode covers its last voiced frame.
    text: Option<String>,
    /// The first decode that could be its final heard no words: a retry is wanted.
    retry: bool,
    /// Its latest decode that had words (a partial or a speculative one: [`Open::heard`]),
    /// for when no decode that could be the final does.
    heard: Option<String>,
    recovery: Recovery,
    /// The speaker finished (the end-of-turn model said so, or the pause outlasted
    /// `turn_hold`): the final ends in . ? !. `None`: as decoded.
    turn: Option<bool>,
    /// Input position (samples at the caller's rate) of its endpoint, for lag.
    at_input: u64,
    /// When the endpoint was reached, and the silence before it.
    since: Instant,
    silence: usize,
}

impl Ended {
    /// Takes what a decode that could be its final heard (`retry`: the second try, alone
    /// after more silence): words are the final; a sound ends it wordless; no words want
    /// the retry, and after the retry its last partial is the final, or nothing.
    fn settle(&mut self, text: String, sound: bool, retry: bool) {
        if !text.trim().is_empty() {
            if retry {
                self.recovery = Recovery::Retried;
            }
            self.text = Some(text);
        } else if sound {
            self.recovery = Recovery::Sound;
            self.text = Some(text);
        } else if !retry {
            self.retry = true;
        } else if let Some(heard) = self.heard.take() {
            // A partial was decoded mid-speech, so it ends as speech goes on; as a final it
            // closes an utterance, and an open ending made the platform wait 1.5 s instead
            // of 0.1 s before answering (docs/PROVIDERS.md).
            self.recovery = Recovery::Partial;
            self.text = Some(end_turn(&heard, true));
        } else {
            self.recovery = Recovery::Wordless;
            self.text = Some(text);
        }
    }
}

/// What decoding needs of an open or an ended utterance.
struct Utterance<'a> {
    start: u64,
    preroll: usize,
    audio: &'a [f32],
    voiced_end: usize,
    /// Its latest decode that had words.
    heard: Option<&'a str>,
}

pub struct Segmenter {
    config: SegmenterConfig,
    /// Samples framed so far: the position the next frame starts at.
    position: u64,
    /// The latest finals, as much as `context_span` can use.
    said: VecDeque<Said>,
    /// An utterance whose decode with context left none of its own words (0: none), a
    /// fact the scheduler's rule reads (`Piece::context_took_all`: it decodes it alone).
    /// Only the oldest utterance without a final gets context, so one id.
    plain: u64,
    detector: earshot::Detector,
    /// What the detector hears: the frame plus dither (see `DITHER`).
    heard: Vec<f32>,
    dither: u32,
    /// Samples short of a whole detector frame.
    carry: Vec<f32>,
    /// The channel's noise floor, dB of a frame's power against full scale: the quietest
    /// frame lately, rising slowly while the line is louder (0 until it has heard a frame).
    floor_db: f32,
    /// Frames in a row that were loud and scored at least `release`.
    loud_run: usize,
    /// The last `preroll` samples while nobody speaks.
    recent: VecDeque<f32>,
    open: Option<Open>,
    ended: VecDeque<Ended>,
    last_partial: String,
    /// Where the voice of the last final sent ended (channel samples; 0 before any).
    last_final_end: u64,
    /// The caller's input position after the last samples pushed (see [`Segmenter::push`]).
    at_input: u64,
    /// Words to expect (the call's or profile's keyterms), prompted to engines that read a
    /// prompt; empty for none.
    keyterms: String,
    next_id: u64,
    /// Where the voice of the latest utterance stopped if it closed as the turn's end
    /// (channel samples; `None` if it did not).
    turn_ended: Option<u64>,
    /// What happened since the shell last took them ([`Segmenter::take_events`]).
    events: Vec<Event>,
}

impl Segmenter {
    /// Words the engine should expect: prompted to engines that read a prompt.
    pub fn set_keyterms(&mut self, keyterms: String) {
        self.keyterms = keyterms;
    }

    pub fn new(config: SegmenterConfig) -> Self {
        Self {
            config,
            position: 0,
            said: VecDeque::new(),
            plain: 0,
            detector: earshot::Detector::default(),
            heard: Vec::with_capacity(FRAME),
            dither: 0x9E37_79B9,
            carry: Vec::with_capacity(FRAME),
            floor_db: 0.0,
            loud_run: 0,
            recent: VecDeque::with_capacity(config.preroll + FRAME),
            open: None,
            ended: VecDeque::new(),
            last_partial: String::new(),
            last_final_end: 0,
            at_input: 0,
            keyterms: String::new(),
            next_id: 0,
            turn_ended: None,
            events: Vec::new(),
        }
    }

    /// What happened to the channel's speech since the last call, oldest first
    /// ([`Event`]): for the shell's metrics and logs.
    pub fn take_events(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.drain(..)
    }

    /// Takes 16 kHz samples in [-1, 1]; `at_input` is the caller's input position after
    /// them. Finals that need no decode are appended to `out`.
    pub fn push(&mut self, samples: &[f32], at_input: u64, now: Instant, out: &mut Vec<Emit>) {
        self.at_input = at_input;
        let mut rest = samples;
        while !rest.is_empty() {
            let take = (FRAME - self.carry.len()).min(rest.len());
            self.carry.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.carry.len() == FRAME {
                let frame = std::mem::take(&mut self.carry);
                let score = self.score(&frame);
                // What the detector heard, dither included: digital silence has a floor.
                let (db, above_floor) = self.loudness();
                let heard = self.hear(score, db, above_floor);
                self.frame(&frame, heard, db, at_input, now);
                self.carry = frame;
                self.carry.clear();
            }
        }
        self.drain_ready(now, out);
    }

    /// One frame whose voice is known (`voiced`), without the detector: the simulator's
    /// timelines (`super::sim`) say where voice is, and hearing 960,000 frames would take
    /// longer than the decisions being simulated.
    #[cfg(test)]
    pub(crate) fn push_heard(
        &mut self,
        voiced: bool,
        at_input: u64,
        now: Instant,
        out: &mut Vec<Emit>,
    ) {
        let (level, heard, db) = match voiced {
            true => (0.05, Heard::Voice, -26.0),
            false => (0.0, Heard::Silence, -120.0),
        };
        self.at_input = at_input;
        self.frame(&[level; FRAME], heard, db, at_input, now);
        self.drain_ready(now, out);
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
        self.drain_ready(now, out);
    }

    /// The one decode this channel wants most now, if any, as if the decoders had room
    /// for everything at the configured lead ([`Room::all`]): for callers that only ask
    /// whether, or since when, a decode is wanted.
    pub fn want(&self) -> Option<Want> {
        self.want_in(&self.room())
    }

    /// Room for everything at the configured lead ([`Room::all`]): what
    /// [`Segmenter::want`] asks with.
    pub fn room(&self) -> Room {
        Room::all(self.config.lead)
    }

    /// The one decode this channel wants most now, if any, with what the decoders have
    /// `room` for: the scheduler's knobs, given with each question and never kept. The
    /// scheduler's rule decides (`schedule::want`); this only tells it the facts.
    pub fn want_in(&self, room: &Room) -> Option<Want> {
        super::schedule::want::want(&self.need(room.context)?, room)
    }

    /// What this channel has for the decoders now ([`Need`]), its finals' context taken
    /// from the turn's latest `context` share of the span; `None` where no decode could
    /// tell more than the last one did.
    pub fn need(&self, context: f64) -> Option<Need> {
        let need = |state| {
            Some(Need {
                endpoint: self.config.endpoint,
                soonest: match self.open.as_ref() {
                    Some(open) if open.judged_sure(&self.config) => {
                        self.config.quick_endpoint.min(self.config.endpoint)
                    }
                    _ => self.config.endpoint,
                },
                deadline: self.config.deadline,
                speakers: self.config.speakers,
                state,
            })
        };
        if let Some(ended) = self.ended.front() {
            let own = self.whole_len(ended.audio.len(), ended.voiced_end);
            let voice_end = ended
                .since
                .checked_sub(samples_as_time(ended.silence))
                .unwrap_or(ended.since);
            return need(State::Ended {
                piece: self.piece(ended.id, ended.start, ended.audio.len(), own, context),
                retry: ended.retry,
                since: ended.since,
                voice_end,
            });
        }
        let open = self.open.as_ref()?;
        if open.silence > 0 {
            let judge = open.awaits_judge(&self.config);
            let decoded = open
                .whole
                .as_ref()
                .is_some_and(|(len, _)| *len >= open.voiced_end);
            if decoded && !judge {
                return None;
            }
            let own = self.whole_len(open.audio.len(), open.voiced_end);
            // Once a decode of a held utterance could be its final, faint voice that moves
            // its end (frames at `release` in a long held pause) is decoded again only after
            // as much quiet as a fresh pause: not once per faint frame.
            let quiet = match open.whole {
                Some(_) if self.config.holds() => open.silence.min(open.quiet),
                _ => open.silence,
            };
            return need(State::Paused {
                piece: self.piece(open.id, open.start, open.audio.len(), own, context),
                silence: open.silence,
                quiet,
                decoded,
                judge,
                since: open.since,
                paused_at: open.paused_at,
            });
        }
        if open.decoded_len >= open.voiced_end {
            return None;
        }
        need(State::Voiced {
            id: open.id,
            len: open.audio.len(),
            heard: open.audio.len() - open.preroll,
            decoded: open.decoded_len,
            words: open
                .decoded_text
                .as_ref()
                .is_some_and(|t| !t.trim().is_empty()),
            first: self.config.first_partial,
            every: self.config.partial_every,
            since: open.since,
        })
    }

    /// Utterance `id` (from `start`, `len` samples now, `own` with its padding) as a final's
    /// decode may read it: with the turn's context that a `context` share of the span has
    /// room for.
    fn piece(&self, id: u64, start: u64, len: usize, own: usize, context: f64) -> Piece {
        let context_from = self.context_for(id, context);
        Piece {
            id,
            len,
            own,
            context_from,
            with_context: self.reads(context_from, start, own),
            context_took_all: id == self.plain,
        }
    }

    /// Samples a final's decode reads: the context from `context_from` (as audio) and its
    /// `own`.
    fn reads(&self, context_from: u64, start: u64, own: usize) -> usize {
        let context: usize = match self.config.context_as_text {
            true => 0,
            false => self
                .context(context_from, start)
                .map(|(audio, _)| audio.len())
                .sum(),
        };
        context + own
    }

    /// The audio a ticket's decode is to read, without context (empty if that utterance is
    /// gone).
    pub fn audio(&self, ticket: Ticket) -> &[f32] {
        match self.utterance(ticket.utterance) {
            Some(u) => &u.audio[..ticket.len.min(u.audio.len())],
            None => &[],
        }
    }

    /// Copies what a decode reads into `out`: for a decode that may become a final, the
    /// turn's earlier audio (see [`SegmenterConfig::context_span`]), the ticket's audio, and zeros
    /// up to `pad` of silence after the last voiced frame; for a partial the audio alone; a
    /// retry (no context) starts with `RETRY_LEAD` of silence.
    pub fn decode_input(&self, want: &Want, out: &mut Vec<f32>) {
        out.clear();
        let Some(Utterance {
            start,
            audio,
            voiced_end,
            ..
        }) = self.utterance(want.ticket.utterance)
        else {
            return;
        };
        let audio = &audio[..want.ticket.len.min(audio.len())];
        if !want.ticket.whole {
            out.extend_from_slice(audio);
            return;
        }
        if want.ticket.retry {
            out.resize(RETRY_LEAD, 0.0);
        }
        if !self.config.context_as_text {
            for (context, _) in self.context(want.ticket.context_from, start) {
                out.extend_from_slice(context);
            }
        }
        out.extend_from_slice(audio);
        let padding = self.whole_len(audio.len(), voiced_end) - audio.len();
        out.resize(out.len() + padding, 0.0);
    }

    /// The text prompt of a decode, for engines that read one (empty for the others): the
    /// keyterms, then, for a decode that may become a final of an engine that reads context
    /// as text, the turn's earlier finals it reads.
    pub fn prompt(&self, want: &Want, out: &mut String) {
        out.clear();
        if !self.config.prompted {
            return;
        }
        out.push_str(&self.keyterms);
        if !want.ticket.whole || !self.config.context_as_text {
            return;
        }
        let Some(start) = self.utterance(want.ticket.utterance).map(|u| u.start) else {
            return;
        };
        if want.ticket.context_from != 0 {
            for (_, text) in self.context(want.ticket.context_from, start) {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(text);
            }
        }
    }

    /// Copies into `out` what the latest decode of the ticket's utterance that had words
    /// heard, for the engine to check rather than find again (empty if none), after the
    /// words of the context it reads as audio. Only for a decode that may become the final: it reads the audio a partial read plus the pause,
    /// so the partial's words are mostly its own; a partial's next reads new words, and a
    /// draft that parts early costs more than it saves (BENCHMARKS.md, "Whisper").
    pub fn draft(&self, want: &Want, out: &mut String) {
        out.clear();
        if !want.ticket.whole {
            return;
        }
        let Some(utterance) = self.utterance(want.ticket.utterance) else {
            return;
        };
        // Context read as audio is heard first: its words as they were sent.
        if !self.config.context_as_text && want.ticket.context_from != 0 {
            for (_, text) in self.context(want.ticket.context_from, utterance.start) {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(text);
            }
        }
        if let Some(heard) = utterance.heard {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(heard);
        }
    }

    /// The open or ended utterance `id`.
    fn utterance(&self, id: u64) -> Option<Utterance<'_>> {
        match &self.open {
            Some(open) if open.id == id => Some(Utterance {
                start: open.start,
                preroll: open.preroll,
                audio: &open.audio,
                voiced_end: open.voiced_end,
                heard: open.heard.as_deref(),
            }),
            _ => self.ended.iter().find(|e| e.id == id).map(|e| Utterance {
                start: e.start,
                preroll: e.preroll,
                audio: &e.audio,
                voiced_end: e.voiced_end,
                heard: e.heard.as_deref(),
            }),
        }
    }

    /// Where the speaker's latest utterance before the open one stopped being voiced (channel
    /// samples): the newest one waiting for its final, else the last one finalised.
    fn last_voice_end(&self) -> Option<u64> {
        match self.ended.back() {
            Some(e) => Some(e.start + e.voiced_end as u64),
            None => (self.last_final_end > 0).then_some(self.last_final_end),
        }
    }

    /// How long a decode that may become a final is, of `len` samples whose voice ends at
    /// `voiced_end`: padding included, context not.
    fn whole_len(&self, len: usize, voiced_end: usize) -> usize {
        len.max(voiced_end + self.config.pad)
    }

    /// Takes what a ticket's decode heard, emitting what it means: a final if it covers the
    /// last word of an utterance that has ended, else a partial of the open one.
    pub fn decoded(
        &mut self,
        ticket: Ticket,
        heard: Transcribed,
        now: Instant,
        out: &mut Vec<Emit>,
    ) {
        let Some(start) = self.utterance(ticket.utterance).map(|u| u.start) else {
            return;
        };
        let Transcribed { text, sound, ends } = heard;
        let text = if ticket.context_from == 0 {
            text
        } else if self.config.context_as_text {
            // A decode that read the turn's earlier finals as a prompt may say the prompt's
            // last words again.
            match self.context(ticket.context_from, start).last() {
                Some((_, prompt_end)) if ticket.whole => drop_repeat(prompt_end, &text),
                _ => text,
            }
        } else if self.said.iter().any(|s| s.id == ticket.context_from) {
            let context: Vec<&str> = self
                .context(ticket.context_from, start)
                .map(|(_, text)| text)
                .collect();
            let own = strip_context(&context.join(" "), &text);
            if own.is_empty() {
                // No words of its own (or the alignment gave them all to the context):
                // told, the scheduler's rule decodes it again alone.
                self.plain = ticket.utterance;
                return;
            }
            own
        } else {
            // The context it read is gone from memory: its words cannot be taken off.
            return;
        };
        if let Some(ended) = self.ended.iter_mut().find(|e| e.id == ticket.utterance) {
            if ticket.whole && ticket.len >= ended.voiced_end && ended.text.is_none() {
                ended.settle(text, sound, ticket.retry);
                self.drain_ready(now, out);
            }
            return;
        }
        let Some(open) = &mut self.open else { return };
        if ticket.whole
            && open
                .whole
                .as_ref()
                .is_none_or(|(len, _)| ticket.len >= *len)
        {
            open.whole = Some((
                ticket.len,
                Transcribed {
                    text: text.clone(),
                    sound,
                    ends,
                },
            ));
        }
        let judged = !ticket.whole && ticket.len >= open.words_end();
        if judged {
            open.judge = Some((ticket.len, ends));
        }
        if ticket.len >= open.decoded_len {
            open.decoded_len = ticket.len;
            open.since = now;
            if !text.trim().is_empty() {
                open.heard = Some(text.clone());
                if text != self.last_partial {
                    self.last_partial.clone_from(&text);
                    out.push(Emit::Partial(text.clone()));
                }
            }
            open.decoded_text = Some(text);
        }
        if ticket.whole || judged {
            // The words of a pause that reached the endpoint while they were decoded, or
            // its judge taken late.
            self.end_if_judged(now, out);
        }
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

    /// What a frame of detector score `score`, power `db` and `above_floor` dB over the noise
    /// floor counts as.
    fn hear(&mut self, score: f32, db: f32, above_floor: f32) -> Heard {
        let loud = above_floor >= self.config.loud_margin_db;
        self.loud_run = if loud && score >= self.config.release {
            self.loud_run + 1
        } else {
            0
        };
        // The fade's line, never under the dither's own power (fading off: none).
        let fade = self.config.fade_db;
        let faded = self
            .open
            .as_ref()
            .is_some_and(|o| fade.is_finite() && db < (o.level_db - fade).max(SILENT_DB));
        if faded {
            Heard::Silence
        } else if score >= self.config.threshold
            || (self.open.is_none() && self.loud_run >= self.config.loud_frames)
        {
            Heard::Voice
        } else if score >= self.config.release {
            Heard::Weak
        } else {
            Heard::Silence
        }
    }

    /// The power of the frame the detector last heard and how far it is above the noise
    /// floor, in dB, and the floor updated with it.
    fn loudness(&mut self) -> (f32, f32) {
        let heard = &self.heard;
        let power = heard.iter().map(|x| x * x).sum::<f32>() / heard.len().max(1) as f32;
        let db = 10.0 * (power + 1e-12).log10();
        let above = db - self.floor_db;
        self.floor_db = if db < self.floor_db {
            db
        } else {
            (self.floor_db + FLOOR_RISE_DB_PER_FRAME).min(db)
        };
        (db, above)
    }

    /// `db`: the frame's power (see [`Self::loudness`]).
    fn frame(&mut self, frame: &[f32], heard: Heard, db: f32, at_input: u64, now: Instant) {
        let config = self.config;
        match &mut self.open {
            None if heard == Heard::Voice => {
                let mut audio = Vec::with_capacity(config.preroll + 4 * RATE);
                let start = self.position.saturating_sub(self.recent.len() as u64);
                audio.extend(self.recent.drain(..));
                let preroll = audio.len();
                audio.extend_from_slice(frame);
                self.next_id += 1;
                let opens_turn = self.last_voice_end().is_none_or(|end| {
                    (start + preroll as u64).saturating_sub(end) > self.config.turn_gap as u64
                });
                let after_turn_end = self
                    .turn_ended
                    .map(|end| (start + preroll as u64).saturating_sub(end))
                    .filter(|gap| *gap <= self.config.turn_gap as u64)
                    .map(|gap| samples_as_time(gap as usize));
                self.events.push(Event::Opened);
                self.open = Some(Open {
                    id: self.next_id,
                    start,
                    preroll,
                    voiced_end: audio.len(),
                    audio,
                    voice: FRAME,
                    silence: 0,
                    level_db: db,
                    level_frames: 1,
                    quiet: 0,
                    decoded_len: 0,
                    decoded_text: None,
                    heard: None,
                    whole: None,
                    judge: None,
                    verdict: Verdict::Unasked,
                    words_shed: false,
                    judge_shed: false,
                    opens_turn,
                    after_turn_end,
                    held: None,
                    since: now,
                    paused_at: now,
                });
            }
            None => {
                self.recent.extend(frame);
                let excess = self.recent.len().saturating_sub(config.preroll);
                self.recent.drain(..excess);
            }
            Some(open) => {
                open.audio.extend_from_slice(frame);
                if heard == Heard::Silence {
                    open.quiet += FRAME;
                } else {
                    open.voice += FRAME;
                    open.quiet = 0;
                    open.voiced_end = open.audio.len();
                }
                if heard == Heard::Voice {
                    if open.silence > 0 {
                        self.events.push(Event::Resumed {
                            silence: samples_as_time(open.silence),
                            held: open.held,
                        });
                        open.held = None;
                    }
                    open.silence = 0;
                    open.verdict = Verdict::Unasked;
                    open.words_shed = false;
                    open.judge_shed = false;
                    open.level_frames += 1;
                    open.level_db += (db - open.level_db) / open.level_frames as f32;
                } else {
                    if open.silence == 0 {
                        open.since = now;
                        open.paused_at = now;
                        self.events.push(Event::Paused);
                    }
                    open.silence += FRAME;
                }
                let long = open.audio.len() >= config.max_utterance;
                let endpoint = open.endpoint(&config);
                if (open.silence >= endpoint
                    && open.quiet >= endpoint / 2
                    && open.ends_turn(&config))
                    || (long && heard == Heard::Silence)
                    || open.audio.len() >= 2 * config.max_utterance
                {
                    self.close(at_input, now);
                } else if open.held.is_none()
                    && let Some(by) = open.held_open(&config)
                {
                    open.held = Some(by);
                    self.events.push(Event::Held { by });
                }
            }
        }
        self.position += FRAME as u64;
    }

    /// Turns the open utterance into one waiting for its final.
    fn close(&mut self, at_input: u64, now: Instant) {
        let Some(open) = self.open.take() else { return };
        let turn = open.ending(&self.config);
        // What follows the endpoint is the next utterance's pre-roll.
        let tail = open.silence.min(self.config.preroll);
        let mut audio = open.audio;
        self.recent.extend(&audio[audio.len() - tail..]);
        if open.voice < self.config.min_voice {
            self.events.push(Event::Dropped);
            return;
        }
        let voiced_end = open.voiced_end;
        let ends_turn = turn == Some(true);
        self.turn_ended = ends_turn.then_some(open.start + voiced_end as u64);
        self.events.push(Event::Endpoint {
            silence: samples_as_time(open.silence),
            ends_turn,
            sooner: ends_turn && open.silence < self.config.endpoint,
            held: open.held,
            after_turn_end: open.after_turn_end,
        });
        let mut ended = Ended {
            id: open.id,
            start: open.start,
            preroll: open.preroll,
            voiced_end,
            audio: std::mem::take(&mut audio),
            text: None,
            retry: false,
            heard: open.heard,
            recovery: Recovery::None,
            turn,
            at_input,
            since: now,
            silence: open.silence,
        };
        // A decode of it as a whole is the first try at its final.
        if let Some((_, heard)) = open.whole.filter(|(len, _)| *len >= voiced_end) {
            ended.settle(heard.text, heard.sound, false);
        }
        self.ended.push_back(ended);
    }

    /// Emits, in order, the finals whose text is known.
    fn drain_ready(&mut self, now: Instant, out: &mut Vec<Emit>) {
        while self.ended.front().is_some_and(|e| e.text.is_some()) {
            let Some(Ended {
                id,
                start,
                preroll,
                voiced_end,
                audio,
                text: Some(text),
                turn,
                since,
                silence,
                recovery,
                ..
            }) = self.ended.pop_front()
            else {
                break;
            };
            let text = match turn {
                Some(complete) => end_turn(&text, complete),
                None => text,
            };
            self.last_final_end = start + voiced_end as u64;
            self.last_partial.clear();
            if self.config.context_span > 0 {
                self.said.push_back(Said {
                    id,
                    start,
                    audio,
                    text: text.clone(),
                    onset: start + preroll as u64,
                    voice_end: start + voiced_end as u64,
                });
                let mut kept: usize = self.said.iter().map(|s| s.audio.len()).sum();
                while kept > self.config.context_span {
                    let Some(oldest) = self.said.pop_front() else {
                        break;
                    };
                    kept -= oldest.audio.len();
                }
            }
            let silence = Duration::from_secs_f64(silence as f64 / RATE as f64);
            out.push(Emit::Final(
                text,
                silence + now.saturating_duration_since(since),
                recovery,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::verdict::{TURN_TAIL, Verdict};
    use super::*;

    fn config() -> SegmenterConfig {
        SegmenterConfig::from_ms(192, 480)
    }

    /// What the channel wants decoded now, or else its open utterance as it is.
    fn ticket(s: &Segmenter) -> Ticket {
        s.want().map_or_else(|| open_ticket(s), |w| w.ticket)
    }

    /// A partial of the open utterance as it is, whatever the channel wants.
    fn partial_want(s: &Segmenter) -> Want {
        Want {
            kind: DecodeKind::Partial,
            since: Instant::now(),
            due: None,
            speakers: Speakers::Both,
            ticket: Ticket {
                whole: false,
                ..open_ticket(s)
            },
        }
    }

    /// The open utterance as it is, decoded as a final would be, whatever the channel wants.
    fn open_ticket(s: &Segmenter) -> Ticket {
        let open = s.open.as_ref().unwrap();
        Ticket {
            utterance: open.id,
            len: open.audio.len(),
            context_from: s.context_for(open.id, 1.0),
            whole: true,
            retry: false,
            beam: false,
            quick: false,
        }
    }

    fn finals(out: &[Emit]) -> Vec<&str> {
        out.iter()
            .filter_map(|e| match e {
                Emit::Final(text, ..) => Some(text.as_str()),
                Emit::Partial(_) => None,
            })
            .collect()
    }

    /// A frame's power, dB against full scale.
    fn db(frame: &[f32]) -> f32 {
        let power = frame.iter().map(|x| x * x).sum::<f32>() / frame.len() as f32;
        10.0 * (power + 1e-12).log10()
    }

    /// Feeds `frames` frames, all voiced or all not, through the policy (no detector).
    fn feed(s: &mut Segmenter, frames: usize, voiced: bool, at: &mut u64) {
        let frame = [if voiced { 0.1 } else { 0.0 }; FRAME];
        let heard = if voiced { Heard::Voice } else { Heard::Silence };
        for _ in 0..frames {
            *at += FRAME as u64;
            s.frame(&frame, heard, db(&frame), *at, Instant::now());
        }
    }

    #[test]
    fn the_beam_takes_a_final_only_where_it_is_ready_by_the_endpoint() {
        let ms = |v: usize| v * RATE / 1000;
        // Greedy: 30 ms + 20 ms/s; the beam: 60 ms + 40 ms/s.
        let lead = Lead {
            base: ms(30),
            per_second: ms(20),
            beam: Some((ms(60), ms(40))),
            ..Lead::default()
        };
        let pick = |lead: usize, beam: bool, quick: bool| Pick { lead, beam, quick };
        // At 200 ms, a 1 s utterance's beam (100 ms, started two frames into the pause)
        // is ready in time, a 4 s one's (220 ms) is not: greedy, with greedy's lead.
        assert_eq!(
            lead.for_final(ms(1000), ms(200)),
            pick(ms(100), true, false)
        );
        assert_eq!(
            lead.for_final(ms(4000), ms(200)),
            pick(ms(110), false, false)
        );
        // The assistant's 1000 ms leave it the time.
        assert_eq!(
            lead.for_final(ms(4000), ms(1000)),
            pick(ms(220), true, false)
        );
        // No beam: greedy always.
        let greedy = Lead { beam: None, ..lead };
        assert_eq!(
            greedy.for_final(ms(1000), ms(1000)),
            pick(ms(50), false, false)
        );
    }

    #[test]
    fn a_final_the_finals_model_would_have_late_takes_the_partials_model() {
        let ms = |v: usize| v * RATE / 1000;
        // The finals' model: 100 ms + 100 ms/s greedy; the partials': 20 ms + 25 ms/s.
        let lead = Lead {
            base: ms(100),
            per_second: ms(100),
            beam: Some((ms(200), ms(200))),
            quick: Some((ms(20), ms(25))),
            budget: ms(600),
        };
        let pick = |lead: usize, beam: bool, quick: bool| Pick { lead, beam, quick };
        // 5 s: the finals' model greedily, 600 ms, started two frames (32 ms) into the
        // pause, ready 432 ms after a 200 ms endpoint: within the budget.
        assert_eq!(
            lead.for_final(ms(5000), ms(200)),
            pick(ms(600), false, false)
        );
        // 8 s: 900 ms, ready 732 ms after it: the partials' model, 220 ms.
        assert_eq!(
            lead.for_final(ms(8000), ms(200)),
            pick(ms(220), false, true)
        );
        // The assistant's 1000 ms endpoint leaves the finals' model the time.
        assert_eq!(
            lead.for_final(ms(8000), ms(1000)),
            pick(ms(900), false, false)
        );
        // Without a partials' model to fall back to (or a ladder that may not shed the
        // finals' one), late or not, the finals' model.
        let only = Lead {
            quick: None,
            ..lead
        };
        assert_eq!(
            only.for_final(ms(8000), ms(200)),
            pick(ms(900), false, false)
        );
    }

    #[test]
    fn a_final_is_searched_greedily_and_started_later_while_the_decoders_are_short_of_time() {
        let ms = |v: usize| v * RATE / 1000;
        let mut config = config();
        config.endpoint = ms(1000);
        config.lead = Lead {
            base: ms(30),
            per_second: ms(20),
            beam: Some((ms(60), ms(40))),
            ..Lead::default()
        };
        // Silence frames until the pause's speculative decode is wanted, and its ticket.
        let speculative = |allow: bool| {
            let mut s = Segmenter::new(config);
            let room = Room {
                beam: allow,
                ..Room::all(config.lead)
            };
            let mut at = 0;
            feed(&mut s, 60, true, &mut at);
            for frames in 1.. {
                feed(&mut s, 1, false, &mut at);
                if let Some(w) = s
                    .want_in(&room)
                    .filter(|w| w.kind == DecodeKind::Speculative)
                {
                    return (frames, w.ticket.beam);
                }
            }
            unreachable!()
        };
        let (beamed_at, beamed) = speculative(true);
        let (greedy_at, greedy) = speculative(false);
        assert!(beamed && !greedy);
        // The beam's longer decode starts earlier in the pause, greedy's when it must.
        assert!(beamed_at < greedy_at, "{beamed_at} vs {greedy_at}");
    }

    /// The segmenter reads time only as its callers give it (`now`), so the same audio and
    /// decode times give the same decisions on any machine, however busy.
    #[test]
    fn the_segmenter_never_reads_the_clock() {
        for (file, text) in [
            ("mod.rs", include_str!("mod.rs")),
            ("verdict.rs", include_str!("verdict.rs")),
            ("context.rs", include_str!("context.rs")),
            ("event.rs", include_str!("event.rs")),
        ] {
            let reads = super::super::clock_reads(text);
            assert!(
                reads.is_empty(),
                "segmenter/{file} reads the clock: {reads:?}"
            );
        }
    }

    /// Decodes found dearer than at the call's start (the cost model's correction rising
    /// under load) start the pause's speculative decode earlier, so its final is still ready
    /// by the endpoint.
    #[test]
    fn a_dearer_lead_starts_the_speculative_decode_earlier_in_the_pause() {
        let ms = |v: usize| v * RATE / 1000;
        let mut config = config();
        config.endpoint = ms(1000);
        let started = |lead: Lead| {
            let mut s = Segmenter::new(config);
            let mut at = 0;
            feed(&mut s, 60, true, &mut at);
            for frames in 1.. {
                feed(&mut s, 1, false, &mut at);
                let wanted = s.want_in(&Room::all(lead));
                if wanted.is_some_and(|w| w.kind == DecodeKind::Speculative) {
                    return frames;
                }
            }
            unreachable!()
        };
        let cheap = Lead {
            base: ms(30),
            per_second: ms(20),
            ..Lead::default()
        };
        let dear = Lead {
            base: ms(300),
            per_second: ms(200),
            ..Lead::default()
        };
        assert!(
            started(dear) < started(cheap),
            "{} vs {}",
            started(dear),
            started(cheap)
        );
    }

    #[test]
    fn decodes_that_may_become_finals_end_in_the_padding_silence_and_partials_do_not() {
        let mut s = Segmenter::new(config());
        let pad = s.config.pad;
        let mut at = 0;
        let mut input = Vec::new();
        feed(&mut s, 40, true, &mut at);
        // A partial reads the audio as it is.
        let partial = partial_want(&s);
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
        s.drain_ready(Instant::now(), &mut out);
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
        s.drain_ready(Instant::now(), &mut out);
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
        s.drain_ready(Instant::now(), &mut out);
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

    #[test]
    fn a_final_does_not_begin_with_the_words_the_previous_one_ended_with() {
        let cases = [
            (
                "And so my fellow Americans.",
                "American asked not.",
                "asked not.",
            ),
            (
                "ask not what your country",
                "your country can do for you",
                "can do for you",
            ),
            ("I said no.", "No, I will not.", "No, I will not."),
            (
                "We went to the store",
                "and bought bread",
                "and bought bread",
            ),
            ("thank you very much", "very much", "very much"),
            ("", "hello there", "hello there"),
        ];
        for (previous, text, kept) in cases {
            assert_eq!(drop_repeat(previous, text), kept, "{previous:?} + {text:?}");
        }
    }

    #[test]
    fn context_words_come_off_what_the_decode_says() {
        let cases = [
            ("", "Hello there.", "Hello there."),
            (
                "And so my fellow Americans.",
                "And so my fellow Americans, ask not what",
                "ask not what",
            ),
            // The context heard differently the second time still aligns.
            (
                "Thanks for calling. How can I",
                "Thanks for coming, how can I help you today?",
                "help you today?",
            ),
            // A word cut short at the cut is still the context's.
            (
                "And so my fellow Americans.",
                "And so my fellow American, asked not.",
                "asked not.",
            ),
            // A word said again after the cut is the piece's.
            ("to go", "to go go home.", "go home."),
            // Ambiguous: a dropped "to" or "to" heard as "go"; the piece keeps the word.
            ("I want to", "I want go home.", "go home."),
            // Nothing new.
            ("Yes, please.", "Yes please.", ""),
            ("One two three four", "One two", ""),
        ];
        for (context, decoded, piece) in cases {
            assert_eq!(
                strip_context(context, decoded),
                piece,
                "{context:?} + {decoded:?}"
            );
        }
    }

    /// Speaks `voiced` frames then `silent` frames and sends the final `text` for it, as if
    /// decoded with whatever context the segmenter chose.
    fn say(s: &mut Segmenter, voiced: usize, silent: usize, text: &str, at: &mut u64) -> Want {
        feed(s, voiced, true, at);
        feed(s, silent, false, at);
        let want = s.want().unwrap();
        assert_eq!(want.kind, DecodeKind::Final);
        let mut out = Vec::new();
        s.decoded(want.ticket, text.into(), Instant::now(), &mut out);
        want
    }

    #[test]
    fn a_final_is_decoded_after_the_turn_so_far_and_says_only_its_own_words() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        let first = say(&mut s, 40, 12, "Hello there.", &mut at);
        assert_eq!(first.ticket.context_from, 0);
        let first_audio = s.said[0].audio.len();
        // A short pause, then the turn goes on.
        feed(&mut s, 5, false, &mut at);
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        let want = s.want().unwrap();
        assert_eq!(want.ticket.context_from, first.ticket.utterance);
        let mut input = Vec::new();
        s.decode_input(&want, &mut input);
        let own = s.audio(want.ticket);
        // The earlier utterance up to where this one's pre-roll starts, then this one.
        let context = input.len() - own.len().max(own.len() - 12 * FRAME + s.config.pad);
        assert!(context > 0 && context <= first_audio, "{context}");
        assert_eq!(&input[context..context + own.len()], own);
        let mut out = Vec::new();
        s.decoded(
            want.ticket,
            "Hello there, how are you?".into(),
            Instant::now(),
            &mut out,
        );
        assert_eq!(finals(&out), ["how are you?"]);
    }

    #[test]
    fn a_word_said_again_after_the_last_final_is_not_lost() {
        // (context as text, context read, what the second decode heard, its final)
        let cases = [
            // Audio context: what follows the aligned context is the speaker's.
            (false, true, "Thanks. Thanks, bye.", "Thanks, bye."),
            (false, true, "Thanks. Thanks.", "Thanks."),
            // A word the decode cut short is still the context's.
            (false, true, "Thank. Okay, bye.", "Okay, bye."),
            // No context read: the decode cannot repeat an earlier final.
            (false, false, "Thanks, bye.", "Thanks, bye."),
            // A prompt's last words said again come off.
            (true, true, "Thanks, bye.", "bye."),
        ];
        for (as_text, with_context, heard, kept) in cases {
            let mut s = Segmenter::new(SegmenterConfig {
                context_as_text: as_text,
                prompted: as_text,
                context_span: if with_context {
                    config().context_span
                } else {
                    0
                },
                ..config()
            });
            let mut at = 0;
            let first = say(&mut s, 40, 12, "Thanks.", &mut at);
            assert_eq!(first.ticket.context_from, 0);
            feed(&mut s, 5, false, &mut at);
            feed(&mut s, 30, true, &mut at);
            feed(&mut s, 12, false, &mut at);
            let want = s.want().unwrap();
            assert_eq!(want.ticket.context_from != 0, with_context, "{heard:?}");
            let mut out = Vec::new();
            s.decoded(want.ticket, heard.into(), Instant::now(), &mut out);
            assert_eq!(
                finals(&out),
                [kept],
                "text {as_text}, context {with_context}"
            );
        }
    }

    #[test]
    fn keyterms_reach_an_engine_that_reads_a_prompt_and_earlier_finals_only_as_text() {
        // (prompted, context as text) -> the second final's prompt; a partial's.
        let cases = [
            (false, false, "", ""),
            (true, false, "Acme", "Acme"),
            (true, true, "Acme Hello there.", "Acme"),
        ];
        for (prompted, context_as_text, final_prompt, partial_prompt) in cases {
            let mut s = Segmenter::new(SegmenterConfig {
                prompted,
                context_as_text,
                ..config()
            });
            s.set_keyterms("Acme".into());
            let mut at = 0;
            say(&mut s, 40, 12, "Hello there.", &mut at);
            feed(&mut s, 5, false, &mut at);
            feed(&mut s, 30, true, &mut at);
            let mut prompt = String::new();
            let partial = partial_want(&s);
            s.prompt(&partial, &mut prompt);
            assert_eq!(prompt, partial_prompt);
            feed(&mut s, 12, false, &mut at);
            let want = s.want().unwrap();
            assert_eq!(want.kind, DecodeKind::Final);
            s.prompt(&want, &mut prompt);
            assert_eq!(
                prompt, final_prompt,
                "prompted {prompted}, text {context_as_text}"
            );
            // Context as audio: the earlier final's audio comes before this one's, and its
            // words lead the draft.
            let mut draft = String::new();
            s.draft(&want, &mut draft);
            assert_eq!(draft, if context_as_text { "" } else { "Hello there." });
            let mut input = Vec::new();
            s.decode_input(&want, &mut input);
            let own = s.audio(want.ticket).len() + s.config.pad;
            assert_eq!(input.len() > own, !context_as_text);
        }
    }

    #[test]
    fn a_long_pause_starts_a_new_turn_without_context() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        say(&mut s, 40, 12, "Hello there.", &mut at);
        let gap = s.config.turn_gap / FRAME;
        feed(&mut s, gap + 2, false, &mut at);
        let second = say(&mut s, 30, 12, "How are you?", &mut at);
        assert_eq!(second.ticket.context_from, 0);
    }

    #[test]
    fn context_waits_for_the_earlier_final_and_fits_the_budget() {
        let mut s = Segmenter::new(SegmenterConfig {
            context_span: 130 * FRAME,
            ..config()
        });
        let mut at = 0;
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        // The first utterance waits for its final; the second's decodes get no context.
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 4, false, &mut at);
        assert_eq!(open_ticket(&s).context_from, 0);
        let mut out = Vec::new();
        let first = s.want().unwrap();
        s.decoded(first.ticket, "One.".into(), Instant::now(), &mut out);
        assert_eq!(open_ticket(&s).context_from, first.ticket.utterance);
        feed(&mut s, 8, false, &mut at);
        let second = s.want().unwrap();
        s.decoded(second.ticket, "One. Two.".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["One.", "Two."]);
        // Frames: the first is 52 long, the second 42 and its pre-roll (9.4); the third's own
        // decode (pre-roll, 20, and 25 of padding) leaves room for the second only.
        let third = say(&mut s, 20, 12, "Three.", &mut at);
        assert_eq!(third.ticket.context_from, second.ticket.utterance);
        // Only what a decode could use is kept.
        assert_eq!(s.said.front().unwrap().id, second.ticket.utterance);
        assert!(s.said.iter().map(|x| x.audio.len()).sum::<usize>() <= 130 * FRAME);
        feed(&mut s, 20, true, &mut at);
        assert_eq!(open_ticket(&s).context_from, third.ticket.utterance);
        // Under load the span shrinks, and context goes first.
        let id = s.open.as_ref().unwrap().id;
        assert_eq!(s.context_for(id, 0.0), 0);
        // A final's decode may read the turn's earlier audio before its own: the scheduler's
        // rule weighs both (`schedule::want`).
        let open = s.open.as_ref().unwrap();
        let (start, len) = (open.start, open.audio.len());
        let own = s.whole_len(len, open.voiced_end);
        let from = s.context_for(id, 1.0);
        let context: usize = s.context(from, start).map(|(a, _)| a.len()).sum();
        assert!(from != 0 && context > 0);
        let piece = s.piece(id, start, len, own, 1.0);
        assert_eq!(
            (piece.context_from, piece.own, piece.with_context),
            (from, own, own + context)
        );
        assert_eq!(s.piece(id, start, len, own, 0.0).with_context, own);
    }

    #[test]
    fn a_verdict_decides_how_a_final_ends() {
        assert_eq!(
            end_turn("I want to book a table.", false),
            "I want to book a table"
        );
        assert_eq!(end_turn("Is it open?", false), "Is it open");
        assert_eq!(end_turn("My number is 555,", true), "My number is 555.");
        assert_eq!(end_turn("That's all", true), "That's all.");
        assert_eq!(end_turn("Thanks!", true), "Thanks!");
        assert_eq!(end_turn("and then", false), "and then");
        assert_eq!(end_turn("", true), "");
    }

    /// A segmenter that asks the end-of-turn model, with a hold of 40 frames (640 ms).
    fn judging() -> Segmenter {
        Segmenter::new(SegmenterConfig {
            judge_turns: true,
            turn_hold: 40 * FRAME,
            ..config()
        })
    }

    /// Feeds silence until the end-of-turn model is wanted, and claims its question.
    fn ask(s: &mut Segmenter, audio: &mut Vec<f32>, at: &mut u64) -> TurnTicket {
        while !s.wants_turn() {
            feed(s, 1, false, at);
        }
        s.claim_turn(audio).unwrap()
    }

    /// Feeds silence until the pause's speculative decode is wanted, with partials and the
    /// pause's judge shed, as the pool does under a wave.
    fn speculate(s: &mut Segmenter, at: &mut u64) -> Want {
        loop {
            let room = Room {
                partials: false,
                judges: false,
                ..s.room()
            };
            s.judge_shed();
            if let Some(want) = s.want_in(&room) {
                assert_eq!(want.kind, DecodeKind::Speculative);
                return want;
            }
            feed(s, 1, false, at);
        }
    }

    /// Feeds silence until the pause's speculative decode is wanted, which hears `text`.
    fn speculated(s: &mut Segmenter, text: &str, at: &mut u64, out: &mut Vec<Emit>) {
        let want = speculate(s, at);
        s.decoded(want.ticket, text.into(), Instant::now(), out);
    }

    /// The judges that held pauses, from the events not yet taken.
    fn holds(s: &mut Segmenter) -> Vec<Hold> {
        s.take_events()
            .filter_map(|e| match e {
                Event::Held { by } => Some(by),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_pause_judged_the_turns_end_gives_its_final_at_the_endpoint_ending_in_a_period() {
        let mut s = judging();
        let mut at = 0;
        let mut audio = Vec::new();
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 2, false, &mut at);
        assert!(!s.wants_turn(), "asked about 100 ms before the endpoint");
        let ticket = ask(&mut s, &mut audio, &mut at);
        assert!(s.claim_turn(&mut audio).is_none(), "asked once");
        // It hears the utterance and 200 ms after the voice.
        let voiced_end = s.open.as_ref().unwrap().voiced_end;
        assert_eq!(audio.len(), voiced_end + TURN_TAIL);
        speculated(&mut s, "That's all", &mut at, &mut out);
        out.clear();
        // At the endpoint without a verdict: held.
        feed(&mut s, 12, false, &mut at);
        assert!(s.pending_since().is_none() && finals(&out).is_empty());
        // The verdict closes it at once, ending the turn.
        s.judged(ticket, Some(true), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["That's all."]);
        assert!(s.is_idle());

        // A verdict that comes before the endpoint: the final goes at the endpoint.
        let out = said_and_judged_finished(&mut s, "Bye.", &mut at);
        assert_eq!(finals(&out), ["Bye."]);
    }

    /// 640 ms of voice the judge hears as finished before the endpoint, decoded as `text`,
    /// then silence to the endpoint: what the segmenter emitted, which is empty before the
    /// endpoint and the final after it.
    fn said_and_judged_finished(s: &mut Segmenter, text: &str, at: &mut u64) -> Vec<Emit> {
        let (mut audio, mut out) = (Vec::new(), Vec::new());
        feed(s, 40, true, at);
        let ticket = ask(s, &mut audio, at);
        s.judged(ticket, Some(true), Instant::now(), &mut out);
        speculated(s, text, at, &mut out);
        assert!(finals(&out).is_empty(), "not before the endpoint");
        feed(s, 12, false, at);
        s.drain_ready(Instant::now(), &mut out);
        out
    }

    #[test]
    fn a_pause_judged_unfinished_is_held_and_the_words_after_it_join_one_final() {
        let mut s = judging();
        let mut at = 0;
        let mut audio = Vec::new();
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        let ticket = ask(&mut s, &mut audio, &mut at);
        s.judged(ticket, Some(false), Instant::now(), &mut out);
        speculated(&mut s, "Front.", &mut at, &mut out);
        // Past the endpoint, and longer: still one open utterance, no final.
        feed(&mut s, 30, false, &mut at);
        assert!(s.open.is_some() && s.ended.is_empty() && finals(&out).is_empty());
        // The speaker goes on: the same utterance, asked again at its next pause.
        feed(&mut s, 30, true, &mut at);
        let id = s.open.as_ref().unwrap().id;
        let ticket = ask(&mut s, &mut audio, &mut at);
        assert_eq!(ticket.utterance, id);
        s.judged(ticket, Some(true), Instant::now(), &mut out);
        feed(&mut s, 12, false, &mut at);
        let want = s.want().unwrap();
        assert_eq!(want.kind, DecodeKind::Final);
        assert_eq!(want.ticket.utterance, id);
        // The final's decode reads both parts, from the first voice on.
        assert_eq!(s.audio(want.ticket).len(), s.ended[0].audio.len());
        s.decoded(want.ticket, "Front left.".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["Front left."]);
        // The events tell the shell's metrics so: held, resumed and joined, then the
        // turn's end at the next pause's endpoint.
        let events: Vec<Event> = s.take_events().collect();
        let [
            Event::Opened,
            Event::Paused,
            Event::Held { by: Hold::Model },
            Event::Resumed {
                held: Some(Hold::Model),
                ..
            },
            Event::Paused,
            end,
        ] = events[..]
        else {
            panic!("{events:?}");
        };
        assert!(ends_turn_at_endpoint(&end), "{end:?}");
        assert_eq!(s.take_events().count(), 0, "taken once");
    }

    /// An utterance closed as the turn's end at the endpoint, not held, not opened right
    /// after another turn's end.
    fn ends_turn_at_endpoint(event: &Event) -> bool {
        matches!(
            event,
            Event::Endpoint {
                ends_turn: true,
                held: None,
                after_turn_end: None,
                ..
            }
        )
    }

    /// The events say what the endpointer decided about each pause, for the shell's
    /// metrics: a pause ended as the turn's end at the endpoint, the speaker going on
    /// within the turn gap after it (what the platform may have answered over), then a
    /// noise too short to be speech.
    #[test]
    fn the_endpointer_tells_what_it_decided_about_each_pause() {
        let mut s = judging();
        let mut at = 0;
        let mut out = said_and_judged_finished(&mut s, "That's all.", &mut at);
        assert_eq!(finals(&out), ["That's all."]);
        let events: Vec<Event> = s.take_events().collect();
        let [Event::Opened, Event::Paused, end] = events[..] else {
            panic!("{events:?}");
        };
        assert!(ends_turn_at_endpoint(&end), "{end:?}");

        // The speaker goes on 400 ms after the turn's end: counted against that end.
        feed(&mut s, 13, false, &mut at);
        feed(&mut s, 20, true, &mut at);
        s.finish(at, Instant::now(), &mut out);
        let events: Vec<Event> = s.take_events().collect();
        let Some(Event::Endpoint {
            after_turn_end: Some(gap),
            ..
        }) = events.last()
        else {
            panic!("{events:?}");
        };
        assert!(
            (Duration::from_millis(380)..Duration::from_millis(520)).contains(gap),
            "{gap:?}"
        );

        // A click is no utterance: dropped. Its pause waited for words that never came,
        // which is no hold: nothing judged it unfinished.
        feed(&mut s, 200, false, &mut at);
        feed(&mut s, 1, true, &mut at);
        feed(&mut s, 40, false, &mut at);
        let events: Vec<Event> = s.take_events().collect();
        assert_eq!(events, [Event::Opened, Event::Paused, Event::Dropped]);
    }

    #[test]
    fn a_held_pause_that_reaches_the_hold_ends_the_turn_with_a_period() {
        let mut s = judging();
        let mut at = 0;
        let mut audio = Vec::new();
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        let ticket = ask(&mut s, &mut audio, &mut at);
        s.judged(ticket, Some(false), Instant::now(), &mut out);
        speculated(&mut s, "My number is 555,", &mut at, &mut out);
        let asked_at = s.open.as_ref().unwrap().silence / FRAME;
        feed(&mut s, 39 - asked_at, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(
            finals(&out).is_empty() && s.ended.is_empty(),
            "held until the hold"
        );
        feed(&mut s, 1, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        // The speculative decode is the final: no decode after the hold.
        assert_eq!(finals(&out), ["My number is 555."]);
        assert!(s.is_idle());

        // A question never answered (the judge busy) holds as long, no longer.
        out.clear();
        feed(&mut s, 40, true, &mut at);
        ask(&mut s, &mut audio, &mut at);
        speculated(&mut s, "and then", &mut at, &mut out);
        feed(&mut s, 40, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["and then."]);
    }

    /// A segmenter that holds pauses after words that go on, with a hold of 40 frames.
    fn holding() -> Segmenter {
        Segmenter::new(SegmenterConfig {
            hold_unfinished: true,
            turn_hold: 40 * FRAME,
            ..config()
        })
    }

    #[test]
    fn a_pause_after_words_that_go_on_is_held_and_the_words_after_it_join_one_final() {
        let mut s = holding();
        let mut at = 0;
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "My name is", &mut at, &mut out);
        feed(&mut s, 30, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(s.open.is_some() && s.ended.is_empty() && finals(&out).is_empty());
        assert_eq!(holds(&mut s), [Hold::Words]);
        // The speaker goes on: one utterance; its words end the turn at the endpoint, and
        // the final ends in a period for the platform to answer at once.
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "My name is Smith", &mut at, &mut out);
        assert!(finals(&out).is_empty(), "not before the endpoint");
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["My name is Smith."]);
        assert!(s.is_idle());
    }

    /// [`holding`], where the recognizer's own doubt of a sentence's end holds a pause too.
    fn doubting() -> Segmenter {
        Segmenter::new(SegmenterConfig {
            unsure_end: 0.5,
            ..holding().config
        })
    }

    /// A decode that heard `text`, a sentence's end after it this likely.
    fn heard(text: &str, ends: f32) -> Transcribed {
        Transcribed {
            ends: Some(ends),
            ..Transcribed::words(text)
        }
    }

    /// Words that read finished, but the recognizer itself found a sentence's end after
    /// them unlikely (`Transcribed::ends` under `unsure_end`): the pause is held and the
    /// words after it join one final; heard sure, the same words end the turn at once.
    #[test]
    fn a_pause_whose_words_the_model_is_unsure_end_is_held_and_joined() {
        let mut s = doubting();
        let mut at = 0;
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        let want = speculate(&mut s, &mut at);
        s.decoded(
            want.ticket,
            heard("Now left click the research.", 0.2),
            Instant::now(),
            &mut out,
        );
        feed(&mut s, 30, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(s.open.is_some() && finals(&out).is_empty(), "held");
        // Its judge was shed: the speculative decode's reading held it.
        assert_eq!(holds(&mut s), [Hold::SentenceEnd { judge: false }]);
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        let want = speculate(&mut s, &mut at);
        let whole = "Now left click the research facility.";
        s.decoded(want.ticket, heard(whole, 0.9), Instant::now(), &mut out);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), [whole], "one final, at the endpoint");
        assert!(s.is_idle());
    }

    /// With `sure_end`, a pause the judge doubts a little waits in proportion to the doubt:
    /// sure, it ends at the endpoint; halfway between `unsure_end` and `sure_end`, at half
    /// the way from the endpoint to the hold, its final ending in a period; under
    /// `unsure_end`, held to the hold.
    #[test]
    fn a_pause_doubted_a_little_waits_in_proportion_to_the_doubt() {
        let graded = || {
            Segmenter::new(SegmenterConfig {
                sure_end: 0.9,
                ..doubting().config
            })
        };
        // Frames of silence when the final went, for a judge at `p`.
        let silence = |p: f32| {
            let mut s = graded();
            let (mut at, mut out) = (0, Vec::new());
            feed(&mut s, 40, true, &mut at);
            feed(&mut s, 1, false, &mut at);
            let want = speculate(&mut s, &mut at);
            s.decoded(
                want.ticket,
                heard("Go forward ten meters.", p),
                Instant::now(),
                &mut out,
            );
            for _ in 0..60 {
                feed(&mut s, 1, false, &mut at);
                s.drain_ready(Instant::now(), &mut out);
                if !finals(&out).is_empty() {
                    assert_eq!(finals(&out), ["Go forward ten meters."]);
                    // Held past the endpoint by the doubt's wait, or under `unsure_end`
                    // by the reading itself.
                    let by = match p {
                        p if p >= 0.9 => vec![],
                        p if p >= 0.5 => vec![Hold::Graded],
                        _ => vec![Hold::SentenceEnd { judge: false }],
                    };
                    assert_eq!(holds(&mut s), by, "judged {p}");
                    return Some(at as usize / FRAME - 40);
                }
            }
            None
        };
        let config = graded().config;
        let frames = |samples: usize| samples.div_ceil(FRAME);
        assert_eq!(
            silence(0.95),
            Some(frames(config.endpoint)),
            "sure: at the endpoint"
        );
        let half = config.endpoint + (config.turn_hold - config.endpoint) / 2;
        let waited = silence(0.7).expect("ends before the hold");
        assert!(
            waited > frames(config.endpoint) + 5 && waited.abs_diff(frames(half)) <= 1,
            "halfway doubted: about halfway to the hold, not {waited} frames"
        );
        assert_eq!(
            silence(0.4),
            Some(frames(config.turn_hold)),
            "unsure: the hold"
        );
    }

    /// With `quick_end`, a pause the judge is that sure of ends at `quick_endpoint`, its
    /// final ending in a period; one it is less sure of (but not doubtful) at the endpoint;
    /// words that go on are held whatever the probability.
    #[test]
    fn a_pause_the_judge_is_sure_of_ends_sooner() {
        let frames = |samples: usize| samples.div_ceil(FRAME);
        let quick = || {
            let config = doubting().config;
            let mut s = Segmenter::new(SegmenterConfig {
                quick_end: 0.9,
                quick_endpoint: config.endpoint / 2,
                ..config
            });
            // A decode as slow as the endpoint: the pause's speculative decode is asked
            // for at its first frames.
            s.config.lead = Lead {
                base: s.config.endpoint,
                ..Lead::default()
            };
            s
        };
        // Frames of silence when the final went, for `text` judged at `p`.
        let silence = |text: &str, p: f32| {
            let mut s = quick();
            let (mut at, mut out) = (0, Vec::new());
            feed(&mut s, 40, true, &mut at);
            feed(&mut s, 1, false, &mut at);
            let want = speculate(&mut s, &mut at);
            // The words come back at once, before the sooner end.
            assert!(at as usize / FRAME - 40 < frames(quick().config.quick_endpoint));
            s.decoded(want.ticket, heard(text, p), Instant::now(), &mut out);
            for _ in 0..80 {
                feed(&mut s, 1, false, &mut at);
                s.drain_ready(Instant::now(), &mut out);
                if let [last] = finals(&out)[..] {
                    assert!(last.ends_with('.'), "{last:?}");
                    return Some(at as usize / FRAME - 40);
                }
            }
            None
        };
        let config = quick().config;
        assert_eq!(
            silence("Go forward ten meters.", 0.95),
            Some(frames(config.quick_endpoint)),
            "sure: sooner"
        );
        assert_eq!(
            silence("Go forward ten meters.", 0.8),
            Some(frames(config.endpoint)),
            "not that sure: at the endpoint"
        );
        assert_eq!(
            silence("Go forward ten and", 0.95),
            Some(frames(config.turn_hold)),
            "words that go on: the hold"
        );
    }

    /// The partials' model reads a pause's words first, and its sentence-end probability
    /// is the one that judges the pause: doubted there, the pause is held though the
    /// speculative decode is sure; sure there, the turn ends at the endpoint though the
    /// speculative decode doubts. Voice after a judged pause wants a new judge.
    #[test]
    fn a_pause_is_judged_by_the_partials_model_before_its_speculative_decode() {
        let mut s = doubting();
        let mut at = 0;
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        assert_ne!(s.want().map(|w| w.kind), Some(DecodeKind::Speculative));
        feed(&mut s, 1, false, &mut at);
        let judge = s.want().expect("a judge");
        assert_eq!(judge.kind, DecodeKind::Judge);
        assert!(!judge.ticket.whole && judge.ticket.len >= 40 * FRAME);
        s.decoded(
            judge.ticket,
            heard("Now left click the research.", 0.2),
            Instant::now(),
            &mut out,
        );
        let want = speculate(&mut s, &mut at);
        let sure = heard("Now left click the research.", 0.95);
        s.decoded(want.ticket, sure, Instant::now(), &mut out);
        feed(&mut s, 30, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(s.open.is_some() && finals(&out).is_empty(), "held");
        assert_eq!(holds(&mut s), [Hold::SentenceEnd { judge: true }]);

        // The speaker goes on: the next pause is judged anew, sure this time.
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        let judge = s.want().expect("a judge");
        assert_eq!(judge.kind, DecodeKind::Judge);
        let whole = "Now left click the research facility.";
        s.decoded(judge.ticket, heard(whole, 0.9), Instant::now(), &mut out);
        let want = speculate(&mut s, &mut at);
        s.decoded(want.ticket, heard(whole, 0.2), Instant::now(), &mut out);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), [whole], "one final, at the endpoint");
        assert!(s.is_idle());
    }

    /// A judge the decoders take only after the endpoint (busy) still decides the pause:
    /// it waits for that verdict rather than take the speculative decode's reading, which
    /// would move the decision with the load. Shed (a wave), the speculative decode's
    /// reading decides at once.
    #[test]
    fn a_judge_taken_late_still_decides_and_a_shed_one_leaves_the_pause_its_own_decode() {
        // The speculative decode is sure; the judge, when it comes, is `judge`.
        let run = |judge: Option<f32>| {
            let mut s = doubting();
            let (mut at, mut out) = (0, Vec::new());
            feed(&mut s, 40, true, &mut at);
            feed(&mut s, 1, false, &mut at);
            assert_eq!(s.want().map(|w| w.kind), Some(DecodeKind::Judge));
            // The decoders take the speculative decode first (the judge left waiting).
            let want = loop {
                let room = Room {
                    partials: false,
                    judges: false,
                    ..s.room()
                };
                if judge.is_none() {
                    s.judge_shed();
                }
                if let Some(w) = s.want_in(&room) {
                    break w;
                }
                feed(&mut s, 1, false, &mut at);
            };
            let text = "Now left click the research.";
            s.decoded(want.ticket, heard(text, 0.95), Instant::now(), &mut out);
            feed(&mut s, 14, false, &mut at);
            s.drain_ready(Instant::now(), &mut out);
            let at_endpoint = finals(&out).len();
            if let Some(p) = judge {
                // Past the endpoint the judge is still wanted, and nothing else.
                let late = s.want().expect("the judge, late");
                assert_eq!(late.kind, DecodeKind::Judge);
                // Its verdict closes the pause at once, with no frame after it.
                s.decoded(late.ticket, heard(text, p), Instant::now(), &mut out);
            }
            (at_endpoint, finals(&out).len())
        };
        assert_eq!(
            run(Some(0.9)),
            (0, 1),
            "waits for the judge, then ends at once"
        );
        assert_eq!(run(Some(0.2)), (0, 0), "the late judge doubts: held");
        assert_eq!(
            run(None),
            (1, 1),
            "shed: the speculative decode's reading ends it"
        );
    }

    #[test]
    fn words_decoded_after_the_endpoint_end_the_turn_at_once_or_hold_it() {
        let mut s = holding();
        let mut at = 0;
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        let want = speculate(&mut s, &mut at);
        // The endpoint passes before the decode is back: held, not yet ended.
        feed(&mut s, 12, false, &mut at);
        assert!(s.open.is_some() && s.pending_since().is_none());
        s.decoded(want.ticket, "No".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["No."]);
        assert!(s.is_idle());

        // A number read out: held to the hold, then ended with a period (the speculative
        // decode is the final, no decode after the hold).
        out.clear();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "4-1-5", &mut at, &mut out);
        let held_at = s.open.as_ref().unwrap().silence / FRAME;
        feed(&mut s, 39 - held_at, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(finals(&out).is_empty() && s.ended.is_empty(), "held");
        feed(&mut s, 1, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["4-1-5."]);
        assert!(s.want().is_none());

        // The decoders shed the pause's speculative decode (load): no words will come, so
        // the pause ends at the endpoint as without the hold, and the final is decoded.
        out.clear();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculate(&mut s, &mut at);
        assert!(s.speculative_shed(), "the first shed of the pause");
        assert!(!s.speculative_shed(), "counted once");
        feed(&mut s, 12, false, &mut at);
        assert!(
            s.open.is_none() && s.ended.len() == 1,
            "ended at the endpoint"
        );
        let want = s.want().unwrap();
        assert_eq!(want.kind, DecodeKind::Final);
        s.decoded(
            want.ticket,
            "My number is 4".into(),
            Instant::now(),
            &mut out,
        );
        assert_eq!(finals(&out), ["My number is 4"], "as decoded");
    }

    #[test]
    fn a_lone_word_is_held_as_a_turn_opens_but_ends_at_once_inside_one() {
        let mut s = holding();
        let mut at = 0;
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "Front.", &mut at, &mut out);
        feed(&mut s, 30, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(s.open.is_some() && finals(&out).is_empty(), "held");
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "Front left.", &mut at, &mut out);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["Front left."]);

        // A word 200 ms after the turn's last final is the rest of it: ended at the endpoint.
        out.clear();
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "Tomorrow.", &mut at, &mut out);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["Tomorrow."]);

        // A new turn (two seconds later) that is a whole answer in one word: at the endpoint.
        out.clear();
        feed(&mut s, 125, false, &mut at);
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "No.", &mut at, &mut out);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["No."]);

        // Another word alone opening a turn: held to the hold, then ended with a period.
        out.clear();
        feed(&mut s, 125, false, &mut at);
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 1, false, &mut at);
        speculated(&mut s, "Production", &mut at, &mut out);
        let held_at = s.open.as_ref().unwrap().silence / FRAME;
        feed(&mut s, 39 - held_at, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(finals(&out).is_empty(), "held");
        feed(&mut s, 1, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["Production."]);
    }

    #[test]
    fn a_stale_or_failed_verdict_does_not_hold() {
        let mut s = judging();
        let mut at = 0;
        let mut audio = Vec::new();
        let mut out = Vec::new();
        feed(&mut s, 40, true, &mut at);
        let stale = ask(&mut s, &mut audio, &mut at);
        // Speech after the question makes the verdict stale: asked again at the next pause.
        feed(&mut s, 5, true, &mut at);
        s.judged(stale, Some(true), Instant::now(), &mut out);
        assert_eq!(s.open.as_ref().unwrap().verdict, Verdict::Unasked);
        let ticket = ask(&mut s, &mut audio, &mut at);
        // The model failed: silence decides, as without it, and the text stays as decoded.
        s.judged(ticket, None, Instant::now(), &mut out);
        speculated(&mut s, "Go there,", &mut at, &mut out);
        feed(&mut s, 12, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert_eq!(finals(&out), ["Go there,"]);
    }

    #[test]
    fn a_context_decode_that_leaves_no_words_of_its_own_is_done_again_alone() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        say(&mut s, 40, 12, "Hello there.", &mut at);
        feed(&mut s, 5, false, &mut at);
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        let want = s.want().unwrap();
        assert_ne!(want.ticket.context_from, 0);
        let mut out = Vec::new();
        s.decoded(want.ticket, "Hello there.".into(), Instant::now(), &mut out);
        assert!(out.is_empty());
        let again = s.want().unwrap();
        assert_eq!(again.kind, DecodeKind::Final);
        assert_eq!(again.ticket.context_from, 0);
        s.decoded(again.ticket, "Hi.".into(), Instant::now(), &mut out);
        assert_eq!(finals(&out), ["Hi."]);
    }

    fn recoveries(out: &[Emit]) -> Vec<(&str, Recovery)> {
        out.iter()
            .filter_map(|e| match e {
                Emit::Final(text, _, how) => Some((text.as_str(), *how)),
                Emit::Partial(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_final_that_hears_no_words_is_retried_alone_after_more_silence() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        let first = s.want().unwrap();
        assert_eq!(first.kind, DecodeKind::Final);
        let mut out = Vec::new();
        s.decoded(first.ticket, " ".into(), Instant::now(), &mut out);
        assert!(out.is_empty(), "no empty final");
        let retry = s.want().unwrap();
        assert_eq!(retry.kind, DecodeKind::Final);
        assert!(retry.ticket.retry);
        let (mut plain, mut again) = (Vec::new(), Vec::new());
        s.decode_input(&first, &mut plain);
        s.decode_input(&retry, &mut again);
        assert_eq!(again.len(), RETRY_LEAD + plain.len());
        assert!(again[..RETRY_LEAD].iter().all(|&x| x == 0.0));
        assert_eq!(again[RETRY_LEAD..], plain[..]);
        s.decoded(retry.ticket, "Six.".into(), Instant::now(), &mut out);
        assert_eq!(recoveries(&out), [("Six.", Recovery::Retried)]);
        assert!(s.is_idle());
    }

    /// An utterance whose first partial hears `partial`, up to the speculative decode in
    /// its pause, which it returns.
    fn partial_then_pause(
        s: &mut Segmenter,
        partial: &str,
        at: &mut u64,
        out: &mut Vec<Emit>,
    ) -> Want {
        feed(s, 12, true, at);
        let first = s.want().unwrap();
        assert_eq!(first.kind, DecodeKind::FirstPartial);
        s.decoded(first.ticket, partial.into(), Instant::now(), out);
        feed(s, 18, true, at);
        feed(s, 9, false, at);
        let speculative = s.want().unwrap();
        assert_eq!(speculative.kind, DecodeKind::Speculative);
        speculative
    }

    #[test]
    fn a_final_no_decode_hears_words_in_is_its_last_partial_or_wordless() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        let mut out = Vec::new();
        // A speculative decode in the pause hears nothing: the final goes straight to the
        // retry rather than decoding the same audio again.
        let speculative = partial_then_pause(&mut s, "Six", &mut at, &mut out);
        s.decoded(speculative.ticket, "".into(), Instant::now(), &mut out);
        feed(&mut s, 3, false, &mut at);
        let retry = s.want().unwrap();
        assert!(retry.ticket.retry);
        s.decoded(retry.ticket, "".into(), Instant::now(), &mut out);
        // Recovered from its partial, it still ends as a final: the platform answers sooner.
        assert_eq!(recoveries(&out), [("Six.", Recovery::Partial)]);

        // Without a partial that had words, the final is empty: nothing to send. In the
        // same turn, the first try has context, the next is alone, the last the retry.
        out.clear();
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        let mut tries = Vec::new();
        while let Some(want) = s.want() {
            tries.push((want.ticket.context_from != 0, want.ticket.retry));
            s.decoded(want.ticket, "".into(), Instant::now(), &mut out);
        }
        assert_eq!(tries, [(true, false), (false, false), (false, true)]);
        assert_eq!(recoveries(&out), [("", Recovery::Wordless)]);
        assert!(s.is_idle());
    }

    #[test]
    fn a_final_heard_as_a_sound_has_no_words_not_even_its_partials_or_a_retrys() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        let mut out = Vec::new();
        // The speculative decode in the pause is the final's: a sound.
        let invented = "I'm going to be in the room for the first time.";
        let speculative = partial_then_pause(&mut s, invented, &mut at, &mut out);
        s.decoded(
            speculative.ticket,
            Transcribed::sound(),
            Instant::now(),
            &mut out,
        );
        feed(&mut s, 3, false, &mut at);
        s.drain_ready(Instant::now(), &mut out);
        assert!(s.want().is_none(), "no retry");
        assert_eq!(recoveries(&out), [("", Recovery::Sound)]);
        assert!(s.is_idle());

        // A final decoded after the endpoint, the same: with the turn's earlier audio, then
        // alone, never retried.
        out.clear();
        feed(&mut s, 30, true, &mut at);
        feed(&mut s, 12, false, &mut at);
        let mut tries = Vec::new();
        while let Some(want) = s.want() {
            if want.kind == DecodeKind::Final {
                tries.push((want.ticket.context_from != 0, want.ticket.retry));
                s.decoded(want.ticket, Transcribed::sound(), Instant::now(), &mut out);
            } else {
                s.decoded(want.ticket, "Bye!".into(), Instant::now(), &mut out);
            }
        }
        assert_eq!(tries, [(true, false), (false, false)]);
        assert_eq!(recoveries(&out), [("", Recovery::Sound)]);
    }

    #[test]
    fn the_endpoint_runs_from_where_the_voice_fades_not_from_the_detectors_fall() {
        /// Feeds one frame of `amplitude` that the detector scores `score`.
        fn step(s: &mut Segmenter, at: &mut u64, amplitude: f32, score: f32) -> Heard {
            let frame = [amplitude; FRAME];
            let heard = s.hear(score, db(&frame), 60.0);
            *at += FRAME as u64;
            s.frame(&frame, heard, db(&frame), *at, Instant::now());
            heard
        }
        for fade_db in [FADE_DB, f32::INFINITY] {
            let mut s = Segmenter::new(SegmenterConfig {
                fade_db,
                ..config()
            });
            let mut at = 0;
            // A quiet voice is voice: the level is the utterance's own.
            for _ in 0..20 {
                assert_eq!(step(&mut s, &mut at, 0.003, 0.9), Heard::Voice);
            }
            // 10 dB under it is still voice.
            assert_eq!(step(&mut s, &mut at, 0.001, 0.9), Heard::Voice);
            // The score stays up after the last word while the sound has gone (40 dB under):
            // silence to the endpoint's clock, unless fading is off.
            let frames = s.config.endpoint.div_ceil(FRAME);
            for _ in 0..frames {
                let heard = step(&mut s, &mut at, 0.000_03, 0.9);
                let faded = fade_db.is_finite();
                assert_eq!(heard == Heard::Silence, faded);
            }
            assert_eq!(s.open.is_none(), fade_db.is_finite());
            assert_eq!(s.ended.len(), usize::from(fade_db.is_finite()));
        }
    }

    /// A quiet speaker (-50 dBFS, so the fade's line would fall at -80) followed by digital
    /// silence, which the detector hears with its dither (-70.8 dBFS) and may still score
    /// over `release`: the dither alone is silence, and the pause ends at the endpoint.
    #[test]
    fn after_a_quiet_speaker_the_dither_alone_is_silence() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        for _ in 0..40 {
            let frame = [0.003_f32; FRAME];
            let heard = s.hear(0.9, db(&frame), 40.0);
            at += FRAME as u64;
            s.frame(&frame, heard, db(&frame), at, Instant::now());
        }
        let dither_db = 20.0 * (DITHER / 12f32.sqrt()).log10();
        let frames = s.config.endpoint.div_ceil(FRAME);
        for _ in 0..frames {
            // What the detector scored the dithered zeros after a quiet recording.
            let heard = s.hear(0.38, dither_db + 0.3, 0.3);
            assert_eq!(heard, Heard::Silence);
            at += FRAME as u64;
            s.frame(&[0.0; FRAME], heard, dither_db, at, Instant::now());
        }
        assert!(
            s.open.is_none() && s.ended.len() == 1,
            "ended at the endpoint"
        );
    }

    #[test]
    fn a_voice_dipping_under_the_threshold_is_not_cut_but_its_end_is_not_delayed() {
        let mut s = Segmenter::new(config());
        let mut at = 0;
        feed(&mut s, 20, true, &mut at);
        let weak = [0.05; FRAME];
        // Longer than the endpoint under the threshold, but over the release: still open.
        for _ in 0..20 {
            at += FRAME as u64;
            s.frame(&weak, Heard::Weak, db(&weak), at, Instant::now());
        }
        assert!(s.open.is_some());
        feed(&mut s, 20, true, &mut at);
        // The score falls through the release 3 frames after the word: the endpoint runs
        // from the last frame at the threshold.
        for _ in 0..3 {
            at += FRAME as u64;
            s.frame(&weak, Heard::Weak, db(&weak), at, Instant::now());
        }
        feed(&mut s, 9, false, &mut at);
        assert!(
            s.open.is_none(),
            "closed 12 frames after the last voiced one"
        );
        assert_eq!(s.ended.len(), 1);
    }
}
