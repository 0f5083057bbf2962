"""The local policy: what the executor decides on its own while errord does not answer.

It classifies a failure exactly as errord does, with errord's own rules (errord_client.
_classify, generated from errord/decide/classify): the same code, class and fault, and
the parameter the call's own values show. Without what errord knows and the executor
does not (manifests, breakers, memory, the turn's budget and plan), it keeps errord's
default policy (what errord applies to a tool without a manifest): a failure of the
call's arguments goes back to the model, which is the only one that can correct it; a
failure of the tool's own code fails the call, not retried; a transient one is retried
after 100, 200, 400 and 800 ms, at most 5 attempts per call, never sooner than a
Retry-After asks when that fits 30 s of delays (a rate limit that says how long to wait
is waited out past the 5 attempts, as errord does, within those 30 s); a transient
failure of the backend out of
retries fails the call for now (nobody can act on an outage: the model may go on without
the tool, or call it again later); what a person must fix is escalated to the user.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from errord_client._classify import classify, with_fault
from errord_client.classify_model import Classification, ErrorClass, ErrorCode, Fault
from errord_client.classify_model import ToolFailure as Failure
from errord_client.executor.failures import ToolFailure
from errord_client.executor.result import DecidedBy
from errord_client.executor.verdict import Action, Verdict

LOCALLY = "(local policy: errord did not answer)"


@dataclass(frozen=True, slots=True)
class LocalPolicy:
    """errord's default retry policy, applied by the executor itself."""

    initial_delay: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 0.8
    max_attempts: int = 5
    max_total_delay: float = 30.0
    """Seconds of delays one call's retries of one tool may add up to: the backoff's add up
    to 1.5 s; the rest is for waits a Retry-After asks for (errord's max_total_time)."""

    def decide(
        self,
        tool: str,
        failure: ToolFailure,
        attempt: int,
        delays_so_far: float,
        arguments: Mapping[str, Any] | None = None,
        parameters: Iterable[str] = (),
    ) -> Verdict:
        """The verdict on attempt ``attempt`` of ``tool``, which failed with ``failure``
        after ``delays_so_far`` seconds of delays granted to this call's retries of it;
        ``arguments``, the call's, and ``parameters``, those its schema names, show whose
        fault it is."""
        classification = local_classification(failure, arguments or {}, parameters)
        code = classification.code.value
        permanent = classification.error_class is ErrorClass.PERMANENT
        error_class = "permanent" if permanent else "transient"
        fault = classification.fault
        said = failure.message or failure.exception_type or code
        read = Verdict(
            action=Action.ESCALATE,
            decided_by=DecidedBy.LOCAL,
            code=code,
            error_class=error_class,
            fault=fault.value if fault else "",
            parameter=classification.parameter,
        )
        if permanent and fault is Fault.ARGUMENTS:
            named = f" (parameter {classification.parameter!r})" if classification.parameter else ""
            return replace(
                read,
                action=Action.RETURN_TO_MODEL,
                llm_message=f"Error: the call to {tool} is invalid{named}: {said}. "
                "Correct the call and try again.",
                user_message=f"{_label(tool)} was called incorrectly; the assistant will "
                "correct it.",
                reason=f"the call is the model's to correct {LOCALLY}",
            )
        if permanent and fault is Fault.TOOL:
            return replace(
                read,
                action=Action.FAIL,
                llm_message=f"Error: {tool} failed in its own code, not because of your call: "
                f"{said}. Calling it again the same way would fail the same way; get what you "
                "need another way, or continue without it.",
                user_message=f"{_label(tool)} ran into an internal error; continuing with the "
                "rest of the request.",
                reason=f"{tool}'s own code failed ({code}) {LOCALLY}",
            )
        if not permanent:
            delay = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
            if failure.retry_after is not None:
                delay = max(delay, failure.retry_after)
            waits_its_turn = (
                classification.code is ErrorCode.RATE_LIMITED and failure.retry_after is not None
            )
            within = attempt < self.max_attempts
            if (within or waits_its_turn) and delays_so_far + delay <= self.max_total_delay:
                which = (
                    f"{attempt} of {self.max_attempts - 1}"
                    if within
                    else f"{attempt}, a rate limit's wait past the {self.max_attempts - 1}"
                )
                return replace(
                    read,
                    action=Action.RETRY,
                    delay=delay,
                    user_message=f"{_label(tool)} had a temporary problem; trying again.",
                    reason=f"transient {code}: retry {which} after {delay * 1000:.0f} ms {LOCALLY}",
                )
        if not permanent and fault is Fault.BACKEND:
            return replace(
                read,
                action=Action.FAIL,
                llm_message=f"Error: {tool} failed {attempt} times with a temporary error "
                f"({code}): {said}. {tool} is unavailable for now. Continue without its "
                f"result, or call {tool} again later, not right away; tell the user what is "
                "missing if it matters.",
                user_message=f"Couldn't reach {_label(tool).lower()} right now; continuing "
                "with the rest of the request.",
                reason=f"{tool} is unavailable for now: {attempt} attempts failed ({code}), "
                f"which no one can act on {LOCALLY}",
            )
        why = (
            f"{tool} failed {attempt} times with a temporary error ({code})"
            if not permanent
            else f"{tool} failed with an error that retrying cannot fix ({code})"
        )
        return replace(
            read,
            llm_message=f"Error: {why}: {said}. Do not call it again in this turn; tell the "
            "user what could not be done.",
            user_message=f"{_label(tool)} isn't working right now, so I couldn't finish this "
            "step. Please try again later.",
            reason=f"{why} {LOCALLY}",
        )


def local_classification(
    failure: ToolFailure, arguments: Mapping[str, Any], parameters: Iterable[str] = ()
) -> Classification:
    """``failure`` classified as errord classifies it for a tool without a manifest."""
    read = Failure(
        code=ErrorCode(failure.code) if failure.code else None,
        http_status=failure.http_status or None,
        exception_type=failure.exception_type,
        message=failure.message,
        api_message=failure.api_message,
        api_parameter=failure.api_parameter,
        api_code=failure.api_code,
    )
    return with_fault(classify(read), read, arguments, parameters)


def _label(tool: str) -> str:
    return tool.replace("_", " ").capitalize()
