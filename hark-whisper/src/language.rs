//! The languages Whisper's multilingual models transcribe, by the codes its tokenizer
//! spells as `<|es|>`, `<|de|>`, … (openai/whisper `tokenizer.py`, in its order).

/// `auto`: the model picks the language of each utterance from its first decoder step.
pub const AUTO: &str = "auto";

/// Whisper's language codes and names, in the order of its language tokens.
pub const LANGUAGES: &[(&str, &str)] = &[
    ("en", "english"),
    ("zh", "chinese"),
    ("de", "german"),
    ("es", "spanish"),
    ("ru", "russian"),
    ("ko", "korean"),
    ("fr", "french"),
    ("ja", "japanese"),
    ("pt", "portuguese"),
    ("tr", "turkish"),
    ("pl", "polish"),
    ("ca", "catalan"),
    ("nl", "dutch"),
    ("ar", "arabic"),
    ("sv", "swedish"),
    ("it", "italian"),
    ("id", "indonesian"),
    ("hi", "hindi"),
    ("fi", "finnish"),
    ("vi", "vietnamese"),
    ("he", "hebrew"),
    ("uk", "ukrainian"),
    ("el", "greek"),
    ("ms", "malay"),
    ("cs", "czech"),
    ("ro", "romanian"),
    ("da", "danish"),
    ("hu", "hungarian"),
    ("ta", "tamil"),
    ("no", "norwegian"),
    ("th", "thai"),
    ("ur", "urdu"),
    ("hr", "croatian"),
    ("bg", "bulgarian"),
    ("lt", "lithuanian"),
    ("la", "latin"),
    ("mi", "maori"),
    ("ml", "malayalam"),
    ("cy", "welsh"),
    ("sk", "slovak"),
    ("te", "telugu"),
    ("fa", "persian"),
    ("lv", "latvian"),
    ("bn", "bengali"),
    ("sr", "serbian"),
    ("az", "azerbaijani"),
    ("sl", "slovenian"),
    ("kn", "kannada"),
    ("et", "estonian"),
    ("mk", "macedonian"),
    ("br", "breton"),
    ("eu", "basque"),
    ("is", "icelandic"),
    ("hy", "armenian"),
    ("ne", "nepali"),
    ("mn", "mongolian"),
    ("bs", "bosnian"),
    ("kk", "kazakh"),
    ("sq", "albanian"),
    ("sw", "swahili"),
    ("gl", "galician"),
    ("mr", "marathi"),
    ("pa", "punjabi"),
    ("si", "sinhala"),
    ("km", "khmer"),
    ("sn", "shona"),
    ("yo", "yoruba"),
    ("so", "somali"),
    ("af", "afrikaans"),
    ("oc", "occitan"),
    ("ka", "georgian"),
    ("be", "belarusian"),
    ("tg", "tajik"),
    ("sd", "sindhi"),
    ("gu", "gujarati"),
    ("am", "amharic"),
    ("yi", "yiddish"),
    ("lo", "lao"),
    ("uz", "uzbek"),
    ("fo", "faroese"),
    ("ht", "haitian creole"),
    ("ps", "pashto"),
    ("tk", "turkmen"),
    ("nn", "nynorsk"),
    ("mt", "maltese"),
    ("sa", "sanskrit"),
    ("lb", "luxembourgish"),
    ("my", "myanmar"),
    ("bo", "tibetan"),
    ("tl", "tagalog"),
    ("mg", "malagasy"),
    ("as", "assamese"),
    ("tt", "tatar"),
    ("haw", "hawaiian"),
    ("ln", "lingala"),
    ("ha", "hausa"),
    ("ba", "bashkir"),
    ("jw", "javanese"),
    ("su", "sundanese"),
    ("yue", "cantonese"),
];

/// A language tag Whisper knows no language for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "language {} is not one Whisper transcribes: use one of its codes ({}, …: 99 in every \
     model before large-v3, which adds yue) or \"auto\"",
    shown(.0),
    LANGUAGES[..12].iter().map(|(c, _)| *c).collect::<Vec<_>>().join(", ")
)]
pub struct UnknownLanguage(pub String);

/// A tag as an error shows it: quoted, control characters escaped, cut to a few dozen
/// characters. It may come from a caller's URL, and the error may reach a log line (the
/// server's own `untrusted::quote` does the same; the engine does not depend on it).
fn shown(tag: &str) -> String {
    const SHOWN: usize = 32;
    let cut: String = tag.chars().take(SHOWN).collect();
    let more = if cut.len() < tag.len() { "…" } else { "" };
    format!("{cut:?}{more}")
}

/// What a profile's or a call's `language` asks of Whisper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spoken {
    /// One language, by its code in [`LANGUAGES`].
    Known(&'static str),
    /// Detected per utterance.
    Auto,
}

impl Spoken {
    /// Reads a BCP 47 tag (`es`, `es-MX`, `pt-BR`) or `auto`: Whisper knows languages, not
    /// regions, so the primary subtag decides. An empty tag is English, as ever.
    pub fn parse(tag: &str) -> Result<Self, UnknownLanguage> {
        let tag = tag.trim();
        if tag.is_empty() {
            return Ok(Self::Known("en"));
        }
        if tag.eq_ignore_ascii_case(AUTO) {
            return Ok(Self::Auto);
        }
        let primary = tag
            .split(['-', '_'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        LANGUAGES
            .iter()
            .find(|(code, _)| *code == primary)
            .map(|(code, _)| Self::Known(code))
            .ok_or_else(|| UnknownLanguage(tag.to_owned()))
    }

    pub fn is_english(self) -> bool {
        self == Self::Known("en")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_by_their_language() {
        assert_eq!(Spoken::parse("es-MX"), Ok(Spoken::Known("es")));
        assert_eq!(Spoken::parse("PT_br"), Ok(Spoken::Known("pt")));
        assert_eq!(Spoken::parse("yue"), Ok(Spoken::Known("yue")));
        assert_eq!(Spoken::parse(""), Ok(Spoken::Known("en")));
        assert_eq!(Spoken::parse("Auto"), Ok(Spoken::Auto));
        for bad in ["xx-notalang", "klingon", "e"] {
            let e = Spoken::parse(bad).unwrap_err().to_string();
            assert!(e.contains("not one Whisper transcribes"), "{e}");
        }
        assert_eq!(LANGUAGES.len(), 100);
    }

    #[test]
    fn an_unknown_tag_is_shown_escaped_and_cut() {
        let e = Spoken::parse("x\nforged log line").unwrap_err().to_string();
        assert!(
            e.starts_with("language \"x\\nforged log line\" is not"),
            "{e}"
        );
        let long = "q".repeat(10_000);
        let e = Spoken::parse(&long).unwrap_err().to_string();
        assert!(e.len() < 300, "{e}");
    }
}
