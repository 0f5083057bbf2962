"""Failure -> classification: normalize the cause, then let the manifest override.

Normalization reads what executors really send, the most specific evidence first:

1. the executor's own code;
2. a phrase of the message that overrides whatever else the failure says ("You exceeded
   your current quota" arrives as a 429, "API rate limit exceeded" as a 403, "Tool 'x'
   not found" as a 404, "Request too large" as a 429 with "rate_limit_exceeded" in it);
3. the exception's type name, or the service's error code quoted in the message
   ("An error occurred (ThrottlingException) ..."): AWS sends throttling, expired
   tokens and missing resources as HTTP 400, the name says more than the status;
4. the HTTP status;
5. a phrase of the message that names one cause ("deadlock detected", "Name or service
   not known", "Parameter 'query' cannot be empty"), where no status said otherwise;
6. a gRPC status name in the message ("status = StatusCode.UNAVAILABLE");
7. a generic word of the message ("timed out", "not found", "invalid"), then an HTTP
   status quoted in it ("502 Bad Gateway");

else UNKNOWN. Each code has a default class: timeouts, connection faults, rate limits,
unavailable services and unknown errors are transient; everything the caller got wrong,
or that does not exist, is permanent. A rule carries its own class where recovery needs
another one: an exhausted quota or credit balance is RATE_LIMITED but permanent (waiting
does not refill it), and a TLS set-up error is CONNECTION but permanent (a retry meets
the same certificate). The first manifest rule matching the failure overrides the class.
Every result names the rule that decided, such as ``default:message:quota_exhausted``.

Rules read the first ``SEARCHED_CHARS`` (4,096) characters of the message and of the
exception type: the evidence sits at the start of an error message, and a longer one must
not cost more time. They read them lowercased, once per failure (``searchable``), so the
patterns are written in lowercase and compiled without ``re.IGNORECASE``, which makes
every search several times slower. Each tier finds its rules with one pattern (``Tier``):
most failures name none of a tier's rules, and that costs one search, not one per rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from errord.decide.model import Classification, ErrorClass, ErrorCode, ToolFailure
from errord.manifests.model import ClassificationRule

TRANSIENT, PERMANENT = ErrorClass.TRANSIENT, ErrorClass.PERMANENT

DEFAULT_CLASSES: dict[ErrorCode, ErrorClass] = {
    ErrorCode.TIMEOUT: TRANSIENT,
    ErrorCode.CONNECTION: TRANSIENT,
    ErrorCode.RATE_LIMITED: TRANSIENT,
    ErrorCode.UNAVAILABLE: TRANSIENT,
    ErrorCode.UNKNOWN: TRANSIENT,
    ErrorCode.INVALID_INPUT: PERMANENT,
    ErrorCode.AUTH: PERMANENT,
    ErrorCode.NOT_FOUND: PERMANENT,
    ErrorCode.UNSUPPORTED: PERMANENT,
    ErrorCode.TOOL_NOT_FOUND: PERMANENT,
    ErrorCode.SCHEMA_VIOLATION: PERMANENT,
}

SEARCHED_CHARS = 4096
"""How many characters of a message, or of an exception type, the rules read."""

IGNORECASE_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
"""The characters re.IGNORECASE matches to an ASCII letter that str.lower() does not turn
into it: U+0130 (capital I with dot above, which it turns into two characters), U+0131
(dotless i) and U+017F (long s)."""


def verdict(
    code: ErrorCode, rule_name: str, error_class: ErrorClass | None = None
) -> Classification:
    return Classification(error_class or DEFAULT_CLASSES[code], code, rule_name)


def searchable(text: str) -> str:
    """What the rules read of ``text``: its first SEARCHED_CHARS characters, lowercased
    so that a lowercase pattern matches exactly where re.IGNORECASE would."""
    text = text[:SEARCHED_CHARS]
    return text.lower() if text.isascii() else text.translate(IGNORECASE_FOLDS).lower()


class Rule(NamedTuple):
    """A cause, the patterns that name it, and the class to give it when not the code's own."""

    name: str
    alternatives: tuple[str, ...]
    """Lowercase regexes, any of which names the cause; each starts with a literal character."""
    code: ErrorCode
    error_class: ErrorClass | None = None

    def verdict(self, source: str) -> Classification:
        return verdict(self.code, f"default:{source}:{self.name}", self.error_class)


def rule(
    name: str, alternatives: Sequence[str], code: ErrorCode, error_class: ErrorClass | None = None
) -> Rule:
    return Rule(name, tuple(map(literal_first, alternatives)), code, error_class)


LITERAL_START = re.compile(r"(?:\\b)?\w(?![*+?{])")


def literal_first(alternative: str) -> str:
    r"""``alternative`` written to start with a literal character, so that the regex engine
    skips every position where that character is not: a leading ``\b`` moves behind the
    first character as ``(?<!\w\w)``, which says the same of a word character."""
    if not LITERAL_START.match(alternative) or re.compile(alternative).groups:
        raise ValueError(
            f"{alternative!r} must start with a word character or \\b, capture nothing"
        )
    if alternative.startswith(r"\b"):
        return alternative[2] + r"(?<!\w\w)" + alternative[3:]
    return alternative


# Phrases that override the status and the exception: the first match wins, so a specific
# phrase comes before a generic one (a TPM "Request too large" has "rate_limit_exceeded" in
# it; GitHub's rate limit message mentions authenticated requests).
OVERRIDING_PHRASES: tuple[Rule, ...] = (
    rule(
        "tool_not_found",
        (
            r"\btools?\s+['\"`]?[\w.:-]+['\"`]?\s+(?:was\s+)?(?:not\s+found|does\s+not\s+exist"
            r"|is\s+not\s+(?:available|registered|defined))",
            r"\bunknown\s+tool\b",
            r"\binvalid\s+tool\s+name",
            r"\bno\s+(?:such\s+)?tool\s+(?:named|called|found)",
            r"\bis\s+not\s+a\s+valid\s+tool\b",
            "tool_not_found",
        ),
        ErrorCode.TOOL_NOT_FOUND,
    ),
    rule(
        "too_large",
        (
            "context[ _]?length",
            "context[ _]window",
            "maximum context",
            "prompt is too long",
            "too_long",
            "input is too long",
            "request[ _]too[ _]large",
            "too large for",
            "reduce the length",
            "maximum allowed number of",
        ),
        ErrorCode.INVALID_INPUT,
    ),
    rule(
        "quota_exhausted",
        (
            "exceeded your current quota",
            "insufficient_quota",
            "check your plan and billing",
            "credit balance is too low",
            "billing_hard_limit",
            "insufficient (?:credits|funds)",
            "spend(?:ing)? limit",
        ),
        ErrorCode.RATE_LIMITED,
        PERMANENT,
    ),
    rule(
        "rate_limit",
        (
            "rate[ _-]?limit",
            "rate exceeded",
            "request rate",
            "too many (?:requests|tokens)",
            "throttl",
            "slow ?down",
            "quota",
            "resource[ _]?exhausted",
            "throughput exceed",
            "provisioned throughput",
            r"\b429\b",
        ),
        ErrorCode.RATE_LIMITED,
    ),
    rule(
        "overloaded",
        ("overload", "server ?busy", "too many (?:connections|clients)", "connection slots"),
        ErrorCode.UNAVAILABLE,
    ),
    rule(
        "tls_setup",
        (
            "certificate[ _]verify[ _]failed",
            "self[ -]signed certificate",
            "certificate has expired",
            "hostname mismatch",
            "wrong[ _]version[ _]number",
            "unable to get local issuer",
        ),
        ErrorCode.CONNECTION,
        PERMANENT,
    ),
)

# Phrases that name one cause, read after the status: "401 Unauthorized" with a 401 stays
# default:http_status:401.
PHRASES: tuple[Rule, ...] = (
    rule(
        "contention",
        ("deadlock", "database (?:table )?is locked", "could not serialize"),
        ErrorCode.UNAVAILABLE,
    ),
    rule(
        "dns",
        (
            "name or service not known",
            "failure in name resolution",
            "nodename nor servname",
            "getaddrinfo",
            "could not resolve",
            "failed to resolve",
            "no address associated",
            "enotfound",
            "eai_again",
        ),
        ErrorCode.CONNECTION,
    ),
    rule(
        "auth",
        (
            "authenticat",
            "unauthori[sz]ed",
            "forbidden",
            r"api[ _-]?key\b(?!=)",
            "access[ _]?denied",
            "permission",
            "not authorized",
            "credential",
            "expired[ _]?token",
            "token[ _]expired",
            "security token",
            "access key",
            "request signature",
            "signature ?does ?not",
            "invalid_auth",
            "not_authed",
            "token_revoked",
            "missing_scope",
            "account_inactive",
        ),
        ErrorCode.AUTH,
    ),
    rule(
        "invalid_parameter",
        (
            r"\bparam(?:eter)?s?\b",
            "argument",
            r"\bis required\b",
            "required (?:field|property)",
            "field required",
            "missing required",
            r"\bno \w+ provided",
            r"must be (?:an? )?\w+, got",
            "cannot be empty",
            "must not be empty",
            "is not of type",
            "is not one of",
            "additional properties",
            "than the (?:minimum|maximum)",
            "validation error",
            "input should be",
        ),
        ErrorCode.INVALID_INPUT,
    ),
)

# Exception type names, and service error codes quoted in messages (AWS's are type names).
EXCEPTION_TYPES: tuple[Rule, ...] = (
    rule("tls_setup", ("certverification", "certificate"), ErrorCode.CONNECTION, PERMANENT),
    rule("timeout", ("timeout", "timedout", "deadlineexceeded"), ErrorCode.TIMEOUT),
    rule(
        "rate_limit",
        (
            "ratelimit",
            "toomanyrequests",
            "throttl",
            "resourceexhausted",
            "throughputexceeded",
            "limitexceeded",
            "quotaexceeded",
            "slowdown",
        ),
        ErrorCode.RATE_LIMITED,
    ),
    rule(
        "auth",
        (
            "auth",
            "permission",
            "forbidden",
            "credential",
            "accessdenied",
            "unauthori[sz]ed",
            "token",
            "signature",
        ),
        ErrorCode.AUTH,
    ),
    rule(
        "connection",
        (
            "connect",
            "brokenpipe",
            "network",
            "socket",
            "gaierror",
            "disconnect",
            "remoteprotocol",
            "proxy",
            "ssl",
        ),
        ErrorCode.CONNECTION,
    ),
    rule("not_found", ("notfound", "nosuch"), ErrorCode.NOT_FOUND),
    rule("unsupported", ("notimplemented", "unsupported", "unimplemented"), ErrorCode.UNSUPPORTED),
    rule(
        "unavailable",
        ("unavailable", "overload", "badgateway", "serverbusy"),
        ErrorCode.UNAVAILABLE,
    ),
    rule("contention", ("deadlock", "serialization", "conflict"), ErrorCode.UNAVAILABLE),
    rule(
        "validation",
        (
            "validation",
            "valueerror",
            "typeerror",
            "invalid",
            "badrequest",
            "unprocessable",
            "malformed",
        ),
        ErrorCode.INVALID_INPUT,
    ),
)

# Generic words, read only when nothing more specific decided.
WORDS: tuple[Rule, ...] = (
    rule("timeout", ("time[sd]?[ _-]?out(?!put)", "deadline[ _]?exceeded"), ErrorCode.TIMEOUT),
    rule(
        "unavailable",
        ("unavailable", "bad gateway", "server is down", r"\bbusy\b"),
        ErrorCode.UNAVAILABLE,
    ),
    rule(
        "connection",
        (
            "connection (?:reset|refused|aborted|closed|error|lost)",
            "lost connection",
            "closed connection",
            "unreachable",
            "no route to host",
            "broken pipe",
            "disconnected",
            "connect call failed",
            "cannot (?:connect|establish)",
            "could not (?:connect|establish)",
            "can't (?:connect|establish)",
            "unable to (?:connect|establish)",
            "failed to (?:connect|establish)",
            "eof occurred",
            r"\bssl\b",
            "handshake",
        ),
        ErrorCode.CONNECTION,
    ),
    rule("not_found", ("not[ _]?found", "does(?: not|n't) exist", "no such"), ErrorCode.NOT_FOUND),
    rule(
        "unsupported",
        (
            "not supported",
            "unsupported",
            "not implemented",
            "unimplemented",
            "method not allowed",
        ),
        ErrorCode.UNSUPPORTED,
    ),
    rule(
        "invalid_input",
        (
            r"\binvalid\b",
            "malformed",
            "bad request",
            "validation",
            "unprocessable",
            "not a valid",
            "does not match",
            "syntax error",
            "violates",
            "constraint failed",
        ),
        ErrorCode.INVALID_INPUT,
    ),
)


class Tier:
    """Rules read from one source in priority order, and one pattern that finds any of
    them: a text that names none of the rules costs one search, not one per rule."""

    def __init__(self, rules: Sequence[Rule], source: str) -> None:
        self.rules = tuple(rules)
        self.patterns = tuple(re.compile("|".join(r.alternatives)) for r in self.rules)
        self.verdicts = tuple(r.verdict(source) for r in self.rules)
        self.any_rule, self.rule_of_group = any_of(self.rules)

    def first_match(self, text: str) -> Classification | None:
        """The verdict of the first rule that occurs in ``text``, a ``searchable`` text.

        The leftmost occurrence of any rule is that of the first rule occurring there (the
        alternatives keep the rules' order); an earlier rule can only occur further on."""
        found = self.any_rule.search(text) if text else None
        if found is None:
            return None
        index = self.rule_of_group[found.lastindex]
        after = found.start() + 1
        for earlier in range(index):
            if self.patterns[earlier].search(text, after):
                return self.verdicts[earlier]
        return self.verdicts[index]


def any_of(rules: Sequence[Rule]) -> tuple[re.Pattern[str], dict[int | None, int]]:
    """A pattern of every alternative of ``rules``, each closed by an empty group, and the
    index of the rule each group closes. The alternatives are grouped by their first
    character, in order, so that the engine tries at each position only those that start
    with its character: ``a(?:pi key()|uth()|...)|t(?:imeout()|...)``."""
    by_first: dict[str, list[tuple[str, int]]] = {}
    for index, candidate in enumerate(rules):
        for alternative in candidate.alternatives:
            by_first.setdefault(alternative[0], []).append((alternative[1:], index))
    branches = []
    rule_of_group: dict[int | None, int] = {}
    for first, rests in by_first.items():
        branches.append(first + "(?:" + "|".join(rest + "()" for rest, _ in rests) + ")")
        for _, index in rests:
            rule_of_group[len(rule_of_group) + 1] = index
    return re.compile("|".join(branches)), rule_of_group


OVERRIDING_TIER = Tier(OVERRIDING_PHRASES, "message")
EXCEPTION_TYPE_TIER = Tier(EXCEPTION_TYPES, "exception_type")
ERROR_CODE_TIER = Tier(EXCEPTION_TYPES, "error_code")
PHRASE_TIER = Tier(PHRASES, "message")
WORD_TIER = Tier(WORDS, "message")


HTTP_STATUS_CODES: dict[int, ErrorCode] = {
    400: ErrorCode.INVALID_INPUT,
    401: ErrorCode.AUTH,
    403: ErrorCode.AUTH,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.UNSUPPORTED,
    406: ErrorCode.UNSUPPORTED,
    408: ErrorCode.TIMEOUT,
    409: ErrorCode.UNAVAILABLE,  # a concurrent request holds the resource: SDKs retry it
    410: ErrorCode.NOT_FOUND,
    413: ErrorCode.INVALID_INPUT,  # the same request will be as large next time
    415: ErrorCode.UNSUPPORTED,
    422: ErrorCode.INVALID_INPUT,
    423: ErrorCode.UNAVAILABLE,  # locked, for now
    424: ErrorCode.UNAVAILABLE,  # a dependency of the service failed
    425: ErrorCode.UNAVAILABLE,  # too early: retry once the handshake is done
    429: ErrorCode.RATE_LIMITED,
    499: ErrorCode.UNKNOWN,  # the client closed the request: says nothing of the cause
    500: ErrorCode.UNKNOWN,
    501: ErrorCode.UNSUPPORTED,
    502: ErrorCode.UNAVAILABLE,
    503: ErrorCode.UNAVAILABLE,
    504: ErrorCode.TIMEOUT,
    505: ErrorCode.UNSUPPORTED,
    # Cloudflare's origin errors, and Anthropic's overload
    520: ErrorCode.UNAVAILABLE,
    521: ErrorCode.UNAVAILABLE,
    522: ErrorCode.TIMEOUT,
    523: ErrorCode.UNAVAILABLE,
    524: ErrorCode.TIMEOUT,
    525: ErrorCode.UNAVAILABLE,
    526: ErrorCode.UNAVAILABLE,
    529: ErrorCode.UNAVAILABLE,
    530: ErrorCode.UNAVAILABLE,
}

GRPC_STATUS_CODES: dict[str, ErrorCode] = {
    "CANCELLED": ErrorCode.UNKNOWN,
    "UNKNOWN": ErrorCode.UNKNOWN,
    "INVALID_ARGUMENT": ErrorCode.INVALID_INPUT,
    "DEADLINE_EXCEEDED": ErrorCode.TIMEOUT,
    "NOT_FOUND": ErrorCode.NOT_FOUND,
    "ALREADY_EXISTS": ErrorCode.INVALID_INPUT,
    "PERMISSION_DENIED": ErrorCode.AUTH,
    "RESOURCE_EXHAUSTED": ErrorCode.RATE_LIMITED,
    "FAILED_PRECONDITION": ErrorCode.INVALID_INPUT,
    "ABORTED": ErrorCode.UNAVAILABLE,  # a concurrency conflict: retry (gRPC status codes)
    "OUT_OF_RANGE": ErrorCode.INVALID_INPUT,
    "UNIMPLEMENTED": ErrorCode.UNSUPPORTED,
    "INTERNAL": ErrorCode.UNKNOWN,
    "UNAVAILABLE": ErrorCode.UNAVAILABLE,
    "DATA_LOSS": ErrorCode.UNKNOWN,
    "UNAUTHENTICATED": ErrorCode.AUTH,
}

# Case-sensitive: "StatusCode.UNAVAILABLE", "14 UNAVAILABLE: ...", "status": "NOT_FOUND".
GRPC_STATUS = re.compile("|".join(literal_first(rf"\b{name}\b") for name in GRPC_STATUS_CODES))
GRPC_VERDICTS = {
    name: verdict(code, f"default:grpc_status:{name}") for name, code in GRPC_STATUS_CODES.items()
}
# "An error occurred (Code)" or "api error Code:", written to start with the literal the two
# share, which the engine finds fastest.
SERVICE_ERROR_CODE = re.compile(r" error(?:(?<=An error) occurred \((\w+)\)|(?<=api error) (\w+):)")
# \b[45]\d\d\b, written to start with the characters the engine can skip to.
QUOTED_HTTP_STATUS = re.compile(r"[45](?<!\w\w)\d\d\b")

CODE_VERDICTS = {code: verdict(code, f"default:code:{code.value}") for code in ErrorCode}
UNKNOWN_VERDICT = verdict(ErrorCode.UNKNOWN, "default:unknown")


def normalize(failure: ToolFailure) -> Classification:
    """The failure's default classification: its code, the class of the rule that found
    it (the code's default class unless the rule carries its own), and that rule."""
    if failure.code is not None and failure.code is not ErrorCode.UNKNOWN:
        return CODE_VERDICTS[failure.code]
    message = failure.message[:SEARCHED_CHARS]
    text = searchable(message)
    return (
        OVERRIDING_TIER.first_match(text)
        or EXCEPTION_TYPE_TIER.first_match(searchable(failure.exception_type))
        or ERROR_CODE_TIER.first_match(searchable(service_error_code(message)))
        or http_status_verdict(failure.http_status, "default:http_status")
        or PHRASE_TIER.first_match(text)
        or grpc_status_verdict(message)
        or WORD_TIER.first_match(text)
        or quoted_http_status_verdict(message)
        or UNKNOWN_VERDICT
    )


def service_error_code(message: str) -> str:
    """The error code a service quoted in the message, such as botocore's
    ``An error occurred (ThrottlingException) when calling ...``."""
    match = SERVICE_ERROR_CODE.search(message)
    return match[match.lastindex or 0] if match else ""


def http_status_verdict(status: int | None, rule_prefix: str) -> Classification | None:
    code = None if status is None else http_status_code(status)
    return None if code is None else verdict(code, f"{rule_prefix}:{status}")


def grpc_status_verdict(message: str) -> Classification | None:
    match = GRPC_STATUS.search(message)
    return None if match is None else GRPC_VERDICTS[match[0]]


def quoted_http_status_verdict(message: str) -> Classification | None:
    match = QUOTED_HTTP_STATUS.search(message)
    if match is None:
        return None
    return http_status_verdict(int(match[0]), "default:message:http_status")


def http_status_code(status: int) -> ErrorCode | None:
    """The code an HTTP status implies: the table, else any 4xx is the caller's fault."""
    if status in HTTP_STATUS_CODES:
        return HTTP_STATUS_CODES[status]
    if 400 <= status < 500:
        return ErrorCode.INVALID_INPUT
    if 500 <= status < 600:
        return ErrorCode.UNKNOWN
    return None


def classify(
    failure: ToolFailure, rules: Sequence[ClassificationRule] = (), tool: str = ""
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
