//! The rule that turns a channel's facts ([`Need`]) into the decode it wants ([`Want`]):
//! the one place that decides when a pause is judged, when a speculative decode starts,
//! when partials come, and how a final's decode runs (model, beam, context) and by when it
//! is due. Pure: the same facts and room give the same want.

use std::time::Instant;

use super::super::cost::CostModel;
use super::super::decode::{
    DecodeKind, Due, FRAME, Lead, Need, Pick, Piece, RATE, Room, State, Ticket, Want,
    samples_as_time,
};
use super::super::{Speakers, Tier};

/// Silence after which the partials' model reads a pause's words to judge it: the first
/// silent frame, so that its verdict is there before the endpoint. It reads that much of
/// the pause, however long the pause has grown by the time a decoder takes it: the
/// probability moves with the silence read after the words (BENCHMARKS.md, "The partials'
/// model as the judge"), and the verdict must not move with the load.
const JUDGE_AT: usize = FRAME;

/// The one decode a channel with `need` wants now, if any, with what the decoders have
/// `room` for (the scheduler's knobs, [`super::Knobs::room`]).
pub(crate) fn want(need: &Need, room: &Room) -> Option<Want> {
    // A partial's (and a judge's): the utterance as it is, alone, greedy, the partials' model.
    let partial = |utterance, len| Ticket {
        utterance,
        len,
        context_from: 0,
        whole: false,
        retry: false,
        beam: Pick::PARTIAL.beam,
        quick: Pick::PARTIAL.quick,
    };
    match need.state {
        State::Ended {
            piece,
            retry,
            since,
            voice_end,
        } => {
            let times = (since, voice_end);
            let (want, _) = whole(DecodeKind::Final, need, room, &piece, times, retry);
            Some(want)
        }
        State::Paused {
            piece,
            silence,
            quiet,
            decoded,
            judge,
            since,
            paused_at,
        } => {
            // First the partials' model reads the words to their end, where its
            // sentence-end probability judges the pause: due by the endpoint, so it comes
            // before the pause's speculative decode, which may start beside it
            // (`InFlight`). Taken late (the decoders busy past the endpoint), it is still
            // wanted: the pause waits for this verdict rather than take the finals' model's
            // reading, which holds fewer pauses (BENCHMARKS.md, "A judge taken late, and one shed").
            // The ladder keeps it after partials ([`Room::judges`]).
            if judge && room.judges && silence >= JUDGE_AT {
                let len = piece.len - (silence - JUDGE_AT).min(piece.len);
                return Some(Want {
                    speakers: need.speakers,
                    kind: DecodeKind::Judge,
                    since: paused_at,
                    due: Some(Due {
                        at: paused_at + samples_as_time(need.endpoint),
                        seconds: len as f64 / RATE as f64,
                        alone: len as f64 / RATE as f64,
                        quickens: false,
                    }),
                    ticket: partial(piece.id, len),
                });
            }
            if decoded {
                return None;
            }
            // A speculative decode starts so that it is ready about when the pause may
            // end (sooner where the judge may be sure), and never before two frames of it.
            let times = (since, paused_at);
            let (want, pick) = whole(DecodeKind::Speculative, need, room, &piece, times, false);
            let start_at = need.soonest.saturating_sub(pick.lead).max(2 * FRAME);
            (quiet >= start_at).then_some(want)
        }
        State::Voiced {
            id,
            len,
            heard,
            decoded,
            words,
            first,
            every,
            since,
        } => {
            // The first partial soon after the onset (and again while the decodes hear no
            // words), then one per `every` of new audio.
            let kind = match words {
                false => (heard >= first && (decoded == 0 || len - decoded >= first / 2))
                    .then_some(DecodeKind::FirstPartial),
                true => (len - decoded >= every).then_some(DecodeKind::Partial),
            };
            kind.map(|kind| Want {
                speakers: need.speakers,
                kind,
                since,
                due: None,
                ticket: partial(id, len),
            })
        }
    }
}

/// How long before the endpoint the end-of-turn model is asked, so that its verdict (about
/// 50 ms, BENCHMARKS.md "The audio model") is there when the final is.
const TURN_LEAD: usize = 100 * RATE / 1000;

/// Whether the end-of-turn model (when on) hears a pause of `silence` samples on a channel
/// whose endpoint is `endpoint`: nearly the endpoint, never before two frames.
pub(crate) fn judges_turn(silence: usize, endpoint: usize) -> bool {
    silence >= endpoint.saturating_sub(TURN_LEAD).max(2 * FRAME)
}

/// Which of the `pauses` waiting for the end-of-turn model (a channel's key, its silence
/// so far) it hears next: the longest, whose final is held longest for the verdict.
pub(crate) fn next_turn(pauses: impl IntoIterator<Item = (usize, usize)>) -> Option<usize> {
    pauses
        .into_iter()
        .max_by_key(|&(key, silence)| (silence, std::cmp::Reverse(key)))
        .map(|(key, _)| key)
}

/// Whether the end-of-turn model's probability `p` of a finished turn ends it.
pub(crate) fn turn_complete(p: f32) -> bool {
    p >= 0.5
}

/// A decode of `piece` that may become its final (`kind`: the final, or a pause's
/// speculative decode), wanted since `times.0`, its voice ended at `times.1`: its model, beam
/// and context ([`pick_context`]) and when it is due; with its pick, whose lead says when a
/// speculative decode starts.
fn whole(
    kind: DecodeKind,
    need: &Need,
    room: &Room,
    piece: &Piece,
    (since, voice_end): (Instant, Instant),
    retry: bool,
) -> (Want, Pick) {
    let (context_from, pick, reads) = pick_context(need, room, piece, retry);
    let want = Want {
        speakers: need.speakers,
        kind,
        since,
        due: Some(due(need, room, pick, voice_end, (reads, piece.own))),
        ticket: Ticket {
            utterance: piece.id,
            len: piece.len,
            context_from,
            whole: true,
            retry,
            beam: pick.beam,
            quick: pick.quick,
        },
    };
    (want, pick)
}

/// How a final's decode of `piece` runs ([`pick`]), with the turn's context or without
/// it: without for a `retry` (its first decode heard no words: a second try reads other
/// input, alone after more silence) and where a decode with context left it no words of
/// its own (rather than risk losing them), and where only so would the finals' model have
/// the final ready in time (context goes before the model); and the samples the decode
/// reads.
fn pick_context(need: &Need, room: &Room, piece: &Piece, retry: bool) -> (u64, Pick, usize) {
    if retry || piece.context_took_all {
        return (0, pick(need, room, piece.own), piece.own);
    }
    let pick = pick(need, room, piece.with_context);
    if pick.quick && piece.context_from != 0 {
        let alone = self::pick(need, room, piece.own);
        if !alone.quick {
            return (0, alone, piece.own);
        }
    }
    (piece.context_from, pick, piece.with_context)
}

/// How a final's decode of `reads` samples (context and padding included) runs
/// ([`Lead::for_final`]), at `room`'s lead.
fn pick(need: &Need, room: &Room, reads: usize) -> Pick {
    let lead = Lead {
        beam: room.lead.beam.filter(|_| room.beam),
        quick: quickens(need, room),
        ..room.lead
    };
    lead.for_final(reads, need.endpoint)
}

/// The partials' model's line where this channel's finals may fall back to it: the
/// ladder may shed the finals' model, the channel has a deadline and both models speak
/// its language.
fn quickens(need: &Need, room: &Room) -> Option<(usize, usize)> {
    room.lead
        .quick
        .filter(|_| need.deadline && need.speakers == Speakers::Both)
}

/// When a final whose voice ended at `voice_end` is needed ([`Due`]), decoded as `pick`
/// says, reading `reads` samples, `alone` of them its own.
fn due(
    need: &Need,
    room: &Room,
    pick: Pick,
    voice_end: Instant,
    (reads, alone): (usize, usize),
) -> Due {
    let after = samples_as_time(need.endpoint) + samples_as_time(room.lead.budget);
    Due {
        at: voice_end + after,
        seconds: reads as f64 / RATE as f64,
        alone: alone as f64 / RATE as f64,
        quickens: !pick.quick && quickens(need, room).is_some(),
    }
}

impl Lead {
    /// A final's decode alone, by the finals' model, greedy and with its beam, with a 10 ms
    /// margin; by the partials' model if `quick` (a final may fall back to it).
    pub fn of(cost: &CostModel, quick: bool) -> Self {
        let samples = |s: f64| (s * RATE as f64).round().max(0.0) as usize;
        let line = |at: &dyn Fn(f64) -> f64| (samples(at(0.0) + 0.010), samples(at(1.0) - at(0.0)));
        let (base, per_second) = line(&|s| cost.final_alone(Tier::Finals, s, false));
        Self {
            base,
            per_second,
            beam: (cost.beam() > 1).then(|| line(&|s| cost.final_alone(Tier::Finals, s, true))),
            quick: quick.then(|| line(&|s| cost.final_alone(Tier::Partials, s, false))),
            ..Self::default()
        }
    }

    /// How a final's decode of `audio` samples runs before an `endpoint`, started at the
    /// earliest a speculative decode may (two frames into the pause) if it must: with the
    /// beam only where that decode is ready by the endpoint (the beam never delays a
    /// final: at the customer's 200 ms it takes short utterances, at the assistant's
    /// 1000 ms nearly all, BENCHMARKS.md "Beam search for finals"); by the finals' model
    /// greedily where it is ready within `budget` of the endpoint; else by the partials'
    /// model, where there is one, so a long utterance's final is not later than the
    /// platform's time to final allows on a machine whose finals' model is slow for it
    /// (BENCHMARKS.md, "A final's model by its deadline").
    pub fn for_final(&self, audio: usize, endpoint: usize) -> Pick {
        let line = |(base, per_second): (usize, usize)| base + per_second * audio / RATE;
        let earliest = 2 * FRAME;
        if let Some(beam) = self.beam.map(line)
            && beam + earliest <= endpoint
        {
            return Pick {
                lead: beam,
                beam: true,
                quick: false,
            };
        }
        let greedy = line((self.base, self.per_second));
        match self.quick.map(line) {
            Some(quick) if greedy + earliest > endpoint + self.budget => Pick {
                lead: quick,
                beam: false,
                quick: true,
            },
            _ => Pick {
                lead: greedy,
                beam: false,
                quick: false,
            },
        }
    }
}

impl Tier {
    /// The metrics' label: `partials` (tiny.en by default) or `finals` (base).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Partials => "partials",
            Self::Finals => "finals",
        }
    }

    /// The model a decode of `kind` is for when nothing is shed.
    pub fn of(kind: DecodeKind) -> Self {
        match kind {
            DecodeKind::Final | DecodeKind::Speculative => Self::Finals,
            DecodeKind::FirstPartial | DecodeKind::Partial | DecodeKind::Judge => Self::Partials,
        }
    }
}

impl Want {
    /// The model this decode is for when the ladder sheds none: the one model that
    /// speaks the channel's language, if only one does.
    pub fn tier(&self) -> Tier {
        match (self.speakers, self.ticket.quick) {
            (Speakers::Only(tier), _) => tier,
            (Speakers::Both, true) => Tier::Partials,
            (Speakers::Both, false) => Tier::of(self.kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A paused utterance of `own` samples that may read `context` more before it.
    fn paused(endpoint: usize, deadline: bool, own: usize, context: usize) -> (Need, Piece) {
        let piece = Piece {
            id: 2,
            len: own,
            own,
            context_from: 1,
            with_context: own + context,
            context_took_all: false,
        };
        let now = Instant::now();
        let state = State::Paused {
            piece,
            silence: endpoint,
            quiet: endpoint,
            decoded: false,
            judge: false,
            since: now,
            paused_at: now,
        };
        let need = Need {
            endpoint,
            soonest: endpoint,
            deadline,
            speakers: Speakers::Both,
            state,
        };
        (need, piece)
    }

    /// Room where a final's decode by the finals' model takes as long as the audio it
    /// reads (late when longer than the endpoint, the budget 0, less the two frames it
    /// starts into the pause) and the partials' model none.
    fn slow_finals() -> Room {
        Room::all(Lead {
            base: 0,
            per_second: RATE,
            quick: Some((0, 0)),
            budget: 0,
            ..Lead::default()
        })
    }

    #[test]
    fn context_goes_before_the_finals_model_for_a_final_due_in_time() {
        let room = slow_finals();
        let (own, context) = (40 * FRAME, 30 * FRAME);
        let pick = |endpoint, deadline| {
            let (need, piece) = paused(endpoint, deadline, own, context);
            let (from, pick, reads) = pick_context(&need, &room, &piece, false);
            (from, pick.quick, reads)
        };
        // Late with its context, on time without it: the context goes, the model stays.
        assert_eq!(pick(own + 2 * FRAME, true), (0, false, own));
        // Late either way: the partials' model takes it with its context.
        assert_eq!(pick(own, true), (1, true, own + context));
        // On time with its context: both stay.
        assert_eq!(
            pick(own + context + 2 * FRAME, true),
            (1, false, own + context)
        );
        // The assistant's channel keeps its context and model, late or not.
        assert_eq!(pick(own, false), (1, false, own + context));
    }

    /// The end-of-turn model hears a pause about 100 ms before its endpoint (never before
    /// two frames), the longest pause first (the lower key between equals), and ends the
    /// turn from a probability of one half.
    #[test]
    fn the_turn_model_hears_the_longest_pause_near_its_endpoint() {
        let endpoint = 200 * RATE / 1000;
        assert!(!judges_turn(endpoint - TURN_LEAD - 1, endpoint));
        assert!(judges_turn(endpoint - TURN_LEAD, endpoint));
        assert!(!judges_turn(FRAME, FRAME));
        assert!(judges_turn(2 * FRAME, FRAME));
        assert_eq!(next_turn([(0, 1_600), (1, 3_200), (2, 800)]), Some(1));
        assert_eq!(next_turn([(3, 1_600), (1, 1_600)]), Some(1));
        assert_eq!(next_turn([]), None);
        assert!(turn_complete(0.5) && !turn_complete(0.49));
    }

    /// A final's second try (its first decode heard no words), and one whose decode after
    /// its context left it no words of its own, read the utterance alone, however much room
    /// there is for the context.
    #[test]
    fn a_retry_and_a_decode_the_context_took_every_word_from_read_the_utterance_alone() {
        let room = Room::all(Lead::default());
        let (own, context) = (40 * FRAME, 30 * FRAME);
        let (need, piece) = paused(200 * FRAME, true, own, context);
        assert_eq!(pick_context(&need, &room, &piece, false).0, 1);
        assert_eq!(pick_context(&need, &room, &piece, true).0, 0);
        let took_all = Piece {
            context_took_all: true,
            ..piece
        };
        let (from, _, reads) = pick_context(&need, &room, &took_all, false);
        assert_eq!((from, reads), (0, own));
        let ended = Need {
            state: State::Ended {
                piece,
                retry: true,
                since: Instant::now(),
                voice_end: Instant::now(),
            },
            ..need
        };
        let retry = want(&ended, &room).expect("the retry");
        assert_eq!((retry.ticket.context_from, retry.ticket.retry), (0, true));
        let due = retry.due.expect("due");
        assert_eq!(due.seconds, own as f64 / RATE as f64);
    }

    /// A call in a language only the finals' model speaks (Spanish, with tiny.en for
    /// partials): its partials, its pauses' judges and its finals all want that model, and
    /// a final too long for its budget keeps it rather than fall back to a model that
    /// cannot write the language.
    #[test]
    fn a_language_one_model_speaks_takes_that_model_for_every_decode() {
        use super::super::super::Tier;
        let room = slow_finals();
        let (mut need, _) = paused(10 * FRAME, true, 40 * FRAME, 0);
        let tiers = |need: &Need| {
            let speculative = want(need, &room).expect("a speculative decode");
            assert_eq!(speculative.kind, DecodeKind::Speculative);
            let mut judged = *need;
            if let State::Paused { judge, silence, .. } = &mut judged.state {
                (*judge, *silence) = (true, FRAME);
            }
            let judge = want(&judged, &room).expect("a judge");
            assert_eq!(judge.kind, DecodeKind::Judge);
            (speculative.ticket.quick, speculative.tier(), judge.tier())
        };
        // Both speak it: the final, too long for the finals' model, takes the partials'.
        assert_eq!(tiers(&need), (true, Tier::Partials, Tier::Partials));
        need.speakers = Speakers::Only(Tier::Finals);
        assert_eq!(tiers(&need), (false, Tier::Finals, Tier::Finals));
        let voiced = Need {
            state: State::Voiced {
                id: 3,
                len: 20 * FRAME,
                heard: 20 * FRAME,
                decoded: 0,
                words: false,
                first: 10 * FRAME,
                every: 10 * FRAME,
                since: Instant::now(),
            },
            ..need
        };
        let partial = want(&voiced, &room).expect("a first partial");
        assert_eq!(
            (partial.kind, partial.tier()),
            (DecodeKind::FirstPartial, Tier::Finals)
        );
    }

    #[test]
    fn a_pause_is_judged_before_its_speculative_decode_however_late_and_only_while_judges_run() {
        let room = Room::all(Lead::default());
        let (mut need, _) = paused(12 * FRAME, true, 40 * FRAME, 0);
        let at = |need: &Need, silence: usize, room: &Room| {
            let mut need = *need;
            if let State::Paused {
                silence: s, quiet, ..
            } = &mut need.state
            {
                (*s, *quiet) = (silence, silence);
            }
            want(&need, room).map(|w| w.kind)
        };
        if let State::Paused { judge, .. } = &mut need.state {
            *judge = true;
        }
        assert_eq!(at(&need, 0, &room), None);
        assert_eq!(at(&need, FRAME, &room), Some(DecodeKind::Judge));
        // Once the speculative decode is due too (the default lead starts it about 7
        // frames into this pause), the judge still comes first.
        assert_eq!(at(&need, 10 * FRAME, &room), Some(DecodeKind::Judge));
        // The ladder sheds partials: the judge is still wanted.
        let no_partials = Room {
            partials: false,
            ..room
        };
        assert_eq!(at(&need, FRAME, &no_partials), Some(DecodeKind::Judge));
        let shed = Room {
            judges: false,
            ..no_partials
        };
        assert_eq!(at(&need, FRAME, &shed), None);
        assert_eq!(at(&need, 10 * FRAME, &shed), Some(DecodeKind::Speculative));
        // Past the endpoint the judge is late and still wanted first: the pause waits for
        // its verdict.
        assert_eq!(at(&need, 12 * FRAME, &room), Some(DecodeKind::Judge));
        // Once the speculative decode is back, only the judge is wanted, then nothing.
        if let State::Paused { decoded, .. } = &mut need.state {
            *decoded = true;
        }
        assert_eq!(at(&need, 12 * FRAME, &room), Some(DecodeKind::Judge));
        assert_eq!(at(&need, 12 * FRAME, &shed), None);
    }

    /// A judge taken late (the decoders busy) reads what one taken at the pause's first
    /// silent frame reads: the words and that frame, not the silence since.
    #[test]
    fn a_judge_reads_the_same_audio_however_late_a_decoder_takes_it() {
        let room = Room::all(Lead::default());
        let words = 40 * FRAME;
        let judged = |silence: usize| {
            let (mut need, _) = paused(12 * FRAME, true, words + silence, 0);
            if let State::Paused {
                silence: s,
                quiet,
                judge,
                ..
            } = &mut need.state
            {
                (*s, *quiet, *judge) = (silence, silence, true);
            }
            let w = want(&need, &room).expect("a judge");
            assert_eq!(w.kind, DecodeKind::Judge);
            w.ticket.len
        };
        assert_eq!(judged(FRAME), words + FRAME);
        assert_eq!(judged(9 * FRAME), words + FRAME);
        assert_eq!(judged(FRAME + 7), words + FRAME);
    }
}
