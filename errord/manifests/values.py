"""The values a tool manifest's keys hold: each key's type, range and unit, and the
bounded readers of its regular expressions, its ``default`` and its ``parameters`` schema.

A ``default`` is bounded in values and depth because every USE_DEFAULT decision carries it;
a schema within errord/decide/arguments/schemas.py's bounds, checked before anything reads
it; every regular expression must be one RE2 can run in linear time
(errord/decide/arguments/regexes.py). The keys' readers come from yaml_reader.py, which
keeps each problem's line and reads on after one.
"""

from __future__ import annotations

import re

from yaml.nodes import MappingNode, Node

from errord.decide.arguments.regexes import compile_linear, unsupported_pattern
from errord.decide.arguments.schemas import MAX_SCHEMA_DEPTH, MAX_SCHEMA_VALUES, metaschema_problem
from errord.decide.manifest import MAX_COOLDOWN, MAX_TIMEOUT, MAX_WINDOW
from errord.decide.model import DefaultValue, ErrorClass, ErrorCode, JSONValue
from errord.manifests.yaml_bounds import too_large
from errord.manifests.yaml_reader import (
    MISSING,
    FieldReads,
    Reader,
    checked,
    converted,
    describe,
    node_at,
    one_of,
)

MAX_DEFAULT_VALUES = 10_000
"""Values (keys included, aliases counted at each use) of a tool's ``default``: every
USE_DEFAULT decision carries it to the executor and into the trace."""
MAX_DEFAULT_DEPTH = 32
"""Levels of objects and arrays a tool's ``default`` may nest."""


def _seconds(milliseconds: float) -> float:
    return milliseconds / 1000


def _is_tool_name(name: str) -> bool:
    return bool(name) and not any(character.isspace() for character in name)


def _is_dotted_path(path: str) -> bool:
    return _is_tool_name(path) and all(path.split("."))


def regex(reader: Reader, node: Node, field: str) -> re.Pattern[str] | None:
    """A regular expression that RE2 can run (in linear time: see
    errord/decide/arguments/regexes.py)."""
    pattern = reader.string(node, field)
    if pattern is None:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        reader.report(node, field, f"invalid regular expression: {exc}")
        return None
    try:
        compile_linear(pattern, compiled.flags)
    except ValueError as exc:
        reader.report(node, field, f"regular expression RE2 cannot run: {exc}")
        return None
    return compiled


def default_value(reader: Reader, node: Node, field: str) -> DefaultValue | None:
    """A JSON value, within MAX_DEFAULT_VALUES and MAX_DEFAULT_DEPTH: decisions carry it."""
    too_large_at = too_large(node, MAX_DEFAULT_VALUES, MAX_DEFAULT_DEPTH)
    if too_large_at is not None:
        bad_node, why = too_large_at
        reader.report(bad_node, field, f"default too large: {why}")
        return None
    value = reader.json_value(node, field)
    return None if value is MISSING else DefaultValue(value)


def json_schema(reader: Reader, node: Node, field: str) -> dict[str, JSONValue] | None:
    """A JSON Schema (a mapping) that Draft 2020-12's metaschema accepts, within
    size.py's bounds (checked before anything reads it), its regular expressions
    ones that RE2 can run."""
    if not isinstance(node, MappingNode):
        reader.report(node, field, f"expected a mapping (a JSON Schema), got {describe(node)}")
        return None
    too_large_at = too_large(node, MAX_SCHEMA_VALUES, MAX_SCHEMA_DEPTH)
    if too_large_at is not None:
        bad_node, why = too_large_at
        reader.report(bad_node, field, f"JSON Schema too large: {why}")
        return None
    schema = reader.json_value(node, field)
    if schema is MISSING:
        return None
    refused = metaschema_problem(schema)
    if refused is not None:
        bad_node, bad_field = node_at(node, field, refused[0])
        reader.report(bad_node, bad_field, f"invalid JSON Schema: {refused[1]}")
        return None
    unrunnable = unsupported_pattern(schema)
    if unrunnable is not None:
        bad_node, bad_field = node_at(node, field, unrunnable[0])
        reader.report(bad_node, bad_field, f"JSON Schema {unrunnable[1]}")
        return None
    return dict(schema)


# Scalar fields: a type, a range, a unit.

tool_name = checked(Reader.string, _is_tool_name, "a non-empty name without whitespace")
non_empty_string = checked(Reader.string, bool, "a non-empty string")
dotted_path = checked(
    Reader.string, _is_dotted_path, "a dotted path such as 'passenger.passport_number'"
)
_up_to_a_day = checked(
    Reader.integer,
    lambda n: 0 < n <= MAX_TIMEOUT * 1000,
    f"from 1 to {MAX_TIMEOUT * 1000:.0f} (a day)",
)
_up_to_a_week = checked(
    Reader.integer,
    lambda n: 0 < n <= MAX_COOLDOWN * 1000,
    f"from 1 to {MAX_COOLDOWN * 1000:.0f} (a week)",
)
_at_least_one = checked(Reader.integer, lambda n: n >= 1, "at least 1")
http_status = checked(Reader.integer, lambda status: 100 <= status <= 599, "between 100 and 599")
_non_negative = checked(Reader.number, lambda x: x >= 0, "at least 0")
_multiplier = checked(Reader.number, lambda x: x >= 1, "at least 1")
_percent = checked(Reader.number, lambda x: 0 <= x < 100, "at least 0 and below 100")
_rate_percent = checked(Reader.number, lambda x: 0 < x <= 100, "above 0 and at most 100")
_growth = checked(Reader.number, lambda x: 1 <= x <= 100, "from 1 to 100")
_window = checked(Reader.integer, lambda n: 1 <= n <= MAX_WINDOW, f"from 1 to {MAX_WINDOW}")
timeout_seconds = converted(_up_to_a_day, _seconds)
_cooldown_seconds = converted(_up_to_a_week, _seconds)
_delay_seconds = converted(_non_negative, _seconds)
_jitter_fraction = converted(_percent, lambda percent: percent / 100)
_rate_fraction = converted(_rate_percent, lambda percent: percent / 100)
_strategy = one_of({"exponential_backoff": "exponential_backoff"})
# CIRCUIT_OPEN is errord's own refusal of an attempt that never ran: nothing to classify.
error_code = one_of({code.name: code for code in ErrorCode if code is not ErrorCode.CIRCUIT_OPEN})
error_class = one_of({cls.name.lower(): cls for cls in ErrorClass})


RETRY_POLICY_KEYS: FieldReads[Reader] = {
    "strategy": (None, _strategy),
    "initial_delay_ms": ("initial_delay", _delay_seconds),
    "max_delay_ms": ("max_delay", _delay_seconds),
    "multiplier": ("multiplier", _multiplier),
    "jitter_percent": ("jitter", _jitter_fraction),
    "max_attempts": ("max_attempts", _at_least_one),
    "max_total_time_ms": ("max_total_time", _delay_seconds),
    "max_retry_after_ms": ("max_retry_after", _delay_seconds),
}


BREAKER_KEYS: FieldReads[Reader] = {
    "failure_threshold": ("failure_threshold", _at_least_one),
    "success_threshold": ("success_threshold", _at_least_one),
    "timeout_ms": ("cooldown", _cooldown_seconds),
    "first_timeout_ms": ("first_cooldown", _cooldown_seconds),
    "timeout_multiplier": ("cooldown_multiplier", _growth),
    "failure_rate_percent": ("failure_rate", _rate_fraction),
    "min_calls": ("min_calls", _at_least_one),
    "window": ("window", _window),
}
