"""AdmitCall's answer and WatchTools' tool policies, as wire messages."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from errord_client.v1 import errord_pb2 as pb

from errord.decide.health.admission import Admission
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import BreakerState, Decision, RateWindow
from errord.decide.model.scope import tool_and_scope
from errord.wire.responses import (
    breaker_state_to_proto,
    decision_to_proto,
    duration,
    rate_window_to_proto,
)


def admission_to_proto(
    admission: Admission, decision: Decision | None, replayed: bool, now: datetime
) -> pb.AdmitCallResponse:
    response = pb.AdmitCallResponse(
        admitted=admission.admitted,
        probe=admission.probe,
        breaker=breaker_state_to_proto(admission.breaker, now),
        replayed=replayed,
    )
    if decision is not None:
        response.decision.CopyFrom(decision_to_proto(decision))
    return response


def tool_policies_to_proto(
    tools: Iterable[str],
    manifests: ManifestSnapshot,
    breaker_of: Callable[[str], BreakerState | None],
    now: datetime,
    *,
    snapshot: bool,
    window_of: Callable[[str], RateWindow | None] | None = None,
) -> pb.WatchToolsResponse:
    """The policies of ``tools`` (keys of tools and scopes: errord.decide.model.scope); every
    tool errord knows for a ``snapshot``. A rate-limit window is sent while it holds."""
    response = pb.WatchToolsResponse(
        snapshot=snapshot, default_timeout=duration(manifests.defaults.timeout)
    )
    for key in sorted(tools):
        tool, scope = tool_and_scope(key)
        breaker = breaker_of(key) or BreakerState()
        policy = response.tools.add(
            tool=tool,
            timeout=duration(manifests.manifest_for(tool)[0].timeout),
            breaker=breaker_state_to_proto(breaker, now),
            has_manifest=tool in manifests,
            scope=scope,
        )
        window = window_of(key) if window_of is not None else None
        if window is not None and window.holds(now):
            rate_window_to_proto(window, policy.rate_limit)
    return response
