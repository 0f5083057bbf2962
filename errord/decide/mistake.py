"""A mistake of the model: what makes two failures it caused "the same mistake" in a turn.

The same tool, the same error (its signature: errord.decide.signature) and the same
parameter to correct. A model that re-issues a bad call under fresh tool-call ids makes
the same mistake each time; the turn counts how often the model was handed it
(errord.state.turns), so that it is not told forever.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from errord.decide.correction import corrected_parameter
from errord.decide.model import ErrorCode, FailureReport, JSONValue, ParameterProblem
from errord.decide.signature import Signature

ABOUT_THE_CALL = frozenset(
    {ErrorCode.INVALID_INPUT, ErrorCode.SCHEMA_VIOLATION, ErrorCode.TOOL_NOT_FOUND}
)
"""Codes of failures the model's call may have caused: the only ones that are mistakes."""

_encode = msgspec.json.Encoder().encode


def mistake_key(
    report: FailureReport,
    error: Signature,
    problems: tuple[ParameterProblem, ...],
    schema: Mapping[str, JSONValue] | None,
) -> str:
    """The mistake ``report`` is, as a key: empty for a failure the model's call cannot
    have caused."""
    if error.code not in ABOUT_THE_CALL:
        return ""
    parameter = ""
    if error.code is not ErrorCode.TOOL_NOT_FOUND:
        parameter = corrected_parameter(problems, report.error.message, schema)
    # A JSON array: unambiguous whatever the tool and parameter names hold.
    return _encode((report.tool, error.key, parameter)).decode()
