"""Plots written as inline SVG, with no plotting library: a plot area mapping data to pixels,
ticks at round numbers, grid lines, lines, bands, bars, markers and legends, each a string of
SVG. The report's figures are assembled from these (``report/page.py``, ``chunking/report.py``).

Every mark that stands for numbers carries a ``<title>`` with them (the browser shows it on
hover). Sizes are in the figure's own pixels; the page scales the figure to its column.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DASHES",
    "Frame",
    "axes",
    "box_stats",
    "circle",
    "figure",
    "legend",
    "legend_row",
    "legend_width",
    "padded",
    "polygon",
    "polyline",
    "rect",
    "svg",
    "text",
    "text_width",
    "ticks",
]

#: Line styles as SVG dash arrays: solid, dashed, dash-dot, dotted (matplotlib's "-", "--",
#: "-.", ":").
DASHES = ("", "6 3", "6 3 1.5 3", "1.5 3")
_FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"
_INK = "#1d2330"
_GRID = "#e3e6ec"


def _n(value: float) -> str:
    """A coordinate with one decimal, no trailing ``.0``."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _title(tip: str) -> str:
    return f"<title>{_esc(tip)}</title>" if tip else ""


def text_width(label: str, size: float = 11) -> float:
    """About how wide ``label`` is drawn at font ``size`` (for margins and spacing)."""
    return 0.6 * size * len(label)


@dataclass(frozen=True)
class Frame:
    """A plot area at ``(left, top)`` of ``width`` x ``height`` pixels showing ``x_range`` by
    ``y_range`` of the data (y grows upwards)."""

    left: float
    top: float
    width: float
    height: float
    x_range: tuple[float, float]
    y_range: tuple[float, float]

    def x(self, value: float) -> float:
        low, high = self.x_range
        return self.left + (value - low) / ((high - low) or 1.0) * self.width

    def y(self, value: float) -> float:
        low, high = self.y_range
        return self.top + self.height - (value - low) / ((high - low) or 1.0) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height

    @property
    def right(self) -> float:
        return self.left + self.width


def padded(low: float, high: float, margin: float = 0.05) -> tuple[float, float]:
    """A data range with ``margin`` of its span added on each side (one unit if it is a
    point), as matplotlib's autoscaling leaves."""
    span = high - low
    if span <= 0:
        return low - 0.5, high + 0.5
    return low - margin * span, high + margin * span


def ticks(low: float, high: float, count: int = 6) -> list[tuple[float, str]]:
    """Ticks at round numbers (1, 2, 2.5 or 5 times a power of ten) inside ``[low, high]``,
    about ``count`` of them, each with its label."""
    span = high - low
    if span <= 0 or not math.isfinite(span):
        return [(low, f"{low:g}")]
    raw = span / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if step / power == 2.5 else 0)
    first = math.ceil(low / step - 1e-9)
    out = []
    for i in range(first, math.floor(high / step + 1e-9) + 1):
        label = f"{i * step:.{digits}f}"
        value = float(label)  # the round number, not i * step's rounding error
        out.append((value, "0" if value == 0 else label))
    return out


def text(
    x: float,
    y: float,
    label: str,
    *,
    size: float = 11,
    anchor: str = "middle",
    rotate: bool = False,
    extra: str = "",
) -> str:
    """A text at ``(x, y)`` (its baseline; ``rotate``: read upwards, centred on the point)."""
    turn = f' transform="rotate(-90 {_n(x)} {_n(y)})"' if rotate else ""
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size:g}" text-anchor="{anchor}"{turn}'
        f"{extra}>{_esc(label)}</text>"
    )


def polyline(
    points: Iterable[tuple[float, float]],
    color: str,
    *,
    dash: str = "",
    width: float = 1.6,
    tip: str = "",
) -> str:
    coords = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{width:g}"'
        f'{dashed} stroke-linejoin="round">{_title(tip)}</polyline>'
    )


def polygon(points: Iterable[tuple[float, float]], color: str, opacity: float = 0.15) -> str:
    coords = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
    return f'<polygon points="{coords}" fill="{color}" fill-opacity="{opacity:g}" stroke="none"/>'


def circle(
    x: float, y: float, radius: float, color: str, *, opacity: float = 1.0, tip: str = ""
) -> str:
    fade = f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
    return (
        f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(radius)}" fill="{color}"{fade}>'
        f"{_title(tip)}</circle>"
    )


def rect(x: float, y: float, width: float, height: float, color: str, *, tip: str = "") -> str:
    return (
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(width, 0.0))}" '
        f'height="{_n(max(height, 0.0))}" fill="{color}">{_title(tip)}</rect>'
    )


def _grid_lines(frame: Frame, x_ticks: Sequence[float], y_ticks: Sequence[float]) -> str:
    lines = [
        f'<line x1="{_n(frame.x(v))}" y1="{_n(frame.top)}" x2="{_n(frame.x(v))}" '
        f'y2="{_n(frame.bottom)}"/>'
        for v in x_ticks
    ]
    lines += [
        f'<line x1="{_n(frame.left)}" y1="{_n(frame.y(v))}" x2="{_n(frame.right)}" '
        f'y2="{_n(frame.y(v))}"/>'
        for v in y_ticks
    ]
    return f'<g stroke="{_GRID}" stroke-width="1">{"".join(lines)}</g>'


def axes(
    frame: Frame,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
    *,
    x_label: str = "",
    y_label: str = "",
    title: str = "",
    grid: str = "xy",
) -> str:
    """The frame's grid (``grid``: which axes get grid lines), border, tick labels, axis
    labels and title: what is drawn under the data."""
    x_grid = [v for v, _ in x_ticks] if "x" in grid else []
    y_grid = [v for v, _ in y_ticks] if "y" in grid else []
    parts = [
        _grid_lines(frame, x_grid, y_grid),
        f'<rect x="{_n(frame.left)}" y="{_n(frame.top)}" width="{_n(frame.width)}" '
        f'height="{_n(frame.height)}" fill="none" stroke="#9aa1ad"/>',
    ]
    parts += [text(frame.x(v), frame.bottom + 14, label, size=10) for v, label in x_ticks]
    parts += [
        text(frame.left - 5, frame.y(v) + 3.5, label, size=10, anchor="end") for v, label in y_ticks
    ]
    if x_label:
        parts.append(text(frame.left + frame.width / 2, frame.bottom + 31, x_label))
    if y_label:
        widest = max((text_width(label, 10) for _, label in y_ticks), default=0.0)
        parts.append(
            text(frame.left - widest - 14, frame.top + frame.height / 2, y_label, rotate=True)
        )
    if title:
        parts.append(text(frame.left + frame.width / 2, frame.top - 7, title, size=12))
    return "".join(parts)


_KEY = 40.0  # a legend entry's sample and gap, before its label


def _key(x: float, middle: float, label: str, color: str, kind: str, dash: str) -> str:
    """A legend entry from ``x``, centred on the height ``middle``."""
    if kind == "box":
        sample = rect(x + 6, middle - 5, 18, 10, color)
    else:
        sample = polyline([(x + 2, middle), (x + 32, middle)], color, dash=dash)
        if kind == "line":
            sample += circle(x + 17, middle, 3.2, color)
    return sample + text(x + _KEY - 4, middle + 4, label, anchor="start")


def legend(x: float, y: float, entries: Sequence[tuple[str, str, str, str]]) -> str:
    """A legend box with its top-left corner at ``(x, y)``: ``(label, colour, kind, dash)``
    entries, ``kind`` ``"line"`` (a line with a marker), ``"rule"`` (a line alone) or
    ``"box"`` (a filled square)."""
    width = legend_width(label for label, *_ in entries)
    parts = [
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(8 + 16 * len(entries))}" '
        'fill="#fff" fill-opacity="0.85" stroke="#d5d9e0" rx="3"/>'
    ]
    for i, (label, color, kind, dash) in enumerate(entries):
        parts.append(_key(x + 4, y + 12 + 16 * i, label, color, kind, dash))
    return "".join(parts)


def legend_row(
    x: float, y: float, width: float, entries: Sequence[tuple[str, str, str, str]]
) -> tuple[str, float]:
    """The entries of :func:`legend` side by side from ``(x, y)``, wrapped at ``width``; returns
    the drawing and its height."""
    parts = []
    left, top = x, y
    for label, color, kind, dash in entries:
        size = _KEY + text_width(label)
        if left > x and left + size > x + width:
            left, top = x, top + 18
        parts.append(_key(left, top + 9, label, color, kind, dash))
        left += size + 8
    return "".join(parts), top + 18 - y


def legend_width(labels: Iterable[str]) -> float:
    """How wide :func:`legend` draws a legend of these labels."""
    return _KEY + 4 + max((text_width(label) for label in labels), default=0.0)


def box_stats(values: Sequence[float]) -> dict[str, Any]:
    """A box plot's numbers, as matplotlib's ``boxplot`` computes them: quartiles (linear
    interpolation), whiskers at the furthest values within 1.5 IQR of the box (never inside
    it), the values beyond them (each distinct value once), the mean."""
    data = np.asarray(values, dtype=np.float64)
    q1, median, q3 = (float(q) for q in np.percentile(data, [25, 50, 75]))
    reach = 1.5 * (q3 - q1)
    below, above = data[data <= q3 + reach], data[data >= q1 - reach]
    high = max(float(below.max()), q3) if below.size else q3
    low = min(float(above.min()), q1) if above.size else q1
    beyond = np.unique(data[(data < low) | (data > high)])
    return {
        "q1": q1,
        "median": median,
        "q3": q3,
        "low": low,
        "high": high,
        "mean": float(data.mean()),
        "min": float(data.min()),
        "max": float(data.max()),
        "beyond": [float(v) for v in beyond],
    }


def svg(width: float, height: float, body: str, label: str) -> str:
    """An ``<svg>`` of ``width`` x ``height`` pixels, scaled by the page to its column
    (``label``: what a screen reader says)."""
    return (
        f'<svg viewBox="0 0 {_n(width)} {_n(height)}" '
        f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label="{_esc(label)}" '
        f'font-family="{_esc(_FONT)}" fill="{_INK}">{body}</svg>'
    )


def figure(drawing: str, caption: str, *, name: str, full: bool = False) -> str:
    """A figure: the drawing, its caption and a link that saves the drawing as ``name.svg``
    (the page's script fills it in when clicked); ``full``: it takes a whole row of the page's
    grid of figures, for a wide drawing."""
    wide = ' class="full"' if full else ""
    save = f'<a class="save" href="#" download="{_esc(name)}.svg">save as SVG</a>'
    return f"<figure{wide}>{drawing}<figcaption>{_esc(caption)} {save}</figcaption></figure>"
