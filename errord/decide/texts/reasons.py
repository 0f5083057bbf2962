"""What people reading the trace and the logs are told: the decision's reason, the
reasons of the calls waiting on it, and the technical message.

The reason is a template keyed on the verdict's action and the variant of it
(errord.decide.texts.wording.reason_detail), filled from the decision's fields; it
names the refusal, what is done instead, the calls waiting on the decided one
and whether the default policy applied.
"""

from __future__ import annotations

from msgspec import structs

from errord.decide.model import Action, Consequence, RefusalKind
from errord.decide.policy import DecisionContext, Verdict
from errord.decide.texts.wording import Fields, clip

REASONS: dict[tuple[Action, str], str] = {
    (Action.RETRY, ""): (
        "Transient error ({code}); retrying in {delay_ms} ms, attempt {next_attempt} of "
        "{limit}.{memory_clause}"
    ),
    (Action.RETRY, "asked"): (
        "Transient error ({code}); retrying in {delay_ms} ms as {tool} asked, "
        "attempt {next_attempt} of {limit}.{memory_clause}"
    ),
    (Action.RETRY, "asked_past_limit"): (
        "Transient error ({code}); retrying in {delay_ms} ms as {tool} asked, attempt "
        "{next_attempt}: a rate limit's waits count against the call's retry time, not its "
        "{limit} attempts.{memory_clause}"
    ),
    (Action.RETRY, "held"): (
        "Transient error ({code}); the rate-limit window of {tool} holds its calls until "
        "{window_until}: retrying in {delay_ms} ms, when it ends, attempt {next_attempt} of "
        "{limit}.{memory_clause}"
    ),
    (Action.RETRY, "held_past_limit"): (
        "Transient error ({code}); the rate-limit window of {tool} holds its calls until "
        "{window_until}: retrying in {delay_ms} ms, when it ends, attempt {next_attempt}: a "
        "rate limit's waits count against the call's retry time, not its {limit} attempts."
        "{memory_clause}"
    ),
    (Action.RETRY, "probe"): (
        "Transient error ({code}); the circuit breaker of {tool} is half-open and this retry "
        "in {delay_ms} ms is its one probe, attempt {next_attempt} of {limit}.{memory_clause}"
    ),
    (Action.RETRY, "awaits_probe"): (
        "Transient error ({code}); the circuit breaker of {tool} is half-open and its one "
        "probe is in flight: retrying in {delay_ms} ms, when the probe's outcome is due, "
        "attempt {next_attempt} of {limit}."
    ),
    (Action.RETRY, "awaits_half_open"): (
        "Transient error ({code}); the circuit breaker of {tool} is open: retrying in "
        "{delay_ms} ms, when it half-opens, attempt {next_attempt} of {limit}."
    ),
    (Action.RETURN_TO_MODEL, ""): (
        "No retry: {refusal}; the model caused it, so it gets the error back to correct its "
        "call ({correction_number} of {correction_limit})."
    ),
    (Action.USE_ALTERNATIVE, ""): (
        "No retry: {refusal}; using the alternative tool {alternative}{alternative_evidence}."
    ),
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
    (Action.ESCALATE, "corrections"): (
        "No retry: {refusal}; the model already had its {correction_limit} corrections of "
        "this call, escalating."
    ),
    (Action.ESCALATE, "repeated"): (
        "No retry: {refusal}; the model was already told {told} in this turn how to correct "
        "this mistake in its calls to {tool}, escalating."
    ),
    (Action.ESCALATE, "budget"): (
        "No retry: {refusal}; a correction would spend it as a retry does, so the model may "
        "not correct the call: escalating."
    ),
    (Action.FAIL, ""): (
        "No retry: {refusal};{unusable_clause} {unrecoverable}, and nothing anyone can do now "
        "would change that: the call fails, and the turn goes on without it."
    ),
    (Action.FAIL, "for_now"): (
        "No retry: {refusal};{unusable_clause} {tool} is unavailable for now, which no one "
        "can act on: the call fails, and the turn goes on without it (it may call {tool} "
        "again later)."
    ),
    (Action.FAIL, "corrections"): (
        "No retry: {refusal}; the model already had its {correction_limit} corrections of "
        "this call, which is optional: it fails, and the turn goes on without it."
    ),
    (Action.FAIL, "repeated"): (
        "No retry: {refusal}; the model was already told {told} in this turn how to correct "
        "this mistake in its calls to {tool}, and this call is optional: it fails, and the "
        "turn goes on without it."
    ),
    (Action.FAIL, "budget"): (
        "No retry: {refusal}; a correction would spend it as a retry does, so the model may "
        "not correct the call, which is optional: it fails, and the turn goes on without it."
    ),
}
"""The decision's reason, keyed on the action and on a detail of it (``reason_detail``)."""

DEFAULT_POLICY_NOTE = " {tool} has no manifest; the default policy applied."
"""Added to the reason of a decision on a tool without a manifest."""

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


def reason(context: DecisionContext, verdict: Verdict, fields: Fields) -> str:
    """The policy's reason, and whether the tool's own manifest or the default applied."""
    text = fields.fill(REASONS[(verdict.action, fields.detail)])
    if verdict.consequences:
        text += f" Calls waiting on it: {_consequences_clause(verdict.consequences)}."
    if context.tool.default_policy:
        text += fields.fill(DEFAULT_POLICY_NOTE)
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


def technical(context: DecisionContext) -> str:
    """What failed, for the logs: the attempt, the HTTP status, the exception, the error
    message and the classification with the rule that reached it."""
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
