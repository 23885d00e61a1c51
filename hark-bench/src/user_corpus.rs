//! `--corpus DIR`: the user's own recordings, so a team can measure a transcriber on its own
//! calls. DIR holds WAV files (any rate, any format `wav::read` takes) and a `transcripts.tsv`:
//!
//! - a mono file is one utterance (`file<TAB>reference`): it becomes a customer turn of the
//!   generated conversations, exactly like the built-in clips; the assistant's turns come from
//!   DIR/`assistant.tsv` (same format, mono) or else the built-in corpus;
//! - a stereo file is a real call (`file<TAB>customer reference<TAB>assistant reference`,
//!   channel 0 the customer), played whole as one bench call (`--duration` does not apply;
//!   with more `--calls` than files they repeat). Its utterances are found by energy per
//!   channel, and its WER is per channel over the whole call, since no one has the
//!   references of its single utterances. An empty reference means "time it, no WER".
//!
//! One folder is either utterances or calls: mixing them is refused, as a run cannot report
//! both kinds of conversation in one set of numbers honestly.
//!
//! A mono utterance's pauses inside its words are found by energy
//! ([`crate::conversation::inner_pauses`]), unless DIR/`pauses.tsv` gives them:
//! `file<TAB>start_ms-end_ms[,start_ms-end_ms…]`, times within the file (a data set that
//! knows where it put its pauses; an empty column: none).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::conversation::{Conversation, Corpus, Density, Recording, Utterance, inner_pauses};
use crate::corpus_index::{Entry, parse_index};
use crate::protocol::Channel;
use crate::resample::resample;
use crate::{fetch, phone};

/// What a run's conversations are built from.
pub trait Conversations {
    /// Call `call`'s conversation at `rate`: generated ones last `duration_secs`, vary with
    /// `seed` and are as dense as `density` says; real calls are played as recorded.
    fn conversation(
        &self,
        rate: u32,
        duration_secs: f64,
        seed: u64,
        call: usize,
        density: &Density,
    ) -> anyhow::Result<Conversation>;

    /// How many different conversations one seed gives: real calls are one per recording.
    fn variants(&self) -> usize {
        1
    }

    /// Whether conversations last as recorded, whatever the schedule asks.
    fn recorded(&self) -> bool {
        false
    }
}

impl Conversations for Corpus {
    fn conversation(
        &self,
        rate: u32,
        duration_secs: f64,
        seed: u64,
        _call: usize,
        density: &Density,
    ) -> anyhow::Result<Conversation> {
        Conversation::build_with(self, rate, duration_secs, seed, density)
    }
}

/// A stereo recording of a real call, with the utterances found on each channel.
#[derive(Debug, Clone)]
pub struct RealCall {
    pub name: String,
    pub rate: u32,
    /// Channel 0 the customer, channel 1 the assistant.
    pub planes: [Vec<i16>; 2],
    /// Each channel's utterances, start and end in samples.
    pub utterances: [Vec<(usize, usize)>; 2],
    /// Each channel's reference for the whole call, if given.
    pub references: [Option<String>; 2],
}

impl RealCall {
    fn conversation(&self, rate: u32) -> anyhow::Result<Conversation> {
        let scale = f64::from(rate) / f64::from(self.rate.max(1));
        let [c, a] = &self.planes;
        let mut customer = resample(c, self.rate, rate)?;
        let mut assistant = resample(a, self.rate, rate)?;
        // Let the last words finish before the call ends, as generated conversations do.
        let len = customer.len().max(assistant.len()) + 2 * rate as usize;
        customer.resize(len, 0);
        assistant.resize(len, 0);
        let at = |i: usize| ((i as f64 * scale) as usize).min(len);
        let mut utterances: Vec<Utterance> = [Channel::Customer, Channel::Assistant]
            .into_iter()
            .flat_map(|channel| {
                self.utterances[channel.index()]
                    .iter()
                    .map(move |&(on, off)| Utterance {
                        channel,
                        recording: self.name.clone(),
                        reference: String::new(),
                        onset: at(on),
                        offset: at(off),
                        pauses: Vec::new(),
                    })
            })
            .collect();
        utterances.sort_by_key(|u| u.onset);
        Ok(Conversation {
            rate,
            customer,
            assistant,
            utterances,
            call_references: Some(self.references.clone()),
        })
    }
}

/// The speech a run plays: generated turn-taking conversations, or real calls.
pub enum Speech {
    Turns(Corpus),
    /// Turns in which the customer says every recording once, dealt round the calls
    /// (`--each`): call k says recordings k, k + calls, k + 2 calls, …
    Once {
        corpus: Corpus,
        calls: usize,
    },
    Calls(Vec<RealCall>),
}

impl Conversations for Speech {
    fn conversation(
        &self,
        rate: u32,
        duration_secs: f64,
        seed: u64,
        call: usize,
        density: &Density,
    ) -> anyhow::Result<Conversation> {
        match self {
            Self::Turns(corpus) => corpus.conversation(rate, duration_secs, seed, call, density),
            Self::Once { corpus, calls } => {
                // `load` keeps calls within the recordings, so no call's list is empty.
                let mine: Vec<usize> = (call..corpus.customer.len()).step_by(*calls).collect();
                Conversation::build_once(corpus, rate, seed ^ call as u64, density, &mine)
            }
            Self::Calls(real) if real.is_empty() => bail!("no real calls to play"),
            Self::Calls(real) => real[call % real.len()].conversation(rate),
        }
    }

    fn variants(&self) -> usize {
        match self {
            Self::Turns(_) => 1,
            Self::Once { calls, .. } => (*calls).max(1),
            Self::Calls(real) => real.len().max(1),
        }
    }

    fn recorded(&self) -> bool {
        !matches!(self, Self::Turns(_))
    }
}

/// Where a run's speech comes from (`--clips`, `--corpus`) and the phone line it goes
/// through (`--phone-band`: the rate, and whether μ-law).
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub clips: Option<PathBuf>,
    pub corpus: Option<PathBuf>,
    pub phone: Option<(u32, bool)>,
    /// `--each`: every utterance of the corpus said once, spread over this many calls.
    pub each: Option<usize>,
}

impl Speech {
    /// What `source` says to play: the user's corpus, else the built-in clips (fetched on
    /// first use), through a phone line if asked.
    pub async fn for_source(source: &Source) -> anyhow::Result<Self> {
        let source = source.clone();
        tokio::task::spawn_blocking(move || Self::load(&source))
            .await
            .context("loading the recordings panicked")?
    }

    /// Blocking [`Speech::for_source`].
    pub fn load(args: &Source) -> anyhow::Result<Self> {
        let builtin =
            || -> anyhow::Result<PathBuf> { Ok(fetch::clips_dir(args.clips.as_deref())?) };
        let speech = match &args.corpus {
            Some(dir) => Self::load_user(dir, builtin)?,
            None => Self::Turns(Corpus::load(&builtin()?)?),
        };
        let speech = match (speech, args.each) {
            (Self::Turns(corpus), Some(calls)) => {
                if calls == 0 || calls > corpus.customer.len() {
                    bail!(
                        "--each spreads {} recordings over {calls} calls: give 1 to {} calls",
                        corpus.customer.len(),
                        corpus.customer.len()
                    );
                }
                eprintln!(
                    "playing each of {} recordings once, over {calls} call(s) (--duration does not apply)",
                    corpus.customer.len()
                );
                Self::Once { corpus, calls }
            }
            (Self::Calls(_), Some(_)) => {
                bail!("--each is for a corpus of mono utterances; real calls are played whole")
            }
            (speech, _) => speech,
        };
        if let Self::Calls(calls) = &speech {
            eprintln!(
                "playing {} real call(s) from {}, each whole (--duration does not apply)",
                calls.len(),
                args.corpus.as_deref().unwrap_or(Path::new("")).display()
            );
        }
        match args.phone {
            Some((rate, mu_law)) => speech.through_phone(rate, mu_law),
            None => Ok(speech),
        }
    }

    /// Loads a user corpus folder; `builtin` gives the built-in clips folder, asked only when
    /// mono utterances need the built-in assistant's turns.
    pub fn load_user(
        dir: &Path,
        builtin: impl FnOnce() -> anyhow::Result<PathBuf>,
    ) -> anyhow::Result<Self> {
        if !dir.is_dir() {
            bail!("{}: no such folder", dir.display());
        }
        let index = dir.join("transcripts.tsv");
        let text = match std::fs::read_to_string(&index) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => bail!("cannot read {}: {e}", index.display()),
        };
        let mut problems = Vec::new();
        let entries = parse_index(&text, &index, &mut problems);
        if entries.is_empty() && problems.is_empty() {
            bail!(
                "{} is missing or lists no files. {EXPECTED}",
                index.display()
            );
        }
        let mut utterances = Vec::new();
        let mut calls = Vec::new();
        for e in &entries {
            match load_entry(dir, e) {
                Ok(Loaded::Utterance(r)) => utterances.push(r),
                Ok(Loaded::Call(c)) => calls.push(c),
                Err(reason) => problems.push(e.problem(&reason)),
            }
        }
        if !utterances.is_empty() && !calls.is_empty() {
            problems.push(format!(
                "{}: lists {} mono utterances and {} stereo calls: put them in separate folders \
                 (a run plays either generated conversations or real calls)",
                index.display(),
                utterances.len(),
                calls.len()
            ));
        }
        let mut assistant = Vec::new();
        let assistant_index = dir.join("assistant.tsv");
        if !utterances.is_empty() && assistant_index.is_file() {
            let text = std::fs::read_to_string(&assistant_index)
                .with_context(|| format!("cannot read {}", assistant_index.display()))?;
            for e in parse_index(&text, &assistant_index, &mut problems) {
                match load_entry(dir, &e) {
                    Ok(Loaded::Utterance(r)) => assistant.push(r),
                    Ok(Loaded::Call(_)) => {
                        problems.push(e.problem("a stereo file: the assistant's turns are mono"))
                    }
                    Err(reason) => problems.push(e.problem(&reason)),
                }
            }
        }
        let pauses_index = dir.join("pauses.tsv");
        if pauses_index.is_file() {
            let text = std::fs::read_to_string(&pauses_index)
                .with_context(|| format!("cannot read {}", pauses_index.display()))?;
            let given = parse_pauses(&text, &pauses_index, &mut problems);
            set_pauses(&given, &mut utterances, &mut assistant, &mut problems);
        }
        if !problems.is_empty() {
            let mut msg = format!("cannot use the corpus in {}:", dir.display());
            for p in &problems {
                let _ = write!(msg, "\n  {p}");
            }
            bail!(msg);
        }
        if !calls.is_empty() {
            return Ok(Self::Calls(calls));
        }
        if assistant.is_empty() {
            let clips = builtin().context("the assistant's turns come from the built-in clips")?;
            assistant = Corpus::load(&clips)?.assistant;
        }
        Ok(Self::Turns(Corpus {
            customer: utterances,
            assistant,
        }))
    }

    /// Every recording through a phone line, then at `rate`.
    pub fn through_phone(self, rate: u32, mu_law: bool) -> anyhow::Result<Self> {
        let scale =
            |i: usize, from: u32| (i as u64 * u64::from(rate) / u64::from(from.max(1))) as usize;
        let turns = |corpus: Corpus| -> anyhow::Result<Corpus> {
            let line = |recs: Vec<Recording>| -> anyhow::Result<Vec<Recording>> {
                recs.into_iter()
                    .map(|r| {
                        let samples = phone::phone_line(&r.samples, r.rate, rate, mu_law)?;
                        let speech = (scale(r.speech.0, r.rate), scale(r.speech.1, r.rate));
                        let pauses = r
                            .pauses
                            .iter()
                            .map(|&(a, b)| (scale(a, r.rate), scale(b, r.rate)))
                            .collect();
                        Ok(Recording {
                            rate,
                            samples,
                            speech,
                            pauses,
                            ..r
                        })
                    })
                    .collect()
            };
            Ok(Corpus {
                customer: line(corpus.customer)?,
                assistant: line(corpus.assistant)?,
            })
        };
        match self {
            Self::Turns(corpus) => Ok(Self::Turns(turns(corpus)?)),
            Self::Once { corpus, calls } => Ok(Self::Once {
                corpus: turns(corpus)?,
                calls,
            }),
            Self::Calls(calls) => calls
                .into_iter()
                .map(|c| {
                    let [p0, p1] = &c.planes;
                    let planes = [
                        phone::phone_line(p0, c.rate, rate, mu_law)?,
                        phone::phone_line(p1, c.rate, rate, mu_law)?,
                    ];
                    let utterances = c.utterances.clone().map(|u| {
                        u.into_iter()
                            .map(|(on, off)| (scale(on, c.rate), scale(off, c.rate)))
                            .collect()
                    });
                    Ok(RealCall {
                        rate,
                        planes,
                        utterances,
                        ..c
                    })
                })
                .collect::<anyhow::Result<_>>()
                .map(Self::Calls),
        }
    }
}

const EXPECTED: &str = "Expected one line per WAV file, paths relative to the folder: \
    `file<TAB>reference` for a mono utterance, `file<TAB>customer reference<TAB>assistant reference` \
    for a stereo call (channel 0 the customer; an empty reference is timed without WER); \
    blank lines and # comments are allowed";

enum Loaded {
    Utterance(Recording),
    Call(RealCall),
}

fn load_entry(dir: &Path, e: &Entry) -> Result<Loaded, String> {
    let path = dir.join(&e.file);
    if !path.is_file() {
        // `clip.wav hello there`: spaces where the TAB should be make the whole line a
        // file name. Say so rather than send the user looking for the file.
        if e.references.is_empty() && e.file.contains(char::is_whitespace) {
            return Err(
                "the line has no TAB: the file name and its reference transcript must \
                        be separated by a TAB character, not spaces"
                    .into(),
            );
        }
        return Err("file not found".into());
    }
    let audio = crate::wav::read(&path).map_err(|err| {
        format!(
            "not a WAV file it can read ({})",
            err.root_cause().to_string().trim()
        )
    })?;
    match audio.planes.as_slice() {
        [mono] => {
            let Some(reference) = e.reference(0) else {
                return Err("no reference: a mono utterance needs its transcript".into());
            };
            if e.references.len() > 1 {
                return Err("a mono file takes one reference column".into());
            }
            let found = utterances(mono, audio.rate);
            let (Some(first), Some(last)) = (found.first(), found.last()) else {
                return Err("no speech found".into());
            };
            let speech = (first.0, last.1);
            Ok(Loaded::Utterance(Recording {
                name: e.file.clone(),
                rate: audio.rate,
                samples: mono.clone(),
                reference,
                speech,
                pauses: inner_pauses(mono, audio.rate, speech),
            }))
        }
        [customer, assistant] => {
            let found = [
                utterances(customer, audio.rate),
                utterances(assistant, audio.rate),
            ];
            if found.iter().all(Vec::is_empty) {
                return Err("no speech found on either channel".into());
            }
            for (channel, name) in [(0, "customer"), (1, "assistant")] {
                if found[channel].is_empty() && e.reference(channel).is_some() {
                    return Err(format!(
                        "a {name} reference but no speech found on channel {channel}"
                    ));
                }
            }
            Ok(Loaded::Call(RealCall {
                name: e.file.clone(),
                rate: audio.rate,
                planes: [customer.clone(), assistant.clone()],
                utterances: found,
                references: [e.reference(0), e.reference(1)],
            }))
        }
        planes => Err(format!(
            "{} channels: only mono utterances and stereo calls",
            planes.len()
        )),
    }
}

/// One line of a `pauses.tsv`.
struct GivenPauses {
    line: usize,
    file: String,
    /// Each pause's start and end in ms within the file, in order.
    ms: Vec<(f64, f64)>,
}

/// The pauses a `pauses.tsv` gives, in its order. Bad lines go to `problems`.
fn parse_pauses(text: &str, index: &Path, problems: &mut Vec<String>) -> Vec<GivenPauses> {
    let mut seen = HashSet::new();
    let mut given = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let at = format!("{}:{line}", index.display());
        let mut columns = raw.split('\t').map(str::trim);
        let file = columns.next().unwrap_or_default().to_string();
        let spans = columns.next().unwrap_or_default();
        if file.is_empty() {
            problems.push(format!("{at}: no file name before the first tab"));
            continue;
        }
        if columns.next().is_some() {
            problems.push(format!(
                "{at}: {file}: more than 2 columns (file, start_ms-end_ms,…)"
            ));
            continue;
        }
        let parsed: Result<Vec<(f64, f64)>, String> = spans
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (a, b) = p
                    .split_once('-')
                    .ok_or_else(|| format!("`{p}` is not start_ms-end_ms"))?;
                let ms = |v: &str| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| format!("`{p}` is not start_ms-end_ms"))
                };
                let (a, b) = (ms(a)?, ms(b)?);
                if a >= b {
                    return Err(format!("`{p}` ends before it starts"));
                }
                Ok((a, b))
            })
            .collect();
        match parsed {
            Err(why) => problems.push(format!("{at}: {file}: {why}")),
            Ok(_) if !seen.insert(file.clone()) => {
                problems.push(format!("{at}: {file}: listed twice"));
            }
            Ok(mut ms) => {
                ms.sort_by(|x, y| x.0.total_cmp(&y.0));
                given.push(GivenPauses { line, file, ms });
            }
        }
    }
    given
}

/// The pauses `pauses.tsv` gives, in place of those found by energy, on the mono
/// recordings they name; a file that is none of them, or a pause past its end, is a problem.
fn set_pauses(
    given: &[GivenPauses],
    customer: &mut [Recording],
    assistant: &mut [Recording],
    problems: &mut Vec<String>,
) {
    for GivenPauses {
        line,
        file,
        ms: pauses,
    } in given
    {
        let at = format!("pauses.tsv:{line}: {file}");
        let Some(rec) = customer
            .iter_mut()
            .chain(assistant.iter_mut())
            .find(|r| &r.name == file)
        else {
            problems.push(format!(
                "{at}: not a mono utterance of transcripts.tsv or assistant.tsv"
            ));
            continue;
        };
        let len_ms = rec.samples.len() as f64 * 1000.0 / f64::from(rec.rate.max(1));
        if let Some((_, end)) = pauses.iter().find(|(_, end)| *end > len_ms) {
            problems.push(format!(
                "{at}: a pause ends at {end} ms, after the file's {len_ms:.0} ms"
            ));
            continue;
        }
        let sample = |ms: f64| (ms * f64::from(rec.rate) / 1000.0).round() as usize;
        rec.pauses = pauses
            .iter()
            .map(|&(a, b)| (sample(a), sample(b)))
            .collect();
    }
}

/// Analysis window.
const WINDOW_MS: usize = 10;
/// Windows quieter than this are silence whatever the channel's level.
const FLOOR_DBFS: f64 = -60.0;
/// Speech is within this many dB of the channel's own speech level, so the other side's
/// echo or cross-talk, much quieter on this channel, is not taken for its speech.
const BELOW_LEVEL_DB: f64 = 25.0;
/// Speech stands this far above a noisy channel's background, so line noise does not join
/// utterances into one; but it never needs to be closer than `BELOW_LEVEL_MIN_DB` to the
/// speech level (on a channel whose background is its own speech).
const ABOVE_BACKGROUND_DB: f64 = 10.0;
const BELOW_LEVEL_MIN_DB: f64 = 15.0;
/// A quieter stretch at least this long ends an utterance (pauses within a sentence are
/// shorter).
const MIN_GAP_MS: usize = 600;
/// Shorter bursts (clicks, coughs, echo of a plosive) are not utterances.
const MIN_SPEECH_MS: usize = 150;

/// Speech stretches of one channel, start and end in samples, by 10 ms window energy against
/// a threshold relative to the channel's own speech level.
pub fn utterances(samples: &[i16], rate: u32) -> Vec<(usize, usize)> {
    let win = (rate as usize * WINDOW_MS / 1000).max(1);
    let levels: Vec<f64> = samples
        .chunks(win)
        .map(|w| {
            let energy: f64 = w.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
            10.0 * (energy / w.len() as f64 / (32768.0 * 32768.0))
                .max(1e-12)
                .log10()
        })
        .collect();
    let mut active: Vec<f64> = levels
        .iter()
        .copied()
        .filter(|&l| l >= FLOOR_DBFS)
        .collect();
    if active.is_empty() {
        return Vec::new();
    }
    active.sort_by(f64::total_cmp);
    // The channel's speech level: loud enough to be speech, robust to a few loud clicks;
    // and its background (line noise, echo): the quietest of what is not silence.
    let level = active[(active.len() * 9 / 10).min(active.len() - 1)];
    let background = active[active.len() / 10];
    let threshold = (level - BELOW_LEVEL_DB)
        .max((background + ABOVE_BACKGROUND_DB).min(level - BELOW_LEVEL_MIN_DB))
        .max(FLOOR_DBFS);
    let gap = MIN_GAP_MS.div_ceil(WINDOW_MS);
    let min_len = MIN_SPEECH_MS.div_ceil(WINDOW_MS);
    let mut found: Vec<(usize, usize)> = Vec::new();
    let mut current: Option<(usize, usize)> = None;
    for (i, _) in levels.iter().enumerate().filter(|(_, l)| **l >= threshold) {
        current = match current {
            Some((start, end)) if i - end < gap => Some((start, i + 1)),
            Some(done) => {
                found.push(done);
                Some((i, i + 1))
            }
            None => Some((i, i + 1)),
        };
    }
    found.extend(current);
    found
        .into_iter()
        .filter(|(start, end)| end - start >= min_len)
        .map(|(start, end)| (start * win, (end * win).min(samples.len())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noise-like "speech" at `db` dBFS RMS, deterministic.
    fn speech(rate: u32, secs: f64, db: f64, seed: u64) -> Vec<i16> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let amp = 32768.0 * 10f64.powf(db / 20.0) * 3f64.sqrt();
        (0..(secs * f64::from(rate)) as usize)
            .map(|_| ((rng.f64() * 2.0 - 1.0) * amp) as i16)
            .collect()
    }

    fn silence(rate: u32, secs: f64) -> Vec<i16> {
        vec![0; (secs * f64::from(rate)) as usize]
    }

    #[test]
    fn finds_each_utterance_and_ignores_short_pauses_and_clicks() {
        let rate = 16000;
        let mut s = silence(rate, 0.5);
        s.extend(speech(rate, 1.0, -20.0, 1)); // 0.5..1.5
        s.extend(silence(rate, 0.3)); // a pause within the utterance
        s.extend(speech(rate, 0.7, -26.0, 2)); // ..2.5
        s.extend(silence(rate, 1.0));
        s.extend(speech(rate, 0.05, -10.0, 3)); // a click at 3.5
        s.extend(silence(rate, 1.0));
        s.extend(speech(rate, 0.8, -18.0, 4)); // 4.55..5.35
        s.extend(silence(rate, 0.5));
        let found = utterances(&s, rate);
        let secs: Vec<(f64, f64)> = found
            .iter()
            .map(|&(a, b)| (a as f64 / 16000.0, b as f64 / 16000.0))
            .collect();
        assert_eq!(found.len(), 2, "{secs:?}");
        for ((a, b), (want_a, want_b)) in secs.iter().zip([(0.5, 2.5), (4.55, 5.35)]) {
            assert!(
                (a - want_a).abs() <= 0.011 && (b - want_b).abs() <= 0.011,
                "{secs:?}"
            );
        }
    }

    #[test]
    fn the_other_sides_echo_is_not_speech() {
        let rate = 8000;
        // This channel speaks at -18 dBFS; the other side's echo comes through at -50.
        let mut s = speech(rate, 1.2, -50.0, 5);
        s.extend(silence(rate, 0.8));
        s.extend(speech(rate, 1.0, -18.0, 6)); // 2.0..3.0
        s.extend(speech(rate, 1.5, -50.0, 7));
        s.extend(silence(rate, 0.8));
        assert_eq!(utterances(&s, rate), vec![(16000, 24000)]);
        // Quiet but clean speech is still speech; digital silence is nothing.
        let quiet = [silence(rate, 0.5), speech(rate, 0.5, -45.0, 8)].concat();
        assert_eq!(utterances(&quiet, rate), vec![(4000, 8000)]);
        assert!(utterances(&silence(rate, 2.0), rate).is_empty());
        assert!(utterances(&[], rate).is_empty());
    }

    #[test]
    fn line_noise_does_not_join_utterances() {
        let rate = 16000;
        // Speech at -20 dBFS over constant noise at -42, 10 dB under the speech threshold
        // alone would put it at -45.
        let noise = |secs| speech(rate, secs, -42.0, 9);
        let s = [
            noise(1.0),
            speech(rate, 1.0, -20.0, 10),
            noise(1.0),
            speech(rate, 1.0, -20.0, 11),
            noise(4.0),
        ]
        .concat();
        assert_eq!(utterances(&s, rate), vec![(16000, 32000), (48000, 64000)]);
    }

    fn write_mono(path: &Path, rate: u32, samples: &[i16]) {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(path, spec).unwrap();
        for &s in samples {
            w.write_sample(s).unwrap();
        }
        w.finalize().unwrap();
    }

    /// Words at 0.3–0.8 s and 1.4–1.9 s over noise at -50 dBFS: one pause, 0.8–1.4 s.
    fn paused(rate: u32) -> Vec<i16> {
        [
            speech(rate, 0.3, -50.0, 1),
            speech(rate, 0.5, -18.0, 2),
            speech(rate, 0.6, -50.0, 3),
            speech(rate, 0.5, -18.0, 4),
            speech(rate, 0.4, -50.0, 5),
        ]
        .concat()
    }

    fn ms(rec: &Recording) -> Vec<(usize, usize)> {
        let ms = |i: usize| i * 1000 / rec.rate as usize;
        rec.pauses.iter().map(|&(a, b)| (ms(a), ms(b))).collect()
    }

    #[test]
    fn a_corpus_gives_its_pauses_or_they_are_found_in_the_words() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_mono(&d.join("a.wav"), 16000, &paused(16000));
        write_mono(&d.join("b.wav"), 8000, &paused(8000));
        write_mono(&d.join("c.wav"), 16000, &paused(16000));
        std::fs::write(
            d.join("transcripts.tsv"),
            "a.wav\tone two\nb.wav\tthree four\n",
        )
        .unwrap();
        std::fs::write(d.join("assistant.tsv"), "c.wav\tfive six\n").unwrap();
        let no_builtin = || -> anyhow::Result<PathBuf> { bail!("not needed") };
        let load = || match Speech::load_user(d, no_builtin) {
            Ok(Speech::Turns(c)) => c,
            Ok(_) => panic!("mono utterances are turns"),
            Err(e) => panic!("{e:#}"),
        };
        // By energy, at either rate.
        let corpus = load();
        assert_eq!(ms(&corpus.customer[0]), [(800, 1400)]);
        assert_eq!(ms(&corpus.customer[1]), [(800, 1400)]);
        // Through a phone line (8 kHz, μ-law) they are where they were.
        let Speech::Turns(phone) = Speech::Turns(corpus).through_phone(8000, true).unwrap() else {
            unreachable!()
        };
        assert_eq!(ms(&phone.customer[0]), [(800, 1400)]);
        // And the phone line's audio has them too, within a window or two.
        let r = &phone.customer[0];
        let found = inner_pauses(&r.samples, r.rate, r.speech);
        assert_eq!(found.len(), 1, "{found:?}");
        let near = |a: usize, b: usize| a.abs_diff(b) <= 160;
        assert!(
            near(found[0].0, r.pauses[0].0) && near(found[0].1, r.pauses[0].1),
            "{found:?} {:?}",
            r.pauses
        );

        // pauses.tsv's own, exactly, for the files it lists.
        std::fs::write(
            d.join("pauses.tsv"),
            "# file\tpauses\na.wav\t500-700, 1000.5-1300\nc.wav\t\n",
        )
        .unwrap();
        let corpus = load();
        assert_eq!(corpus.customer[0].pauses, [(8000, 11200), (16008, 20800)]);
        assert_eq!(ms(&corpus.customer[1]), [(800, 1400)]);
        assert!(corpus.assistant[0].pauses.is_empty());

        std::fs::write(
            d.join("pauses.tsv"),
            "a.wav\t700-500\nb.wav\t5-x\nc.wav\t100-9000\nnone.wav\t1-2\n\t1-2\n",
        )
        .unwrap();
        let e = format!("{:#}", Speech::load_user(d, no_builtin).err().unwrap());
        for want in [
            "pauses.tsv:1: a.wav: `700-500` ends before it starts",
            "pauses.tsv:2: b.wav: `5-x` is not start_ms-end_ms",
            "pauses.tsv:3: c.wav: a pause ends at 9000 ms, after the file's 2300 ms",
            "pauses.tsv:4: none.wav: not a mono utterance",
            "pauses.tsv:5: no file name",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    #[test]
    fn parses_the_index_and_reports_bad_lines() {
        let text = "# my calls\n\
                    a.wav\thello there\n\
                    \n\
                    call.wav\tcustomer words\tassistant words\n\
                    quiet.wav\t\tonly the assistant\n\
                    bare.wav\n\
                    a.wav\tagain\n\
                    \tno file\n\
                    x.wav\t1\t2\t3\n";
        let mut problems = Vec::new();
        let index = Path::new("d/transcripts.tsv");
        let e = parse_index(text, index, &mut problems);
        let files: Vec<&str> = e.iter().map(|e| e.file.as_str()).collect();
        assert_eq!(files, ["a.wav", "call.wav", "quiet.wav", "bare.wav"]);
        assert_eq!(e[0].line, 2);
        assert_eq!(e[0].reference(0).as_deref(), Some("hello there"));
        assert_eq!(e[1].reference(1).as_deref(), Some("assistant words"));
        assert_eq!(e[2].reference(0), None);
        assert_eq!(e[3].reference(0), None);
        assert_eq!(
            problems,
            [
                "d/transcripts.tsv:7: a.wav: listed twice",
                "d/transcripts.tsv:8: no file name before the first tab",
                "d/transcripts.tsv:9: x.wav: 4 columns; at most 3 (file, customer reference, assistant reference)",
            ]
        );
    }
}
