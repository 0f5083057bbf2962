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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from msgspec import structs

from errord.decide.model import (
    Action,
    Consequence,
    ErrorClass,
    ErrorCode,
    JSONValue,
    Refusal,
    RefusalKind,
)
from errord.decide.policy import (
    DecisionContext,
    Verdict,
    probe_role,
    requested_delay,
    too_slow,
)

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

DEFAULT_POLICY_NOTE = " {tool} has no manifest; the default policy applied."

_TRANSIENT = "{tool} is failing for now; do not call it again in this turn.\n"
_PERMANENT = "Retrying cannot fix this; do not call {tool} again with these arguments.\n"
_CALLER = (
    "{schema_hints}Retrying the same call will fail again. Correct the arguments and call "
    "{tool} again, or ask the user for the missing information."
)
_SWITCH = "Use {alternative} instead, with equivalent arguments."
_GO_ON = "Continue without its result if you can, or tell the user it is unavailable."
_UNKNOWN_TOOL = (
    "There is no tool named {tool}. Available tools: {known_tools}.\n"
    "Call one of the available tools instead."
)

LLM_GUIDANCE: dict[tuple[Action, Cause], str] = {
    (Action.RETRY, Cause.TRANSIENT): (
        "The call will be retried as it is in {delay_ms} ms (attempt {next_attempt}); "
        "do not change it."
    ),
    (Action.USE_ALTERNATIVE, Cause.TRANSIENT): _TRANSIENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.PERMANENT): _PERMANENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.AUTH): _PERMANENT + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.CALLER): _CALLER + "\n" + _SWITCH,
    (Action.USE_ALTERNATIVE, Cause.UNKNOWN_TOOL): "There is no tool named {tool}.\n" + _SWITCH,
    (Action.ESCALATE, Cause.TRANSIENT): _TRANSIENT + _GO_ON,
    (Action.ESCALATE, Cause.PERMANENT): _PERMANENT + _GO_ON,
    (Action.ESCALATE, Cause.AUTH): _PERMANENT + _GO_ON,
    (Action.ESCALATE, Cause.CALLER): _CALLER,
    (Action.ESCALATE, Cause.UNKNOWN_TOOL): _UNKNOWN_TOOL,
}
"""What the model should do next, keyed on the action and the kind of failure."""

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

USER_MESSAGES: dict[tuple[Action, Cause | None], str] = {
    (Action.RETRY, None): "{tool} hit a temporary problem; trying again.",
    (Action.CONTINUE_PARTIAL, None): (
        "{tool} returned only part of its results; continuing with what it found."
    ),
    (Action.USE_DEFAULT, None): "{tool} is unavailable; continuing with a standard result.",
    (Action.SKIP, None): "{tool} is unavailable; continuing without it.",
    (Action.USE_ALTERNATIVE, None): "{tool} is not working right now; trying another way.",
    (Action.ESCALATE, Cause.TRANSIENT): "{tool} is unavailable right now; please try again later.",
    (Action.ESCALATE, Cause.PERMANENT): "{tool} cannot complete this request.",
    (Action.ESCALATE, Cause.UNKNOWN_TOOL): "{tool} cannot complete this request.",
    (Action.ESCALATE, Cause.AUTH): (
        "{tool} is not authorized right now; an administrator may need to check its access."
    ),
    (Action.ESCALATE, Cause.CALLER): (
        "The request to {tool} could not be completed as asked; details may need correcting."
    ),
}
"""What the user reads; None stands for any kind of failure."""

USER_MESSAGES_DETAIL: dict[tuple[Action, str], str] = {
    (Action.SKIP, "deadline"): "{tool} could not finish in time; continuing without it.",
    (Action.ESCALATE, "blocked"): (
        "{tool} is unavailable, and other steps of this request cannot go on without it."
    ),
}
"""What the user reads, where a variant of the action asks for other words."""

USER_MESSAGES_BREAKER_OPEN: dict[Action, str] = {
    Action.USE_ALTERNATIVE: "{tool} is temporarily unavailable; trying another way.",
    Action.ESCALATE: "{tool} is temporarily unavailable; please try again in a little while.",
}
"""What the user reads when the tool's circuit breaker keeps it from being retried."""

BREAKER_REFUSALS = frozenset({RefusalKind.BREAKER_OPEN, RefusalKind.BREAKER_PROBING})

PLACEHOLDERS: dict[str, JSONValue] = {
    "string": "<string>",
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "array": [],
    "object": {},
}


@dataclass(frozen=True, slots=True)
class Messages:
    reason: str
    llm: str
    user: str
    technical: str


def compose(context: DecisionContext, verdict: Verdict) -> Messages:
    fields = Fields(context, verdict)
    return Messages(
        reason(context, verdict, fields),
        llm_message(context, verdict, fields),
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
        return "alternatives" if context.manifest.alternatives else ""
    refusal = verdict.refusal
    if verdict.action is Action.SKIP and refusal and refusal.kind is RefusalKind.DEADLINE:
        return "deadline"
    return ""


def llm_message(context: DecisionContext, verdict: Verdict, fields: Fields) -> str:
    kind = context.classification.error_class.value.lower()
    lines = [f"Tool call failed: {fields['tool']} ({fields['code']}, {kind})."]
    if context.report.error.message:
        lines.append(f"Error: {clip(context.report.error.message)}")
    guidance = fields.detail and LLM_GUIDANCE_DETAIL.get((verdict.action, fields.detail))
    guidance = guidance or LLM_GUIDANCE_ANY_CAUSE.get(verdict.action)
    if guidance is None:
        guidance_cause = Cause.TRANSIENT if verdict.action is Action.RETRY else fields.cause
        guidance = LLM_GUIDANCE[(verdict.action, guidance_cause)]
    lines.append(guidance.format_map(fields))
    for each in verdict.consequences:
        lines.append(
            LLM_CONSEQUENCES[each.action].format(
                call_id=each.call_id,
                tool=each.tool,
                default_json=clip(json.dumps(each.default_value)),
            )
        )
    return "\n".join(lines)


def user_message(context: DecisionContext, verdict: Verdict, fields: Fields) -> str:
    detailed = fields.detail and USER_MESSAGES_DETAIL.get((verdict.action, fields.detail))
    if detailed:
        return detailed.format_map(fields)
    refusal = verdict.refusal
    if refusal is not None and refusal.kind in BREAKER_REFUSALS:
        breaker_text = USER_MESSAGES_BREAKER_OPEN.get(verdict.action)
        if breaker_text is not None:
            return breaker_text.format_map(fields)
    any_cause = (verdict.action, None)
    key = any_cause if any_cause in USER_MESSAGES else (verdict.action, fields.cause)
    return USER_MESSAGES[key].format_map(fields)


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
    "unusable_clause": lambda context, verdict: (
        f" no alternative is usable ({_unusable_alternatives(context, verdict)});"
        if context.manifest.alternatives
        else ""
    ),
    "known_tools": lambda context, verdict: (
        ", ".join(sorted(context.tool.known_tools)) or "none registered with errord"
    ),
    "schema_hints": lambda context, verdict: "".join(
        f"{line}\n" for line in schema_hints(context.manifest.parameters)
    ),
}


def schema_hints(schema: Mapping[str, JSONValue] | None) -> list[str]:
    """Required parameters and an example call, from the tool's JSON schema."""
    if not schema:
        return []
    required = [name for name in schema.get("required", []) if isinstance(name, str)]
    properties = schema.get("properties", {})
    if not required or not isinstance(properties, Mapping):
        return []
    example = {name: example_value(properties.get(name, {})) for name in required}
    return [
        f"Required parameters: {', '.join(required)}",
        f"Example arguments: {json.dumps(example, sort_keys=True)}",
    ]


def example_value(schema: JSONValue) -> JSONValue:
    if not isinstance(schema, Mapping):
        return "<value>"
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    return PLACEHOLDERS.get(kind, "<value>") if isinstance(kind, str) else "<value>"
