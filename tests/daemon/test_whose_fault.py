"""Whose fault a failure is, through the real Executor against errord as a process, with no
manifest: the tool's own bugs fail once (never retried, never escalated), the call's
values go back to the model naming the parameter that holds them, and a NOT_FOUND of
something the call named is corrected, not a ban: the corrected call runs.

PYTEST_DONT_REWRITE: the tools' own asserts must raise as they do outside pytest (its
rewriting would quote the call's value in the AssertionError's message)."""

from __future__ import annotations

import enum
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from errord_client.executor import DecidedBy, Executor, ResultStatus, ToolResult
from errord_client.tools import function_tool

from tests.executor_helpers import failures, recorded_trace
from tests.helpers import DaemonProcess, start_process

DECISIONS = 10.0
"""Seconds the executor waits for errord's answer: a loaded machine must not turn a
decision into the local policy's."""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    running = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    yield running
    running.terminate()


async def run_one(
    daemon: DaemonProcess, tool: Callable[..., Any], arguments: dict[str, Any], turn: str
) -> ToolResult:
    async with Executor(
        [function_tool(tool)], target=daemon.address, decision_timeout=DECISIONS
    ) as executor:
        [result] = await executor.run(
            [{"id": "c1", "name": tool.__name__, "arguments": arguments}], turn_id=turn
        )
    return result


# The tool's own code: a bug, whatever its family.


def attribute_error(q: str) -> str:
    response = None
    return response.json()  # type: ignore[attr-defined, no-any-return]


def key_error(q: str) -> str:
    return {"name": q}["price"]


def index_error(q: str) -> str:
    return [q][3]


def name_error(q: str) -> str:
    return undefined_name  # type: ignore[name-defined, no-any-return]  # noqa: F821


def assertion_error(q: str) -> str:
    assert q == "never", "the tool's own invariant"
    return q


def recursion_error(q: str) -> str:
    def deeper(n: int) -> int:
        return deeper(n + 1)

    return str(deeper(0))


def unbound_local_error(q: str) -> str:
    if q == "never":
        found = q
    return found


def zero_division_error(q: str) -> str:
    return str(len(q) / 0)


def type_error(q: str) -> str:
    return "total: " + len(q)  # type: ignore[operator, no-any-return]


@pytest.mark.parametrize(
    "bug",
    [
        attribute_error,
        key_error,
        index_error,
        name_error,
        assertion_error,
        recursion_error,
        unbound_local_error,
        zero_division_error,
        type_error,
    ],
    ids=lambda bug: bug.__name__,
)
async def test_the_tools_own_bug_fails_once_and_the_model_hears_the_tool_failed(
    daemon: DaemonProcess, bug: Callable[..., Any]
) -> None:
    turn = f"bug-{bug.__name__}"
    result = await run_one(daemon, bug, {"q": "flights"}, turn)
    assert result.status is ResultStatus.FAILED
    assert result.attempts == 1
    assert result.decided_by is DecidedBy.ERRORD
    assert result.error is not None
    assert (result.error.code, result.error.fault) == ("INTERNAL", "TOOL")
    assert "failed in its own code, not because of your call" in result.model_text
    [failure] = failures(await recorded_trace(daemon, turn))
    assert failure.failure.decision.classification.rule == "default:exception_family:bug"


# The call's values: back to the model, naming the parameter that holds them.


class Unit(enum.Enum):
    CELSIUS = "celsius"
    KELVIN = "kelvin"


def count_rows(count: str) -> str:
    return str(int(count))


def convert(value: float, unit: str) -> str:
    return f"{value} {Unit(unit).value}"


def run_query(query: str) -> str:
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE orders (id INTEGER, price REAL)")
        return str(db.execute(query).fetchall())


def set_mode(x: str) -> str:
    raise ValueError(f"bad value {x!r}")


@pytest.mark.parametrize(
    ("tool", "arguments", "parameter"),
    [
        (count_rows, {"count": "ten"}, "count"),
        (convert, {"value": 20, "unit": "kelvinn"}, "unit"),
        (run_query, {"query": "SELEC * FROM orders"}, "query"),
        (set_mode, {"x": "y"}, "x"),
    ],
    ids=["int-ten", "enum-kelvinn", "sql-SELEC", "value-quoted"],
)
async def test_a_value_the_error_quotes_goes_back_to_the_model_naming_its_parameter(
    daemon: DaemonProcess, tool: Callable[..., Any], arguments: dict[str, Any], parameter: str
) -> None:
    turn = f"value-{tool.__name__}"
    result = await run_one(daemon, tool, arguments, turn)
    assert result.status is ResultStatus.RETURNED_TO_MODEL
    assert result.error is not None
    assert (result.error.fault, result.error.parameter) == ("ARGUMENTS", parameter)
    assert f"Parameter: '{parameter}'" in result.model_text
    quoted = {str(value) for value in arguments.values()} - {parameter}
    assert not any(f"Parameter: '{value}'" in result.model_text for value in quoted)


# What the call named does not exist: corrected, and the corrected call runs.


def read_report(path: str) -> str:
    return Path(path).read_text()


def select_column(query: str) -> str:
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE orders (id INTEGER, price REAL)")
        db.execute("INSERT INTO orders VALUES (1, 9.5)")
        return json.dumps(db.execute(query).fetchall())


async def test_a_missing_thing_the_call_named_is_corrected_and_the_corrected_call_runs(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    """FileNotFoundError for the given path, and ``no such column``: RETURN_TO_MODEL naming
    the parameter, within the correction budget; a second call of the same tool in the
    same turn, corrected, is admitted and succeeds (the tool is not banned)."""
    report = tmp_path / "q3.csv"
    report.write_text("quarter,revenue\nq3,12\n")
    cases = [
        (read_report, {"path": str(tmp_path / "q3.cvs")}, {"path": str(report)}, "path"),
        (
            select_column,
            {"query": "SELECT prce FROM orders"},
            {"query": "SELECT price FROM orders"},
            "query",
        ),
    ]
    for tool, wrong, right, parameter in cases:
        turn = f"missing-{tool.__name__}"
        async with Executor(
            [function_tool(tool)], target=daemon.address, decision_timeout=DECISIONS
        ) as executor:
            [first] = await executor.run(
                [{"id": "c1", "name": tool.__name__, "arguments": wrong}], turn_id=turn
            )
            [second] = await executor.run(
                [{"id": "c2", "name": tool.__name__, "arguments": right}], turn_id=turn
            )
        assert first.status is ResultStatus.RETURNED_TO_MODEL, first
        assert first.error is not None
        assert (first.error.code, first.error.fault) == ("NOT_FOUND", "ARGUMENTS")
        assert first.error.parameter == parameter
        assert "do not call" not in first.model_text.lower()
        assert second.status is ResultStatus.SUCCEEDED, second
