"""Telemetry of the decisions errord serves: who they were for, and a span for each.

A report may name the user and the session its agent acts for (``user_id``,
``session_id``). They are recorded with the report and exported as span attributes
(``user.id``, ``session.id``), never logged; when the settings ask
(``telemetry_hash_ids``), each is replaced by the hex SHA-256 of the salt followed by
the value before anything records or exports it.

Spans are exported when OpenTelemetry export is configured (``otel_endpoint``, or
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``): errord.wire.otel
(with errord.wire.otlp, the only module that imports opentelemetry) is imported only then.
One span per decided report (ReportFailure, each failure of ReportFailures, an AdmitCall
refused or claiming the probe, ReportOutcome), at the decision's own time; a child of the
caller's W3C trace context when its metadata carries one (``traceparent``,
``tracestate``), else a root span in the trace derived from the turn id, which every
decision of the turn shares. A replayed report was decided before: it gets no second span.

Spans are built from the report as the handler records it (``ErrorHandler.redacted``):
what a span says of the error (``error.type``) is masked as in the trace, the log and
the metrics. The report is masked once, here, and handed to the handler as it is.

The service has reports decided through one wrapper around the handler (``decisions``):
``Traced`` with telemetry, ``Untraced`` without, which costs each report one call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeAlias, TypeVar

import grpc
from msgspec import structs

from errord.config import Settings
from errord.decide.health.admission import Admission
from errord.decide.model import (
    Action,
    Decision,
    FailureReport,
    JSONValue,
    Outcome,
    OutcomeReport,
    ReportKey,
)
from errord.decide.model.events import TraceEvent
from errord.errors import ConfigError
from errord.handler import ErrorHandler

Attributes: TypeAlias = dict[str, str | int | float | bool]
Metadata: TypeAlias = Sequence[tuple[str, str | bytes]]
"""A call's invocation metadata, as grpc gives it."""
Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
Report = TypeVar("Report", FailureReport, OutcomeReport)

SERVICE = "errord.v1.ErrorHandlerService"
DEFAULT_SERVICE_NAME = "errord"
TRACES_PATH = "/v1/traces"


class SpanSink(Protocol):
    """Where spans go: errord.wire.otel's OtlpSpans, or a test's."""

    def emit(
        self,
        name: str,
        metadata: Metadata,
        turn_id: str,
        at: datetime,
        attributes: Attributes,
        failed: bool,
    ) -> None:
        """Export one span at ``at``: a child of the W3C context in ``metadata``, else a
        root of the trace derived from ``turn_id``."""

    def close(self) -> None:
        """Export what is queued, then stop."""


@dataclass(frozen=True)
class IdHashing:
    """User and session ids replaced by the hex SHA-256 of ``salt`` + the id."""

    salt: str = ""

    def __call__(self, value: str) -> str:
        if not value:
            return value
        return hashlib.sha256((self.salt + value).encode()).hexdigest()


class Decisions(Protocol):
    """How the service has reports decided: by the handler as it is (``Untraced``), or
    with the telemetry the settings ask for around it (``Traced``). Each method takes
    the call's context, whose metadata may carry the caller's trace context."""

    def report_failure(
        self, report: FailureReport, context: Context
    ) -> Awaitable[tuple[Decision, bool]]: ...

    def report_failures(
        self, reports: Sequence[FailureReport], context: Context
    ) -> Awaitable[list[tuple[Decision, bool] | Exception]]: ...

    def admit_call(
        self, key: ReportKey, arguments: dict[str, JSONValue], scope: str, context: Context
    ) -> Awaitable[tuple[Admission, Decision | None, bool]]: ...

    def report_outcome(
        self, report: OutcomeReport, context: Context
    ) -> Awaitable[tuple[TraceEvent, bool]]: ...


def decisions(handler: ErrorHandler, telemetry: Telemetry | None) -> Decisions:
    """The handler's decisions, with ``telemetry`` around them unless None."""
    return Untraced(handler) if telemetry is None else Traced(handler, telemetry)


class Untraced:
    """The handler's decisions as they are: each call is the handler's own, the context
    unread."""

    __slots__ = ("_handler",)

    def __init__(self, handler: ErrorHandler) -> None:
        self._handler = handler

    def report_failure(
        self, report: FailureReport, context: Context
    ) -> Awaitable[tuple[Decision, bool]]:
        return self._handler.report_failure(report)

    def report_failures(
        self, reports: Sequence[FailureReport], context: Context
    ) -> Awaitable[list[tuple[Decision, bool] | Exception]]:
        return self._handler.report_failures(reports)

    def admit_call(
        self, key: ReportKey, arguments: dict[str, JSONValue], scope: str, context: Context
    ) -> Awaitable[tuple[Admission, Decision | None, bool]]:
        return self._handler.admit_call(key, arguments, scope)

    def report_outcome(
        self, report: OutcomeReport, context: Context
    ) -> Awaitable[tuple[TraceEvent, bool]]:
        return self._handler.report_outcome(report)


class Telemetry:
    """What the settings ask of each decision: ids hashed (``hashing``), spans exported
    (``spans``)."""

    def __init__(self, hashing: IdHashing | None, spans: SpanSink | None) -> None:
        self.hashing = hashing
        self.spans = spans

    def private(self, report: Report) -> Report:
        """``report`` with its user and session ids as they may be recorded and exported."""
        hashing = self.hashing
        if hashing is None or not (report.user_id or report.session_id):
            return report
        return structs.replace(
            report, user_id=hashing(report.user_id), session_id=hashing(report.session_id)
        )

    def close(self) -> None:
        """Export the spans still queued (blocks: call it from a thread)."""
        if self.spans is not None:
            self.spans.close()


class Traced:
    """The handler's decisions with ``telemetry`` around them: each report's ids made
    private before the handler records them, and a span for each decision made."""

    def __init__(self, handler: ErrorHandler, telemetry: Telemetry) -> None:
        self._handler = handler
        self._telemetry = telemetry
        self._spans = telemetry.spans

    async def report_failure(
        self, report: FailureReport, context: Context
    ) -> tuple[Decision, bool]:
        report = self._handler.redacted(self._telemetry.private(report))
        decision, replayed = await self._handler.report_failure(report, redacted=True)
        if self._spans is not None and not replayed:
            self._failure_span("ReportFailure", decision, report, context)
        return decision, replayed

    async def report_failures(
        self, reports: Sequence[FailureReport], context: Context
    ) -> list[tuple[Decision, bool] | Exception]:
        handler, private = self._handler, self._telemetry.private
        reports = [handler.redacted(private(report)) for report in reports]
        results = await handler.report_failures(reports, redacted=True)
        if self._spans is not None:
            for report, result in zip(reports, results, strict=True):
                if not isinstance(result, Exception) and not result[1]:
                    self._failure_span("ReportFailures", result[0], report, context)
        return results

    async def admit_call(
        self, key: ReportKey, arguments: dict[str, JSONValue], scope: str, context: Context
    ) -> tuple[Admission, Decision | None, bool]:
        admission, decision, replayed = await self._handler.admit_call(key, arguments, scope)
        if self._spans is not None and not replayed:
            if decision is not None:
                self._failure_span("AdmitCall", decision, None, context)
            elif admission.claim:
                attributes = call_attributes("AdmitCall", key.turn_id, key.call_id, key.tool)
                attributes["errord.attempt"] = key.attempt
                attributes["errord.admission"] = "probe_claimed"
                if scope:
                    attributes["errord.scope"] = scope
                attributes["errord.breaker.phase"] = admission.breaker.phase.value
                name, at = span_name("AdmitCall"), self._handler.clock.now()
                self._spans.emit(name, metadata(context), key.turn_id, at, attributes, False)
        return admission, decision, replayed

    async def report_outcome(
        self, report: OutcomeReport, context: Context
    ) -> tuple[TraceEvent, bool]:
        report = self._telemetry.private(report)
        event, replayed = await self._handler.report_outcome(report)
        if self._spans is not None and not replayed:
            attributes = outcome_attributes(report)
            failed = report.outcome is Outcome.FAILURE
            name = span_name("ReportOutcome")
            self._spans.emit(
                name, metadata(context), report.turn_id, event.time, attributes, failed
            )
        return event, replayed

    def _failure_span(
        self, method: str, decision: Decision, report: FailureReport | None, context: Context
    ) -> None:
        assert self._spans is not None
        attributes = failure_attributes(method, decision, report)
        self._spans.emit(
            span_name(method),
            metadata(context),
            decision.turn_id,
            decision.decided_at,
            attributes,
            True,
        )


def span_name(method: str) -> str:
    """The RPC semantic conventions' span name: ``{rpc.service}/{rpc.method}``."""
    return f"{SERVICE}/{method}"


def metadata(context: Context) -> Metadata:
    return context.invocation_metadata() or ()


def call_attributes(method: str, turn_id: str, call_id: str, tool: str) -> Attributes:
    """What every span says: the RPC, the tool call (GenAI tool execution), the turn."""
    return {
        "rpc.system": "grpc",
        "rpc.service": SERVICE,
        "rpc.method": method,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": call_id,
        "errord.turn_id": turn_id,
    }


def failure_attributes(method: str, decision: Decision, report: FailureReport | None) -> Attributes:
    """A decided failure's attributes: the classification, the action, the breaker."""
    attributes = call_attributes(method, decision.turn_id, decision.call_id, decision.tool)
    classification = decision.classification
    attributes |= {
        "errord.attempt": decision.attempt,
        "errord.classification.class": classification.error_class.value,
        "errord.classification.code": classification.code.value,
        "errord.classification.rule": classification.rule,
        "errord.action": decision.action.value,
        "errord.decision_id": decision.decision_id,
        "error.type": (report and report.error.exception_type) or classification.code.value,
    }
    if decision.action is Action.RETRY:
        attributes["errord.delay_ms"] = round(decision.delay * 1000)
    if decision.alternative_tool:
        attributes["errord.alternative_tool"] = decision.alternative_tool
    if decision.breaker is not None:
        attributes["errord.breaker.phase"] = decision.breaker.phase.value
    correction = decision.correction
    if correction is not None:  # what the model is told to fix, for self-correction rates
        attributes["errord.correction.type"] = correction.kind
        if correction.parameter:
            attributes["errord.correction.parameter"] = correction.parameter
    if report is not None:
        _add_people(attributes, report)
    return attributes


def outcome_attributes(report: OutcomeReport) -> Attributes:
    attributes = call_attributes("ReportOutcome", report.turn_id, report.call_id, report.tool)
    attributes["errord.attempt"] = report.attempt
    attributes["errord.outcome"] = report.outcome.value
    if report.decision_id:
        attributes["errord.decision_id"] = report.decision_id
    _add_people(attributes, report)
    return attributes


def _add_people(attributes: Attributes, report: FailureReport | OutcomeReport) -> None:
    if report.scope:
        attributes["errord.scope"] = report.scope
    if report.user_id:
        attributes["user.id"] = report.user_id
    if report.session_id:
        attributes["session.id"] = report.session_id


def traces_endpoint(settings: Settings, environ: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP traces URL spans go to; None when export is off (the default). The
    settings file's ``otel_endpoint`` wins over the environment; ``OTEL_SDK_DISABLED=true``
    turns export off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if settings.otel_endpoint:
        return settings.otel_endpoint.rstrip("/") + TRACES_PATH
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + TRACES_PATH if base else None


def telemetry_from(settings: Settings, environ: Mapping[str, str]) -> Telemetry | None:
    """The daemon's telemetry as ``settings`` and ``environ`` configure it; None when it
    neither hashes ids nor exports spans.

    Raises ConfigError when export is configured and errord[otel] is not installed.
    """
    hashing = IdHashing(settings.telemetry_id_salt or "") if settings.telemetry_hash_ids else None
    endpoint = traces_endpoint(settings, environ)
    spans: SpanSink | None = None
    if endpoint is not None:
        try:
            # Only now: with export off, nothing of opentelemetry is ever imported.
            from errord.wire.otel import OtlpSpans
        except ImportError as error:
            raise ConfigError(
                f"OpenTelemetry export to {endpoint} is configured, but its packages are "
                f"missing ({error.name}): install errord[otel]"
            ) from error
        name = environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE_NAME
        spans = OtlpSpans(endpoint, name, environ)
    if hashing is None and spans is None:
        return None
    return Telemetry(hashing, spans)
