"""The console's charts as geometry: numbers and labels that the templates draw as SVG.

Drawn on the server, inline in the page: no script draws them and the browser fetches
nothing for them. Only numbers reach SVG attributes; every label goes into a
``<title>`` as escaped text.

- A tool's last hour, a bar a minute (``minute_bars``): its failure rate, its mean
  duration; a minute without executions has no bar.
- A turn's timeline (``timeline``): a lane per call, its events as marks at their time
  since the turn began, the delays granted to retries as spans after them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

CHART_WIDTH: Final = 180
CHART_HEIGHT: Final = 36
MINUTES: Final = 60
TIMELINE_WIDTH: Final = 960
LANE_HEIGHT: Final = 22
LANE_LABEL_WIDTH: Final = 150
"""Pixels at the timeline's left for the lanes' names."""
AXIS_HEIGHT: Final = 18


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True, slots=True)
class BarChart:
    """Bars over the last MINUTES minutes, scaled so that the tallest is ``top``."""

    bars: tuple[Bar, ...]
    top: str
    """The value at the chart's top, in words (``100 %``, ``2.5 s``)."""
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT


@dataclass(frozen=True, slots=True)
class MinuteValue:
    """A minute's figure: which minute (unix minutes), its value, and its label."""

    minute: int
    value: float
    label: str


def minute_bars(
    values: Sequence[MinuteValue], last_minute: int, top: float, top_words: str
) -> BarChart:
    """A bar for each of ``values`` within the MINUTES minutes ending with ``last_minute``,
    ``top`` tall at most (a positive number)."""
    step = CHART_WIDTH / MINUTES
    bars = []
    for value in values:
        age = last_minute - value.minute
        if not 0 <= age < MINUTES:
            continue
        height = max(1.0, CHART_HEIGHT * min(value.value, top) / top)
        x = CHART_WIDTH - (age + 1) * step
        top_y = CHART_HEIGHT - height
        bars.append(
            Bar(round(x, 2), round(top_y, 2), round(step - 0.5, 2), round(height, 2), value.label)
        )
    return BarChart(tuple(bars), top_words)


@dataclass(frozen=True, slots=True)
class Mark:
    """An event on the timeline; ``anchor`` is its entry's id in the page."""

    x: float
    y: float
    kind: str
    anchor: str
    label: str


@dataclass(frozen=True, slots=True)
class Span:
    """A wait on the timeline: a retry's delay."""

    x: float
    y: float
    width: float
    label: str


@dataclass(frozen=True, slots=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True, slots=True)
class Lane:
    y: float
    label: str


@dataclass(frozen=True, slots=True)
class Timeline:
    lanes: tuple[Lane, ...]
    marks: tuple[Mark, ...]
    spans: tuple[Span, ...]
    ticks: tuple[Tick, ...]
    width: int
    height: int
    lane_height: int = LANE_HEIGHT
    left: int = LANE_LABEL_WIDTH


@dataclass(frozen=True, slots=True)
class Point:
    """An event to place: its lane, its time since the turn began, what it is, and the
    wait after it (a retry's delay, seconds; 0 for none)."""

    lane: str
    offset: float
    kind: str
    anchor: str
    label: str
    wait: float = 0.0


def timeline(points: Sequence[Point]) -> Timeline:
    """The points on one time axis, a lane per name in order of first appearance."""
    names = list(dict.fromkeys(point.lane for point in points))
    lane_of = {name: index for index, name in enumerate(names)}
    end = max((point.offset + point.wait for point in points), default=0.0) or 1.0
    usable = TIMELINE_WIDTH - LANE_LABEL_WIDTH - 12

    def x_of(offset: float) -> float:
        return round(LANE_LABEL_WIDTH + usable * offset / end, 2)

    def y_of(lane: str) -> float:
        return AXIS_HEIGHT + LANE_HEIGHT * lane_of[lane] + LANE_HEIGHT / 2

    marks = tuple(
        Mark(x_of(point.offset), y_of(point.lane), point.kind, point.anchor, point.label)
        for point in points
    )
    spans = tuple(
        Span(
            x_of(point.offset),
            y_of(point.lane),
            round(usable * point.wait / end, 2),
            f"waits {point.wait:g} s",
        )
        for point in points
        if point.wait > 0
    )
    ticks = tuple(Tick(x_of(end * part / 4), _seconds(end * part / 4)) for part in range(5))
    lanes = tuple(Lane(y_of(name), name) for name in names)
    height = AXIS_HEIGHT + LANE_HEIGHT * max(1, len(names)) + 4
    return Timeline(lanes, marks, spans, ticks, TIMELINE_WIDTH, height)


def _seconds(value: float) -> str:
    if value >= 100:
        return f"{value:.0f} s"
    return f"{value:.3g} s"
