"""Whose fault a failure is: who can act on it, from its code and class and the call itself.

Recovery follows from who can act (DESIGN.md, "Whose fault"):

- the call's ARGUMENTS (invalid input, a tool that does not exist, and any failure the
  call's own values show: errord.decide.classify.evidence): the model fixes them;
- the TOOL's own code (INTERNAL, and what does not exist or cannot be done when the call
  shows no part in it: a NOT_FOUND of an endpoint, an UNSUPPORTED): nobody in this turn;
- the BACKEND or the network (timeouts, connections, rate limits, unavailable and
  unknown errors, while transient): time may fix it;
- a PERSON (credentials and permissions, an exhausted quota, a backend failure a manifest
  or a rule calls permanent: a full disk, a certificate): someone must act.

The call's evidence turns a failure of the tool's own kind (NOT_FOUND, UNSUPPORTED,
INTERNAL, SCHEMA_VIOLATION), or an UNKNOWN one when the evidence is strong, into the
arguments' (permanent: the same call fails again), and names the parameter of any failure
of the arguments. It never turns what time or a person fixes into the model's. A JSON or
regular expression error with no argument that fails to parse is the tool's own: it parsed
what its backend answered (UNKNOWN, transient, for the backend: an error page where JSON
was due), or its own pattern (INTERNAL); so is a ValueError that quotes a value the call
never gave. A manifest's rule decides the class, and a default rule may say who can act
(a 402 is a person's); the call's evidence then names the parameter, not the class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from errord.decide.classify.evidence import (
    Evidence,
    argument_evidence,
    framed_parameter,
    quoted,
)
from errord.decide.classify.rules import PERMANENT, TRANSIENT, verdict
from errord.decide.model import Classification, ErrorClass, ErrorCode, Fault, JSONValue, ToolFailure

MANIFEST_RULE: Final = "manifest:"
OF_THE_ARGUMENTS: Final = frozenset({ErrorCode.INVALID_INPUT, ErrorCode.TOOL_NOT_FOUND})
OF_THE_TOOL: Final = frozenset(
    {
        ErrorCode.INTERNAL,
        ErrorCode.NOT_FOUND,
        ErrorCode.UNSUPPORTED,
        ErrorCode.SCHEMA_VIOLATION,
    }
)
OF_A_PERSON: Final = frozenset({ErrorCode.AUTH})
EVIDENCE_DECIDES: Final = OF_THE_TOOL
"""Codes whose failure any evidence from the call makes the arguments'."""
STRONG_EVIDENCE_DECIDES: Final = frozenset({ErrorCode.UNKNOWN})
"""Codes whose failure only strong evidence (a value quoted whole, a parameter named)
makes the arguments'."""

PARSING_RULES: Final = {
    "default:exception_family:json": (
        "json",
        verdict(ErrorCode.UNKNOWN, "default:exception_family:json_of_the_backend", TRANSIENT),
    ),
    "default:exception_family:regex": (
        "regex",
        verdict(ErrorCode.INTERNAL, "default:exception_family:regex_of_the_tool", PERMANENT),
    ),
}
"""Parsing errors whose value must be found in the call, and what they are without it."""


VALUE_ERROR: Final = "default:exception_family:value_error"
VALUE_OF_THE_TOOL: Final = verdict(
    ErrorCode.INTERNAL, "default:exception_family:value_of_the_tool", PERMANENT
)


def _quotes_a_value(failure: ToolFailure) -> bool:
    """Whether the error quotes a value that is not a parameter's name."""
    return bool(quoted(failure.message)) and not framed_parameter(failure.message)


def default_fault(code: ErrorCode, error_class: ErrorClass) -> Fault:
    """Who can act on a failure of ``code`` and ``error_class``, the call aside."""
    if code in OF_THE_ARGUMENTS:
        return Fault.ARGUMENTS
    if code in OF_A_PERSON:
        return Fault.PERSON
    if code in OF_THE_TOOL:
        return Fault.TOOL if error_class is ErrorClass.PERMANENT else Fault.BACKEND
    return Fault.BACKEND if error_class is ErrorClass.TRANSIENT else Fault.PERSON


def fault_of(classification: Classification) -> Fault:
    """The classification's fault; its code's default for one recorded without it."""
    if classification.fault is not None:
        return classification.fault
    return default_fault(classification.code, classification.error_class)


def with_fault(
    classification: Classification,
    failure: ToolFailure,
    arguments: Mapping[str, JSONValue],
    parameters: Iterable[str] = (),
) -> Classification:
    """``classification`` with who can act on it and the parameter it is about, read from
    the call (its ``arguments``; ``parameters``: those the tool's schema names). A class a
    manifest's rule decided stays."""
    code, error_class = classification.code, classification.error_class
    by_manifest = classification.rule.startswith(MANIFEST_RULE)
    parsing, without = PARSING_RULES.get(classification.rule, ("", None))
    evidence = None
    if code in OF_THE_ARGUMENTS or code in EVIDENCE_DECIDES or code in STRONG_EVIDENCE_DECIDES:
        evidence = argument_evidence(
            failure,
            arguments,
            parameters,
            about_values=code is ErrorCode.INVALID_INPUT,
            parsing=parsing,
        )
    if by_manifest or classification.fault is not None:  # the rule decided who can act
        fault = classification.fault or default_fault(code, error_class)
        parameter = evidence.parameter if evidence and fault is Fault.ARGUMENTS else ""
        return _set(classification, fault, parameter)
    if parsing and (evidence is None or not evidence.strong):
        assert without is not None
        return _set(without, default_fault(without.code, without.error_class), "")
    if classification.rule == VALUE_ERROR and evidence is None and _quotes_a_value(failure):
        # It quotes a value the call never gave: one the tool read elsewhere (its backend's).
        return _set(VALUE_OF_THE_TOOL, Fault.TOOL, "")
    if evidence is not None and _decides(code, evidence):
        return Classification(
            ErrorClass.PERMANENT, code, classification.rule, Fault.ARGUMENTS, evidence.parameter
        )
    fault = default_fault(code, error_class)
    parameter = evidence.parameter if evidence is not None and fault is Fault.ARGUMENTS else ""
    return _set(classification, fault, parameter)


def _decides(code: ErrorCode, evidence: Evidence) -> bool:
    """Whether ``evidence`` makes a failure of ``code`` the arguments'."""
    if code in OF_THE_ARGUMENTS or code in EVIDENCE_DECIDES:
        return True
    return code in STRONG_EVIDENCE_DECIDES and evidence.strong


def _set(classification: Classification, fault: Fault, parameter: str) -> Classification:
    if classification.fault is fault and classification.parameter == parameter:
        return classification
    error_class, code, rule = classification.error_class, classification.code, classification.rule
    return Classification(error_class, code, rule, fault, parameter)
