"""Requests about turns in: BeginTurn (with its plan), EndTurn, ReconcileResults,
GetTurnTrace and WatchTrace, and ValidateCall; each decoded into the domain, every field
validated.

Each ``*_from_proto`` raises InvalidRequest naming every bad field of its request
(errord.wire.bounds). The reports a turn's calls make are errord.wire.requests'.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from errord_client.v1 import errord_pb2 as pb

from errord.decide.model import (
    DefaultValue,
    JSONValue,
    PlannedCall,
    RetryBudget,
)
from errord.decide.policy.plan import plan_problems
from errord.decide.texts.tool_results import HeldResult, ToolCall
from errord.errors import InvalidValue
from errord.wire.bounds import (
    DEFAULT_PAGE_SIZE,
    MAX_CALLS,
    MAX_ID_LENGTH,
    MAX_JSON_BYTES,
    MAX_PAGE_TOKEN_LENGTH,
    Violations,
)


@dataclass(frozen=True)
class TracePage:
    """Which page of a turn's trace a GetTurnTrace asks for."""

    turn_id: str
    after: int
    """The sequence the page starts after (0: the first page)."""
    size: int


def trace_page_from_proto(request: pb.GetTurnTraceRequest) -> TracePage:
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    if request.page_size < 0:
        check.add("page_size", f"must not be negative, got {request.page_size}")
    after = 0
    token = request.page_token
    if token:
        if len(token) <= MAX_PAGE_TOKEN_LENGTH and token.isascii() and token.isdigit():
            after = check.sequence("page_token", int(token))
        else:  # never quoted: a token may be megabytes long
            check.add("page_token", "not a next_page_token from a previous GetTurnTrace")
    check.raise_any()
    return TracePage(turn_id, after, min(request.page_size or DEFAULT_PAGE_SIZE, DEFAULT_PAGE_SIZE))


MIN_BATCH_INTERVAL, MAX_BATCH_INTERVAL = 0.001, 10.0
"""The batch_interval a watcher may ask for, in seconds."""


@dataclass(frozen=True)
class WatchSelection:
    """Which events a WatchTrace streams."""

    turn_id: str
    """One turn's events; empty for every turn."""
    after: int
    """The sequence the history starts after, and the live events."""
    history: bool
    """Whether the recorded events after ``after`` are sent before the live ones."""
    batch_interval: float = 0.0
    """Seconds over which live events are coalesced into one response; 0 for none."""


def watch_from_proto(request: pb.WatchTraceRequest) -> WatchSelection:
    check = Violations()
    if request.turn_id or request.include_history:
        check.identifier("turn_id", request.turn_id)
    check.sequence("after_sequence", request.after_sequence)
    interval = 0.0
    if request.HasField("batch_interval"):
        interval = check.seconds("batch_interval", request.batch_interval)
        if not MIN_BATCH_INTERVAL <= interval <= MAX_BATCH_INTERVAL:
            check.add("batch_interval", "must be from 1 ms to 10 s (leave it unset for none)")
    check.raise_any()
    history = request.include_history or request.after_sequence > 0
    return WatchSelection(request.turn_id, request.after_sequence, history, interval)


@dataclass(frozen=True)
class Reconciling:
    turn_id: str
    calls: list[ToolCall]
    held: list[HeldResult]


def reconciling_from_proto(request: pb.ReconcileResultsRequest) -> Reconciling:
    """The calls and held results; raises InvalidRequest naming every bad field."""
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    if not 1 <= len(request.calls) <= MAX_CALLS:
        check.add("calls", f"must hold 1 to {MAX_CALLS} tool calls, got {len(request.calls)}")
    if len(request.results) > MAX_CALLS:
        check.add("results", f"at most {MAX_CALLS} results, got {len(request.results)}")
    check.raise_any()
    first_use: dict[str, int] = {}
    calls = []
    for index, call in enumerate(request.calls):
        field = f"calls[{index}]."
        call_id = check.identifier(field + "call_id", call.call_id)
        if call_id in first_use:
            check.add(field + "call_id", f"repeats calls[{first_use[call_id]}].call_id")
        first_use.setdefault(call_id, index)
        calls.append(ToolCall(call_id, check.identifier(field + "tool", call.tool)))
    held = [
        HeldResult(
            check.text(f"results[{index}].call_id", result.call_id, MAX_ID_LENGTH),
            check.text(f"results[{index}].content", result.content, MAX_JSON_BYTES),
            result.is_error,
        )
        for index, result in enumerate(request.results)
    ]
    check.raise_any()
    return Reconciling(turn_id, calls, held)


@dataclass(frozen=True)
class Beginning:
    turn_id: str
    deadline: datetime | None
    retry_budget: RetryBudget | None
    plan: tuple[PlannedCall, ...] = ()


def beginning_from_proto(request: pb.BeginTurnRequest) -> Beginning:
    """The turn to begin; raises InvalidRequest naming every bad field."""
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    deadline = check.moment("deadline", request.deadline) if request.HasField("deadline") else None
    budget = None
    if request.HasField("retry_budget"):
        asked = request.retry_budget
        try:
            budget = RetryBudget(
                max_retries=asked.max_retries if asked.HasField("max_retries") else None,
                max_share=asked.max_share if asked.HasField("max_share") else None,
            )
        except InvalidValue as error:
            check.add(f"retry_budget.{error.field}", error.problem)
    plan = _plan(request, check)
    check.raise_any()
    return Beginning(turn_id, deadline, budget, plan)


def _plan(request: pb.BeginTurnRequest, check: Violations) -> tuple[PlannedCall, ...]:
    if len(request.plan) > MAX_CALLS:
        check.add("plan", f"at most {MAX_CALLS} calls, got {len(request.plan)}")
        return ()
    plan = []
    for index, call in enumerate(request.plan):
        within = check.within(f"plan[{index}].")
        if len(call.depends_on) > MAX_CALLS:
            within.add("depends_on", f"at most {MAX_CALLS} call ids, got {len(call.depends_on)}")
        else:
            for position, needed in enumerate(call.depends_on):
                within.identifier(f"depends_on[{position}]", needed)
        plan.append(
            PlannedCall(
                call_id=within.identifier("call_id", call.call_id),
                tool=within.identifier("tool", call.tool),
                depends_on=tuple(call.depends_on),
                optional=call.optional if call.HasField("optional") else None,
                default=DefaultValue(within.json("default_value", call.default_value))
                if call.HasField("default_value")
                else None,
                arguments=within.json("arguments", call.arguments) or {},
            )
        )
    if not check.found:  # the graph's problems, once every call is well formed
        for problem in plan_problems(plan):
            check.add(f"plan[{problem.index}].{problem.field}", problem.description)
    return tuple(plan)


@dataclass(frozen=True)
class CallToCheck:
    tool: str
    arguments: dict[str, JSONValue]


def call_to_check_from_proto(request: pb.ValidateCallRequest) -> CallToCheck:
    check = Violations()
    tool = check.identifier("tool", request.tool)
    arguments = check.json("arguments", request.arguments) or {}
    check.raise_any()
    return CallToCheck(tool, arguments)


def turn_id_from_proto(request: pb.EndTurnRequest) -> str:
    check = Violations()
    turn_id = check.identifier("turn_id", request.turn_id)
    check.raise_any()
    return turn_id
