#!/bin/bash
# Recorded everyday sounds from Debian 12 packages, for measuring what hark writes when no
# one speaks (BENCHMARKS.md, "Sounds"): every word a recognizer gives for them is an
# insertion. 147 clips, 288 s.
# Usage: samples/fetch-everyday-sounds.sh TARGET_DIR   (needs: apt-get, dpkg, ffmpeg, python3)
# Prefixes: ot_ openttd-opensfx (recordings from freesound.org and pdsounds.org edited for
# the game: engines, trains, aircraft, machinery, crowds, weather), fd_
# sound-theme-freedesktop (bells, alarms, phone rings, a camera shutter; its spoken
# audio-channel-* clips and test signal left out), ox_ oxygen-sounds (desktop notification
# sounds).
set -euo pipefail
T="${1:?usage: fetch-everyday-sounds.sh TARGET_DIR}"
mkdir -p "$T"; T="$(cd "$T" && pwd)"
W="$T/.work"; mkdir -p "$W/debs" "$W/x" "$W/cat"
command -v ffmpeg >/dev/null || { apt-get update && apt-get install -y ffmpeg; }
for PV in openttd-opensfx=1.0.3-2 sound-theme-freedesktop=0.8-2 oxygen-sounds=4:5.27.5-2; do
  P="${PV%%=*}"
  (cd "$W/debs" && apt-get download "$PV")
  dpkg -x "$(ls "$W/debs/${P}_"*.deb | head -1)" "$W/x"
done
# OpenSFX is one catalogue: a table of (offset, size) pairs, each entry a name then a WAV.
python3 - "$W/x/usr/share/games/openttd/baseset/opensfx/opensfx.cat" "$W/cat" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
entries = (struct.unpack("<I", data[:4])[0] & 0x7FFFFFFF) // 8
for i in range(entries):
    offset, size = struct.unpack("<II", data[i * 8 : i * 8 + 8])
    blob = data[offset & 0x7FFFFFFF :][:size]
    wav = blob[1 + blob[0] :]
    if wav[:4] == b"RIFF":
        open(f"{sys.argv[2]}/{i:02d}.wav", "wb").write(wav)
EOF
: > "$T/transcripts.tsv"
convert() {
  # Some catalogue entries end on half a sample: ffmpeg says so and converts the rest.
  ffmpeg -nostdin -v fatal -y -i "$1" -ac 1 -ar 16000 -sample_fmt s16 "$T/$2"
  printf '%s\t\n' "$2" >> "$T/transcripts.tsv"
}
for f in "$W"/cat/*.wav; do convert "$f" "ot_$(basename "$f")"; done
for f in "$W"/x/usr/share/sounds/freedesktop/stereo/*.oga; do
  b=$(basename "$f" .oga)
  case "$b" in audio-channel-*|audio-test-signal) continue ;; esac
  convert "$f" "fd_$b.wav"
done
for f in "$W"/x/usr/share/sounds/Oxygen-*.ogg; do convert "$f" "ox_$(basename "$f" .ogg).wav"; done
rm -rf "$W"
echo "done: $(wc -l < "$T/transcripts.tsv") clips in $T"
