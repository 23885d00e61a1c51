#!/usr/bin/env bash
# The text-to-speech study set: 25 assistant prompts (samples/tts-study-prompts.txt) spoken by
# espeak-ng (Debian) in three voices, 16 kHz mono WAV, with a transcripts.tsv for
# `examples/segment_study.rs` (CLIPS=DIR). Stands in for the assistant channel's speech.
#
#   samples/fetch-tts-study.sh [TARGET]      (default: ~/.cache/hark/tts-study)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
target=${1:-$HOME/.cache/hark/tts-study}
for tool in espeak-ng ffmpeg; do
  command -v "$tool" >/dev/null || { echo "fetch-tts-study: needs $tool (apt-get install $tool)" >&2; exit 1; }
done
mkdir -p "$target"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/transcripts.tsv"
i=0
while IFS= read -r prompt; do
  [ -n "$prompt" ] || continue
  i=$((i + 1))
  for voice in en-us:165 en-gb:150 en-us+f3:180; do
    name="tts_${i}_$(echo "${voice%%:*}" | tr -d '+-').wav"
    espeak-ng -v "${voice%%:*}" -s "${voice##*:}" -w "$tmp/raw.wav" "$prompt" </dev/null
    ffmpeg -nostdin -loglevel error -y -i "$tmp/raw.wav" -ar 16000 -ac 1 -sample_fmt s16 "$target/$name" </dev/null
    printf '%s\t%s\n' "$name" "$prompt" >> "$tmp/transcripts.tsv"
  done
done < "$here/tts-study-prompts.txt"
mv "$tmp/transcripts.tsv" "$target/transcripts.tsv"
echo "fetch-tts-study: $(wc -l < "$target/transcripts.tsv") clips in $target" >&2
