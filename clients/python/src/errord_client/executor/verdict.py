"""What the executor follows after a failure: errord's decision, or the local policy's.

Both come to the executor as one ``Verdict``, so that following them is one piece of
code; ``decided_by`` says which it was. errord's decision is read straight off the wire
(``from_decision``), the generated message never leaves this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from google.protobuf import json_format

from errord_client.executor.result import Correction, DecidedBy, ResultStatus
from errord_client.v1 import errord_pb2 as pb


class Action(Enum):
    """RecoveryAction, without its prefix."""

    RETRY = "RETRY"
    USE_ALTERNATIVE = "USE_ALTERNATIVE"
    CONTINUE_PARTIAL = "CONTINUE_PARTIAL"
    USE_DEFAULT = "USE_DEFAULT"
    SKIP = "SKIP"
    ESCALATE = "ESCALATE"
    FAIL = "FAIL"
    RETURN_TO_MODEL = "RETURN_TO_MODEL"


NO_VALUE: Any = object()
"""A default value that was not given (a default may be None: JSON null)."""


@dataclass(frozen=True, slots=True)
class Consequence:
    """What a verdict means for another call of the batch that waits on this one."""

    call_id: str
    action: Action
    """SKIP, USE_DEFAULT or ESCALATE."""
    reason: str = ""
    default_value: Any = NO_VALUE


@dataclass(frozen=True, slots=True)
class Verdict:
    """One decision on one failed (or refused) attempt."""

    action: Action
    decided_by: DecidedBy
    delay: float = 0.0
    next_timeout: float | None = None
    alternative: str = ""
    default_value: Any = NO_VALUE
    llm_message: str = ""
    user_message: str = ""
    reason: str = ""
    code: str = ""
    error_class: str = ""
    fault: str = ""
    """Who can act on the failure: ARGUMENTS, TOOL, BACKEND or PERSON (errord's Fault)."""
    parameter: str = ""
    """The call's parameter the failure is about, when known."""
    decision_id: str = ""
    probe: bool = False
    """The retry is the half-open breaker's one probe: the next attempt is admitted."""
    consequences: tuple[Consequence, ...] = field(default=())
    correction: Correction | None = None
    """errord's correction, for a call handed back to the model."""


_ACTIONS = {pb.RecoveryAction.Value(f"RECOVERY_ACTION_{a.value}"): a for a in Action}


def from_decision(decision: pb.RecoveryDecision) -> Verdict:
    """errord's decision as the executor follows it."""
    classification = decision.classification
    return Verdict(
        action=_ACTIONS.get(decision.action, Action.ESCALATE),
        decided_by=DecidedBy.ERRORD,
        delay=decision.delay.ToTimedelta().total_seconds(),
        next_timeout=(
            decision.next_attempt_timeout.ToTimedelta().total_seconds()
            if decision.HasField("next_attempt_timeout")
            else None
        ),
        alternative=decision.alternative_tool,
        default_value=(
            json_format.MessageToDict(decision.default_value)
            if decision.HasField("default_value")
            else NO_VALUE
        ),
        llm_message=decision.llm_message,
        user_message=decision.user_message,
        reason=decision.reason,
        code=pb.ErrorCode.Name(classification.code).removeprefix("ERROR_CODE_"),
        error_class=pb.ErrorClass.Name(classification.error_class)
        .removeprefix("ERROR_CLASS_")
        .lower()
        .replace("unspecified", ""),
        fault=pb.Fault.Name(classification.fault).removeprefix("FAULT_").replace("UNSPECIFIED", ""),
        parameter=classification.parameter,
        decision_id=decision.decision_id,
        probe=decision.probe,
        correction=_correction(decision.correction) if decision.HasField("correction") else None,
        consequences=tuple(
            Consequence(
                call_id=consequence.call_id,
                action=_ACTIONS.get(consequence.action, Action.SKIP),
                reason=consequence.reason,
                default_value=(
                    json_format.MessageToDict(consequence.default_value)
                    if consequence.HasField("default_value")
                    else NO_VALUE
                ),
            )
            for consequence in decision.consequences
        ),
    )


def _correction(correction: pb.Correction) -> Correction:
    return Correction(
        type=correction.type,
        message=correction.message,
        parameter=correction.parameter,
        required_parameters=tuple(correction.required_parameters),
        example=(
            json_format.MessageToDict(correction.example)
            if correction.HasField("example")
            else None
        ),
        retry_hint=correction.retry_hint,
        available_tools=tuple(correction.available_tools),
    )


ENDINGS = {
    Action.CONTINUE_PARTIAL: ResultStatus.PARTIAL,
    Action.USE_DEFAULT: ResultStatus.DEFAULTED,
    Action.SKIP: ResultStatus.SKIPPED,
    Action.RETURN_TO_MODEL: ResultStatus.RETURNED_TO_MODEL,
    Action.ESCALATE: ResultStatus.ESCALATED,
    Action.FAIL: ResultStatus.FAILED,
}
"""The result of a call whose last verdict is not to try again."""
