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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import grpc
import grpc.aio
from google.protobuf import duration_pb2

from errord_client.client import DEFAULT_TARGET
from errord_client.executor.board import ToolBoard
from errord_client.executor.calls import NO_DEFAULT, ToolCall, tool_call
from errord_client.executor.failures import ToolFailure, failure_from_exception
from errord_client.executor.link import ErrordLink, as_struct, open_channel
from errord_client.executor.local_policy import LocalPolicy
from errord_client.executor.plan import Plan, plan_of
from errord_client.executor.result import DecidedBy, ResultError, ResultStatus, ToolResult
from errord_client.executor.verdict import NO_VALUE, Action, Consequence, Verdict, from_decision
from errord_client.tools import InvalidArguments, Tool, ToolNotFound, ToolRegistry
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

log = logging.getLogger("errord_client.executor")

ENDINGS = {
    Action.CONTINUE_PARTIAL: ResultStatus.PARTIAL,
    Action.USE_DEFAULT: ResultStatus.DEFAULTED,
    Action.SKIP: ResultStatus.SKIPPED,
    Action.RETURN_TO_MODEL: ResultStatus.RETURNED_TO_MODEL,
    Action.ESCALATE: ResultStatus.ESCALATED,
    Action.FAIL: ResultStatus.FAILED,
}
"""The result of a call whose last verdict is not to try again."""


class Executor:
    """Runs tool calls from ``tools`` (functions, coroutine functions, Tools, or a
    ToolRegistry) under errord at ``target``.

    ``decision_timeout``: seconds errord has to answer a failure before the local policy
    decides (250 ms). ``max_threads``: worker threads for plain (sync) functions; an
    attempt past its timeout is abandoned, its thread left to finish on its own.
    ``watch_tools``: keep errord's breakers and timeouts in memory (WatchTools); without
    it every attempt runs unasked, under ``default_timeout``.
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
    ) -> None:
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.local_policy = local_policy or LocalPolicy()
        self.board = ToolBoard(default_timeout)
        self._target = target
        self._credentials = credentials
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        self._decision_timeout = decision_timeout
        self._watch_tools = watch_tools
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_threads, thread_name_prefix="errord-tool"
        )
        self._channel: grpc.aio.Channel | None = None
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
        await self.aclose()

    async def start(self, *, sync_timeout: float = 1.0) -> None:
        """Connect and wait, ``sync_timeout`` seconds at most, for errord's tool policies.
        ``run`` starts the executor by itself; this only spares the first calls the wait."""
        self._started()
        if self._watch is not None:
            try:
                await asyncio.wait_for(self.board.synced.wait(), sync_timeout)
            except TimeoutError:
                log.info("errord's tool policies did not arrive within %s s", sync_timeout)

    async def aclose(self, *, patience: float = 5.0) -> None:
        """Send what is still queued (``patience`` seconds at most), then close."""
        if self._link is not None:
            await self._link.drain(patience)
            self._link.cancel()
        if self._watch is not None:
            self._watch.cancel()
        if self._channel is not None:
            await self._channel.close()
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._channel = self._link = self._watch = None

    async def run(
        self, calls: Sequence[ToolCall | Mapping[str, Any] | Any], *, turn_id: str | None = None
    ) -> list[ToolResult]:
        """Run ``calls`` (ToolCalls, or tool calls as OpenAI or Anthropic return them) as
        one turn: independent calls at once, a call after those it ``depends_on``. One
        result per call, in order; never raises for a tool's failure or errord's."""
        link = self._started()
        turn_id = turn_id or f"turn-{uuid.uuid4().hex}"
        batch = Batch(turn_id, plan_of([tool_call(call) for call in calls]))
        if batch.plan.dependencies and not await link.begin_turn(batch.plan.begin(turn_id)):
            log.info("turn %s runs its plan without errord's cascades", turn_id)
        results = await asyncio.gather(
            *(
                self._repeated(call) if position in batch.plan.repeated else self._run(call, batch)
                for position, call in enumerate(batch.plan.calls)
            )
        )
        if results:
            link.end_turn(turn_id)
        return list(results)

    async def execute(self, call: ToolCall | Mapping[str, Any] | Any, **options: Any) -> ToolResult:
        """Run one call as a turn of its own (seed 000's executeTool)."""
        return (await self.run([call], **options))[0]

    def _started(self) -> ErrordLink:
        if self._link is None:
            self._channel = open_channel(self._target, self._credentials)
            self._link = ErrordLink(
                self._channel, self._metadata, decision_timeout=self._decision_timeout
            )
            if self._watch_tools:
                stub = errord_pb2_grpc.ErrorHandlerServiceStub(self._channel)
                self._watch = asyncio.get_running_loop().create_task(
                    self.board.follow(stub.WatchTools, self._metadata)
                )
        return self._link

    @staticmethod
    async def _repeated(call: ToolCall) -> ToolResult:
        reason = f"an earlier call of the batch has the id {call.call_id}"
        return _ended(call, ResultStatus.FAILED, reason)

    async def _run(self, call: ToolCall, batch: Batch) -> ToolResult:
        started = time.monotonic()
        try:
            result = await batch.blocked(call) or await CallRun(self, call, batch).run()
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


class Batch:
    """The calls of one run: their results as they come, and what cascades to them."""

    def __init__(self, turn_id: str, plan: Plan) -> None:
        self.turn_id = turn_id
        self.plan = plan
        self.results: dict[str, ToolResult] = {}
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
            return _ended(call, ResultStatus.FAILED, self.plan.broken[call.call_id])
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
            return _ended(call, ResultStatus.DEFAULTED, reason, output=call.default)
        return _ended(call, ResultStatus.SKIPPED, reason)


class CallRun:
    """One call, attempt after attempt, until it has its result."""

    def __init__(self, executor: Executor, call: ToolCall, batch: Batch) -> None:
        self.executor = executor
        self.link = executor._link
        self.call = call
        self.batch = batch
        self.tool = call.name
        self.attempt = 1
        self.attempts = 0
        self.timeout: float | None = None
        self.admitted = False
        self.fallback_used = False
        self.decision_ids: list[str] = []
        self.delays: dict[str, float] = {}
        self.last_decision = ""
        self.decided_by = DecidedBy.NOBODY
        """Who decided the last verdict followed; NOBODY while none was needed."""

    async def run(self) -> ToolResult:
        while True:
            failure, elapsed, verdict, output = await self._attempt()
            if failure is None and verdict is None:
                return self._succeeded(output)
            if verdict is None:
                assert failure is not None
                verdict = await self._decide(failure, elapsed)
            self.decided_by = verdict.decided_by
            if verdict.decision_id:
                self.decision_ids.append(verdict.decision_id)
                self.last_decision = verdict.decision_id
            self.batch.cascade(verdict)
            if verdict.action is Action.RETRY:
                self.delays[self.tool] = self.delays.get(self.tool, 0.0) + verdict.delay
                await asyncio.sleep(verdict.delay)
                self.attempt += 1
                self.timeout = verdict.next_timeout
                self.admitted = verdict.decided_by is DecidedBy.ERRORD
            elif verdict.action is Action.USE_ALTERNATIVE and verdict.alternative:
                self.tool, self.attempt = verdict.alternative, 1
                self.timeout = verdict.next_timeout
                self.admitted, self.fallback_used = False, True
            else:
                return self._ended(verdict, failure)

    async def _attempt(
        self,
    ) -> tuple[ToolFailure | None, float, Verdict | None, Any]:
        """Run the current attempt: its failure (None on success), how long it ran, the
        verdict that refused it before it ran (None if it ran), and its output."""
        tool, failure = self._tool()
        if tool is None:
            return failure, 0.0, None, None
        if not self.admitted and not self.executor.board.closed(self.tool):
            refusal = await self._admit()
            if refusal is not None:
                return None, 0.0, refusal, None
        timeout = self.timeout or self.executor.board.timeout(self.tool)
        self.attempts += 1
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                output = await tool.invoke(self.call.arguments, threads=self.executor._threads)
        except TimeoutError as error:
            elapsed = time.monotonic() - started
            if elapsed < timeout:  # the tool's own TimeoutError, not ours
                return failure_from_exception(error), elapsed, None, None
            message = f"{self.tool} did not answer within {timeout:g} s"
            return ToolFailure(message, "TimeoutError", "TIMEOUT"), elapsed, None, None
        except Exception as error:
            return failure_from_exception(error), time.monotonic() - started, None, None
        return None, time.monotonic() - started, None, output

    def _tool(self) -> tuple[Tool | None, ToolFailure | None]:
        """The tool to run, or the failure that stands for it: a tool not registered, or
        arguments it cannot take."""
        try:
            tool = self.executor.registry.get(self.tool)
        except ToolNotFound as error:
            if self.fallback_used:  # errord named it: not the model's mistake
                message = f"the alternative {self.tool} is not registered with the executor"
                return None, ToolFailure(message, "ToolNotFound", "UNSUPPORTED")
            return None, ToolFailure(str(error), "ToolNotFound", "TOOL_NOT_FOUND")
        if self.call.malformed and not self.fallback_used:
            message = f"the arguments are not a JSON object: {self.call.malformed}"
            return None, ToolFailure(message, "InvalidArguments", "INVALID_INPUT")
        try:
            tool.check(self.call.arguments)
        except InvalidArguments as error:
            return None, ToolFailure(str(error), "InvalidArguments", "INVALID_INPUT")
        return tool, None

    async def _admit(self) -> Verdict | None:
        """AdmitCall: None when the attempt may run (or errord did not answer: it runs
        then), else the verdict that refused it."""
        request = pb.AdmitCallRequest(
            turn_id=self.batch.turn_id,
            call_id=self.call.call_id,
            tool=self.tool,
            attempt=self.attempt,
            arguments=as_struct(self.call.arguments),
        )
        assert self.link is not None
        response = await self.link.admit(request)
        if response is None or response.admitted:
            return None
        return from_decision(response.decision)

    async def _decide(self, failure: ToolFailure, elapsed: float) -> Verdict:
        request = pb.ReportFailureRequest(
            turn_id=self.batch.turn_id,
            call_id=self.call.call_id,
            tool=self.tool,
            attempt=self.attempt,
            error=failure.to_proto(),
            arguments=as_struct(self.call.arguments),
            elapsed=_duration(elapsed),
        )
        assert self.link is not None
        verdict = await self.link.decide(request)
        if verdict is None:
            verdict = self.executor.local_policy.decide(
                self.tool, failure, self.attempt, self.delays.get(self.tool, 0.0)
            )
        return verdict

    def _succeeded(self, output: Any) -> ToolResult:
        assert self.link is not None
        self.link.report_outcome(
            pb.ReportOutcomeRequest(
                turn_id=self.batch.turn_id,
                call_id=self.call.call_id,
                tool=self.tool,
                attempt=self.attempt,
                outcome=pb.OUTCOME_SUCCESS,
                decision_id=self.last_decision,
            )
        )
        return ToolResult(
            call_id=self.call.call_id,
            tool=self.call.name,
            status=ResultStatus.SUCCEEDED,
            output=output,
            attempts=self.attempts,
            fallback_used=self.fallback_used,
            tool_used=self.tool,
            decided_by=self.decided_by,
            decision_ids=tuple(self.decision_ids),
        )

    def _ended(self, verdict: Verdict, failure: ToolFailure | None) -> ToolResult:
        status = ENDINGS.get(verdict.action, ResultStatus.FAILED)
        code = verdict.code or (failure.code if failure else "")
        if status is ResultStatus.FAILED and code == "TIMEOUT":
            status = ResultStatus.TIMED_OUT
        output = None
        if verdict.action is Action.USE_DEFAULT and verdict.default_value is not NO_VALUE:
            output = verdict.default_value
        elif verdict.action is Action.CONTINUE_PARTIAL and failure is not None:
            output = failure.partial_result
        return ToolResult(
            call_id=self.call.call_id,
            tool=self.call.name,
            status=status,
            output=output,
            error=ResultError(
                code=code,
                error_class=verdict.error_class,
                message=failure.message if failure else verdict.reason,
                user_message=verdict.user_message,
                retryable=verdict.error_class == "transient",
            ),
            attempts=self.attempts,
            fallback_used=self.fallback_used,
            tool_used=self.tool,
            decided_by=verdict.decided_by,
            decision_ids=tuple(self.decision_ids),
            model_text=verdict.llm_message,
        )


def _duration(seconds: float) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromNanoseconds(int(seconds * 1e9))
    return duration


def _timed(result: ToolResult, started: float) -> ToolResult:
    return dataclasses.replace(result, execution_time_ms=(time.monotonic() - started) * 1000)


def _ended(call: ToolCall, status: ResultStatus, reason: str, *, output: Any = None) -> ToolResult:
    return ToolResult(
        call_id=call.call_id,
        tool=call.name,
        status=status,
        output=output,
        error=None
        if status is ResultStatus.DEFAULTED
        else ResultError("", "", reason, "This step was skipped.", False),
        decided_by=DecidedBy.LOCAL,
        model_text=f"Not run: {reason}.",
    )


def _consequence(call: ToolCall, consequence: Consequence, blocker: str) -> ToolResult:
    status = ENDINGS.get(consequence.action, ResultStatus.SKIPPED)
    output = consequence.default_value if consequence.default_value is not NO_VALUE else None
    reason = consequence.reason or f"{call.name} needs the result of {blocker}, which has none"
    return ToolResult(
        call_id=call.call_id,
        tool=call.name,
        status=status,
        output=output,
        error=None
        if status is ResultStatus.DEFAULTED
        else ResultError("", "", reason, "This step could not be done.", False),
        decided_by=DecidedBy.ERRORD,
        model_text=f"Not run: {reason}.",
    )
