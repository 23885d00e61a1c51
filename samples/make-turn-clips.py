#!/usr/bin/env python3
"""Short answers with pauses inside the turn, from real recorded speech: an end-of-turn test set.

    samples/make-turn-clips.py --sounds DIR --list FILE --study DIR --hard DIR TARGET [--seed N]

A caller who stops mid-answer is not done: "four one five … two zero seven", "s m i … t h",
"front … left", "no … tomorrow". A voice assistant that answers in that pause talks over
them. This writes such answers, 2-6 words with one or two pauses of 0.3-1.0 s inside, so
end-of-turn decisions can be measured on them. Four kinds, 40 clips each, named by kind:

  digits_   numbers read in groups (phone, account numbers) and dates, joined from
            Asterisk's digits/ prompts (Allison Smith);
  letters_  names and codes spelled in groups, from Asterisk's letters/ prompts;
  phrase_   2-6 word clips of samples/study-clips and samples/hard-clips with one or two of
            their own gaps between voiced stretches widened to a pause, as
            samples/make-paused-clips.py does (its gap finder and filler are imported);
  twopart_  a first answer ("no", "hello", "i'm sorry", "thank you"; a game voice's "yes
            sir", "hello"), a pause, then more ("tomorrow", "extension four two one",
            "take cover"), both real recordings of one speaker.

Joined clips: each recording is cut to its voice (10 ms frames above -55 dBFS, runs of two
or more) keeping up to 20 ms before and 30 ms after it, with 5 ms fades at the cuts; words of
one group are joined with a 40-120 ms gap, groups with a 0.3-1.0 s pause (voice to voice,
drawn); 0.2 s before the first voice and 0.3 s after the last. The Asterisk prompts' own
background is the G.722 codec's floor (about -80 dBFS) and the game voices have none, so a
white noise floor of -70 dBFS is added to the whole clip: no pause is digital silence.
Phrase clips keep their source's background in the pause (its own gap played back and
forth); the noise floor is added only where that background is under -70 dBFS (Asterisk,
ALSA's test voices).

References: words, lower case, digits as words; for digits_, letters_ and Allison's
twopart_ they are the package's own transcript (core-sounds-en.txt, given by --list).
TARGET gets the WAV files (16 kHz mono s16), transcripts.tsv (file<TAB>reference) and
pauses.tsv (file<TAB>start_ms-end_ms[,start_ms-end_ms]: each inserted pause, voice to
voice, as hark-bench --corpus reads it). Every clip is checked with a copy of hark-bench's
energy pause finder (conversation::inner_pauses): a clip with a quiet stretch of 200 ms or
more that pauses.tsv does not list is drawn again (joined kinds) or left out (phrase_), so
the list holds every pause inside the turn. Seeded (--seed): a rebuild writes the same
bytes. Python standard library and ffmpeg (G.722 decoding) only.
"""
import argparse
import array
import gzip
import hashlib
import importlib.util
import math
import os
import random
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ beside samples/make-paused-clips.py
_spec = importlib.util.spec_from_file_location("make_paused_clips", os.path.join(HERE, "make-paused-clips.py"))
paused = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paused)

RATE = 16000
FRAME = RATE // 100  # 10 ms
GAP_MS = (40, 120)  # between the words of one group
PAUSE_MS = (300, 1000)  # between groups, and the widened gaps of phrase_
LEAD_MS, TRAIL_MS = 200, 300
HEAD_MS, TAIL_MS = 20, 30  # kept around a recording's voice when it is cut
FADE = 5 * RATE // 1000
VOICE_DBFS = -55.0
FLOOR_DBFS = -70.0
MIN_BENCH_PAUSE_MS = 200  # hark-bench's conversation::MIN_PAUSE_MS
TRIES = 20

COUNTS = {"digits_number": 30, "digits_date": 10, "letters_name": 30, "letters_code": 10,
          "phrase": 40, "twopart_allison": 30, "twopart_hw": 10}

NAMES = """adams ali allen baker brown chen clark cox cruz davis diaz evans ford garcia gray
green hall hill jones khan kim king lee lewis lopez moore nelson nguyen ortiz park patel
perez price reyes ross scott shah singh smith taylor walker ward wilson wong wright young""".split()

# Where a group of digits breaks: one pause, and two.
NUMBER_FORMS = ([(3, 3), (3, 2), (2, 3), (4, 2), (2, 4), (2, 2), (3, 3)],
                [(2, 2, 2), (1, 2, 2), (2, 2, 1), (1, 1, 1), (3, 1, 2), (1, 1, 2)])
DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

# twopart_ with Allison: a first answer, then what follows it (prompt names, or a kind).
# (Allison recorded "thank you" twice; no "yes" or "okay" among the English prompts.)
ALLISON_FIRST = {"no": ["vm-no"], "hello": ["hello"], "sorry": ["im-sorry"],
                 "thanks": ["auth-thankyou", "privacy-thankyou"]}
ALLISON_THEN = {
    "no": ["digits/tomorrow", "digits/today", "digits/yesterday", "DAY", "DATE", "vm-first", "vm-last",
           "vm-Urgent", "vm-Work", "vm-Family", "vm-Friends", "extension", "call-forwarding",
           "do-not-disturb", "speed-dial", "telephone-number", "vm-password"],
    "hello": ["EXTENSION", "call-forwarding", "speed-dial", "telephone-number", "do-not-disturb"],
    "sorry": ["DAY", "DATE", "digits/tomorrow", "EXTENSION", "vm-first", "vm-last"],
    "thanks": ["goodbye", "vm-goodbye"],
}
ALLISON_WEIGHTS = [("no", 14), ("hello", 6), ("sorry", 6), ("thanks", 4)]
# twopart_ with Hedgewars' Classic voice (samples/hard-clips): first answers and what follows.
HW_FIRST = ["hw_classic_yessir.wav", "hw_classic_hello.wav"]
HW_THEN = ["hw_classic_takecover.wav", "hw_classic_incoming.wav", "hw_classic_watchthis.wav",
           "hw_classic_runaway.wav", "hw_classic_hurry.wav", "hw_classic_comeonthen.wav",
           "hw_classic_justyouwait.wav", "hw_classic_illgetyou.wav", "hw_classic_enemydown.wav",
           "hw_classic_reinforcements.wav", "hw_classic_watchit.wav", "hw_classic_gonnagetyou.wav"]


def log(msg):
    print(f"make-turn-clips: {msg}", file=sys.stderr)


def rng_for(seed, key):
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def words_of(text):
    """Reference words: lower case, hyphens as spaces, punctuation gone, single digits as
    words; None if the text has any other number or symbol (3D, H.323)."""
    digits = "zero one two three four five six seven eight nine".split()
    out = []
    for token in re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split():
        token = token.strip("'")
        if not token:
            continue
        if token.isdigit() and len(token) == 1:
            out.append(digits[int(token)])
        elif any(c.isdigit() for c in token):
            return None
        else:
            out.append(token)
    return out


def levels(samples):
    """dBFS of each 10 ms frame (a last short frame included)."""
    out = []
    for i in range(0, len(samples), FRAME):
        w = samples[i : i + FRAME]
        energy = sum(s * s for s in w) / len(w)
        out.append(10 * math.log10(max(energy / (32768.0 * 32768.0), 1e-12)))
    return out


# --- hark-bench's pause finder (hark-bench/src/conversation.rs), for the check -------------
def bench_speech(samples):
    """speech_bounds: first and last 10 ms window over -40 dBFS RMS."""
    loud = [math.sqrt(sum(s * s for s in samples[i : i + FRAME]) / len(samples[i : i + FRAME])) > 327.68
            for i in range(0, len(samples), FRAME)]
    if not any(loud):
        return 0, 0
    first = loud.index(True)
    last = len(loud) - loud[::-1].index(True)
    return first * FRAME, min(last * FRAME, len(samples))


def bench_pauses(samples):
    """inner_pauses over speech_bounds: quiet runs of 200 ms or more inside the words."""
    on_s, off_s = bench_speech(samples)
    lv = [max(l, -100.0) for l in levels(samples)]
    on, off = on_s // FRAME, min(-(-off_s // FRAME), len(lv))
    if off <= on + 2:
        return []

    def pct(v, p):
        v = sorted(v)
        return v[min(len(v) * p // 100, len(v) - 1)]

    loud, background = pct(lv[on:off], 90), pct(lv, 10)
    threshold = max(loud - 28.0, min(max(background + 10.0, -40.0), loud - 20.0))
    quiet = [l < threshold for l in lv[on:off]]
    smooth = []
    for i in range(len(quiet)):
        around = [quiet[j] for j in (i - 1, i, i + 1) if 0 <= j < len(quiet)]
        q, n = sum(around), len(around)
        smooth.append(2 * q > n or (n == 2 and quiet[i]))
    out, i = [], 0
    while i < len(smooth):
        if not smooth[i]:
            i += 1
            continue
        start = i
        while i < len(smooth) and smooth[i]:
            i += 1
        if start > 0 and i < len(smooth) and i - start >= MIN_BENCH_PAUSE_MS // 10:
            out.append(((on + start) * FRAME, (on + i) * FRAME))
    return out


def unlisted(samples, listed):
    """The bench finder's pauses that overlap none of `listed` (sample spans)."""
    return [d for d in bench_pauses(samples) if not any(d[0] < b and a < d[1] for a, b in listed)]


def words_around(samples, listed, min_ms=100):
    """Whether every stretch the pauses leave (before, between, after them) holds at least
    `min_ms` of frames within 20 dB of the clip's loud level (the bench's: 90th percentile
    inside its speech bounds): words, not a breath or a click, on both sides of each pause."""
    on, off = bench_speech(samples)
    lv = levels(samples)
    inside = sorted(lv[on // FRAME : max(off // FRAME, on // FRAME + 1)])
    loud = inside[min(len(inside) * 90 // 100, len(inside) - 1)]
    edges = [0] + [x for span in sorted(listed) for x in span] + [len(samples)]
    for a, b in zip(edges[::2], edges[1::2]):
        if sum(l > loud - 20 for l in lv[a // FRAME : b // FRAME]) * 10 < min_ms:
            return False
    return True


def missed(samples, listed):
    """Listed pauses the bench finder does not hear as one."""
    found = bench_pauses(samples)
    return [p for p in listed if not any(d[0] < p[1] and p[0] < d[1] for d in found)]


# --- recordings ------------------------------------------------------------------------
class Part:
    """A recording and where its voice is."""

    def __init__(self, samples, words):
        self.samples, self.words = samples, words
        lv = levels(samples)
        voiced = [l > VOICE_DBFS for l in lv]
        runs = [i for i in range(len(lv)) if voiced[i] and (
            (i + 1 < len(lv) and voiced[i + 1]) or (i > 0 and voiced[i - 1]))]
        if not runs:
            raise ValueError("no voice")
        self.v0, self.v1 = runs[0] * FRAME, min((runs[-1] + 1) * FRAME, len(samples))


class Sounds:
    """Asterisk's en_US_f_Allison prompts, decoded once, with the package's transcripts."""

    def __init__(self, folder, listing):
        self.folder, self.cache = folder, {}
        self.text = {}
        with gzip.open(listing, "rt", encoding="utf-8-sig") as f:
            for line in f:
                s = line.strip()
                if s and not s.startswith(";") and ":" in s:
                    name, _, text = s.partition(":")
                    self.text.setdefault(name.strip(), " ".join(text.split()))

    def part(self, name):
        if name not in self.cache:
            words = words_of(self.text.get(name, ""))
            if not words:
                sys.exit(f"make-turn-clips: {name}: no usable transcript in the list")
            src = os.path.join(self.folder, name + ".g722")
            r = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "g722",
                                "-i", src, "-ar", str(RATE), "-ac", "1", "-f", "s16le", "-acodec",
                                "pcm_s16le", "-"], capture_output=True)
            if r.returncode != 0 or not r.stdout:
                sys.exit(f"make-turn-clips: ffmpeg failed on {src}: {r.stderr.decode(errors='replace')[:200]}")
            samples = array.array("h", r.stdout[: len(r.stdout) // 2 * 2])
            if sys.byteorder == "big":
                samples.byteswap()
            self.cache[name] = Part(samples, words)
        return self.cache[name]


def wav_part(path, reference):
    rate, samples = paused.read(path)
    if rate != RATE:
        raise ValueError(f"{path}: {rate} Hz")
    return Part(samples, words_of(reference))


# --- joining ---------------------------------------------------------------------------
def ms(n):
    return n * 1000 // RATE


def fade(buf, start, end, rising):
    n = min(FADE, end - start)
    for k in range(n):
        g = (k + 0.5) / n
        i = start + k if rising else end - 1 - k
        buf[i] = int(round(buf[i] * g))


def join(groups, rng):
    """Groups of Parts joined: gaps inside groups, pauses between them. Returns the samples
    (before the noise floor), the pause spans (voice to voice) and the words."""
    out = array.array("h")
    pauses, words = [], []
    flat = [(g, p) for g, group in enumerate(groups) for p in group]
    for k, (g, part) in enumerate(flat):
        words += part.words
        s = part.samples
        if k == 0:
            head = min(part.v0, LEAD_MS * RATE // 1000)
            out.extend([0] * (LEAD_MS * RATE // 1000 - head))
        else:
            between = rng.randint(*(PAUSE_MS if g != flat[k - 1][0] else GAP_MS)) * RATE // 1000
            prev = flat[k - 1][1]
            tail = min(len(prev.samples) - prev.v1, TAIL_MS * RATE // 1000, between * 6 // 10)
            head = min(part.v0, HEAD_MS * RATE // 1000, between * 4 // 10)
            start = len(out)
            out.extend(prev.samples[prev.v1 : prev.v1 + tail])
            fade(out, start, len(out), False) if tail else fade(out, start - FADE, start, False)
            voice_end = start
            out.extend([0] * (between - tail - head))
            if g != flat[k - 1][0]:
                pauses.append((voice_end, voice_end + between))
        start = len(out)
        out.extend(s[part.v0 - head : part.v1])
        fade(out, start, len(out), True)
    last = flat[-1][1]
    tail = min(len(last.samples) - last.v1, TRAIL_MS * RATE // 1000)
    start = len(out)
    out.extend(last.samples[last.v1 : last.v1 + tail])
    fade(out, start, len(out), False) if tail else fade(out, start - FADE, start, False)
    out.extend([0] * (TRAIL_MS * RATE // 1000 - tail))
    return out, pauses, words


def add_floor(samples, rng):
    sigma = 32768.0 * 10 ** (FLOOR_DBFS / 20)
    return array.array("h", (max(-32768, min(32767, s + int(round(rng.gauss(0.0, sigma))))) for s in samples))


def background_dbfs(samples):
    lv = sorted(levels(samples))
    return lv[len(lv) // 10]


# --- the four kinds --------------------------------------------------------------------
def groups_of(items, form):
    out, i = [], 0
    for n in form:
        out.append(items[i : i + n])
        i += n
    return out


def split_form(n, two_pauses, rng):
    """Group sizes for n words with one pause or two."""
    if two_pauses and n >= 3:
        a = rng.randint(1, n - 2)
        b = rng.randint(1, n - a - 1)
        return (a, b, n - a - b)
    a = rng.randint(1, n - 1)
    return (a, n - a)


def ordinal(day):
    """Prompt names for a day of the month, spoken as an ordinal."""
    if day <= 20 or day == 30:
        return [f"digits/h-{day}"]
    return [f"digits/{day - day % 10}", f"digits/h-{day % 10}"]


def year(y):
    names = ["digits/19", f"digits/{y % 100 - y % 10}"]
    return names + ([f"digits/{y % 10}"] if y % 10 else [])


def date(rng):
    m = rng.randrange(12)
    return [f"digits/mon-{m}"], ordinal(rng.randint(1, DAYS_IN_MONTH[m]))


def make_digits(i, kind, rng, sounds):
    if kind == "number":
        form = rng.choice(NUMBER_FORMS[i % 2])
        names = [f"digits/{rng.randrange(10)}" for _ in range(sum(form))]
        groups = groups_of(names, form)
    else:
        month, day = date(rng)
        shape = i % 3
        if shape == 0:  # "march … fourteenth"
            groups = [month, day]
        elif shape == 1:  # "march fourteenth … nineteen eighty four"
            groups = [month + day, year(rng.randint(1930, 1999))]
        else:  # "march … fourteenth … nineteen fifty"
            groups = [month, day, year(rng.randint(1930, 1999))]
        if sum(map(len, groups)) > 6:
            return None
    return [[sounds.part(n) for n in g] for g in groups]


def make_letters(i, kind, rng, sounds):
    if kind == "name":
        word = rng.choice(NAMES)
    else:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 6)))
    form = split_form(len(word), i % 2 == 1, rng)
    return [[sounds.part(f"letters/{c}") for c in g] for g in groups_of(list(word), form)]


def make_twopart_allison(i, rng, sounds):
    first = rng.choice([k for k, w in ALLISON_WEIGHTS for _ in range(w)])
    then = rng.choice(ALLISON_THEN[first])
    if then == "DAY":
        rest = [f"digits/day-{rng.randrange(7)}"]
    elif then == "DATE":
        month, day = date(rng)
        rest = month + day
    elif then == "EXTENSION":
        rest = ["extension"] + [f"digits/{rng.randrange(10)}" for _ in range(rng.randint(2, 3))]
    else:
        rest = [then]
    return [[sounds.part(rng.choice(ALLISON_FIRST[first]))], [sounds.part(n) for n in rest]]


def make_twopart_hw(i, rng, hard):
    return [[hard[rng.choice(HW_FIRST)]], [hard[rng.choice(HW_THEN)]]]


def build_joined(key, make, seed, seen):
    """A joined clip: drawn until its words are new and the pause check passes."""
    rng = rng_for(seed, key)
    for _ in range(TRIES):
        groups = make(rng)
        if groups is None:
            continue
        samples, pauses, words = join(groups, rng)
        ref = " ".join(words)
        if ref in seen or not 2 <= len(words) <= 6:
            continue
        samples = add_floor(samples, rng_for(seed, key + ":floor"))
        if unlisted(samples, pauses) or missed(samples, pauses) or not words_around(samples, pauses):
            continue
        seen.add(ref)
        return samples, pauses, ref
    sys.exit(f"make-turn-clips: {key}: no clip after {TRIES} draws")


def syllables(word):
    return max(1, len(re.findall(r"[aeiouy]+", word[:-1] if word.endswith("e") and len(word) > 2 else word)))


def at_word_boundary(samples, gap, words, within=0.2):
    """Whether a gap falls where a word boundary is expected: the voiced time before it, as
    a share of the clip's voiced time (frames voiced as make-paused-clips.py's gaps() has
    them, the gaps left out), is within `within` of the share of syllables before some
    boundary. Keeps most stop closures inside a word ("interceptors") out."""
    n = FRAME
    lv = [10 * math.log10(sum(x * x for x in samples[i : i + n]) / n + 1.0)
          for i in range(0, len(samples) - n + 1, n)]
    ranked = sorted(lv)
    floor, peak = ranked[len(ranked) // 20], ranked[-1]
    voiced = [i for i, l in enumerate(lv) if l > floor + 0.3 * (peak - floor)]
    first, last = voiced[0], voiced[-1] + 1
    a, b = gap[0] // n, gap[1] // n
    quiet = set(range(first, last)) - set(voiced)
    before = (a - first) - sum(1 for i in quiet if i < a)
    total = (last - first) - len(quiet)
    share = before / max(total, 1)
    counts = [syllables(w) for w in words]
    bounds = [sum(counts[: k + 1]) / sum(counts) for k in range(len(words) - 1)]
    return min(abs(share - x) for x in bounds) <= within


def build_phrase(name, path, words, seed):
    """A study/hard clip with one or two of its gaps widened; None if it does not qualify."""
    rate, samples = paused.read(path)
    if rate != RATE:
        return None
    found = [g for g in paused.gaps(rate, samples) if at_word_boundary(samples, g, words)]
    if not found:
        return None
    rng = rng_for(seed, "phrase:" + name)
    long = [g for g in found if g[1] - g[0] >= MIN_BENCH_PAUSE_MS * RATE // 1000]
    if len(long) > 2 or any(g[1] - g[0] > PAUSE_MS[1] * RATE // 1000 for g in long):
        return None  # pauses of its own already, more or longer than this set's
    want = min(rng.choice([1, 2]), len(found))
    rest = [g for g in found if g not in long]
    chosen = sorted(long + rng.sample(rest, max(0, want - len(long))))
    lengths = [max(rng.randint(*PAUSE_MS) * rate // 1000, b - a) for a, b in chosen]
    for gap, n in sorted(zip(chosen, lengths), reverse=True):  # from the end
        samples = paused.widen(samples, gap, n)
    spans, shift = [], 0
    for (a, b), n in zip(chosen, lengths):
        spans.append((a + shift, a + shift + n))
        shift += n - (b - a)
    if background_dbfs(samples) < FLOOR_DBFS:
        samples = add_floor(samples, rng_for(seed, "phrase:" + name + ":floor"))
    if unlisted(samples, spans) or missed(samples, spans) or not words_around(samples, spans):
        return None  # a quiet stretch not listed, a pause the bench would not hear as one, or no words beside one
    return samples, spans, " ".join(words)


def phrase_candidates(study, hard):
    """(name, path, words) of 2-6 word clips, by source prefix."""
    by_source = {}
    for folder in (study, hard):
        with open(os.path.join(folder, "transcripts.tsv"), encoding="utf-8") as f:
            for line in f:
                name, _, ref = line.rstrip("\n").partition("\t")
                words = words_of(ref)
                if not words or not 2 <= len(words) <= 6:
                    continue
                source = name.split("_")[0]
                if source == "hw" and not name.startswith("hw_classic_"):
                    continue  # other voices' tags are not always all they say
                by_source.setdefault(source, []).append((name, os.path.join(folder, name), words))
    return by_source


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sounds", required=True, help="the en_US_f_Allison folder (G.722)")
    p.add_argument("--list", required=True, help="core-sounds-en.txt.gz")
    p.add_argument("--study", required=True, help="samples/fetch-study-clips.sh's folder")
    p.add_argument("--hard", required=True, help="samples/fetch-hard-clips.sh's folder")
    p.add_argument("target")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    sounds = Sounds(args.sounds, args.list)
    hard_refs = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(args.hard, "transcripts.tsv"), encoding="utf-8"))
    hard = {n: wav_part(os.path.join(args.hard, n), hard_refs[n]) for n in HW_FIRST + HW_THEN}
    clips = []  # (file, samples, pauses, reference)
    seen = set()

    for kind, make in (("digits_number", lambda i, r: make_digits(i, "number", r, sounds)),
                       ("digits_date", lambda i, r: make_digits(i, "date", r, sounds)),
                       ("letters_name", lambda i, r: make_letters(i, "name", r, sounds)),
                       ("letters_code", lambda i, r: make_letters(i, "code", r, sounds)),
                       ("twopart_allison", lambda i, r: make_twopart_allison(i, r, sounds)),
                       ("twopart_hw", lambda i, r: make_twopart_hw(i, r, hard))):
        for i in range(COUNTS[kind]):
            name = f"{kind}_{i + 1:02d}.wav"
            samples, pauses, ref = build_joined(name, lambda r: make(i, r), args.seed, seen)
            clips.append((name, samples, pauses, ref))
        log(f"{kind}: {COUNTS[kind]} clips")

    # phrase_: round robin over the sources, each source's clips in a seeded order.
    by_source = phrase_candidates(args.study, args.hard)
    order = {s: sorted(c, key=lambda c: hashlib.sha256(f"{args.seed}:{c[0]}".encode()).digest())
             for s, c in by_source.items()}
    taken, rejected = {s: 0 for s in order}, 0
    phrases = []
    while len(phrases) < COUNTS["phrase"] and any(order.values()):
        for source in sorted(order):
            while order[source] and len(phrases) < COUNTS["phrase"]:
                name, path, words = order[source].pop(0)
                built = build_phrase(name, path, words, args.seed)
                if built is None:
                    rejected += 1
                    continue
                phrases.append((f"phrase_{name}",) + built)
                taken[source] += 1
                break
    clips += phrases
    log(f"phrase: {len(phrases)} clips (" + ", ".join(f"{s} {n}" for s, n in sorted(taken.items())) +
        f"; {rejected} candidates without a usable gap or with pauses of their own)")

    clips.sort(key=lambda c: c[0])
    os.makedirs(args.target, exist_ok=True)
    wanted = {c[0] for c in clips}
    for old in sorted(os.listdir(args.target)):
        if old.endswith(".wav") and old not in wanted:
            os.remove(os.path.join(args.target, old))
    fmt = lambda n: f"{n * 1000 / RATE:.4f}".rstrip("0").rstrip(".")
    with open(os.path.join(args.target, "transcripts.tsv"), "w", encoding="utf-8") as t, open(
        os.path.join(args.target, "pauses.tsv"), "w", encoding="utf-8"
    ) as pz:
        for name, samples, pauses, ref in clips:
            tmp = os.path.join(args.target, "." + name + ".part")
            paused.write(tmp, RATE, samples)
            os.replace(tmp, os.path.join(args.target, name))
            t.write(f"{name}\t{ref}\n")
            pz.write(f"{name}\t" + ",".join(f"{fmt(a)}-{fmt(b)}" for a, b in pauses) + "\n")

    # Summary, and the checks the set promises.
    bad = []
    kinds = {}
    for name, samples, pauses, ref in clips:
        k = name.split("_")[0]
        d = kinds.setdefault(k, {"clips": 0, "words": 0, "pauses": 0, "secs": [], "pause_ms": [], "missed": 0})
        d["clips"] += 1
        d["words"] += len(ref.split())
        d["pauses"] += len(pauses)
        d["secs"].append(len(samples) / RATE)
        d["pause_ms"] += [ms(b - a) for a, b in pauses]
        d["missed"] += len(missed(samples, pauses))
        if not 1 <= len(pauses) <= 2 or not 2 <= len(ref.split()) <= 6:
            bad.append(f"{name}: {len(pauses)} pauses, {len(ref.split())} words")
        if any(not PAUSE_MS[0] <= ms(b - a) <= PAUSE_MS[1] for a, b in pauses):
            bad.append(f"{name}: a pause out of range: {pauses}")
    for k, d in sorted(kinds.items()):
        s, pm = d["secs"], d["pause_ms"]
        log(f"{k:8} {d['clips']:3} clips {d['words']:4} words {d['pauses']:3} pauses "
            f"({d['missed']} not heard by the bench's finder); {sum(s):6.1f} s, clip "
            f"{min(s):.2f}/{statistics.median(s):.2f}/{max(s):.2f} s, pause {min(pm)}/{int(statistics.median(pm))}/{max(pm)} ms (min/median/max)")
    log(f"total {len(clips)} clips, {sum(d['words'] for d in kinds.values())} words, "
        f"{sum(d['pauses'] for d in kinds.values())} pauses, {sum(sum(d['secs']) for d in kinds.values()):.1f} s in {args.target}")
    if bad:
        sys.exit("make-turn-clips: FAILED:\n  " + "\n  ".join(bad))


if __name__ == "__main__":
    main()
