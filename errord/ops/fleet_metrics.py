"""The fleet's figures in /metrics (errord.fleet): the link's state, the hosts heard
from, the outages of its Redis and the values read from it that were ignored."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from errord.fleet.records import Ignored
from errord.fleet.status import FleetState, FleetStatus


class FleetMetrics(Collector):
    """The link to the fleet (errord.fleet): its state, the hosts live, the outages and
    the values in Redis ignored."""

    def __init__(self, status: FleetStatus) -> None:
        self._status = status

    def collect(self) -> Iterable[Metric]:
        status = self._status
        state = GaugeMetricFamily(
            "errord_fleet_state",
            "1 for the link's state: off (no fleet_url), syncing, in_sync, or alone (Redis "
            "is gone: deciding with this host's own evidence).",
            labels=["state"],
        )
        for each in FleetState:
            state.add_metric([each.value], 1 if each is status.state else 0)
        hosts = GaugeMetricFamily(
            "errord_fleet_hosts", "Hosts of the fleet heard from lately, this one included."
        )
        hosts.add_metric([], status.hosts)
        outages = CounterMetricFamily(
            "errord_fleet_outages", "Times the link to the fleet's Redis was lost since start."
        )
        outages.add_metric([], status.outages)
        ignored = CounterMetricFamily(
            "errord_fleet_ignored",
            "Values read from the fleet's Redis and ignored (never applied), by reason.",
            labels=["reason"],
        )
        for reason in Ignored:
            ignored.add_metric([reason.value], status.ignored[reason])
        return [state, hosts, outages, ignored]
