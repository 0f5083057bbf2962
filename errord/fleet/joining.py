"""Joining a fleet: the view, the outbox and the link built over a host's projections, when
``fleet_url`` asks for it (errord.app); redis-py is imported only then."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from errord.clock import Clock
from errord.config import Settings
from errord.errors import ConfigError
from errord.fleet.outbox import Outbox
from errord.fleet.view import FleetView
from errord.state.projections import Projections

if TYPE_CHECKING:
    from errord.fleet.link import Changed, FleetLink


def fleet_host(settings: Settings) -> str:
    """This daemon's name in its fleet: ``fleet_host``, else the machine's host name."""
    return settings.fleet_host or socket.gethostname()[:64]


def join_fleet(
    settings: Settings, state: Projections, clock: Clock, on_change: Changed
) -> FleetLink | None:
    """The link to the fleet of ``settings`` (not started), or None without fleet_url."""
    if settings.fleet_url is None:
        return None
    try:
        from errord.fleet.link import FleetLink
    except ImportError as error:
        raise ConfigError(
            f"fleet_url: the fleet needs a package that is missing ({error.name}): "
            "install errord[fleet]"
        ) from error
    view = FleetView(
        fleet_host(settings),
        settings.fleet_quorum,
        settings.fleet_breaker_window_seconds,
        state.windows.view,
        state.memory.view,
    )
    outbox = Outbox(
        state.breakers.snapshot,
        lambda: {
            key: window
            for key, window in state.windows.snapshot().items()
            if window.holds(clock.now())
        },
        state.memory.snapshot,
        state.memory.committed,
    )
    return FleetLink(
        settings.fleet_url, settings.fleet_name, view.host, view, outbox, clock, on_change
    )
