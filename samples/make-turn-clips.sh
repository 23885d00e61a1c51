#!/usr/bin/env bash
# Build the turn-clip set (samples/turn-clips/README.md): short answers of real recorded speech
# with pauses inside the turn ("four one five … two zero seven", "s m i … t h", "no … tomorrow"),
# for measuring end-of-turn decisions.
#
#   samples/make-turn-clips.sh [TARGET]      (default: ~/.cache/hark/turn-clips)
#
# Writes TARGET/{digits,letters,phrase,twopart}_*.wav (16 kHz mono s16), TARGET/transcripts.tsv
# (FILE<TAB>REFERENCE) and TARGET/pauses.tsv (FILE<TAB>start_ms-end_ms[,…], as hark-bench
# --corpus reads it). Sources: Asterisk's English prompts (the pinned Debian 12 packages below,
# `apt-get download`, checked against the sha256 pinned here, unpacked without root with
# dpkg -x, G.722 decoded with ffmpeg) and the study and hard clip sets (built first with
# samples/fetch-study-clips.sh and samples/fetch-hard-clips.sh if they are not there). The
# clips are made by samples/make-turn-clips.py (seeded; a rebuild is byte-identical), and the
# lists it writes are checked against the committed samples/turn-clips/{transcripts,pauses}.tsv
# (set TURN_CLIPS_UPDATE=1 to rewrite those copies after changing the rules).
# Does nothing if TARGET already holds every clip listed there.
#
# Needs: bash, python3 (stdlib only), ffmpeg, apt-get + dpkg (Debian 12 package lists),
# sha256sum, network access to deb.debian.org (and PyPI, for the study clips).
# Set TURN_CLIPS_DOWNLOADS=DIR to keep (and reuse) the downloaded .debs in DIR;
# STUDY_CLIPS=DIR and HARD_CLIPS=DIR to use source sets elsewhere than ~/.cache/hark.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
copies="$here/turn-clips"
target=${1:-$HOME/.cache/hark/turn-clips}
study=${STUDY_CLIPS:-$HOME/.cache/hark/study-clips}
hard=${HARD_CLIPS:-$HOME/.cache/hark/hard-clips}

die() { echo "make-turn-clips: $*" >&2; exit 1; }
log() { echo "make-turn-clips: $*" >&2; }

command -v python3 >/dev/null || die "python3 is required"

# --- already there? -------------------------------------------------------------
missing=0
if [ -f "$copies/transcripts.tsv" ] && [ -f "$copies/pauses.tsv" ]; then
    while IFS=$'\t' read -r name _; do
        [ -n "$name" ] || continue
        [ -f "$target/$name" ] || missing=$((missing + 1))
    done < "$copies/transcripts.tsv"
    cmp -s "$copies/transcripts.tsv" "$target/transcripts.tsv" || missing=$((missing + 1))
    cmp -s "$copies/pauses.tsv" "$target/pauses.tsv" || missing=$((missing + 1))
else
    missing=1
fi
if [ "$missing" -eq 0 ] && [ -z "${TURN_CLIPS_UPDATE:-}" ]; then
    log "all $(wc -l < "$copies/transcripts.tsv") clips already in $target; nothing to do"
    exit 0
fi
log "building $target"

# --- source sets ----------------------------------------------------------------
complete() {  # every clip its transcripts.tsv lists is there
    local dir=$1 name
    [ -f "$dir/transcripts.tsv" ] || return 1
    while IFS=$'\t' read -r name _; do
        [ -z "$name" ] || [ -f "$dir/$name" ] || return 1
    done < "$dir/transcripts.tsv"
}
bash "$here/fetch-study-clips.sh" "$study"  # does nothing when the set is complete
if ! complete "$hard"; then
    log "hard clips missing in $hard; running samples/fetch-hard-clips.sh"
    bash "$here/fetch-hard-clips.sh" "$hard"
fi
complete "$study" || die "the study clips in $study are incomplete"
complete "$hard" || die "the hard clips in $hard are incomplete"

# --- ffmpeg ---------------------------------------------------------------------
if ! command -v ffmpeg >/dev/null; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        log "installing ffmpeg (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null
    else
        die "ffmpeg is required (to decode G.722); install it, e.g. 'sudo apt-get install ffmpeg'"
    fi
fi

# --- work folders ---------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/turn-clips.XXXXXX")
trap 'rm -rf "$work"' EXIT
dl=${TURN_CLIPS_DOWNLOADS:-$work/dl}
mkdir -p "$dl" "$work/x"

# --- Debian packages (bookworm), pinned by version and sha256 ---------------------
# asterisk-core-sounds-en: the transcript list (core-sounds-en.txt.gz);
# asterisk-core-sounds-en-g722: the audio (as samples/fetch-study-clips.sh uses).
# SHA256 as in bookworm's Packages index.
debs=(
    "asterisk-core-sounds-en=1.6.1-1 973e797d28e37fa6ca3c0a9d6fa717e77cf1268ae916bf09fd3503113cdffa50"
    "asterisk-core-sounds-en-g722=1.6.1-1 38c5261820b406dcb0ecb37675720da2b0864850690690352ca52707eb623806"
)
deb_file() { echo "$dl/${1%%=*}_${1#*=}_all.deb"; }
fetch_debs() {
    local entry spec
    for entry in "${debs[@]}"; do
        spec=${entry%% *}
        [ -f "$(deb_file "$spec")" ] && continue
        log "apt-get download $spec"
        (cd "$dl" && apt-get download -q "$spec" >/dev/null 2>&1) || return 1
    done
}
if ! fetch_debs; then
    if [ "$(id -u)" -eq 0 ]; then
        log "apt-get download failed; running apt-get update and retrying"
        apt-get update -qq
        fetch_debs || die "apt-get download failed (needs Debian 12 bookworm package lists)"
    else
        die "apt-get download failed; run 'sudo apt-get update' first (needs Debian 12 bookworm lists)"
    fi
fi
for entry in "${debs[@]}"; do
    spec=${entry%% *} sum=${entry#* }
    f=$(deb_file "$spec")
    got=$(sha256sum "$f" | cut -d' ' -f1)
    [ "$got" = "$sum" ] || die "sha256 mismatch for $f: got $got, want $sum (delete it and rerun)"
    dpkg -x "$f" "$work/x"
done

# --- build ------------------------------------------------------------------------
python3 "$here/make-turn-clips.py" \
    --sounds "$work/x/usr/share/asterisk/sounds/en_US_f_Allison" \
    --list "$work/x/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz" \
    --study "$study" --hard "$hard" "$target"

# --- check against the committed lists ----------------------------------------------
mismatch=()
for f in transcripts.tsv pauses.tsv; do
    if [ -n "${TURN_CLIPS_UPDATE:-}" ]; then
        mkdir -p "$copies"
        cmp -s "$target/$f" "$copies/$f" || { cp "$target/$f" "$copies/$f"; log "wrote $copies/$f"; }
    elif [ -f "$copies/$f" ] && ! cmp -s "$target/$f" "$copies/$f"; then
        mismatch+=("$copies/$f")
    fi
done
[ ${#mismatch[@]} -eq 0 ] || die "the clips differ from the committed ${mismatch[*]} (rerun with TURN_CLIPS_UPDATE=1 if the rules changed)"
log "wav digest $(cd "$target" && cat $(cut -f1 transcripts.tsv) | sha256sum | cut -c1-16) (all clips, in list order)"
log "done: $target"
