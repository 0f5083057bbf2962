"""How the operator commands print what the daemon answers.

Text an operator reads at a glance by default; with ``--json``, the response as
proto3 JSON (several responses, such as ``health``'s, as one object by name;
a stream's, such as ``tail``'s, one object per line).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, json_format, message

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


def breaker_line(breaker: pb.Breaker) -> str:
    phase = pb.BreakerPhase.Name(breaker.effective_phase).removeprefix("BREAKER_PHASE_")
    text = f"breaker {phase}"
    if breaker.HasField("half_opens_in"):
        text += f" (half-opens in {seconds(breaker.half_opens_in):.1f} s)"
    elif phase == "OPEN":
        text += " (forced open until reset)"
    state = breaker.state
    if phase == "CLOSED" and state.consecutive_failures:
        text += f", {state.consecutive_failures} consecutive failures"
    if state.probe_in_flight:
        text += ", probe in flight"
    return f"{text}, opened {state.opens} time{'' if state.opens == 1 else 's'}"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "none"


def format_stats(response: pb.GetToolStatsResponse) -> str:
    """Each tool as a short block of lines."""
    if not response.tools:
        return "no tools yet: no manifests and no reports"
    window = round(seconds(response.window) / 60)
    blocks = []
    for tool in response.tools:
        recent = tool.recent
        lines = [
            f"{tool.tool}  {breaker_line(tool.breaker)}",
            f"  executions {tool.executions}: {tool.successes} succeeded, {tool.errors} failed "
            f"({tool.transient_errors} transient, {tool.permanent_errors} permanent), "
            f"{tool.timeouts} timeouts",
            f"  failure rate {tool.failure_rate:.1%}; last {window} min: {recent.errors} of "
            f"{recent.executions} failed ({recent.failure_rate:.1%})",
            f"  retries {tool.retries}, {tool.retry_successes} succeeded "
            f"({tool.retry_success_rate:.1%})",
            f"  duration mean {seconds(tool.mean_duration):.3f} s, "
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
    """Each error of the tool memory holds, with how each recovery turned out."""
    if not response.errors:
        return f"{tool}: no episodes remembered"
    blocks = []
    for error in response.errors:
        lines = [f"{tool}  {error.fingerprint or '(no message)'}  [{error.signature}]"]
        for evidence in error.recoveries:
            told = evidence.succeeded + evidence.failed
            lines.append(
                f"  {evidence.recovery}: recovered {evidence.succeeded:.1f} of {told:.1f} "
                f"({evidence.success_rate:.0%}), {evidence.unknown:.1f} unknown"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def format_breakers(breakers: list[pb.Breaker]) -> str:
    if not breakers:
        return "no tools yet: no manifests and no reports"
    width = max(len(breaker.tool) for breaker in breakers)
    return "\n".join(f"{breaker.tool:<{width}}  {breaker_line(breaker)}" for breaker in breakers)


def format_health(statuses: Mapping[str, str]) -> str:
    """A line per service: its status, then its name; the server as a whole is ``(server)``."""
    width = max(len(status) for status in statuses.values())
    return "\n".join(
        f"{status:<{width}}  {service or '(server)'}" for service, status in statuses.items()
    )
