//! Left context: the turn's finals already sent, read before a final's own audio so a
//! sentence cut at a pause keeps its beginning, and the context's words aligned off the
//! decoded text (ARCHITECTURE.md, "Left context").

use super::*;

/// A word as it is compared: letters and digits, lowercase.
fn key(w: &str) -> String {
    w.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Two compared words are the same word: equal, or one of 4 letters or more the start of
/// the other (a word cut short at a boundary: "American" for "Americans").
fn alike(a: &str, b: &str) -> bool {
    a == b || (a.len() >= 4 && b.len() >= 4 && (a.starts_with(b) || b.starts_with(a)))
}

/// What a decode of the turn's earlier audio and a new piece says about the piece: the
/// words after those that match `context`, the finals already sent for that audio.
///
/// The decode is aligned with the context by word edit distance over every prefix ([`alike`]
/// words match); the cheapest prefix is the context. On a tie the shorter prefix wins: a word
/// the model merged across the cut is sent twice rather than lost. What follows the context
/// is the piece's own, even a word the context ended with ("Thanks." then "Thanks, bye."):
/// the speaker said it again.
pub fn strip_context(context: &str, decoded: &str) -> String {
    let said: Vec<String> = context
        .split_whitespace()
        .map(key)
        .filter(|k| !k.is_empty())
        .collect();
    let words: Vec<&str> = decoded.split_whitespace().collect();
    let keys: Vec<String> = words.iter().map(|w| key(w)).collect();
    // cost[j]: edit distance between the context so far and the first j decoded words.
    let insert = |k: &String| usize::from(!k.is_empty());
    let mut cost: Vec<usize> = std::iter::once(0)
        .chain(keys.iter().scan(0, |c, k| {
            *c += insert(k);
            Some(*c)
        }))
        .collect();
    let mut next = vec![0; cost.len()];
    for (i, s) in said.iter().enumerate() {
        next[0] = i + 1;
        for (j, k) in keys.iter().enumerate() {
            next[j + 1] = (cost[j] + usize::from(!alike(s, k)))
                .min(cost[j + 1] + 1)
                .min(next[j] + insert(k));
        }
        std::mem::swap(&mut cost, &mut next);
    }
    let split = (0..cost.len()).min_by_key(|&j| (cost[j], j)).unwrap_or(0);
    words[split..].join(" ")
}

/// `text` without the words it begins with that `previous` ended with: a decode that read
/// the turn's last final as a prompt may say its last words again ("ask not what your
/// country" then "your country can do for you"). Two or more words must match, allowing a
/// word cut short at the boundary ([`alike`]); one word only when it is the previous final's
/// last and at least 4 letters (so "no. No." stays). A text that would be left empty is kept
/// whole. Only for a decode that read a prompt: text alone cannot tell a repeat from a word
/// said twice, and a decode that read no earlier final cannot repeat one.
pub fn drop_repeat(previous: &str, text: &str) -> String {
    let prev: Vec<String> = previous.split_whitespace().map(key).collect();
    let words: Vec<&str> = text.split_whitespace().collect();
    let keys: Vec<String> = words.iter().map(|w| key(w)).collect();
    let longest = prev.len().min(words.len().saturating_sub(1)).min(8);
    for k in (1..=longest).rev() {
        let tail = &prev[prev.len() - k..];
        let head = &keys[..k];
        if tail.iter().any(String::is_empty) || head.iter().any(String::is_empty) {
            continue;
        }
        let matches = tail.iter().zip(head).all(|(a, b)| alike(a, b));
        if matches && (k >= 2 || head[0].len() >= 4) {
            return words[k..].join(" ");
        }
    }
    text.to_owned()
}

/// A final already sent, with its audio: left context for the turn's next utterances.
pub(super) struct Said {
    pub(super) id: u64,
    pub(super) start: u64,
    pub(super) audio: Vec<f32>,
    pub(super) text: String,
    /// Positions of its first and after its last voiced frame.
    pub(super) onset: u64,
    pub(super) voice_end: u64,
}

impl Segmenter {
    /// The earlier finals' words a decode of `ticket` reads before its own audio (empty
    /// without context): what a real decode says first, for the simulator's decodes.
    #[cfg(test)]
    pub(crate) fn context_text(&self, ticket: Ticket) -> String {
        if ticket.context_from == 0 || self.config.context_as_text {
            return String::new();
        }
        let Some(start) = self.utterance(ticket.utterance).map(|u| u.start) else {
            return String::new();
        };
        let words: Vec<&str> = self
            .context(ticket.context_from, start)
            .map(|(_, text)| text)
            .collect();
        words.join(" ")
    }

    /// The first sent final to decode before utterance `id` (0 for none): the latest ones
    /// of the same turn that fit with it in a `share` of the context span, and only
    /// once every earlier final is out, so that the words to take off are known.
    pub(super) fn context_for(&self, id: u64, share: f64) -> u64 {
        let Some(u) = self.utterance(id) else {
            return 0;
        };
        let span = (self.config.context_span as f64 * share.clamp(0.0, 1.0)) as usize;
        let room = span.saturating_sub(self.whole_len(u.audio.len(), u.voiced_end));
        if room == 0 || self.ended.front().is_some_and(|e| e.id < id) {
            return 0;
        }
        self.turn_context(u.start + u.preroll as u64, room)
    }

    /// The sent finals from `from` on, each with its audio up to where the next piece
    /// starts (an utterance's pre-roll may repeat the end of the one before).
    pub(super) fn context(&self, from: u64, start: u64) -> impl Iterator<Item = (&[f32], &str)> {
        let first = match from {
            0 => self.said.len(),
            _ => self
                .said
                .iter()
                .position(|s| s.id == from)
                .unwrap_or(self.said.len()),
        };
        let nexts = self
            .said
            .iter()
            .skip(first + 1)
            .map(|s| s.start)
            .chain(std::iter::once(start));
        self.said.iter().skip(first).zip(nexts).map(|(said, next)| {
            let len = said
                .audio
                .len()
                .min(next.saturating_sub(said.start) as usize);
            (&said.audio[..len], said.text.as_str())
        })
    }

    /// The first sent final of the same turn before `onset` whose audio, with the rest,
    /// fits in `room`; 0 for none.
    pub(super) fn turn_context(&self, onset: u64, room: usize) -> u64 {
        let (mut next_onset, mut total, mut from) = (onset, 0, 0);
        for said in self.said.iter().rev() {
            if next_onset.saturating_sub(said.voice_end) > self.config.turn_gap as u64 {
                break;
            }
            // Its audio up to where the next one's starts: at most up to that one's onset.
            let len = said
                .audio
                .len()
                .min(next_onset.saturating_sub(said.start) as usize);
            if total + len > room {
                break;
            }
            (total, from, next_onset) = (total + len, said.id, said.onset);
        }
        from
    }
}
