"""The subcommands that talk to a running daemon, each a function ``(daemon, args, out) -> exit
status``.

``errord.cli.main`` parses the common options (``--target``, ``--token-file``,
``--json``, ...), opens the ``Daemon`` and hands it over; a command calls the
daemon, shows the answer through ``out``, and returns its exit status. A call
the daemon refuses raises ``CommandError``, which ``errord.cli.main`` prints. To add
a subcommand, write its function here and declare it in ``errord.cli.main`` with
``_operator(...)``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta

import grpc
from errord_client.v1 import errord_pb2 as pb
from grpc_health.v1 import health_pb2

from errord.cli import output as show
from errord.cli.connection import CommandError, Daemon
from errord.cli.output import Output
from errord.cli.trace_lines import event_line

Operate = Callable[[Daemon, argparse.Namespace, Output], int]
"""A subcommand: calls the daemon, shows the answer, returns the exit status."""

HEALTH_SERVICES = ("", *(service.full_name for service in pb.DESCRIPTOR.services_by_name.values()))
"""What ``health`` checks: the server as a whole (""), then each errord service."""
MAX_IDLE_RESUMES = 3
"""``tail`` gives up when the daemon drops it this many times in a row without an event."""


def trace(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    """The turn's trace, every page, as one GetTurnTraceResponse."""
    response = pb.GetTurnTraceResponse(events=turn_events(daemon, args.turn))
    out.show(response, "\n".join(event_line(event, with_turn=False) for event in response.events))
    return 0


def turn_events(daemon: Daemon, turn_id: str) -> list[pb.TraceEvent]:
    """Every event of the turn, oldest first, following the page tokens."""
    events: list[pb.TraceEvent] = []
    token = ""
    while True:
        request = pb.GetTurnTraceRequest(turn_id=turn_id, page_token=token)
        page: pb.GetTurnTraceResponse = daemon.call(daemon.errors.GetTurnTrace, request)
        events.extend(page.events)
        token = page.next_page_token
        if not token:
            return events


def tail(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    """Each event as it is committed, until Ctrl-C (exit 0) or the daemon ends the stream."""
    try:
        for event in follow(daemon, args.turn, args.after):
            response = pb.WatchTraceResponse(event=event)
            out.line(response, event_line(event, with_turn=not args.turn))
    except KeyboardInterrupt:
        pass
    return 0


def follow(daemon: Daemon, turn_id: str, after: int) -> Iterator[pb.TraceEvent]:
    """WatchTrace's events one by one (a response may hold several), first the recorded
    events after ``after`` when it is not 0.

    When the daemon drops a watcher that fell behind (RESOURCE_EXHAUSTED), watch
    again after the last sequence received: the daemon replays what was missed.
    """
    idle_resumes = 0
    while True:
        request = pb.WatchTraceRequest(turn_id=turn_id, after_sequence=after)
        received = False
        try:
            for response in daemon.stream(daemon.errors.WatchTrace, request):
                for event in [response.event] if response.HasField("event") else response.events:
                    after, received = event.sequence, True
                    yield event
            return
        except CommandError as error:
            if error.code is not grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            idle_resumes = 0 if received else idle_resumes + 1
            if idle_resumes >= MAX_IDLE_RESUMES:
                raise CommandError(f"{error} ({idle_resumes} times without an event)") from None
            _say_resuming(error, after)


def _say_resuming(error: CommandError, after: int) -> None:
    where = f"after sequence {after}" if after else "with new events (some may be missed)"
    print(f"errord: {error}; watching again {where}", file=sys.stderr)


def breakers(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    """Every tool's breaker (``breakers``, ``breaker list``)."""
    request = pb.ListBreakersRequest()
    response: pb.ListBreakersResponse = daemon.call(daemon.operators.ListBreakers, request)
    out.show(response, show.format_breakers(list(response.breakers)))
    return 0


def breaker_reset(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    request = pb.ResetBreakerRequest(tool=args.tool, by=args.by, scope=args.scope)
    response: pb.ResetBreakerResponse = daemon.call(daemon.operators.ResetBreaker, request)
    out.show(response, show.format_breakers([response.breaker]))
    return 0


def breaker_open(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    request = pb.ForceOpenBreakerRequest(tool=args.tool, by=args.by, scope=args.scope)
    request.duration.FromTimedelta(timedelta(seconds=args.seconds))
    response: pb.ForceOpenBreakerResponse = daemon.call(daemon.operators.ForceOpenBreaker, request)
    out.show(response, show.format_breakers([response.breaker]))
    return 0


def reload(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    """ReloadManifests: 0 when the new set is in force, 1 (with its problems) when the
    daemon refused it and kept the set in force."""
    request = pb.ReloadManifestsRequest(by=args.by)
    response: pb.ReloadManifestsResponse = daemon.call(daemon.operators.ReloadManifests, request)
    tools = ", ".join(response.tools) or "none"
    if response.applied:
        out.show(response, f"manifests reloaded: {len(response.tools)} tools ({tools})")
        return 0
    problems = "\n".join(response.problems)
    out.show(
        response,
        f"reload refused; the {len(response.tools)} tools in force stay ({tools}):\n{problems}",
    )
    return 1


def stats(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    request = pb.GetToolStatsRequest(tool=args.tool, scope=args.scope)
    response: pb.GetToolStatsResponse = daemon.call(daemon.operators.GetToolStats, request)
    out.show(response, show.format_stats(response))
    return 0


def fleet(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    response: pb.GetFleetResponse = daemon.call(daemon.operators.GetFleet, pb.GetFleetRequest())
    out.show(response, show.format_fleet(response))
    return 0


def memory(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    request = pb.RecallEpisodesRequest(tool=args.tool, message=args.message or "", scope=args.scope)
    response: pb.RecallEpisodesResponse = daemon.call(daemon.operators.RecallEpisodes, request)
    out.show(response, show.format_memory(show.scoped(args.tool, args.scope), response))
    return 0


def health(daemon: Daemon, args: argparse.Namespace, out: Output) -> int:
    """grpc.health.v1 Check of the server and of each errord service; 1 unless all serve."""
    answers = {service: health_check(daemon, service) for service in HEALTH_SERVICES}
    statuses = {service: status_name(answer.status) for service, answer in answers.items()}
    out.show(answers, show.format_health(statuses))
    failing = [
        f"{name or '(server)'} {status}" for name, status in statuses.items() if status != "SERVING"
    ]
    if not failing:
        return 0
    print(f"errord: not serving at {daemon.target}: {', '.join(failing)}", file=sys.stderr)
    return 1


def health_check(daemon: Daemon, service: str) -> health_pb2.HealthCheckResponse:
    """The service's status; SERVICE_UNKNOWN for a service the server does not report on."""
    request = health_pb2.HealthCheckRequest(service=service)
    try:
        return daemon.call(daemon.health.Check, request)
    except CommandError as error:
        if error.code is not grpc.StatusCode.NOT_FOUND:
            raise
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)


def status_name(status: int) -> str:
    try:
        name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
    except ValueError:
        return str(status)
    return name
