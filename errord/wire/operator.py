"""The OperatorService servicer: breakers and tool statistics for operators.

Reads come from the ToolHealthBoard (the same figures the Prometheus endpoint
serves; every tool's, a slice of tools at a time); a reset or a forced opening goes
through errord.operator_actions, which records it as a trace event before answering.
Requests are validated in errord.wire.operator_requests, answers encoded in
errord.wire.operator_responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import message

from errord.clock import Clock
from errord.decide.model.scope import tool_key, tool_of
from errord.errors import NoManifestDirectory, ToolNotFound
from errord.fleet.status import FleetSnapshot
from errord.operator_actions import OperatorActions
from errord.reload import ManifestReloader
from errord.state.health import ToolHealthBoard
from errord.wire import operator_requests, operator_responses, responses, turn_responses
from errord.wire.decoding import decode
from errord.wire.fleet import ALONE, fleet_sync_to_proto, fleet_to_proto
from errord.wire.replay import Replays, replay_request_from_proto
from errord.wire.status import Handle, abort, unary_handlers

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OperatorService"].full_name


class OperatorService:
    """errord.v1.OperatorService over the health board and the operator actions."""

    def __init__(
        self,
        board: ToolHealthBoard,
        actions: OperatorActions,
        clock: Clock,
        reloader: ManifestReloader | None = None,
        replays: Replays | None = None,
        fleet: Callable[[], FleetSnapshot] | None = None,
    ) -> None:
        self._board = board
        self._fleet = fleet
        """The fleet as this daemon sees it (errord.fleet.link); None without fleet_url."""
        self._actions = actions
        self._clock = clock
        self._reloader = reloader
        self._replays = replays

    async def replay_manifests(
        self, data: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        """ReplayManifests: progress, then the summary (errord.wire.replay), serialized
        here as every stream's responses are; any error answered with its status."""
        try:
            asked = replay_request_from_proto(decode(pb.ReplayManifestsRequest, data))
            if self._replays is None:
                raise NoManifestDirectory("this errord does not replay its trace")
            async for response in self._replays.replay(asked):
                yield response.SerializeToString()
        except Exception as error:  # every error is answered with a status, never UNKNOWN
            await abort(context, error)

    async def reload_manifests(self, data: bytes) -> pb.ReloadManifestsResponse:
        by = operator_requests.reload_by_from_proto(decode(pb.ReloadManifestsRequest, data))
        if self._reloader is None:
            raise NoManifestDirectory("errord was started without a manifests directory")
        reloaded = await self._reloader.reload(f"ReloadManifests {by}".strip())
        return pb.ReloadManifestsResponse(
            applied=reloaded.applied, tools=reloaded.tools, problems=reloaded.problems
        )

    async def list_breakers(self, data: bytes) -> pb.ListBreakersResponse:
        decode(pb.ListBreakersRequest, data)
        now = self._clock.now()
        return pb.ListBreakersResponse(
            breakers=[
                operator_responses.breaker_to_proto(self._board.breaker(tool, now))
                for tool in self._board.tools()
            ]
        )

    async def get_breaker(self, data: bytes) -> pb.GetBreakerResponse:
        request = decode(pb.GetBreakerRequest, data)
        key = self._known_tool(request.tool, request.scope)
        breaker = self._board.breaker(key, self._clock.now())
        return pb.GetBreakerResponse(breaker=operator_responses.breaker_to_proto(breaker))

    async def reset_breaker(self, data: bytes) -> pb.ResetBreakerResponse:
        asked = operator_requests.reset_from_proto(decode(pb.ResetBreakerRequest, data))
        event = await self._actions.reset_breaker(asked.tool, by=asked.by, scope=asked.scope)
        key = tool_key(asked.tool, asked.scope)
        return pb.ResetBreakerResponse(
            breaker=operator_responses.breaker_to_proto(
                self._board.breaker(key, self._clock.now())
            ),
            event=turn_responses.trace_event_to_proto(event),
        )

    async def force_open_breaker(self, data: bytes) -> pb.ForceOpenBreakerResponse:
        asked = operator_requests.forced_opening_from_proto(
            decode(pb.ForceOpenBreakerRequest, data)
        )
        event = await self._actions.force_open_breaker(
            asked.tool, duration=asked.seconds or None, by=asked.by, scope=asked.scope
        )
        key = tool_key(asked.tool, asked.scope)
        return pb.ForceOpenBreakerResponse(
            breaker=operator_responses.breaker_to_proto(
                self._board.breaker(key, self._clock.now())
            ),
            event=turn_responses.trace_event_to_proto(event),
        )

    async def get_tool_stats(self, data: bytes) -> pb.GetToolStatsResponse:
        """A step per tool, a slice of tools at a time (errord.state.health), and one pass
        over episodic memory, off the loop."""
        request = decode(pb.GetToolStatsRequest, data)
        tools = self._board.tools()
        if request.scope:
            tools = [self._known_tool(request.tool, request.scope)]
        elif request.tool:
            tool, _ = operator_requests.tool_from_proto(request.tool)
            tools = [key for key in tools if tool_of(key) == tool]  # each of its scopes
            if not tools:
                raise ToolNotFound(tool)
        now = self._clock.now()
        candidates = await self._board.read_override_candidates(now)
        answer = pb.GetToolStatsResponse(window=responses.duration(self._board.thresholds.window))
        async for healths in self._board.read(tools, now, candidates):
            answer.tools.extend(map(operator_responses.tool_health_to_proto, healths))
        status = self._fleet().status if self._fleet is not None else ALONE
        fleet_sync_to_proto(status, answer.fleet)
        return answer

    async def get_fleet(self, data: bytes) -> pb.GetFleetResponse:
        decode(pb.GetFleetRequest, data)
        return fleet_to_proto(self._fleet() if self._fleet is not None else None)

    async def recall_episodes(self, data: bytes) -> pb.RecallEpisodesResponse:
        asked = operator_requests.episode_query_from_proto(decode(pb.RecallEpisodesRequest, data))
        remembered = await self._actions.recall_episodes(
            asked.tool, asked.message, asked.code, asked.scope
        )
        now = self._clock.now()
        activity = self._board.activity(tool_key(asked.tool, asked.scope))
        verdicts = operator_responses.MemoryVerdicts(
            self._board.min_episodes,
            activity.succeeded_at if activity is not None else None,
            activity.reset_at if activity is not None else None,
        )
        return operator_responses.recalled_to_proto(remembered, now, verdicts)

    def _known_tool(self, tool: str, scope: str = "") -> str:
        """The key of ``tool`` in ``scope`` (errord.decide.model.scope), which errord knows."""
        tool, scope = operator_requests.tool_from_proto(tool, scope)
        key = tool_key(tool, scope)
        if not self._board.knows(key):
            raise ToolNotFound(tool, scope=scope)
        return key


def rpc_handlers(service: OperatorService) -> grpc.GenericRpcHandler:
    """The service's method handlers; requests arrive as bytes."""
    methods: dict[str, tuple[Handle, type[message.Message]]] = {
        "ListBreakers": (service.list_breakers, pb.ListBreakersResponse),
        "GetBreaker": (service.get_breaker, pb.GetBreakerResponse),
        "ResetBreaker": (service.reset_breaker, pb.ResetBreakerResponse),
        "ForceOpenBreaker": (service.force_open_breaker, pb.ForceOpenBreakerResponse),
        "GetToolStats": (service.get_tool_stats, pb.GetToolStatsResponse),
        "RecallEpisodes": (service.recall_episodes, pb.RecallEpisodesResponse),
        "ReloadManifests": (service.reload_manifests, pb.ReloadManifestsResponse),
        "GetFleet": (service.get_fleet, pb.GetFleetResponse),
    }
    handlers = unary_handlers(methods)
    handlers["ReplayManifests"] = grpc.unary_stream_rpc_method_handler(
        service.replay_manifests, response_serializer=None
    )
    return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)
