"""The calls of one run: their results as they come, and what cascades to the calls that
wait on a call without a result (errord's consequences, else skipped or defaulted)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from errord_client.executor.calls import NO_DEFAULT, ToolCall
from errord_client.executor.plan import Plan
from errord_client.executor.result import DecidedBy, ResultError, ResultStatus, ToolResult
from errord_client.executor.verdict import ENDINGS, NO_VALUE, Consequence, Verdict


@dataclass
class Running:
    """Where a started call stands: the tool of its current attempt, and its attempts."""

    tool: str
    attempts: int = 0


class Batch:
    """The calls of one run: their results as they come, and what cascades to them."""

    def __init__(
        self, turn_id: str, plan: Plan, *, user_id: str = "", session_id: str = ""
    ) -> None:
        self.turn_id = turn_id
        self.plan = plan
        self.user_id = user_id
        """Who the agent acts for, sent with every report (telemetry)."""
        self.session_id = session_id
        """The agent's session, sent with every report (telemetry)."""
        self.results: dict[str, ToolResult] = {}
        self.running: dict[str, Running] = {}
        """The calls started (past their dependencies), by id."""
        self._done = {call.call_id: asyncio.Event() for call in plan.calls}
        self._forced: dict[str, Consequence] = {}

    def finish(self, call_id: str, result: ToolResult) -> None:
        self.results.setdefault(call_id, result)
        self._done[call_id].set()

    def cascade(self, verdict: Verdict) -> None:
        """Take in what ``verdict`` says of the calls that wait on its call."""
        for consequence in verdict.consequences:
            if consequence.call_id in self._done and consequence.call_id not in self.results:
                self._forced.setdefault(consequence.call_id, consequence)

    async def blocked(self, call: ToolCall) -> ToolResult | None:
        """Once the calls ``call`` depends on are done: its result if one of them has none
        (errord's consequence, else skipped, or its default), None when it may run."""
        if call.call_id in self.plan.broken:
            return not_run(call, ResultStatus.FAILED, self.plan.broken[call.call_id])
        for needed in self.plan.needs(call):
            await self._done[needed].wait()
        blocker = next((n for n in self.plan.needs(call) if not self.results[n].ok), None)
        if blocker is None:
            return None
        forced = self._forced.get(call.call_id)
        if forced is not None:
            return _consequence(call, forced, blocker)
        reason = f"{call.name} needs the result of {blocker}, which has none"
        if call.default is not NO_DEFAULT:
            return not_run(call, ResultStatus.DEFAULTED, reason, output=call.default)
        return not_run(call, ResultStatus.SKIPPED, reason)


def cut_off(call: ToolCall, batch: Batch, deadline: float) -> ToolResult:
    """The result of a call the turn's deadline (``deadline`` seconds) ended: its default
    when it has one; else TIMED_OUT when it had started, SKIPPED when it was still waiting
    on the calls it depends on."""
    running = batch.running.get(call.call_id)
    tool = call.name if running is None else running.tool
    reason = f"the turn's deadline of {deadline:g} s passed before {tool} answered"
    if call.default is not NO_DEFAULT:
        return not_run(call, ResultStatus.DEFAULTED, reason, output=call.default)
    if running is None:
        return not_run(call, ResultStatus.SKIPPED, reason)
    return ToolResult(
        call_id=call.call_id,
        tool=call.name,
        status=ResultStatus.TIMED_OUT,
        error=ResultError(
            "TIMEOUT",
            "transient",
            reason,
            f"{tool.replace('_', ' ').capitalize()} took too long; continuing without it.",
            True,
        ),
        attempts=running.attempts,
        fallback_used=tool != call.name,
        tool_used=tool,
        decided_by=DecidedBy.LOCAL,
        model_text=f"Error: {tool} did not answer before the turn's deadline ({deadline:g} s). "
        "Continue without its result; tell the user what is missing if it matters.",
    )


def not_run(
    call: ToolCall,
    status: ResultStatus,
    reason: str,
    decided_by: DecidedBy = DecidedBy.LOCAL,
    *,
    output: Any = None,
) -> ToolResult:
    """The result of a call that did not run: ``reason`` says why."""
    error = None
    if status is not ResultStatus.DEFAULTED:
        error = ResultError("", "", reason, "This step could not be done.", False)
    return ToolResult(
        call_id=call.call_id,
        tool=call.name,
        status=status,
        output=output,
        error=error,
        decided_by=decided_by,
        model_text=f"Not run: {reason}.",
    )


def _consequence(call: ToolCall, consequence: Consequence, blocker: str) -> ToolResult:
    output = consequence.default_value if consequence.default_value is not NO_VALUE else None
    reason = consequence.reason or f"{call.name} needs the result of {blocker}, which has none"
    status = ENDINGS.get(consequence.action, ResultStatus.SKIPPED)
    return not_run(call, status, reason, DecidedBy.ERRORD, output=output)
