#!/usr/bin/env python3
"""The line-sounds study set: what a phone line carries besides speech, as 16 kHz WAVs with
an empty transcripts.tsv for `examples/segment_study.rs` (CLIPS=DIR): keypad (DTMF) digits,
hiss, mains hum, clicks, pink noise, ringback and busy tones, hold music. The same kinds of
signals as tests/engine/noise.rs makes; deterministic (seed 7). Needs numpy.

    python3 hark-bench/study/line_sounds.py DIR
"""
import sys
import wave

import numpy as np

R = 16000


def main(out):
    rng = np.random.default_rng(7)

    def save(name, x):
        x = np.clip(x, -1, 1)
        with wave.open(f"{out}/{name}", "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(R)
            w.writeframes((x * 32767).astype("<i2").tobytes())

    def t(s):
        return np.arange(int(s * R)) / R

    pairs = {"1": (697, 1209), "2": (697, 1336), "3": (697, 1477), "4": (770, 1209),
             "5": (770, 1336), "6": (770, 1477), "7": (852, 1209), "8": (852, 1336),
             "9": (852, 1477), "0": (941, 1336), "*": (941, 1209), "#": (941, 1477)}

    def dtmf(digits, on=0.12, off=0.08, amp=0.3):
        out = [np.zeros(int(0.5 * R))]
        for d in digits:
            lo, hi = pairs[d]
            tt = t(on)
            out.append(amp * (np.sin(2 * np.pi * lo * tt) + np.sin(2 * np.pi * hi * tt)) / 2)
            out.append(np.zeros(int(off * R)))
        out.append(np.zeros(int(0.8 * R)))
        return np.concatenate(out)

    save("dtmf_account.wav", dtmf("4815162342"))
    save("dtmf_slow.wav", dtmf("1#0*9", on=0.3, off=0.4))
    save("dtmf_loud.wav", dtmf("5551234", amp=0.8))
    n = rng.standard_normal(int(6 * R))
    pink = np.cumsum(n)
    pink -= np.convolve(pink, np.ones(400) / 400, "same")
    pink /= np.abs(pink).max()
    save("line_hiss.wav", 0.03 * n)
    save("line_hum.wav", 0.05 * np.sin(2 * np.pi * 60 * t(6)) + 0.02 * np.sin(2 * np.pi * 180 * t(6)) + 0.01 * n)
    crack = 0.01 * n.copy()
    idx = rng.integers(0, len(n), 60)
    crack[idx] += rng.uniform(-0.8, 0.8, 60)
    save("line_crackle.wav", crack)
    save("line_pink.wav", 0.1 * pink)
    ring = np.concatenate([0.2 * (np.sin(2 * np.pi * 440 * t(2)) + np.sin(2 * np.pi * 480 * t(2))) / 2, np.zeros(4 * R)])
    save("ringback.wav", ring[: 6 * R])
    busy = np.concatenate([0.2 * (np.sin(2 * np.pi * 480 * t(0.5)) + np.sin(2 * np.pi * 620 * t(0.5))) / 2, np.zeros(R // 2)])
    save("busy.wav", np.tile(busy, 6))
    notes = [60, 64, 67, 72, 71, 67, 64, 62, 60, 65, 69, 72, 74, 72, 69, 65, 67, 71, 74, 79]

    def tone(m, d, amp=0.15):
        f = 440 * 2 ** ((m - 69) / 12)
        tt = t(d)
        env = np.minimum(1, tt * 40) * np.exp(-tt * 2.5)
        return amp * env * sum(np.sin(2 * np.pi * f * k * tt) / k for k in range(1, 6))

    mel = np.concatenate([tone(m, 0.4) for m in notes])
    chords = np.concatenate([tone(m - 12, 1.6, 0.08) + tone(m - 5, 1.6, 0.06) for m in notes[::4]])
    length = min(len(mel), len(chords))
    music = mel[:length] + chords[:length]
    save("hold_music.wav", np.tile(music, 2))
    save("hold_music_hiss.wav", np.tile(music, 2) * 0.6 + 0.01 * rng.standard_normal(2 * length))
    names = ["dtmf_account", "dtmf_slow", "dtmf_loud", "line_hiss", "line_hum", "line_crackle",
             "line_pink", "ringback", "busy", "hold_music", "hold_music_hiss"]
    with open(f"{out}/transcripts.tsv", "w") as f:
        f.write("".join(f"{n}.wav\t\n" for n in names))


if __name__ == "__main__":
    main(sys.argv[1])
