//! The speech a benchmark call plays: real recordings with reference transcripts, arranged
//! as a conversation in which the customer (channel 0) and the assistant (channel 1) take
//! turns with pauses, and where every utterance's speech starts and ends is known.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::protocol::Channel;
use crate::resample::resample;

/// One recording with what is said in it.
#[derive(Debug, Clone)]
pub struct Recording {
    pub name: String,
    pub rate: u32,
    pub samples: Vec<i16>,
    pub reference: String,
    /// Speech onset and offset, in samples, found by energy.
    pub speech: (usize, usize),
    /// Pauses inside the words (start, end), in samples: found by energy
    /// ([`inner_pauses`]), or as a corpus's `pauses.tsv` gives them.
    pub pauses: Vec<(usize, usize)>,
}

/// The recordings each side of the conversation draws from. They never share a recording.
pub struct Corpus {
    pub customer: Vec<Recording>,
    pub assistant: Vec<Recording>,
}

/// Recordings the assistant speaks: TTS prompts, and two speeches unlike the customer's
/// audiobook reading. The rest of the dev clips are the customer's.
const ASSISTANT_CLIPS: [&str; 2] = ["jfk.wav", "beckett.wav"];

/// Where the clips are: `HARK_CLIPS_DIR`, else the folder `fetch::ensure_clips` fills (without
/// fetching it; `fetch::clips_dir` does).
pub fn default_clips_dir() -> PathBuf {
    std::env::var_os("HARK_CLIPS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| hark_fetch::default_cache_dir().join(crate::fetch::CLIPS_DIR))
}

impl Corpus {
    /// Loads `transcripts.tsv` (dev clips) and `assistant.tsv` (TTS prompts, if present).
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let index = dir.join("transcripts.tsv");
        let text = std::fs::read_to_string(&index).with_context(|| {
            format!(
                "no speech clips in {} (leave --clips unset for hark to fetch them, or pass a clips folder)",
                dir.display()
            )
        })?;
        let mut corpus = Self {
            customer: Vec::new(),
            assistant: Vec::new(),
        };
        for rec in read_index(dir, &text, "transcripts.tsv")? {
            if ASSISTANT_CLIPS.contains(&rec.name.as_str()) {
                corpus.assistant.push(rec);
            } else {
                corpus.customer.push(rec);
            }
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("assistant.tsv")) {
            corpus
                .assistant
                .extend(read_index(dir, &text, "assistant.tsv")?);
        }
        if corpus.customer.is_empty() || corpus.assistant.is_empty() {
            bail!("{} needs clips for both sides", index.display());
        }
        Ok(corpus)
    }
}

/// The recordings an index lists (the same format `--corpus` reads), or every problem in it.
fn read_index(dir: &Path, text: &str, name: &str) -> anyhow::Result<Vec<Recording>> {
    let mut problems = Vec::new();
    let entries = crate::corpus_index::parse_index(text, &dir.join(name), &mut problems);
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    entries
        .iter()
        .map(|e| load_wav(&dir.join(&e.file), e.references.first().map_or("", |r| r)))
        .collect()
}

/// Reads a WAV file (mixing its channels to one) and finds its speech.
pub fn load_wav(path: &Path, reference: &str) -> anyhow::Result<Recording> {
    let audio = crate::wav::read(path)?;
    let samples = audio.mono();
    let speech = speech_bounds(&samples, audio.rate);
    let pauses = inner_pauses(&samples, audio.rate, speech);
    Ok(Recording {
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        rate: audio.rate,
        samples,
        reference: reference.to_string(),
        speech,
        pauses,
    })
}

/// First and last 10 ms window louder than -40 dBFS: where the words start and end.
pub fn speech_bounds(samples: &[i16], rate: u32) -> (usize, usize) {
    let win = (rate / 100).max(1) as usize;
    let threshold = 32768.0 * 0.01; // -40 dBFS RMS
    let loud = |w: &[i16]| {
        let energy: f64 = w.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
        (energy / w.len() as f64).sqrt() > threshold
    };
    let windows: Vec<bool> = samples.chunks(win).map(loud).collect();
    let first = windows.iter().position(|&l| l).unwrap_or(0);
    let last = windows.iter().rposition(|&l| l).map_or(0, |i| i + 1);
    (first * win, (last * win).min(samples.len()))
}

/// The shortest quiet stretch inside an utterance that is a pause: a platform that
/// answers 0.1 s after a final can talk over the caller in one.
pub const MIN_PAUSE_MS: usize = 200;

/// The pauses inside an utterance's words (`speech`: its onset and offset, in samples):
/// runs of at least [`MIN_PAUSE_MS`] of quiet 10 ms windows strictly between onset and
/// offset, (start, end) in samples. A window is quiet when it is more than 28 dB under
/// the utterance's loud level (its windows' 90th percentile), or under -40 dBFS or within
/// 10 dB of the clip's background (its windows' 10th percentile: line or room noise) as
/// long as that is 20 dB under the loud level (a quiet recording's soft words, a phone
/// band's weak fricatives are not pauses). A lone window either way (a click, a dip) takes
/// its neighbours' side.
pub fn inner_pauses(samples: &[i16], rate: u32, speech: (usize, usize)) -> Vec<(usize, usize)> {
    let win = (rate / 100).max(1) as usize;
    let levels: Vec<f64> = samples
        .chunks(win)
        .map(|w| {
            let energy: f64 = w.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
            10.0 * (energy / w.len() as f64 / (32768.0 * 32768.0))
                .max(1e-10)
                .log10()
        })
        .collect();
    let (on, off) = (speech.0 / win, speech.1.div_ceil(win).min(levels.len()));
    if off <= on + 2 {
        return Vec::new();
    }
    let percentile = |mut v: Vec<f64>, p: usize| {
        v.sort_by(f64::total_cmp);
        v[(v.len() * p / 100).min(v.len() - 1)]
    };
    let loud = percentile(levels[on..off].to_vec(), 90);
    let background = percentile(levels.clone(), 10);
    let threshold = (loud - 28.0).max((background + 10.0).max(-40.0).min(loud - 20.0));
    let quiet: Vec<bool> = levels[on..off].iter().map(|&l| l < threshold).collect();
    let smoothed: Vec<bool> = (0..quiet.len())
        .map(|i| {
            let around = [i.checked_sub(1), Some(i), Some(i + 1)]
                .into_iter()
                .flatten()
                .filter_map(|j| quiet.get(j));
            let (q, n) = around.fold((0, 0), |(q, n), &x| (q + usize::from(x), n + 1));
            2 * q > n || (n == 2 && quiet[i])
        })
        .collect();
    let min_len = MIN_PAUSE_MS.div_ceil(10);
    let mut pauses = Vec::new();
    let mut i = 0;
    while i < smoothed.len() {
        if !smoothed[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < smoothed.len() && smoothed[i] {
            i += 1;
        }
        // Strictly inside: words on both sides.
        if start > 0 && i < smoothed.len() && i - start >= min_len {
            pauses.push(((on + start) * win, (on + i) * win));
        }
    }
    pauses
}

/// One utterance placed in a call.
#[derive(Debug, Clone)]
pub struct Utterance {
    pub channel: Channel,
    pub recording: String,
    pub reference: String,
    /// Where the words start and end in the call, in samples at the call's rate.
    pub onset: usize,
    pub offset: usize,
    /// Pauses inside the words (start, end) in the call, in samples at the call's rate:
    /// where the speaker is silent but their turn goes on. (None known for real calls.)
    pub pauses: Vec<(usize, usize)>,
}

/// How much of a call is speech (`--pause`, `--turn-utterances`, `--turn-gap`): a server's
/// capacity depends on it, since it decodes speech, not silence.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Density {
    /// Silence between turns, in seconds (min, max).
    pub pause_s: (f64, f64),
    /// Utterances said back to back in one turn (min, max): monologues when above 1.
    pub turn_utterances: (usize, usize),
    /// Silence between the utterances of one turn, in seconds (min, max).
    pub turn_gap_s: (f64, f64),
}

impl Default for Density {
    fn default() -> Self {
        Self {
            // As between a caller and an agent.
            pause_s: (0.8, 1.6),
            turn_utterances: (1, 1),
            // A breath between sentences, long enough for a final before the next one.
            turn_gap_s: (0.6, 1.0),
        }
    }
}

/// A recording at the call's rate: its samples, onset, offset and pauses.
type Placed = (Vec<i16>, usize, usize, Vec<(usize, usize)>);

/// How long a generated conversation goes on.
#[derive(Clone, Copy)]
enum Plan<'a> {
    /// Until this many seconds are filled, the recordings taken round from a random one.
    Fill(f64),
    /// Until the customer has said these recordings, in this order.
    Each(&'a [usize]),
}

/// A call's audio, both channels at the call's rate, and what is said when.
pub struct Conversation {
    pub rate: u32,
    pub customer: Vec<i16>,
    pub assistant: Vec<i16>,
    pub utterances: Vec<Utterance>,
    /// A real call's reference per channel (by index) for the whole call, its utterances'
    /// own being unknown; `None` when every utterance has its reference.
    pub call_references: Option<[Option<String>; 2]>,
}

impl Conversation {
    /// Alternating turns, customer first, until `duration_secs` is filled. `seed` varies
    /// the order and the pauses between calls so they do not speak in lockstep.
    pub fn build(
        corpus: &Corpus,
        rate: u32,
        duration_secs: f64,
        seed: u64,
    ) -> anyhow::Result<Self> {
        Self::build_with(corpus, rate, duration_secs, seed, &Density::default())
    }

    /// [`Conversation::build`] with the pauses and turn lengths of `density`; the default
    /// density plays the same audio as `build` for a seed.
    pub fn build_with(
        corpus: &Corpus,
        rate: u32,
        duration_secs: f64,
        seed: u64,
        density: &Density,
    ) -> anyhow::Result<Self> {
        if !(duration_secs.is_finite() && duration_secs > 0.0) {
            bail!(
                "a conversation's length must be a positive number of seconds, not {duration_secs}"
            );
        }
        Self::build_turns(corpus, rate, seed, density, Plan::Fill(duration_secs))
    }

    /// Alternating turns whose customer says the recordings `customer` (indices into
    /// `corpus.customer`) once each, in that order: every recording of a corpus measured
    /// exactly once (`hark-bench --each`).
    pub fn build_once(
        corpus: &Corpus,
        rate: u32,
        seed: u64,
        density: &Density,
        customer: &[usize],
    ) -> anyhow::Result<Self> {
        if customer.is_empty() {
            bail!("a conversation needs at least one of the customer's recordings");
        }
        if let Some(&i) = customer.iter().find(|&&i| i >= corpus.customer.len()) {
            bail!("no customer recording {i}");
        }
        Self::build_turns(corpus, rate, seed, density, Plan::Each(customer))
    }

    fn build_turns(
        corpus: &Corpus,
        rate: u32,
        seed: u64,
        density: &Density,
        plan: Plan<'_>,
    ) -> anyhow::Result<Self> {
        let between = |rng: &mut fastrand::Rng, (lo, hi): (f64, f64)| lo + rng.f64() * (hi - lo);
        let mut rng = fastrand::Rng::with_seed(seed);
        let convert = |r: &Recording| -> anyhow::Result<Placed> {
            let scale = f64::from(rate) / f64::from(r.rate);
            let samples = resample(&r.samples, r.rate, rate)?;
            let at = |i: usize| ((i as f64 * scale) as usize).min(samples.len());
            let (onset, offset) = (at(r.speech.0), at(r.speech.1));
            let pauses = r.pauses.iter().map(|&(a, b)| (at(a), at(b))).collect();
            Ok((samples, onset, offset, pauses))
        };
        let customer: Vec<_> = corpus
            .customer
            .iter()
            .map(convert)
            .collect::<Result<_, _>>()?;
        let assistant: Vec<_> = corpus
            .assistant
            .iter()
            .map(convert)
            .collect::<Result<_, _>>()?;
        if customer.is_empty() || assistant.is_empty() {
            bail!("a conversation needs recordings for both sides");
        }
        // A list's length is known only once it is played: its buffers grow.
        let (total, capacity) = match plan {
            Plan::Fill(secs) => {
                let total = (secs * f64::from(rate)) as usize;
                (total, total)
            }
            Plan::Each(_) => (usize::MAX, 0),
        };
        // With a list, the customer's next recording is its `said`-th entry.
        let mut said_by_customer = 0usize;
        let pick = |index: usize, said: usize| match plan {
            Plan::Fill(_) => Some(index),
            Plan::Each(list) => list.get(said).copied(),
        };
        let mut conv = Self {
            rate,
            customer: Vec::with_capacity(capacity),
            assistant: Vec::with_capacity(capacity),
            utterances: Vec::new(),
            call_references: None,
        };
        // A short lead-in, different per call.
        conv.pause(rng.f64() * 0.8 + 0.2);
        let (mut ci, mut ai) = (rng.usize(..customer.len()), rng.usize(..assistant.len()));
        let mut turn = Channel::Customer;
        while conv.customer.len() < total {
            let (pool, index, recordings) = match turn {
                Channel::Customer => (&customer, &mut ci, &corpus.customer),
                Channel::Assistant => (&assistant, &mut ai, &corpus.assistant),
            };
            let (lo, hi) = density.turn_utterances;
            // Drawn only when it varies, so that the default plays what it always did.
            let said = if hi > lo {
                rng.usize(lo..=hi)
            } else {
                lo.max(1)
            };
            for k in 0..said {
                let next = match turn {
                    Channel::Customer => pick(*index, said_by_customer),
                    Channel::Assistant => Some(*index),
                };
                let Some(next) = next else { break };
                if k > 0 {
                    if conv.customer.len() >= total {
                        break;
                    }
                    let gap = between(&mut rng, density.turn_gap_s);
                    conv.pause(gap);
                }
                let (samples, onset, offset, pauses) = &pool[next % pool.len()];
                let rec = &recordings[next % pool.len()];
                *index += 1;
                if turn == Channel::Customer {
                    said_by_customer += 1;
                }
                let start = conv.customer.len();
                conv.utterances.push(Utterance {
                    channel: turn,
                    recording: rec.name.clone(),
                    reference: rec.reference.clone(),
                    onset: start + onset,
                    offset: start + offset,
                    pauses: pauses
                        .iter()
                        .map(|&(a, b)| (start + a, start + b))
                        .collect(),
                });
                let (speaking, silent) = match turn {
                    Channel::Customer => (&mut conv.customer, &mut conv.assistant),
                    Channel::Assistant => (&mut conv.assistant, &mut conv.customer),
                };
                speaking.extend_from_slice(samples);
                silent.resize(speaking.len(), 0);
            }
            if let Plan::Each(list) = plan
                && said_by_customer >= list.len()
            {
                break;
            }
            // Turn-taking pause.
            let pause = between(&mut rng, density.pause_s);
            conv.pause(pause);
            turn = match turn {
                Channel::Customer => Channel::Assistant,
                Channel::Assistant => Channel::Customer,
            };
        }
        // Let the last words finish before the call ends.
        conv.pause(2.0);
        Ok(conv)
    }

    fn pause(&mut self, secs: f64) {
        let n = self.customer.len() + (secs * f64::from(self.rate)) as usize;
        self.customer.resize(n, 0);
        self.assistant.resize(n, 0);
    }

    pub fn duration_secs(&self) -> f64 {
        self.customer.len() as f64 / f64::from(self.rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_speech_inside_silence() {
        let mut s = vec![0i16; 1600];
        s.extend((0..3200).map(|i| if i % 2 == 0 { 8000 } else { -8000 }));
        s.extend(vec![0i16; 800]);
        assert_eq!(speech_bounds(&s, 16000), (1600, 4800));
    }

    /// Noise-like "speech" at `db` dBFS RMS, deterministic.
    fn noise(rate: u32, secs: f64, db: f64, seed: u64) -> Vec<i16> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let amp = 32768.0 * 10f64.powf(db / 20.0) * 3f64.sqrt();
        (0..(secs * f64::from(rate)) as usize)
            .map(|_| ((rng.f64() * 2.0 - 1.0) * amp) as i16)
            .collect()
    }

    /// The pauses in seconds, to 10 ms.
    fn pauses_s(samples: &[i16], rate: u32, speech: (usize, usize)) -> Vec<(f64, f64)> {
        let s = |i: usize| (i as f64 / f64::from(rate) * 100.0).round() / 100.0;
        inner_pauses(samples, rate, speech)
            .into_iter()
            .map(|(a, b)| (s(a), s(b)))
            .collect()
    }

    #[test]
    fn finds_the_pauses_inside_the_words() {
        let rate = 16000;
        let silence = |secs: f64| vec![0i16; (secs * f64::from(rate)) as usize];
        let s = [
            silence(0.2),
            noise(rate, 0.5, -20.0, 1),
            silence(0.4), // a pause: 0.7..1.1
            noise(rate, 0.3, -26.0, 2),
            silence(0.15), // too short
            noise(rate, 0.4, -18.0, 3),
            silence(0.25), // 1.95..2.2
            noise(rate, 0.4, -20.0, 4),
            silence(0.3),
        ]
        .concat();
        let speech = speech_bounds(&s, rate);
        assert_eq!(pauses_s(&s, rate, speech), [(0.7, 1.1), (1.95, 2.2)]);
        // Only strictly inside: the silence before the onset and after the offset is not one.
        assert_eq!(pauses_s(&s, rate, (0, s.len())), [(0.7, 1.1), (1.95, 2.2)]);
        assert!(inner_pauses(&s, rate, (3200, 3200)).is_empty());
        assert!(inner_pauses(&[], rate, (0, 0)).is_empty());
    }

    #[test]
    fn pauses_over_background_noise_and_a_click_inside_one() {
        let rate = 8000;
        // Speech at -12 dBFS over line noise at -35 throughout: -40 dBFS alone hears no
        // pause, the clip's own levels do; a 10 ms click inside a pause does not split it.
        let mut s = noise(rate, 3.0, -35.0, 5);
        let words = [(0.3, 1.0), (1.6, 2.0), (2.3, 2.7)];
        for (k, &(a, b)) in words.iter().enumerate() {
            let w = noise(rate, b - a, -12.0, 6 + k as u64);
            let at = (a * f64::from(rate)) as usize;
            s.splice(at..at + w.len(), w);
        }
        let click = (1.3 * f64::from(rate)) as usize;
        s[click..click + 80].fill(12000);
        let speech = ((0.3 * 8000.0) as usize, (2.7 * 8000.0) as usize);
        assert_eq!(pauses_s(&s, rate, speech), [(1.0, 1.6), (2.0, 2.3)]);
        // A quiet recording's words 15 dB under its loudest are words, not pauses.
        let soft = [
            noise(rate, 0.5, -30.0, 9),
            noise(rate, 0.5, -45.0, 10),
            noise(rate, 0.5, -30.0, 11),
        ]
        .concat();
        assert!(inner_pauses(&soft, rate, (0, soft.len())).is_empty());
    }

    #[test]
    fn conversation_alternates_and_places_words() {
        let rec = |name: &str, rate: u32| {
            let mut samples = vec![0i16; rate as usize / 10];
            // Half a second of a 200 Hz tone: survives any of the rate conversions.
            samples.extend((0..rate as usize / 2).map(|i| {
                let t = i as f64 / f64::from(rate);
                ((t * 200.0 * std::f64::consts::TAU).sin() * 9000.0) as i16
            }));
            samples.extend(vec![0i16; rate as usize / 10]);
            let speech = speech_bounds(&samples, rate);
            Recording {
                name: name.into(),
                rate,
                samples,
                reference: name.into(),
                speech,
                pauses: Vec::new(),
            }
        };
        let corpus = Corpus {
            customer: vec![rec("c1", 16000), rec("c2", 16000)],
            assistant: vec![rec("a1", 22050)],
        };
        let conv = Conversation::build(&corpus, 8000, 10.0, 7).unwrap();
        assert!(conv.duration_secs() >= 10.0);
        assert_eq!(conv.customer.len(), conv.assistant.len());
        for (i, u) in conv.utterances.iter().enumerate() {
            let expected = if i % 2 == 0 {
                Channel::Customer
            } else {
                Channel::Assistant
            };
            assert_eq!(u.channel, expected);
            let (speaking, silent) = match u.channel {
                Channel::Customer => (&conv.customer, &conv.assistant),
                Channel::Assistant => (&conv.assistant, &conv.customer),
            };
            // Words where the utterance says, silence on the other side meanwhile.
            assert!(speaking[u.onset..u.offset].iter().any(|&s| s.abs() > 4000));
            assert!(silent[u.onset..u.offset].iter().all(|&s| s == 0));
            let dur = (u.offset - u.onset) as f64 / 8000.0;
            assert!((dur - 0.5).abs() < 0.03, "{dur}");
        }
    }

    #[test]
    fn a_recordings_pauses_are_placed_in_the_call_with_its_words() {
        let rate = 16000;
        let mut samples = vec![0i16; 1600];
        samples.extend(noise(rate, 0.5, -20.0, 1));
        samples.extend(vec![0i16; 8000]); // 0.6..1.1 s
        samples.extend(noise(rate, 0.5, -20.0, 2));
        samples.extend(vec![0i16; 1600]);
        let speech = speech_bounds(&samples, rate);
        let pauses = inner_pauses(&samples, rate, speech);
        assert_eq!(pauses, [(9600, 17600)]);
        let rec = |name: &str| Recording {
            name: name.into(),
            rate,
            samples: samples.clone(),
            reference: name.into(),
            speech,
            pauses: pauses.clone(),
        };
        let corpus = Corpus {
            customer: vec![rec("c")],
            assistant: vec![rec("a")],
        };
        let conv = Conversation::build(&corpus, 8000, 6.0, 3).unwrap();
        for u in &conv.utterances {
            // Half the samples at 8 kHz, 0.5 s after the onset, 0.5 s long.
            assert_eq!(u.pauses.len(), 1);
            let (a, b) = u.pauses[0];
            assert_eq!((a - u.onset, b - a), (4000, 4000), "{u:?}");
        }
    }

    /// A 16 kHz recording: `len` samples of a loud square wave between 0.1 s silences.
    fn buzz(name: &str, len: usize) -> Recording {
        let mut samples = vec![0i16; 1600];
        samples.extend((0..len).map(|i| if i % 2 == 0 { 9000 } else { -9000 }));
        samples.extend(vec![0i16; 1600]);
        let speech = speech_bounds(&samples, 16000);
        Recording {
            name: name.into(),
            rate: 16000,
            samples,
            reference: name.into(),
            speech,
            pauses: Vec::new(),
        }
    }

    #[test]
    fn monologues_keep_one_side_speaking_for_several_utterances() {
        let rec = |name: &str| buzz(name, 8000);
        let corpus = Corpus {
            customer: vec![rec("c")],
            assistant: vec![rec("a")],
        };
        let density = Density {
            turn_utterances: (3, 3),
            ..Density::default()
        };
        let conv = Conversation::build_with(&corpus, 16000, 30.0, 1, &density).unwrap();
        let channels: Vec<Channel> = conv.utterances.iter().map(|u| u.channel).collect();
        assert_eq!(
            channels[..6],
            [Channel::Customer; 3]
                .into_iter()
                .chain([Channel::Assistant; 3])
                .collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn each_listed_recording_is_said_once_in_order_and_nothing_else_by_the_customer() {
        let rec = |name: &str| buzz(name, 4000);
        let corpus = Corpus {
            customer: ["c0", "c1", "c2", "c3", "c4"].map(rec).to_vec(),
            assistant: vec![rec("a")],
        };
        let density = Density {
            turn_utterances: (1, 2),
            ..Density::default()
        };
        let conv = Conversation::build_once(&corpus, 8000, 3, &density, &[4, 1, 3]).unwrap();
        let said: Vec<&str> = conv
            .utterances
            .iter()
            .filter(|u| u.channel == Channel::Customer)
            .map(|u| u.recording.as_str())
            .collect();
        assert_eq!(said, ["c4", "c1", "c3"]);
        assert!(conv.duration_secs() < 30.0, "it stops once they are said");
        assert!(Conversation::build_once(&corpus, 8000, 3, &density, &[]).is_err());
        assert!(Conversation::build_once(&corpus, 8000, 3, &density, &[5]).is_err());
    }
}
