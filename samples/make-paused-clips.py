#!/usr/bin/env python3
"""Speech with pauses inside sentences, built from a clip set whose references are known.

    samples/make-paused-clips.py SOURCE_DIR TARGET_DIR [--seed N] [--min-words N]

Callers stop mid-sentence: to think, to read a number, to let a noise pass. Registry
packages hold no such dialogue with references, so this builds it: in each clip of
SOURCE_DIR (16-bit mono WAV and `transcripts.tsv`, as samples/study-clips and
samples/hard-clips are) with at least --min-words reference words (default 4), up to two
silent gaps between voiced stretches are widened to a pause of 0.3-1.0 s. The words, and so
the reference, do not change. Each pause is listed in TARGET/pauses.tsv (FILE<TAB>start_ms-
end_ms[,…], as hark-bench --corpus and segment_study read it), so the set also counts the
pauses inside sentences that a server would take for a turn's end. The pause is the gap's own background played back and forth,
not digital silence, so a line's noise floor carries on through it.

Which gaps: a clip's frames (10 ms) are voiced when their level is above 30 % of the way from
its quietest frames (5th percentile) to its loudest, in dB; a gap is a run of at least 70 ms
below that, with voice on both sides. Gaps are drawn at random (seeded by --seed and the file
name, so a rebuild is identical); most are word boundaries, some are stop closures inside a
word, as a hesitation can be. Clips without such a gap are left out. Names keep the source
prefix, so samples/wer-by-source.py compares them with the clips they came from.
Python standard library only.
"""
import argparse
import array
import hashlib
import math
import os
import random
import sys
import wave

FRAME_MS = 10
MIN_GAP_MS = 70
PAUSE_MS = (300, 1000)
MAX_PAUSES = 2


def read(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: not 16-bit mono")
        rate = w.getframerate()
        samples = array.array("h", w.readframes(w.getnframes()))
    if sys.byteorder == "big":
        samples.byteswap()
    return rate, samples


def write(path, rate, samples):
    out = array.array("h", samples)
    if sys.byteorder == "big":
        out.byteswap()
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(out.tobytes())


def gaps(rate, samples):
    """Runs of quiet frames with voice before and after them, as (start, end) samples."""
    n = rate * FRAME_MS // 1000
    levels = []
    for i in range(0, len(samples) - n + 1, n):
        power = sum(s * s for s in samples[i : i + n]) / n
        levels.append(10 * math.log10(power + 1.0))
    if len(levels) < 10:
        return []
    ranked = sorted(levels)
    floor, peak = ranked[len(ranked) // 20], ranked[-1]
    voiced = [level > floor + 0.3 * (peak - floor) for level in levels]
    runs, start, spoken = [], None, False
    for i, v in enumerate(voiced):
        if v:
            if start is not None:
                runs.append((start, i))
            start, spoken = None, True
        elif spoken and start is None:
            start = i
    min_frames = MIN_GAP_MS // FRAME_MS
    return [(a * n, b * n) for a, b in runs if b - a >= min_frames]


def widen(samples, gap, pause):
    """`samples` with the gap grown to `pause` samples of its own background."""
    a, b = gap
    quiet = samples[a:b]
    back_and_forth = quiet + quiet[::-1]
    fill = array.array("h", (back_and_forth[i % len(back_and_forth)] for i in range(pause)))
    return samples[:a] + fill + samples[b:]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-words", type=int, default=4)
    args = p.parse_args()
    os.makedirs(args.target, exist_ok=True)
    made, skipped, pauses = 0, 0, 0
    with open(os.path.join(args.source, "transcripts.tsv"), encoding="utf-8") as f, open(
        os.path.join(args.target, "transcripts.tsv"), "w", encoding="utf-8"
    ) as out, open(os.path.join(args.target, "pauses.tsv"), "w", encoding="utf-8") as listed:
        for line in f:
            name, _, reference = line.rstrip("\n").partition("\t")
            if len(reference.split()) < args.min_words:
                continue
            rate, samples = read(os.path.join(args.source, name))
            found = gaps(rate, samples)
            if not found:
                skipped += 1
                continue
            digest = hashlib.sha256(f"{args.seed}:{name}".encode()).digest()
            rng = random.Random(int.from_bytes(digest[:8], "big"))
            chosen = sorted(rng.sample(found, min(MAX_PAUSES, len(found))), reverse=True)
            widened = []
            for gap in chosen:  # from the end, so earlier positions stay valid
                pause = max(rng.randint(*PAUSE_MS) * rate // 1000, gap[1] - gap[0])
                samples = widen(samples, gap, pause)
                widened.append((gap, pause))
            # Where each pause lies in the clip written: shifted by the growth of those before.
            spans, shift = [], 0
            for (a, b), pause in reversed(widened):
                start = a + shift
                spans.append(f"{start * 1000 // rate}-{(start + pause) * 1000 // rate}")
                shift += pause - (b - a)
            write(os.path.join(args.target, name), rate, samples)
            out.write(f"{name}\t{reference}\n")
            listed.write(f"{name}\t{','.join(spans)}\n")
            made += 1
            pauses += len(chosen)
    print(f"{made} clips with {pauses} pauses in {args.target} ({skipped} had no gap)")


if __name__ == "__main__":
    main()
