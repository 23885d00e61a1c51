#!/usr/bin/env python3
"""Bucket quantiles of hark's Prometheus histograms: the bucket bound at or below which
50 / 95 / 99 % of the observations lie.  usage: metrics-quantiles.py [URL]"""
import re
import sys
import urllib.request

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080/metrics"
text = urllib.request.urlopen(url).read().decode()
hist = {}
for line in text.splitlines():
    m = re.match(r"(\w+)_bucket\{(.*)\} (\S+)", line)
    if not m:
        continue
    name, labels, count = m.groups()
    le = re.search(r'le="([^"]+)"', labels).group(1)
    key = name + "{" + re.sub(r',?le="[^"]+"', "", labels) + "}"
    bound = float("inf") if le == "+Inf" else float(le)
    hist.setdefault(key, []).append((bound, float(count)))
for key, buckets in sorted(hist.items()):
    total = buckets[-1][1]
    if total == 0:
        continue
    q = lambda p: next(b for b, c in buckets if c >= p * total)
    print(f"{key:60s} n={int(total):7d} p50<={q(.5)} p95<={q(.95)} p99<={q(.99)}")
