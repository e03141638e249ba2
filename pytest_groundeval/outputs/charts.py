"""Inline SVG charts for the HTML report, drawn in Python with no library and no script.

Every function returns one ``<svg>`` element as a string. All text that reaches
the SVG (labels, tooltips) goes through ``html.escape``; numbers are formatted
here. Colours come from CSS classes (``bar-pass``, ``bar-fail``…) defined by the
page, and no ``style`` attribute is written, so the page's content security
policy can forbid inline styles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ..core.metrics import percentile


def _num(value: float) -> str:
    """An SVG coordinate: two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, cls: str = "lbl", anchor: str = "start") -> str:
    return f'<text x="{_num(x)}" y="{_num(y)}" class="{cls}" text-anchor="{anchor}">{escape(text)}</text>'


def _rect(x: float, y: float, w: float, h: float, cls: str, tip: str) -> str:
    return (
        f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0.0))}" height="{_num(max(h, 0.0))}" '
        f'class="{cls}"><title>{escape(tip)}</title></rect>'
    )


@dataclass(frozen=True)
class MetricBar:
    """One row of the metrics-against-bounds chart: a share, drawn on ``[low, 1]``.

    Figures with a unit or no upper limit (counts, milliseconds, tokens) are not drawn as
    bars: a bar needs an axis with two ends, and the page lists those as numbers instead.
    """

    name: str
    """Metric wire name."""
    value: float | None
    """The run's value, in ``[low, 1]``; None draws "n/a"."""
    bound: float | None
    """Floor or ceiling; None when the metric is reported, not gated."""
    op: str
    """``">="`` or ``"<="`` (ignored without a bound)."""
    outcome: str
    """PASS, FAIL, SKIP or INFO: picks the colour."""
    label: str
    """The value as printed (``core.metrics.format_value``)."""
    interval: tuple[float | None, float | None] = (None, None)
    """``(low, high)`` of the value's confidence interval (docs/statistics.md), drawn as a whisker
    across the bar; ``(None, None)`` for none."""
    level: float | None = None
    """The interval's confidence level, for its tooltip."""
    low: float = 0.0
    """The lowest value the metric can take (``MetricSpec.value_range``): 0 for a share, -1 for
    Cohen's kappa. Bars start at 0, so a negative kappa is drawn leftwards from it."""


def _interval_text(row: MetricBar) -> str:
    """``[0.9812, 0.9961]``, the row's interval as its label shows it (four places, as a rate)."""
    low, high = row.interval
    return "" if low is None or high is None else f" [{low:.4f}, {high:.4f}]"


class _Scale:
    """``[low, 1]`` onto the pixels ``[left, left + plot]``; values outside are clamped to the ends."""

    def __init__(self, low: float, left: float, plot: float) -> None:
        self.low, self.left, self.plot = low, left, plot

    def x(self, value: float) -> float:
        share = (min(max(value, self.low), 1.0) - self.low) / (1.0 - self.low)
        return self.left + self.plot * share


def _whisker(row: MetricBar, scale: _Scale, y: float) -> str:
    """The row's confidence interval as a line from its low to its high end with end caps, at mid-bar."""
    low, high = row.interval
    assert low is not None and high is not None
    x1, x2 = scale.x(low), scale.x(high)
    mid = y + 11
    level = f"{row.level * 100:g}% " if row.level is not None else ""
    tip = escape(f"{row.name}: {level}confidence interval{_interval_text(row)}")
    return (
        f'<g class="ci"><title>{tip}</title>'
        f'<line x1="{_num(x1)}" y1="{mid}" x2="{_num(x2)}" y2="{mid}" class="ci"/>'
        f'<line x1="{_num(x1)}" y1="{mid - 5}" x2="{_num(x1)}" y2="{mid + 5}" class="ci"/>'
        f'<line x1="{_num(x2)}" y1="{mid - 5}" x2="{_num(x2)}" y2="{mid + 5}" class="ci"/></g>'
    )


AXIS_TICKS = 5
"""Labelled ticks on a metric axis, both ends included: 0, 0.25 … 1 (or -1, -0.5 … 1)."""


def _axis(scale: _Scale, y: float) -> list[str]:
    body = [f'<line x1="{_num(scale.left)}" y1="{y}" x2="{_num(scale.left + scale.plot)}" y2="{y}" class="axis"/>']
    for i in range(AXIS_TICKS):
        value = scale.low + (1.0 - scale.low) * i / (AXIS_TICKS - 1)
        x = scale.x(value)
        body.append(f'<line x1="{_num(x)}" y1="{y}" x2="{_num(x)}" y2="{y + 4}" class="axis"/>')
        body.append(_text(x, y + 15, f"{value:g}", cls="tick", anchor="middle"))
    return body


def metric_bars(rows: Sequence[MetricBar], width: int = 900) -> str:
    """Horizontal bars, one per metric, with the floor or ceiling drawn as a tick and a value's
    confidence interval, when it has one, as a whisker across its bar (docs/statistics.md).

    Every row is a share drawn to scale on ``[row.low, 1]``: rows sharing a ``low`` are drawn
    together over one labelled axis (the metrics in ``[0, 1]``, then those in ``[-1, 1]``, whose
    bars start at a marked 0). A chart with intervals has a wider right margin, for the labels
    ``0.9906 [0.9812, 0.9961]  PASS``.
    """
    with_intervals = any(row.interval[0] is not None for row in rows)
    row_h, axis_h, left, right = 26, 26, 190, 270 if with_intervals else 170
    plot = width - left - right
    body: list[str] = []
    y = 8
    for low in dict.fromkeys(row.low for row in rows):
        scale = _Scale(low, left, plot)
        group = [row for row in rows if row.low == low]
        top = y
        for row in group:
            body.append(_text(left - 8, y + 15, row.name, anchor="end"))
            body.append(_rect(left, y + 3, plot, 16, "track", row.name))
            if row.value is not None:
                x0, x1 = sorted((scale.x(max(low, 0.0)), scale.x(row.value)))
                tip = f"{row.name}: {row.label}" + (f" (bound {row.op} {row.bound:g})" if row.bound is not None else "")
                body.append(_rect(x0, y + 3, x1 - x0, 16, f"bar-{row.outcome.lower()}", tip))
            if row.value is not None and row.interval[0] is not None and row.interval[1] is not None:
                body.append(_whisker(row, scale, y))
            if row.bound is not None:
                x = scale.x(row.bound)
                body.append(
                    f'<line x1="{_num(x)}" y1="{y}" x2="{_num(x)}" y2="{y + 22}" class="bound">'
                    f"<title>{escape(f'{row.name} bound {row.op} {row.bound:g}')}</title></line>"
                )
            label = f"{row.label}{_interval_text(row)}  {row.outcome}"
            body.append(_text(left + plot + 8, y + 15, label, cls=f"lbl o-{row.outcome.lower()}"))
            y += row_h
        if low < 0:
            zero = _num(scale.x(0.0))
            body.append(f'<line x1="{zero}" y1="{top}" x2="{zero}" y2="{y}" class="zero"/>')
        body.extend(_axis(scale, y + 2))
        y += axis_h
    return _svg(width, y + 4, body, "Each metric against its floor or ceiling")


def histogram(values: Sequence[float], *, unit: str = "ms", bins: int = 30, width: int = 900) -> str:
    """A histogram of ``values`` with the p50 and p95 marked; an empty chart says "no data".

    Bins are equal-width from the minimum to the 99th percentile; values above it
    fall into the last bin, labelled "≥", so one outlier does not flatten the rest.
    """
    height, left, bottom, top_pad = 200, 44, 34, 12
    plot_w, plot_h = width - left - 12, height - bottom - top_pad
    body: list[str] = []
    if not values:
        body.append(_text(12, 20, "no generate calls in this run", cls="tick"))
        return _svg(width, 32, body, f"Latency distribution ({unit}): no data")
    ordered = sorted(values)
    low, high = ordered[0], percentile(ordered, 99) or ordered[-1]
    if high <= low:
        high = low + 1.0
    step = (high - low) / bins
    counts = [0] * bins
    for value in ordered:
        counts[min(int((value - low) / step), bins - 1)] += 1
    peak = max(counts)
    bar_w = plot_w / bins
    for i, count in enumerate(counts):
        h = plot_h * count / peak
        a, b = low + i * step, low + (i + 1) * step
        rng = f"≥ {a:.1f}" if i == bins - 1 and ordered[-1] > b else f"{a:.1f}–{b:.1f}"
        body.append(
            _rect(left + i * bar_w + 1, top_pad + plot_h - h, bar_w - 2, h, "bar-hist", f"{rng} {unit}: {count}")
        )
    axis_y = top_pad + plot_h
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" class="axis"/>')
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot_w * frac
        body.append(_text(x, axis_y + 14, f"{low + (high - low) * frac:.0f}", cls="tick", anchor="middle"))
    body.append(_text(left + plot_w, axis_y + 28, unit, cls="tick", anchor="end"))
    body.append(_text(left - 6, top_pad + 8, str(peak), cls="tick", anchor="end"))
    body.append(_text(left - 6, axis_y, "0", cls="tick", anchor="end"))
    for q, cls in ((50, "p50"), (95, "p95")):
        mark = percentile(ordered, q)
        assert mark is not None
        x = left + plot_w * min(max((mark - low) / (high - low), 0.0), 1.0)
        body.append(
            f'<line x1="{_num(x)}" y1="{top_pad}" x2="{_num(x)}" y2="{axis_y}" class="mark {cls}">'
            f"<title>p{q} {mark:.1f} {unit}</title></line>"
        )
        body.append(_text(x + 3, top_pad + 10 + (12 if q == 95 else 0), f"p{q} {mark:.1f}", cls=f"tick {cls}"))
    label = f"Latency distribution: {len(values)} calls, p50 {percentile(ordered, 50):.1f} {unit}"
    return _svg(width, height, body, label)


def count_bars(counts: Sequence[tuple[str, int, str]], *, title: str, width: int = 900) -> str:
    """Horizontal bars of labelled counts: ``(label, count, css class)``, longest first as given."""
    row_h, left, right = 24, 190, 70
    plot = width - left - right
    peak = max((count for _, count, _ in counts), default=0) or 1
    total = sum(count for _, count, _ in counts) or 1
    body: list[str] = []
    for i, (label, count, cls) in enumerate(counts):
        y = 6 + i * row_h
        body.append(_text(left - 8, y + 14, label, anchor="end"))
        body.append(_rect(left, y + 2, plot * count / peak, 16, cls, f"{label}: {count} ({100 * count / total:.1f}%)"))
        body.append(_text(left + plot * count / peak + 6, y + 14, str(count)))
    return _svg(width, 12 + len(counts) * row_h, body, title)


def stacked_bars(rows: Sequence[tuple[str, Sequence[tuple[str, int, str]]]], *, title: str, width: int = 900) -> str:
    """One horizontal bar per row split into segments ``(label, count, css class)``, to a common scale."""
    row_h, left, right = 26, 120, 150
    plot = width - left - right
    peak = max((sum(c for _, c, _ in segs) for _, segs in rows), default=0) or 1
    body: list[str] = []
    for i, (name, segments) in enumerate(rows):
        y = 6 + i * row_h
        body.append(_text(left - 8, y + 15, name, anchor="end"))
        x = float(left)
        for label, count, cls in segments:
            w = plot * count / peak
            if count:
                body.append(_rect(x, y + 3, w, 16, cls, f"{name} {label}: {count}"))
            x += w
        summary = " / ".join(f"{count} {label}" for label, count, _ in segments if count) or "none"
        body.append(_text(left + plot + 8, y + 15, summary, cls="tick"))
    return _svg(width, 12 + len(rows) * row_h, body, title)


def trend(
    points: Sequence[float | None], *, name: str, labels: Sequence[str], bound: float | None, width: int = 300
) -> str:
    """A small line chart of one metric over runs (oldest first); None values leave a gap."""
    height, left, right, top_pad, bottom = 110, 8, 8, 22, 18
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    known = [v for v in points if v is not None]
    body = [_text(left, 14, name, cls="lbl")]
    if not known:
        body.append(_text(width / 2, height / 2 + 8, "n/a in every run", cls="tick", anchor="middle"))
        return _svg(width, height, body, f"{name} trend: no values")
    lo = min([*known, *([bound] if bound is not None else [])])
    hi = max([*known, *([bound] if bound is not None else [])])
    if math.isclose(lo, hi):
        lo, hi = lo - 0.5 * (abs(lo) or 1), hi + 0.5 * (abs(hi) or 1)
    pad = (hi - lo) * 0.1
    lo, hi = lo - pad, hi + pad

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + (plot_w * i / (len(points) - 1) if len(points) > 1 else plot_w / 2)
        return x, top_pad + plot_h * (1 - (v - lo) / (hi - lo))

    if bound is not None:
        _, by = xy(0, bound)
        body.append(
            f'<line x1="{left}" y1="{_num(by)}" x2="{left + plot_w}" y2="{_num(by)}" class="bound">'
            f"<title>{escape(f'bound {bound:g}')}</title></line>"
        )
    runs: list[list[str]] = [[]]
    for i, v in enumerate(points):
        if v is None:
            runs.append([])
            continue
        x, y = xy(i, v)
        runs[-1].append(f"{_num(x)},{_num(y)}")
        body.append(
            f'<circle cx="{_num(x)}" cy="{_num(y)}" r="3" class="pt"><title>{escape(f"{labels[i]}: {v:.4g}")}</title></circle>'
        )
    body[1:1] = [f'<polyline points="{" ".join(run)}" class="line"/>' for run in runs if len(run) > 1]
    last = next((v for v in reversed(points) if v is not None), None)
    if last is not None:
        body.append(_text(width - right, 14, f"{last:.4g}", cls="tick", anchor="end"))
    body.append(_text(left, height - 4, labels[0], cls="tick"))
    body.append(_text(width - right, height - 4, labels[-1], cls="tick", anchor="end"))
    return _svg(width, height, body, f"{name} over the last {len(points)} runs")
