#!/usr/bin/env bash
# Build the multilingual clip set (samples/language-clips/README.md): Asterisk's telephone
# prompts in Spanish, French, Italian and Russian, read by professional voice talents.
#
#   samples/fetch-language-clips.sh [TARGET]      (default: ~/.cache/hark/language-clips)
#
# Writes TARGET/<lang>/<lang>_<prompt>.wav (16 kHz mono s16) and TARGET/<lang>/transcripts.tsv
# (FILE<TAB>REFERENCE) for es, fr, it and ru. Downloads the pinned Debian 12 (bookworm)
# packages with `apt-get download`, checks each .deb against the sha256 pinned below, unpacks
# them without root (dpkg -x), selects up to 60 prompts per language from the package's own
# transcript list by the rules in the README (python3 below), and decodes the G.722 audio with
# ffmpeg. The selection is checked against the committed samples/language-clips/<lang>.tsv
# (set LANGUAGE_CLIPS_UPDATE=1 to rewrite those copies after changing the rules).
# Does nothing if TARGET already holds every clip listed there.
#
# Needs: bash, python3 (stdlib only), ffmpeg (G.722 decoding), apt-get + dpkg (Debian 12
# package lists), sha256sum, network access to deb.debian.org.
# Set LANGUAGE_CLIPS_DOWNLOADS=DIR to keep (and reuse) the downloaded .debs in DIR.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
copies="$here/language-clips"
target=${1:-$HOME/.cache/hark/language-clips}
langs=(es fr it ru)

die() { echo "fetch-language-clips: $*" >&2; exit 1; }
log() { echo "fetch-language-clips: $*" >&2; }

command -v python3 >/dev/null || die "python3 is required"

# --- already there? -------------------------------------------------------------
# The clip list of a language: the committed copy, else the one in TARGET.
missing=0
for l in "${langs[@]}"; do
    list="$copies/$l.tsv"
    [ -f "$list" ] || list="$target/$l/transcripts.tsv"
    if [ ! -f "$list" ]; then missing=$((missing + 1)); continue; fi
    while IFS=$'\t' read -r name _; do
        [ -n "$name" ] || continue
        [ -f "$target/$l/$name" ] || missing=$((missing + 1))
    done < "$list"
    [ -f "$target/$l/transcripts.tsv" ] || missing=$((missing + 1))
done
if [ "$missing" -eq 0 ]; then
    for l in "${langs[@]}"; do
        if [ -f "$copies/$l.tsv" ]; then
            cmp -s "$copies/$l.tsv" "$target/$l/transcripts.tsv" || cp "$copies/$l.tsv" "$target/$l/transcripts.tsv"
        fi
    done
    log "all clips already in $target; nothing to do"
    exit 0
fi
log "$missing clip(s) or list(s) missing in $target; rebuilding"

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
work=$(mktemp -d "${TMPDIR:-/tmp}/language-clips.XXXXXX")
trap 'rm -rf "$work"' EXIT
dl=${LANGUAGE_CLIPS_DOWNLOADS:-$work/dl}
mkdir -p "$dl" "$work/x"

# --- Debian packages (bookworm), pinned by version and sha256 ---------------------
# asterisk-core-sounds-<l>: the transcript list (core-sounds-<l>.txt.gz);
# asterisk-core-sounds-<l>-g722: the audio. SHA256 as in bookworm's Packages index.
debs=(
    "asterisk-core-sounds-es=1.6.1-1 9afdab7f559f036649fb406e625899306ca1004df8ebe39c30bfbd5912d66f74"
    "asterisk-core-sounds-es-g722=1.6.1-1 e4e3b4281057d3b81b779298fd6be705f57411513955c518eed1bcaabbd615b8"
    "asterisk-core-sounds-fr=1.6.1-1 04c82c78c570c43a7136cbc5e2488d0c470b775468dff9fbce4a131b18cf1056"
    "asterisk-core-sounds-fr-g722=1.6.1-1 7add61d5e42279ecff1bbdf842a5a946ac3644fac9a0fe44384731aa7270c8e0"
    "asterisk-core-sounds-it=1.6.1-1 3884d9457e12f21caa018c18f0d587df5d53ebea14b673d8453a134c5941ab3b"
    "asterisk-core-sounds-it-g722=1.6.1-1 46b4cf7afc508a5fcfc051b7ea233251c0d195dd4ef83cc4b7facb4c6429b016"
    "asterisk-core-sounds-ru=1.6.1-1 28a61616bb0cd3345a7ea532dec4df9f071e5d0fa9f8c1a563ea9669002f39ab"
    "asterisk-core-sounds-ru-g722=1.6.1-1 673b4238a6b8269960f055d868c6a11083f7a0d00979167cb01554046b48ed9b"
)
deb_file() { echo "$dl/${1%%=*}_${1#*=}_all.deb"; }
fetch_debs() {
    local entry spec
    for entry in "${debs[@]}"; do
        spec=${entry%% *}
        [ -f "$(deb_file "$spec")" ] && continue
        log "apt-get download $spec"
        (cd "$dl" && apt-get download -q "$spec" >/dev/null) || return 1
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

# --- select and convert ------------------------------------------------------------
mkdir -p "$target"
X="$work/x" OUT="$target" COPIES="$copies" UPDATE="${LANGUAGE_CLIPS_UPDATE:-}" python3 - "${langs[@]}" <<'PY'
import gzip, os, re, statistics, subprocess, sys, wave

X, OUT, COPIES, UPDATE = (os.environ[k] for k in ("X", "OUT", "COPIES", "UPDATE"))
VOICE = {"es": "es_MX_f_Allison", "fr": "fr_CA_f_June", "it": "it_IT_m_Carlo", "ru": "ru_RU_f_IvrvoiceRU"}
KEEP = 60            # clips per language
LOW, HIGH = 0.6, 1.6  # allowed letters-per-second, as a multiple of the language's median
G722_BYTES_PER_S = 8000  # 64 kbit/s; the decoded length is exactly bytes / 8000 s


def log(msg):
    print(f"fetch-language-clips: {msg}", file=sys.stderr)


def prompts(lang):
    """(name, reference) for every name listed exactly once in core-sounds-<lang>.txt.gz."""
    path = f"{X}/usr/share/doc/asterisk-core-sounds-{lang}/core-sounds-{lang}.txt.gz"
    lines = gzip.open(path, "rt", encoding="utf-8-sig").read().splitlines()
    seen, out = {}, []
    for line in lines:
        s = line.strip()
        if not s or s.startswith(";") or ":" not in s:
            continue
        name, _, text = s.partition(":")
        name = name.strip()
        seen[name] = seen.get(name, 0) + 1
        out.append((name, " ".join(text.split())))
    return [(n, t) for n, t in out if seen[n] == 1]


def speech_rule(text):
    """Why a reference cannot be scored as written, or None."""
    if not text or any(c in text for c in "[]"):
        return "not speech ([...])"
    if any(c in text for c in "()"):
        return "annotation ((...))"
    if any(m.group(1).islower() for m in re.finditer(r"\?\s*(\w)", text)):
        return "'?' for a lost letter"  # the Italian list's "sar? esattamente", "? piena"
    if sum(any(c.isalpha() for c in w) for w in text.split()) < 4:
        return "under 4 words"
    if any(c.isdigit() for c in text):
        return "digits"
    if re.search(r"\w\.\w", text):
        return "dotted abbreviation"
    return None


def select(lang):
    voice = f"{X}/usr/share/asterisk/sounds/{VOICE[lang]}"
    cands, dropped = [], {}
    for name, text in prompts(lang):
        src = f"{voice}/{name}.g722"
        why = speech_rule(text) if os.path.isfile(src) else "no audio"
        if why:
            dropped[why] = dropped.get(why, 0) + 1
            continue
        secs = os.path.getsize(src) / G722_BYTES_PER_S
        rate = sum(c.isalpha() for c in text) / secs
        cands.append((f"{lang}_{name.replace('/', '_')}.wav", text, src, rate))
    median = statistics.median(c[3] for c in cands)
    kept = [c for c in cands if LOW * median <= c[3] <= HIGH * median]
    dropped["letters/s off median"] = len(cands) - len(kept)
    files = [c[0] for c in kept]
    if len(set(files)) != len(files):
        sys.exit(f"fetch-language-clips: {lang}: two prompts map to one file name")
    kept.sort(key=lambda c: c[0])
    log(f"{lang}: {len(cands)} candidates, median {median:.2f} letters/s, {len(kept)} in range, "
        f"keeping {min(len(kept), KEEP)}; dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    return kept[:KEEP]


def convert(src, dst):
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "g722", "-i", src,
           "-ar", "16000", "-ac", "1", "-sample_fmt", "s16", "-f", "s16le", "-"]
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0 or not r.stdout:
        sys.exit(f"fetch-language-clips: ffmpeg failed on {src}: {r.stderr.decode(errors='replace')[:200]}")
    pcm = r.stdout[: len(r.stdout) // 2 * 2]
    tmp = dst + ".part"
    with wave.open(tmp, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(pcm)
    os.replace(tmp, dst)
    return len(pcm) / 32000


mismatch, summary = [], []
for lang in sys.argv[1:]:
    sel = select(lang)
    d = os.path.join(OUT, lang)
    os.makedirs(d, exist_ok=True)
    wanted = {f for f, *_ in sel}
    for old in sorted(os.listdir(d)):  # clips of an earlier selection
        if old.startswith(f"{lang}_") and old.endswith(".wav") and old not in wanted:
            log(f"{lang}: removing {old} (no longer selected)")
            os.remove(os.path.join(d, old))
    secs = sum(convert(src, os.path.join(d, f)) for f, _, src, _ in sel)
    tsv = "".join(f"{f}\t{t}\n" for f, t, _, _ in sel)
    with open(os.path.join(d, "transcripts.tsv"), "w", encoding="utf-8") as fh:
        fh.write(tsv)
    words = sum(any(c.isalpha() for c in w) for _, t, _, _ in sel for w in t.split())
    summary.append(f"{lang} {len(sel)} clips {secs:.1f} s {words} words")
    copy = os.path.join(COPIES, f"{lang}.tsv")
    old = open(copy, encoding="utf-8").read() if os.path.exists(copy) else None
    if UPDATE:
        if old != tsv:
            os.makedirs(COPIES, exist_ok=True)
            with open(copy, "w", encoding="utf-8") as fh:
                fh.write(tsv)
            log(f"{lang}: wrote {copy}")
    elif old is not None and old != tsv:
        mismatch.append(copy)
log("built: " + "; ".join(summary))
if mismatch:
    sys.exit("fetch-language-clips: the selection differs from the committed "
             + ", ".join(mismatch) + " (rerun with LANGUAGE_CLIPS_UPDATE=1 if the rules changed)")
PY
log "done: $target"
