"""Accuracy of errord's decisions on real tool failures, per family: every case of
tests/fixtures/tool_failures runs through the real Executor against errord, and the
decision is graded against the case's labels.

    python -m tests.benchmarks.tool_failures              # starts errord, prints the table
    python -m tests.benchmarks.tool_failures --misses     # and every case it got wrong
    python -m tests.benchmarks.tool_failures --local      # and the local policy beside errord

errord runs as its own process (``errord serve`` on a database in a temporary directory).
Each case is a tool of its own, named by the case's id (so that no breaker, statistic or
episode of one case reaches another), called once in a turn of its own; it raises the
case's exception on every attempt. Graded on errord's first decision, read from the trace:

- fault: its classification's fault is the label's;
- action: its action is the label's (RETURN_TO_MODEL, FAIL, RETRY, ESCALATE), decided by
  errord, and the call ended as the action says: returned to the model, failed or
  escalated after exactly one attempt, or retried (a second attempt ran);
- parameter, where the case names one: its classification's parameter is that one; where
  the case names none but errord does, it is one of the call's parameters, never a value.

``--local`` runs the cases again with nothing listening at the executor's target, so that
its local policy decides each, and compares its class and code with errord's.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from errord_client.executor import DecidedBy, Executor, ResultStatus, ToolResult
from errord_client.tools import ANY_ARGUMENTS, Tool
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import Errord, free_port, wait_for
from tests.fixtures.tool_failures import CORPUS, FAMILIES, Fault, ToolFailureCase
from tests.helpers import Reachable, operator_channel, start_process

DECISIONS = 10.0
"""Seconds the executor gives errord to answer: a loaded machine must not turn errord's
decision into the local policy's."""

ENDINGS = {
    Fault.ARGUMENTS: ResultStatus.RETURNED_TO_MODEL,
    Fault.TOOL: ResultStatus.FAILED,
    Fault.PERSON: ResultStatus.ESCALATED,
}
"""How a call whose first decision ends it ends, by the case's fault."""


def corpus_tool(case: ToolFailureCase) -> Tool:
    """The case as a tool: named by its id, its schema if it declares one, raising the
    case's exception (built anew) on every attempt."""

    def run(**_: Any) -> Any:
        raise case.exception()

    parameters = case.schema or ANY_ARGUMENTS
    return Tool(case.id, parameters, blocking=True, function=run)


def turn_of(case: ToolFailureCase, run: str) -> str:
    return f"{run}-{case.id}"


async def run_cases(
    cases: Sequence[ToolFailureCase],
    target: str,
    run: str,
    *,
    token: str | None = None,
    decision_timeout: float = DECISIONS,
) -> list[ToolResult]:
    """Each case's one call, each in a turn of its own (``run`` and the case's id), all at
    once, through one Executor at ``target``; their results, in order."""
    executor = Executor(
        [corpus_tool(case) for case in cases],
        target=target,
        token=token,
        decision_timeout=decision_timeout,
    )
    try:
        calls = [
            executor.run(
                [{"id": f"call-{case.id}", "name": case.id, "arguments": dict(case.arguments)}],
                turn_id=turn_of(case, run),
            )
            for case in cases
        ]
        return [results[0] for results in await asyncio.gather(*calls)]
    finally:
        await executor.close(patience=decision_timeout)


@dataclass(frozen=True)
class Observation:
    """What became of one case's call."""

    case: ToolFailureCase
    result: ToolResult
    decision: pb.RecoveryDecision | None
    """errord's first decision on the call, as its trace recorded it; None when it made
    none (the local policy decided)."""

    @property
    def fault(self) -> str:
        if self.decision is None:
            return "-"
        return pb.Fault.Name(self.decision.classification.fault).removeprefix("FAULT_").lower()

    @property
    def action(self) -> str:
        if self.decision is None:
            return "-"
        return pb.RecoveryAction.Name(self.decision.action).removeprefix("RECOVERY_ACTION_")

    @property
    def parameter(self) -> str:
        return "" if self.decision is None else self.decision.classification.parameter

    @property
    def error_class(self) -> str:
        """errord's class of the failure ("transient", "permanent"), "" for none."""
        if self.decision is None:
            return ""
        name = pb.ErrorClass.Name(self.decision.classification.error_class)
        return name.removeprefix("ERROR_CLASS_").lower().replace("unspecified", "")

    @property
    def code(self) -> str:
        if self.decision is None:
            return ""
        return pb.ErrorCode.Name(self.decision.classification.code).removeprefix("ERROR_CODE_")

    def describe(self) -> str:
        """What happened, in one line, for a failure message."""
        result = self.result
        rule = self.decision.classification.rule if self.decision is not None else "-"
        return (
            f"fault={self.fault} action={self.action} parameter={self.parameter!r} "
            f"code={self.code} rule={rule} | {result.status.value}, {result.attempts} "
            f"attempt(s), decided by {result.decided_by.value}"
        )


async def observe(
    daemon: Reachable, cases: Sequence[ToolFailureCase], results: Sequence[ToolResult], run: str
) -> list[Observation]:
    """Each case's result with errord's first decision on it, read from its turn's trace
    (waiting for the trace to hold it)."""
    async with operator_channel(daemon.address, daemon.token) as channel:
        errord = Errord(channel)

        async def first_decision(case: ToolFailureCase, result: ToolResult) -> Observation:
            if not result.decision_ids:
                return Observation(case, result, None)
            wanted = result.decision_ids[0]

            async def recorded() -> pb.RecoveryDecision | None:
                for event in await errord.trace(turn_of(case, run)):
                    decision = event.failure.decision
                    if event.WhichOneof("event") == "failure" and decision.decision_id == wanted:
                        return decision
                return None

            return Observation(case, result, await wait_for(recorded, f"{case.id}'s decision"))

        return list(await asyncio.gather(*map(first_decision, cases, results)))


@dataclass(frozen=True)
class Grade:
    """One case's observation against its labels."""

    observation: Observation
    fault: bool
    action: bool
    parameter: bool | None
    """None where the case names no parameter and errord named none either."""

    @property
    def case(self) -> ToolFailureCase:
        return self.observation.case

    @property
    def passed(self) -> bool:
        return self.fault and self.action and self.parameter is not False

    def describe(self) -> str:
        case = self.case
        wrong = [
            name
            for name, right in (
                ("fault", self.fault),
                ("action", self.action),
                ("parameter", self.parameter),
            )
            if right is False
        ]
        wanted = f"fault={case.fault.value} action={case.action}"
        if case.parameter is not None:
            wanted += f" parameter={case.parameter!r}"
        return (
            f"{case.id} [{case.family}] wrong {', '.join(wrong)}: wanted {wanted}; "
            f"got {self.observation.describe()}"
        )


def grade(observation: Observation) -> Grade:
    case, result = observation.case, observation.result
    decided = result.decided_by is DecidedBy.ERRORD and observation.decision is not None
    if case.fault is Fault.BACKEND:
        ended = result.attempts >= 2
    else:
        ended = result.status is ENDINGS[case.fault] and result.attempts == 1
    parameter: bool | None = None
    if case.parameter is not None:
        parameter = observation.parameter == case.parameter
    elif observation.parameter:
        parameter = observation.parameter in case.parameter_names
    return Grade(
        observation,
        fault=observation.fault == case.fault.value,
        action=decided and observation.action == case.action and ended,
        parameter=parameter,
    )


@dataclass(frozen=True)
class Score:
    """Right answers of a kind, out of how many were graded."""

    right: int
    graded: int

    @classmethod
    def of(cls, answers: Iterable[bool | None]) -> Score:
        counted = [answer for answer in answers if answer is not None]
        return cls(sum(counted), len(counted))

    def __str__(self) -> str:
        if not self.graded:
            return "-"
        return f"{self.right}/{self.graded} ({100 * self.right / self.graded:.0f} %)"


def accuracy_table(grades: Sequence[Grade]) -> str:
    """Accuracy per family (in FAMILIES' order) and over all, as a Markdown table."""
    lines = [
        "| family | cases | fault | action | parameter |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    groups = [(family, [g for g in grades if g.case.family == family]) for family in FAMILIES]
    for family, group in [*groups, ("all", list(grades))]:
        if group:
            scores = (
                Score.of(g.fault for g in group),
                Score.of(g.action for g in group),
                Score.of(g.parameter for g in group),
            )
            lines.append(f"| {family} | {len(group)} | " + " | ".join(map(str, scores)) + " |")
    return "\n".join(lines)


def misses(grades: Sequence[Grade]) -> list[str]:
    """A line for each case errord got wrong."""
    return [f"- {grade.describe()}" for grade in grades if not grade.passed]


@dataclass(frozen=True)
class Disagreement:
    """A case the local policy classifies otherwise than errord."""

    case: ToolFailureCase
    errord: tuple[str, str, str]
    """errord's (class, code, fault) of the first failure."""
    local: tuple[str, str, str]
    """The local policy's (class, code, fault)."""

    def describe(self) -> str:
        return (
            f"- {self.case.id} [{self.case.family}]: errord {'/'.join(self.errord)}, "
            f"local policy {'/'.join(self.local)}"
        )


def local_class(result: ToolResult) -> tuple[str, str, str]:
    """The (class, code, fault) the local policy gave a call: its last verdict's, which for
    a call it retried is the same failure's (the executor's code for it does not change)."""
    if result.error is None:
        return ("", "", "")
    return (result.error.error_class, result.error.code, result.error.fault.lower())


def disagreements(
    observations: Sequence[Observation], local: Sequence[ToolResult]
) -> list[Disagreement]:
    """The cases whose class, code or fault the local policy and errord give differently."""
    found = []
    for observation, result in zip(observations, local, strict=True):
        theirs = (observation.error_class, observation.code, observation.fault)
        ours = local_class(result)
        if theirs != ours:
            found.append(Disagreement(observation.case, theirs, ours))
    return found


async def against_errord(
    daemon: Reachable, cases: Sequence[ToolFailureCase], run: str = "tool-failures"
) -> list[Grade]:
    """Every case through an Executor at ``daemon``, graded."""
    results = await run_cases(cases, daemon.address, run, token=daemon.token)
    return [grade(observation) for observation in await observe(daemon, cases, results, run)]


async def without_errord(cases: Sequence[ToolFailureCase], run: str = "local") -> list[ToolResult]:
    """Every case through an Executor whose target nobody listens on: its local policy
    decides each failure."""
    return await run_cases(cases, f"127.0.0.1:{free_port()}", run, decision_timeout=0.25)


async def report(cases: Sequence[ToolFailureCase], *, show_misses: bool, local: bool) -> str:
    with tempfile.TemporaryDirectory() as directory:
        daemon = start_process("--listen", "127.0.0.1:0", "--db", str(Path(directory) / "e.db"))
        try:
            grades = await against_errord(daemon, cases)
        finally:
            daemon.terminate(signal.SIGTERM)
    parts = [f"# errord's decisions on {len(cases)} real tool failures", accuracy_table(grades)]
    if show_misses:
        parts.append("## Misses\n\n" + ("\n".join(misses(grades)) or "None."))
    if local:
        found = disagreements([g.observation for g in grades], await without_errord(cases))
        agreed = f"{len(cases) - len(found)} of {len(cases)}"
        heading = f"## The local policy\n\nIt classifies {agreed} cases as errord does."
        parts.append("\n".join([heading, *(d.describe() for d in found)]))
    return "\n\n".join(parts)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--family", choices=FAMILIES, action="append", help="only these families")
    parser.add_argument("--misses", action="store_true", help="list every case errord got wrong")
    parser.add_argument("--local", action="store_true", help="compare the local policy")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    logging.disable(logging.CRITICAL)  # the MCP servers log their tools' crashes
    cases = [case for case in CORPUS if not options.family or case.family in options.family]
    print(asyncio.run(report(cases, show_misses=options.misses, local=options.local)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
