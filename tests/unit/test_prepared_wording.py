"""Templates prepared once per tool and code (errord.decide.texts.wording.prepare) word a
decision exactly as the template filled whole would, whatever braces the tool's name or
the template's text hold; so does a breaker's opening time, formatted once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.model import ErrorCode
from errord.decide.texts.summary import label
from errord.decide.texts.wording import _opened_at, prepare

WHOLE = "{Label} ({tool}, {code}) failed {{literally}}; retrying in {delay_ms} ms, {label}."


def filled_whole(template: str, tool: str, code: ErrorCode, delay_ms: int) -> str:
    said = label(tool)
    return template.format(
        tool=tool, label=said, Label=said[:1].upper() + said[1:], code=code.value, delay_ms=delay_ms
    )


@given(
    tool=st.text(min_size=1, max_size=20),
    code=st.sampled_from(ErrorCode),
    delay_ms=st.integers(0, 10_000),
)
def test_a_prepared_template_fills_as_the_whole_template(
    tool: str, code: ErrorCode, delay_ms: int
) -> None:
    text, varying = prepare(WHOLE, tool, code)
    assert varying == ("delay_ms",)
    assert text.format_map({"delay_ms": delay_ms}) == filled_whole(WHOLE, tool, code, delay_ms)


def test_a_template_naming_only_the_tool_and_code_is_prepared_final() -> None:
    """Nothing is left to fill: the prepared text is the text, braces of the tool's name
    kept single."""
    assert prepare("{Label} of {tool} says {code}.", "x{y}_z", ErrorCode.TIMEOUT) == (
        "X{y} z of x{y}_z says TIMEOUT.",
        (),
    )


def test_a_field_with_a_format_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="format spec"):
        prepare("{tool} in {delay_ms:>5} ms", "search", ErrorCode.TIMEOUT)


def test_when_a_breaker_opened_is_written_in_its_own_time_zone_each_time() -> None:
    """The text is formatted once per moment and offset: the same moment in another time
    zone is not given the first one's text."""
    utc = datetime(2026, 1, 1, tzinfo=UTC)
    paris = utc.astimezone(timezone(timedelta(hours=1)))
    for _ in range(2):
        assert _opened_at(utc, utc.utcoffset()) == " (opened at 2026-01-01T00:00:00.000+00:00)"
        assert _opened_at(paris, paris.utcoffset()) == (
            " (opened at 2026-01-01T01:00:00.000+01:00)"
        )
