//! A Whisper model's tokens: the tokenizer, the special tokens a decode starts with or
//! never writes, and the languages a multilingual model knows.

use std::path::Path;

use serde::Deserialize;
use tracing::warn;

use super::error::LoadError;
use super::language::{self, Spoken};

/// A rule on the scores before a token is picked, as CTranslate2's and Hugging Face's
/// logits processors are: it masks what a decode may not write.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenRule {
    /// Never these (`config.json`'s `suppress_ids`, and every special token but the end:
    /// timestamps, languages, tasks).
    Suppress(Vec<u32>),
    /// Not these as the first token (`suppress_ids_begin`: a blank, the end).
    SuppressAtBegin(Vec<u32>),
}

impl TokenRule {
    /// Masks the tokens the rule forbids at `step` (0: the first after the start).
    pub fn apply(&self, logits: &mut [f32], step: usize) {
        let tokens = match self {
            Self::Suppress(tokens) => tokens,
            Self::SuppressAtBegin(tokens) if step == 0 => tokens,
            Self::SuppressAtBegin(_) => return,
        };
        for &t in tokens {
            if let Some(l) = logits.get_mut(t as usize) {
                *l = f32::NEG_INFINITY;
            }
        }
    }
}

/// The tokenizer and the special tokens, shared by every decoder thread.
pub struct Vocabulary {
    pub tokenizer: tokenizers::Tokenizer,
    pub eot: u32,
    /// `<|startoftranscript|>` [`<|en|>` `<|transcribe|>`] `<|notimestamps|>`.
    start: Vec<u32>,
    pub sot: u32,
    no_timestamps: u32,
    /// A multilingual model's language tokens (none for an English-only one), with
    /// `<|transcribe|>`: a start names the language, or the model finds it.
    pub languages: Vec<(&'static str, u32)>,
    transcribe: Option<u32>,
    pub start_of_prev: Option<u32>,
    pub no_speech: Option<u32>,
    /// What Whisper writes for sounds rather than speech: "♪", brackets and parentheses
    /// for "[Music]" and "(beeping)", other symbols (`config.json`'s `suppress_ids`, which
    /// the token rules never let a decode write). How likely the model finds one of them
    /// as its first token is the sound guard's signal ([`super::filter`]).
    pub sounds: Vec<u32>,
    /// What a decode may never write (applied to the scores in this order).
    pub rules: Vec<TokenRule>,
    /// The tokens that end a sentence (".", "?", "!"): how likely the model finds one of
    /// them right after the last word is its own judgement that the words are finished
    /// ([`super::Decoded::ends`]).
    pub terminal: Vec<u32>,
}

/// `config.json`'s token lists (CTranslate2's conversion writes Whisper's generation
/// config there).
#[derive(Deserialize, Default)]
struct ModelConfig {
    #[serde(default)]
    suppress_ids: Vec<u32>,
    #[serde(default)]
    suppress_ids_begin: Vec<u32>,
}

impl Vocabulary {
    /// Reads `tokenizer.json` and `config.json` (optional) of `dir`, for a model of `vocab`
    /// tokens.
    pub fn load(dir: &Path, vocab: usize) -> Result<Self, LoadError> {
        let tokenizer = read_tokenizer(&dir.join("tokenizer.json"))?;
        // Every id the tokenizer writes must have an embedding (Whisper's tokenizers stop
        // before the timestamps; a fine-tune's added tokens may not fit its weights).
        let ids = tokenizer.get_vocab_size(true);
        if ids > vocab {
            return Err(LoadError::Shape(format!(
                "the tokenizer has {ids} tokens, the model's embeddings {vocab}"
            )));
        }
        let config_path = dir.join("config.json");
        let config: ModelConfig = match std::fs::read(&config_path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| LoadError::Config {
                path: config_path.clone(),
                source,
            })?,
            Err(_) => ModelConfig::default(),
        };
        let id = |t: &str| tokenizer.token_to_id(t);
        let need = |t: &'static str| id(t).ok_or(LoadError::Token(t));
        let eot = need("<|endoftext|>")?;
        let multilingual = vocab >= 51_865;
        let sot = need("<|startoftranscript|>")?;
        let mut start = vec![sot];
        let (languages, transcribe) = match multilingual {
            true => {
                start.push(need("<|en|>")?);
                start.push(need("<|transcribe|>")?);
                let languages = language::LANGUAGES
                    .iter()
                    .filter_map(|(code, _)| Some((*code, id(&format!("<|{code}|>"))?)))
                    .filter(|(_, t)| (*t as usize) < vocab)
                    .collect();
                (languages, id("<|transcribe|>"))
            }
            false => (Vec::new(), None),
        };
        let no_timestamps = need("<|notimestamps|>")?;
        start.push(no_timestamps);
        let sounds = config.suppress_ids.clone();
        let mut suppress = config.suppress_ids;
        // Every special token but the end: timestamps, languages, tasks.
        suppress.extend((eot + 1)..vocab as u32);
        let mut suppress_begin = config.suppress_ids_begin;
        if suppress_begin.is_empty() {
            suppress_begin = [id(" "), Some(eot)].into_iter().flatten().collect();
        }
        let terminal = [".", "?", "!"].into_iter().filter_map(id).collect();
        Ok(Self {
            terminal,
            start_of_prev: id("<|startofprev|>"),
            no_speech: id("<|nospeech|>").or_else(|| id("<|nocaptions|>")),
            eot,
            sounds,
            start,
            sot,
            no_timestamps,
            languages,
            transcribe,
            rules: vec![
                TokenRule::Suppress(suppress),
                TokenRule::SuppressAtBegin(suppress_begin),
            ],
            tokenizer,
        })
    }

    /// Whether it transcribes `spoken`: an English-only model speaks English alone.
    pub fn speaks(&self, spoken: Spoken) -> bool {
        match spoken {
            Spoken::Known(code) => code == "en" || self.languages.iter().any(|(c, _)| *c == code),
            Spoken::Auto => !self.languages.is_empty(),
        }
    }

    /// The start of a decode in `code`: English's is the model's own.
    pub fn start_in(&self, code: &str) -> Vec<u32> {
        match (
            self.languages.iter().find(|(c, _)| *c == code),
            self.transcribe,
        ) {
            (Some(&(_, language)), Some(task)) if code != "en" => {
                vec![self.sot, language, task, self.no_timestamps]
            }
            _ => self.start.clone(),
        }
    }

    /// `text`'s tokens as Whisper reads text after a space (a prompt, a draft), or none if
    /// the tokenizer cannot encode it (logged: the decode goes on without that text).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match text.trim() {
            "" => Vec::new(),
            text => match self.tokenizer.encode(format!(" {text}"), false) {
                Ok(enc) => enc.get_ids().to_vec(),
                Err(e) => {
                    warn!(error = %e, "whisper: the tokenizer could not encode a prompt or draft");
                    Vec::new()
                }
            },
        }
    }

    /// The text of `tokens`, special tokens left out; none if the tokenizer cannot decode
    /// them (logged: the utterance then has no words).
    pub fn text(&self, tokens: &[u32]) -> String {
        match self.tokenizer.decode(tokens, true) {
            Ok(text) => text.trim().to_owned(),
            Err(e) => {
                warn!(error = %e, "whisper: the tokenizer could not decode a decode's tokens");
                String::new()
            }
        }
    }
}

/// Reads `tokenizer.json`, putting back the byte-level BPE's first merge ("Ġ t") where
/// the file lacks it: the multilingual Whisper tokenizers converted for CTranslate2 (base's
/// among them) dropped it, as a converter skipping a merges file's `#version` line would, so
/// every word after a space that starts with "t" was encoded as "Ġ", "t", … where Whisper
/// writes "Ġt…": a draft of " to try" then fails at its first such word and a prompt reads
/// as words the model never saw. Decoding ids to text never used the merges.
fn read_tokenizer(path: &Path) -> Result<tokenizers::Tokenizer, LoadError> {
    let error = |e: &dyn std::fmt::Display| LoadError::Tokenizer {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(&e))?;
    let mut json: serde_json::Value = serde_json::from_str(&text).map_err(|e| error(&e))?;
    let model = json.get_mut("model");
    let has_token = model
        .as_ref()
        .and_then(|m| m.get("vocab"))
        .is_some_and(|v| v.get("Ġt").is_some());
    if let Some(merges) = model
        .and_then(|m| m.get_mut("merges"))
        .and_then(|m| m.as_array_mut())
        && has_token
    {
        let first = |m: &serde_json::Value| match m {
            serde_json::Value::String(s) => s == "Ġ t",
            serde_json::Value::Array(pair) => pair == &["Ġ", "t"],
            _ => false,
        };
        if !merges.iter().any(first) {
            let pair = match merges.first() {
                Some(serde_json::Value::Array(_)) => serde_json::json!(["Ġ", "t"]),
                _ => serde_json::json!("Ġ t"),
            };
            merges.insert(0, pair);
        }
    }
    serde_json::to_string(&json)
        .map_err(|e| error(&e))?
        .parse()
        .map_err(|e: tokenizers::Error| error(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokenizer_without_its_first_merge_gets_it_back() {
        let file = |merges: &str| {
            format!(
                r#"{{"version": "1.0", "added_tokens": [], "normalizer": null,
                "pre_tokenizer": {{"type": "ByteLevel", "add_prefix_space": false,
                    "trim_offsets": true, "use_regex": true}},
                "post_processor": null, "decoder": {{"type": "ByteLevel",
                    "add_prefix_space": true, "trim_offsets": true, "use_regex": true}},
                "model": {{"type": "BPE", "dropout": null, "unk_token": null,
                    "continuing_subword_prefix": "", "end_of_word_suffix": "",
                    "fuse_unk": false, "byte_fallback": false,
                    "vocab": {{"Ġ": 0, "t": 1, "r": 2, "y": 3, "Ġt": 4, "ry": 5, "Ġtry": 6}},
                    "merges": [{merges}]}}}}"#
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        // Without it, with it, and without it written as pairs.
        for merges in [
            r#""r y", "Ġt ry""#,
            r#""Ġ t", "r y", "Ġt ry""#,
            r#"["r", "y"], ["Ġt", "ry"]"#,
        ] {
            std::fs::write(&path, file(merges)).unwrap();
            let ids = read_tokenizer(&path)
                .unwrap()
                .encode(" try", false)
                .unwrap();
            assert_eq!(ids.get_ids(), [6], "merges {merges}");
        }
        for odd in [r#"{"model": "x"}"#, "[1, 2]", "{"] {
            std::fs::write(&path, odd).unwrap();
            assert!(read_tokenizer(&path).is_err(), "{odd}");
        }
    }
}
