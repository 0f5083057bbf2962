# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""The phrases of a message that name a cause, in the three tiers ``classify`` reads them:
those that override the status and the exception type, those that name one cause, and
generic words. Patterns are lowercase regexes (see ``rules``).
"""

from __future__ import annotations

from errord_client._classify.rules import PERMANENT, Rule, rule
from errord_client._classify.status import quoted_status_forms
from errord_client.classify_model import ErrorCode

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
            *quoted_status_forms("4", "29"),
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
            r"invalid[ _](?:access[ _]|auth[ _]|bearer[ _])?token",
            "token is invalid",
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

# Read last, when nothing else in the message named a cause: an MCP server's tool raised
# (FastMCP prefixes what it raised with this), so the tool's own code is at fault.
LAST_PHRASES: tuple[Rule, ...] = (
    rule("tool_crashed", ("error executing tool",), ErrorCode.INTERNAL),
)
