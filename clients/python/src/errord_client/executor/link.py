"""The executor's line to errord: decisions within a deadline, outcomes in the background.

The calls go through the executor's AsyncErrordClient: its stub and its token, on a channel
with ``CHANNEL_OPTIONS``.

- Decisions. Failures reported in the same turn of the event loop go to errord as one
  ReportFailures (a model's parallel calls often fail together), each answered with its
  decision, or with None when errord did not answer within ``decision_timeout``: the
  caller then asks the local policy. Reports are idempotent, so gRPC's own retry policy
  (the channel's service config) retries UNAVAILABLE within that deadline.
- Admission. AdmitCall, asked only when a tool's breaker is not closed.
- Outcomes. Queued and sent in the background, never on a call's path; retried while
  errord is away, for ``outcome_patience`` seconds at most.
- Turns. BeginTurn (a batch with a plan), EndTurn once the turn's outcomes are sent.
- Trace context. When opentelemetry is importable, the context current where a failure,
  an admission or an outcome is reported goes with its call (``traceparent`` in the
  metadata, by the global propagator), so errord's span of the decision joins the agent's
  trace; a batch of failures goes with its first one's. Without it nothing changes.

One warning is logged when errord stops answering, and one line when it answers again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
from google.protobuf import json_format, struct_pb2

from errord_client.client import AsyncErrordClient
from errord_client.executor.verdict import Verdict, from_decision
from errord_client.v1 import errord_pb2 as pb

log = logging.getLogger("errord_client.executor")

SERVICE_NAME = "errord.v1.ErrorHandlerService"

RETRY_SERVICE_CONFIG = json.dumps(
    {
        "methodConfig": [
            {
                "name": [{"service": SERVICE_NAME}],
                "retryPolicy": {
                    "maxAttempts": 5,
                    "initialBackoff": "0.02s",
                    "maxBackoff": "0.1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    }
)
"""Every ErrorHandlerService RPC is idempotent: retry UNAVAILABLE (errord restarting, a
connection being set up), briefly; the call's deadline bounds it."""

CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (  # the executor's AsyncErrordClient's
    ("grpc.enable_retries", 1),
    ("grpc.service_config", RETRY_SERVICE_CONFIG),
    # Reconnect soon after errord comes back, not after grpc's default backoff (up to 2 min).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


def as_struct(arguments: Any) -> struct_pb2.Struct:
    """Tool arguments as a Struct; values JSON cannot hold are sent as their text."""
    struct = struct_pb2.Struct()
    try:
        json_format.ParseDict(arguments, struct)
    except (json_format.ParseError, TypeError, ValueError):
        struct.Clear()
        json_format.ParseDict(json.loads(json.dumps(arguments, default=str)), struct)
    return struct


Metadata = tuple[tuple[str, str], ...]
Inject = Callable[[dict[str, str]], None]
_NOT_TRIED: Any = object()
_inject: Inject | None = _NOT_TRIED


def _injector() -> Inject | None:
    """opentelemetry's global ``propagate.inject``, imported on first use; None without it."""
    global _inject
    if _inject is _NOT_TRIED:
        try:
            from opentelemetry import propagate
        except ImportError:
            _inject = None
        else:
            _inject = propagate.inject
    return _inject


def traced(metadata: Metadata | None) -> Metadata | None:
    """``metadata`` with the current OpenTelemetry context injected (W3C ``traceparent``
    by default), when opentelemetry is installed and a context is current."""
    inject = _injector()
    if inject is None:
        return metadata
    carrier: dict[str, str] = {}
    inject(carrier)
    if not carrier:
        return metadata
    return (*(metadata or ()), *carrier.items())


@dataclass
class _Pending:
    request: pb.ReportFailureRequest
    answer: asyncio.Future[Verdict | None]
    metadata: Metadata | None = None


@dataclass
class _Outcome:
    request: pb.ReportOutcomeRequest
    metadata: Metadata | None = None
    first_tried: float = field(default_factory=time.monotonic)


class ErrordLink:
    """Calls errord for the executor; never raises for errord being away."""

    def __init__(
        self,
        client: AsyncErrordClient,
        *,
        decision_timeout: float = 0.25,
        outcome_patience: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.metadata = client.metadata
        self.decision_timeout = decision_timeout
        self.outcome_patience = outcome_patience
        self._clock = clock
        self._failures: list[_Pending] = []
        self._outcomes: deque[_Outcome] = deque()
        self._sending: asyncio.Task[None] | None = None
        self._outcomes_sent = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._in_flight = 0
        """Outcomes taken off the queue and not sent yet."""
        self._endings = 0
        """Turns whose EndTurn is not sent yet."""
        self._away = asyncio.Event()
        """Set while errord is away (what ``answering`` says), for ``drain``."""
        self.answering = True
        """False from the first unanswered call until errord answers again."""

    # decisions

    def decide(self, request: pb.ReportFailureRequest) -> asyncio.Future[Verdict | None]:
        """errord's verdict on one failure, or None if it does not answer in time."""
        answer: asyncio.Future[Verdict | None] = asyncio.get_running_loop().create_future()
        if not self._failures:
            asyncio.get_running_loop().call_soon(self._send_failures)
        self._failures.append(_Pending(request, answer, traced(self.metadata)))
        return answer

    def _send_failures(self) -> None:
        batch, self._failures = self._failures, []
        self._spawn(self._report(batch))

    async def _report(self, batch: list[_Pending]) -> None:
        try:
            if len(batch) == 1:
                response = await self.client.stub.ReportFailure(
                    batch[0].request, timeout=self.decision_timeout, metadata=batch[0].metadata
                )
                answers: Sequence[pb.RecoveryDecision | None] = [response.decision]
            else:
                many = await self.client.stub.ReportFailures(
                    pb.ReportFailuresRequest(failures=[p.request for p in batch]),
                    timeout=self.decision_timeout,
                    metadata=batch[0].metadata,
                )
                answers = [_answer(result) for result in many.results]
            self._answered()
        except grpc.aio.AioRpcError as error:
            self._unanswered(error)
            answers = []
        except Exception:  # an answer we cannot read must not leave a call waiting forever
            log.exception("errord's answer to %d failures could not be read", len(batch))
            answers = []
        for pending, decision in itertools.zip_longest(batch, answers[: len(batch)]):
            if not pending.answer.done():
                pending.answer.set_result(None if decision is None else from_decision(decision))

    # admission

    async def admit(self, request: pb.AdmitCallRequest) -> pb.AdmitCallResponse | None:
        """errord's admission of an attempt, or None if it does not answer in time."""
        try:
            response: pb.AdmitCallResponse = await self.client.stub.AdmitCall(
                request, timeout=self.decision_timeout, metadata=traced(self.metadata)
            )
        except grpc.aio.AioRpcError as error:
            self._unanswered(error)
            return None
        self._answered()
        return response

    # turns

    async def begin_turn(self, request: pb.BeginTurnRequest) -> bool:
        """Begin a turn with its plan; False when errord did not take it."""
        try:
            await self.client.stub.BeginTurn(
                request, timeout=self.decision_timeout * 4, metadata=self.metadata
            )
        except grpc.aio.AioRpcError as error:
            self._unanswered(error)
            return False
        self._answered()
        return True

    def end_turn(self, turn_id: str) -> None:
        """End the turn in the background, once its outcomes are sent."""
        self._endings += 1
        self._spawn(self._end_turn(turn_id))

    async def _end_turn(self, turn_id: str) -> None:
        try:
            await self.outcomes_sent()
            await self.client.stub.EndTurn(
                pb.EndTurnRequest(turn_id=turn_id), timeout=5.0, metadata=self.metadata
            )
        except grpc.aio.AioRpcError as error:
            if error.code() is not grpc.StatusCode.NOT_FOUND:  # errord never heard of it
                self._unanswered(error)
                return
        self._endings -= 1

    # outcomes

    def report_outcome(self, request: pb.ReportOutcomeRequest) -> None:
        """Queue an outcome; it is sent in the background."""
        self._outcomes.append(_Outcome(request, traced(self.metadata)))
        self._outcomes_sent.clear()
        if self._sending is None or self._sending.done():
            self._sending = self._spawn(self._send_outcomes())

    async def outcomes_sent(self) -> None:
        """Wait until every outcome queued so far was sent (or given up on)."""
        if self._outcomes or (self._sending is not None and not self._sending.done()):
            await self._outcomes_sent.wait()

    async def _send_outcomes(self) -> None:
        wait = 0.05
        while self._outcomes:
            batch = list(self._outcomes)
            self._outcomes.clear()
            self._in_flight = len(batch)
            sent = await asyncio.gather(*(self._send_outcome(o) for o in batch))
            self._in_flight = 0
            retry = [
                outcome
                for outcome, ok in zip(batch, sent, strict=True)
                if not ok and self._clock() - outcome.first_tried < self.outcome_patience
            ]
            if len(retry) < sum(not ok for ok in sent):
                log.warning(
                    "errord did not answer: outcomes of %d attempts were not recorded",
                    sum(not ok for ok in sent) - len(retry),
                )
            if retry:
                self._outcomes.extendleft(reversed(retry))
                await asyncio.sleep(wait)
                wait = min(wait * 2, 1.0)
            else:
                wait = 0.05
        self._outcomes_sent.set()

    async def _send_outcome(self, outcome: _Outcome) -> bool:
        try:
            await self.client.stub.ReportOutcome(
                outcome.request, timeout=2.0, metadata=outcome.metadata
            )
        except grpc.aio.AioRpcError as error:
            self._unanswered(error)
            # Only errord being away is worth another try; anything else would fail again.
            return error.code() not in (
                grpc.StatusCode.UNAVAILABLE,
                grpc.StatusCode.DEADLINE_EXCEEDED,
            )
        self._answered()
        return True

    # life

    async def drain(self, patience: float) -> None:
        """Wait, ``patience`` seconds at most, for outcomes and turn endings to be sent;
        no longer once errord is away (a call went unanswered, or the channel cannot
        connect: a closed port, a dead daemon). What was not sent is ``undelivered``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        away = loop.create_task(self._away.wait())
        try:
            while not away.done() and not self._unreachable():
                pending = {task for task in self._tasks if not task.done()}
                left = deadline - loop.time()
                if not pending or left <= 0:
                    return
                await asyncio.wait({*pending, away}, timeout=left, return_when="FIRST_COMPLETED")
        finally:
            away.cancel()

    def _unreachable(self) -> bool:
        """True while the channel's last connection attempt failed."""
        state = self.client.channel.get_state(try_to_connect=False)
        return state is grpc.ChannelConnectivity.TRANSIENT_FAILURE

    @property
    def undelivered(self) -> tuple[int, int]:
        """What is not sent yet: outcomes (queued or in flight) and turn endings."""
        return len(self._outcomes) + self._in_flight, self._endings

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()

    def _spawn(self, work: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _answered(self) -> None:
        self._away.clear()
        if not self.answering:
            self.answering = True
            log.warning("errord answers again: its decisions apply once more")

    def _unanswered(self, error: grpc.aio.AioRpcError) -> None:
        if error.code() is grpc.StatusCode.CANCELLED:
            return  # the executor closed with the call still out: nothing to tell
        if error.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            log.warning("errord refused a call: %s: %s", error.code().name, error.details())
            return
        self._away.set()
        if self.answering:
            self.answering = False
            log.warning(
                "errord did not answer (%s): the local policy decides until it does",
                error.code().name,
            )


def _answer(result: pb.ReportFailuresResult) -> pb.RecoveryDecision | None:
    if result.WhichOneof("result") == "answer":
        return result.answer.decision
    log.warning("errord refused a report: %s", result.refused.message)
    return None
