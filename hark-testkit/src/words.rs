//! A deterministic "speech" code for testing network recognition backends against mocks.
//!
//! A real recognizer cannot run inside a provider mock, so the test audio carries its words
//! in the signal itself: word `k` of [`VOCAB`] is a stretch of samples whose magnitude is
//! [`amplitude`]`(k)`, with the sign alternating per sample so the signal has no DC and looks
//! like audio to anything that inspects it (a level meter, a resampler's filters). Words are
//! separated by digital silence (zeros). [`WordDecoder`] reads the code back from any
//! chunking of the stream with exact sample positions, so a mock can answer with the very
//! words (and times) that were "spoken", and a test can compare transcripts exactly.
//!
//! The code survives only lossless linear PCM: no resampling, no μ-law, no mixing with
//! another talker.

/// The vocabulary: 32 distinct lowercase words. Word `k` is spoken at [`amplitude`]`(k)`.
pub const VOCAB: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "hello", "world", "please", "thanks",
    "yes", "no",
];

/// The shortest run of one amplitude that counts as a word.
pub const MIN_WORD_MS: u32 = 10;

/// Sample magnitude of word `k`: `(k + 1) * 512` (512 … 16384).
pub fn amplitude(k: usize) -> i16 {
    (k as i16 + 1) * 512
}

/// The vocabulary index whose amplitude is `magnitude`, if any.
pub fn word_of(magnitude: u16) -> Option<usize> {
    if magnitude == 0 || !magnitude.is_multiple_of(512) {
        return None;
    }
    let k = usize::from(magnitude / 512) - 1;
    (k < VOCAB.len()).then_some(k)
}

/// Number of samples in `ms` milliseconds at `rate` Hz.
pub fn samples(rate: u32, ms: u32) -> usize {
    (u64::from(rate) * u64::from(ms) / 1000) as usize
}

/// `ms` of digital silence.
pub fn silence(rate: u32, ms: u32) -> Vec<i16> {
    vec![0; samples(rate, ms)]
}

/// Speaks `words` (vocabulary indices): each is `word_ms` of ±[`amplitude`] (starting with
/// +, alternating every sample) followed by `gap_ms` of silence.
pub fn speak(words: &[usize], rate: u32, word_ms: u32, gap_ms: u32) -> Vec<i16> {
    let mut out = Vec::new();
    for &k in words {
        let a = amplitude(k);
        out.extend((0..samples(rate, word_ms)).map(|i| if i % 2 == 0 { a } else { -a }));
        out.extend(silence(rate, gap_ms));
    }
    out
}

/// Vocabulary indices of the words of `text` (whitespace-separated; panics on a word not in
/// [`VOCAB`], as that is a mistake in the test itself).
pub fn indices(text: &str) -> Vec<usize> {
    text.split_whitespace()
        .map(|w| {
            VOCAB
                .iter()
                .position(|v| v.eq_ignore_ascii_case(w))
                .unwrap_or_else(|| panic!("{w:?} is not in words::VOCAB"))
        })
        .collect()
}

/// Speaks `text` (words of [`VOCAB`]) with the usual pacing of these tests: 200 ms words
/// with 100 ms gaps (short enough that no endpoint falls inside the sentence).
pub fn sentence(text: &str, rate: u32) -> Vec<i16> {
    speak(&indices(text), rate, 200, 100)
}

/// A recognized word: vocabulary index, text and sample positions (`end` exclusive: the first
/// silent sample after the word), counted from the start of the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub index: usize,
    pub text: &'static str,
    pub start: u64,
    pub end: u64,
}

/// Reads the word code back from mono samples, fed in any chunking.
///
/// A run of samples whose magnitude is one vocabulary amplitude, lasting at least
/// [`MIN_WORD_MS`], is that word; the run ends at the first sample of another magnitude (a
/// zero, usually). The word is reported when its run ends, so its end is exact. Samples of
/// any other non-zero magnitude are noise: neither a word nor silence.
#[derive(Clone, Debug)]
pub struct WordDecoder {
    rate: u32,
    min_run: u64,
    pos: u64,
    /// The run in progress: (vocabulary index, first sample), if any.
    run: Option<(usize, u64)>,
    silent: u64,
}

impl WordDecoder {
    pub fn new(rate: u32) -> Self {
        Self {
            rate,
            min_run: samples(rate, MIN_WORD_MS).max(1) as u64,
            pos: 0,
            run: None,
            silent: 0,
        }
    }

    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Takes the next samples and returns the words whose runs ended within them.
    pub fn push(&mut self, samples: &[i16]) -> Vec<Word> {
        let mut words = Vec::new();
        for &s in samples {
            let k = word_of(s.unsigned_abs());
            if self.run.map(|(r, _)| r) != k {
                words.extend(self.end_run());
                self.run = k.map(|k| (k, self.pos));
            }
            self.silent = if s == 0 { self.silent + 1 } else { 0 };
            self.pos += 1;
        }
        words
    }

    /// Ends the run in progress now (end of stream, or a forced endpoint), reporting it if it
    /// is long enough to be a word. Samples of the same amplitude that follow start a new run.
    pub fn flush(&mut self) -> Option<Word> {
        self.end_run()
    }

    fn end_run(&mut self) -> Option<Word> {
        let (index, start) = self.run.take()?;
        (self.pos - start >= self.min_run).then(|| Word {
            index,
            text: VOCAB[index],
            start,
            end: self.pos,
        })
    }

    /// Samples taken so far: the stream position.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Seconds taken so far.
    pub fn position_secs(&self) -> f64 {
        self.pos as f64 / f64::from(self.rate)
    }

    /// Consecutive zero samples at the end of what was taken.
    pub fn trailing_silence(&self) -> u64 {
        self.silent
    }

    /// The trailing silence in milliseconds.
    pub fn trailing_silence_ms(&self) -> f64 {
        self.silent as f64 * 1000.0 / f64::from(self.rate)
    }

    /// True while a run of a vocabulary amplitude is open (a word is being spoken).
    pub fn in_word(&self) -> bool {
        self.run.is_some()
    }
}
