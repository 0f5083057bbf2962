"""Domain values: what a failure, a classification, a decision and a turn are, and the
trace events that record them. Every other stage reads them; they read none.

Frozen ``msgspec.Struct`` records and closed enums; no gRPC and no SQL. The
records cross one boundary, the trace database, where ``errord.state.codec``
encodes them from these type annotations. Durations are float seconds,
timestamps timezone-aware UTC datetimes. The enum values are the names used in
storage, logs and rule names (``default:code:TIMEOUT``).

Fields are only ever added, with a default, so that older stored records decode.

A module a concept: ``failures`` (a failure as reported and as classified),
``decisions``, ``tool_state`` (a tool's breaker and rate-limit window), ``turns``,
``outcomes`` (an attempt's outcome, episodic memory's episodes), ``events`` (the
trace's events) and ``scope`` (the keys of a tool's state in a scope).
"""

from errord.decide.model.decisions import (
    Action,
    Consequence,
    Correction,
    Decision,
    DefaultValue,
    ParameterProblem,
    Recalled,
    Refusal,
    RefusalKind,
)
from errord.decide.model.events import (
    BreakerChanged,
    EventDetail,
    EventKind,
    FailureEvent,
    ForgetReason,
    ManifestsReloaded,
    MemoryForgotten,
    OutcomeEvent,
    RateLimited,
    TraceEvent,
    TurnBegan,
    TurnEnded,
)
from errord.decide.model.failures import (
    CallKey,
    Classification,
    ClosedEnum,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Fault,
    JSONValue,
    Record,
    ReportKey,
    ToolDeclaration,
    ToolFailure,
)
from errord.decide.model.outcomes import (
    ClosedEpisode,
    Episode,
    EpisodeOutcome,
    MemoryKey,
    Outcome,
    OutcomeReport,
)
from errord.decide.model.scope import SEPARATOR, scoped_name, tool_and_scope, tool_key, tool_of
from errord.decide.model.tool_state import (
    CLOSED_BREAKER,
    BreakerChange,
    BreakerPhase,
    BreakerState,
    Probe,
    RateWindow,
)
from errord.decide.model.turns import (
    STATUS_AFTER,
    WITHOUT_RESULT,
    CallProgress,
    CallStatus,
    CallSummary,
    PlannedCall,
    RetryBudget,
    TakenDecision,
    TurnSummary,
)

__all__ = [
    "CLOSED_BREAKER",
    "SEPARATOR",
    "STATUS_AFTER",
    "WITHOUT_RESULT",
    "Action",
    "BreakerChange",
    "BreakerChanged",
    "BreakerPhase",
    "BreakerState",
    "CallKey",
    "CallProgress",
    "CallStatus",
    "CallSummary",
    "Classification",
    "ClosedEnum",
    "ClosedEpisode",
    "Consequence",
    "Correction",
    "Decision",
    "DefaultValue",
    "Episode",
    "EpisodeOutcome",
    "ErrorClass",
    "ErrorCode",
    "EventDetail",
    "EventKind",
    "FailureEvent",
    "FailureReport",
    "Fault",
    "ForgetReason",
    "JSONValue",
    "ManifestsReloaded",
    "MemoryForgotten",
    "MemoryKey",
    "Outcome",
    "OutcomeEvent",
    "OutcomeReport",
    "ParameterProblem",
    "PlannedCall",
    "Probe",
    "RateLimited",
    "RateWindow",
    "Recalled",
    "Record",
    "Refusal",
    "RefusalKind",
    "ReportKey",
    "RetryBudget",
    "TakenDecision",
    "ToolDeclaration",
    "ToolFailure",
    "TraceEvent",
    "TurnBegan",
    "TurnEnded",
    "TurnSummary",
    "scoped_name",
    "tool_and_scope",
    "tool_key",
    "tool_of",
]
