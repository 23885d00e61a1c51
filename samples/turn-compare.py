#!/usr/bin/env python3
"""Reference outputs of smart-turn v3.2 from pipecat's own code, for examples/turn_compare.rs.

For each clip, cut at every second and whole, it feeds the model the way pipecat 1.14.0's
LocalSmartTurnAnalyzerV3._predict_endpoint does (last 8 s, zeros in front of shorter audio,
the package's compute_whisper_log_mel_features, onnxruntime with one thread) and writes:

  OUT/cases.tsv      clip path <TAB> samples fed <TAB> probability
  OUT/<n>.f32        case n's features, 80 x 800 little-endian float32

Needs only PyPI packages:
  python3 -m venv /tmp/turnvenv && /tmp/turnvenv/bin/pip install numpy onnxruntime==1.23.2
  pip download --no-deps pipecat-ai==1.14.0 -d /tmp/pipecat
  /tmp/turnvenv/bin/python samples/turn-compare.py /tmp/pipecat/pipecat_ai-1.14.0-py3-none-any.whl \
      /tmp/turn-ref ~/.cache/hark/clips/*.wav
  cargo run --release --example turn_compare -- /tmp/turn-ref
"""

import os
import sys
import types
import wave
import zipfile

import numpy as np
import onnxruntime as ort

PKG = "pipecat/audio/turn/smart_turn/"


def main():
    wheel, out, clips = sys.argv[1], sys.argv[2], sys.argv[3:]
    with zipfile.ZipFile(wheel) as z:
        # The feature module alone (importing pipecat pulls in its whole dependency tree).
        source = z.read(PKG + "_whisper_features.py").decode()
        model = z.read(PKG + "data/smart-turn-v3.2-cpu.onnx")
    features = types.ModuleType("_whisper_features")
    exec(compile(source, "_whisper_features.py", "exec"), features.__dict__)

    so = ort.SessionOptions()
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.inter_op_num_threads = 1
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, sess_options=so)

    os.makedirs(out, exist_ok=True)
    n = 0
    with open(os.path.join(out, "cases.tsv"), "w") as tsv:
        for clip in clips:
            with wave.open(clip) as w:
                if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
                    print(f"skipping {clip}: not 16 kHz mono 16-bit", file=sys.stderr)
                    continue
                audio = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
            # As pipecat's BaseSmartTurn converts its int16 buffer.
            audio = audio.astype(np.float32) / 32768.0
            cuts = list(range(16000, len(audio), 16000)) + [len(audio)]
            for end in cuts:
                feats = features.compute_whisper_log_mel_features(last_8s(audio[:end]))
                p = session.run(None, {"input_features": feats[None]})[0][0].item()
                feats.astype("<f4").tofile(os.path.join(out, f"{n}.f32"))
                tsv.write(f"{os.path.abspath(clip)}\t{end}\t{p:.9g}\n")
                n += 1
    print(f"{n} cases in {out}")


def last_8s(audio):
    """pipecat's truncate_audio_to_last_n_seconds(n_seconds=8)."""
    m = 8 * 16000
    if len(audio) > m:
        return audio[-m:]
    if len(audio) < m:
        return np.pad(audio, (m - len(audio), 0), mode="constant", constant_values=0)
    return audio


if __name__ == "__main__":
    main()
