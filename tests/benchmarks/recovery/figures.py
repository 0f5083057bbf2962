"""The figures of a run, from what each stack's process wrote of each round, and the goals
errord is measured against.

Per stack and scenario, over every round's tasks:

- useful: the share of tasks that ended with the answer in the model's hands;
- p50, p99: seconds from a task falling due to its answer reaching the model (useful ones);
- requests/call: requests the tools sent (the backup's included) per task;
- while down: requests sent while the outage's backend refused connections, per round;
- before Retry-After: requests sent while a 429 any of the stack's agents had received
  still asked to wait (its Retry-After not yet over), per round;
- recovery: seconds from the fault's end to the first answer after it (outage, latency,
  overload), the mean over rounds; "never" when none came before the round was cut;
- wrong: the share of tasks that ended wrongly: a call the model could have fixed but was
  not told how (the arguments' fault, no answer), a user asked about what they cannot fix
  (an escalation of anything but a credential), or a credential's failure no person was
  asked about.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.benchmarks.recovery.overhead import Overhead, quantile
from tests.benchmarks.recovery.scenarios import SCENARIOS, Fault
from tests.benchmarks.recovery.scripted_model import Ending
from tests.benchmarks.recovery.stacks import RETRYING, STACKS

RECOVERING = ("outage", "latency", "overload")
"""The scenarios whose fault ends and may keep answers away until it has."""

Round = Mapping[str, Any]
"""What one stack's process wrote of one scenario of one round."""


@dataclass(frozen=True)
class Cell:
    """One stack's figures in one scenario."""

    stack: str
    scenario: str
    tasks: int
    useful: float
    p50: float | None
    p99: float | None
    requests_per_call: float
    while_down: float | None
    before_retry_after: float
    """Per round."""
    early_own: int
    """Of all rounds' requests before a Retry-After, those whose agent had the 429 itself."""
    early_latest: float | None
    """The longest any of them came after the first 429 that covered it, in seconds."""
    recovery: float | None
    """Seconds; None where it does not apply; inf: no answer after the fault's end."""
    wrong: float
    wrong_kinds: dict[str, int]
    endings: dict[str, int]
    notes: dict[str, int]
    break_length: float | None = None
    """errord: its breaker's break in force when the outage ended (the last opening's)."""
    first_break: float | None = None
    """errord: its breaker's first break."""


def wrong_kind(fault: Fault, ending: Ending) -> str | None:
    """Why a task's ending is wrong, or None when it is not."""
    if fault is Fault.ARGUMENTS and ending is not Ending.USEFUL:
        return "not told how to fix"
    if ending is Ending.ASKED_USER and fault is not Fault.PERSON:
        return "asked a user who cannot fix it"
    if fault is Fault.PERSON and ending in (Ending.GAVE_UP, Ending.RAISED, Ending.UNFINISHED):
        return "no person asked"
    return None


@dataclass(frozen=True)
class Early:
    """A request sent while an earlier 429's Retry-After still held."""

    after: float
    """Seconds since the first of those 429s reached one of the stack's agents."""
    own: bool
    """Its own agent had received one of them."""


def into_windows(
    sent: Sequence[Sequence[float]], limited: Sequence[Sequence[float]]
) -> list[Early]:
    """The requests of ``sent`` ([time, agent]) sent while a 429 of ``limited`` ([time,
    retry_after, agent]) asked to wait."""
    early = []
    for at, agent in sent:
        covering = [(got, by) for got, wait, by in limited if got <= at < got + wait]
        if covering:
            first = min(got for got, _ in covering)
            early.append(Early(at - first, any(by == agent for _, by in covering)))
    return early


def recovery(scenario: Round) -> float | None:
    window = scenario["window"]
    if not window or len(window) < 2:
        return None
    after = [at for at in scenario["succeeded"] if at >= window[1]]
    return min(after) - window[1] if after else float("inf")


def cell(stack: str, name: str, rounds: Sequence[Round]) -> Cell:
    tasks = [task for scenario in rounds for task in scenario["tasks"]]
    useful = sorted(t["useful_after"] for t in tasks if t["useful_after"] is not None)
    kinds: dict[str, int] = {}
    endings: dict[str, int] = {}
    for task in tasks:
        endings[task["ending"]] = endings.get(task["ending"], 0) + 1
        kind = wrong_kind(Fault(task["fault"]), Ending(task["ending"]))
        if kind is not None:
            kinds[kind] = kinds.get(kind, 0) + 1
    requests = sum(len(s["sent"]) + len(s["sent_backup"]) for s in rounds)
    down = None
    if name == "outage":
        down = statistics.mean(
            sum(1 for at, _ in s["sent"] if s["window"][0] <= at < s["window"][1]) for s in rounds
        )
    early = [e for s in rounds for e in into_windows(s["sent"], s["limited"])]
    recoveries = [r for r in (recovery(s) for s in rounds) if r is not None]
    notes: dict[str, int] = {}
    for scenario in rounds:
        for note, count in scenario["notes"].items():
            notes[note] = notes.get(note, 0) + count
    breakers = [s["breaker"] for s in rounds if s.get("breaker")]
    first_break = breakers[0]["first_break"] if breakers else None
    return Cell(
        stack=stack,
        scenario=name,
        tasks=len(tasks),
        useful=len(useful) / len(tasks),
        p50=quantile(useful, 0.5) if useful else None,
        p99=quantile(useful, 0.99) if useful else None,
        requests_per_call=requests / len(tasks),
        while_down=down,
        before_retry_after=len(early) / len(rounds),
        early_own=sum(e.own for e in early),
        early_latest=max((e.after for e in early), default=None),
        recovery=statistics.mean(recoveries) if name in RECOVERING and recoveries else None,
        wrong=sum(kinds.values()) / len(tasks),
        wrong_kinds=kinds,
        endings=endings,
        notes=notes,
        break_length=max(b["break_length"] for b in breakers) if breakers else None,
        first_break=first_break,
    )


def cells(records: Sequence[Mapping[str, Any]]) -> list[Cell]:
    """Every stack's figures in every scenario it ran, in the table's order."""
    made = []
    for scenario in SCENARIOS:
        for stack in STACKS:
            rounds = [
                record["scenarios"][scenario.name]
                for record in records
                if record["stack"] == stack and scenario.name in record["scenarios"]
            ]
            if rounds:
                made.append(cell(stack, scenario.name, rounds))
    return made


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return "never" if value == float("inf") else f"{value:.2f}"


def table(figures: Sequence[Cell]) -> str:
    """The Markdown table: a row per scenario and stack."""
    lines = [
        "| scenario | stack | useful | p50 s | p99 s | requests/call | while down "
        "| before Retry-After | recovery s | wrong |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for figure in figures:
        down = "-" if figure.while_down is None else f"{figure.while_down:.0f}"
        lines.append(
            f"| {figure.scenario} | {figure.stack} | {figure.useful:.0%} | {_seconds(figure.p50)} "
            f"| {_seconds(figure.p99)} | {figure.requests_per_call:.2f} | {down} "
            f"| {figure.before_retry_after:.0f} | {_seconds(figure.recovery)} "
            f"| {figure.wrong:.0%} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Goal:
    """One goal errord is measured against, and whether this run met it."""

    text: str
    met: bool
    figures: str


def goals(figures: Sequence[Cell], overhead: Overhead | None) -> list[Goal]:
    by = {(figure.stack, figure.scenario): figure for figure in figures}
    made = []
    short = []
    for scenario in SCENARIOS:
        errord = by.get(("errord", scenario.name))
        others = [f for f in figures if f.scenario == scenario.name and f.stack != "errord"]
        if errord is None or not others:
            continue
        best = max(others, key=lambda f: f.useful)
        if errord.useful < best.useful:
            short.append(f"{scenario.name}: {errord.useful:.0%} < {best.stack}'s {best.useful:.0%}")
    made.append(
        Goal(
            "the best useful-result share of any stack in every scenario",
            not short,
            "; ".join(short) or "met in every scenario",
        )
    )
    errord_outage = by.get(("errord", "outage"))
    retrying = [by[(s, "outage")] for s in RETRYING if (s, "outage") in by]
    if errord_outage is not None and errord_outage.while_down is not None and retrying:
        best = min(retrying, key=lambda f: f.while_down or 0.0)
        bound = (best.while_down or 0.0) / 3
        made.append(
            Goal(
                "at most a third of the best retrying stack's requests to a down backend",
                errord_outage.while_down <= bound,
                f"errord {errord_outage.while_down:.0f}, {best.stack} {best.while_down:.0f} "
                f"(a third: {bound:.1f})",
            )
        )
    errord_cells = [f for f in figures if f.stack == "errord"]
    into = sum(f.before_retry_after for f in errord_cells)
    own = sum(f.early_own for f in errord_cells)
    latest = max((f.early_latest for f in errord_cells if f.early_latest is not None), default=0.0)
    made.append(
        Goal(
            "no request before a Retry-After expires",
            into == 0,
            f"errord sent {into:.0f} a round"
            + (
                f", each at most {latest * 1000:.0f} ms after the 429 reached another agent; "
                f"{own} by an agent that had the 429 itself"
                if into
                else ""
            ),
        )
    )
    if errord_outage is not None and errord_outage.recovery is not None:
        first = errord_outage.first_break or 0.0
        bound = max(errord_outage.break_length or 0.0, first)
        made.append(
            Goal(
                "back within one breaker recovery timeout of the backend's recovery",
                errord_outage.recovery <= bound,
                f"first answer {_seconds(errord_outage.recovery)} s after the outage; the "
                f"break in force {bound:.2f} s (the first break: {first:g} s)",
            )
        )
    if overhead is not None:
        made.append(
            Goal(
                "executor's success-path overhead at most twice tenacity + pybreaker's",
                overhead.ratio <= 2.0,
                f"p50 {overhead.executor_p50_us:.0f} us against "
                f"{overhead.tenacity_pybreaker_p50_us:.0f} us: {overhead.ratio:.2f} x",
            )
        )
    return made


def local_decisions(figures: Sequence[Cell]) -> str:
    """How many of errord's agents' calls that met a failure the executor's local policy
    decided last, errord not answering within the executor's ``decision_timeout`` (250
    ms): the local policy retries without errord's breaker, windows or memory."""
    errord = [f for f in figures if f.stack == "errord"]
    local = {f.scenario: f.notes.get("decided by local", 0) for f in errord}
    failed = sum(sum(f.notes.values()) for f in errord)
    where = ", ".join(f"{name} {count}" for name, count in local.items() if count)
    return (
        f"errord's calls that met a failure, decided last by the executor's local policy "
        f"(errord answered after the 250 ms decision_timeout): {sum(local.values())} of "
        f"{failed}" + (f" ({where})" if where else "")
    )


def goal_lines(made: Sequence[Goal]) -> str:
    return "\n".join(
        f"- {'met' if goal.met else 'SHORT'}: {goal.text} ({goal.figures})" for goal in made
    )


def overhead_lines(overhead: Overhead) -> str:
    return "\n".join(
        [
            "| guard | p50 overhead µs | p99 overhead µs |",
            "| --- | ---: | ---: |",
            f"| errord executor | {overhead.executor_p50_us:.1f} "
            f"| {overhead.executor_p99_us:.1f} |",
            f"| tenacity + pybreaker | {overhead.tenacity_pybreaker_p50_us:.1f} "
            f"| {overhead.tenacity_pybreaker_p99_us:.1f} |",
        ]
    )
