"""Per-call state: which attempts of which tools failed or ended, and the retry delay granted.

It answers the questions a decision asks about a call: was this report
recorded already (idempotency), how much retry delay was granted to this tool
(the total retry time), which tools already failed on it (alternatives), and how
often the model was asked to correct it.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct, field, structs

from errord.decide.health.admission import was_refused
from errord.decide.model import Action, CallKey, Episode, Outcome
from errord.decide.model.events import FailureEvent, OutcomeEvent, TraceEvent
from errord.state.projection import EachEvent


class ToolRecord(Struct, frozen=True, omit_defaults=True, gc=False):
    """One tool's attempts on one call."""

    failed: tuple[int, ...] = ()
    """Attempts whose failure was reported, in increasing order. (A tuple of integers,
    unlike a frozenset, is left alone by the garbage collector.)"""
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    """How each attempt whose outcome was reported ended."""
    delay_granted: float = 0.0
    """Seconds of RETRY delay errord granted; counts against max_total_time."""
    ran: float = 0.0
    """Seconds the failed attempts ran, as reported; recorded, not counted."""
    refused: int = 0
    """Attempts errord refused before they ran (AdmitCall): they count neither as
    attempts nor against max_attempts."""


class CallState(Struct, frozen=True, omit_defaults=True, gc=False):
    """What one call has been through, per tool."""

    tools: dict[str, ToolRecord] = field(default_factory=dict)
    corrections: int = 0
    """RETURN_TO_MODEL decisions on the call: what the model-correction bound counts."""
    awaiting: dict[str, Episode] = field(default_factory=dict)
    """Episodes waiting for the attempt that tells their outcome, by awaited_key(tool,
    attempt)."""

    def awaited_by(self, tool: str, attempt: int) -> Episode | None:
        """The episode whose outcome attempt ``attempt`` of ``tool`` tells, if any."""
        return self.awaiting.get(awaited_key(tool, attempt)) if self.awaiting else None

    def failure_recorded(self, tool: str, attempt: int) -> bool:
        record = self.tools.get(tool)
        return record is not None and attempt in record.failed

    def outcome(self, tool: str, attempt: int) -> Outcome | None:
        record = self.tools.get(tool)
        return None if record is None else record.outcomes.get(attempt)

    def delay_granted(self, tool: str) -> float:
        record = self.tools.get(tool)
        return 0.0 if record is None else record.delay_granted

    def refused(self, tool: str) -> int:
        """Attempts of ``tool`` errord refused before they ran."""
        record = self.tools.get(tool)
        return 0 if record is None else record.refused

    def run_time(self, tool: str) -> float:
        """Seconds of the call's execution of ``tool`` so far: its failed attempts' run
        time and the retry delays granted between them."""
        record = self.tools.get(tool)
        return 0.0 if record is None else record.ran + record.delay_granted

    def ran_attempts(self, tool: str) -> int:
        """Failed attempts of ``tool`` that ran (those errord refused never did)."""
        record = self.tools.get(tool)
        return 0 if record is None else len(record.failed) - record.refused

    @property
    def failed_tools(self) -> frozenset[str]:
        return frozenset(tool for tool, record in self.tools.items() if record.failed)


EMPTY_CALL = CallState()


class CallFold(EachEvent[CallKey, CallState]):
    """Folds failures and outcomes into their call's state."""

    name = "call"
    version = 4  # 4: refused attempts counted
    key_type = CallKey
    state_type = CallState

    def keys(self, event: TraceEvent) -> Sequence[CallKey]:
        detail = event.detail
        if type(detail) is FailureEvent or type(detail) is OutcomeEvent:  # final kinds
            return (CallKey(detail.report.turn_id, detail.report.call_id),)
        return ()

    def apply(self, key: CallKey, state: CallState | None, event: TraceEvent) -> CallState:
        state = state or EMPTY_CALL
        detail = event.detail
        corrections = state.corrections
        if isinstance(detail, FailureEvent):
            tool = detail.report.tool
            record = _failed(state.tools.get(tool) or ToolRecord(), detail)
            corrections += detail.decision.action is Action.RETURN_TO_MODEL
        elif isinstance(detail, OutcomeEvent):
            tool = detail.report.tool
            record = _ended(state.tools.get(tool) or ToolRecord(), detail)
        else:
            return state
        awaiting = _awaiting(state.awaiting, detail)
        return CallState({**state.tools, tool: record}, corrections, awaiting)


def awaited_key(tool: str, attempt: int) -> str:
    return f"{attempt}:{tool}"


def _awaiting(
    awaiting: dict[str, Episode], event: FailureEvent | OutcomeEvent
) -> dict[str, Episode]:
    """``awaiting`` less the episode ``event`` closes, plus the one it opens."""
    opens = event.opens if isinstance(event, FailureEvent) else None
    if event.closes is None and opens is None:
        return awaiting
    changed = dict(awaiting)
    if event.closes is not None:
        episode = event.closes.episode
        changed.pop(awaited_key(episode.via, episode.attempt), None)
    if opens is not None:
        changed[awaited_key(opens.via, opens.attempt)] = opens
    return changed


def _failed(record: ToolRecord, event: FailureEvent) -> ToolRecord:
    report, decision = event.report, event.decision
    granted = decision.delay if decision.action is Action.RETRY else 0.0
    return structs.replace(
        record,
        failed=tuple(sorted({*record.failed, report.attempt})),
        delay_granted=record.delay_granted + granted,
        ran=record.ran + report.elapsed,
        refused=record.refused + was_refused(report),
    )


def _ended(record: ToolRecord, event: OutcomeEvent) -> ToolRecord:
    outcomes = {**record.outcomes, event.report.attempt: event.report.outcome}
    return structs.replace(record, outcomes=outcomes)
