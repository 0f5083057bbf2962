"""The cascade against a reference: which calls of random plans a call without a result
takes along, and how."""

from __future__ import annotations

import graphlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from errord.decide.model import Action, DefaultValue, PlannedCall
from errord.decide.policy.plan import Waiting, cascade, execution_order, plan_problems, waiting_on


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[PlannedCall], dict[str, Waiting]]:
    """A random acyclic plan (edges only go to earlier calls, then the order is shuffled),
    with each call's fallbacks and whether it is still pending."""
    size = draw(st.integers(1, 10))
    ids = [f"c{n}" for n in range(size)]
    calls = []
    for index, call_id in enumerate(ids):
        needs = draw(st.lists(st.sampled_from(ids[:index]), unique=True)) if index else []
        calls.append(PlannedCall(call_id=call_id, tool="t", depends_on=tuple(needs)))
    shuffled = draw(st.permutations(calls))
    fallbacks = {
        call.call_id: Waiting(
            call,
            optional=draw(st.booleans()),
            default=draw(st.none() | st.builds(DefaultValue, st.integers())),
            pending=draw(st.booleans()),
        )
        for call in calls
    }
    return list(shuffled), fallbacks


def reference(
    failed: str, plan: list[PlannedCall], fallbacks: dict[str, Waiting], out_of_time: bool
) -> dict[str, Action]:
    """A call is taken along when a path of dependencies leads to it from ``failed`` through
    calls that are taken along without a result; the fixed point of that rule."""
    without_result = {failed}
    taken: dict[str, Action] = {}
    changed = True
    while changed:
        changed = False
        for call in plan:
            each = fallbacks[call.call_id]
            if call.call_id in taken or call.call_id == failed or not each.pending:
                continue
            if without_result.isdisjoint(call.depends_on):
                continue
            if each.default is not None:
                taken[call.call_id] = Action.USE_DEFAULT
            else:
                skip = each.optional or out_of_time
                taken[call.call_id] = Action.SKIP if skip else Action.ESCALATE
                without_result.add(call.call_id)
            changed = True
    return taken


@settings(max_examples=500)
@given(plans(), st.data(), st.booleans())
def test_the_cascade_matches_the_reference(
    drawn: tuple[list[PlannedCall], dict[str, Waiting]], data: st.DataObject, out_of_time: bool
) -> None:
    plan, fallbacks = drawn
    assert plan_problems(plan) == []
    failed = data.draw(st.sampled_from([call.call_id for call in plan]))
    waiting = [fallbacks[call.call_id] for call in waiting_on(plan, failed)]
    consequences = cascade(failed, waiting, out_of_time=out_of_time)
    assert {c.call_id: c.action for c in consequences} == reference(
        failed, plan, fallbacks, out_of_time
    )
    position = {call.call_id: n for n, call in enumerate(execution_order(plan))}
    assert [position[c.call_id] for c in consequences] == sorted(
        position[c.call_id] for c in consequences
    )
    without_result = {failed} | {
        c.call_id for c in consequences if c.action is not Action.USE_DEFAULT
    }
    for each in consequences:
        assert each.blocked_by in without_result
        assert each.blocked_by in fallbacks[each.call_id].call.depends_on
        if each.action is Action.USE_DEFAULT:
            default = fallbacks[each.call_id].default
            assert default is not None
            assert each.default_value == default.value


def test_execution_order_refuses_a_cycle() -> None:
    plan = [
        PlannedCall(call_id="a", tool="t", depends_on=("b",)),
        PlannedCall(call_id="b", tool="t", depends_on=("a",)),
    ]
    with pytest.raises(graphlib.CycleError):
        execution_order(plan)
    [problem] = plan_problems(plan)
    assert problem.field == "depends_on"
    assert problem.description in ("forms a cycle: a -> b -> a", "forms a cycle: b -> a -> b")
