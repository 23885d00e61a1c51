//! Word error rate, for judging transcripts against references (tests and `hark bench`).

/// Lower-case words with punctuation removed; hyphens and apostrophes split or join the
/// way references usually write them ("ill-disposed" = "ill disposed", "don't" = "dont").
pub fn normalize(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace('-', " ")
        .split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect()
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
}
