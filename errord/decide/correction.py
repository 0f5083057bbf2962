"""What the model needs to correct its own call: the parameter, the required
ones, an example call built from the tool's JSON Schema, a retry hint; or, for a tool
that does not exist, the known tools closest to the name it asked for.

The parameter comes from the schema violations of the reported arguments when there
are some, else from the error message: a quoted name, or a parameter of the schema that
the message names ("No query provided").
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping

from errord.decide.context import DecisionContext
from errord.decide.model import Correction, ErrorCode, JSONValue, ParameterProblem
from errord.decide.signature import CACHED_MESSAGES
from errord.decide.validate import CallValidator, required_parameters

CLOSEST_TOOLS = 5
"""Known tools named for a tool that does not exist."""
QUOTED_NAME = re.compile(r"""['"`\u2018\u201c]([A-Za-z_][\w.\[\]-]{0,63})['"`\u2019\u201d]""")
WORD = re.compile(r"[A-Za-z_]\w*")
NONE_PROVIDED = re.compile(
    r"\bno ([A-Za-z_]\w{0,63}) (?:provided|given|specified|supplied)\b", re.I
)
"""A parameter named without quotes, as in "No query provided"."""

KINDS_BY_MESSAGE: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "invalid_type",
        re.compile(
            r"must be (of type |an? )?(str|string|int|integer|number|float|bool|boolean|"
            r"array|list|object|dict)\b|\bgot (str|int|float|bool|list|dict|none)\b|"
            r"wrong type|not of type|expected type",
            re.IGNORECASE,
        ),
    ),
    (
        "invalid_value",
        re.compile(
            r"cannot be empty|must not be empty|invalid value|must be one of|not one of|"
            r"not a valid|out of range",
            re.IGNORECASE,
        ),
    ),
    (
        "missing_parameter",
        re.compile(
            r"\bmissing\b|\bis required\b|\bare required\b|\bnot provided\b|\bno \w+ provided\b|"
            r"\bmust be provided\b|\brequired (parameter|argument|field)\b",
            re.IGNORECASE,
        ),
    ),
)
"""The kind of a parameter problem an error message states, most specific first."""


def correction_for(context: DecisionContext, corrections_left: int) -> Correction:
    """What the model must correct in the call ``context`` reports."""
    report = context.report
    if context.classification.code is ErrorCode.TOOL_NOT_FOUND:
        known = closest_tools(report.tool, context.tool.known_tools)
        return Correction(
            kind="unknown_tool",
            message=f"There is no tool named {report.tool!r}.",
            known_tools=known,
            retry_hint="Call one of the available tools instead, with the arguments it takes.",
            corrections_left=corrections_left,
        )
    return argument_correction(
        report.tool,
        context.manifest.parameters,
        context.tool.validator,
        context.problems,
        report.error.message,
        corrections_left,
    )


def argument_correction(
    tool: str,
    schema: Mapping[str, JSONValue] | None,
    validator: CallValidator | None,
    problems: tuple[ParameterProblem, ...],
    message: str,
    corrections_left: int = 0,
) -> Correction:
    """The correction of a call to ``tool`` whose arguments have ``problems`` (the first
    says what to fix), or that failed with ``message`` when errord found none."""
    parameter = corrected_parameter(problems, message, schema)
    if problems:
        kind, message = problems[0].kind, problems[0].message
    else:
        kind = stated_kind(message)
    return Correction(
        kind=kind,
        message=message,
        parameter=parameter,
        required_parameters=tuple(required_parameters(schema)) if schema else (),
        example=validator.example() or None if validator is not None else None,
        retry_hint=_retry_hint(tool, parameter, has_example=validator is not None),
        problems=problems,
        corrections_left=corrections_left,
    )


def corrected_parameter(
    problems: tuple[ParameterProblem, ...], message: str, schema: Mapping[str, JSONValue] | None
) -> str:
    """The parameter the model must correct first: the first schema violation's, else the
    one ``message`` names; empty when neither says."""
    if problems:
        return problems[0].parameter
    return named_parameter(message, _properties(schema))


def problems_of(
    validator: CallValidator, arguments: Mapping[str, JSONValue]
) -> tuple[ParameterProblem, ...]:
    """How ``arguments`` break the validator's schema, as recorded."""
    return tuple(
        ParameterProblem(kind=v.kind.value, parameter=v.parameter, message=v.message)
        for v in validator.validate(arguments)
    )


@functools.lru_cache(maxsize=CACHED_MESSAGES)  # one mistake repeats its message
def stated_kind(message: str) -> str:
    """The kind of parameter problem ``message`` states; ``invalid_arguments`` if none."""
    for kind, pattern in KINDS_BY_MESSAGE:
        if pattern.search(message):
            return kind
    return "invalid_arguments"


def named_parameter(message: str, parameters: Iterable[str]) -> str:
    """The parameter ``message`` names: a quoted parameter of the schema, else one of its
    parameters as a word, else any quoted name; empty when it names none."""
    known = set(parameters)
    quoted: list[str] = QUOTED_NAME.findall(message)
    for name in quoted:
        if name in known:
            return name
    if known:  # a tool without a schema names no parameter: no word to look up
        for found in WORD.finditer(message):
            if found.group() in known:
                return found.group()
    if quoted:
        return quoted[0]
    unquoted = NONE_PROVIDED.search(message)
    return unquoted[1] if unquoted else ""


def closest_tools(name: str, known: Iterable[str]) -> tuple[str, ...]:
    """The known tools closest to ``name``, closest first; the first few by name when
    none is close."""
    tools = sorted(known)
    close = difflib.get_close_matches(name, tools, n=CLOSEST_TOOLS, cutoff=0.4)
    return tuple(close or tools[:CLOSEST_TOOLS])


def _properties(schema: Mapping[str, JSONValue] | None) -> Iterable[str]:
    properties = schema.get("properties") if schema else None
    return properties.keys() if isinstance(properties, Mapping) else ()


def _retry_hint(tool: str, parameter: str, *, has_example: bool) -> str:
    what = f"with {parameter!r} corrected" if parameter else "with corrected arguments"
    like = ", following the example" if has_example else ""
    return (
        f"Call {tool} again {what}{like}. If the user did not give the information "
        "it needs, ask them for it."
    )
