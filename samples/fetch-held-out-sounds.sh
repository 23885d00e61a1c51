#!/bin/bash
# Sounds the sound probe was not trained on (BENCHMARKS.md, "Sounds"), from Debian 12
# packages: every word a recognizer gives for them is an insertion. 234 clips, 625 s.
# Usage: samples/fetch-held-out-sounds.sh TARGET_DIR   (needs: apt-get, dpkg, ffmpeg)
# Prefixes: cb_ colobot-common-sounds (robots, machines, weapons, weather, doors), et_
# extremetuxracer-data (sliding on snow, ice, grass, mud, rock; pickups), lc_
# lincity-ng-data (a city's places: farms, mines, mills, markets, a harbour, trains, fire).
# The games' music is left out.
set -euo pipefail
T="${1:?usage: fetch-held-out-sounds.sh TARGET_DIR}"
mkdir -p "$T"; T="$(cd "$T" && pwd)"
W="$T/.work"; mkdir -p "$W/debs" "$W/x"
command -v ffmpeg >/dev/null || { apt-get update && apt-get install -y ffmpeg; }
for PV in colobot-common-sounds=0.2.0-2 extremetuxracer-data=0.8.2-1 \
  lincity-ng-data=2.9~git20150314-5; do
  P="${PV%%=*}"
  (cd "$W/debs" && apt-get download "$PV")
  dpkg -x "$(ls "$W/debs/${P}_"*.deb | head -1)" "$W/x"
done
: > "$T/transcripts.tsv"
S="$W/x/usr/share/games"
for f in "$S"/colobot/sounds/*.wav "$S"/etr/sounds/*.wav "$S"/lincity-ng/sounds/*.wav; do
  case "$f" in */colobot/*) p=cb ;; */etr/*) p=et ;; *) p=lc ;; esac
  n="${p}_$(basename "$f" .wav).wav"
  ffmpeg -nostdin -v fatal -y -i "$f" -ac 1 -ar 16000 -sample_fmt s16 "$T/$n"
  printf '%s\t\n' "$n" >> "$T/transcripts.tsv"
done
rm -rf "$W"
echo "done: $(wc -l < "$T/transcripts.tsv") clips in $T"
