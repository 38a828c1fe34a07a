"""Charts drawn on the server as inline SVG: readable without JavaScript, nothing loaded from
another host."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

WIDTH, HEIGHT = 640, 220
LEFT, BOTTOM, TOP = 48, 28, 12


@dataclass(frozen=True)
class Bar:
    """One bar: its box, its label under the axis and the value above it."""

    x: float
    y: float
    width: float
    height: float
    label: str
    value: int


@dataclass(frozen=True)
class BarChart:
    """A bar chart's geometry, for the ``bar_chart`` template macro."""

    width: int
    height: int
    bars: list[Bar]
    axis_y: float
    ticks: list[tuple[float, int]]  # (y, value) of the horizontal grid lines
    title: str


def day_bars(counts: dict[dt.date, int], title: str) -> BarChart:
    """One bar per day (oldest left), labelled with the weekday and day of month."""
    top = max(counts.values(), default=0)
    scale_top = _nice_ceiling(top)
    plot_height = HEIGHT - BOTTOM - TOP
    slot = (WIDTH - LEFT) / max(len(counts), 1)
    bars = []
    for n, (day, value) in enumerate(sorted(counts.items())):
        height = plot_height * value / scale_top if scale_top else 0
        bars.append(
            Bar(
                x=LEFT + n * slot + slot * 0.15,
                y=TOP + plot_height - height,
                width=slot * 0.7,
                height=height,
                label=day.strftime("%a %d"),
                value=value,
            )
        )
    ticks = [
        (TOP + plot_height - plot_height * step / 4, round(scale_top * step / 4))
        for step in range(5)
    ]
    return BarChart(WIDTH, HEIGHT, bars, TOP + plot_height, ticks, title)


def _nice_ceiling(value: int) -> int:
    """The smallest of 4, 8, 20, 40, 80, 200... at or above ``value`` (grid lines at quarters
    of it stay whole numbers)."""
    ceiling = 4
    while ceiling < value:
        for factor in (2, 2.5, 2):
            ceiling = int(ceiling * factor)
            if ceiling >= value:
                break
    return ceiling
