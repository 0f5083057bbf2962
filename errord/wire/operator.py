"""The OperatorService servicer: breakers and tool statistics for operators.

Reads come from the ToolHealthBoard (the same figures the Prometheus endpoint
serves); a reset or a forced opening goes through errord.operator_actions, which
records it as a trace event before answering.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import grpc
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import message

from errord.clock import Clock
from errord.decide.manifest import MAX_COOLDOWN
from errord.decide.memory import MemoryKey, MemoryStats, recall
from errord.errors import NoManifestDirectory, ToolNotFound
from errord.operator_actions import OperatorActions
from errord.reload import ManifestReloader
from errord.state.health import BreakerView, ToolHealth, ToolHealthBoard
from errord.wire import convert
from errord.wire.convert import Violations
from errord.wire.decoding import decode
from errord.wire.service import answer

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OperatorService"].full_name
MAX_FORCED_OPEN_SECONDS = MAX_COOLDOWN
"""The longest timed forced opening (a week); longer ones are until reset."""
MAX_BY_LENGTH = 512


class OperatorService:
    """errord.v1.OperatorService over the health board and the operator actions."""

    def __init__(
        self,
        board: ToolHealthBoard,
        actions: OperatorActions,
        clock: Clock,
        reloader: ManifestReloader | None = None,
    ) -> None:
        self._board = board
        self._actions = actions
        self._clock = clock
        self._reloader = reloader

    async def reload_manifests(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReloadManifestsResponse:
        async def handle() -> pb.ReloadManifestsResponse:
            request = decode(pb.ReloadManifestsRequest, data)
            check = Violations()
            by = check.text("by", request.by, MAX_BY_LENGTH)
            check.raise_any()
            if self._reloader is None:
                raise NoManifestDirectory("errord was started without a manifests directory")
            reloaded = await self._reloader.reload(f"ReloadManifests {by}".strip())
            return pb.ReloadManifestsResponse(
                applied=reloaded.applied, tools=reloaded.tools, problems=reloaded.problems
            )

        return await answer(context, handle)

    async def list_breakers(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListBreakersResponse:
        async def handle() -> pb.ListBreakersResponse:
            decode(pb.ListBreakersRequest, data)
            now = self._clock.now()
            return pb.ListBreakersResponse(
                breakers=[
                    breaker_to_proto(self._board.breaker(tool, now)) for tool in self._board.tools()
                ]
            )

        return await answer(context, handle)

    async def get_breaker(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetBreakerResponse:
        async def handle() -> pb.GetBreakerResponse:
            tool = self._known_tool(decode(pb.GetBreakerRequest, data).tool)
            breaker = self._board.breaker(tool, self._clock.now())
            return pb.GetBreakerResponse(breaker=breaker_to_proto(breaker))

        return await answer(context, handle)

    async def reset_breaker(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ResetBreakerResponse:
        async def handle() -> pb.ResetBreakerResponse:
            request = decode(pb.ResetBreakerRequest, data)
            check = Violations()
            tool = check.identifier("tool", request.tool)
            by = check.text("by", request.by, MAX_BY_LENGTH)
            check.raise_any()
            event = await self._actions.reset_breaker(tool, by=by)
            return pb.ResetBreakerResponse(
                breaker=breaker_to_proto(self._board.breaker(tool, self._clock.now())),
                event=convert.trace_event_to_proto(event),
            )

        return await answer(context, handle)

    async def force_open_breaker(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ForceOpenBreakerResponse:
        async def handle() -> pb.ForceOpenBreakerResponse:
            request = decode(pb.ForceOpenBreakerRequest, data)
            check = Violations()
            tool = check.identifier("tool", request.tool)
            by = check.text("by", request.by, MAX_BY_LENGTH)
            problems_before = len(check.found)
            seconds = check.seconds("duration", request.duration)
            if len(check.found) == problems_before and seconds > MAX_FORCED_OPEN_SECONDS:
                check.add(
                    "duration",
                    f"at most {MAX_FORCED_OPEN_SECONDS:g} s (a week); leave it unset to keep "
                    "the breaker open until ResetBreaker",
                )
            check.raise_any()
            event = await self._actions.force_open_breaker(tool, duration=seconds or None, by=by)
            return pb.ForceOpenBreakerResponse(
                breaker=breaker_to_proto(self._board.breaker(tool, self._clock.now())),
                event=convert.trace_event_to_proto(event),
            )

        return await answer(context, handle)

    async def get_tool_stats(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetToolStatsResponse:
        async def handle() -> pb.GetToolStatsResponse:
            request = decode(pb.GetToolStatsRequest, data)
            tools = [self._known_tool(request.tool)] if request.tool else self._board.tools()
            now = self._clock.now()
            candidates = self._board.override_candidates(now)
            return pb.GetToolStatsResponse(
                tools=[
                    tool_health_to_proto(self._board.health(tool, now, candidates))
                    for tool in tools
                ],
                window=convert.duration(self._board.thresholds.window),
            )

        return await answer(context, handle)

    async def recall_episodes(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.RecallEpisodesResponse:
        async def handle() -> pb.RecallEpisodesResponse:
            request = decode(pb.RecallEpisodesRequest, data)
            check = Violations()
            tool = check.identifier("tool", request.tool)
            message = check.text("message", request.message) if request.message else None
            code = None
            if request.code != pb.ERROR_CODE_UNSPECIFIED:
                code = check.enum("code", request.code, convert.CODES)
            check.raise_any()
            remembered = await self._actions.recall_episodes(tool, message, code)
            now = self._clock.now()
            return pb.RecallEpisodesResponse(
                errors=[remembered_to_proto(key, stats, now) for key, stats in remembered]
            )

        return await answer(context, handle)

    def _known_tool(self, tool: str) -> str:
        check = Violations()
        tool = check.identifier("tool", tool)
        check.raise_any()
        if not self._board.knows(tool):
            raise ToolNotFound(tool)
        return tool


def breaker_to_proto(view: BreakerView) -> pb.Breaker:
    policy = view.policy
    message = pb.Breaker(
        tool=view.tool,
        state=convert.breaker_state_to_proto(view.state, view.now),
        effective_phase=convert.WIRE_PHASES[view.phase],
        failure_threshold=policy.failure_threshold,
        success_threshold=policy.success_threshold,
        cooldown=convert.duration(policy.cooldown),
    )
    if view.half_opens_in is not None:
        message.half_opens_in.CopyFrom(convert.duration(view.half_opens_in.total_seconds()))
    return message


def remembered_to_proto(key: MemoryKey, stats: MemoryStats, now: datetime) -> pb.RememberedError:
    return pb.RememberedError(
        signature=key.signature,
        fingerprint=stats.fingerprint,
        recoveries=[
            pb.RecoveryEvidence(
                recovery=name,
                succeeded=evidence.succeeded,
                failed=evidence.failed,
                unknown=evidence.unknown,
                success_rate=evidence.success_rate,
            )
            for name, evidence in sorted(recall(stats, now).items())
        ],
    )


def tool_health_to_proto(health: ToolHealth) -> pb.ToolStats:
    stats, recent = health.stats, health.recent
    return pb.ToolStats(
        tool=health.tool,
        executions=stats.executions,
        successes=stats.successes,
        errors=stats.errors,
        transient_errors=stats.transient_errors,
        permanent_errors=stats.permanent_errors,
        timeouts=stats.timeouts,
        retries=stats.retries,
        retry_successes=stats.retry_successes,
        retry_success_rate=health.retry_success_rate,
        breaker_opens=stats.breaker_opens,
        failure_rate=health.failure_rate,
        mean_duration=convert.duration(stats.durations.mean),
        p95_duration=convert.duration(stats.durations.quantile(0.95)),
        errors_by_code={code.value: count for code, count in stats.errors_by_code.items()},
        errors_by_exception=stats.errors_by_exception,
        decisions={action.value: count for action, count in stats.decisions.items()},
        recent=pb.RecentStats(
            executions=recent.executions,
            errors=recent.errors,
            failure_rate=health.recent_failure_rate,
            mean_duration=convert.duration(health.recent_mean_duration),
        ),
        breaker=breaker_to_proto(health.breaker),
        alerts=[
            pb.ToolAlert(kind=f"ALERT_KIND_{alert.kind.value}", message=alert.message)
            for alert in health.alerts
        ],
        override_candidates=[
            pb.OverrideCandidate(
                signature=candidate.signature,
                fingerprint=candidate.fingerprint,
                retried=candidate.retried,
                recovered=candidate.recovered,
                suggested_rule=candidate.suggested_rule,
            )
            for candidate in health.override_candidates
        ],
    )


def rpc_handlers(service: OperatorService) -> grpc.GenericRpcHandler:
    """The service's method handlers; requests arrive as bytes."""
    methods: dict[str, tuple[Callable[..., Awaitable[Any]], type[message.Message]]] = {
        "ListBreakers": (service.list_breakers, pb.ListBreakersResponse),
        "GetBreaker": (service.get_breaker, pb.GetBreakerResponse),
        "ResetBreaker": (service.reset_breaker, pb.ResetBreakerResponse),
        "ForceOpenBreaker": (service.force_open_breaker, pb.ForceOpenBreakerResponse),
        "GetToolStats": (service.get_tool_stats, pb.GetToolStatsResponse),
        "RecallEpisodes": (service.recall_episodes, pb.RecallEpisodesResponse),
        "ReloadManifests": (service.reload_manifests, pb.ReloadManifestsResponse),
    }
    return grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            name: grpc.unary_unary_rpc_method_handler(
                method, response_serializer=response.SerializeToString
            )
            for name, (method, response) in methods.items()
        },
    )
