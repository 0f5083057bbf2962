"""The texts of a decision: why, for the model, for the user, for the logs.

Every text is a template chosen from a table, keyed on the verdict's action and
its refusal (or the failure's kind where the action alone does not say enough),
and filled from one set of fields. The model's message is structured so it can
self-correct (seed 003): what failed, whether retrying can help, which
parameters the tool requires with an example call built from its JSON schema,
or which tools exist when it named one that does not. The user's message is
plain and free of internals.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from msgspec import structs

from errord.decide.model import (
    Action,
    Consequence,
    Correction,
    ErrorClass,
    ErrorCode,
    Refusal,
    RefusalKind,
)
from errord.decide.model_message import MessageFormat, ModelMessage, render
from errord.decide.policy import (
    DecisionContext,
    Verdict,
    probe_role,
    requested_delay,
    too_slow,
)
from errord.decide.summary import label

ECHOED_ERROR_LENGTH = 2_000
"""Characters of the tool's error message repeated in the model's and the log's text."""


class Cause(Enum):
    """What kind of failure a message speaks about."""

    TRANSIENT = "transient"
    PERMANENT = "permanent"
    CALLER = "caller"
    """The call's own arguments are wrong."""
    AUTH = "auth"
    UNKNOWN_TOOL = "unknown_tool"


CAUSES_BY_CODE = {
    ErrorCode.INVALID_INPUT: Cause.CALLER,
    ErrorCode.SCHEMA_VIOLATION: Cause.CALLER,
    ErrorCode.AUTH: Cause.AUTH,
    ErrorCode.TOOL_NOT_FOUND: Cause.UNKNOWN_TOOL,
}

REFUSALS: dict[RefusalKind, str] = {
    RefusalKind.PERMANENT_ERROR: (
        "the error is permanent ({code}), so retrying the same call cannot help"
    ),
    RefusalKind.NOT_IDEMPOTENT: "{tool} is not idempotent, so a retry could repeat its effect",
    RefusalKind.ATTEMPTS_EXHAUSTED: "attempt {attempt} reached the limit of {limit} attempts",
    RefusalKind.RETRY_TIME_EXHAUSTED: (
        "{spent_ms} ms of retry delay already granted plus a {wait_ms} ms delay would exceed "
        "the {limit_ms} ms retry time limit"
    ),
    RefusalKind.RETRY_AFTER_TOO_LONG: (
        "{tool} asked to wait {wait_ms} ms before a retry, longer than the {limit_ms} ms "
        "its retry policy allows (max_retry_after_ms)"
    ),
    RefusalKind.BREAKER_OPEN: "the circuit breaker of {tool} is open; {half_opens}",
    RefusalKind.DEADLINE: "{deadline_clause}",
    RefusalKind.RETRY_BUDGET_SPENT: (
        "the turn's retry budget is spent: its calls were granted {granted} of the {limit} "
        "retries it allows"
    ),
    RefusalKind.BREAKER_PROBING: (
        "the circuit breaker of {tool} is half-open and its one probe is in flight for up to "
        "{wait_ms} ms more"
    ),
}
"""Why a retry was refused: the clause after "No retry:"."""

REASONS: dict[tuple[Action, str], str] = {
    (Action.RETRY, ""): (
        "Transient error ({code}); retrying in {delay_ms} ms, attempt {next_attempt} of {limit}."
    ),
    (Action.RETRY, "asked"): (
        "Transient error ({code}); retrying in {delay_ms} ms as {tool} asked, "
        "attempt {next_attempt} of {limit}."
    ),
    (Action.RETRY, "probe"): (
        "Transient error ({code}); the circuit breaker of {tool} is half-open and this retry "
        "in {delay_ms} ms is its one probe, attempt {next_attempt} of {limit}."
    ),
    (Action.RETRY, "awaits_probe"): (
        "Transient error ({code}); the circuit breaker of {tool} is half-open and its one "
        "probe is in flight: retrying in {delay_ms} ms, when the probe's outcome is due, "
        "attempt {next_attempt} of {limit}."
    ),
    (Action.USE_ALTERNATIVE, ""): "No retry: {refusal}; using the alternative tool {alternative}.",
    (Action.CONTINUE_PARTIAL, ""): (
        "No retry: {refusal}; continuing with the partial result {tool} returned."
    ),
    (Action.USE_DEFAULT, ""): "No retry: {refusal}; using the default result of {tool}.",
    (Action.SKIP, ""): "No retry: {refusal}; the call is optional, so it is skipped.",
    (Action.SKIP, "deadline"): (
        "No retry: {refusal};{unusable_clause} the turn is out of time, so the call is "
        "skipped and the turn goes on with the results it has."
    ),
    (Action.ESCALATE, ""): "No retry: {refusal}; no alternative tool, escalating.",
    (Action.ESCALATE, "blocked"): (
        "No retry: {refusal}; the call is optional, but {escalated_for} needs its result "
        "and is required, with no default: escalating."
    ),
    (Action.ESCALATE, "alternatives"): (
        "No retry: {refusal}; no alternative is usable ({unusable_alternatives}), escalating."
    ),
}
"""The decision's reason, keyed on the action and on a detail of it (``reason_detail``)."""
REASONS[(Action.RETURN_TO_MODEL, "")] = (
    "No retry: {refusal}; the model caused it, so it gets the error back to correct its "
    "call ({correction_number} of {correction_limit})."
)
REASONS[(Action.ESCALATE, "corrections")] = (
    "No retry: {refusal}; the model already had its {correction_limit} corrections of this "
    "call, escalating."
)

DEFAULT_POLICY_NOTE = " {tool} has no manifest; the default policy applied."

_TRANSIENT = "Do not call {tool} again in this turn."
_PERMANENT = "Retrying cannot fix this; do not call {tool} again with these arguments."
_SWITCH = " Use {alternative} instead, with equivalent arguments."
_GO_ON = " Continue without its result if you can, or tell the user it is unavailable."
_CORRECT = (
    "Your call to {tool} was invalid, and the same call would fail again. Correct it and "
    "call {tool} again{corrections_clause}."
)
_NO_MORE_CORRECTIONS = (
    "Your call to {tool} was invalid again, and this call may not be corrected any more. "
    "Do not call {tool} again in this turn; tell the user what information is missing or "
    "wrong."
)
_UNKNOWN_TOOL = "There is no tool named {tool}. Call one of the available tools instead."

LLM_GUIDANCE: dict[tuple[Action, Cause], str] = {
    (Action.RETRY, Cause.TRANSIENT): (
        "The call will be retried as it is in {delay_ms} ms (attempt {next_attempt}); "
        "do not change it."
    ),
    (Action.RETURN_TO_MODEL, Cause.CALLER): _CORRECT,
    (Action.RETURN_TO_MODEL, Cause.PERMANENT): _CORRECT,
    (Action.RETURN_TO_MODEL, Cause.UNKNOWN_TOOL): _UNKNOWN_TOOL,
    (Action.USE_ALTERNATIVE, Cause.TRANSIENT): _TRANSIENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.PERMANENT): _PERMANENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.AUTH): _PERMANENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.CALLER): _PERMANENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.UNKNOWN_TOOL): _SWITCH.strip(),
    (Action.ESCALATE, Cause.TRANSIENT): _TRANSIENT + _GO_ON,
    (Action.ESCALATE, Cause.PERMANENT): _PERMANENT + _GO_ON,
    (Action.ESCALATE, Cause.AUTH): _PERMANENT + _GO_ON,
    (Action.ESCALATE, Cause.CALLER): _NO_MORE_CORRECTIONS,
    (Action.ESCALATE, Cause.UNKNOWN_TOOL): _NO_MORE_CORRECTIONS,
}
"""What the model should do next, keyed on the action and the kind of failure."""

CODE_NOTES: dict[ErrorCode, str] = {
    ErrorCode.TIMEOUT: "The tool did not answer in time.",
    ErrorCode.CONNECTION: "The tool could not be reached.",
    ErrorCode.RATE_LIMITED: "The tool's service is limiting how often it may be called.",
    ErrorCode.UNAVAILABLE: "The tool's service is temporarily unavailable.",
    ErrorCode.AUTH: (
        "The tool's credentials or permissions were refused; only an administrator can fix that."
    ),
    ErrorCode.NOT_FOUND: "What the call asked for does not exist.",
    ErrorCode.UNSUPPORTED: "The tool does not support what the call asked for.",
    ErrorCode.UNKNOWN: "The tool failed while running.",
}
"""What the failure is, said to the model before what to do about it."""

BREAKER_NOTE = "The tool is failing for every caller right now (its circuit breaker is open)."

LLM_GUIDANCE_ANY_CAUSE: dict[Action, str] = {
    Action.CONTINUE_PARTIAL: (
        "{tool} returned only part of its result. Use what it returned, and say that it may "
        "be incomplete."
    ),
    Action.USE_DEFAULT: (
        "{tool} is unavailable; its default result stands in for it: {default_json}"
    ),
    Action.SKIP: "{tool} is unavailable and optional. Continue without its result.",
}
"""What the model should do next after a decision that does not depend on the cause."""

LLM_GUIDANCE_DETAIL: dict[tuple[Action, str], str] = {
    (Action.SKIP, "deadline"): (
        "{tool} could not finish before the turn's deadline. Continue with the results you "
        "have, and say that this one is missing."
    ),
}
"""What the model should do next, where a variant of the action (``reason_detail``)
asks for other words."""

LLM_CONSEQUENCES: dict[Action, str] = {
    Action.SKIP: "Do not make call {call_id} ({tool}): it needs this call's result.",
    Action.USE_DEFAULT: (
        "Call {call_id} ({tool}) needs this call's result: use its default result instead: "
        "{default_json}"
    ),
    Action.ESCALATE: "Call {call_id} ({tool}) needs this call's result and cannot run without it.",
}
"""What the model should do about each call waiting on this one."""

CONSEQUENCE_REASONS: dict[Action, str] = {
    Action.SKIP: "needs the result of {blocked_by}, which has none{out_of_time}; skipped",
    Action.USE_DEFAULT: (
        "needs the result of {blocked_by}, which has none{out_of_time}; its default result "
        "stands in"
    ),
    Action.ESCALATE: (
        "needs the result of {blocked_by}, which has none, and is required, with no default: "
        "escalated"
    ),
}
"""Why a call waiting on the decided one gets its consequence."""


class Trouble(Enum):
    """The kinds of failure a user is told about in words of their own (seed 000)."""

    NETWORK = "network"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    AUTHENTICATION = "authentication"
    VALIDATION = "validation"
    CIRCUIT_OPEN = "circuit_open"
    UNAVAILABLE = "unavailable"
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
}

USER_RETRYING: dict[Trouble, str] = {
    Trouble.NETWORK: "Couldn't reach {label}; trying again.",
    Trouble.TIMEOUT: "{Label} is taking too long; trying again.",
    Trouble.RATE_LIMIT: "{Label} is busy; trying again shortly.",
    Trouble.CIRCUIT_OPEN: "{Label} is recovering from a problem; trying again shortly.",
}
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

BREAKER_REFUSALS = frozenset({RefusalKind.BREAKER_OPEN, RefusalKind.BREAKER_PROBING})


@dataclass(frozen=True, slots=True)
class Messages:
    reason: str
    llm: str
    user: str
    technical: str


def compose(
    context: DecisionContext,
    verdict: Verdict,
    correction: Correction | None = None,
    layout: MessageFormat = MessageFormat.TEXT,
) -> Messages:
    fields = Fields(context, verdict)
    fields.correction = correction
    return Messages(
        reason(context, verdict, fields),
        llm_message(context, verdict, fields, correction, layout),
        user_message(context, verdict, fields),
        technical(context),
    )


def cause(context: DecisionContext) -> Cause:
    code = context.classification.code
    if code in CAUSES_BY_CODE:
        return CAUSES_BY_CODE[code]
    if context.classification.error_class is ErrorClass.PERMANENT:
        return Cause.PERMANENT
    return Cause.TRANSIENT


def reason(context: DecisionContext, verdict: Verdict, fields: Fields) -> str:
    """The policy's reason, and whether the tool's own manifest or the default applied."""
    text = REASONS[(verdict.action, fields.detail)].format_map(fields)
    if verdict.consequences:
        text += f" Calls waiting on it: {_consequences_clause(verdict.consequences)}."
    if context.tool.default_policy:
        text += DEFAULT_POLICY_NOTE.format_map(fields)
    return text


def _consequences_clause(consequences: tuple[Consequence, ...]) -> str:
    said = {Action.SKIP: "skipped", Action.USE_DEFAULT: "given its default"}
    return ", ".join(
        f"{each.call_id} {said.get(each.action, 'blocked (required, no default)')}"
        for each in consequences
    )


def consequence_reasons(context: DecisionContext, verdict: Verdict) -> tuple[Consequence, ...]:
    """The verdict's consequences, each with its reason (unless the policy gave one)."""
    refusal = verdict.refusal
    out_of_time = refusal is not None and refusal.kind is RefusalKind.DEADLINE
    return tuple(
        each
        if each.reason
        else structs.replace(
            each,
            reason=CONSEQUENCE_REASONS[each.action].format(
                blocked_by=each.blocked_by,
                out_of_time="; the turn is out of time" if out_of_time else "",
            ),
        )
        for each in verdict.consequences
    )


def reason_detail(context: DecisionContext, verdict: Verdict) -> str:
    """Which variant of the action's reason applies: for RETRY, whether it is a half-open
    breaker's probe, waits for it, or waits as the tool asked; for ESCALATE, whether the
    tool has alternatives (none usable) or a required call waits on this one; for SKIP,
    whether the turn is out of time."""
    if verdict.action is Action.RETRY:
        role = probe_role(context, verdict)
        return role or ("asked" if requested_delay(context) is not None else "")
    if verdict.action is Action.ESCALATE:
        if verdict.escalated_for:
            return "blocked"
        if verdict.corrections_spent:
            return "corrections"
        return "alternatives" if context.manifest.alternatives else ""
    refusal = verdict.refusal
    if verdict.action is Action.SKIP and refusal and refusal.kind is RefusalKind.DEADLINE:
        return "deadline"
    return ""


def llm_message(
    context: DecisionContext,
    verdict: Verdict,
    fields: Fields,
    correction: Correction | None,
    layout: MessageFormat,
) -> str:
    guidance = fields.detail and LLM_GUIDANCE_DETAIL.get((verdict.action, fields.detail))
    guidance = guidance or LLM_GUIDANCE_ANY_CAUSE.get(verdict.action)
    if guidance is None:
        guidance_cause = Cause.TRANSIENT if verdict.action is Action.RETRY else fields.cause
        guidance = LLM_GUIDANCE[(verdict.action, guidance_cause)]
    lines = [_note(context, verdict), guidance.format_map(fields)]
    for each in verdict.consequences:
        lines.append(
            LLM_CONSEQUENCES[each.action].format(
                call_id=each.call_id,
                tool=each.tool,
                default_json=clip(json.dumps(each.default_value)),
            )
        )
    classification = context.classification
    error_type = (
        correction.kind
        if correction is not None
        else f"{classification.code.value} ({classification.error_class.value.lower()})"
    )
    message = ModelMessage(
        tool=context.report.tool,
        error_type=error_type,
        error=clip(context.report.error.message),
        action=verdict.action.value,
        guidance=tuple(line for line in lines if line),
        correction=correction,
    )
    return render(message, layout)


def correction_message(tool: str, correction: Correction, layout: MessageFormat) -> str:
    """The model's message for a call found invalid before it ran (ValidateCall)."""
    guidance = _CORRECT.format(tool=tool, corrections_clause="")
    message = ModelMessage(
        tool=tool,
        error_type=correction.kind,
        error=correction.message,
        action=Action.RETURN_TO_MODEL.value,
        guidance=(guidance,),
        correction=correction,
    )
    return render(message, layout)


def _note(context: DecisionContext, verdict: Verdict) -> str:
    """What the failure is, when the guidance alone does not say."""
    refusal = verdict.refusal
    if refusal is not None and refusal.kind is RefusalKind.BREAKER_OPEN:
        return BREAKER_NOTE
    if verdict.action in (Action.RETURN_TO_MODEL, Action.ESCALATE) and fields_caller(context):
        return ""
    return CODE_NOTES.get(context.classification.code, "")


def fields_caller(context: DecisionContext) -> bool:
    return cause(context) in (Cause.CALLER, Cause.UNKNOWN_TOOL)


def user_message(context: DecisionContext, verdict: Verdict, fields: Fields) -> str:
    detailed = fields.detail and USER_MESSAGES_DETAIL.get((verdict.action, fields.detail))
    if detailed:
        return detailed.format_map(fields)
    trouble = user_trouble(context, verdict)
    if verdict.action is Action.RETRY and trouble in USER_RETRYING:
        return USER_RETRYING[trouble].format_map(fields)
    if verdict.action is Action.USE_ALTERNATIVE and trouble is Trouble.CIRCUIT_OPEN:
        return "{Label} is temporarily unavailable; trying another way.".format_map(fields)
    if verdict.action in (Action.ESCALATE, Action.FAIL):
        if trouble in USER_GIVING_UP:
            return USER_GIVING_UP[trouble].format_map(fields)
        if context.classification.error_class is ErrorClass.PERMANENT:
            return "{Label} can't complete this request.".format_map(fields)
        return "{Label} is unavailable right now; please try again later.".format_map(fields)
    return USER_MESSAGES[verdict.action].format_map(fields)


def user_trouble(context: DecisionContext, verdict: Verdict) -> Trouble:
    refusal = verdict.refusal
    if refusal is not None and refusal.kind in BREAKER_REFUSALS:
        return Trouble.CIRCUIT_OPEN
    if probe_role(context, verdict):
        return Trouble.CIRCUIT_OPEN
    return TROUBLE_BY_CODE.get(context.classification.code, Trouble.OTHER)


def technical(context: DecisionContext) -> str:
    report, error = context.report, context.report.error
    parts = [f"{report.tool} attempt {report.attempt} failed"]
    if error.http_status is not None:
        parts.append(f"HTTP {error.http_status}")
    if error.exception_type:
        parts.append(error.exception_type)
    if error.message:
        parts.append(clip(error.message))
    verdict = context.classification
    return f"{': '.join(parts)} [{verdict.code.value}, {verdict.error_class.value}, {verdict.rule}]"


def clip(text: str, limit: int = ECHOED_ERROR_LENGTH) -> str:
    """``text``, cut to ``limit`` characters with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def milliseconds(seconds: float) -> int:
    return round(seconds * 1000)


class Fields(dict[str, object]):
    """The values templates may name; each is worked out when a template first asks."""

    def __init__(self, context: DecisionContext, verdict: Verdict) -> None:
        super().__init__(tool=context.report.tool, code=context.classification.code.value)
        self.context = context
        self.verdict = verdict
        self.cause = cause(context)
        self.detail = reason_detail(context, verdict)
        """Which variant of the action the texts speak of."""
        self.correction: Correction | None = None

    def __missing__(self, name: str) -> object:
        value = FIELDS[name](self.context, self.verdict)
        self[name] = value
        return value


def _refusal_text(context: DecisionContext, verdict: Verdict) -> str:
    refusal = verdict.refusal
    assert refusal is not None, "a verdict other than RETRY carries its refusal"
    return REFUSALS[refusal.kind].format_map(refusal_fields(context, refusal))


def refusal_fields(context: DecisionContext, refusal: Refusal) -> dict[str, object]:
    return {
        "tool": context.report.tool,
        "code": context.classification.code.value,
        "attempt": refusal.attempt,
        "limit": int(refusal.limit),
        "limit_ms": milliseconds(refusal.limit),
        "spent_ms": milliseconds(refusal.spent),
        "wait_ms": milliseconds(refusal.wait),
        "granted": refusal.granted,
        "deadline_clause": _deadline_clause(context, refusal),
        "half_opens": _half_opens(context, refusal),
    }


def _half_opens(context: DecisionContext, refusal: Refusal) -> str:
    breaker = context.breaker.state
    if breaker.half_opens_at is None:
        return "an operator forced it open, until it is reset"
    since = ""
    if breaker.opened_at is not None:
        since = f" (opened at {breaker.opened_at.isoformat(timespec='milliseconds')})"
    return f"it half-opens in {milliseconds(refusal.wait)} ms{since}"


def _deadline_clause(context: DecisionContext, refusal: Refusal) -> str:
    if refusal.kind is not RefusalKind.DEADLINE:
        return ""
    if refusal.limit <= 0:
        return "the turn's deadline has passed"
    timeout = milliseconds(context.manifest.timeout)
    return (
        f"a retry in {milliseconds(refusal.wait)} ms with {context.report.tool}'s {timeout} ms "
        f"timeout could end after the turn's deadline, {milliseconds(refusal.limit)} ms away"
    )


def _unusable_alternatives(context: DecisionContext, verdict: Verdict) -> str:
    failed, open_tools = context.call.failed_tools, context.breaker.open_tools
    slow = too_slow(context)
    described = []
    for tool in context.manifest.alternatives:
        if tool in failed:
            described.append(f"{tool} failed on this call")
        elif tool in open_tools:
            described.append(f"{tool} has an open circuit breaker")
        elif tool in slow:
            described.append(f"{tool} could not finish before the turn's deadline")
    return "; ".join(described)


FIELDS: dict[str, Callable[[DecisionContext, Verdict], object]] = {
    "refusal": _refusal_text,
    "delay_ms": lambda context, verdict: milliseconds(verdict.delay),
    "next_attempt": lambda context, verdict: context.report.attempt + 1,
    "limit": lambda context, verdict: context.manifest.retry_policy.max_attempts,
    "alternative": lambda context, verdict: verdict.alternative_tool,
    "unusable_alternatives": _unusable_alternatives,
    "default_json": lambda context, verdict: clip(
        json.dumps(context.plan.default.value if context.plan.default else None)
    ),
    "escalated_for": lambda context, verdict: verdict.escalated_for,
    "label": lambda context, verdict: label(context.report.tool),
    "Label": lambda context, verdict: _capitalized(label(context.report.tool)),
    "correction_number": lambda context, verdict: context.call.corrections + 1,
    "correction_limit": lambda context, verdict: correction_limit(context, verdict),
    "corrections_clause": lambda context, verdict: _corrections_clause(context, verdict),
    "unusable_clause": lambda context, verdict: (
        f" no alternative is usable ({_unusable_alternatives(context, verdict)});"
        if context.manifest.alternatives
        else ""
    ),
    "known_tools": lambda context, verdict: (
        ", ".join(sorted(context.tool.known_tools)) or "none registered with errord"
    ),
}


def correction_limit(context: DecisionContext, verdict: Verdict) -> int:
    """The corrections the policy allows a call, as this decision shows it."""
    if verdict.action is Action.RETURN_TO_MODEL:
        return context.call.corrections + 1 + verdict.corrections_left
    return context.call.corrections


def _corrections_clause(context: DecisionContext, verdict: Verdict) -> str:
    left = verdict.corrections_left
    if left == 0:
        return " (this is the last correction allowed for this call)"
    return f" ({left} more correction{'s' if left > 1 else ''} allowed for this call)"


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]
