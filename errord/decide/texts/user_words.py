"""What the user is told: plain words, free of internals, by kind of trouble.

The user reads the tool's label ("flight search"), never its name, code or
limits. A retry, giving up, and a switch away from a tool whose circuit breaker
is open are worded by the kind of trouble; every other action by the
action alone, and the variants of an action that ask for other words by both. A
call that fails says what could not be done and that the rest of the turn goes on.
"""

from __future__ import annotations

from errord.decide.model import Action, ClosedEnum, ErrorClass, ErrorCode, RefusalKind
from errord.decide.policy import DecisionContext, Verdict, probe_role
from errord.decide.texts.wording import Fields


class Trouble(ClosedEnum):
    """The kinds of failure a user is told about in words of their own."""

    NETWORK = "network"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    AUTHENTICATION = "authentication"
    VALIDATION = "validation"
    CIRCUIT_OPEN = "circuit_open"
    UNAVAILABLE = "unavailable"
    NOT_FOUND = "not_found"
    UNSUPPORTED = "unsupported"
    INTERNAL = "internal"
    OTHER = "other"


TROUBLE_BY_CODE = {
    ErrorCode.CONNECTION: Trouble.NETWORK,
    ErrorCode.TIMEOUT: Trouble.TIMEOUT,
    ErrorCode.RATE_LIMITED: Trouble.RATE_LIMIT,
    ErrorCode.AUTH: Trouble.AUTHENTICATION,
    ErrorCode.INVALID_INPUT: Trouble.VALIDATION,
    ErrorCode.SCHEMA_VIOLATION: Trouble.VALIDATION,
    ErrorCode.TOOL_NOT_FOUND: Trouble.VALIDATION,
    ErrorCode.UNAVAILABLE: Trouble.UNAVAILABLE,
    ErrorCode.NOT_FOUND: Trouble.NOT_FOUND,
    ErrorCode.UNSUPPORTED: Trouble.UNSUPPORTED,
    ErrorCode.CIRCUIT_OPEN: Trouble.CIRCUIT_OPEN,
    ErrorCode.INTERNAL: Trouble.INTERNAL,
}
"""The trouble of a failure's code, unless a circuit breaker is the trouble; OTHER else."""

BREAKER_REFUSALS = frozenset({RefusalKind.BREAKER_OPEN, RefusalKind.BREAKER_PROBING})
"""Refusals that make the trouble CIRCUIT_OPEN, whatever the code."""

USER_RETRYING: dict[Trouble, str] = {
    Trouble.NETWORK: "Couldn't reach {label}; trying again.",
    Trouble.TIMEOUT: "{Label} is taking too long; trying again.",
    Trouble.RATE_LIMIT: "{Label} is busy; trying again shortly.",
    Trouble.CIRCUIT_OPEN: "{Label} is recovering from a problem; trying again shortly.",
}
"""What the user reads of a retry, by the trouble; USER_MESSAGES for any other."""

USER_GIVING_UP: dict[Trouble, str] = {
    Trouble.NETWORK: "Couldn't connect to {label}; please try again later.",
    Trouble.TIMEOUT: "{Label} didn't respond in time; please try again later.",
    Trouble.RATE_LIMIT: (
        "{Label} is getting too many requests right now; please try again in a few minutes."
    ),
    Trouble.AUTHENTICATION: (
        "{Label} isn't authorized right now; an administrator may need to check its access."
    ),
    Trouble.VALIDATION: (
        "The request to {label} couldn't be completed as asked; some details may need correcting."
    ),
    Trouble.CIRCUIT_OPEN: "{Label} is temporarily unavailable; please try again in a little while.",
    Trouble.UNAVAILABLE: "{Label} is temporarily unavailable; please try again later.",
}
"""What the user reads when errord gives up on a call someone can act on (ESCALATE), by
the trouble; for any other trouble, whether the failure is permanent decides."""

USER_FAILED_FOR_NOW: dict[Trouble, str] = {
    Trouble.NETWORK: "Couldn't reach {label} right now",
    Trouble.TIMEOUT: "{Label} didn't respond in time",
    Trouble.RATE_LIMIT: "{Label} is getting too many requests right now",
}
"""What could not be done, when the tool is only unavailable for now (FAIL), by the
trouble; "{Label} is temporarily unavailable" for any other."""

USER_FAILED: dict[Trouble, str] = {
    Trouble.VALIDATION: "The request to {label} couldn't be completed as asked",
    Trouble.NOT_FOUND: "{Label} couldn't find what was asked for",
    Trouble.UNSUPPORTED: "{Label} can't do what was asked",
    Trouble.INTERNAL: "{Label} ran into an internal error",
}
"""What could not be done, when nothing can recover the call (FAIL), by the trouble;
"{Label} couldn't complete its part of the request" for any other."""

FAILED_AND_GOING_ON = "; continuing with the rest of the request."
FAILED_AND_BLOCKING = ", and other steps of this request can't go on without it."
"""How the user's message of a FAIL ends: the rest of the turn goes on, or a required call
waits on this one."""

USER_MESSAGES: dict[Action, str] = {
    Action.RETRY: "{Label} hit a temporary problem; trying again.",
    Action.RETURN_TO_MODEL: "Adjusting the request to {label} and trying again.",
    Action.USE_ALTERNATIVE: "{Label} isn't working right now; trying another way.",
    Action.CONTINUE_PARTIAL: "{Label} returned only part of its results; continuing with those.",
    Action.USE_DEFAULT: "{Label} is unavailable; continuing with a standard result.",
    Action.SKIP: "{Label} is unavailable; continuing without it.",
}
"""What the user reads, in plain words and without internals: by the action, and for a
retry or an escalation by the kind of trouble."""

USER_MESSAGES_DETAIL: dict[tuple[Action, str], str] = {
    (Action.SKIP, "deadline"): "{Label} couldn't finish in time; continuing without it.",
    (Action.ESCALATE, "blocked"): (
        "{Label} is unavailable, and other steps of this request can't go on without it."
    ),
}
"""What the user reads, where a variant of the action asks for other words."""


def user_message(context: DecisionContext, verdict: Verdict, fields: Fields) -> str:
    """The user's message on the decision."""
    detailed = fields.detail and USER_MESSAGES_DETAIL.get((verdict.action, fields.detail))
    if detailed:
        return fields.fill(detailed)
    trouble = user_trouble(context, verdict)
    if verdict.action is Action.RETRY and trouble in USER_RETRYING:
        return fields.fill(USER_RETRYING[trouble])
    if verdict.action is Action.USE_ALTERNATIVE and trouble is Trouble.CIRCUIT_OPEN:
        return fields.fill("{Label} is temporarily unavailable; trying another way.")
    if verdict.action is Action.FAIL:
        return failed_message(verdict, trouble, fields, for_now=fields.detail == "for_now")
    if verdict.action is Action.ESCALATE:
        if trouble in USER_GIVING_UP:
            return fields.fill(USER_GIVING_UP[trouble])
        if context.classification.error_class is ErrorClass.PERMANENT:
            return fields.fill("{Label} can't complete this request.")
        return fields.fill("{Label} is unavailable right now; please try again later.")
    return fields.fill(USER_MESSAGES[verdict.action])


def failed_message(
    verdict: Verdict, trouble: Trouble, fields: Fields, *, for_now: bool = False
) -> str:
    """What could not be done (``for_now``: the tool is unavailable for now), and whether
    the rest of the turn goes on."""
    if for_now:
        what = USER_FAILED_FOR_NOW.get(trouble, "{Label} is temporarily unavailable")
    else:
        what = USER_FAILED.get(trouble, "{Label} couldn't complete its part of the request")
    blocking = any(each.action is Action.ESCALATE for each in verdict.consequences)
    return fields.fill(what + (FAILED_AND_BLOCKING if blocking else FAILED_AND_GOING_ON))


def user_trouble(context: DecisionContext, verdict: Verdict) -> Trouble:
    """The kind of trouble the user is told about."""
    refusal = verdict.refusal
    if refusal is not None and refusal.kind in BREAKER_REFUSALS:
        return Trouble.CIRCUIT_OPEN
    if probe_role(context, verdict):
        return Trouble.CIRCUIT_OPEN
    return TROUBLE_BY_CODE.get(context.classification.code, Trouble.OTHER)
