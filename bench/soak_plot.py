#!/usr/bin/env python3
"""Draws the soak's server RSS over time (and the charge points connected) as an SVG, with no
dependency beyond the standard library (bench/report.py needs matplotlib, which these machines
do not have).

    python3 bench/soak_plot.py RSS_CSV OUT_SVG [TITLE [MINUTES:LABEL ...]]

Each MINUTES:LABEL draws a vertical mark with its label (an event during the run).

RSS_CSV is what scripts/soak.sh writes: `unix_s,elapsed_s,rss_kib,charge_points_connected,...`
with a header line.
"""

import csv
import sys


def nice_max(x):
    """A round number at or above x for the top of an axis."""
    if x <= 0:
        return 1
    step = 10 ** (len(str(int(x))) - 1)
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * step >= x:
            return m * step
    return 10 * step


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    rows = []
    with open(sys.argv[1]) as f:
        for row in csv.DictReader(f):
            try:
                rows.append(
                    (
                        float(row["elapsed_s"]) / 60,
                        float(row["rss_kib"]) / 1024,
                        float(row.get("charge_points_connected") or 0),
                    )
                )
            except (KeyError, ValueError):
                continue
    if not rows:
        print("no samples", file=sys.stderr)
        return 1
    title = sys.argv[3] if len(sys.argv) > 3 else "mio-server RSS during the soak"
    w, h, left, right, top, bottom = 800, 420, 70, 70, 40, 50
    pw, ph = w - left - right, h - top - bottom
    xmax = nice_max(max(r[0] for r in rows))
    ymax = nice_max(max(r[1] for r in rows) * 1.1)
    cmax = nice_max(max(r[2] for r in rows) * 1.1)

    def x(v):
        return left + pw * v / xmax

    def y(v, top_value):
        return top + ph - ph * v / top_value

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
    ]
    for i in range(6):
        gy = top + ph * i / 5
        out.append(f'<line x1="{left}" y1="{gy}" x2="{left + pw}" y2="{gy}" stroke="#ddd"/>')
        out.append(
            f'<text x="{left - 6}" y="{gy + 4}" text-anchor="end" fill="#1f77b4">'
            f"{ymax * (5 - i) / 5:g}</text>"
        )
        out.append(
            f'<text x="{left + pw + 6}" y="{gy + 4}" fill="#ff7f0e">{cmax * (5 - i) / 5:g}</text>'
        )
    for i in range(6):
        gx = left + pw * i / 5
        out.append(f'<line x1="{gx}" y1="{top}" x2="{gx}" y2="{top + ph}" stroke="#eee"/>')
        out.append(f'<text x="{gx}" y="{top + ph + 18}" text-anchor="middle">{xmax * i / 5:g}</text>')
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>'
    )
    out.append(
        f'<text x="{left + pw / 2}" y="{h - 10}" text-anchor="middle">minutes since the server started</text>'
    )
    out.append(
        f'<text x="16" y="{top + ph / 2}" text-anchor="middle" fill="#1f77b4" '
        f'transform="rotate(-90 16 {top + ph / 2})">RSS (MiB)</text>'
    )
    out.append(
        f'<text x="{w - 14}" y="{top + ph / 2}" text-anchor="middle" fill="#ff7f0e" '
        f'transform="rotate(90 {w - 14} {top + ph / 2})">charge points connected</text>'
    )
    for mark in sys.argv[4:]:
        at, _, label = mark.partition(":")
        try:
            mx = x(float(at))
        except ValueError:
            continue
        out.append(
            f'<line x1="{mx:.1f}" y1="{top}" x2="{mx:.1f}" y2="{top + ph}" stroke="#c00" '
            f'stroke-dasharray="4 3"/>'
        )
        out.append(f'<text x="{mx + 4:.1f}" y="{top + 14}" fill="#c00">{label}</text>')
    conn = " ".join(f"{x(m):.1f},{y(c, cmax):.1f}" for m, _, c in rows)
    rss = " ".join(f"{x(m):.1f},{y(r, ymax):.1f}" for m, r, _ in rows)
    out.append(f'<polyline points="{conn}" fill="none" stroke="#ff7f0e" stroke-width="1.2"/>')
    out.append(f'<polyline points="{rss}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
