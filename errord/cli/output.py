"""How the operator commands print what the daemon answers.

Text an operator reads at a glance by default; with ``--json``, the response as
proto3 JSON (several responses, such as ``health``'s, as one object by name;
a stream's, such as ``tail``'s, one object per line).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, json_format, message, timestamp_pb2

Answer = message.Message | Mapping[str, message.Message]
"""What a command shows: one response, or several by name."""


@dataclass(frozen=True)
class Output:
    """Prints each answer as text, or as proto3 JSON when ``json``."""

    json: bool

    def show(self, answer: Answer, text: str) -> None:
        """The command's whole answer."""
        print(as_json(answer) if self.json else text)

    def line(self, response: message.Message, text: str) -> None:
        """One response of a stream: a line of text, or a JSON object on one line."""
        print(as_json(response, indent=None) if self.json else text, flush=True)


def as_json(answer: Answer, indent: int | None = 2) -> str:
    if isinstance(answer, message.Message):
        return json_format.MessageToJson(answer, indent=indent, sort_keys=True)
    plain = {name: json_format.MessageToDict(response) for name, response in answer.items()}
    return json.dumps(plain, indent=indent, sort_keys=True)


def seconds(duration: duration_pb2.Duration) -> float:
    return duration.seconds + duration.nanos / 1e9


def breaker_line(
    breaker: pb.Breaker, now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> str:
    """The breaker at a glance: its phase and the break in force, its evidence, the next
    break when it would be longer than the first, and its rate-limit window."""
    phase = pb.BreakerPhase.Name(breaker.effective_phase).removeprefix("BREAKER_PHASE_")
    state = breaker.state
    text = f"breaker {phase}"
    if breaker.HasField("half_opens_in"):
        text += f" (half-opens in {seconds(breaker.half_opens_in):.1f} s"
        if state.HasField("break_length"):
            text += f" of a {seconds(state.break_length):.1f} s break"
        if state.streak > 1:
            text += f", opening {state.streak} in a row"
        text += ")"
    elif phase == "OPEN":
        text += " (forced open until reset)"
    if phase == "CLOSED" and state.consecutive_failures:
        text += f", {state.consecutive_failures} consecutive failures"
    if phase == "CLOSED" and state.recent_attempts > state.consecutive_failures:
        text += f", {state.recent_failures} of the last {state.recent_attempts} attempts failed"
    if state.probe_in_flight:
        text += ", probe in flight"
    text += f", opened {state.opens} time{'' if state.opens == 1 else 's'}"
    if breaker.HasField("next_break") and breaker.next_break != breaker.first_cooldown:
        text += f", next break {seconds(breaker.next_break):.1f} s"
    if breaker.HasField("rate_limit"):
        text += f"; {window_words(breaker.rate_limit, now())}"
    return text


def window_words(window: pb.RateLimitWindow, now: datetime) -> str:
    """A rate-limit window: how long it still holds the tool, or when it last did."""
    until = window.until.ToDatetime(UTC)
    asked = (
        f", Retry-After {seconds(window.retry_after):g} s" if window.HasField("retry_after") else ""
    )
    if until > now:
        left = (until - now).total_seconds()
        return f"rate-limited: calls held {left:.1f} s more, until {_time(window.until)}{asked}"
    opened = window.opened_at.ToDatetime(UTC)
    lasted = (until - opened).total_seconds()
    return f"last rate-limited at {_time(window.opened_at)} for {lasted:.1f} s{asked}"


def _time(stamp: timestamp_pb2.Timestamp) -> str:
    return stamp.ToDatetime(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def format_stats(response: pb.GetToolStatsResponse) -> str:
    """Each tool as a short block of lines; first, in a fleet, the fleet's state."""
    shared = response.fleet.state not in (pb.FLEET_STATE_UNSPECIFIED, pb.FLEET_STATE_OFF)
    head = fleet_line(response.fleet) + "\n\n" if shared else ""
    return head + _tools(response)


FLEET_STATES = {
    pb.FLEET_STATE_UNSPECIFIED: "alone",
    pb.FLEET_STATE_OFF: "alone",
    pb.FLEET_STATE_SYNCING: "syncing",
    pb.FLEET_STATE_IN_SYNC: "in sync",
    pb.FLEET_STATE_ALONE: "alone",
}


def fleet_line(sync: pb.FleetSync) -> str:
    """The daemon's link to its fleet in a line."""
    if sync.state in (pb.FLEET_STATE_UNSPECIFIED, pb.FLEET_STATE_OFF):
        return "no fleet: this daemon decides alone (fleet_url is not set)"
    text = f"fleet {sync.fleet} as {sync.host}: {FLEET_STATES[sync.state]}"
    if sync.state == pb.FLEET_STATE_IN_SYNC:
        text += f" with {sync.hosts} hosts (quorum {sync.quorum})"
    elif sync.state == pb.FLEET_STATE_ALONE:
        text += f", Redis cannot be reached ({sync.problem}); deciding with its own evidence"
    if sync.HasField("since"):
        text += f", since {_time(sync.since)}"
    if sync.outages:
        text += f"; {sync.outages} outages since start"
    return text


def format_fleet(response: pb.GetFleetResponse) -> str:
    """The fleet's link, its hosts and their last word, and what is shared now."""
    lines = [fleet_line(response.sync)]
    if response.sync.state in (pb.FLEET_STATE_UNSPECIFIED, pb.FLEET_STATE_OFF):
        return lines[0]
    lines.append("hosts:")
    for host in response.hosts:
        mark = " (this one)" if host.this_host else ""
        live = "live" if host.live else "silent"
        seen = f", seen {_time(host.seen_at)}" if host.HasField("seen_at") else ""
        word = f"; last word: {host.last_word}" if host.last_word else ""
        lines.append(f"  {host.host}{mark}: {live}{seen}{word}")
    lines.append("breakers open on hosts of the fleet:" if response.breakers else "no breaker open")
    for breaker in response.breakers:
        verdict = "refused fleet-wide" if breaker.refused else "below the quorum: not refused"
        text = f"  {scoped(breaker.tool, breaker.scope)}: open on {', '.join(breaker.open_on)}"
        text += f"; {verdict}"
        if breaker.refused and breaker.HasField("half_opens_at"):
            text += f", one probe from {_time(breaker.half_opens_at)}"
        if breaker.probe_host:
            text += f" (held by {breaker.probe_host})"
        lines.append(text)
    for window in response.windows:
        lines.append(
            f"  rate-limit window of {scoped(window.tool, window.scope)} from {window.host} "
            f"until {_time(window.until)}"
        )
    lines.append(f"memory shared of {response.shared_errors} errors")
    if response.ignored:
        counts = ", ".join(
            f"{reason} {count}" for reason, count in sorted(response.ignored.items())
        )
        lines.append(f"values in Redis ignored: {counts}")
    return "\n".join(lines)


def _tools(response: pb.GetToolStatsResponse) -> str:
    if not response.tools:
        return "no tools yet: no manifests and no reports"
    window = round(seconds(response.window) / 60)
    blocks = []
    for tool in response.tools:
        recent, ran = tool.recent, tool.per_execution
        lines = [
            f"{scoped(tool.tool, tool.scope)}  {breaker_line(tool.breaker)}",
            f"  executions {ran.executions}: {ran.successes} succeeded, {ran.errors} failed, "
            f"{ran.timeouts} timed out; failure rate {ran.failure_rate:.1%}, "
            f"mean {seconds(ran.mean_duration):.3f} s",
            f"  attempts {tool.executions}: {tool.successes} succeeded, {tool.errors} failed "
            f"({tool.transient_errors} transient, {tool.permanent_errors} permanent), "
            f"{tool.timeouts} timeouts",
            f"  failure rate per attempt {tool.failure_rate:.1%}; last {window} min: "
            f"{recent.errors} of {recent.executions} failed ({recent.failure_rate:.1%})",
            f"  retries {tool.retries}, {tool.retry_successes} succeeded "
            f"({tool.retry_success_rate:.1%})",
            f"  attempt duration mean {seconds(tool.mean_duration):.3f} s, "
            f"p95 {seconds(tool.p95_duration):.3f} s",
            f"  errors by code: {_counts(tool.errors_by_code)}",
            f"  errors by exception: {_counts(tool.errors_by_exception)}",
            f"  decisions: {_counts(tool.decisions)}",
        ]
        for alert in tool.alerts:
            kind = pb.AlertKind.Name(alert.kind).removeprefix("ALERT_KIND_").lower()
            lines.append(f"  ALERT {kind}: {alert.message}")
        for candidate in tool.override_candidates:
            lines.append(
                f"  retries never fixed {candidate.fingerprint!r} "
                f"({candidate.recovered:.0f} of {candidate.retried:.0f}); manifest rule:"
            )
            lines += [f"    {line}" for line in candidate.suggested_rule.splitlines()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_memory(tool: str, response: pb.RecallEpisodesResponse) -> str:
    """Each error of the tool memory holds (``tool``: as ``scoped`` names it): per
    recovery, the bursts it fixed and did not fix, what the evidence does to retries and
    when that stops; then how it is counted."""
    if not response.errors:
        return f"{tool}: no episodes remembered"
    blocks = []
    for error in response.errors:
        lines = [f"{tool}  {error.fingerprint or '(no message)'}  [{error.signature}]"]
        for evidence in error.recoveries:
            lines.append(f"  {_recovery_words(evidence)}")
            if evidence.recovery == "RETRY":
                lines.append(f"    {_verdict_words(tool, evidence, response)}")
        blocks.append("\n".join(lines))
    gap = seconds(response.burst_gap)
    blocks.append(
        f"(a burst: the episodes of one outage or spell of an error, each within {gap:g} s of "
        "the one before; it counts once. Counts halve every hour.)"
    )
    return "\n\n".join(blocks)


def _recovery_words(evidence: pb.RecoveryEvidence) -> str:
    name = (
        "retry"
        if evidence.recovery == "RETRY"
        else evidence.recovery.replace("USE_ALTERNATIVE:", "the alternative ")
    )
    text = (
        f"{name}: fixed it in {_bursts(evidence.succeeded)}, failed in {_bursts(evidence.failed)}"
    )
    if evidence.HasField("last_failed"):
        text += f", last failed at {_time(evidence.last_failed)}"
    if evidence.HasField("last_succeeded"):
        text += f", last fixed it at {_time(evidence.last_succeeded)}"
    if round(evidence.unknown, 1):
        text += f"; no outcome was reported in {_bursts(evidence.unknown)}"
    return text


def _bursts(count: float) -> str:
    """A count of bursts as a person reads it: ``1 burst``, ``0 bursts``, ``4.8 bursts``
    (counts fade by half every hour, so most are not whole)."""
    shown = round(count, 1)
    number = f"{shown:.0f}" if shown == int(shown) else f"{shown:.1f}"
    return f"{number} burst{'' if shown == 1 else 's'}"


def _verdict_words(
    tool: str, evidence: pb.RecoveryEvidence, response: pb.RecallEpisodesResponse
) -> str:
    """What the evidence does to a retry of the error now, and when that stops."""
    told = evidence.succeeded + evidence.failed
    needed = response.min_episodes
    until = (
        f" It stops applying at {_time(evidence.applies_until)} as the evidence fades, or once "
        f"{tool} succeeds or its breaker is reset."
        if evidence.HasField("applies_until")
        else ""
    )
    if evidence.stops_retries:
        return (
            f"Retries stopped: they fixed none of {round(told)} bursts ({needed:g} are "
            f"enough).{until}"
        )
    if evidence.lifted_by == "succeeded":
        at = _time(response.tool_succeeded_at)
        return (
            f"Retries go on: they fixed none of {round(told)} bursts, but {tool} succeeded at "
            f"{at}, after the last failed one."
        )
    if evidence.lifted_by == "reset":
        at = _time(response.breaker_reset_at)
        return (
            f"Retries go on: they fixed none of {round(told)} bursts, but an operator reset the "
            f"breaker of {tool} at {at}, after the last failed one."
        )
    if round(told) < needed:
        return f"Retries go on: {round(told)} of the {needed:g} bursts a verdict needs."
    return f"Retries go on: they fixed {round(evidence.succeeded)} of {round(told)} bursts."


def format_breakers(breakers: list[pb.Breaker]) -> str:
    if not breakers:
        return "no tools yet: no manifests and no reports"
    names = [scoped(breaker.tool, breaker.scope) for breaker in breakers]
    width = max(map(len, names))
    return "\n".join(
        f"{name:<{width}}  {breaker_line(breaker)}"
        for name, breaker in zip(names, breakers, strict=True)
    )


def scoped(tool: str, scope: str) -> str:
    """A tool in a scope as the commands show it: ``search``, ``search @ eu-west-1``."""
    return f"{tool} @ {scope}" if scope else tool


def format_health(statuses: Mapping[str, str]) -> str:
    """A line per service: its status, then its name; the server as a whole is ``(server)``."""
    width = max(len(status) for status in statuses.values())
    return "\n".join(
        f"{status:<{width}}  {service or '(server)'}" for service, status in statuses.items()
    )
