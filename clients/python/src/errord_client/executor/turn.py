"""A turn: the calls of one agent run, under errord as one, however many batches they
come in.

errord counts a turn's retries, corrections and repeated mistakes, applies its plan's
cascades, and sums it up when it ends. An agent's run asks for tools over several model
answers (and an agent framework runs each call on its own): they are one turn when run
inside ``executor.turn()``:

    async with executor.turn(user_id="ada") as turn:
        result = await Runner.run(agent, "Two nights in Paris")   # its tools' calls join it
        more = await turn.run(other_calls)                         # or run calls directly

``Executor.run`` outside a turn runs its calls as a turn of their own, ended with them.
Inside one (the context of the ``async with``, which tasks started there inherit), it
joins the turn, which ends when the block does: EndTurn is sent in the background, once
the turn's outcomes are.

A turn may have a deadline, seconds from its start: errord grants no retry that would
cross it, and a batch still running at the deadline returns then with what finished;
each call still running ends TIMED_OUT (its default, when the call has one), each one
still waiting on the calls it depends on SKIPPED (or its default). The first batch of a
turn with a deadline tells errord its calls (BeginTurn with the deadline and the batch as
its plan), so that errord's summary names the calls the deadline ended TIMED_OUT;
while errord does not answer, a turn begins without it, its calls waiting on nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from errord_client.executor.batch import Batch, cut_off, not_run
from errord_client.executor.calls import ToolCall, call_identity, tool_call
from errord_client.executor.link import ErrordLink
from errord_client.executor.plan import plan_of
from errord_client.executor.progress import OnProgress, Progress, ProgressKind, tell
from errord_client.executor.result import ResultError, ResultStatus, ToolResult

log = logging.getLogger("errord_client.executor")

RunCall = Callable[[ToolCall, Batch], Awaitable[ToolResult]]
"""Runs one call of a batch to its result (the executor's)."""

current: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("errord_turn", default=None)
"""The turn whose ``async with`` block the code runs in, if any."""


class Turn:
    """One errord turn: ``run`` its batches, then ``end`` it (``async with`` does)."""

    def __init__(
        self,
        link: ErrordLink,
        run_call: RunCall,
        *,
        owner: object = None,
        turn_id: str | None = None,
        user_id: str = "",
        session_id: str = "",
        deadline: float | None = None,
        on_progress: OnProgress | None = None,
    ) -> None:
        if deadline is not None and not deadline > 0:
            raise ValueError(f"a turn's deadline should be positive seconds, got {deadline!r}")
        self.turn_id = turn_id or f"turn-{uuid.uuid4().hex}"
        self.user_id = user_id
        """Who the agent acts for: sent with every report, recorded (hashed when errord
        hashes ids) and exported on errord's spans, never logged."""
        self.session_id = session_id
        """The agent's session, as ``user_id``."""
        self.deadline = deadline
        """Seconds the turn may take from its start; None: errord's default (300 s) bounds
        its retries, and nothing cuts its batches short."""
        self._link = link
        self._run_call = run_call
        self._owner = owner
        self._on_progress = on_progress
        loop = asyncio.get_running_loop()
        self._ends_at = None if deadline is None else loop.time() + deadline
        self._ends_on = (
            None if deadline is None else datetime.now(UTC) + timedelta(seconds=deadline)
        )
        self._begun: asyncio.Future[None] | None = None
        self._ran = False
        self._ended = False
        self._entered: contextvars.Token[Turn | None] | None = None

    async def __aenter__(self) -> Self:
        self._entered = current.set(self)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._entered is not None:
            current.reset(self._entered)
            self._entered = None
        self.end()

    def runs_for(self, owner: object) -> bool:
        """Whether the turn runs its calls with ``owner`` (an Executor)."""
        return self._owner is owner

    def end(self) -> None:
        """End the turn: EndTurn is sent in the background once its outcomes are. A turn
        in which nothing ran is not sent (errord never heard of it)."""
        if not self._ended and self._ran:
            self._link.end_turn(self.turn_id)
        self._ended = True

    async def run_one(self, call: ToolCall | Mapping[str, Any] | Any) -> ToolResult:
        """Run one call in the turn."""
        return (await self.run([call]))[0]

    async def run(self, calls: Sequence[ToolCall | Mapping[str, Any] | Any]) -> list[ToolResult]:
        """Run ``calls`` in the turn as ``Executor.run`` runs a batch: one result per call,
        in order; a call that cannot be read (None, no id, no name) gets a FAILED,
        INVALID_INPUT result saying what is wrong. Past the deadline, the calls still
        running end as the module says."""
        if self._ended:
            raise RuntimeError(f"turn {self.turn_id} has ended: start another")
        read = [_read(call) for call in calls]
        unreadable = {position: r for position, r in enumerate(read) if isinstance(r, ToolResult)}
        runnable = [r for r in read if isinstance(r, ToolCall)]
        if not unreadable:
            return await self._run_batch(runnable)
        ran = iter(await self._run_batch(runnable) if runnable else [])
        return [unreadable.get(position) or next(ran) for position in range(len(read))]

    async def _run_batch(self, calls: list[ToolCall]) -> list[ToolResult]:
        batch = Batch(
            self.turn_id,
            plan_of(calls),
            user_id=self.user_id,
            session_id=self.session_id,
        )
        if not batch.plan.calls:
            return []
        self._ran = True
        await self._begin(batch)
        if self._ends_at is None and len(batch.plan.calls) == 1:
            # One call needs no task of its own: awaited here, it does not wait for the
            # loop to schedule it behind whatever else is ready (a success never yields).
            return [await self._started(0, batch.plan.calls[0], batch)]
        tasks = [
            asyncio.ensure_future(self._started(position, call, batch))
            for position, call in enumerate(batch.plan.calls)
        ]
        try:
            if self._ends_at is None:
                return list(await asyncio.gather(*tasks))
            left = self._ends_at - asyncio.get_running_loop().time()
            if left > 0:
                await asyncio.wait(tasks, timeout=left)
            pairs = zip(tasks, batch.plan.calls, strict=True)
            return [self._result(task, call, batch) for task, call in pairs]
        finally:
            for task in tasks:
                task.cancel()  # only the deadline's: the others are done

    async def _started(self, position: int, call: ToolCall, batch: Batch) -> ToolResult:
        if position in batch.plan.repeated:
            reason = f"an earlier call of the batch has the id {call.call_id}"
            return not_run(call, ResultStatus.FAILED, reason)
        result = await self._run_call(call, batch)
        self._done(result)
        return result

    def _result(self, task: asyncio.Future[ToolResult], call: ToolCall, batch: Batch) -> ToolResult:
        """The call's result, or the one the deadline gives it."""
        if task.done() and not task.cancelled():
            return task.result()
        assert self.deadline is not None
        result = cut_off(call, batch, self.deadline)
        batch.finish(call.call_id, result)
        self._done(result)
        return result

    def _done(self, result: ToolResult) -> None:
        message = result.error.user_message if result.error is not None else ""
        progress = Progress(
            ProgressKind.DONE,
            self.turn_id,
            result.call_id,
            result.tool_used,
            status=result.status,
            message=message,
        )
        tell(self._on_progress, progress)

    async def _begin(self, batch: Batch) -> None:
        """BeginTurn, with the turn's first batch: when the batch has a plan errord's
        cascades follow, or the turn a deadline. Later batches wait for it."""
        if self._begun is not None:
            await asyncio.shield(self._begun)
            if batch.plan.dependencies:  # errord takes a turn's plan once, at its start
                log.info("turn %s runs a later batch's plan without errord", self.turn_id)
            return
        self._begun = asyncio.get_running_loop().create_future()
        try:
            told = batch.plan.dependencies or self._ends_on is not None
            if told and not self._link.answering:  # errord away: the calls do not wait on it
                log.info("turn %s begins without errord", self.turn_id)
            elif told:
                request = batch.plan.begin(self.turn_id, self._ends_on)
                if not await self._link.begin_turn(request) and batch.plan.dependencies:
                    log.info("turn %s runs its plan without errord's cascades", self.turn_id)
        finally:
            self._begun.set_result(None)


def _read(raw: object) -> ToolCall | ToolResult:
    """``raw`` as a ToolCall; when it cannot be one (None, no id, no name), the FAILED
    result that says why, with whatever id and name it has."""
    try:
        return tool_call(raw)
    except ValueError as error:
        problem = str(error)
    call_id, name = call_identity(raw)
    return ToolResult(
        call_id=call_id,
        tool=name,
        status=ResultStatus.FAILED,
        error=ResultError(
            "INVALID_INPUT",
            "permanent",
            problem,
            "This step could not be done.",
            False,
            fault="ARGUMENTS",
        ),
        model_text=f"Error: the tool call could not be read: {problem}",
    )
