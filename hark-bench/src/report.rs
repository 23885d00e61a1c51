//! Turns call logs into per-utterance measurements and percentile summaries.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

use serde::{Deserialize, Deserializer, Serialize};

use crate::client::{Received, Refusal};
use crate::conversation::{Conversation, Utterance};
use crate::protocol::{Channel, PIPELINE_FAILED, ServerMessage, TranscriptType};
use crate::wer;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UtteranceResult {
    pub channel: Channel,
    pub recording: String,
    pub onset_s: f64,
    pub offset_s: f64,
    /// First transcript (partial or final) after the words start.
    pub first_partial_ms: Option<f64>,
    /// Partials received for the utterance (none while a server sheds them under load).
    pub partials: usize,
    /// End of the words to the last final of the utterance.
    pub time_to_final_ms: Option<f64>,
    pub reference: String,
    pub finals: Vec<String>,
    pub words: usize,
    pub word_errors: usize,
    /// Words from the other channel's speech that showed up in this channel's finals.
    pub leaked_words: usize,
    /// Words in the last partial that the final that replaced it dropped.
    pub partial_words_lost: usize,
    /// Finals that repeat an earlier final word for word.
    pub duplicate_finals: usize,
    /// Time to final plus the platform's wait for how the turn's last final ends: when
    /// the assistant may answer (see [`platform_wait_ms`]).
    pub reply_wait_ms: Option<f64>,
    /// Whether the turn's last final ends in . ? ! (the platform answers 0.1 s after it).
    pub ends_terminal: Option<bool>,
    /// Whether the turn's last final ends in . ? ! or a digit: the platform answers within
    /// 0.45 s of it, not 1.5 s. (Absent from older reports: filled again by `--rescore`.)
    #[serde(default)]
    pub ends_answerable: Option<bool>,
    /// Pauses inside the words (`conversation::inner_pauses`, or the corpus's
    /// `pauses.tsv`): where the speaker is silent and the turn goes on. (Absent from older
    /// reports: 0.)
    #[serde(default)]
    pub inner_pauses: usize,
    /// Those pauses, (start, end) in seconds from the call's start: where the words stop
    /// inside the utterance, so a replay of the run (the server's simulator) can give its
    /// channels the same stretches of voice. (Absent from older reports: empty.)
    #[serde(default)]
    pub pauses_s: Vec<(f64, f64)>,
    /// Inner pauses in which the platform would have let the assistant answer: a final
    /// other than the turn's last came in or before the pause, and the platform's wait for
    /// it ([`platform_wait_ms`]) was up before the speaker resumed ([`premature_ends`]).
    /// (Schema 4 and older: finals before the last ending in . ? !, now
    /// `terminal_before_last`.)
    pub premature_ends: usize,
    /// Finals before the turn's last that end in . ? !, whether or not a pause follows
    /// them. (Absent from older reports: filled again by `--rescore`.)
    #[serde(default)]
    pub terminal_before_last: usize,
    /// Words said again right after themselves in the finals, more than the reference
    /// does: the model's hallucinated repeats ("the the the").
    pub repeated_words: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stats {
    pub count: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Stats {
    pub fn of(mut values: Vec<f64>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        // Nearest rank.
        let rank =
            |p: f64| values[((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Self {
            count: values.len(),
            p50: rank(0.50),
            p95: rank(0.95),
            p99: rank(0.99),
            max: values[values.len() - 1],
            mean: values.iter().sum::<f64>() / values.len() as f64,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChannelTotals {
    pub words: usize,
    pub word_errors: usize,
    pub wer: f64,
    pub leaked_words: usize,
    pub partial_words_lost: usize,
    pub duplicate_finals: usize,
    pub missing_finals: usize,
    /// Turns whose last final ends in . ? !, of the turns that got a final.
    pub turns_ending_terminal: usize,
    /// Turns whose last final ends in . ? ! or a digit (the platform answers within
    /// 0.45 s), of the turns that got a final. (Absent from older reports: filled again by
    /// `--rescore`.)
    #[serde(default)]
    pub turns_ending_answerable: usize,
    pub turns_with_final: usize,
    /// Pauses inside the channel's utterances. (Absent from older reports: 0.)
    #[serde(default)]
    pub inner_pauses: usize,
    /// Of `inner_pauses`, those in which the platform would have answered
    /// ([`UtteranceResult::premature_ends`]).
    pub premature_ends: usize,
    /// Finals before their turn's last that end in . ? ! (schema 4's `premature_ends`).
    /// (Absent from older reports: filled again by `--rescore`.)
    #[serde(default)]
    pub terminal_before_last: usize,
    pub repeated_words: usize,
    /// The channel's own time to final: the customer's is what the platform's reply waits
    /// on, the assistant's only when its transcript is written. (Absent from older reports:
    /// filled again by `--rescore`.)
    #[serde(default)]
    pub time_to_final_ms: Stats,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallResult {
    pub call: usize,
    pub utterances: Vec<UtteranceResult>,
    pub time_to_final_ms: Stats,
    pub first_partial_ms: Stats,
    pub customer: ChannelTotals,
    pub assistant: ChannelTotals,
    /// `error` messages the server sent, as "code: message".
    pub errors: Vec<String>,
    pub close_code: Option<u16>,
    pub close_reason: Option<String>,
    pub transport_error: Option<String>,
    /// The server refused the call at the upgrade (its status and body): it never opened,
    /// and none of its figures counts. (Schema 2 wrote `true` or `false` here: read as a
    /// 503 without a body, or none; older reports lack it: none.)
    #[serde(default, deserialize_with = "refusal_or_flag")]
    pub refused: Option<Refusal>,
    /// Text messages that were not protocol JSON.
    pub unparseable: usize,
    /// Transcripts on a channel before anyone spoke on it.
    pub stray_transcripts: usize,
    /// A real call's WER per channel over the whole call (its utterances' references are
    /// unknown); counted in `customer`/`assistant`.
    pub whole_call: Vec<WholeCallWer>,
}

/// A saved call's `refused`: a [`Refusal`], or schema 2's flag.
fn refusal_or_flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Refusal>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Saved {
        Flag(bool),
        Refusal(Refusal),
    }
    Ok(match Option::<Saved>::deserialize(d)? {
        Some(Saved::Refusal(r)) => Some(r),
        Some(Saved::Flag(true)) => Some(Refusal {
            status: 503,
            body: String::new(),
        }),
        Some(Saved::Flag(false)) | None => None,
    })
}

/// The calls refused at the upgrade with one status: how many, and the first one's body
/// (a server's bodies may differ in their figures from one refusal to the next).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusalCount {
    pub status: u16,
    pub count: usize,
    pub body: String,
}

/// The refused calls by status, lowest first.
pub fn refusals(calls: &[CallResult]) -> Vec<RefusalCount> {
    let mut by: Vec<RefusalCount> = Vec::new();
    for r in calls.iter().filter_map(|c| c.refused.as_ref()) {
        match by.iter_mut().find(|b| b.status == r.status) {
            Some(b) => b.count += 1,
            None => by.push(RefusalCount {
                status: r.status,
                count: 1,
                body: r.body.clone(),
            }),
        }
    }
    by.sort_by_key(|b| b.status);
    by
}

/// `HTTP 503 ×12: "body"; HTTP 404 ×1: "body"`: the refusals in one line.
pub fn describe_refusals(refusals: &[RefusalCount]) -> String {
    refusals
        .iter()
        .map(|r| {
            if r.body.is_empty() {
                format!("HTTP {} ×{} (no body)", r.status, r.count)
            } else {
                format!("HTTP {} ×{}: \"{}\"", r.status, r.count, r.body)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WholeCallWer {
    pub channel: Channel,
    pub reference: String,
    /// All the channel's finals, in order.
    pub transcript: String,
    pub words: usize,
    pub word_errors: usize,
}

impl UtteranceResult {
    /// The utterance's finals as one transcript, as its WER reads them.
    pub fn transcript(&self) -> String {
        self.finals.join(" ")
    }

    /// Sets how the turn's finals end (`ends_terminal`, `ends_answerable`,
    /// `terminal_before_last`) from `finals`.
    pub fn endings(&mut self) {
        let last = self.finals.last().map(String::as_str);
        self.ends_terminal = last.map(ends_terminal);
        self.ends_answerable = last.map(ends_answerable);
        self.terminal_before_last = self
            .finals
            .iter()
            .rev()
            .skip(1)
            .filter(|f| ends_terminal(f))
            .count();
    }

    /// Sets `words` and `word_errors` from `reference` and `finals`. A call played whole
    /// (`whole_call`) does not know its utterances' references: its WER is counted over
    /// the whole call ([`WholeCallWer`]) and its utterances count none.
    pub fn score(&mut self, whole_call: bool) {
        (self.words, self.word_errors) = if whole_call {
            (0, 0)
        } else {
            score(&self.reference, &self.transcript())
        };
    }
}

impl WholeCallWer {
    pub fn new(channel: Channel, reference: String, transcript: String) -> Self {
        let (words, word_errors) = score(&reference, &transcript);
        Self {
            channel,
            reference,
            transcript,
            words,
            word_errors,
        }
    }
}

/// The words of `reference` and the word errors of `transcript` against it.
fn score(reference: &str, transcript: &str) -> (usize, usize) {
    (
        wer::normalize(reference).len(),
        wer::word_errors(reference, transcript),
    )
}

impl CallResult {
    /// The call ended in a failure rather than by the client hanging up.
    pub fn failed(&self) -> bool {
        self.refused.is_none()
            && (!self.errors.is_empty()
                || self.transport_error.is_some()
                || self.unparseable > 0
                || self.close_reason.as_deref() == Some(PIPELINE_FAILED)
                || self.close_code.is_some_and(|c| c != 1000))
    }
}

/// Measures one call against the conversation it played, whose first audio frame went out
/// at `t0`.
pub fn analyze(call: usize, conv: &Conversation, log: &Received, t0: Instant) -> CallResult {
    let secs = |samples: usize| samples as f64 / f64::from(conv.rate);
    let at = |i: &Instant| i.saturating_duration_since(t0).as_secs_f64();
    let mut utterances = Vec::new();
    let mut stray = 0;
    let whole_call = conv.call_references.is_some();
    for channel in [Channel::Customer, Channel::Assistant] {
        // A refused call was never spoken: nothing of it is missing.
        let own: Vec<(usize, &Utterance)> = conv
            .utterances
            .iter()
            .enumerate()
            .filter(|(_, u)| u.channel == channel && log.refused.is_none())
            .collect();
        let transcripts: Vec<(f64, &str, TranscriptType)> = log
            .messages
            .iter()
            .filter_map(|(t, m)| match m {
                ServerMessage::TranscriberResponse {
                    transcription,
                    channel: c,
                    transcript_type,
                } if *c == channel => Some((at(t), transcription.as_str(), *transcript_type)),
                _ => None,
            })
            .collect();
        let first_onset = own.first().map_or(f64::INFINITY, |(_, u)| secs(u.onset));
        stray += transcripts
            .iter()
            .filter(|(t, ..)| *t < first_onset)
            .count();
        let bounds = windows(&own, &transcripts, secs);
        let mut previous_final: Option<String> = None;
        for (k, (index, u)) in own.iter().enumerate() {
            let start = secs(u.onset);
            let (lo, hi) = (bounds[k], bounds[k + 1]);
            let window: Vec<&(f64, &str, TranscriptType)> = transcripts
                .iter()
                .filter(|(t, ..)| *t >= lo && *t < hi)
                .collect();
            let first_partial_ms = window.first().map(|(t, ..)| (t - start) * 1000.0);
            let finals: Vec<(f64, String)> = window
                .iter()
                .filter(|(_, _, kind)| *kind == TranscriptType::Final)
                .map(|(t, text, _)| (*t, text.to_string()))
                .collect();
            let time_to_final_ms = finals.last().map(|(t, _)| (t - secs(u.offset)) * 1000.0);
            let last_text = finals.last().map(|(_, f)| f.as_str());
            let reply_wait_ms = time_to_final_ms
                .zip(last_text)
                .map(|(ttf, f)| ttf + platform_wait_ms(f));
            let pauses: Vec<(f64, f64)> =
                u.pauses.iter().map(|&(a, b)| (secs(a), secs(b))).collect();
            let timed: Vec<(f64, &str)> = finals.iter().map(|(t, f)| (*t, f.as_str())).collect();
            let premature = premature_ends(&timed, &pauses);
            let text = finals
                .iter()
                .map(|(_, f)| f.as_str())
                .collect::<Vec<_>>()
                .join(" ");

            let mut lost = 0;
            let mut last_partial: Option<&str> = None;
            for (_, text, kind) in &window {
                match kind {
                    TranscriptType::Partial => last_partial = Some(text),
                    TranscriptType::Final => {
                        if let Some(p) = last_partial.take() {
                            lost += missing_words(p, text);
                        }
                    }
                }
            }
            let mut duplicates = 0;
            for (_, f) in &finals {
                let norm = wer::normalize(f).join(" ");
                if previous_final.as_deref() == Some(norm.as_str()) {
                    duplicates += 1;
                }
                previous_final = Some(norm);
            }
            // The other side's words around this turn.
            let neighbours: Vec<&str> = [index.checked_sub(1), Some(index + 1)]
                .into_iter()
                .flatten()
                .filter_map(|i| conv.utterances.get(i))
                .filter(|n| n.channel != channel)
                .map(|n| n.reference.as_str())
                .collect();
            let mut result = UtteranceResult {
                channel,
                recording: u.recording.clone(),
                onset_s: start,
                offset_s: secs(u.offset),
                first_partial_ms,
                partials: window
                    .iter()
                    .filter(|(_, _, kind)| *kind == TranscriptType::Partial)
                    .count(),
                time_to_final_ms,
                reference: u.reference.clone(),
                words: 0,
                word_errors: 0,
                leaked_words: leaked_words(&u.reference, &text, &neighbours),
                partial_words_lost: lost,
                duplicate_finals: duplicates,
                reply_wait_ms,
                ends_terminal: None,
                ends_answerable: None,
                inner_pauses: pauses.len(),
                pauses_s: pauses,
                premature_ends: premature,
                terminal_before_last: 0,
                repeated_words: repeats(&text).saturating_sub(repeats(&u.reference)),
                finals: finals.into_iter().map(|(_, f)| f).collect(),
            };
            result.score(whole_call);
            result.endings();
            utterances.push(result);
        }
    }
    utterances.sort_by(|a, b| a.onset_s.total_cmp(&b.onset_s));
    let errors = log
        .messages
        .iter()
        .filter_map(|(_, m)| match m {
            ServerMessage::Error { error, message } => Some(format!("{error}: {message}")),
            _ => None,
        })
        .collect();
    let whole_call: Vec<WholeCallWer> = conv
        .call_references
        .iter()
        .filter(|_| log.refused.is_none())
        .flat_map(|refs| {
            [Channel::Customer, Channel::Assistant].map(|c| (c, refs[c.index()].clone()))
        })
        .filter_map(|(channel, reference)| {
            let reference = reference?;
            let transcript = log.finals(channel.as_str()).join(" ");
            Some(WholeCallWer::new(channel, reference, transcript))
        })
        .collect();
    let channel_totals = |channel| call_totals(&utterances, &whole_call, channel);
    CallResult {
        call,
        time_to_final_ms: Stats::of(
            utterances
                .iter()
                .filter_map(|u| u.time_to_final_ms)
                .collect(),
        ),
        first_partial_ms: Stats::of(
            utterances
                .iter()
                .filter_map(|u| u.first_partial_ms)
                .collect(),
        ),
        customer: channel_totals(Channel::Customer),
        assistant: channel_totals(Channel::Assistant),
        utterances,
        errors,
        close_code: log.close.as_ref().map(|c| c.0),
        close_reason: log.close.as_ref().map(|c| c.1.clone()),
        transport_error: log.transport_error.clone(),
        refused: log.refused.clone(),
        unparseable: log.unparseable.len(),
        stray_transcripts: stray,
        whole_call,
    }
}

/// Scores a saved call again from its references and finals (`hark bench --rescore`), as
/// [`analyze`] scored it: after a change to [`wer::normalize`], say. `whole_call`: the call
/// was played whole (a real call), see [`UtteranceResult::score`].
pub fn rescore(call: &mut CallResult, whole_call: bool) {
    for u in &mut call.utterances {
        u.score(whole_call);
        u.endings();
    }
    for w in &mut call.whole_call {
        *w = WholeCallWer::new(w.channel, w.reference.clone(), w.transcript.clone());
    }
    call.customer = call_totals(&call.utterances, &call.whole_call, Channel::Customer);
    call.assistant = call_totals(&call.utterances, &call.whole_call, Channel::Assistant);
}

/// One call's totals for a channel, its whole-call WER included.
fn call_totals(
    utterances: &[UtteranceResult],
    whole_call: &[WholeCallWer],
    channel: Channel,
) -> ChannelTotals {
    add_whole_call(totals(utterances, channel), whole_call, channel)
}

/// The platform's reply waits over all calls: the customer's turns only, since it answers
/// the customer (the assistant's finals hold up no reply).
pub fn reply_waits(calls: &[CallResult]) -> Stats {
    Stats::of(
        calls
            .iter()
            .flat_map(|c| &c.utterances)
            .filter(|u| u.channel == Channel::Customer)
            .filter_map(|u| u.reply_wait_ms)
            .collect(),
    )
}

/// A channel's totals over all calls, real calls' whole-call WER included.
pub fn overall(calls: &[CallResult], channel: Channel) -> ChannelTotals {
    let all: Vec<UtteranceResult> = calls.iter().flat_map(|c| c.utterances.clone()).collect();
    let whole: Vec<WholeCallWer> = calls.iter().flat_map(|c| c.whole_call.clone()).collect();
    add_whole_call(totals(&all, channel), &whole, channel)
}

fn add_whole_call(mut t: ChannelTotals, whole: &[WholeCallWer], channel: Channel) -> ChannelTotals {
    for w in whole.iter().filter(|w| w.channel == channel) {
        t.words += w.words;
        t.word_errors += w.word_errors;
    }
    t.wer = if t.words == 0 {
        0.0
    } else {
        t.word_errors as f64 / t.words as f64
    };
    t
}

/// Where each utterance's transcripts start and end in time (`own.len() + 1` bounds): from
/// its onset to the next utterance's on the same channel, except that an utterance with no
/// final there keeps the first final that comes while the next one is still being spoken: a
/// late final of its own (a slow server, or a short gap inside a monologue or a real call),
/// not the next utterance's, whose words have not ended.
fn windows(
    own: &[(usize, &Utterance)],
    transcripts: &[(f64, &str, TranscriptType)],
    secs: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let mut bounds: Vec<f64> = own.iter().map(|(_, u)| secs(u.onset)).collect();
    bounds.push(f64::INFINITY);
    let is_final = |kind: &TranscriptType| *kind == TranscriptType::Final;
    for k in 0..own.len().saturating_sub(1) {
        let (lo, hi) = (bounds[k], bounds[k + 1]);
        if transcripts
            .iter()
            .any(|(t, _, kind)| is_final(kind) && *t >= lo && *t < hi)
        {
            continue;
        }
        let next_offset = secs(own[k + 1].1.offset);
        if let Some((t, ..)) = transcripts
            .iter()
            .find(|(t, _, kind)| is_final(kind) && *t >= hi && *t < next_offset)
        {
            bounds[k + 1] = next_after(*t);
        }
    }
    bounds
}

/// The smallest time after `t` a window can start at, so that `t` stays in the one before.
fn next_after(t: f64) -> f64 {
    t + t.abs().max(1.0) * f64::EPSILON * 4.0
}

pub fn totals(utterances: &[UtteranceResult], channel: Channel) -> ChannelTotals {
    let own = || utterances.iter().filter(|u| u.channel == channel);
    let words = own().map(|u| u.words).sum();
    let word_errors = own().map(|u| u.word_errors).sum();
    ChannelTotals {
        words,
        word_errors,
        wer: if words == 0 {
            0.0
        } else {
            word_errors as f64 / words as f64
        },
        leaked_words: own().map(|u| u.leaked_words).sum(),
        partial_words_lost: own().map(|u| u.partial_words_lost).sum(),
        duplicate_finals: own().map(|u| u.duplicate_finals).sum(),
        missing_finals: own().filter(|u| u.time_to_final_ms.is_none()).count(),
        turns_ending_terminal: own().filter(|u| u.ends_terminal == Some(true)).count(),
        turns_ending_answerable: own().filter(|u| u.ends_answerable == Some(true)).count(),
        turns_with_final: own().filter(|u| u.ends_terminal.is_some()).count(),
        inner_pauses: own().map(|u| u.inner_pauses).sum(),
        premature_ends: own().map(|u| u.premature_ends).sum(),
        terminal_before_last: own().map(|u| u.terminal_before_last).sum(),
        repeated_words: own().map(|u| u.repeated_words).sum(),
        time_to_final_ms: Stats::of(own().filter_map(|u| u.time_to_final_ms).collect()),
    }
}

/// How long the platform waits after a final before its assistant may answer, by how the
/// final ends (its defaults, `transcriptionEndpointingPlan`, docs/PROVIDERS.md): 0.1 s
/// after . ? !, 0.45 s after a number, 1.5 s after anything else.
pub fn platform_wait_ms(final_text: &str) -> f64 {
    let t = final_text.trim_end();
    if ends_terminal(t) {
        100.0
    } else if t.ends_with(|c: char| c.is_ascii_digit()) {
        450.0
    } else {
        1500.0
    }
}

fn ends_terminal(text: &str) -> bool {
    text.trim_end().ends_with(['.', '?', '!'])
}

/// A final the platform answers soon after: it ends in . ? ! or a digit.
fn ends_answerable(text: &str) -> bool {
    platform_wait_ms(text) < 1000.0
}

/// How many of a turn's inner `pauses` (start, end in call seconds, in order) the platform
/// would have answered in, talking over a caller who is only pausing, given the turn's
/// `finals` (arrival in call seconds, text) in order. Each final but the last counts
/// against the first pause that ends after it arrives (it came inside that pause, or
/// before it), and is premature when the platform's wait for it ([`platform_wait_ms`]) is
/// up before that pause ends. At most one per pause; the turn's last final never is one
/// (the platform answering it is the turn's end).
pub fn premature_ends(finals: &[(f64, &str)], pauses: &[(f64, f64)]) -> usize {
    let mut hit = vec![false; pauses.len()];
    for &(t, text) in finals.iter().rev().skip(1) {
        if let Some(k) = pauses.iter().position(|&(_, end)| t < end)
            && t + platform_wait_ms(text) / 1000.0 < pauses[k].1
        {
            hit[k] = true;
        }
    }
    hit.into_iter().filter(|&h| h).count()
}

/// Words that follow themselves, after normalization.
fn repeats(text: &str) -> usize {
    let words = wer::normalize(text);
    words.windows(2).filter(|w| w[0] == w[1]).count()
}

/// Words of `partial` that `final_text` no longer has (as a multiset).
fn missing_words(partial: &str, final_text: &str) -> usize {
    let mut have: HashMap<String, usize> = HashMap::new();
    for w in wer::normalize(final_text) {
        *have.entry(w).or_default() += 1;
    }
    wer::normalize(partial)
        .into_iter()
        .filter(|w| match have.get_mut(w) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .count()
}

/// Words in `hypothesis` that its own reference lacks but a neighbouring turn of the other
/// channel has: speech crossing from one channel into the other.
fn leaked_words(reference: &str, hypothesis: &str, neighbours: &[&str]) -> usize {
    let own: std::collections::HashSet<String> = wer::normalize(reference).into_iter().collect();
    let other: std::collections::HashSet<String> = neighbours
        .iter()
        .flat_map(|n| wer::normalize(n))
        .filter(|w| !own.contains(w))
        .collect();
    wer::normalize(hypothesis)
        .into_iter()
        .filter(|w| other.contains(w))
        .count()
}

/// The terminal table: one row per call that opened, then all of them together, then the
/// calls refused at the upgrade (none of their figures exists: a row of theirs would read
/// as zeros and a perfect WER).
pub fn table(calls: &[CallResult], overall_ttf: &Stats, overall_fp: &Stats) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5} {:>5} | {:>27} | {:>17} | {:>13} | errors",
        "call", "utts", "time to final p50/p95/max ms", "first partial p50/p95", "WER cust/asst"
    );
    for c in calls.iter().filter(|c| c.refused.is_none()) {
        let _ = writeln!(
            out,
            "{:>5} {:>5} | {:>8.0} {:>8.0} {:>9.0} | {:>8.0} {:>8.0} | {:>5.1}% {:>5.1}% | {}",
            c.call,
            c.utterances.len(),
            c.time_to_final_ms.p50,
            c.time_to_final_ms.p95,
            c.time_to_final_ms.max,
            c.first_partial_ms.p50,
            c.first_partial_ms.p95,
            c.customer.wer * 100.0,
            c.assistant.wer * 100.0,
            describe_failure(c)
        );
    }
    let _ = writeln!(
        out,
        "  all {:>5} | {:>8.0} {:>8.0} {:>9.0} | {:>8.0} {:>8.0} | p99 ttf {:.0} ms",
        overall_ttf.count,
        overall_ttf.p50,
        overall_ttf.p95,
        overall_ttf.max,
        overall_fp.p50,
        overall_fp.p95,
        overall_ttf.p99
    );
    let refused: Vec<usize> = calls
        .iter()
        .filter(|c| c.refused.is_some())
        .map(|c| c.call)
        .collect();
    if !refused.is_empty() {
        // The first few call numbers are enough to find them in the report.
        let mut which: Vec<String> = refused.iter().take(10).map(usize::to_string).collect();
        if refused.len() > 10 {
            which.push("…".into());
        }
        let _ = writeln!(
            out,
            "refused at the upgrade: {} of {} calls (call {}): {}",
            refused.len(),
            calls.len(),
            which.join(", "),
            describe_refusals(&refusals(calls))
        );
    }
    out
}

fn describe_failure(c: &CallResult) -> String {
    if let Some(e) = c.errors.first() {
        return e.clone();
    }
    if let Some(e) = &c.transport_error {
        return e.clone();
    }
    match (c.close_code, &c.close_reason) {
        (Some(code), Some(reason)) if code != 1000 => format!("closed {code} {reason}"),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A customer final `ms` after `t0`, as the client logs it.
    fn customer_final(t0: Instant, ms: u64, text: &str) -> (Instant, ServerMessage) {
        (
            t0 + Duration::from_millis(ms),
            ServerMessage::TranscriberResponse {
                transcription: text.into(),
                channel: Channel::Customer,
                transcript_type: TranscriptType::Final,
            },
        )
    }

    #[test]
    fn the_platform_waits_by_how_a_final_ends_and_repeats_are_counted() {
        assert_eq!(platform_wait_ms("Yes."), 100.0);
        assert_eq!(platform_wait_ms("Is it? "), 100.0);
        assert_eq!(platform_wait_ms("It costs 20"), 450.0);
        assert_eq!(platform_wait_ms("Well, I think,"), 1500.0);
        assert_eq!(repeats("the the the cat"), 2);
        assert_eq!(repeats("no, no matter"), 1);
    }

    /// A 600 ms pause from 2.0 s to 2.6 s inside a turn whose last final comes at 4.0 s.
    #[test]
    fn a_final_the_platform_answers_before_the_caller_resumes_is_a_premature_end() {
        let pause = [(2.0, 2.6)];
        let last = (4.0, "and then left.");
        let count = |first: (f64, &str)| premature_ends(&[first, last], &pause);
        // "." 200 ms into the pause: the platform answers at 2.3 s, the caller resumes at
        // 2.6 s.
        assert_eq!(count((2.2, "Go forward.")), 1);
        // Without punctuation it waits 1.5 s: the caller has resumed.
        assert_eq!(count((2.2, "Go forward")), 0);
        // A digit 300 ms before the pause ends: 0.45 s is longer than that.
        assert_eq!(count((2.3, "Go forward 10")), 0);
        // A digit early in the pause is answered within it.
        assert_eq!(count((2.05, "Go forward 10")), 1);
        // Before the pause started, it counts against the pause: answered at 1.95 s.
        assert_eq!(count((1.85, "Go forward.")), 1);
        // After the pause, no pause is left for it.
        assert_eq!(count((2.7, "Go forward.")), 0);
        // The turn's last final never is one, wherever it comes.
        assert_eq!(premature_ends(&[(2.2, "Go forward.")], &pause), 0);
        // Two finals in one pause are one premature end; none without pauses.
        let finals = [(2.1, "Go."), (2.2, "Forward."), last];
        assert_eq!(premature_ends(&finals, &pause), 1);
        assert_eq!(premature_ends(&finals, &[]), 0);
        // One per pause over two pauses.
        let two = [(1.0, 1.5), (2.0, 2.6)];
        let finals = [(1.1, "Go."), (2.1, "Forward."), last];
        assert_eq!(premature_ends(&finals, &two), 2);
        assert!(ends_answerable("It costs 20") && ends_answerable("Yes?"));
        assert!(!ends_answerable("Well, I think,"));
    }

    /// `analyze` counts a turn's pauses and its premature ends from the conversation.
    #[test]
    fn a_turn_with_pauses_counts_them_and_its_premature_ends() {
        let conv = Conversation {
            rate: 1000,
            customer: vec![0; 8000],
            assistant: vec![0; 8000],
            utterances: vec![Utterance {
                channel: Channel::Customer,
                recording: "c".into(),
                reference: "go forward ten meters and then left".into(),
                onset: 1000,
                offset: 5000,
                pauses: vec![(2000, 2600), (3500, 4000)],
            }],
            call_references: None,
        };
        let t0 = Instant::now();
        let fin = |ms: u64, text: &str| customer_final(t0, ms, text);
        let log = Received {
            messages: vec![
                fin(2200, "Go forward."),
                fin(3700, "ten meters"),
                fin(5300, "and then left"),
            ],
            ..Received::default()
        };
        let r = analyze(0, &conv, &log, t0);
        let u = &r.utterances[0];
        assert_eq!((u.inner_pauses, u.premature_ends), (2, 1));
        assert_eq!(u.terminal_before_last, 1);
        assert_eq!(
            (u.ends_terminal, u.ends_answerable),
            (Some(false), Some(false))
        );
        let t = &r.customer;
        assert_eq!(
            (t.inner_pauses, t.premature_ends, t.terminal_before_last),
            (2, 1, 1)
        );
        assert_eq!((t.turns_ending_answerable, t.turns_with_final), (0, 1));

        // A report from before: no pauses, how its finals end filled again by `--rescore`.
        let mut saved = serde_json::to_value(&r).unwrap();
        for k in ["inner_pauses", "ends_answerable", "terminal_before_last"] {
            saved["utterances"][0].as_object_mut().unwrap().remove(k);
            saved["customer"].as_object_mut().unwrap().remove(k);
        }
        saved["customer"]
            .as_object_mut()
            .unwrap()
            .remove("turns_ending_answerable");
        saved["utterances"][0]["finals"] = serde_json::json!(["Go forward.", "Ten meters 10"]);
        let mut old: CallResult = serde_json::from_value(saved).unwrap();
        assert_eq!(old.utterances[0].inner_pauses, 0);
        rescore(&mut old, false);
        let u = &old.utterances[0];
        assert_eq!((u.ends_answerable, u.terminal_before_last), (Some(true), 1));
        assert_eq!(old.customer.turns_ending_answerable, 1);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let s = Stats::of((1..=100).map(f64::from).collect());
        assert_eq!((s.p50, s.p95, s.p99, s.max), (50.0, 95.0, 99.0, 100.0));
        assert_eq!(Stats::of(vec![]).count, 0);
    }

    #[test]
    fn measures_an_utterance_from_its_messages() {
        let conv = Conversation {
            rate: 1000,
            customer: vec![0; 10_000],
            assistant: vec![0; 10_000],
            utterances: vec![
                Utterance {
                    channel: Channel::Customer,
                    recording: "c".into(),
                    reference: "go forward ten meters".into(),
                    onset: 1000,
                    offset: 3000,
                    pauses: Vec::new(),
                },
                Utterance {
                    channel: Channel::Assistant,
                    recording: "a".into(),
                    reference: "sure thing".into(),
                    onset: 4000,
                    offset: 5000,
                    pauses: Vec::new(),
                },
            ],
            call_references: None,
        };
        let t0 = Instant::now();
        let msg = |ms: u64, ch: Channel, text: &str, kind: TranscriptType| {
            (
                t0 + Duration::from_millis(ms),
                ServerMessage::TranscriberResponse {
                    transcription: text.into(),
                    channel: ch,
                    transcript_type: kind,
                },
            )
        };
        let log = Received {
            messages: vec![
                msg(1400, Channel::Customer, "Go.", TranscriptType::Partial),
                msg(
                    2600,
                    Channel::Customer,
                    "Go forward ten meet",
                    TranscriptType::Partial,
                ),
                msg(
                    3250,
                    Channel::Customer,
                    "Go forward ten meters.",
                    TranscriptType::Final,
                ),
                msg(
                    3300,
                    Channel::Customer,
                    "Go forward ten meters.",
                    TranscriptType::Final,
                ),
                msg(
                    5400,
                    Channel::Assistant,
                    "Sure thing forward.",
                    TranscriptType::Final,
                ),
            ],
            close: Some((1000, String::new())),
            ..Received::default()
        };
        let r = analyze(0, &conv, &log, t0);
        let c = &r.utterances[0];
        assert_eq!(c.first_partial_ms.map(f64::round), Some(400.0));
        assert_eq!(c.time_to_final_ms.map(f64::round), Some(300.0));
        assert_eq!(c.partial_words_lost, 1); // "meet"
        assert_eq!(c.partials, 2);
        // Its last final ends in a period: the platform answers 100 ms after it; the
        // first final also ended in one while the turn went on, but in no pause.
        assert_eq!(c.reply_wait_ms.map(f64::round), Some(400.0));
        assert_eq!(
            (c.ends_terminal, c.ends_answerable),
            (Some(true), Some(true))
        );
        assert_eq!((c.terminal_before_last, c.premature_ends), (1, 0));
        assert_eq!(c.duplicate_finals, 1);
        let a = &r.utterances[1];
        assert_eq!(a.time_to_final_ms.map(f64::round), Some(400.0));
        assert_eq!(a.leaked_words, 1); // "forward" from the customer's turn
        assert_eq!(a.word_errors, 1);
        assert!(!r.failed());

        // The same conversation refused at the upgrade: not a failure, and none of its
        // words counts as missing.
        let refused = Received {
            refused: Some(Refusal::new(503, b"full")),
            ..Received::default()
        };
        let r = analyze(0, &conv, &refused, t0);
        assert!(r.refused.is_some() && !r.failed());
        assert!(r.utterances.is_empty());
        assert_eq!(r.customer.missing_finals + r.assistant.missing_finals, 0);
        // Its row is not one of zeros (a perfect WER): it is shown as refused, with why.
        let table = table(
            std::slice::from_ref(&r),
            &r.time_to_final_ms,
            &r.first_partial_ms,
        );
        assert!(!table.contains("0.0%"), "{table}");
        assert!(
            table.contains("refused at the upgrade: 1 of 1 calls (call 0): HTTP 503 ×1: \"full\""),
            "{table}"
        );
        // Saved by schema 3 and read back; schema 2's flag reads as a 503 without words.
        let saved = serde_json::to_value(&r).unwrap();
        let back: CallResult = serde_json::from_value(saved.clone()).unwrap();
        assert_eq!(back.refused, r.refused);
        for (flag, read) in [
            (serde_json::json!(true), Some((503, ""))),
            (serde_json::json!(false), None),
            (serde_json::Value::Null, None),
        ] {
            let mut v2 = saved.clone();
            v2["refused"] = flag;
            let back: CallResult = serde_json::from_value(v2).unwrap();
            let got = back.refused.as_ref().map(|r| (r.status, r.body.as_str()));
            assert_eq!(got, read);
        }
        let failed = Received {
            transport_error: Some("connect: refused".into()),
            ..Received::default()
        };
        let r = analyze(0, &conv, &failed, t0);
        assert!(r.refused.is_none() && r.failed());
        assert_eq!(r.customer.missing_finals, 1);
    }

    #[test]
    fn a_late_final_belongs_to_the_words_it_follows() {
        let utterance = |reference: &str, onset, offset| Utterance {
            channel: Channel::Customer,
            recording: reference.into(),
            reference: reference.into(),
            onset,
            offset,
            pauses: Vec::new(),
        };
        // A monologue: the second sentence starts 500 ms after the first ends.
        let conv = Conversation {
            rate: 1000,
            customer: vec![0; 6000],
            assistant: vec![0; 6000],
            utterances: vec![
                utterance("one two", 1000, 2000),
                utterance("three four", 2500, 4000),
            ],
            call_references: None,
        };
        let t0 = Instant::now();
        let fin = |ms: u64, text: &str| customer_final(t0, ms, text);
        let log = Received {
            messages: vec![fin(2700, "One two."), fin(4300, "Three four.")],
            ..Received::default()
        };
        let r = analyze(0, &conv, &log, t0);
        let ttf: Vec<_> = r
            .utterances
            .iter()
            .map(|u| u.time_to_final_ms.map(f64::round))
            .collect();
        assert_eq!(ttf, [Some(700.0), Some(300.0)]);
        assert_eq!(r.customer.missing_finals, 0);
        assert_eq!(r.customer.word_errors, 0);

        // Saved (by a hark-bench that did not yet write `refused`), its counts gone
        // stale, and scored again: as analyze scored it.
        let mut saved = serde_json::to_value(&r).unwrap();
        saved.as_object_mut().unwrap().remove("refused");
        saved["utterances"][1]["finals"] = serde_json::json!(["Three 4."]);
        saved["utterances"][1]["word_errors"] = 5.into();
        saved["customer"]["word_errors"] = 5.into();
        let mut again: CallResult = serde_json::from_value(saved).unwrap();
        rescore(&mut again, false);
        assert_eq!(again.utterances[1].word_errors, 0);
        assert_eq!((again.customer.words, again.customer.word_errors), (4, 0));
        // A call played whole counts its WER over the whole call only.
        rescore(&mut again, true);
        assert_eq!((again.customer.words, again.customer.word_errors), (0, 0));
    }
}
