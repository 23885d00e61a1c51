#!/usr/bin/env python3
"""Word errors per source in a `hark-bench --report` JSON file.

    samples/wer-by-source.py REPORT.json [--missing] [--exclude SOURCE]...

A recording's source is its file name's prefix before the first `_` (the convention of
samples/study-clips and samples/hard-clips). Customer utterances only. With --missing, also
lists the utterances that got no final at all. --exclude leaves a source out of the total
(hard-clips' `hw_` references are the clip's tag, not always all that is said: see
samples/hard-clips/README.md).

It sums the per-utterance `words` and `word_errors` as the run scored them: a report from an
older hark-bench counts "4" against "four" as an error (numbers are now spelled out on both
sides). Score such a report again first, without re-running:
`hark-bench --rescore REPORT.json --report RESCORED.json`.
"""
import json
import sys
from collections import defaultdict


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    report = json.load(open(sys.argv[1]))
    args = sys.argv[2:]
    excluded = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "--exclude"}
    words, errors, utts, missing = defaultdict(int), defaultdict(int), defaultdict(int), []
    for target in report["targets"]:
        for call in target["per_call"]:
            for u in call["utterances"]:
                if u["channel"] != "customer":
                    continue
                source = u["recording"].split("/")[-1].split("_")[0]
                if source in excluded:
                    continue
                words[source] += u["words"]
                errors[source] += u["word_errors"]
                utts[source] += 1
                if not u["finals"]:
                    missing.append((u["recording"], u["reference"]))
    total_w, total_e = sum(words.values()), sum(errors.values())
    for source in sorted(words):
        w, e = words[source], errors[source]
        print(f"  {source:<14} {e:5} errors / {w:5} words  {100 * e / max(w, 1):5.1f} %  ({utts[source]} clips)")
    print(f"WER {100 * total_e / max(total_w, 1):.1f} %  ({total_e}/{total_w}), {len(missing)} utterances without a final")
    if "--missing" in sys.argv:
        for name, ref in missing:
            print(f"    no final: {name}: {ref}")


if __name__ == "__main__":
    main()
