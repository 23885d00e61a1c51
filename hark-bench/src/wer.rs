//! Word error rate, for judging transcripts against references (tests and `hark bench`).

/// Lower-case words with punctuation removed; hyphens and apostrophes split or join the
/// way references usually write them ("ill-disposed" = "ill disposed", "don't" = "dont").
/// Numbers are spelled out on both sides, since recognizers write "4", "10%", "$5.50" or
/// "10:30" where references say the words (Whisper's English normalizer, used by the Open
/// ASR leaderboard, makes them one too, towards digits): "one hundred five" (an "and"
/// inside a number dropped), years in pairs ("nineteen oh five"), "fourth", "three point
/// five", "ten percent", "five dollars fifty cents", "ten thirty", identifiers digit by
/// digit ("zero zero seven"). And "ok", "mr", "mrs", "dr" are "okay", "mister", "missus",
/// "doctor".
pub fn normalize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for token in text.to_lowercase().replace('-', " ").split_whitespace() {
        spell_token(token, &mut words);
    }
    drop_number_and(words)
}

/// One whitespace-separated token's words.
fn spell_token(token: &str, out: &mut Vec<String>) {
    let token: String = token.chars().filter(|c| !matches!(c, '\'' | '’')).collect();
    if !token.chars().any(|c| c.is_ascii_digit()) {
        let word: String = token.chars().filter(|c| c.is_alphanumeric()).collect();
        if !word.is_empty() {
            out.push(respell(&word).to_string());
        } else if token == "%" {
            out.push("percent".into());
        }
        return;
    }
    let token = token
        .trim_start_matches(|c: char| !c.is_alphanumeric() && c != '$')
        .trim_end_matches(|c: char| !c.is_alphanumeric() && c != '%');
    if !spell_number(token, out) {
        // Anything else with digits in it ("mp3", "24/7", "1.2.3"): its runs of letters
        // and of digits, the digits as a plain number.
        let mut run = String::new();
        for c in token.chars().chain([' ']) {
            let same = run
                .chars()
                .next()
                .is_some_and(|r| r.is_ascii_digit() == c.is_ascii_digit());
            if !same && !run.is_empty() {
                if run.starts_with(|r: char| r.is_ascii_digit()) {
                    integer(&run, true, out);
                } else {
                    out.push(respell(&run).to_string());
                }
                run.clear();
            }
            if c.is_alphanumeric() {
                run.push(c);
            }
        }
    }
}

/// The few spellings that differ between transcripts and references only in form.
fn respell(word: &str) -> &str {
    match word {
        "ok" => "okay",
        "mr" => "mister",
        "mrs" => "missus",
        "dr" => "doctor",
        w => w,
    }
}

/// `[$]number[%|st|nd|rd|th|s|letters]`, the number `1,234`, `3.5` or `10:30`; false if
/// the token is not of that form.
fn spell_number(token: &str, out: &mut Vec<String>) -> bool {
    let (dollars, rest) = match token.strip_prefix('$') {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let (percent, rest) = match rest.strip_suffix('%') {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, ',' | '.' | ':')))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(end);
    if (dollars && percent)
        || !number.starts_with(|c: char| c.is_ascii_digit())
        || !suffix.chars().all(|c| c.is_alphabetic())
        || ((dollars || percent) && !suffix.is_empty())
    {
        return false;
    }
    let start = out.len();
    if let Some((hours, minutes)) = number.split_once(':') {
        if hours.len() > 2 || !is_digits(hours) || minutes.len() != 2 || !is_digits(minutes) {
            return false;
        }
        let m: u64 = minutes.parse().unwrap_or(60);
        if m >= 60 {
            return false;
        }
        cardinal(hours.parse().unwrap_or(0), out);
        if m > 0 {
            if m < 10 {
                out.push("oh".into());
            }
            cardinal(m, out);
        }
    } else {
        let (whole, fraction) = match number.split_once('.') {
            Some((w, f)) if is_digits(f) => (w, Some(f)),
            Some(_) => return false,
            None => (number, None),
        };
        let bare = fraction.is_none() && !dollars && !whole.contains(',');
        if let Some(groups) = thousands(whole) {
            cardinal(groups, out);
        } else if is_digits(whole) {
            integer(whole, bare, out);
        } else {
            return false;
        }
        match fraction {
            // Money reads its two decimals as cents: "$5.50" is "five dollars fifty cents".
            Some(f) if dollars && f.len() <= 2 => {
                let cents: u64 = format!("{f:0<2}").parse().unwrap_or(0);
                let whole_dollars = out[start..] != ["zero"];
                if whole_dollars {
                    out.push(dollar_word(&out[start..]).into());
                } else {
                    out.truncate(start);
                }
                if cents > 0 || !whole_dollars {
                    cardinal(cents, out);
                    out.push(if cents == 1 { "cent" } else { "cents" }.into());
                }
                return true;
            }
            Some(f) => {
                out.push("point".into());
                out.extend(f.chars().map(|d| digit(d).to_string()));
            }
            None => {}
        }
        if dollars {
            out.push(dollar_word(&out[start..]).into());
        }
    }
    if percent {
        out.push("percent".into());
    }
    match suffix {
        "" => {}
        "st" | "nd" | "rd" | "th" if !number.contains(['.', ':']) => {
            if let Some(last) = out.last_mut() {
                *last = ordinal(last);
            }
        }
        "s" if !number.contains(['.', ':']) => {
            if let Some(last) = out.last_mut() {
                *last = plural(last);
            }
        }
        // "3am", "10k": the number, then the letters.
        letters => out.push(respell(letters).to_string()),
    }
    true
}

fn dollar_word(amount: &[String]) -> &'static str {
    if amount == ["one"] {
        "dollar"
    } else {
        "dollars"
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `1,234,567` with commas between groups of three: its value.
fn thousands(s: &str) -> Option<u64> {
    let mut groups = s.split(',');
    let first = groups.next()?;
    if !s.contains(',') || first.is_empty() || first.len() > 3 || !is_digits(first) {
        return None;
    }
    let mut digits = first.to_string();
    for g in groups {
        if g.len() != 3 || !is_digits(g) {
            return None;
        }
        digits.push_str(g);
    }
    digits.parse().ok()
}

/// A string of digits: read digit by digit when it is an identifier (a leading zero, or
/// more than nine digits: "007", a phone or account number); as a year when `bare` and it
/// looks like one; else as a cardinal.
fn integer(digits: &str, bare: bool, out: &mut Vec<String>) {
    if digits.len() > 9 || (digits.len() > 1 && digits.starts_with('0')) {
        out.extend(digits.chars().map(|d| digit(d).to_string()));
        return;
    }
    let n: u64 = digits.parse().unwrap_or(0);
    if bare && digits.len() == 4 && ((1100..=1999).contains(&n) || (2010..=2099).contains(&n)) {
        // "nineteen ninety", "nineteen oh five", "nineteen hundred", "twenty nineteen".
        let (high, low) = (n / 100, n % 100);
        cardinal(high, out);
        match low {
            0 => out.push("hundred".into()),
            1..=9 => {
                out.push("oh".into());
                cardinal(low, out);
            }
            _ => cardinal(low, out),
        }
    } else {
        cardinal(n, out);
    }
}

const ONES: [&str; 20] = [
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
];
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const SCALES: [(u64, &str); 4] = [
    (1_000_000_000_000, "trillion"),
    (1_000_000_000, "billion"),
    (1_000_000, "million"),
    (1_000, "thousand"),
];

fn digit(d: char) -> &'static str {
    ONES[d.to_digit(10).unwrap_or(0) as usize]
}

/// "one hundred five", "three thousand two hundred": without "and" (see
/// [`drop_number_and`]).
fn cardinal(mut n: u64, out: &mut Vec<String>) {
    if n == 0 {
        out.push("zero".into());
        return;
    }
    if n >= 1_000_000_000_000_000 {
        // Beyond the scales: its digits rather than a wrong name.
        out.extend(n.to_string().chars().map(|d| digit(d).to_string()));
        return;
    }
    for (scale, name) in SCALES {
        if n >= scale {
            below_thousand(n / scale, out);
            out.push(name.into());
            n %= scale;
        }
    }
    if n > 0 {
        below_thousand(n, out);
    }
}

fn below_thousand(n: u64, out: &mut Vec<String>) {
    let (hundreds, rest) = (n / 100, n % 100);
    if hundreds > 0 {
        out.push(ONES[hundreds as usize].into());
        out.push("hundred".into());
    }
    if rest >= 20 {
        out.push(TENS[(rest / 10) as usize].into());
        if rest % 10 > 0 {
            out.push(ONES[(rest % 10) as usize].into());
        }
    } else if rest > 0 {
        out.push(ONES[rest as usize].into());
    }
}

/// The ordinal of a cardinal's last word: "one" -> "first", "twenty" -> "twentieth".
fn ordinal(word: &str) -> String {
    match word {
        "one" => "first".into(),
        "two" => "second".into(),
        "three" => "third".into(),
        "five" => "fifth".into(),
        "eight" => "eighth".into(),
        "nine" => "ninth".into(),
        "twelve" => "twelfth".into(),
        w => match w.strip_suffix('y') {
            Some(stem) => format!("{stem}ieth"),
            None => format!("{w}th"),
        },
    }
}

/// "1990s" -> "nineteen nineties", "80s" -> "eighties".
fn plural(word: &str) -> String {
    match word.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None if word.ends_with('x') => format!("{word}es"),
        None => format!("{word}s"),
    }
}

fn is_number_word(w: &str) -> bool {
    ONES.contains(&w) || TENS[2..].contains(&w) || w == "hundred"
}

/// Drops the "and" of "one hundred and five", "two thousand and nine", "five dollars and
/// fifty cents": only after a scale word (or "dollars") and before a number word, where it
/// is a way of writing the number rather than a word of its own.
fn drop_number_and(words: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        if w == "and"
            && out.last().is_some_and(|p| {
                SCALES.iter().any(|(_, s)| s == p)
                    || matches!(p.as_str(), "hundred" | "dollar" | "dollars")
            })
            && words.get(i + 1).is_some_and(|n| is_number_word(n))
        {
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// Word-level edit distance between two texts (substitutions + deletions + insertions).
pub fn word_errors(reference: &str, hypothesis: &str) -> usize {
    let r = normalize(reference);
    let h = normalize(hypothesis);
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    let mut cur = vec![0; h.len() + 1];
    for (i, rw) in r.iter().enumerate() {
        cur[0] = i + 1;
        for (j, hw) in h.iter().enumerate() {
            let sub = prev[j] + usize::from(rw != hw);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[h.len()]
}

/// Word error rate of `pairs` of (reference, hypothesis), pooled over all words.
pub fn wer<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> f64 {
    let (errors, words) = pairs.into_iter().fold((0, 0), |(e, w), (r, h)| {
        (e + word_errors(r, h), w + normalize(r).len())
    });
    if words == 0 {
        0.0
    } else {
        errors as f64 / words as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_kind_of_error() {
        assert_eq!(
            word_errors("go forward ten meters", "Go forward ten meters."),
            0
        );
        assert_eq!(word_errors("a b c", "a x c"), 1);
        assert_eq!(word_errors("a b c", "a c"), 1);
        assert_eq!(word_errors("a b c", "a b c d"), 1);
        assert_eq!(word_errors("ill disposed", "ill-disposed,"), 0);
        assert_eq!(word_errors("", "noise"), 1);
        assert!((wer([("a b c d", "a b"), ("e f", "e f")]) - 2.0 / 6.0).abs() < 1e-9);
    }

    /// (text, its normalized words), one rule at a time.
    const NORMALIZED: &[(&str, &str)] = &[
        // What normalize did before numbers: case, punctuation, hyphens, apostrophes.
        ("Go forward ten meters.", "go forward ten meters"),
        ("ill-disposed, don't", "ill disposed dont"),
        ("It's “quoted” (aside)!", "its quoted aside"),
        ("  ", ""),
        // Cardinals, with no "and"; an "and" written inside a number goes.
        ("0 4 13 20 25", "zero four thirteen twenty twenty five"),
        (
            "105 and 999",
            "one hundred five and nine hundred ninety nine",
        ),
        ("one hundred and five", "one hundred five"),
        ("two thousand and nine", "two thousand nine"),
        (
            "three and four, rock and roll",
            "three and four rock and roll",
        ),
        ("3200", "three thousand two hundred"),
        ("1000000", "one million"),
        (
            "123456789",
            "one hundred twenty three million four hundred fifty six thousand seven hundred eighty nine",
        ),
        // Thousands separators, decimals.
        (
            "1,000, 12,345",
            "one thousand twelve thousand three hundred forty five",
        ),
        ("1,990", "one thousand nine hundred ninety"),
        ("1,000,000,000", "one billion"),
        ("3.5, 0.25", "three point five zero point two five"),
        ("Press 1.", "press one"),
        ("1,2", "one two"),
        // Ordinals and plurals.
        ("1st 2nd 3rd 4th", "first second third fourth"),
        (
            "21st 12th 20th 100th",
            "twenty first twelfth twentieth one hundredth",
        ),
        (
            "the 1990s, the 80s, 6s",
            "the nineteen nineties the eighties sixes",
        ),
        // Years: bare four digits 1100-1999 and 2010-2099 in pairs.
        (
            "1990 1905 1900",
            "nineteen ninety nineteen oh five nineteen hundred",
        ),
        (
            "2019 2000 2005",
            "twenty nineteen two thousand two thousand five",
        ),
        (
            "1099 2100",
            "one thousand ninety nine two thousand one hundred",
        ),
        // Percent, money (cents as cents), times.
        (
            "10% 3.5% 10 %",
            "ten percent three point five percent ten percent",
        ),
        (
            "$5 $1 $1,000",
            "five dollars one dollar one thousand dollars",
        ),
        (
            "$5.50 $5.05 $1.01",
            "five dollars fifty cents five dollars five cents one dollar one cent",
        ),
        (
            "$0.50 $5.00 $5.5",
            "fifty cents five dollars five dollars fifty cents",
        ),
        ("$2.125", "two point one two five dollars"),
        ("five dollars and fifty cents", "five dollars fifty cents"),
        (
            "10:30 10:05 10:00 0:45",
            "ten thirty ten oh five ten zero forty five",
        ),
        ("3:30pm 3am", "three thirty pm three am"),
        // Identifiers: leading zero or more than nine digits, digit by digit.
        ("007", "zero zero seven"),
        (
            "5551234567",
            "five five five one two three four five six seven",
        ),
        // A hyphen splits, and a bare 1100-1999 still reads as a year.
        ("555-1234", "five hundred fifty five twelve thirty four"),
        // Digits among letters or other signs: each run on its own.
        ("mp3 24/7 1.2.3", "mp three twenty four seven one two three"),
        // The few abbreviations.
        ("OK, okay, o.k.", "okay okay okay"),
        (
            "Mr. and Mrs. Smith, Dr. Who",
            "mister and missus smith doctor who",
        ),
    ];

    #[test]
    fn normalizes_numbers_and_abbreviations_rule_by_rule() {
        for (text, words) in NORMALIZED {
            assert_eq!(normalize(text).join(" "), *words, "normalize({text:?})");
        }
    }

    /// (reference, hypothesis) that count no error: a recognizer's digits against a
    /// reference's words.
    const SAME: &[(&str, &str)] = &[
        ("press four", "Press 4."),
        ("in nineteen ninety", "in 1990"),
        ("ten percent", "10%"),
        ("five dollars", "$5"),
        ("the fourth floor", "the 4th floor"),
        ("three point five", "3.5"),
        ("at ten thirty", "at 10:30"),
        ("one hundred and five", "105"),
        ("agent zero zero seven", "Agent 007"),
        ("okay mister smith", "OK, Mr. Smith."),
    ];

    #[test]
    fn digits_and_words_match() {
        for (reference, hypothesis) in SAME {
            assert_eq!(
                word_errors(reference, hypothesis),
                0,
                "{reference:?} vs {hypothesis:?}: {:?} vs {:?}",
                normalize(reference),
                normalize(hypothesis)
            );
        }
    }
}
