"""The executor: runs a model's tool calls and follows errord's decisions on their failures.

    executor = Executor(tools=[flight_search, hotel_search])
    results = await executor.run(tool_calls)        # one ToolResult per call, in order
    messages = [result.to_openai() for result in results]

For each call: admission (the breaker, as errord last said, in memory; AdmitCall only
when it is not closed), the attempt under its timeout, and on a failure errord's
decision, followed (wait and retry, the alternative, the partial result, the default,
skip, back to the model, escalate, fail) until the call has its result. A decision's
consequences apply to the calls of the batch that wait on the failed one. Successes are
reported in the background. When errord does not answer in time the local policy
decides, and the result says so.

An agent's run is one turn when it runs inside ``executor.turn()`` (errord_client.
executor.turn): its batches, and the calls its framework runs one by one, are counted and
summed up together. ``user_id`` and ``session_id`` go with every report; a ``deadline``
cuts a turn short; ``on_progress`` hears of each attempt, retry, alternative and result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import grpc
import grpc.aio

from errord_client.client import DEFAULT_TARGET, AsyncErrordClient
from errord_client.executor.batch import Batch
from errord_client.executor.board import ToolBoard
from errord_client.executor.call_run import CallRun, Runner
from errord_client.executor.calls import ToolCall
from errord_client.executor.declarations import Declarations
from errord_client.executor.link import CHANNEL_OPTIONS, ErrordLink
from errord_client.executor.local_policy import LocalPolicy
from errord_client.executor.progress import OnProgress
from errord_client.executor.result import ResultError, ResultStatus, ToolResult
from errord_client.executor.turn import Turn, current
from errord_client.tools import Tool, ToolRegistry

log = logging.getLogger("errord_client.executor")


class Executor:
    """Runs tool calls from ``tools`` (functions, coroutine functions, Tools, or a
    ToolRegistry) under errord at ``target``.

    ``decision_timeout``: seconds errord has to answer a failure before the local policy
    decides (250 ms). ``max_threads``: worker threads for plain (sync) functions; an
    attempt past its timeout is abandoned, its thread left to finish on its own.
    ``watch_tools``: keep errord's breakers and timeouts in memory (WatchTools); without
    it every attempt runs unasked, under ``default_timeout``. ``user_id``,
    ``session_id`` and ``deadline`` are every turn's unless it names its own (``turn``,
    ``run``); ``on_progress`` is called with each step of each call
    (errord_client.executor.progress).
    """

    def __init__(
        self,
        tools: ToolRegistry | Iterable[Tool | Any] = (),
        *,
        target: str = DEFAULT_TARGET,
        token: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        decision_timeout: float = 0.25,
        local_policy: LocalPolicy | None = None,
        default_timeout: float = 30.0,
        max_threads: int = 32,
        watch_tools: bool = True,
        user_id: str = "",
        session_id: str = "",
        deadline: float | None = None,
        on_progress: OnProgress | None = None,
    ) -> None:
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.local_policy = local_policy or LocalPolicy()
        self.board = ToolBoard(default_timeout)
        self.declarations = Declarations()
        """What failure reports tell errord of each tool (its schema and timeout)."""
        self._target = target
        self._credentials = credentials
        self._token = token or None
        self._decision_timeout = decision_timeout
        self._watch_tools = watch_tools
        self._max_threads = max_threads
        self.user_id = user_id
        """Who the agent acts for, by default: sent with every report (telemetry)."""
        self.session_id = session_id
        """The agent's session, by default, as ``user_id``."""
        self.deadline = deadline
        """Seconds a turn may take, by default; None: no deadline of the executor's."""
        self.on_progress = on_progress
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._link: ErrordLink | None = None
        self._watch: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self, *, sync_timeout: float = 1.0) -> None:
        """Connect and wait, ``sync_timeout`` seconds at most, for errord's tool policies.
        ``run`` starts the executor by itself; this only spares the first calls the wait."""
        self._started()
        if self._watch is not None:
            try:
                await asyncio.wait_for(self.board.synced.wait(), sync_timeout)
            except TimeoutError:
                log.info("errord's tool policies did not arrive within %s s", sync_timeout)

    async def close(self, *, patience: float = 5.0) -> None:
        """Send what is still queued (``patience`` seconds at most, not at all while errord
        is unreachable), then close. What could not be sent is logged with its count."""
        if self._link is not None:
            await self._link.drain(patience)
            outcomes, endings = self._link.undelivered
            if outcomes or endings:
                log.warning(
                    "closing without errord: %d queued reports were not delivered "
                    "(outcomes of %d attempts, %d turn endings)",
                    outcomes + endings,
                    outcomes,
                    endings,
                )
            self._link.cancel()
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._link is not None:
            await self._link.client.close()
        if self._threads is not None:  # tools past their timeout are left to finish
            self._threads.shutdown(wait=False, cancel_futures=True)
        self._link = self._watch = self._threads = None

    def turn(
        self,
        turn_id: str | None = None,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        deadline: float | None = None,
    ) -> Turn:
        """A turn of its own (``turn-<random hex>`` unless ``turn_id``): ``async with`` it
        around an agent's run, so that every call the run makes is one errord turn, ended
        with the block (errord_client.executor.turn). ``user_id``, ``session_id`` and
        ``deadline`` (seconds from now) default to the executor's."""
        return Turn(
            self._started(),
            self._run,
            owner=self,
            turn_id=turn_id,
            user_id=self.user_id if user_id is None else user_id,
            session_id=self.session_id if session_id is None else session_id,
            deadline=self.deadline if deadline is None else deadline,
            on_progress=self.on_progress,
        )

    async def run(
        self,
        calls: Sequence[ToolCall | Mapping[str, Any] | Any],
        *,
        turn_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        deadline: float | None = None,
    ) -> list[ToolResult]:
        """Run ``calls`` (ToolCalls, or tool calls as OpenAI or Anthropic return them):
        independent calls at once, a call after those it ``depends_on``. One result per
        call, in order; never raises for a tool's failure or errord's, nor for a call that
        cannot be read (its result says what is wrong).

        Inside ``async with executor.turn()`` (and no ``turn_id`` given) the calls join
        that turn; else they are a turn of their own (``turn_id``, ``user_id``,
        ``session_id`` and ``deadline`` as ``turn`` takes them), ended once they have
        their results."""
        joined = current.get()
        if joined is not None and turn_id is None and joined.runs_for(self):
            return await joined.run(calls)
        turn = self.turn(turn_id, user_id=user_id, session_id=session_id, deadline=deadline)
        try:
            return await turn.run(calls)
        finally:
            turn.end()

    async def run_one(self, call: ToolCall | Mapping[str, Any] | Any, **options: Any) -> ToolResult:
        """Run one call (in the current turn, or as a turn of its own); ``options`` as
        ``run`` takes them."""
        return (await self.run([call], **options))[0]

    def _started(self) -> ErrordLink:
        if self._link is None:
            client = AsyncErrordClient(
                self._target,
                token=self._token,
                credentials=self._credentials,
                options=CHANNEL_OPTIONS,
            )
            self._link = ErrordLink(client, decision_timeout=self._decision_timeout)
            self._threads = concurrent.futures.ThreadPoolExecutor(
                max_workers=self._max_threads, thread_name_prefix="errord-tool"
            )
            if self._watch_tools:
                self._watch = asyncio.get_running_loop().create_task(
                    self.board.follow(client.watch_tools)
                )
        return self._link

    def _runner(self) -> Runner:
        assert self._link is not None
        assert self._threads is not None
        return Runner(
            self.registry,
            self.board,
            self._link,
            self.local_policy,
            self._threads,
            self.declarations,
            self.on_progress,
        )

    async def _run(self, call: ToolCall, batch: Batch) -> ToolResult:
        started = time.monotonic()
        try:
            result = await batch.blocked(call) or await CallRun(self._runner(), call, batch).run()
        except Exception as error:  # a bug here must not cost the other calls their results
            log.exception("the executor failed on call %s", call.call_id)
            result = ToolResult(
                call_id=call.call_id,
                tool=call.name,
                status=ResultStatus.FAILED,
                error=ResultError("UNKNOWN", "", repr(error), "Something went wrong.", False),
                model_text=f"Error: the call could not be run: {error}",
            )
        result = _timed(result, started)
        batch.finish(call.call_id, result)
        return result


def _timed(result: ToolResult, started: float) -> ToolResult:
    return dataclasses.replace(result, execution_time_ms=(time.monotonic() - started) * 1000)
