import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FleetState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FLEET_STATE_UNSPECIFIED: _ClassVar[FleetState]
    FLEET_STATE_OFF: _ClassVar[FleetState]
    FLEET_STATE_SYNCING: _ClassVar[FleetState]
    FLEET_STATE_IN_SYNC: _ClassVar[FleetState]
    FLEET_STATE_ALONE: _ClassVar[FleetState]

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CODE_UNSPECIFIED: _ClassVar[ErrorCode]
    ERROR_CODE_TIMEOUT: _ClassVar[ErrorCode]
    ERROR_CODE_CONNECTION: _ClassVar[ErrorCode]
    ERROR_CODE_RATE_LIMITED: _ClassVar[ErrorCode]
    ERROR_CODE_UNAVAILABLE: _ClassVar[ErrorCode]
    ERROR_CODE_INVALID_INPUT: _ClassVar[ErrorCode]
    ERROR_CODE_AUTH: _ClassVar[ErrorCode]
    ERROR_CODE_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_UNSUPPORTED: _ClassVar[ErrorCode]
    ERROR_CODE_TOOL_NOT_FOUND: _ClassVar[ErrorCode]
    ERROR_CODE_SCHEMA_VIOLATION: _ClassVar[ErrorCode]
    ERROR_CODE_UNKNOWN: _ClassVar[ErrorCode]
    ERROR_CODE_CIRCUIT_OPEN: _ClassVar[ErrorCode]
    ERROR_CODE_INTERNAL: _ClassVar[ErrorCode]

class Fault(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAULT_UNSPECIFIED: _ClassVar[Fault]
    FAULT_ARGUMENTS: _ClassVar[Fault]
    FAULT_TOOL: _ClassVar[Fault]
    FAULT_BACKEND: _ClassVar[Fault]
    FAULT_PERSON: _ClassVar[Fault]

class ErrorClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_CLASS_UNSPECIFIED: _ClassVar[ErrorClass]
    ERROR_CLASS_TRANSIENT: _ClassVar[ErrorClass]
    ERROR_CLASS_PERMANENT: _ClassVar[ErrorClass]

class RecoveryAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECOVERY_ACTION_UNSPECIFIED: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_RETRY: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_USE_ALTERNATIVE: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_CONTINUE_PARTIAL: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_USE_DEFAULT: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_SKIP: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_ESCALATE: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_FAIL: _ClassVar[RecoveryAction]
    RECOVERY_ACTION_RETURN_TO_MODEL: _ClassVar[RecoveryAction]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_SUCCESS: _ClassVar[Outcome]
    OUTCOME_FAILURE: _ClassVar[Outcome]

class BreakerPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BREAKER_PHASE_UNSPECIFIED: _ClassVar[BreakerPhase]
    BREAKER_PHASE_CLOSED: _ClassVar[BreakerPhase]
    BREAKER_PHASE_OPEN: _ClassVar[BreakerPhase]
    BREAKER_PHASE_HALF_OPEN: _ClassVar[BreakerPhase]

class BreakerChange(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BREAKER_CHANGE_UNSPECIFIED: _ClassVar[BreakerChange]
    BREAKER_CHANGE_OPENED: _ClassVar[BreakerChange]
    BREAKER_CHANGE_HALF_OPENED: _ClassVar[BreakerChange]
    BREAKER_CHANGE_CLOSED: _ClassVar[BreakerChange]
    BREAKER_CHANGE_RESET: _ClassVar[BreakerChange]
    BREAKER_CHANGE_FORCED_OPEN: _ClassVar[BreakerChange]
    BREAKER_CHANGE_PROBE_CLAIMED: _ClassVar[BreakerChange]

class ForgetReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FORGET_REASON_UNSPECIFIED: _ClassVar[ForgetReason]
    FORGET_REASON_AGE: _ClassVar[ForgetReason]
    FORGET_REASON_CAPACITY: _ClassVar[ForgetReason]

class CallStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALL_STATUS_UNSPECIFIED: _ClassVar[CallStatus]
    CALL_STATUS_SUCCEEDED: _ClassVar[CallStatus]
    CALL_STATUS_FAILED: _ClassVar[CallStatus]
    CALL_STATUS_SKIPPED: _ClassVar[CallStatus]
    CALL_STATUS_DEFAULTED: _ClassVar[CallStatus]
    CALL_STATUS_PARTIAL: _ClassVar[CallStatus]
    CALL_STATUS_TIMED_OUT: _ClassVar[CallStatus]

class AlertKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALERT_KIND_UNSPECIFIED: _ClassVar[AlertKind]
    ALERT_KIND_FAILURE_RATE: _ClassVar[AlertKind]
    ALERT_KIND_SLOW: _ClassVar[AlertKind]
    ALERT_KIND_BREAKER_TRIPPED: _ClassVar[AlertKind]
    ALERT_KIND_RESPONSE_VALIDATION: _ClassVar[AlertKind]

class ResultOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESULT_ORIGIN_UNSPECIFIED: _ClassVar[ResultOrigin]
    RESULT_ORIGIN_KEPT: _ClassVar[ResultOrigin]
    RESULT_ORIGIN_SYNTHESIZED: _ClassVar[ResultOrigin]

class DropReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DROP_REASON_UNSPECIFIED: _ClassVar[DropReason]
    DROP_REASON_DUPLICATE: _ClassVar[DropReason]
    DROP_REASON_UNKNOWN_CALL: _ClassVar[DropReason]
FLEET_STATE_UNSPECIFIED: FleetState
FLEET_STATE_OFF: FleetState
FLEET_STATE_SYNCING: FleetState
FLEET_STATE_IN_SYNC: FleetState
FLEET_STATE_ALONE: FleetState
ERROR_CODE_UNSPECIFIED: ErrorCode
ERROR_CODE_TIMEOUT: ErrorCode
ERROR_CODE_CONNECTION: ErrorCode
ERROR_CODE_RATE_LIMITED: ErrorCode
ERROR_CODE_UNAVAILABLE: ErrorCode
ERROR_CODE_INVALID_INPUT: ErrorCode
ERROR_CODE_AUTH: ErrorCode
ERROR_CODE_NOT_FOUND: ErrorCode
ERROR_CODE_UNSUPPORTED: ErrorCode
ERROR_CODE_TOOL_NOT_FOUND: ErrorCode
ERROR_CODE_SCHEMA_VIOLATION: ErrorCode
ERROR_CODE_UNKNOWN: ErrorCode
ERROR_CODE_CIRCUIT_OPEN: ErrorCode
ERROR_CODE_INTERNAL: ErrorCode
FAULT_UNSPECIFIED: Fault
FAULT_ARGUMENTS: Fault
FAULT_TOOL: Fault
FAULT_BACKEND: Fault
FAULT_PERSON: Fault
ERROR_CLASS_UNSPECIFIED: ErrorClass
ERROR_CLASS_TRANSIENT: ErrorClass
ERROR_CLASS_PERMANENT: ErrorClass
RECOVERY_ACTION_UNSPECIFIED: RecoveryAction
RECOVERY_ACTION_RETRY: RecoveryAction
RECOVERY_ACTION_USE_ALTERNATIVE: RecoveryAction
RECOVERY_ACTION_CONTINUE_PARTIAL: RecoveryAction
RECOVERY_ACTION_USE_DEFAULT: RecoveryAction
RECOVERY_ACTION_SKIP: RecoveryAction
RECOVERY_ACTION_ESCALATE: RecoveryAction
RECOVERY_ACTION_FAIL: RecoveryAction
RECOVERY_ACTION_RETURN_TO_MODEL: RecoveryAction
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_SUCCESS: Outcome
OUTCOME_FAILURE: Outcome
BREAKER_PHASE_UNSPECIFIED: BreakerPhase
BREAKER_PHASE_CLOSED: BreakerPhase
BREAKER_PHASE_OPEN: BreakerPhase
BREAKER_PHASE_HALF_OPEN: BreakerPhase
BREAKER_CHANGE_UNSPECIFIED: BreakerChange
BREAKER_CHANGE_OPENED: BreakerChange
BREAKER_CHANGE_HALF_OPENED: BreakerChange
BREAKER_CHANGE_CLOSED: BreakerChange
BREAKER_CHANGE_RESET: BreakerChange
BREAKER_CHANGE_FORCED_OPEN: BreakerChange
BREAKER_CHANGE_PROBE_CLAIMED: BreakerChange
FORGET_REASON_UNSPECIFIED: ForgetReason
FORGET_REASON_AGE: ForgetReason
FORGET_REASON_CAPACITY: ForgetReason
CALL_STATUS_UNSPECIFIED: CallStatus
CALL_STATUS_SUCCEEDED: CallStatus
CALL_STATUS_FAILED: CallStatus
CALL_STATUS_SKIPPED: CallStatus
CALL_STATUS_DEFAULTED: CallStatus
CALL_STATUS_PARTIAL: CallStatus
CALL_STATUS_TIMED_OUT: CallStatus
ALERT_KIND_UNSPECIFIED: AlertKind
ALERT_KIND_FAILURE_RATE: AlertKind
ALERT_KIND_SLOW: AlertKind
ALERT_KIND_BREAKER_TRIPPED: AlertKind
ALERT_KIND_RESPONSE_VALIDATION: AlertKind
RESULT_ORIGIN_UNSPECIFIED: ResultOrigin
RESULT_ORIGIN_KEPT: ResultOrigin
RESULT_ORIGIN_SYNTHESIZED: ResultOrigin
DROP_REASON_UNSPECIFIED: DropReason
DROP_REASON_DUPLICATE: DropReason
DROP_REASON_UNKNOWN_CALL: DropReason

class GetFleetRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetFleetResponse(_message.Message):
    __slots__ = ("sync", "hosts", "breakers", "windows", "shared_errors", "ignored")
    class IgnoredEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    SYNC_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    BREAKERS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    SHARED_ERRORS_FIELD_NUMBER: _ClassVar[int]
    IGNORED_FIELD_NUMBER: _ClassVar[int]
    sync: FleetSync
    hosts: _containers.RepeatedCompositeFieldContainer[FleetHost]
    breakers: _containers.RepeatedCompositeFieldContainer[FleetBreaker]
    windows: _containers.RepeatedCompositeFieldContainer[FleetWindow]
    shared_errors: int
    ignored: _containers.ScalarMap[str, int]
    def __init__(self, sync: _Optional[_Union[FleetSync, _Mapping]] = ..., hosts: _Optional[_Iterable[_Union[FleetHost, _Mapping]]] = ..., breakers: _Optional[_Iterable[_Union[FleetBreaker, _Mapping]]] = ..., windows: _Optional[_Iterable[_Union[FleetWindow, _Mapping]]] = ..., shared_errors: _Optional[int] = ..., ignored: _Optional[_Mapping[str, int]] = ...) -> None: ...

class FleetSync(_message.Message):
    __slots__ = ("state", "fleet", "host", "since", "problem", "hosts", "quorum", "outages")
    STATE_FIELD_NUMBER: _ClassVar[int]
    FLEET_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    QUORUM_FIELD_NUMBER: _ClassVar[int]
    OUTAGES_FIELD_NUMBER: _ClassVar[int]
    state: FleetState
    fleet: str
    host: str
    since: _timestamp_pb2.Timestamp
    problem: str
    hosts: int
    quorum: int
    outages: int
    def __init__(self, state: _Optional[_Union[FleetState, str]] = ..., fleet: _Optional[str] = ..., host: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., problem: _Optional[str] = ..., hosts: _Optional[int] = ..., quorum: _Optional[int] = ..., outages: _Optional[int] = ...) -> None: ...

class FleetHost(_message.Message):
    __slots__ = ("host", "this_host", "seen_at", "live", "last_word", "last_word_at")
    HOST_FIELD_NUMBER: _ClassVar[int]
    THIS_HOST_FIELD_NUMBER: _ClassVar[int]
    SEEN_AT_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    LAST_WORD_FIELD_NUMBER: _ClassVar[int]
    LAST_WORD_AT_FIELD_NUMBER: _ClassVar[int]
    host: str
    this_host: bool
    seen_at: _timestamp_pb2.Timestamp
    live: bool
    last_word: str
    last_word_at: _timestamp_pb2.Timestamp
    def __init__(self, host: _Optional[str] = ..., this_host: _Optional[bool] = ..., seen_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., live: _Optional[bool] = ..., last_word: _Optional[str] = ..., last_word_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FleetBreaker(_message.Message):
    __slots__ = ("tool", "scope", "open_on", "refused", "half_opens_at", "probe_host", "probe_until")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    OPEN_ON_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    HALF_OPENS_AT_FIELD_NUMBER: _ClassVar[int]
    PROBE_HOST_FIELD_NUMBER: _ClassVar[int]
    PROBE_UNTIL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    scope: str
    open_on: _containers.RepeatedScalarFieldContainer[str]
    refused: bool
    half_opens_at: _timestamp_pb2.Timestamp
    probe_host: str
    probe_until: _timestamp_pb2.Timestamp
    def __init__(self, tool: _Optional[str] = ..., scope: _Optional[str] = ..., open_on: _Optional[_Iterable[str]] = ..., refused: _Optional[bool] = ..., half_opens_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., probe_host: _Optional[str] = ..., probe_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FleetWindow(_message.Message):
    __slots__ = ("tool", "scope", "host", "until")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    scope: str
    host: str
    until: _timestamp_pb2.Timestamp
    def __init__(self, tool: _Optional[str] = ..., scope: _Optional[str] = ..., host: _Optional[str] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReplayManifestsRequest(_message.Message):
    __slots__ = ("manifests_dir", "since", "tool", "examples")
    MANIFESTS_DIR_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    manifests_dir: str
    since: _timestamp_pb2.Timestamp
    tool: str
    examples: int
    def __init__(self, manifests_dir: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tool: _Optional[str] = ..., examples: _Optional[int] = ...) -> None: ...

class ReplayManifestsResponse(_message.Message):
    __slots__ = ("progress", "summary")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    progress: ReplayProgress
    summary: ReplaySummary
    def __init__(self, progress: _Optional[_Union[ReplayProgress, _Mapping]] = ..., summary: _Optional[_Union[ReplaySummary, _Mapping]] = ...) -> None: ...

class ReplayProgress(_message.Message):
    __slots__ = ("replayed", "total")
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    replayed: int
    total: int
    def __init__(self, replayed: _Optional[int] = ..., total: _Optional[int] = ...) -> None: ...

class ReplaySummary(_message.Message):
    __slots__ = ("failures", "changed", "outcomes", "changes", "retry_wait_before", "retry_wait_after", "breaker_openings_before", "breaker_openings_after", "escalations_before", "escalations_after", "rate", "events")
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    RETRY_WAIT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    RETRY_WAIT_AFTER_FIELD_NUMBER: _ClassVar[int]
    BREAKER_OPENINGS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    BREAKER_OPENINGS_AFTER_FIELD_NUMBER: _ClassVar[int]
    ESCALATIONS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    ESCALATIONS_AFTER_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    failures: int
    changed: int
    outcomes: int
    changes: _containers.RepeatedCompositeFieldContainer[ReplayChange]
    retry_wait_before: _duration_pb2.Duration
    retry_wait_after: _duration_pb2.Duration
    breaker_openings_before: int
    breaker_openings_after: int
    escalations_before: int
    escalations_after: int
    rate: float
    events: int
    def __init__(self, failures: _Optional[int] = ..., changed: _Optional[int] = ..., outcomes: _Optional[int] = ..., changes: _Optional[_Iterable[_Union[ReplayChange, _Mapping]]] = ..., retry_wait_before: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., retry_wait_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., breaker_openings_before: _Optional[int] = ..., breaker_openings_after: _Optional[int] = ..., escalations_before: _Optional[int] = ..., escalations_after: _Optional[int] = ..., rate: _Optional[float] = ..., events: _Optional[int] = ...) -> None: ...

class ReplayChange(_message.Message):
    __slots__ = ("kind", "before", "after", "count", "examples")
    KIND_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    EXAMPLES_FIELD_NUMBER: _ClassVar[int]
    kind: str
    before: str
    after: str
    count: int
    examples: _containers.RepeatedCompositeFieldContainer[ReplayExample]
    def __init__(self, kind: _Optional[str] = ..., before: _Optional[str] = ..., after: _Optional[str] = ..., count: _Optional[int] = ..., examples: _Optional[_Iterable[_Union[ReplayExample, _Mapping]]] = ...) -> None: ...

class ReplayExample(_message.Message):
    __slots__ = ("turn_id", "call_id", "tool", "attempt", "reason_before", "reason_after", "scope")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_BEFORE_FIELD_NUMBER: _ClassVar[int]
    REASON_AFTER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    reason_before: str
    reason_after: str
    scope: str
    def __init__(self, turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., reason_before: _Optional[str] = ..., reason_after: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class ReloadManifestsRequest(_message.Message):
    __slots__ = ("by",)
    BY_FIELD_NUMBER: _ClassVar[int]
    by: str
    def __init__(self, by: _Optional[str] = ...) -> None: ...

class ReloadManifestsResponse(_message.Message):
    __slots__ = ("applied", "tools", "problems")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    tools: _containers.RepeatedScalarFieldContainer[str]
    problems: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, applied: _Optional[bool] = ..., tools: _Optional[_Iterable[str]] = ..., problems: _Optional[_Iterable[str]] = ...) -> None: ...

class RecallEpisodesRequest(_message.Message):
    __slots__ = ("tool", "message", "code", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    message: str
    code: ErrorCode
    scope: str
    def __init__(self, tool: _Optional[str] = ..., message: _Optional[str] = ..., code: _Optional[_Union[ErrorCode, str]] = ..., scope: _Optional[str] = ...) -> None: ...

class RecallEpisodesResponse(_message.Message):
    __slots__ = ("errors", "tool_succeeded_at", "breaker_reset_at", "min_episodes", "burst_gap")
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    TOOL_SUCCEEDED_AT_FIELD_NUMBER: _ClassVar[int]
    BREAKER_RESET_AT_FIELD_NUMBER: _ClassVar[int]
    MIN_EPISODES_FIELD_NUMBER: _ClassVar[int]
    BURST_GAP_FIELD_NUMBER: _ClassVar[int]
    errors: _containers.RepeatedCompositeFieldContainer[RememberedError]
    tool_succeeded_at: _timestamp_pb2.Timestamp
    breaker_reset_at: _timestamp_pb2.Timestamp
    min_episodes: float
    burst_gap: _duration_pb2.Duration
    def __init__(self, errors: _Optional[_Iterable[_Union[RememberedError, _Mapping]]] = ..., tool_succeeded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., breaker_reset_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., min_episodes: _Optional[float] = ..., burst_gap: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class RememberedError(_message.Message):
    __slots__ = ("signature", "fingerprint", "recoveries")
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    RECOVERIES_FIELD_NUMBER: _ClassVar[int]
    signature: str
    fingerprint: str
    recoveries: _containers.RepeatedCompositeFieldContainer[RecoveryEvidence]
    def __init__(self, signature: _Optional[str] = ..., fingerprint: _Optional[str] = ..., recoveries: _Optional[_Iterable[_Union[RecoveryEvidence, _Mapping]]] = ...) -> None: ...

class RecoveryEvidence(_message.Message):
    __slots__ = ("recovery", "succeeded", "failed", "unknown", "success_rate", "last_failed", "last_succeeded", "stops_retries", "applies_until", "lifted_by", "from_fleet")
    RECOVERY_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_RATE_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILED_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    STOPS_RETRIES_FIELD_NUMBER: _ClassVar[int]
    APPLIES_UNTIL_FIELD_NUMBER: _ClassVar[int]
    LIFTED_BY_FIELD_NUMBER: _ClassVar[int]
    FROM_FLEET_FIELD_NUMBER: _ClassVar[int]
    recovery: str
    succeeded: float
    failed: float
    unknown: float
    success_rate: float
    last_failed: _timestamp_pb2.Timestamp
    last_succeeded: _timestamp_pb2.Timestamp
    stops_retries: bool
    applies_until: _timestamp_pb2.Timestamp
    lifted_by: str
    from_fleet: float
    def __init__(self, recovery: _Optional[str] = ..., succeeded: _Optional[float] = ..., failed: _Optional[float] = ..., unknown: _Optional[float] = ..., success_rate: _Optional[float] = ..., last_failed: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_succeeded: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stops_retries: _Optional[bool] = ..., applies_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lifted_by: _Optional[str] = ..., from_fleet: _Optional[float] = ...) -> None: ...

class BreakerState(_message.Message):
    __slots__ = ("phase", "consecutive_failures", "consecutive_successes", "opened_at", "half_opens_at", "opens", "probe_in_flight", "probe_until", "streak", "break_length", "recent_attempts", "recent_failures")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    HALF_OPENS_AT_FIELD_NUMBER: _ClassVar[int]
    OPENS_FIELD_NUMBER: _ClassVar[int]
    PROBE_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    PROBE_UNTIL_FIELD_NUMBER: _ClassVar[int]
    STREAK_FIELD_NUMBER: _ClassVar[int]
    BREAK_LENGTH_FIELD_NUMBER: _ClassVar[int]
    RECENT_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    RECENT_FAILURES_FIELD_NUMBER: _ClassVar[int]
    phase: BreakerPhase
    consecutive_failures: int
    consecutive_successes: int
    opened_at: _timestamp_pb2.Timestamp
    half_opens_at: _timestamp_pb2.Timestamp
    opens: int
    probe_in_flight: bool
    probe_until: _timestamp_pb2.Timestamp
    streak: int
    break_length: _duration_pb2.Duration
    recent_attempts: int
    recent_failures: int
    def __init__(self, phase: _Optional[_Union[BreakerPhase, str]] = ..., consecutive_failures: _Optional[int] = ..., consecutive_successes: _Optional[int] = ..., opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., half_opens_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., opens: _Optional[int] = ..., probe_in_flight: _Optional[bool] = ..., probe_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., streak: _Optional[int] = ..., break_length: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., recent_attempts: _Optional[int] = ..., recent_failures: _Optional[int] = ...) -> None: ...

class RateLimitWindow(_message.Message):
    __slots__ = ("opened_at", "until", "retry_after")
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    opened_at: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    retry_after: _duration_pb2.Duration
    def __init__(self, opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retry_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ("code", "http_status", "exception_type", "message", "retry_after", "retry_at", "partial_result", "api_message", "api_parameter", "api_code")
    CODE_FIELD_NUMBER: _ClassVar[int]
    HTTP_STATUS_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    RETRY_AT_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_RESULT_FIELD_NUMBER: _ClassVar[int]
    API_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    API_PARAMETER_FIELD_NUMBER: _ClassVar[int]
    API_CODE_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    http_status: int
    exception_type: str
    message: str
    retry_after: _duration_pb2.Duration
    retry_at: _timestamp_pb2.Timestamp
    partial_result: _struct_pb2.Value
    api_message: str
    api_parameter: str
    api_code: str
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., http_status: _Optional[int] = ..., exception_type: _Optional[str] = ..., message: _Optional[str] = ..., retry_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., retry_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., partial_result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., api_message: _Optional[str] = ..., api_parameter: _Optional[str] = ..., api_code: _Optional[str] = ...) -> None: ...

class ToolDeclaration(_message.Message):
    __slots__ = ("parameters", "timeout")
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    parameters: _struct_pb2.Struct
    timeout: _duration_pb2.Duration
    def __init__(self, parameters: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Classification(_message.Message):
    __slots__ = ("error_class", "code", "rule", "fault", "parameter")
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    FAULT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    error_class: ErrorClass
    code: ErrorCode
    rule: str
    fault: Fault
    parameter: str
    def __init__(self, error_class: _Optional[_Union[ErrorClass, str]] = ..., code: _Optional[_Union[ErrorCode, str]] = ..., rule: _Optional[str] = ..., fault: _Optional[_Union[Fault, str]] = ..., parameter: _Optional[str] = ...) -> None: ...

class RecoveryDecision(_message.Message):
    __slots__ = ("decision_id", "action", "delay", "next_attempt_timeout", "alternative_tool", "classification", "attempts_left", "reason", "llm_message", "user_message", "turn_id", "call_id", "tool", "attempt", "decided_at", "default_policy", "technical_message", "breaker", "probe", "default_value", "consequences", "correction", "recalled")
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVE_TOOL_FIELD_NUMBER: _ClassVar[int]
    CLASSIFICATION_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_LEFT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LLM_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    USER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_POLICY_FIELD_NUMBER: _ClassVar[int]
    TECHNICAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    PROBE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    CONSEQUENCES_FIELD_NUMBER: _ClassVar[int]
    CORRECTION_FIELD_NUMBER: _ClassVar[int]
    RECALLED_FIELD_NUMBER: _ClassVar[int]
    decision_id: str
    action: RecoveryAction
    delay: _duration_pb2.Duration
    next_attempt_timeout: _duration_pb2.Duration
    alternative_tool: str
    classification: Classification
    attempts_left: int
    reason: str
    llm_message: str
    user_message: str
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    decided_at: _timestamp_pb2.Timestamp
    default_policy: bool
    technical_message: str
    breaker: BreakerState
    probe: bool
    default_value: _struct_pb2.Value
    consequences: _containers.RepeatedCompositeFieldContainer[Consequence]
    correction: Correction
    recalled: _containers.RepeatedCompositeFieldContainer[RecoveryEvidence]
    def __init__(self, decision_id: _Optional[str] = ..., action: _Optional[_Union[RecoveryAction, str]] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., next_attempt_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., alternative_tool: _Optional[str] = ..., classification: _Optional[_Union[Classification, _Mapping]] = ..., attempts_left: _Optional[int] = ..., reason: _Optional[str] = ..., llm_message: _Optional[str] = ..., user_message: _Optional[str] = ..., turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., decided_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., default_policy: _Optional[bool] = ..., technical_message: _Optional[str] = ..., breaker: _Optional[_Union[BreakerState, _Mapping]] = ..., probe: _Optional[bool] = ..., default_value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., consequences: _Optional[_Iterable[_Union[Consequence, _Mapping]]] = ..., correction: _Optional[_Union[Correction, _Mapping]] = ..., recalled: _Optional[_Iterable[_Union[RecoveryEvidence, _Mapping]]] = ...) -> None: ...

class Correction(_message.Message):
    __slots__ = ("type", "message", "parameter", "required_parameters", "example", "retry_hint", "problems", "available_tools", "corrections_left")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    RETRY_HINT_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    CORRECTIONS_LEFT_FIELD_NUMBER: _ClassVar[int]
    type: str
    message: str
    parameter: str
    required_parameters: _containers.RepeatedScalarFieldContainer[str]
    example: _struct_pb2.Struct
    retry_hint: str
    problems: _containers.RepeatedCompositeFieldContainer[ParameterProblem]
    available_tools: _containers.RepeatedScalarFieldContainer[str]
    corrections_left: int
    def __init__(self, type: _Optional[str] = ..., message: _Optional[str] = ..., parameter: _Optional[str] = ..., required_parameters: _Optional[_Iterable[str]] = ..., example: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., retry_hint: _Optional[str] = ..., problems: _Optional[_Iterable[_Union[ParameterProblem, _Mapping]]] = ..., available_tools: _Optional[_Iterable[str]] = ..., corrections_left: _Optional[int] = ...) -> None: ...

class ParameterProblem(_message.Message):
    __slots__ = ("type", "parameter", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    parameter: str
    message: str
    def __init__(self, type: _Optional[str] = ..., parameter: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class Consequence(_message.Message):
    __slots__ = ("call_id", "tool", "action", "reason", "blocked_by", "default_value")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_BY_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    action: RecoveryAction
    reason: str
    blocked_by: str
    default_value: _struct_pb2.Value
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., action: _Optional[_Union[RecoveryAction, str]] = ..., reason: _Optional[str] = ..., blocked_by: _Optional[str] = ..., default_value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class ReportFailureRequest(_message.Message):
    __slots__ = ("turn_id", "call_id", "tool", "attempt", "error", "arguments", "elapsed", "user_id", "session_id", "tool_declaration", "scope")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_DECLARATION_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    error: ToolError
    arguments: _struct_pb2.Struct
    elapsed: _duration_pb2.Duration
    user_id: str
    session_id: str
    tool_declaration: ToolDeclaration
    scope: str
    def __init__(self, turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., elapsed: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., tool_declaration: _Optional[_Union[ToolDeclaration, _Mapping]] = ..., scope: _Optional[str] = ...) -> None: ...

class AdmitCallRequest(_message.Message):
    __slots__ = ("turn_id", "call_id", "tool", "attempt", "arguments", "scope")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    arguments: _struct_pb2.Struct
    scope: str
    def __init__(self, turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., scope: _Optional[str] = ...) -> None: ...

class AdmitCallResponse(_message.Message):
    __slots__ = ("admitted", "probe", "decision", "breaker", "replayed")
    ADMITTED_FIELD_NUMBER: _ClassVar[int]
    PROBE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    admitted: bool
    probe: bool
    decision: RecoveryDecision
    breaker: BreakerState
    replayed: bool
    def __init__(self, admitted: _Optional[bool] = ..., probe: _Optional[bool] = ..., decision: _Optional[_Union[RecoveryDecision, _Mapping]] = ..., breaker: _Optional[_Union[BreakerState, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class WatchToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchToolsResponse(_message.Message):
    __slots__ = ("snapshot", "tools", "default_timeout")
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    snapshot: bool
    tools: _containers.RepeatedCompositeFieldContainer[ToolPolicy]
    default_timeout: _duration_pb2.Duration
    def __init__(self, snapshot: _Optional[bool] = ..., tools: _Optional[_Iterable[_Union[ToolPolicy, _Mapping]]] = ..., default_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ToolPolicy(_message.Message):
    __slots__ = ("tool", "timeout", "breaker", "has_manifest", "rate_limit", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    HAS_MANIFEST_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    timeout: _duration_pb2.Duration
    breaker: BreakerState
    has_manifest: bool
    rate_limit: RateLimitWindow
    scope: str
    def __init__(self, tool: _Optional[str] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., breaker: _Optional[_Union[BreakerState, _Mapping]] = ..., has_manifest: _Optional[bool] = ..., rate_limit: _Optional[_Union[RateLimitWindow, _Mapping]] = ..., scope: _Optional[str] = ...) -> None: ...

class ReportFailureResponse(_message.Message):
    __slots__ = ("decision", "replayed")
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    decision: RecoveryDecision
    replayed: bool
    def __init__(self, decision: _Optional[_Union[RecoveryDecision, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class ReportFailuresRequest(_message.Message):
    __slots__ = ("failures",)
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    failures: _containers.RepeatedCompositeFieldContainer[ReportFailureRequest]
    def __init__(self, failures: _Optional[_Iterable[_Union[ReportFailureRequest, _Mapping]]] = ...) -> None: ...

class ReportFailuresResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ReportFailuresResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ReportFailuresResult, _Mapping]]] = ...) -> None: ...

class ReportFailuresResult(_message.Message):
    __slots__ = ("answer", "refused")
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    answer: ReportFailureResponse
    refused: RefusedReport
    def __init__(self, answer: _Optional[_Union[ReportFailureResponse, _Mapping]] = ..., refused: _Optional[_Union[RefusedReport, _Mapping]] = ...) -> None: ...

class RefusedReport(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ReportOutcomeRequest(_message.Message):
    __slots__ = ("turn_id", "call_id", "tool", "attempt", "outcome", "duration", "decision_id", "user_id", "session_id", "scope")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    outcome: Outcome
    duration: _duration_pb2.Duration
    decision_id: str
    user_id: str
    session_id: str
    scope: str
    def __init__(self, turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., decision_id: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class ReportOutcomeResponse(_message.Message):
    __slots__ = ("event", "replayed")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    event: TraceEvent
    replayed: bool
    def __init__(self, event: _Optional[_Union[TraceEvent, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class GetTurnTraceRequest(_message.Message):
    __slots__ = ("turn_id", "page_size", "page_token")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    page_size: int
    page_token: str
    def __init__(self, turn_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetTurnTraceResponse(_message.Message):
    __slots__ = ("events", "next_page_token")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[TraceEvent]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[TraceEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchTraceRequest(_message.Message):
    __slots__ = ("turn_id", "include_history", "after_sequence", "batch_interval")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_HISTORY_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    BATCH_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    include_history: bool
    after_sequence: int
    batch_interval: _duration_pb2.Duration
    def __init__(self, turn_id: _Optional[str] = ..., include_history: _Optional[bool] = ..., after_sequence: _Optional[int] = ..., batch_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WatchTraceResponse(_message.Message):
    __slots__ = ("event", "events")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    event: TraceEvent
    events: _containers.RepeatedCompositeFieldContainer[TraceEvent]
    def __init__(self, event: _Optional[_Union[TraceEvent, _Mapping]] = ..., events: _Optional[_Iterable[_Union[TraceEvent, _Mapping]]] = ...) -> None: ...

class TraceEvent(_message.Message):
    __slots__ = ("sequence", "time", "turn_id", "call_id", "tool", "attempt", "failure", "outcome", "turn_began", "breaker", "turn_ended", "memory_forgotten", "manifests_reloaded", "rate_limited", "scope")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    TURN_BEGAN_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FORGOTTEN_FIELD_NUMBER: _ClassVar[int]
    MANIFESTS_RELOADED_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMITED_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    time: _timestamp_pb2.Timestamp
    turn_id: str
    call_id: str
    tool: str
    attempt: int
    failure: FailureEvent
    outcome: OutcomeEvent
    turn_began: TurnBeganEvent
    breaker: BreakerEvent
    turn_ended: TurnEndedEvent
    memory_forgotten: MemoryForgottenEvent
    manifests_reloaded: ManifestsReloadedEvent
    rate_limited: RateLimitedEvent
    scope: str
    def __init__(self, sequence: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., failure: _Optional[_Union[FailureEvent, _Mapping]] = ..., outcome: _Optional[_Union[OutcomeEvent, _Mapping]] = ..., turn_began: _Optional[_Union[TurnBeganEvent, _Mapping]] = ..., breaker: _Optional[_Union[BreakerEvent, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEndedEvent, _Mapping]] = ..., memory_forgotten: _Optional[_Union[MemoryForgottenEvent, _Mapping]] = ..., manifests_reloaded: _Optional[_Union[ManifestsReloadedEvent, _Mapping]] = ..., rate_limited: _Optional[_Union[RateLimitedEvent, _Mapping]] = ..., scope: _Optional[str] = ...) -> None: ...

class RateLimitedEvent(_message.Message):
    __slots__ = ("window",)
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    window: RateLimitWindow
    def __init__(self, window: _Optional[_Union[RateLimitWindow, _Mapping]] = ...) -> None: ...

class FailureEvent(_message.Message):
    __slots__ = ("error", "arguments", "elapsed", "decision", "tool_declaration")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    TOOL_DECLARATION_FIELD_NUMBER: _ClassVar[int]
    error: ToolError
    arguments: _struct_pb2.Struct
    elapsed: _duration_pb2.Duration
    decision: RecoveryDecision
    tool_declaration: ToolDeclaration
    def __init__(self, error: _Optional[_Union[ToolError, _Mapping]] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., elapsed: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., decision: _Optional[_Union[RecoveryDecision, _Mapping]] = ..., tool_declaration: _Optional[_Union[ToolDeclaration, _Mapping]] = ...) -> None: ...

class OutcomeEvent(_message.Message):
    __slots__ = ("outcome", "duration", "decision_id", "breaker")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    outcome: Outcome
    duration: _duration_pb2.Duration
    decision_id: str
    breaker: BreakerState
    def __init__(self, outcome: _Optional[_Union[Outcome, str]] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., decision_id: _Optional[str] = ..., breaker: _Optional[_Union[BreakerState, _Mapping]] = ...) -> None: ...

class TurnBeganEvent(_message.Message):
    __slots__ = ("implicit", "deadline", "retry_budget", "plan")
    IMPLICIT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    RETRY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    implicit: bool
    deadline: _timestamp_pb2.Timestamp
    retry_budget: RetryBudget
    plan: _containers.RepeatedCompositeFieldContainer[PlannedCall]
    def __init__(self, implicit: _Optional[bool] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retry_budget: _Optional[_Union[RetryBudget, _Mapping]] = ..., plan: _Optional[_Iterable[_Union[PlannedCall, _Mapping]]] = ...) -> None: ...

class TurnEndedEvent(_message.Message):
    __slots__ = ("summary",)
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    summary: TurnSummary
    def __init__(self, summary: _Optional[_Union[TurnSummary, _Mapping]] = ...) -> None: ...

class MemoryForgottenEvent(_message.Message):
    __slots__ = ("reason", "errors")
    REASON_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    reason: ForgetReason
    errors: _containers.RepeatedCompositeFieldContainer[ForgottenError]
    def __init__(self, reason: _Optional[_Union[ForgetReason, str]] = ..., errors: _Optional[_Iterable[_Union[ForgottenError, _Mapping]]] = ...) -> None: ...

class ManifestsReloadedEvent(_message.Message):
    __slots__ = ("applied", "tools", "problems", "by")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    tools: int
    problems: _containers.RepeatedScalarFieldContainer[str]
    by: str
    def __init__(self, applied: _Optional[bool] = ..., tools: _Optional[int] = ..., problems: _Optional[_Iterable[str]] = ..., by: _Optional[str] = ...) -> None: ...

class ForgottenError(_message.Message):
    __slots__ = ("tool", "signature", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    signature: str
    scope: str
    def __init__(self, tool: _Optional[str] = ..., signature: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class RetryBudget(_message.Message):
    __slots__ = ("max_retries", "max_share")
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    MAX_SHARE_FIELD_NUMBER: _ClassVar[int]
    max_retries: int
    max_share: float
    def __init__(self, max_retries: _Optional[int] = ..., max_share: _Optional[float] = ...) -> None: ...

class BeginTurnRequest(_message.Message):
    __slots__ = ("turn_id", "deadline", "retry_budget", "plan")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    RETRY_BUDGET_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    deadline: _timestamp_pb2.Timestamp
    retry_budget: RetryBudget
    plan: _containers.RepeatedCompositeFieldContainer[PlannedCall]
    def __init__(self, turn_id: _Optional[str] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retry_budget: _Optional[_Union[RetryBudget, _Mapping]] = ..., plan: _Optional[_Iterable[_Union[PlannedCall, _Mapping]]] = ...) -> None: ...

class PlannedCall(_message.Message):
    __slots__ = ("call_id", "tool", "arguments", "depends_on", "optional", "default_value")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    arguments: _struct_pb2.Struct
    depends_on: _containers.RepeatedScalarFieldContainer[str]
    optional: bool
    default_value: _struct_pb2.Value
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., depends_on: _Optional[_Iterable[str]] = ..., optional: _Optional[bool] = ..., default_value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class EndTurnRequest(_message.Message):
    __slots__ = ("turn_id",)
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ...) -> None: ...

class EndTurnResponse(_message.Message):
    __slots__ = ("summary", "replayed")
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    summary: TurnSummary
    replayed: bool
    def __init__(self, summary: _Optional[_Union[TurnSummary, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class ValidateCallRequest(_message.Message):
    __slots__ = ("tool", "arguments")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    tool: str
    arguments: _struct_pb2.Struct
    def __init__(self, tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ValidateCallResponse(_message.Message):
    __slots__ = ("valid", "checked", "problems", "correction", "llm_message")
    VALID_FIELD_NUMBER: _ClassVar[int]
    CHECKED_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    CORRECTION_FIELD_NUMBER: _ClassVar[int]
    LLM_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    valid: bool
    checked: bool
    problems: _containers.RepeatedCompositeFieldContainer[ParameterProblem]
    correction: Correction
    llm_message: str
    def __init__(self, valid: _Optional[bool] = ..., checked: _Optional[bool] = ..., problems: _Optional[_Iterable[_Union[ParameterProblem, _Mapping]]] = ..., correction: _Optional[_Union[Correction, _Mapping]] = ..., llm_message: _Optional[str] = ...) -> None: ...

class TurnSummary(_message.Message):
    __slots__ = ("turn_id", "began_at", "ended_at", "deadline", "deadline_passed", "calls", "user_notice")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BEGAN_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_PASSED_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    USER_NOTICE_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    began_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    deadline: _timestamp_pb2.Timestamp
    deadline_passed: bool
    calls: _containers.RepeatedCompositeFieldContainer[CallSummary]
    user_notice: str
    def __init__(self, turn_id: _Optional[str] = ..., began_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deadline_passed: _Optional[bool] = ..., calls: _Optional[_Iterable[_Union[CallSummary, _Mapping]]] = ..., user_notice: _Optional[str] = ...) -> None: ...

class CallSummary(_message.Message):
    __slots__ = ("call_id", "tool", "status", "detail", "blocked_by", "decisions")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_BY_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    status: CallStatus
    detail: str
    blocked_by: str
    decisions: _containers.RepeatedCompositeFieldContainer[TakenDecision]
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., status: _Optional[_Union[CallStatus, str]] = ..., detail: _Optional[str] = ..., blocked_by: _Optional[str] = ..., decisions: _Optional[_Iterable[_Union[TakenDecision, _Mapping]]] = ...) -> None: ...

class TakenDecision(_message.Message):
    __slots__ = ("decision_id", "tool", "attempt", "action")
    DECISION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    decision_id: str
    tool: str
    attempt: int
    action: RecoveryAction
    def __init__(self, decision_id: _Optional[str] = ..., tool: _Optional[str] = ..., attempt: _Optional[int] = ..., action: _Optional[_Union[RecoveryAction, str]] = ...) -> None: ...

class BeginTurnResponse(_message.Message):
    __slots__ = ("event", "replayed")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    event: TraceEvent
    replayed: bool
    def __init__(self, event: _Optional[_Union[TraceEvent, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class BreakerEvent(_message.Message):
    __slots__ = ("change", "breaker", "by")
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    change: BreakerChange
    breaker: BreakerState
    by: str
    def __init__(self, change: _Optional[_Union[BreakerChange, str]] = ..., breaker: _Optional[_Union[BreakerState, _Mapping]] = ..., by: _Optional[str] = ...) -> None: ...

class Breaker(_message.Message):
    __slots__ = ("tool", "state", "effective_phase", "half_opens_in", "failure_threshold", "success_threshold", "cooldown", "rate_limit", "first_cooldown", "cooldown_multiplier", "next_break", "failure_rate", "min_calls", "window", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_PHASE_FIELD_NUMBER: _ClassVar[int]
    HALF_OPENS_IN_FIELD_NUMBER: _ClassVar[int]
    FAILURE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    COOLDOWN_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    FIRST_COOLDOWN_FIELD_NUMBER: _ClassVar[int]
    COOLDOWN_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    NEXT_BREAK_FIELD_NUMBER: _ClassVar[int]
    FAILURE_RATE_FIELD_NUMBER: _ClassVar[int]
    MIN_CALLS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    state: BreakerState
    effective_phase: BreakerPhase
    half_opens_in: _duration_pb2.Duration
    failure_threshold: int
    success_threshold: int
    cooldown: _duration_pb2.Duration
    rate_limit: RateLimitWindow
    first_cooldown: _duration_pb2.Duration
    cooldown_multiplier: float
    next_break: _duration_pb2.Duration
    failure_rate: float
    min_calls: int
    window: int
    scope: str
    def __init__(self, tool: _Optional[str] = ..., state: _Optional[_Union[BreakerState, _Mapping]] = ..., effective_phase: _Optional[_Union[BreakerPhase, str]] = ..., half_opens_in: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., failure_threshold: _Optional[int] = ..., success_threshold: _Optional[int] = ..., cooldown: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., rate_limit: _Optional[_Union[RateLimitWindow, _Mapping]] = ..., first_cooldown: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., cooldown_multiplier: _Optional[float] = ..., next_break: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., failure_rate: _Optional[float] = ..., min_calls: _Optional[int] = ..., window: _Optional[int] = ..., scope: _Optional[str] = ...) -> None: ...

class ListBreakersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListBreakersResponse(_message.Message):
    __slots__ = ("breakers",)
    BREAKERS_FIELD_NUMBER: _ClassVar[int]
    breakers: _containers.RepeatedCompositeFieldContainer[Breaker]
    def __init__(self, breakers: _Optional[_Iterable[_Union[Breaker, _Mapping]]] = ...) -> None: ...

class GetBreakerRequest(_message.Message):
    __slots__ = ("tool", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    scope: str
    def __init__(self, tool: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class GetBreakerResponse(_message.Message):
    __slots__ = ("breaker",)
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    breaker: Breaker
    def __init__(self, breaker: _Optional[_Union[Breaker, _Mapping]] = ...) -> None: ...

class ResetBreakerRequest(_message.Message):
    __slots__ = ("tool", "by", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    by: str
    scope: str
    def __init__(self, tool: _Optional[str] = ..., by: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class ResetBreakerResponse(_message.Message):
    __slots__ = ("breaker", "event")
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    breaker: Breaker
    event: TraceEvent
    def __init__(self, breaker: _Optional[_Union[Breaker, _Mapping]] = ..., event: _Optional[_Union[TraceEvent, _Mapping]] = ...) -> None: ...

class ForceOpenBreakerRequest(_message.Message):
    __slots__ = ("tool", "duration", "by", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    BY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    duration: _duration_pb2.Duration
    by: str
    scope: str
    def __init__(self, tool: _Optional[str] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., by: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class ForceOpenBreakerResponse(_message.Message):
    __slots__ = ("breaker", "event")
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    breaker: Breaker
    event: TraceEvent
    def __init__(self, breaker: _Optional[_Union[Breaker, _Mapping]] = ..., event: _Optional[_Union[TraceEvent, _Mapping]] = ...) -> None: ...

class GetToolStatsRequest(_message.Message):
    __slots__ = ("tool", "scope")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tool: str
    scope: str
    def __init__(self, tool: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class GetToolStatsResponse(_message.Message):
    __slots__ = ("tools", "window", "fleet")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    FLEET_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolStats]
    window: _duration_pb2.Duration
    fleet: FleetSync
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolStats, _Mapping]]] = ..., window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fleet: _Optional[_Union[FleetSync, _Mapping]] = ...) -> None: ...

class ToolStats(_message.Message):
    __slots__ = ("tool", "executions", "successes", "errors", "transient_errors", "permanent_errors", "timeouts", "retries", "retry_successes", "retry_success_rate", "breaker_opens", "failure_rate", "mean_duration", "p95_duration", "errors_by_code", "errors_by_exception", "decisions", "recent", "breaker", "alerts", "override_candidates", "scope", "per_execution")
    class ErrorsByCodeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class ErrorsByExceptionEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class DecisionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    TOOL_FIELD_NUMBER: _ClassVar[int]
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    TRANSIENT_ERRORS_FIELD_NUMBER: _ClassVar[int]
    PERMANENT_ERRORS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    RETRY_SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    RETRY_SUCCESS_RATE_FIELD_NUMBER: _ClassVar[int]
    BREAKER_OPENS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_RATE_FIELD_NUMBER: _ClassVar[int]
    MEAN_DURATION_FIELD_NUMBER: _ClassVar[int]
    P95_DURATION_FIELD_NUMBER: _ClassVar[int]
    ERRORS_BY_CODE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_BY_EXCEPTION_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    RECENT_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    ALERTS_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    PER_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    tool: str
    executions: int
    successes: int
    errors: int
    transient_errors: int
    permanent_errors: int
    timeouts: int
    retries: int
    retry_successes: int
    retry_success_rate: float
    breaker_opens: int
    failure_rate: float
    mean_duration: _duration_pb2.Duration
    p95_duration: _duration_pb2.Duration
    errors_by_code: _containers.ScalarMap[str, int]
    errors_by_exception: _containers.ScalarMap[str, int]
    decisions: _containers.ScalarMap[str, int]
    recent: RecentStats
    breaker: Breaker
    alerts: _containers.RepeatedCompositeFieldContainer[ToolAlert]
    override_candidates: _containers.RepeatedCompositeFieldContainer[OverrideCandidate]
    scope: str
    per_execution: ExecutionStats
    def __init__(self, tool: _Optional[str] = ..., executions: _Optional[int] = ..., successes: _Optional[int] = ..., errors: _Optional[int] = ..., transient_errors: _Optional[int] = ..., permanent_errors: _Optional[int] = ..., timeouts: _Optional[int] = ..., retries: _Optional[int] = ..., retry_successes: _Optional[int] = ..., retry_success_rate: _Optional[float] = ..., breaker_opens: _Optional[int] = ..., failure_rate: _Optional[float] = ..., mean_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., p95_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., errors_by_code: _Optional[_Mapping[str, int]] = ..., errors_by_exception: _Optional[_Mapping[str, int]] = ..., decisions: _Optional[_Mapping[str, int]] = ..., recent: _Optional[_Union[RecentStats, _Mapping]] = ..., breaker: _Optional[_Union[Breaker, _Mapping]] = ..., alerts: _Optional[_Iterable[_Union[ToolAlert, _Mapping]]] = ..., override_candidates: _Optional[_Iterable[_Union[OverrideCandidate, _Mapping]]] = ..., scope: _Optional[str] = ..., per_execution: _Optional[_Union[ExecutionStats, _Mapping]] = ...) -> None: ...

class ExecutionStats(_message.Message):
    __slots__ = ("executions", "successes", "errors", "timeouts", "failure_rate", "mean_duration", "p95_duration")
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_RATE_FIELD_NUMBER: _ClassVar[int]
    MEAN_DURATION_FIELD_NUMBER: _ClassVar[int]
    P95_DURATION_FIELD_NUMBER: _ClassVar[int]
    executions: int
    successes: int
    errors: int
    timeouts: int
    failure_rate: float
    mean_duration: _duration_pb2.Duration
    p95_duration: _duration_pb2.Duration
    def __init__(self, executions: _Optional[int] = ..., successes: _Optional[int] = ..., errors: _Optional[int] = ..., timeouts: _Optional[int] = ..., failure_rate: _Optional[float] = ..., mean_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., p95_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class OverrideCandidate(_message.Message):
    __slots__ = ("signature", "fingerprint", "retried", "recovered", "suggested_rule")
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    RETRIED_FIELD_NUMBER: _ClassVar[int]
    RECOVERED_FIELD_NUMBER: _ClassVar[int]
    SUGGESTED_RULE_FIELD_NUMBER: _ClassVar[int]
    signature: str
    fingerprint: str
    retried: float
    recovered: float
    suggested_rule: str
    def __init__(self, signature: _Optional[str] = ..., fingerprint: _Optional[str] = ..., retried: _Optional[float] = ..., recovered: _Optional[float] = ..., suggested_rule: _Optional[str] = ...) -> None: ...

class RecentStats(_message.Message):
    __slots__ = ("executions", "errors", "failure_rate", "mean_duration")
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_RATE_FIELD_NUMBER: _ClassVar[int]
    MEAN_DURATION_FIELD_NUMBER: _ClassVar[int]
    executions: int
    errors: int
    failure_rate: float
    mean_duration: _duration_pb2.Duration
    def __init__(self, executions: _Optional[int] = ..., errors: _Optional[int] = ..., failure_rate: _Optional[float] = ..., mean_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ToolAlert(_message.Message):
    __slots__ = ("kind", "message")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    kind: AlertKind
    message: str
    def __init__(self, kind: _Optional[_Union[AlertKind, str]] = ..., message: _Optional[str] = ...) -> None: ...

class ToolCallRef(_message.Message):
    __slots__ = ("call_id", "tool")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ...) -> None: ...

class HeldToolResult(_message.Message):
    __slots__ = ("call_id", "content", "is_error")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    content: str
    is_error: bool
    def __init__(self, call_id: _Optional[str] = ..., content: _Optional[str] = ..., is_error: _Optional[bool] = ...) -> None: ...

class ReconcileResultsRequest(_message.Message):
    __slots__ = ("turn_id", "calls", "results")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    calls: _containers.RepeatedCompositeFieldContainer[ToolCallRef]
    results: _containers.RepeatedCompositeFieldContainer[HeldToolResult]
    def __init__(self, turn_id: _Optional[str] = ..., calls: _Optional[_Iterable[_Union[ToolCallRef, _Mapping]]] = ..., results: _Optional[_Iterable[_Union[HeldToolResult, _Mapping]]] = ...) -> None: ...

class ReconciledResult(_message.Message):
    __slots__ = ("call_id", "tool", "content", "is_error", "origin", "note")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    content: str
    is_error: bool
    origin: ResultOrigin
    note: str
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., content: _Optional[str] = ..., is_error: _Optional[bool] = ..., origin: _Optional[_Union[ResultOrigin, str]] = ..., note: _Optional[str] = ...) -> None: ...

class DroppedResult(_message.Message):
    __slots__ = ("index", "call_id", "reason")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    call_id: str
    reason: DropReason
    def __init__(self, index: _Optional[int] = ..., call_id: _Optional[str] = ..., reason: _Optional[_Union[DropReason, str]] = ...) -> None: ...

class ReconcileResultsResponse(_message.Message):
    __slots__ = ("results", "dropped")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ReconciledResult]
    dropped: _containers.RepeatedCompositeFieldContainer[DroppedResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ReconciledResult, _Mapping]]] = ..., dropped: _Optional[_Iterable[_Union[DroppedResult, _Mapping]]] = ...) -> None: ...
