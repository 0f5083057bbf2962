# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""Failure -> classification: normalize the cause, then let the manifest override.

Normalization reads what executors really send, the most specific evidence first:

1. the executor's own code;
2. a phrase of the message that overrides whatever else the failure says ("You exceeded
   your current quota" arrives as a 429, "API rate limit exceeded" as a 403, "Tool 'x'
   not found" as a 404, "Request too large" as a 429 with "rate_limit_exceeded" in it),
   and a 429 the message quotes ("Error code: 429 - ...");
3. what the API's error body says (``api_code``, then the phrases of ``api_message``:
   errord.decide.classify.api), where it says more than the status: a 400 whose body
   says "Bad credentials" is a credential;
4. the exception's type name, or the service's error code quoted in the message
   ("An error occurred (ThrottlingException) ..."): AWS sends throttling, expired
   tokens and missing resources as HTTP 400, the name says more than the status;
5. the HTTP status, else one the message quotes where the text says it is one ("HTTP
   503", "status code: 404", "502 Bad Gateway", "Error code: 500 - {...}", see
   ``status``): "processed 401 rows" or "req 462" quote none;
6. a built-in exception of the tool's own code, by its exact name (errord.decide.classify
   .families): a bug (KeyError, AttributeError...), a value that did not parse
   (ValueError, json.JSONDecodeError), an errno;
7. a phrase of the message that names one cause ("deadlock detected", "Name or service
   not known", "Parameter 'query' cannot be empty"), where no status said otherwise;
8. a gRPC status name in the message ("status = StatusCode.UNAVAILABLE");
9. a generic word of the message ("timed out", "not found", "invalid");
10. what an MCP server says of a tool of its that raised ("Error executing tool"), and
    the DB-API exception class's default (IntegrityError, OperationalError...);

else UNKNOWN. Each code has a default class: timeouts, connection faults, rate limits,
unavailable services and unknown errors are transient; everything the caller got wrong,
that does not exist, or that the tool's own code got wrong, is permanent. A rule carries
its own class where recovery needs another one: an exhausted quota or credit balance is
RATE_LIMITED but permanent (waiting does not refill it), and a TLS set-up error is
CONNECTION but permanent (a retry meets the same certificate). The first manifest rule
matching the failure overrides the class;
a rule's ``message`` pattern reads the same first SEARCHED_CHARS characters, run by RE2 in
linear time (errord.decide.manifest.ClassificationRule), so no manifest pattern can stall
a decision.
Every result names the rule that decided, such as ``default:message:quota_exhausted``.
Who can act on the failure, and on which parameter, is settled after it
(errord.decide.classify.fault), from the call itself.

The rules are written and searched as ``rules`` says; the phrases of messages sit
in ``phrases``, exception types and status codes in ``codes``, the forms
that quote a status in ``status``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from errord_client._classify.api import api_code_verdict
from errord_client._classify.codes import (
    EXCEPTION_TYPES,
    GRPC_STATUS_CODES,
    HTTP_STATUS_CODES,
    HTTP_STATUS_FAULTS,
)
from errord_client._classify.families import builtin_family, default_family, is_builtin_family
from errord_client._classify.phrases import LAST_PHRASES, OVERRIDING_PHRASES, PHRASES, WORDS
from errord_client._classify.rules import (
    DEFAULT_CLASSES,
    PERMANENT,
    SEARCHED_CHARS,
    Rule,
    Tier,
    literal_first,
    rule,
    searchable,
    verdict,
)
from errord_client._classify.status import quoted_http_status
from errord_client.classify_model import Classification, ErrorClass, ErrorCode, ToolFailure

__all__ = [
    "DEFAULT_CLASSES",
    "ERROR_CODE_TIER",
    "EXCEPTION_TYPES",
    "EXCEPTION_TYPE_TIER",
    "GRPC_STATUS_CODES",
    "HTTP_STATUS_CODES",
    "OVERRIDING_PHRASES",
    "OVERRIDING_TIER",
    "PHRASES",
    "PHRASE_TIER",
    "SEARCHED_CHARS",
    "WORDS",
    "WORD_TIER",
    "OverrideRule",
    "Rule",
    "Tier",
    "classify",
    "http_status_code",
    "normalize",
    "rule",
    "searchable",
    "service_error_code",
]

OVERRIDING_TIER = Tier(OVERRIDING_PHRASES, "message")
EXCEPTION_TYPE_TIER = Tier(EXCEPTION_TYPES, "exception_type")
ERROR_CODE_TIER = Tier(EXCEPTION_TYPES, "error_code")
PHRASE_TIER = Tier(PHRASES, "message")
API_OVERRIDING_TIER = Tier(OVERRIDING_PHRASES, "api_message")
API_PHRASE_TIER = Tier(PHRASES, "api_message")
WORD_TIER = Tier(WORDS, "message")
LAST_TIER = Tier(LAST_PHRASES, "message")

# Case-sensitive: "StatusCode.UNAVAILABLE", "14 UNAVAILABLE: ...", "status": "NOT_FOUND".
GRPC_STATUS = re.compile("|".join(literal_first(rf"\b{name}\b") for name in GRPC_STATUS_CODES))
GRPC_VERDICTS = {
    name: verdict(code, f"default:grpc_status:{name}") for name, code in GRPC_STATUS_CODES.items()
}
# "An error occurred (Code)" or "api error Code:", written to start with the literal the two
# share, which the engine finds fastest.
SERVICE_ERROR_CODE = re.compile(r" error(?:(?<=An error) occurred \((\w+)\)|(?<=api error) (\w+):)")

CODE_VERDICTS = {code: verdict(code, f"default:code:{code.value}") for code in ErrorCode}
UNKNOWN_VERDICT = verdict(ErrorCode.UNKNOWN, "default:unknown")


def normalize(failure: ToolFailure) -> Classification:
    """The failure's default classification: its code, the class of the rule that found
    it (the code's default class unless the rule carries its own), and that rule."""
    if failure.code is not None and failure.code is not ErrorCode.UNKNOWN:
        return CODE_VERDICTS[failure.code]
    found = _normalized(failure)
    fault = HTTP_STATUS_FAULTS.get(failure.http_status or 0)
    if fault is not None and found.fault is not fault:  # the status says who, whatever else
        return Classification(PERMANENT, found.code, found.rule, fault)
    return found


def _normalized(failure: ToolFailure) -> Classification:
    message = failure.message[:SEARCHED_CHARS]
    text = searchable(message)
    exception_type = failure.exception_type
    return (
        OVERRIDING_TIER.first_match(text)
        or api_verdict(failure)
        or exception_type_verdict(exception_type)
        or ERROR_CODE_TIER.first_match(searchable(service_error_code(message)))
        or http_status_verdict(failure.http_status, "default:http_status")
        or http_status_verdict(quoted_http_status(text), "default:message:http_status")
        or builtin_family(exception_type, message)
        or PHRASE_TIER.first_match(text)
        or grpc_status_verdict(message)
        or WORD_TIER.first_match(text)
        or LAST_TIER.first_match(text)
        or default_family(exception_type)
        or UNKNOWN_VERDICT
    )


def api_verdict(failure: ToolFailure) -> Classification | None:
    """What the API's error body says, before the status: its own code, else the phrases
    of its message (errord.decide.classify.api)."""
    found = api_code_verdict(failure.api_code)
    if found is not None or not failure.api_message:
        return found
    text = searchable(failure.api_message)
    return API_OVERRIDING_TIER.first_match(text) or API_PHRASE_TIER.first_match(text)


def exception_type_verdict(exception_type: str) -> Classification | None:
    """The substring rules of exception types, but for the built-in exceptions and the
    parsing errors the families read by their exact names (errord.decide.classify.families)."""
    if not exception_type or is_builtin_family(exception_type):
        return None
    return EXCEPTION_TYPE_TIER.first_match(searchable(exception_type))


def service_error_code(message: str) -> str:
    """The error code a service quoted in the message, such as botocore's
    ``An error occurred (ThrottlingException) when calling ...``."""
    match = SERVICE_ERROR_CODE.search(message)
    return match[match.lastindex or 0] if match else ""


def http_status_verdict(status: int | None, rule_prefix: str) -> Classification | None:
    code = None if status is None else http_status_code(status)
    if code is None:
        return None
    return verdict(code, f"{rule_prefix}:{status}")


def grpc_status_verdict(message: str) -> Classification | None:
    match = GRPC_STATUS.search(message)
    return None if match is None else GRPC_VERDICTS[match[0]]


def http_status_code(status: int) -> ErrorCode | None:
    """The code an HTTP status implies: the table, else any 4xx is the caller's fault."""
    if status in HTTP_STATUS_CODES:
        return HTTP_STATUS_CODES[status]
    if 400 <= status < 500:
        return ErrorCode.INVALID_INPUT
    if 500 <= status < 600:
        return ErrorCode.UNKNOWN
    return None


class OverrideRule(Protocol):
    """A manifest's classification rule, as ``classify`` reads it
    (errord.decide.manifest.ClassificationRule, which reads the tiers' bounds)."""

    @property
    def error_class(self) -> ErrorClass: ...

    def matches(self, failure: ToolFailure, code: ErrorCode) -> bool:
        """True when every condition the rule states holds for ``failure``."""
        ...


def classify(
    failure: ToolFailure, rules: Sequence[OverrideRule] = (), tool: str = ""
) -> Classification:
    """Classify ``failure``: the first matching rule of ``tool``'s manifest, else the default."""
    default = normalize(failure)
    for index, manifest_rule in enumerate(rules):
        if manifest_rule.matches(failure, default.code):
            return Classification(
                manifest_rule.error_class,
                default.code,
                f"manifest:{tool}:classification[{index}]",
            )
    return default
