"""What the model needs to correct its own call: the parameter, the required
ones, an example call built from the tool's JSON Schema, a retry hint; or, for a tool
that does not exist, the known tools closest to the name it asked for.

The parameter comes from the schema violations of the reported arguments when there
are some, else from the error message: a quoted name, or a parameter of the schema that
the message names ("No query provided").

Two failures the model caused are "the same mistake" in a turn (``mistake_key``) when
they have the same tool, the same error (its signature: errord.decide.memory.signatures)
and the same parameter to correct. A model that re-issues a bad call under fresh
tool-call ids makes the same mistake each time; the turn counts how often the model was
handed it (errord.state.turns), so that it is not told forever.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping

import msgspec
from msgspec import structs

from errord.decide.arguments import CallValidator, required_parameters
from errord.decide.classify import fault_of, framed_parameter
from errord.decide.memory import CACHED_MESSAGES, Signature
from errord.decide.model import (
    Classification,
    Correction,
    ErrorCode,
    FailureReport,
    Fault,
    JSONValue,
    ParameterProblem,
)
from errord.decide.policy import DecisionContext

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
    correction = argument_correction(
        report.tool,
        context.manifest.parameters,
        context.tool.validator,
        context.problems,
        report.error.message,
        corrections_left,
        context.classification.parameter,
        report.arguments,
    )
    if context.classification.code is ErrorCode.NOT_FOUND and not context.problems:
        # What the call named (a path, an id, a column) does not exist: the model names
        # another; it is not told its call was malformed.
        return structs.replace(correction, kind="not_found")
    return correction


def argument_correction(
    tool: str,
    schema: Mapping[str, JSONValue] | None,
    validator: CallValidator | None,
    problems: tuple[ParameterProblem, ...],
    message: str,
    corrections_left: int = 0,
    evidence: str = "",
    arguments: Mapping[str, JSONValue] | None = None,
) -> Correction:
    """The correction of a call to ``tool`` whose arguments have ``problems`` (the first
    says what to fix), or that failed with ``message`` when errord found none; ``evidence``,
    the parameter the failure is about by the call's own values (its classification's);
    ``arguments``, the call's, whose names the schema does not take are named beside the
    parameter they may stand for."""
    parameter = corrected_parameter(problems, message, schema, evidence)
    mistaken = mistaken_name(parameter, arguments or {}, _properties(schema))
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
        retry_hint=_retry_hint(tool, parameter, mistaken, has_example=validator is not None),
        problems=problems,
        corrections_left=corrections_left,
    )


def corrected_parameter(
    problems: tuple[ParameterProblem, ...],
    message: str,
    schema: Mapping[str, JSONValue] | None,
    evidence: str = "",
) -> str:
    """The parameter the model must correct first: the first schema violation's, else the
    one the call's values show (``evidence``), else a parameter of the schema ``message``
    names; empty when none says. Never a value the message quotes."""
    if problems:
        return problems[0].parameter
    if evidence:
        return evidence
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
    """The parameter ``message`` names: a parameter of the schema, quoted or as a word;
    else a name the message itself calls a parameter ("Parameter 'query' ...", "missing
    'origin'", "No query provided"); empty when it names none. Any other quoted word is
    a value, 'ten' or 'SELEC', never named as a parameter."""
    known = set(parameters)
    if known:  # a tool without a schema names no parameter as a word: none to look up
        for name in QUOTED_NAME.findall(message):
            if name in known:
                return str(name)
        for found in WORD.finditer(message):
            if found.group() in known:
                return found.group()
    framed = framed_parameter(message)
    if framed:
        return framed
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


def mistaken_name(
    parameter: str, arguments: Mapping[str, JSONValue], properties: Iterable[str]
) -> str:
    """The name the call gave that the schema does not take and that most likely stands
    for ``parameter`` (``ticker`` for ``symbol``): the closest of them, the only one when
    none is close; empty when the call gave no such name."""
    known = set(properties)
    if not parameter or not known or parameter not in known:
        return ""
    unknown = [name for name in arguments if name not in known]
    close = difflib.get_close_matches(parameter, unknown, n=1, cutoff=0.5)
    if close:
        return close[0]
    return unknown[0] if len(unknown) == 1 else ""


def _retry_hint(tool: str, parameter: str, mistaken: str, *, has_example: bool) -> str:
    what = f"with {parameter!r} corrected" if parameter else "with corrected arguments"
    if mistaken:
        what += f" ({tool} takes {parameter!r}, not {mistaken!r})"
    like = ", following the example" if has_example else ""
    return (
        f"Call {tool} again {what}{like}. If the user did not give the information "
        "it needs, ask them for it."
    )


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
