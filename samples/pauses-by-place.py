#!/usr/bin/env python3
"""The pauses of a set with pauses inside turns, by where they sit in the reference, and how
many of each the server's path took for a turn's end.

    ENGINE=whisper LINES=1 CLIPS=DIR target/release/examples/segment_study > OUT
    samples/pauses-by-place.py OUT DIR

OUT is segment_study's output without QUIET (every turn's finals with their times, and with
LINES=1 every decode with its time and words); DIR holds the clips' `transcripts.tsv` and
`pauses.tsv` (samples/make-paused-clips.py). A pause's place is the reference word its words
end on: the words before it are the finals sent before the pause and the decode that judged
it (the judge, else the nearest decode there), aligned to the reference. Places:

- sentence: the reference word ends in . ? ! (two sentences of one prompt);
- clause: it ends in , ; : (the words before could stand alone, and often do);
- inside: anywhere else in a sentence;
- unplaced: no decode near the pause, or its words do not align.

A pause is premature as hark-bench counts it (`report::premature_ends`): a final sent before
the pause ends whose platform wait (0.1 s after . ? !, 0.45 s after a digit, 1.5 s else) is up
before the speaker resumes. Python standard library only.
"""
import ast
import collections
import difflib
import re
import sys

PLACES = ("sentence", "clause", "inside", "unplaced")


def norm(word):
    return re.sub(r"[^a-z0-9']", "", word.lower())


def platform_wait(text):
    last = text.rstrip()[-1:]
    if last and last in ".?!":
        return 0.1
    return 0.45 if last.isdigit() else 1.5


def place(reference, words_before):
    """Where in `reference` (its words, punctuated) `words_before` end."""
    ref = [norm(w) for w in reference]
    hyp = [w for w in (norm(w) for w in words_before.split()) if w]
    blocks = [b for b in difflib.SequenceMatcher(None, hyp, ref, autojunk=False)
              .get_matching_blocks() if b.size]
    if not blocks:
        return "unplaced"
    last = blocks[-1].b + blocks[-1].size - 1
    if last == len(ref) - 1:
        return "unplaced"  # the words of the whole turn: not a pause inside it
    word = reference[last]
    if word[-1] in ".?!":
        return "sentence"
    return "clause" if word[-1] in ",;:" else "inside"


def main(out_path, clips):
    refs = dict(l.rstrip("\n").split("\t", 1) for l in open(f"{clips}/transcripts.tsv"))
    pauses = {}
    for line in open(f"{clips}/pauses.tsv"):
        name, spans = line.rstrip("\n").split("\t")
        pauses[name] = [tuple(int(x) / 1000 for x in s.split("-")) for s in spans.split(",") if s]
    count, cut = collections.Counter(), collections.Counter()
    decodes = []
    for line in open(out_path):
        d = re.match(r'    (\w+) at\s+([\d.]+)s "" -> "(.*)" \(sentence end', line)
        if d:
            decodes.append((d.group(1), float(d.group(2)), d.group(3)))
            continue
        m = re.match(r"  turn (\S+): \d+ premature of \d+ pauses: (.*)$", line)
        if not m:
            continue
        name, finals = m.group(1), ast.literal_eval(m.group(2))
        spans = pauses.get(name, [])
        premature = set()
        for t, text in finals[:-1]:
            k = next((k for k, (_, end) in enumerate(spans) if t < end), None)
            if k is not None and t + platform_wait(text) < spans[k][1]:
                premature.add(k)
        for k, (start, _) in enumerate(spans):
            near = [d for d in decodes if start - 0.1 <= d[1] <= start + 0.4 and d[0] != "Final"]
            judged = [d for d in near if d[0] == "Judge"] or near
            where = "unplaced"
            if judged:
                sent = " ".join(text for t, text in finals if t < start)
                where = place(refs[name].split(), f"{sent} {judged[0][2]}")
            count[where] += 1
            cut[where] += k in premature
        decodes = []
    print("| pause's place in the reference | pauses | premature ends |")
    print("|---|---|---|")
    for p in PLACES:
        share = f"{100 * cut[p] / count[p]:.0f} %" if count[p] else "-"
        print(f"| {p} | {count[p]} | {cut[p]} ({share}) |")
    total, total_cut = sum(count.values()), sum(cut.values())
    print(f"| all | {total} | {total_cut} ({100 * total_cut / max(total, 1):.1f} %) |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
