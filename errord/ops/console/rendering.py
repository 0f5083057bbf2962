"""The console's pages as HTML: Jinja2 templates, every value escaped.

Autoescaping is on for every template, so that anything a tool or a model wrote (an
error message, an argument, a tool's name, a turn id) reaches the page as text, never
as markup; nothing is marked safe but the templates' own text. Undefined names are
errors, not blanks. Long texts are cut (``clip``): a megabyte of error message shows
its first CLIP_CHARACTERS and says how many more there are; the whole event is a link
away, as JSON.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple

from jinja2 import Environment, PackageLoader, StrictUndefined

from errord.ops.console import story

CLIP_CHARACTERS: Final = 2_000
"""Characters of one text a page shows; the rest is counted."""


class Clipped(NamedTuple):
    shown: str
    hidden: int
    """Characters left out."""


def clip(text: object, limit: int = CLIP_CHARACTERS) -> Clipped:
    value = str(text)
    if len(value) <= limit:
        return Clipped(value, 0)
    return Clipped(value[:limit], len(value) - limit)


def pretty(value: Any) -> str:
    """A JSON value (a call's arguments, a default result) as indented JSON text."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def stamp(moment: datetime | None) -> str:
    """A date and time in UTC, to the second."""
    if moment is None:
        return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def percent(value: float) -> str:
    return f"{value:.1%}".replace("%", " %")


ENVIRONMENT: Final = Environment(
    loader=PackageLoader("errord.ops.console", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENVIRONMENT.filters.update(
    clip=clip,
    pretty=pretty,
    stamp=stamp,
    clock=story.clock,
    seconds=story.seconds,
    percent=percent,
    decision_words=story.decision_words,
    refusal_words=story.refusal_words,
    memory_words=story.memory_words,
    breaker_words=story.breaker_words,
)


def render(template: str, **values: Any) -> str:
    return ENVIRONMENT.get_template(template).render(**values)
