"""Server-rendered SVG line charts for the operator console (no JavaScript library).

Small on purpose: a few series over time, a y axis from zero, gaps where a bucket
has no data. Every label is escaped; the result is marked safe only after that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

PALETTE = ["#2b5fd9", "#e5484d", "#2f9e44", "#f08c00", "#7048e8", "#0c8599"]
# Fixed colours for the names operators read most, so they mean the same in every chart.
NAMED = {"stable": "#2b5fd9", "candidate": "#e5484d", "all-L3 baseline": "#868e96"}

Series = dict[str, list[tuple[datetime, float | None]]]
DAY_S = 24 * 3600


def _nice_max(value: float) -> float:
    """The smallest 1/2/2.5/5 x 10^k at or above ``value``: round axis labels."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 2.5, 5, 10):
        if value <= factor * magnitude:
            return factor * magnitude
    return value


def line_chart(
    series: Series,
    *,
    title: str,
    fmt: Callable[[float], str],
    chart_id: str,
    width: int = 520,
    height: int = 200,
    y_max: float | None = None,
    labels: Mapping[str, str] | None = None,
) -> SafeString:
    """An SVG line chart of ``series``; ``labels`` maps a series name to the legend
    text (the name itself when absent), so colours follow the name in any language."""
    left, right, top, bottom = 56, 12, 28, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for points in series.values() for _, v in points if v is not None]
    times = [t for points in series.values() for t, _ in points]
    top_value = y_max if y_max is not None else _nice_max(max(values) * 1.1 if values else 0.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="chart-title">{escape(title)}</text>',
    ]
    for i in range(5):
        gy = top + plot_h - plot_h * i / 4
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{gy + 4:.1f}" class="tick" text-anchor="end">'
            f"{escape(fmt(top_value * i / 4))}</text>"
        )
    if not values or not times:
        # Outside the f-string: xgettext does not look inside one (makemessages).
        empty = escape(_("no data in this range"))
        parts.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h / 2}" class="empty" '
            f'text-anchor="middle">{empty}</text></svg>'
        )
        return mark_safe("".join(parts))  # every piece above is escaped
    t0, t1 = min(times), max(times)
    span = max((t1 - t0).total_seconds(), 1.0)

    def x(t: datetime) -> float:
        return left + plot_w * (t - t0).total_seconds() / span

    def y(v: float) -> float:
        return top + plot_h - plot_h * min(v, top_value) / top_value

    # Over more than a day HH:MM alone repeats: the labels carry the date too.
    label_fmt = "%H:%M" if span <= DAY_S else "%b %d %H:%M"
    # The end labels hug the plot's edges so they are never clipped.
    for label_t, anchor in ((t0, "start"), (t0 + (t1 - t0) / 2, "middle"), (t1, "end")):
        parts.append(
            f'<text x="{x(label_t):.1f}" y="{top + plot_h + 16}" class="tick" '
            f'text-anchor="{anchor}">{label_t.strftime(label_fmt)}</text>'
        )
    legend_x = left
    for n, (name, points) in enumerate(series.items()):
        colour = NAMED.get(name, PALETTE[n % len(PALETTE)])
        runs: list[list[str]] = [[]]
        for t, v in points:
            if v is None:
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append(f"{x(t):.1f},{y(v):.1f}")
        parts += _marks(runs, colour=colour, name=name)
        label = (labels or {}).get(name, name)
        parts.append(
            f'<rect x="{legend_x}" y="{height - 14}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="{height - 5}" class="legend">{escape(label)}</text>'
        )
        # A CJK character is about twice as wide as a latin one.
        legend_x += 22 + sum(14 if ord(ch) > 0x2E7F else 7 for ch in label)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every piece above is escaped


def _marks(runs: list[list[str]], *, colour: str, name: str) -> list[str]:
    """A series' unbroken runs of points: a line each, a dot for a lone point."""
    marks = []
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            marks.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}"/>')
        elif run:
            marks.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                f'data-series="{escape(name)}" points="{" ".join(run)}"/>'
            )
    return marks


def fmt_ms(value: float) -> str:
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def fmt_pct(value: float) -> str:
    return f"{value * 100:.1f}%" if value < 0.1 else f"{value * 100:.0f}%"


def fmt_usd(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def fmt_minutes(value: float) -> str:
    # Three significant digits: with one decimal a 3-second first reply (0.05 min) put
    # "0.0, 0.0, 0.1, 0.1, 0.1" on the axis (seen in the console, 2026-12-02).
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
