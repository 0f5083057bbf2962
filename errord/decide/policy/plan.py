"""A turn's plan: which calls wait on which, and what a call without a result means for them.

When a call ends without a result, every call that waits on
it, directly or through others, cannot run as planned. Each gets its default
result where it has one (and then the calls waiting on it can go on), is
skipped when it is optional (or when the turn is out of time), and otherwise
is blocked: a required call that cannot run, which escalates. Calls that do not
wait on it go on. Pure: the engine hands in each waiting call's fallbacks, resolved
from the plan and the tools' manifests.
"""

from __future__ import annotations

import graphlib
from collections.abc import Sequence
from dataclasses import dataclass

from msgspec import Struct

from errord.decide.model import Action, Consequence, DefaultValue, PlannedCall


@dataclass(frozen=True, slots=True)
class PlanProblem:
    """What is wrong with a plan, at the call's position (``plan[index].field``)."""

    index: int
    field: str
    description: str


def plan_problems(plan: Sequence[PlannedCall]) -> list[PlanProblem]:
    """Every reason ``plan`` is not a plan: a call id used twice, a dependency on a call
    the plan does not have (or on itself), a cycle."""
    problems = []
    first_use: dict[str, int] = {}
    for index, call in enumerate(plan):
        if call.call_id in first_use:
            problems.append(
                PlanProblem(index, "call_id", f"repeats plan[{first_use[call.call_id]}].call_id")
            )
        first_use.setdefault(call.call_id, index)
    for index, call in enumerate(plan):
        for position, needed in enumerate(call.depends_on):
            field = f"depends_on[{position}]"
            if needed == call.call_id:
                problems.append(PlanProblem(index, field, "names the call itself"))
            elif needed not in first_use:
                problems.append(PlanProblem(index, field, f"{needed!r} is no call of the plan"))
    if not problems:
        try:
            execution_order(plan)
        except graphlib.CycleError as error:
            cycle = error.args[1]
            problems.append(
                PlanProblem(
                    first_use[cycle[0]], "depends_on", f"forms a cycle: {' -> '.join(cycle)}"
                )
            )
    return problems


def execution_order(plan: Sequence[PlannedCall]) -> list[PlannedCall]:
    """The plan's calls, each after every call it depends on; raises graphlib.CycleError."""
    by_id = {call.call_id: call for call in plan}
    sorter = graphlib.TopologicalSorter({call.call_id: call.depends_on for call in plan})
    return [by_id[call_id] for call_id in sorter.static_order()]


def waiting_on(plan: Sequence[PlannedCall], call_id: str) -> list[PlannedCall]:
    """The calls that wait on ``call_id``, directly or through others, in execution order."""
    reached = {call_id}
    waiting = []
    for call in execution_order(plan):
        if not reached.isdisjoint(call.depends_on):
            reached.add(call.call_id)
            waiting.append(call)
    return waiting


class Waiting(Struct, frozen=True, gc=False):
    """A call that waits on the decided one, with what it falls back to."""

    call: PlannedCall
    optional: bool
    default: DefaultValue | None
    pending: bool
    """False when it has ended already (its own result, its default, skipped...)."""


def cascade(
    call_id: str, waiting: Sequence[Waiting], *, out_of_time: bool
) -> tuple[Consequence, ...]:
    """What becomes of the calls ``waiting`` (in execution order) on ``call_id``, which
    ends without a result. ``out_of_time``: the turn's deadline left no time, so a
    required call is skipped with the rest rather than escalated."""
    without_result = {call_id}
    consequences = []
    for each in waiting:
        blocked_by = next((c for c in each.call.depends_on if c in without_result), None)
        if blocked_by is None or not each.pending:
            continue
        if each.default is not None:
            action = Action.USE_DEFAULT
        else:
            action = Action.SKIP if each.optional or out_of_time else Action.ESCALATE
            without_result.add(each.call.call_id)
        consequences.append(
            Consequence(
                call_id=each.call.call_id,
                action=action,
                tool=each.call.tool,
                blocked_by=blocked_by,
                default_value=each.default.value if each.default is not None else None,
            )
        )
    return tuple(consequences)
