"""What the model is told: what failed, and what to do next.

The guidance is structured so the model can correct its own call: a note on
what the failure is, then what to do, chosen by the verdict's action and the
kind of failure (errord.decide.texts.wording.Cause), then a line for each call waiting
on this one. For a call the model must correct, errord.decide.texts.layout adds
the parameters the tool requires with an example call built from its JSON
schema, or the tools that exist when it named one that does not; that module
lays the message out as text or JSON.
"""

from __future__ import annotations

import json

from errord.decide.model import Action, Correction, ErrorClass, ErrorCode, RefusalKind
from errord.decide.policy import DecisionContext, Verdict
from errord.decide.texts.layout import MessageFormat, ModelMessage, render
from errord.decide.texts.wording import Cause, Fields, cause, clip

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
_FAILED = (
    "Nothing can recover this call: do not call {tool} again in this turn. Continue without "
    "its result, and tell the user what could not be done."
)
_TOOL_FAILED = (
    "{tool} failed in its own code, not because of your call: calling it again the same "
    "way would fail the same way. Get what you need another way if you can, or continue "
    "without it and tell the user this step could not be done."
)
_NO_MORE_CORRECTIONS_OPTIONAL = (
    "Your call to {tool} was invalid again, and this call may not be corrected any more. "
    "Do not call {tool} again in this turn; it is optional, so continue without its result."
)
_TOLD_BEFORE = (
    "You were already told {told} in this turn how to correct this mistake in calls to "
    "{tool}, and made it again. Do not call {tool} again in this turn; "
)
_NO_BUDGET = (
    "Your call to {tool} was invalid, and the turn has no retries left to correct it. "
    "Do not call {tool} again in this turn; "
)
_ASK_THE_USER = "tell the user what information is missing or wrong."
_GO_ON_OPTIONAL = "it is optional, so continue without its result."

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
    (Action.FAIL, Cause.TRANSIENT): _FAILED,
    (Action.FAIL, Cause.PERMANENT): _FAILED,
    (Action.FAIL, Cause.AUTH): _FAILED,
    (Action.FAIL, Cause.CALLER): _NO_MORE_CORRECTIONS_OPTIONAL,
    (Action.FAIL, Cause.UNKNOWN_TOOL): _NO_MORE_CORRECTIONS_OPTIONAL,
    (Action.USE_ALTERNATIVE, Cause.TOOL): (
        "{tool} failed in its own code, not because of your call." + _SWITCH
    ),
    (Action.ESCALATE, Cause.TOOL): _TOOL_FAILED,
    (Action.FAIL, Cause.TOOL): _TOOL_FAILED,
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
    ErrorCode.INTERNAL: "The tool's own code failed: the error is in the tool, not in your call.",
}
"""What the failure is, said to the model before what to do about it."""

BREAKER_NOTE = "The tool is failing for every caller right now (its circuit breaker is open)."
"""What the failure is when the tool's circuit breaker refused the retry."""

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
    (Action.ESCALATE, "repeated"): _TOLD_BEFORE + _ASK_THE_USER,
    (Action.FAIL, "repeated"): _TOLD_BEFORE + _GO_ON_OPTIONAL,
    (Action.ESCALATE, "budget"): _NO_BUDGET + _ASK_THE_USER,
    (Action.FAIL, "budget"): _NO_BUDGET + _GO_ON_OPTIONAL,
    (Action.FAIL, "for_now"): (
        "{tool} is unavailable for now. Continue without its result, or call {tool} again "
        "later, not right away; tell the user what is missing if it matters."
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


ERROR_TYPES: dict[tuple[ErrorCode, ErrorClass], str] = {
    (code, error_class): f"{code.value} ({error_class.value.lower()})"
    for code in ErrorCode
    for error_class in ErrorClass
}
"""The error type the model reads of a failure it need not correct: ``TIMEOUT (transient)``."""


def llm_message(
    context: DecisionContext,
    verdict: Verdict,
    fields: Fields,
    correction: Correction | None,
    layout: MessageFormat,
) -> str:
    """The model's message on the decision, laid out as ``layout``."""
    guidance = fields.detail and LLM_GUIDANCE_DETAIL.get((verdict.action, fields.detail))
    guidance = guidance or LLM_GUIDANCE_ANY_CAUSE.get(verdict.action)
    if guidance is None:
        guidance_cause = Cause.TRANSIENT if verdict.action is Action.RETRY else fields.cause
        guidance = LLM_GUIDANCE[(verdict.action, guidance_cause)]
    lines = [_note(context, verdict), fields.fill(guidance)]
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
        else ERROR_TYPES[classification.code, classification.error_class]
    )
    message = ModelMessage(
        tool=context.report.tool,
        error_type=error_type,
        error=clip(context.report.error.message),
        action=verdict.action.value,
        guidance=tuple([line for line in lines if line]),
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
    if verdict.action in CORRECTING and _callers_fault(context):
        return ""
    return CODE_NOTES.get(context.classification.code, "")


CORRECTING = (Action.RETURN_TO_MODEL, Action.ESCALATE, Action.FAIL)
"""Actions whose message, for a call the model got wrong, speaks of the call itself."""


def _callers_fault(context: DecisionContext) -> bool:
    """The call itself is wrong: its arguments, or the tool it named."""
    return cause(context) in (Cause.CALLER, Cause.UNKNOWN_TOOL)
