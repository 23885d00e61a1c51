#!/usr/bin/env python3
"""How much of a clip is voiced: the share of its loud 40 ms frames (10 ms apart, within
30 dB of the loudest) whose normalised autocorrelation peaks over 0.5 at a pitch between
70 and 400 Hz. Measured to see whether voicing tells sound effects from short shouted
words (BENCHMARKS.md, "Sounds": it does not). Mono or the first channel, resampled to
16 kHz by linear interpolation. Needs numpy.

    python3 hark-bench/study/voicing.py CLIP.wav ...
"""
import os
import sys
import wave

import numpy as np

R = 16000
WIN, HOP = 640, 160
LAGS = (R // 400, R * 1000 // 70 // 1000)


def load(path):
    with wave.open(path) as w:
        n, ch, sr, width = w.getnframes(), w.getnchannels(), w.getframerate(), w.getsampwidth()
        raw = w.readframes(n)
    if width == 2:
        x = np.frombuffer(raw, dtype=np.int16).astype(np.float32) / 32768
    else:
        x = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128) / 128
    x = x.reshape(-1, ch)[:, 0]
    if sr != R:
        t = np.arange(len(x) * R // sr) / R
        x = np.interp(t, np.arange(len(x)) / sr, x)
    return x


def voicing(x):
    frames = [x[i:i + WIN] for i in range(0, len(x) - WIN, HOP)]
    if not frames:
        return 0.0, 0
    db = np.array([10 * np.log10(np.mean(f * f) + 1e-12) for f in frames])
    voiced = loud = 0
    for f, level in zip(frames, db):
        if level < db.max() - 30:
            continue
        loud += 1
        f = f - f.mean()
        a = np.correlate(f, f, "full")[WIN - 1:]
        if a[0] > 0 and (a[LAGS[0]:LAGS[1]] / a[0]).max() > 0.5:
            voiced += 1
    return voiced / max(loud, 1), loud


if __name__ == "__main__":
    for path in sys.argv[1:]:
        share, loud = voicing(load(path))
        print(f"{share:.2f} {loud:4d} {os.path.basename(path)}")
