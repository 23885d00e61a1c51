#!/bin/bash
# Non-speech sounds from Debian 12 packages, for measuring what hark writes when no one speaks
# (BENCHMARKS.md, "Hard speech"): every word a recognizer gives for them is an insertion.
# Usage: samples/fetch-noise-clips.sh TARGET_DIR   (needs: apt-get, dpkg, ffmpeg)
# Optional: DEBCACHE=/dir/with/already/downloaded/debs
# Prefixes: wm_ warmux-data misc and weapon effects, vo_ warmux-data character voices
# (grunts and exclamations; not checked by ear for words), nb_ neverball-common effects,
# fi_ fillets-ng-data effects.
set -euo pipefail
T="${1:?usage: fetch-noise-clips.sh TARGET_DIR}"
mkdir -p "$T"; T="$(cd "$T" && pwd)"
W="$T/.work"; mkdir -p "$W/debs" "$W/x"
command -v ffmpeg >/dev/null || { apt-get update && apt-get install -y ffmpeg; }
for PV in warmux-data=1:11.04.1+repack2-4 neverball-common=1.6.0+git20180603-3 fillets-ng-data=1.0.1-1.1; do
  P="${PV%%=*}"; V="${PV#*=}"
  f=$(ls "${DEBCACHE:-/nonexistent}/${P}_"*.deb 2>/dev/null | head -1 || true)
  if [ -n "$f" ]; then cp "$f" "$W/debs/"; else (cd "$W/debs" && apt-get download "$P=$V"); fi
  dpkg -x "$(ls "$W/debs/${P}_"*.deb | head -1)" "$W/x"
done
: > "$T/transcripts.tsv"
convert() {
  ffmpeg -nostdin -v error -y -i "$1" -ac 1 -ar 16000 -sample_fmt s16 "$T/$2"
  printf '%s\t\n' "$2" >> "$T/transcripts.tsv"
}
S="$W/x/usr/share/games"
for f in "$S"/warmux/sound/default/misc/*.ogg "$S"/warmux/sound/default/weapons/*.ogg; do
  convert "$f" "wm_$(basename "$f" .ogg).wav"
done
for n in ball bink bump bumpbig bumplil coin fall grow jump menu shrink switch tick tock; do
  convert "$S/neverball/snd/$n.ogg" "nb_$n.wav"
done
for f in "$S"/fillets-ng/sound/share/*.ogg; do convert "$f" "fi_$(basename "$f" .ogg).wav"; done
for f in "$S"/warmux/sound/default/voices/*.ogg; do convert "$f" "vo_$(basename "$f" .ogg).wav"; done
rm -rf "$W"
echo "done: $(wc -l < "$T/transcripts.tsv") clips in $T"
