"""A batch's calls as a plan: which call needs which, checked before anything runs.

A call may name, in ``depends_on``, calls of the same batch whose results it needs. A
name that is not in the batch is ignored (with a warning); calls on a dependency cycle,
and a second call with an id already taken, are not run: their results say why. With
dependencies, the plan is sent to errord (BeginTurn), which then names in its decisions
what becomes of the calls waiting on a failed one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from google.protobuf import struct_pb2

from errord_client.executor.calls import NO_DEFAULT, ToolCall
from errord_client.executor.link import as_struct
from errord_client.v1 import errord_pb2 as pb

log = logging.getLogger("errord_client.executor")


@dataclass(frozen=True, slots=True)
class Plan:
    calls: tuple[ToolCall, ...]
    """Every call of the batch, in the model's order."""
    needed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """For each call id, the ids of the batch's calls it needs."""
    broken: dict[str, str] = field(default_factory=dict)
    """Calls that cannot run (on a dependency cycle, or waiting on one), with why."""
    repeated: frozenset[int] = frozenset()
    """Positions of calls whose id an earlier call of the batch has: they do not run."""

    @property
    def dependencies(self) -> bool:
        return any(self.needed.values())

    def needs(self, call: ToolCall) -> tuple[str, ...]:
        return self.needed.get(call.call_id, ())

    def begin(self, turn_id: str, deadline: datetime | None = None) -> pb.BeginTurnRequest:
        """BeginTurn with the plan of the calls that can run, and the turn's ``deadline``
        (None: errord's default)."""
        request = pb.BeginTurnRequest(turn_id=turn_id)
        if deadline is not None:
            request.deadline.FromDatetime(deadline)
        for position, call in enumerate(self.calls):
            if call.call_id in self.broken or position in self.repeated:
                continue
            planned = request.plan.add(
                call_id=call.call_id,
                tool=call.name,
                arguments=as_struct(call.arguments),
                depends_on=self.needs(call),
            )
            if call.optional is not None:
                planned.optional = call.optional
            if call.default is not NO_DEFAULT:
                planned.default_value.CopyFrom(_value(call.default))
        return request


def plan_of(calls: Sequence[ToolCall]) -> Plan:
    seen: set[str] = set()
    repeated = set()
    for position, call in enumerate(calls):
        if call.call_id in seen:
            repeated.add(position)
        seen.add(call.call_id)
    needed: dict[str, tuple[str, ...]] = {}
    for position, call in enumerate(calls):
        if position in repeated:
            continue
        unknown = [n for n in call.depends_on if n not in seen]
        if unknown:
            log.warning("call %s depends on calls not in the batch: %s", call.call_id, unknown)
        needed[call.call_id] = tuple(n for n in call.depends_on if n in seen and n != call.call_id)
    broken = {
        call_id: f"{call_id} waits on a dependency cycle, so it can never start"
        for call_id in _on_cycles(needed)
    }
    return Plan(tuple(calls), needed, broken, frozenset(repeated))


def _on_cycles(needed: dict[str, tuple[str, ...]]) -> set[str]:
    """The calls that can never start: on a cycle, or waiting on one (Kahn's algorithm)."""
    waiting = {call: set(needs) for call, needs in needed.items()}
    ready = [call for call, needs in waiting.items() if not needs]
    while ready:
        done = ready.pop()
        for call, needs in waiting.items():
            if done in needs:
                needs.discard(done)
                if not needs:
                    ready.append(call)
        waiting[done] = set()
    return {call for call, needs in waiting.items() if needs}


def _value(value: object) -> struct_pb2.Value:
    return as_struct({"value": value}).fields["value"]
