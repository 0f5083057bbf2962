"""A mistake of the model: what makes two failures it caused "the same mistake" in a turn.

The same tool, the same error (its signature: errord.decide.memory.signature) and the same
parameter to correct. A model that re-issues a bad call under fresh tool-call ids makes
the same mistake each time; the turn counts how often the model was handed it
(errord.state.turns), so that it is not told forever.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from errord.decide.classify import fault_of
from errord.decide.memory.signature import Signature
from errord.decide.model import (
    Classification,
    ErrorCode,
    FailureReport,
    Fault,
    JSONValue,
    ParameterProblem,
)
from errord.decide.texts.correction import corrected_parameter

_encode = msgspec.json.Encoder().encode


def mistake_key(
    report: FailureReport,
    error: Signature,
    classification: Classification,
    problems: tuple[ParameterProblem, ...],
    schema: Mapping[str, JSONValue] | None,
) -> str:
    """The mistake ``report`` is, as a key: empty for a failure the model's call did not
    cause (errord.decide.classify.fault)."""
    code = classification.code
    if not problems and fault_of(classification) is not Fault.ARGUMENTS:
        return ""
    parameter = ""
    if code is not ErrorCode.TOOL_NOT_FOUND:
        parameter = corrected_parameter(
            problems, report.error.message, schema, classification.parameter
        )
    # A JSON array: unambiguous whatever the tool and parameter names hold.
    return _encode((report.tool, error.key, parameter)).decode()
