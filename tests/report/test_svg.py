"""The report's plots as inline SVG: ticks, the data-to-pixel mapping, the box plot's numbers
(against matplotlib's, where it is installed) and the figures' marks."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxeval.report import svg


def test_ticks_fall_on_round_numbers() -> None:
    assert svg.ticks(0, 1, 5) == [(0.0, "0"), (0.2, "0.2"), (0.4, "0.4"), (0.6, "0.6"),
                                  (0.8, "0.8"), (1.0, "1.0")]  # fmt: skip
    assert [label for _, label in svg.ticks(0, 2000, 7)] == ["0", "500", "1000", "1500", "2000"]
    assert [label for _, label in svg.ticks(0.6, 1.0, 6)] == ["0.6", "0.7", "0.8", "0.9", "1.0"]
    # 2.5 times a power of ten needs one more digit
    assert [label for _, label in svg.ticks(0, 0.1, 4)] == ["0", "0.025", "0.050", "0.075", "0.100"]
    assert svg.ticks(3, 3) == [(3, "3")]  # a point: one tick


@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(1e-6, 1e6, allow_nan=False),
    st.integers(2, 10),
)
@example(879609.9999999999, 1e-06, 6)  # a span near the values' precision
def test_ticks_lie_in_the_range_evenly_spaced(low: float, span: float, count: int) -> None:
    high = low + span
    values = [v for v, _ in svg.ticks(low, high, count)]
    assert 1 <= len(values) <= 2 * count + 1
    # A tick may sit a rounding error outside: of the span, or, where the span is near the
    # values' own precision (879609.9999999999 + 1e-6), of the values (a few units in the last
    # place; found by hypothesis in a CI run).
    slack = 1e-6 * span + 4 * math.ulp(max(abs(low), abs(high)))
    assert all(low - slack <= v <= high + slack for v in values)
    steps = np.diff(values)
    assert np.allclose(steps, steps[0]) if len(steps) else True


def test_a_frame_maps_data_to_pixels_with_y_upwards() -> None:
    frame = svg.Frame(10, 20, 200, 100, (0, 4), (0, 1))
    assert (frame.x(0), frame.x(4), frame.x(1)) == (10, 210, 60)
    assert (frame.y(0), frame.y(1), frame.y(0.25)) == (120, 20, 95)
    assert (frame.right, frame.bottom) == (210, 120)
    assert svg.padded(0, 10) == (-0.5, 10.5)
    assert svg.padded(2, 2) == (1.5, 2.5)


def test_box_stats_by_hand() -> None:
    box = svg.box_stats([1, 2, 3, 4, 100])
    # quartiles by linear interpolation: 2, 3, 4; whiskers within 1.5 IQR (1 .. 7): 1 and 4
    assert (box["q1"], box["median"], box["q3"]) == (2.0, 3.0, 4.0)
    assert (box["low"], box["high"], box["beyond"]) == (1.0, 4.0, [100.0])
    assert (box["mean"], box["min"], box["max"]) == (22.0, 1.0, 100.0)


@given(st.lists(st.integers(0, 400), min_size=1, max_size=60))
def test_box_stats_agree_with_matplotlib(values: list[int]) -> None:
    cbook = pytest.importorskip("matplotlib.cbook")
    (expected,) = cbook.boxplot_stats(np.asarray(values, dtype=np.float64))
    box = svg.box_stats(values)
    assert box["q1"] == expected["q1"]
    assert box["median"] == expected["med"]
    assert box["q3"] == expected["q3"]
    assert box["low"] == expected["whislo"]
    assert box["high"] == expected["whishi"]
    assert box["mean"] == expected["mean"]
    assert box["beyond"] == sorted(set(expected["fliers"].tolist()))


def test_marks_carry_their_numbers_and_text_is_escaped() -> None:
    drawing = svg.svg(100, 50, svg.circle(5, 5, 2, "#000", tip="a <b> & c") + svg.text(
        1, 2, "x < y"), "label \"q\"")  # fmt: skip
    assert drawing.startswith('<svg viewBox="0 0 100 50" width="100" height="50" role="img"')
    assert 'aria-label="label &quot;q&quot;"' in drawing
    assert "<title>a &lt;b&gt; &amp; c</title>" in drawing
    assert ">x &lt; y</text>" in drawing
    assert "http" not in drawing  # inline in HTML: no namespace, nothing fetched
    shown = svg.figure(drawing, "cap & tion", name="a&b", full=True)
    assert shown.startswith('<figure class="full"><svg ')
    assert '<figcaption>cap &amp; tion <a class="save" href="#" download="a&amp;b.svg">' in shown


def test_a_legend_row_wraps_at_its_width() -> None:
    entries = [(f"run {i}", "#000", "line", "") for i in range(6)]
    one, height_one = svg.legend_row(0, 0, 10_000, entries)
    wrapped, height_wrapped = svg.legend_row(0, 0, 200, entries)
    assert height_one == 18
    assert height_wrapped > height_one
    assert one.count("<text") == wrapped.count("<text") == 6
    rows = {float(y) for y in re.findall(r'<text x="[^"]+" y="([^"]+)"', wrapped)}
    assert len(rows) == height_wrapped / 18
