#!/usr/bin/env python3
"""Reference WER of CTranslate2 (faster-whisper's runtime) on a folder of clips, each
decoded whole, to set hark's own Whisper engine against.

What it measures
    For every clip listed in DIR/transcripts.tsv (``name<TAB>reference``, the file that
    ``hark-bench/examples/segment_study.rs`` reads), one decode of the whole clip by
    CTranslate2's Whisper (the model hark ships, ``~/.cache/hark/whisper-base-1.0.0``,
    int8), and the word errors of its text against the reference, counted the way
    ``hark-bench/src/wer.rs`` counts them (its ``normalize`` / ``word_errors`` / ``wer``
    are ported below, and ``--self-test`` checks the port against wer.rs's own test
    tables). It prints what ``segment_study`` prints with ``WHOLE=1 QUIET=1``: the errors
    and reference words per source (the file name's prefix before the first ``_``), the
    pooled WER, then the clips with the most errors.

    The decode is faster-whisper's (1.2.1) for one 30 s window, without its temperature
    fallback and no-speech skipping:
      * features: Whisper's log-mel (n_fft 400, hop 160, Hann, centred with reflection,
        80 Slaney mel bands as librosa builds them, log10, floor at max - 8, (x + 4) / 4),
        computed as faster-whisper's FeatureExtractor does (the clip plus 160 zero
        samples, the STFT's last frame dropped), then the clip's frames padded with zeros
        to 3000 frames (faster-whisper's ``pad_or_trim``). ``--pad silence`` instead pads
        the *audio* with zeros to 30 s before the log-mel (openai/whisper's
        ``pad_or_trim(audio)``), so the padding is the log-mel of silence (closer to hark, which pads with silence).
      * prompt ``<|startoftranscript|><|en|><|transcribe|><|notimestamps|>``;
        ``suppress_blank=True``; the model's default ``suppress_tokens`` (-1: config.json's
        ``suppress_ids``); ``max_length=448`` (CTranslate2 lets Whisper write half of it,
        224 tokens, as openai's sample_len); beam size 1 (greedy) and/or 5
        (faster-whisper's default), patience 1, length penalty 1. A decode that uses all
        224 tokens is a runaway loop: the report names those and gives the WER without them.
      * text: the ids below ``<|endoftext|>`` decoded with the model's tokenizer.json,
        stripped.
    Audio: 16-bit PCM WAV, channels mixed to one (as hark_bench::wav does), scaled by
    1/32768; a clip not at 16 kHz is brought to 16 kHz with scipy's polyphase resampler
    (``resample_poly``; segment_study itself assumes 16 kHz). ``--rate 8000`` (or
    RATE=8000) passes each clip through that rate and back first, like segment_study's
    RATE (which uses hark's rubato FFT resampler; this script uses ``resample_poly``, a
    Kaiser-windowed polyphase FIR).

Set up (once)
    python3 -m venv /tmp/ct2env
    /tmp/ct2env/bin/pip install ctranslate2 numpy scipy tokenizers

Run
    /tmp/ct2env/bin/python hark-bench/study/ct2_whole_clips.py --clips ~/.cache/hark/hard-clips
    /tmp/ct2env/bin/python hark-bench/study/ct2_whole_clips.py --clips ~/.cache/hark/study-clips --rate 8000 --beams 1
    /tmp/ct2env/bin/python hark-bench/study/ct2_whole_clips.py --self-test

    Options (each also read from the environment variable in brackets):
      --clips DIR      folder with transcripts.tsv and the WAVs [CLIPS]
                       (default ~/.cache/hark/clips, as segment_study)
      --rate HZ        pass each clip through HZ and back to 16 kHz first [RATE]
      --beams 1,5      beam sizes to decode with, comma-separated; one encode serves all
                       [BEAMS] (default 1,5)
      --model DIR      CTranslate2 Whisper model [CT2_MODEL] (default ~/.cache/hark/whisper-base-1.0.0;
                       not MODEL, which segment_study reads as a model name)
      --threads N      CTranslate2 intra-op threads [THREADS] (default 2)
      --pad zeros|silence  how a clip is filled out to 30 s (see above) [CT2_PAD] (default
                       zeros; not PAD, which segment_study reads as milliseconds)
      --window full|short  full: one 30 s window (above); short: WHISPER.md's short window,
                       the clip plus --tail-ms of zeros encoded alone and the encoder's
                       output filled out to 1500 frames with the tail of the encoding of
                       30 s of silence, as hark's engine decodes [CT2_WINDOW] (default full)
      --tail-ms MS     the zeros after the clip in the short window [TAIL_MS] (default 1000)
      --budget         cut each decode at WHISPER.md's (and hark's) token budget, 10 plus
                       8 per second of the clip, counting a decode cut there as a runaway
                       [BUDGET=1] (default: CTranslate2's 224 tokens)
      --top N          clips with the most errors to list per beam size [TOP] (default 10)
      --lines          print every clip's errors and text [LINES=1]
      --jsonl FILE     write one JSON line per clip and beam size (name, reference,
                       hypothesis, errors, words, runaway) [JSONL]
      --self-test      only check the normalisation port against wer.rs's test tables
"""

import argparse
import json
import math
import os
import re
import sys
import time
import unicodedata
import wave
from pathlib import Path

MODEL_RATE = 16_000

# ---------------------------------------------------------------------------------------
# hark-bench/src/wer.rs, ported line by line. Rust's char predicates are spelled out:
# `is_alphabetic` is Unicode Alphabetic (letters, letter numbers, and Other_Alphabetic marks,
# which unicodedata cannot see: only marks of non-Latin scripts and circled letters differ),
# `is_numeric` is the categories Nd, Nl, No.
# ---------------------------------------------------------------------------------------


def is_alphabetic(c):
    cat = unicodedata.category(c)
    return cat[0] == "L" or cat == "Nl"


def is_alphanumeric(c):
    return is_alphabetic(c) or unicodedata.category(c) in ("Nd", "Nl", "No")


def is_ascii_digit(c):
    return "0" <= c <= "9"


# Rust's `split_whitespace`: Unicode White_Space (Python's str.split also splits on
# U+001C..U+001F, which Rust does not).
_WHITESPACE = re.compile(
    "[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"
)

ONES = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen",
]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
SCALES = [
    (1_000_000_000_000, "trillion"),
    (1_000_000_000, "billion"),
    (1_000_000, "million"),
    (1_000, "thousand"),
]
U64_MAX = 2**64 - 1


def normalize(text):
    """wer.rs `normalize`: lower-case words, punctuation gone, numbers spelled out."""
    words = []
    for token in _WHITESPACE.split(text.lower().replace("-", " ")):
        if token:
            spell_token(token, words)
    return drop_number_and(words)


def spell_token(token, out):
    token = "".join(c for c in token if c not in "'\u2019")
    if not any(is_ascii_digit(c) for c in token):
        word = "".join(c for c in token if is_alphanumeric(c))
        if word:
            out.append(respell(word))
        elif token == "%":
            out.append("percent")
        return
    # trim_start_matches / trim_end_matches
    start, end = 0, len(token)
    while start < end and not is_alphanumeric(token[start]) and token[start] != "$":
        start += 1
    while end > start and not is_alphanumeric(token[end - 1]) and token[end - 1] != "%":
        end -= 1
    token = token[start:end]
    if not spell_number(token, out):
        # Runs of letters and of digits, the digits as a plain number.
        run = ""
        for c in token + " ":
            same = bool(run) and is_ascii_digit(run[0]) == is_ascii_digit(c)
            if not same and run:
                if is_ascii_digit(run[0]):
                    integer(run, True, out)
                else:
                    out.append(respell(run))
                run = ""
            if is_alphanumeric(c):
                run += c


def respell(word):
    return {"ok": "okay", "mr": "mister", "mrs": "missus", "dr": "doctor"}.get(word, word)


def is_digits(s):
    return s != "" and all(is_ascii_digit(c) for c in s)


def spell_number(token, out):
    dollars = token.startswith("$")
    rest = token[1:] if dollars else token
    percent = rest.endswith("%")
    if percent:
        rest = rest[:-1]
    end = next(
        (i for i, c in enumerate(rest) if not (is_ascii_digit(c) or c in ",.:")), len(rest)
    )
    number, suffix = rest[:end], rest[end:]
    if (
        (dollars and percent)
        or not (number and is_ascii_digit(number[0]))
        or not all(is_alphabetic(c) for c in suffix)
        or ((dollars or percent) and suffix)
    ):
        return False
    start = len(out)
    if ":" in number:
        hours, minutes = number.split(":", 1)
        if len(hours) > 2 or not is_digits(hours) or len(minutes) != 2 or not is_digits(minutes):
            return False
        m = int(minutes)
        if m >= 60:
            return False
        cardinal(int(hours), out)
        if m > 0:
            if m < 10:
                out.append("oh")
            cardinal(m, out)
    else:
        if "." in number:
            whole, fraction = number.split(".", 1)
            if not is_digits(fraction):
                return False
        else:
            whole, fraction = number, None
        bare = fraction is None and not dollars and "," not in whole
        groups = thousands(whole)
        if groups is not None:
            cardinal(groups, out)
        elif is_digits(whole):
            integer(whole, bare, out)
        else:
            return False
        if fraction is not None and dollars and len(fraction) <= 2:
            # Money reads its two decimals as cents.
            cents = int(fraction.ljust(2, "0"))
            whole_dollars = out[start:] != ["zero"]
            if whole_dollars:
                out.append(dollar_word(out[start:]))
            else:
                del out[start:]
            if cents > 0 or not whole_dollars:
                cardinal(cents, out)
                out.append("cent" if cents == 1 else "cents")
            return True
        if fraction is not None:
            out.append("point")
            out.extend(ONES[int(d)] for d in fraction)
        if dollars:
            out.append(dollar_word(out[start:]))
    if percent:
        out.append("percent")
    plain = "." not in number and ":" not in number
    if suffix == "":
        pass
    elif suffix in ("st", "nd", "rd", "th") and plain:
        out[-1] = ordinal(out[-1])
    elif suffix == "s" and plain:
        out[-1] = plural(out[-1])
    else:
        out.append(respell(suffix))
    return True


def dollar_word(amount):
    return "dollar" if amount == ["one"] else "dollars"


def thousands(s):
    if "," not in s:
        return None
    groups = s.split(",")
    first = groups[0]
    if first == "" or len(first) > 3 or not is_digits(first):
        return None
    for g in groups[1:]:
        if len(g) != 3 or not is_digits(g):
            return None
    value = int("".join(groups))
    return value if value <= U64_MAX else None


def integer(digits, bare, out):
    if len(digits) > 9 or (len(digits) > 1 and digits[0] == "0"):
        out.extend(ONES[int(d)] for d in digits)
        return
    n = int(digits)
    if bare and len(digits) == 4 and (1100 <= n <= 1999 or 2010 <= n <= 2099):
        high, low = divmod(n, 100)
        cardinal(high, out)
        if low == 0:
            out.append("hundred")
        elif low <= 9:
            out.append("oh")
            cardinal(low, out)
        else:
            cardinal(low, out)
    else:
        cardinal(n, out)


def cardinal(n, out):
    if n == 0:
        out.append("zero")
        return
    if n >= 1_000_000_000_000_000:
        out.extend(ONES[int(d)] for d in str(n))
        return
    for scale, name in SCALES:
        if n >= scale:
            below_thousand(n // scale, out)
            out.append(name)
            n %= scale
    if n > 0:
        below_thousand(n, out)


def below_thousand(n, out):
    hundreds, rest = divmod(n, 100)
    if hundreds > 0:
        out.append(ONES[hundreds])
        out.append("hundred")
    if rest >= 20:
        out.append(TENS[rest // 10])
        if rest % 10 > 0:
            out.append(ONES[rest % 10])
    elif rest > 0:
        out.append(ONES[rest])


def ordinal(word):
    special = {
        "one": "first", "two": "second", "three": "third", "five": "fifth",
        "eight": "eighth", "nine": "ninth", "twelve": "twelfth",
    }
    if word in special:
        return special[word]
    if word.endswith("y"):
        return word[:-1] + "ieth"
    return word + "th"


def plural(word):
    if word.endswith("y"):
        return word[:-1] + "ies"
    if word.endswith("x"):
        return word + "es"
    return word + "s"


def is_number_word(w):
    return w in ONES or w in TENS[2:] or w == "hundred"


def drop_number_and(words):
    out = []
    for i, w in enumerate(words):
        if (
            w == "and"
            and out
            and (out[-1] in {s for _, s in SCALES} or out[-1] in ("hundred", "dollar", "dollars"))
            and i + 1 < len(words)
            and is_number_word(words[i + 1])
        ):
            continue
        out.append(w)
    return out


def word_errors(reference, hypothesis):
    """wer.rs `word_errors`: word-level edit distance of the normalised texts."""
    r, h = normalize(reference), normalize(hypothesis)
    prev = list(range(len(h) + 1))
    for i, rw in enumerate(r):
        cur = [i + 1] + [0] * len(h)
        for j, hw in enumerate(h):
            cur[j + 1] = min(prev[j] + (rw != hw), prev[j + 1] + 1, cur[j] + 1)
        prev = cur
    return prev[len(h)]


def self_test():
    """wer.rs's unit tests, plus cases traced by hand through the Rust code."""
    normalized = [
        ("Go forward ten meters.", "go forward ten meters"),
        ("ill-disposed, don't", "ill disposed dont"),
        ("It's \u201cquoted\u201d (aside)!", "its quoted aside"),
        ("  ", ""),
        ("0 4 13 20 25", "zero four thirteen twenty twenty five"),
        ("105 and 999", "one hundred five and nine hundred ninety nine"),
        ("one hundred and five", "one hundred five"),
        ("two thousand and nine", "two thousand nine"),
        ("three and four, rock and roll", "three and four rock and roll"),
        ("3200", "three thousand two hundred"),
        ("1000000", "one million"),
        ("123456789", "one hundred twenty three million four hundred fifty six thousand "
         "seven hundred eighty nine"),
        ("1,000, 12,345", "one thousand twelve thousand three hundred forty five"),
        ("1,990", "one thousand nine hundred ninety"),
        ("1,000,000,000", "one billion"),
        ("3.5, 0.25", "three point five zero point two five"),
        ("Press 1.", "press one"),
        ("1,2", "one two"),
        ("1st 2nd 3rd 4th", "first second third fourth"),
        ("21st 12th 20th 100th", "twenty first twelfth twentieth one hundredth"),
        ("the 1990s, the 80s, 6s", "the nineteen nineties the eighties sixes"),
        ("1990 1905 1900", "nineteen ninety nineteen oh five nineteen hundred"),
        ("2019 2000 2005", "twenty nineteen two thousand two thousand five"),
        ("1099 2100", "one thousand ninety nine two thousand one hundred"),
        ("10% 3.5% 10 %", "ten percent three point five percent ten percent"),
        ("$5 $1 $1,000", "five dollars one dollar one thousand dollars"),
        ("$5.50 $5.05 $1.01", "five dollars fifty cents five dollars five cents one dollar one cent"),
        ("$0.50 $5.00 $5.5", "fifty cents five dollars five dollars fifty cents"),
        ("$2.125", "two point one two five dollars"),
        ("five dollars and fifty cents", "five dollars fifty cents"),
        ("10:30 10:05 10:00 0:45", "ten thirty ten oh five ten zero forty five"),
        ("3:30pm 3am", "three thirty pm three am"),
        ("007", "zero zero seven"),
        ("5551234567", "five five five one two three four five six seven"),
        ("555-1234", "five hundred fifty five twelve thirty four"),
        ("mp3 24/7 1.2.3", "mp three twenty four seven one two three"),
        ("OK, okay, o.k.", "okay okay okay"),
        ("Mr. and Mrs. Smith, Dr. Who", "mister and missus smith doctor who"),
        # Traced by hand through wer.rs (not in its tests).
        ("$0.00", "zero cents"),
        ("1,000th", "one thousandth"),
        ("3.5th", "three point five th"),
        ("ab,cd1", "abcd one"),
        ("10:75", "ten seventy five"),
        ("'90s", "nineties"),
        ("$5%", "five"),
        ("a thousand and", "a thousand and"),
        ("Scavenger base detected.", "scavenger base detected"),
    ]
    same = [
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
    ]
    failures = 0
    for text, want in normalized:
        got = " ".join(normalize(text))
        if got != want:
            failures += 1
            print(f"normalize({text!r}) = {got!r}, want {want!r}")
    for reference, hypothesis in same:
        if word_errors(reference, hypothesis) != 0:
            failures += 1
            print(f"{reference!r} vs {hypothesis!r}: {normalize(reference)} vs {normalize(hypothesis)}")
    counts = [
        (("go forward ten meters", "Go forward ten meters."), 0),
        (("a b c", "a x c"), 1),
        (("a b c", "a c"), 1),
        (("a b c", "a b c d"), 1),
        (("ill disposed", "ill-disposed,"), 0),
        (("", "noise"), 1),
    ]
    for (r, h), want in counts:
        if word_errors(r, h) != want:
            failures += 1
            print(f"word_errors({r!r}, {h!r}) = {word_errors(r, h)}, want {want}")
    pooled = pooled_wer([("a b c d", "a b"), ("e f", "e f")])
    if abs(pooled - 2 / 6) > 1e-9:
        failures += 1
        print(f"wer = {pooled}, want 2/6")
    total = len(normalized) + len(same) + len(counts) + 1
    print(f"self-test: {total - failures} passed, {failures} failed")
    return failures == 0


def pooled_wer(pairs):
    """wer.rs `wer`: errors over all pairs / reference words over all pairs."""
    errors = words = 0
    for r, h in pairs:
        errors += word_errors(r, h)
        words += len(normalize(r))
    return 0.0 if words == 0 else errors / words


# ---------------------------------------------------------------------------------------
# Audio and features
# ---------------------------------------------------------------------------------------


def read_wav_mono(path):
    """16-bit PCM WAV as float32 in -1..1 (channels averaged as hark_bench::wav), and its rate."""
    import numpy as np

    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: {8 * w.getsampwidth()}-bit samples; only 16-bit PCM here")
        channels, rate = w.getnchannels(), w.getframerate()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int32)
    if channels > 1:
        # Integer mean, truncated toward zero, as Rust's i32 division.
        data = np.trunc(data.reshape(-1, channels).sum(axis=1) / channels).astype(np.int32)
    return data.astype(np.float32) / 32768.0, rate


def resample(audio, from_rate, to_rate):
    """scipy's polyphase resampler (Kaiser-windowed FIR); output length ceil(n * to / from)."""
    from scipy.signal import resample_poly

    if from_rate == to_rate:
        return audio
    g = math.gcd(from_rate, to_rate)
    return resample_poly(audio, to_rate // g, from_rate // g).astype("float32")


def mel_filters(n_mels=80, sr=MODEL_RATE, n_fft=400):
    """librosa.filters.mel(sr, n_fft, n_mels) with Slaney's scale and area normalisation."""
    import numpy as np

    def hz_to_mel(f):
        f_sp, min_log_hz = 200.0 / 3, 1000.0
        min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
        return min_log_mel + math.log(f / min_log_hz) / logstep if f >= min_log_hz else f / f_sp

    def mel_to_hz(m):
        f_sp, min_log_hz = 200.0 / 3, 1000.0
        min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fftfreqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return weights.astype(np.float32)


class Features:
    """Whisper's log-mel of one clip, filled out to 3000 frames (30 s)."""

    N_FFT, HOP, FRAMES = 400, 160, 3000

    def __init__(self, pad="zeros"):
        import numpy as np

        self.np = np
        self.pad = pad
        self.filters = mel_filters()
        self.window = np.hanning(self.N_FFT + 1)[:-1].astype(np.float32)

    def log_mel(self, audio):
        """openai/whisper's log_mel_spectrogram of `audio`, the STFT's last frame dropped."""
        np = self.np
        padded = np.pad(audio, self.N_FFT // 2, mode="reflect")
        frames = 1 + (len(padded) - self.N_FFT) // self.HOP
        idx = np.arange(self.N_FFT)[None, :] + self.HOP * np.arange(frames)[:, None]
        spectrum = np.fft.rfft(padded[idx] * self.window, axis=-1).astype(np.complex64)
        power = (np.abs(spectrum[:-1]) ** 2).T  # [bins, frames - 1]
        mel = self.filters @ power
        log_spec = np.log10(np.clip(mel, 1e-10, None))
        log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
        return (log_spec + 4.0) / 4.0

    def short(self, audio, tail_ms):
        """The clip plus `tail_ms` of zeros, its frames only (an even count: the encoder halves it)."""
        np = self.np
        audio = np.pad(audio, (0, MODEL_RATE * tail_ms // 1000))
        mel = self.log_mel(audio)[:, : self.FRAMES]
        return mel[:, : mel.shape[1] // 2 * 2]

    def __call__(self, audio):
        np = self.np
        n_samples = self.FRAMES * self.HOP
        if self.pad == "silence":
            # openai/whisper: pad_or_trim(audio) to 30 s, then the log-mel of that.
            audio = np.pad(audio[:n_samples], (0, max(0, n_samples - len(audio))))
            return self.log_mel(audio)[:, : self.FRAMES]
        # faster-whisper 1.2.1: FeatureExtractor(audio) pads 160 zero samples; the clip's
        # frames (all but the last) are then padded with zeros to 3000.
        mel = self.log_mel(np.pad(audio, (0, self.HOP)))
        content = mel[:, : min(mel.shape[1] - 1, self.FRAMES)]
        return np.pad(content, ((0, 0), (0, self.FRAMES - content.shape[1])))


# ---------------------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------------------


def read_transcripts(clip_dir):
    """(name, reference) from DIR/transcripts.tsv, as segment_study reads it."""
    text = (clip_dir / "transcripts.tsv").read_text(encoding="utf-8")
    pairs = []
    for line in text.split("\n"):
        line = line[:-1] if line.endswith("\r") else line
        if not line.strip():
            continue
        name, reference = line.split("\t", 1)
        pairs.append((name, reference))
    return pairs


def source_of(name):
    return name.split("_", 1)[0]


def report(label, rows, top):
    """What segment_study prints with QUIET=1 (plus each source's %), then the worst clips."""
    print(f"== {label}")
    sources = sorted({source_of(r["name"]) for r in rows})
    if len(sources) > 1:
        for source in sources:
            of = [r for r in rows if source_of(r["name"]) == source]
            words = sum(r["words"] for r in of)
            errors = sum(r["errors"] for r in of)
            pct = 100.0 * errors / words if words else 0.0
            print(f"  {source:<14} {errors:4} errors / {words:5} words  ({pct:5.1f} %)")
    errors = sum(r["errors"] for r in rows)
    words = sum(r["words"] for r in rows)
    print(f"WER {100.0 * errors / words if words else 0.0:.1f} %  ({errors} errors / {words} words)")
    runaway = [r for r in rows if r["runaway"]]
    if runaway:
        kept = [r for r in rows if not r["runaway"]]
        e, w = sum(r["errors"] for r in kept), sum(r["words"] for r in kept)
        print(f"decodes that ran out of tokens: {len(runaway)} "
              f"{[(r['name'], r['errors']) for r in runaway]}; without them WER "
              f"{100.0 * e / w if w else 0.0:.1f} % ({e} errors / {w} words)")
    empty = [r["name"] for r in rows if not r["hypothesis"].strip()]
    print(f"clips with an empty transcript: {len(empty)} {empty}")
    if top:
        print(f"clips with the most errors (top {top}):")
        for r in sorted(rows, key=lambda r: (-r["errors"], r["name"]))[:top]:
            print(f"  {r['name']}: {r['errors']} errors / {r['words']} words")
            print(f"    ref: {r['reference']}")
            print(f"    hyp: {r['hypothesis']}")


def env(name, default=None):
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def main():
    home = Path.home()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", default=env("CLIPS", str(home / ".cache/hark/clips")))
    p.add_argument("--rate", type=int, default=int(env("RATE", 0)))
    p.add_argument("--beams", default=env("BEAMS", "1,5"))
    p.add_argument("--model", default=env("CT2_MODEL", str(home / ".cache/hark/whisper-base-1.0.0")))
    p.add_argument("--threads", type=int, default=int(env("THREADS", 2)))
    p.add_argument("--pad", choices=["zeros", "silence"], default=env("CT2_PAD", "zeros"))
    p.add_argument("--window", choices=["full", "short"], default=env("CT2_WINDOW", "full"))
    p.add_argument("--tail-ms", type=int, default=int(env("TAIL_MS", 1000)))
    p.add_argument("--budget", action="store_true", default=bool(env("BUDGET")))
    p.add_argument("--top", type=int, default=int(env("TOP", 10)))
    p.add_argument("--lines", action="store_true", default=bool(env("LINES")))
    p.add_argument("--jsonl", default=env("JSONL"))
    p.add_argument("--self-test", action="store_true")
    args = p.parse_args()

    if args.self_test:
        sys.exit(0 if self_test() else 1)

    import ctranslate2
    import numpy as np
    from tokenizers import Tokenizer

    beams = [int(b) for b in args.beams.split(",") if b.strip()]
    clip_dir = Path(args.clips).expanduser()
    model_dir = Path(args.model).expanduser()
    model = ctranslate2.models.Whisper(
        str(model_dir), device="cpu", compute_type="int8", intra_threads=args.threads
    )
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    prompt = [
        tokenizer.token_to_id(t)
        for t in ("<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>")
    ]
    eot = tokenizer.token_to_id("<|endoftext|>")
    features = Features(args.pad)
    silence_out = None
    if args.window == "short":
        # The encoding of 30 s of silence, whose tail fills out a short window's output.
        silence = features(np.zeros(Features.FRAMES * Features.HOP, dtype=np.float32))
        silence_out = np.array(model.encode(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(silence[None]))))

    band = f"through {args.rate} Hz" if args.rate else "16 kHz"
    print(f"ctranslate2 {ctranslate2.__version__}, {model_dir.name} int8, "
          f"{args.threads} threads; clips {clip_dir} ({band}); "
          + (f"short window, {args.tail_ms} ms of zeros" if silence_out is not None
             else f"30 s window, pad {args.pad}") + f"; beams {beams}")

    rows = {b: [] for b in beams}
    encode_s = 0.0
    decode_s = {b: 0.0 for b in beams}
    audio_s = 0.0
    started = time.time()
    clips = read_transcripts(clip_dir)
    for done, (name, reference) in enumerate(clips):
        if done % 50 == 0:
            print(f"  {done}/{len(clips)} clips, {time.time() - started:.0f} s", file=sys.stderr)
        audio, rate = read_wav_mono(clip_dir / name)
        audio = resample(audio, rate, MODEL_RATE)
        if args.rate:
            audio = resample(resample(audio, MODEL_RATE, args.rate), args.rate, MODEL_RATE)
        if len(audio) > Features.FRAMES * Features.HOP:
            print(f"warning: {name} is longer than 30 s: only its first 30 s are decoded")
        audio_s += len(audio) / MODEL_RATE
        mel = features(audio) if silence_out is None else features.short(audio, args.tail_ms)
        t0 = time.process_time()
        encoded = model.encode(
            ctranslate2.StorageView.from_array(np.ascontiguousarray(mel[None], dtype=np.float32))
        )
        if silence_out is not None:
            head = np.array(encoded)
            encoded = ctranslate2.StorageView.from_array(np.ascontiguousarray(
                np.concatenate([head, silence_out[:, head.shape[1]:]], axis=1)))
        encode_s += time.process_time() - t0
        words = len(normalize(reference))
        for beam in beams:
            t0 = time.process_time()
            result = model.generate(
                encoded, [prompt], beam_size=beam, max_length=448,
                suppress_blank=True, suppress_tokens=[-1],
            )[0]
            decode_s[beam] += time.process_time() - t0
            ids = result.sequences_ids[0]
            limit = 448 // 2
            if args.budget:
                # Greedy picks each token from those before it: cutting the sequence is
                # stopping there.
                limit = 10 + int(len(audio) / MODEL_RATE * 8.0)
                ids = ids[:limit]
            hypothesis = tokenizer.decode([t for t in ids if t < eot]).strip()
            errors = word_errors(reference, hypothesis)
            # A decode that ran out of tokens without an end of text: a runaway loop
            # (faster-whisper's temperature fallback would retry it; we do not). CTranslate2
            # lets Whisper write max_length / 2 = 224 tokens after the prompt (openai's
            # sample_len); sequences_ids holds neither the prompt nor <|endoftext|>.
            runaway = len(ids) >= limit
            rows[beam].append(dict(name=name, reference=reference, hypothesis=hypothesis,
                                   errors=errors, words=words, runaway=runaway))
            if args.lines:
                print(f"{name} [beam {beam}]: {errors} errors\n  {hypothesis}")

    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as f:
            for beam in beams:
                for r in rows[beam]:
                    f.write(json.dumps(dict(r, beam=beam, rate=args.rate or MODEL_RATE,
                                            pad=args.pad, window=args.window,
                                            tail_ms=args.tail_ms, clips=str(clip_dir))) + "\n")
    for beam in beams:
        label = "greedy" if beam == 1 else f"beam {beam}"
        report(f"{clip_dir.name}, {band}, {label}", rows[beam], args.top)
    print(f"{audio_s:.1f} s of audio in {time.time() - started:.0f} s wall; CPU: encode "
          f"{encode_s:.1f} s, decode " + ", ".join(f"beam {b} {decode_s[b]:.1f} s" for b in beams))


if __name__ == "__main__":
    main()
