"""The vocabulary every text of a decision shares: the fields its templates name.

A decision's texts (errord.decide.texts.reasons, errord.decide.texts.guidance and
errord.decide.texts.user_words) are templates filled by one ``Fields``: the refusal
("No retry: ..."), delays in milliseconds, the tool's label, the alternatives
that were not usable, the corrections left. The fields that stay the same for
every failure of one tool with one code (the tool, its label, the code) are
filled in once per template, tool and code (``prepare``); a decision works out
only the fields its templates still name. Also here: the kind of failure a text
speaks about (``cause``) and the variant of the action it speaks of
(``reason_detail``). This module imports none of the texts' modules.
"""

from __future__ import annotations

import functools
import json
import string
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import NamedTuple, TypeVar

from errord.decide.classify import fault_of
from errord.decide.model import (
    Action,
    ClosedEnum,
    ErrorClass,
    ErrorCode,
    Fault,
    Refusal,
    RefusalKind,
)
from errord.decide.policy import (
    DecisionContext,
    Pacing,
    Verdict,
    own_request,
    probe_role,
    since_failed,
    too_slow,
)
from errord.decide.texts.summary import label

ECHOED_ERROR_LENGTH = 2_000
"""Characters of the tool's error message repeated in the model's and the log's text."""


class Cause(ClosedEnum):
    """What kind of failure a message speaks about."""

    TRANSIENT = "transient"
    PERMANENT = "permanent"
    CALLER = "caller"
    """The call's own arguments are wrong."""
    AUTH = "auth"
    UNKNOWN_TOOL = "unknown_tool"
    TOOL = "tool"
    """The tool's own code failed, not the call."""


def cause(context: DecisionContext) -> Cause:
    """The kind of failure, from who can act on it (errord.decide.classify.fault)."""
    classification = context.classification
    code = classification.code
    if code is ErrorCode.TOOL_NOT_FOUND:
        return Cause.UNKNOWN_TOOL
    fault = fault_of(classification)
    if fault is Fault.ARGUMENTS or (code is ErrorCode.SCHEMA_VIOLATION and context.problems):
        return Cause.CALLER
    if fault is Fault.TOOL and code is ErrorCode.INTERNAL:
        return Cause.TOOL
    if code is ErrorCode.AUTH:
        return Cause.AUTH
    if classification.error_class is ErrorClass.PERMANENT:
        return Cause.PERMANENT
    return Cause.TRANSIENT


def reason_detail(context: DecisionContext, verdict: Verdict) -> str:
    """Which variant of the action's reason applies: for RETRY, whether it is a half-open
    breaker's probe, waits for it or for an open breaker to half-open, waits as the tool
    asked (a rate limit's wait past the call's max_attempts too), or waits for the tool's
    rate-limit window to end; for ESCALATE and FAIL,
    whether a required call waits on this one, or why the model may not correct its call
    again (errord.decide.policy.verdict.CorrectionsSpent), or (FAIL) whether the tool is only
    unavailable for now, or (ESCALATE) whether the tool has alternatives, none usable;
    for SKIP, whether the turn is out of time."""
    if verdict.action is Action.RETRY:
        role = probe_role(context, verdict)
        if role:
            return role
        window = context.breaker.window
        if own_request(context) is not None:
            waits = "asked"
        elif window is not None and window.holds(context.now):
            waits = "held"
        else:
            return ""
        return waits if context.retries_left else f"{waits}_past_limit"
    if verdict.action in GIVING_UP:
        if verdict.escalated_for:
            return "blocked"
        if verdict.corrections_spent is not None:
            return verdict.corrections_spent.value
        if verdict.action is Action.FAIL:
            transient = context.classification.error_class is ErrorClass.TRANSIENT
            return "for_now" if transient else ""
        return "alternatives" if context.manifest.alternatives else ""
    refusal = verdict.refusal
    if verdict.action is Action.SKIP and refusal and refusal.kind is RefusalKind.DEADLINE:
        return "deadline"
    return ""


GIVING_UP = (Action.ESCALATE, Action.FAIL)
"""Actions that end a call without a result and without a way on for it."""


def clip(text: str, limit: int = ECHOED_ERROR_LENGTH) -> str:
    """``text``, cut to ``limit`` characters with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def milliseconds(seconds: float) -> int:
    return round(seconds * 1000)


class Fields:
    """Fills the templates of one decision's texts."""

    __slots__ = ("cause", "context", "detail", "verdict")

    def __init__(self, context: DecisionContext, verdict: Verdict) -> None:
        self.context = context
        self.verdict = verdict
        self.cause = cause(context)
        self.detail = reason_detail(context, verdict)
        """Which variant of the action the texts speak of."""

    def fill(self, template: str) -> str:
        """``template`` with the fields it names (FIELDS, and the tool's) filled in."""
        return filled(template, self.context, FIELDS, self.verdict)


About = TypeVar("About")


def filled(
    template: str,
    context: DecisionContext,
    fields: Mapping[str, Callable[[DecisionContext, About], object]],
    about: About,
) -> str:
    """``template`` filled for the decision on ``context``: the fields that stay the same
    for its tool and code as prepared once, each other field it names by ``fields``, from
    the context and ``about`` (the verdict, or the refusal)."""
    text, varying = prepare(template, context.report.tool, context.classification.code)
    if not varying:
        return text
    return text.format_map({name: fields[name](context, about) for name in varying})


class Prepared(NamedTuple):
    """A template with the fields of one tool and code filled in."""

    text: str
    """The template so filled; a template in turn (braces doubled) if ``varying``."""
    varying: tuple[str, ...]
    """The fields it still names, which differ between decisions."""


PREPARED_TEMPLATES = 4_096
"""Templates prepared for a tool and a code kept: executors may name any number of tools."""


@functools.lru_cache(maxsize=PREPARED_TEMPLATES)
def prepare(template: str, tool: str, code: ErrorCode) -> Prepared:
    """``template`` with the fields that are the same for every failure of ``tool`` with
    ``code`` filled in: ``tool``, ``label``, ``Label`` and ``code``."""
    said = label(tool)
    fixed = {"tool": tool, "label": said, "Label": _capitalized(said), "code": code.value}
    parsed = list(string.Formatter().parse(template))
    varying = tuple(
        dict.fromkeys(name for _, name, _, _ in parsed if name is not None and name not in fixed)
    )
    if not varying:
        return Prepared(template.format_map(fixed), ())
    parts = []
    for literal, name, spec, conversion in parsed:
        parts.append(_braces_doubled(literal))
        if name is None:
            continue
        if spec or conversion:
            raise ValueError(f"{template!r}: a field takes no conversion or format spec here")
        parts.append(_braces_doubled(fixed[name]) if name in fixed else f"{{{name}}}")
    return Prepared("".join(parts), varying)


def _braces_doubled(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


REFUSALS: dict[RefusalKind, str] = {
    RefusalKind.RETRIES_NEVER_FIX: (
        "retries fixed {recovered} of {tried} {bursts} of this error of {tool} recently "
        "(the failures of one outage or spell count once){last_failed_clause}"
    ),
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
        "retries it allows{corrected_clause}"
    ),
    RefusalKind.BREAKER_PROBING: (
        "the circuit breaker of {tool} is half-open and its one probe is in flight for up to "
        "{wait_ms} ms more"
    ),
}
"""Why a retry was refused: the clause after "No retry:"."""


def _refusal_text(context: DecisionContext, verdict: Verdict) -> str:
    refusal = verdict.refusal
    assert refusal is not None, "a verdict other than RETRY carries its refusal"
    return filled(REFUSALS[refusal.kind], context, REFUSAL_FIELDS, refusal)


REFUSAL_FIELDS: dict[str, Callable[[DecisionContext, Refusal], object]] = {
    "attempt": lambda context, refusal: refusal.attempt,
    "limit": lambda context, refusal: int(refusal.limit),
    "limit_ms": lambda context, refusal: milliseconds(refusal.limit),
    "spent_ms": lambda context, refusal: milliseconds(refusal.spent),
    "wait_ms": lambda context, refusal: milliseconds(refusal.wait),
    "granted": lambda context, refusal: refusal.granted,
    "corrected_clause": lambda context, refusal: _corrected_clause(refusal.corrected),
    "recovered": lambda context, refusal: round(refusal.recovered),
    "tried": lambda context, refusal: round(refusal.tried),
    "bursts": lambda context, refusal: _bursts(refusal.tried),
    "last_failed_clause": lambda context, refusal: _last_failed_clause(context),
    "deadline_clause": lambda context, refusal: _deadline_clause(context, refusal),
    "half_opens": lambda context, refusal: _half_opens(context, refusal),
}
"""How each field of a refusal's clause (beyond ``tool`` and ``code``) is worked out."""


def _bursts(count: float) -> str:
    return "burst" if round(count) == 1 else "bursts"


def _last_failed_clause(context: DecisionContext) -> str:
    """When a retry of the error last failed, and that nothing fixed the tool since."""
    evidence = context.memory.get(Action.RETRY.value)
    if evidence is None or evidence.failed_at is None:
        return ""
    at = evidence.failed_at.isoformat(timespec="seconds")
    return (
        f"; the last failed at {at}, and {context.report.tool} has not succeeded "
        "nor had its breaker reset since"
    )


def _corrected_clause(corrected: int) -> str:
    """Which of the retries a turn was granted were corrections of the model's calls."""
    if corrected == 0:
        return ""
    if corrected == 1:
        return " (1 of them a correction of the model's call)"
    return f" ({corrected} of them corrections of the model's calls)"


def _half_opens(context: DecisionContext, refusal: Refusal) -> str:
    breaker = context.breaker.state
    if breaker.half_opens_at is None:
        return "an operator forced it open, until it is reset"
    opened = breaker.opened_at
    since = "" if opened is None else _opened_at(opened, opened.utcoffset())
    return f"it half-opens in {milliseconds(refusal.wait)} ms{since}"


@functools.lru_cache(maxsize=256)
def _opened_at(at: datetime, offset: timedelta | None) -> str:
    """Every decision while a breaker is open says when it opened: formatted once per
    moment and ``offset`` (equal moments in other time zones are written otherwise)."""
    return f" (opened at {at.isoformat(timespec='milliseconds')})"


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


def _corrections_told(context: DecisionContext) -> int:
    """Times the model was handed this call's error, or this mistake in the turn: the more."""
    return max(context.call.corrections, context.turn.told)


def _correction_limit(context: DecisionContext, verdict: Verdict) -> int:
    """The corrections the policy allows a call, as this decision shows it."""
    if verdict.action is Action.RETURN_TO_MODEL:
        return _corrections_told(context) + 1 + verdict.corrections_left
    return context.call.corrections


def _corrections_clause(context: DecisionContext, verdict: Verdict) -> str:
    left = verdict.corrections_left
    if left == 0:
        return " (this is the last correction allowed for this call)"
    return f" ({left} more correction{'s' if left > 1 else ''} allowed for this call)"


UNRECOVERABLE_WORDS = {
    ErrorCode.NOT_FOUND: "what the call asked for does not exist",
    ErrorCode.UNSUPPORTED: "{tool} does not support what the call asked for",
    ErrorCode.INTERNAL: "{tool}'s own code failed, not the call",
    ErrorCode.SCHEMA_VIOLATION: "{tool} answered something that does not match its schema",
}
"""Why nobody can recover a call that FAILs within its turn, by its code."""


def _unrecoverable(context: DecisionContext) -> str:
    words = UNRECOVERABLE_WORDS.get(context.classification.code, "the call cannot be recovered")
    return words.format(tool=context.report.tool)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


FIELDS: dict[str, Callable[[DecisionContext, Verdict], object]] = {
    "refusal": _refusal_text,
    "delay_ms": lambda context, verdict: milliseconds(verdict.delay),
    "next_attempt": lambda context, verdict: context.attempts_run + 1,
    "limit": lambda context, verdict: context.manifest.retry_policy.max_attempts,
    "alternative": lambda context, verdict: verdict.alternative_tool,
    "alternative_evidence": lambda context, verdict: _alternative_evidence(context, verdict),
    "unusable_alternatives": _unusable_alternatives,
    "default_json": lambda context, verdict: clip(
        json.dumps(context.plan.default.value if context.plan.default else None)
    ),
    "escalated_for": lambda context, verdict: verdict.escalated_for,
    "correction_number": lambda context, verdict: _corrections_told(context) + 1,
    "told": lambda context, verdict: _times(context.turn.told),
    "unrecoverable": lambda context, verdict: _unrecoverable(context),
    "correction_limit": _correction_limit,
    "corrections_clause": _corrections_clause,
    "memory_clause": lambda context, verdict: _memory_clause(context, verdict),
    "window_until": lambda context, verdict: _window_until(context),
    "unusable_clause": lambda context, verdict: (
        f" no alternative is usable ({_unusable_alternatives(context, verdict)});"
        if context.manifest.alternatives
        else ""
    ),
}
"""How each field a template may name (beyond ``prepare``'s) is worked out."""


PACING_WORDS = {Pacing.SHORTER: "halved", Pacing.LONGER: "doubled"}


def _memory_clause(context: DecisionContext, verdict: Verdict) -> str:
    """What episodic memory said of retrying this error, when it knows something: how it
    changed the delay, or why its verdict that retries never fix it does not hold now."""
    evidence = context.memory.get(Action.RETRY.value)
    if evidence is None or round(evidence.told) == 0:
        return ""
    recovered, tried = round(evidence.succeeded), round(evidence.told)
    read = (
        f" Retries fixed {recovered} of {tried} {_bursts(tried)} of this error of "
        f"{context.report.tool} recently"
    )
    weakened = since_failed(context, evidence) if evidence.succeeded < 0.5 else None
    paced = PACING_WORDS[verdict.paced] if verdict.paced is not None else ""
    if weakened is None:
        if paced:
            return f"{read}, so the backoff is {paced}."
        return f"{read} (the failures of one outage or spell count once)."
    lifted = f"{read}, but {_since(context, weakened)}: that evidence stops no retry"
    return f"{lifted}; the backoff is {paced}." if paced else f"{lifted}."


def _since(context: DecisionContext, weakened: str) -> str:
    """What the tool did after the last failed retry of the error, in words."""
    tool, history = context.report.tool, context.history
    if weakened == "succeeded":
        assert history.succeeded_at is not None
        at = history.succeeded_at.isoformat(timespec="seconds")
        return f"{tool} succeeded at {at}, after the last of them"
    assert history.reset_at is not None
    at = history.reset_at.isoformat(timespec="seconds")
    return f"an operator reset the breaker of {tool} at {at}, after the last of them"


def _window_until(context: DecisionContext) -> str:
    window = context.breaker.window
    return "" if window is None else window.until.isoformat(timespec="milliseconds")


def _alternative_evidence(context: DecisionContext, verdict: Verdict) -> str:
    """What episodic memory knows of the chosen alternative for this error, if anything."""
    evidence = context.memory.get(f"{Action.USE_ALTERNATIVE.value}:{verdict.alternative_tool}")
    if evidence is None or round(evidence.told) == 0:
        return ""
    recovered, tried = round(evidence.succeeded), round(evidence.told)
    return f", which recovered {recovered} of {tried} similar failures recently"
