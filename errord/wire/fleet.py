"""GetFleet's answer, and the fleet's state in GetToolStats, as wire messages."""

from __future__ import annotations

from datetime import datetime

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import timestamp_pb2

from errord.decide.model.scope import tool_and_scope
from errord.fleet.status import FleetSnapshot, FleetState, FleetStatus
from errord.wire.responses import timestamp

FLEET_STATES = {
    FleetState.OFF: pb.FLEET_STATE_OFF,
    FleetState.SYNCING: pb.FLEET_STATE_SYNCING,
    FleetState.IN_SYNC: pb.FLEET_STATE_IN_SYNC,
    FleetState.ALONE: pb.FLEET_STATE_ALONE,
}

ALONE = FleetStatus()
"""A daemon without fleet_url."""


def fleet_sync_to_proto(status: FleetStatus, into: pb.FleetSync | None = None) -> pb.FleetSync:
    sync = into if into is not None else pb.FleetSync()
    sync.state = FLEET_STATES[status.state]
    sync.fleet = status.fleet
    sync.host = status.host
    _time(status.since, sync.since)
    sync.problem = status.problem
    sync.hosts = status.hosts
    sync.quorum = status.quorum
    sync.outages = status.outages
    return sync


def fleet_to_proto(snapshot: FleetSnapshot | None) -> pb.GetFleetResponse:
    response = pb.GetFleetResponse()
    if snapshot is None:
        fleet_sync_to_proto(ALONE, response.sync)
        return response
    fleet_sync_to_proto(snapshot.status, response.sync)
    for host in snapshot.hosts:
        added = response.hosts.add(
            host=host.host, this_host=host.this_host, live=host.live, last_word=host.last_word
        )
        _time(host.seen_at, added.seen_at)
        _time(host.last_word_at, added.last_word_at)
    for breaker in snapshot.breakers:
        tool, scope = tool_and_scope(breaker.key)
        shared = response.breakers.add(
            tool=tool,
            scope=scope,
            open_on=breaker.open_on,
            refused=breaker.refused,
            probe_host=breaker.probe_host,
        )
        _time(breaker.half_opens_at, shared.half_opens_at)
        _time(breaker.probe_until, shared.probe_until)
    for window in snapshot.windows:
        tool, scope = tool_and_scope(window.key)
        held = response.windows.add(tool=tool, scope=scope, host=window.host)
        _time(window.until, held.until)
    response.shared_errors = snapshot.shared_errors
    for reason, count in snapshot.status.ignored.items():
        response.ignored[reason.value] = count
    return response


def _time(when: datetime | None, into: timestamp_pb2.Timestamp) -> None:
    if when is not None:
        timestamp(when, into)
