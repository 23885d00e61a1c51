//! Whether a transcript's last words say the speaker is going on: the text half of an
//! end-of-turn decision. A caller reading out a number ("four one five …"), spelling a name
//! ("s m i …"), or stopping after "and", "my name is" or a comma has paused inside the turn,
//! whatever the silence says; an assistant that answers there talks over them. Text cannot
//! tell "no" from "no … tomorrow": this only finds pauses that must not end a turn, and
//! leaves the rest to silence (or the audio model).

/// Words after which an English sentence does not end: articles and possessives,
/// conjunctions, prepositions that take an object, subject pronouns, a copula or auxiliary
/// that leads to what it names ("my number is …", but not after a pronoun: [`COPULAS_EN`]),
/// fillers. Words that often end a short
/// answer ("on", "in", "up", "that", "you", "so", "then", "too") are left out: holding a
/// finished turn costs the caller the hold.
const GOES_ON_EN: &[&str] = &[
    "a", "an", "the", "my", "your", "our", "their", "his", "its", "and", "or", "but", "nor",
    "because", "cause", "if", "than", "whether", "although", "though", "unless", "while", "to",
    "of", "for", "with", "from", "at", "into", "onto", "about", "between", "per", "via", "towards",
    "i", "we", "they", "he", "she", "is", "are", "was", "were", "am", "i'm", "it's", "that's",
    "there's", "what's", "we're", "they're", "you're", "he's", "she's", "let's", "i'd", "i'll",
    "i've", "um", "uh", "umm", "uhm", "er", "erm", "like", "just", "gonna", "wanna", "number",
    "code", "name", "called",
];

/// A bare copula ends a clause after one of these ("yes it is", "than he was", "here we
/// are"), and leads to what it names after any other word ("my number is …").
const COPULAS_EN: &[&str] = &["is", "are", "was", "were", "am"];
const SUBJECTS_EN: &[&str] = &[
    "i", "you", "he", "she", "it", "we", "they", "that", "this", "these", "those", "there", "here",
    "who", "what", "where", "which", "how",
];

/// A month alone is a date being read out: its day follows.
const MONTHS_EN: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];

/// Number words: digits read out one group at a time, whichever group ends the pause.
const NUMBERS_EN: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "double",
    "triple",
];

/// Whether `text` ends where its speaker is going on: in a comma, colon, dash or ellipsis
/// (any language, as the recognizer writes a trailing clause), in a digit or a spelled
/// letter (any language), or, for English (`english`), in a word that cannot end a sentence,
/// a number word or a month. An empty text does not go on.
pub fn goes_on(text: &str, english: bool) -> bool {
    let text = text.trim_end();
    if text.ends_with([',', ';', ':', '-', '–', '—', '…']) || text.ends_with("..") {
        return true;
    }
    let Some(last) = text.split_whitespace().next_back() else {
        return false;
    };
    let word = bare(last);
    if word.is_empty() {
        return false;
    }
    // "415", "4-1-5", "3rd", "$20": a number, or the ordinal of a date.
    if word.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    if spelled(last) {
        return true;
    }
    if !english {
        return false;
    }
    let word = listed(last);
    let word = word.as_str();
    if COPULAS_EN.contains(&word) {
        let before = text.split_whitespace().nth_back(1).map(listed);
        if before.is_some_and(|w| SUBJECTS_EN.contains(&w.as_str())) {
            return false;
        }
    }
    GOES_ON_EN.contains(&word) || MONTHS_EN.contains(&word) || NUMBERS_EN.contains(&word)
}

/// English words that are a whole answer on their own: a yes or a no, a thanks, a greeting.
/// Any other word alone at the start of a turn ([`lone_word`]) is held.
const WHOLE_ALONE_EN: &[&str] = &[
    "yes",
    "yeah",
    "yep",
    "yup",
    "no",
    "nope",
    "nah",
    "okay",
    "ok",
    "sure",
    "right",
    "correct",
    "exactly",
    "absolutely",
    "definitely",
    "certainly",
    "indeed",
    "fine",
    "good",
    "great",
    "perfect",
    "alright",
    "cool",
    "thanks",
    "hello",
    "hi",
    "hey",
    "bye",
    "goodbye",
    "please",
    "sorry",
    "pardon",
    "what",
    "maybe",
    "never",
    "nothing",
    "none",
    "both",
    "neither",
    "done",
    "agreed",
    "true",
    "wrong",
    "mhm",
    "hmm",
];

/// Whether `text` is one English word other than a whole answer ("front", "production",
/// "john"): said alone as a turn opens and followed by a pause, such a word more often starts
/// a phrase ("front … left", "john … smith") than answers, and an assistant that takes it for
/// the answer talks over the rest. Holding it costs a finished one-word answer the hold; "yes",
/// "no", "thanks" and the like (`WHOLE_ALONE_EN`) end at the endpoint as before. Only for
/// English (`english`): the list is English.
pub fn lone_word(text: &str, english: bool) -> bool {
    let mut words = text.split_whitespace().map(bare).filter(|w| !w.is_empty());
    let (Some(word), None) = (words.next(), words.next()) else {
        return false;
    };
    if !english || text.trim_end().ends_with(['?', '!']) {
        return false;
    }
    !WHOLE_ALONE_EN.contains(&listed(word).as_str())
}

/// A word without the punctuation around it ("Front," → "Front", "it's" kept whole).
fn bare(word: &str) -> &str {
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
}

/// A word as the English lists spell it: bare, lower case, a typographic apostrophe plain.
fn listed(word: &str) -> String {
    bare(word).to_lowercase().replace('’', "'")
}

/// Whether a word is a spelled letter or letters: "S", "S.", "S-M-I", "s.m.i." (one letter
/// between each mark), or capitals run together as the recognizer writes letters it heard
/// spelled ("SMI", "VQ"; an acronym ending a turn is held too, which costs only the hold).
/// "I" and "a" alone are words, counted in [`GOES_ON_EN`].
fn spelled(word: &str) -> bool {
    let word = word.trim_end_matches(['.', '?', '!', ',']);
    let letters: Vec<&str> = word.split(['-', '.']).collect();
    let single = |s: &&str| s.chars().count() == 1 && s.chars().all(char::is_alphabetic);
    let capitals = |s: &&str| {
        (2..=6).contains(&s.chars().count())
            && s.chars().all(|c| c.is_ascii_uppercase())
            && !matches!(*s, "OK" | "AM" | "PM")
    };
    match letters.as_slice() {
        [one] => (single(one) && !matches!(*one, "I" | "a" | "A" | "i")) || capitals(one),
        many => many.iter().all(single),
    }
}

/// Whether a call's language (a BCP 47 tag; empty or `auto` for the engine's default) is
/// English, or may be: the word lists are English.
pub fn english(language: &str) -> bool {
    let primary = language.split(['-', '_']).next().unwrap_or_default();
    primary.is_empty() || primary.eq_ignore_ascii_case("en") || primary == "auto"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_letters_and_open_words_go_on() {
        for text in [
            "My number is 415",
            "4-1-5,",
            "four one five",
            "It's on September 3rd.",
            "S-M-I",
            "S.",
            "G A R",
            "SMI.",
            "Yes, I'd like to",
            "My name is",
            "September.",
            "and uh",
            "Front,",
            "So I was thinking...",
            "Well—",
            "and I",
            "The code is",
            "my number is.",
            "The dates are",
        ] {
            assert!(goes_on(text, true), "{text:?} goes on");
        }
    }

    #[test]
    fn finished_answers_and_other_languages_do_not() {
        for text in [
            "No.",
            "Thank you.",
            "Front left",
            "That's all",
            "I'm sorry.",
            "Hold on.",
            "I think so.",
            "",
            "   ",
            "?",
            "OK.",
            "Ok.",
            "Smith.",
            "Yes, it is.",
            "He might have been more respectable than he was.",
            "Here we are.",
            "I don't know where it is",
            "Yes I am.",
        ] {
            assert!(!goes_on(text, true), "{text:?} is finished");
        }
        // The word lists are English; punctuation and digits hold in any language.
        assert!(!goes_on("Mi número es", false));
        assert!(goes_on("Mi número es 415", false));
        assert!(goes_on("Und dann,", false));
        assert!(english("") && english("en-US") && english("auto") && !english("es"));
    }

    #[test]
    fn a_lone_word_is_held_unless_it_answers_alone() {
        for text in ["Front.", "production", " Smith. ", "Nexus", "Tomorrow."] {
            assert!(lone_word(text, true), "{text:?} alone starts a phrase");
        }
        for text in [
            "No.",
            "Yes",
            "Okay.",
            "Thanks!",
            "Hello.",
            "Sorry?",
            "What?",
            "Front left.",
            "",
            " . ",
            "Front?",
        ] {
            assert!(
                !lone_word(text, true),
                "{text:?} is not a lone word to hold"
            );
        }
        assert!(!lone_word("Frente.", false));
    }
}
