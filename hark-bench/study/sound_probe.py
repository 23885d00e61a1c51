#!/usr/bin/env python3
"""Trains the sound probe (hark-whisper/src/sound_probe.rs) and says how well it
separates sounds from speech on sources it was not trained on.

What it reads
    DIR/*.tsv, each written by ``segment_study`` with ``POOLED=FILE``: one line per clip,
    its name then base's mean encoding of it (the mean of the int8 encoder's output over
    the clip's frames, the audio followed by base's 2 s of silence, as the server encodes a
    final). A file's name says its set and rate: ``SET-RATE.tsv``. Sound sets (every clip a
    sound, no one speaking): ``noise-clips`` (game effects; its ``vo_`` character voices
    and ``nb_fall``, an announcer's "Fall out!", are left out as speech-like) and
    ``everyday-sounds``; every other set is speech (hard, study, synthetic voices, other
    languages).

What it does
    A logistic regression (scikit-learn, standardised inputs, L2, balanced classes) on
    both rates together. Held-out scores: each source (a file name's prefix before its
    first ``_``, per set) is scored by a regression trained on all the others, so a score
    is what the probe gives material of a kind it never saw. It prints, per rate, the
    highest held-out scores of speech, and for each sound source how many of its clips
    score above thresholds; then trains on everything and writes the weights with the
    standardisation folded in (``bias`` then one weight per dimension, a line each), the
    file ``sound_probe.rs`` embeds.

Run
    for each set and rate: ``POOLED=/tmp/pooled/SET-RATE.tsv [RATE=8000] ENGINE=whisper
    MODEL=tiny.en FINAL_MODEL=base CLIPS=~/.cache/hark/SET target/release/examples/segment_study``
    (SET for language-clips/es is written language-clips-es); then
    ``python3 hark-bench/study/sound_probe.py /tmp/pooled hark-whisper/src/sound_probe/base.txt``
    (``pip install numpy scikit-learn``).
"""

import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

SOUND_SETS = ("noise-clips", "everyday-sounds")
C = 0.05


def load(folder):
    rows = []
    for tsv in sorted(Path(folder).glob("*.tsv")):
        set_name, rate = tsv.stem.rsplit("-", 1)
        for line in tsv.read_text().splitlines():
            name, *numbers = line.split("\t")
            prefix = name.split("_", 1)[0]
            if set_name == "noise-clips" and (prefix == "vo" or name == "nb_fall.wav"):
                continue
            rows.append((set_name, rate, name, f"{set_name}:{prefix}",
                         set_name in SOUND_SETS, np.array(numbers, dtype=np.float64)))
    return rows


def regression():
    return LogisticRegression(C=C, max_iter=5000, class_weight="balanced")


def main():
    folder, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
    rows = load(folder)
    x = np.stack([r[5] for r in rows])
    y = np.array([r[4] for r in rows])
    groups = np.array([r[3] for r in rows])
    rates = np.array([r[1] for r in rows])
    held = np.zeros(len(rows))
    for g in sorted(set(groups)):
        test = groups == g
        scaler = StandardScaler().fit(x[~test])
        model = regression().fit(scaler.transform(x[~test]), y[~test])
        held[test] = model.decision_function(scaler.transform(x[test]))
    prob = 1 / (1 + np.exp(-held))
    print(f"{(~y).sum()} speech clips, {y.sum()} sound clips (both rates); held-out scores:")
    for rate in sorted(set(rates)):
        at = rates == rate
        speech = np.sort(prob[at & ~y])[::-1]
        print(f"\n{rate} Hz: speech's highest probabilities: "
              + ", ".join(f"{p:.3f}" for p in speech[:8]))
        for p, r in sorted(((prob[i], rows[i]) for i in np.where(at & ~y)[0]),
                           key=lambda t: -t[0])[:5]:
            print(f"  {p:.3f} {r[0]}/{r[2]}")
        thresholds = (0.5, 0.8, 0.9, 0.95)
        print("  speech clips over " + ", ".join(
            f"{t}: {(speech > t).sum()}" for t in thresholds))
        for g in sorted(set(groups[at & y])):
            m = at & (groups == g)
            print(f"  sounds {g:28s} {m.sum():3d} clips, over "
                  + ", ".join(f"{t}: {(prob[m] > t).mean():4.0%}" for t in thresholds))
    scaler = StandardScaler().fit(x)
    model = regression().fit(scaler.transform(x), y)
    weights = model.coef_[0] / scaler.scale_
    bias = model.intercept_[0] - (model.coef_[0] * scaler.mean_ / scaler.scale_).sum()
    if out:
        Path(out).write_text("".join(f"{v:.6g}\n" for v in [bias, *weights]))
        print(f"\nwrote {out}: bias and {len(weights)} weights")


if __name__ == "__main__":
    main()
