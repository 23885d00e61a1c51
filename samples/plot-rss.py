"""Resident memory per soak round as an SVG line chart, with no dependencies.

    python3 samples/plot-rss.py rounds.tsv rss.svg
"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
points = [(float(r["minute"]), float(r["rss_mb"])) for r in rows]
W, H, M = 640, 360, 50
x_max = max(p[0] for p in points) or 1
y_max = max(p[1] for p in points) * 1.1
sx = lambda x: M + x / x_max * (W - 2 * M)
sy = lambda y: H - M - y / y_max * (H - 2 * M)
line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
ticks_y = [round(y_max * i / 5) for i in range(6)]
ticks_x = [round(x_max * i / 6) for i in range(7)]
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W/2}" y="20" text-anchor="middle" font-size="14">hark resident memory during the soak</text>',
       f'<line x1="{M}" y1="{H-M}" x2="{W-M}" y2="{H-M}" stroke="black"/>',
       f'<line x1="{M}" y1="{M}" x2="{M}" y2="{H-M}" stroke="black"/>']
for t in ticks_y:
    svg.append(f'<text x="{M-6}" y="{sy(t)+4:.1f}" text-anchor="end">{t}</text>')
    svg.append(f'<line x1="{M}" y1="{sy(t):.1f}" x2="{W-M}" y2="{sy(t):.1f}" stroke="#ddd"/>')
for t in ticks_x:
    svg.append(f'<text x="{sx(t):.1f}" y="{H-M+16}" text-anchor="middle">{t}</text>')
svg.append(f'<text x="{W/2}" y="{H-10}" text-anchor="middle">minutes</text>')
svg.append(f'<text x="14" y="{H/2}" transform="rotate(-90 14 {H/2})" text-anchor="middle">RSS (MB)</text>')
svg.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
for x, y in points:
    svg.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="#1f77b4"/>')
svg.append("</svg>")
open(sys.argv[2], "w").write("\n".join(svg))
