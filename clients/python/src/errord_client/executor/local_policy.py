"""The local policy: what the executor decides on its own while errord does not answer.

It keeps the seeds' defaults (errord's own when a tool has no manifest), without
anything errord knows and the executor does not (manifests, breakers, memory, the
turn's budget and plan): a transient failure is retried after 100, 200, 400 and 800 ms,
at most 5 attempts and 2 s of delays per call, never sooner than a Retry-After asks; a
permanent one, or a transient one out of retries, is escalated to the user. A call the
model got wrong (its arguments, or a tool that does not exist) goes back to the model,
which is the only one that can correct it.
"""

from __future__ import annotations

from dataclasses import dataclass

from errord_client.executor.failures import ToolFailure
from errord_client.executor.result import DecidedBy
from errord_client.executor.verdict import Action, Verdict

TRANSIENT_CODES = frozenset({"TIMEOUT", "CONNECTION", "RATE_LIMITED", "UNAVAILABLE", "UNKNOWN"})
MODEL_CODES = frozenset({"INVALID_INPUT", "TOOL_NOT_FOUND"})
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
CODES_BY_EXCEPTION = {
    "PermissionError": "AUTH",
    "FileNotFoundError": "NOT_FOUND",
    "NotImplementedError": "UNSUPPORTED",
    "ValueError": "INVALID_INPUT",
    "TypeError": "INVALID_INPUT",
}
"""Built-in exceptions whose type says enough; errord reads much more (the message, the
manifest's overrides) when it answers."""


@dataclass(frozen=True, slots=True)
class LocalPolicy:
    """Seed 004's retry policy, applied by the executor itself."""

    initial_delay: float = 0.1
    multiplier: float = 2.0
    max_delay: float = 0.8
    max_attempts: int = 5
    max_total_delay: float = 2.0
    """Seconds of delays one call's retries of one tool may add up to."""

    def decide(
        self, tool: str, failure: ToolFailure, attempt: int, delays_so_far: float
    ) -> Verdict:
        """The verdict on attempt ``attempt`` of ``tool``, which failed with ``failure``,
        after ``delays_so_far`` seconds of delays granted to this call's retries of it."""
        code = local_code(failure)
        transient = code in TRANSIENT_CODES
        said = failure.message or failure.exception_type or code
        if code in MODEL_CODES:
            return Verdict(
                action=Action.RETURN_TO_MODEL,
                decided_by=DecidedBy.LOCAL,
                code=code,
                error_class="permanent",
                llm_message=f"Error: the call to {tool} is invalid: {said}. "
                "Correct the call and try again.",
                user_message=f"{_label(tool)} was called incorrectly; the assistant will "
                "correct it.",
                reason="the call is the model's to correct (local policy: errord did not answer)",
            )
        if transient:
            delay = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
            if failure.retry_after is not None:
                delay = max(delay, failure.retry_after)
            if attempt < self.max_attempts and delays_so_far + delay <= self.max_total_delay:
                return Verdict(
                    action=Action.RETRY,
                    decided_by=DecidedBy.LOCAL,
                    delay=delay,
                    code=code,
                    error_class="transient",
                    user_message=f"{_label(tool)} had a temporary problem; trying again.",
                    reason=f"transient {code}: retry {attempt} of {self.max_attempts - 1} after "
                    f"{delay * 1000:.0f} ms (local policy: errord did not answer)",
                )
        why = (
            f"{tool} failed {attempt} times with a temporary error ({code})"
            if transient
            else f"{tool} failed with an error that retrying cannot fix ({code or 'permanent'})"
        )
        return Verdict(
            action=Action.ESCALATE,
            decided_by=DecidedBy.LOCAL,
            code=code,
            error_class="transient" if transient else "permanent",
            llm_message=f"Error: {why}: {said}. Do not call it again in this turn; tell the "
            "user what could not be done.",
            user_message=f"{_label(tool)} isn't working right now, so I couldn't finish this "
            "step. Please try again later.",
            reason=f"{why} (local policy: errord did not answer)",
        )


def local_code(failure: ToolFailure) -> str:
    """The failure's code as far as the executor can tell on its own."""
    if failure.code:
        return failure.code
    status = failure.http_status
    if status in TRANSIENT_STATUSES or 500 <= status <= 599:
        return "RATE_LIMITED" if status == 429 else "UNAVAILABLE"
    if status in (401, 403):
        return "AUTH"
    if status == 404:
        return "NOT_FOUND"
    if 400 <= status <= 499:
        return "INVALID_INPUT"
    kind = failure.exception_type.rpartition(".")[2]
    if kind in CODES_BY_EXCEPTION:
        return CODES_BY_EXCEPTION[kind]
    if "timeout" in kind.lower():
        return "TIMEOUT"
    words = failure.message[:200].lower()
    if any(word in words for word in ("unauthorized", "forbidden", "401", "403")):
        return "AUTH"
    return "UNKNOWN"


def _label(tool: str) -> str:
    return tool.replace("_", " ").capitalize()
