"""errord's decisions on real tool failures, through the real Executor: every case of
tests/fixtures/tool_failures (exceptions as tool code raises them, labelled with who can
act) gets the fault, the action and the parameter its label says, and the executor's
local policy, with errord stopped, classifies each as errord does.

Each test starts its own daemon (no manifests: what a new user has) and runs the whole
corpus against it, a tool and a turn per case (tests.benchmarks.tool_failures, which also
prints the table by itself). The tests assert on the whole table at the end: the failure
message is the accuracy per family and every case errord got wrong, and the table is
written to the test's directory.
"""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import pytest

from tests.benchmarks.tool_failures import (
    accuracy_table,
    against_errord,
    disagreements,
    misses,
    without_errord,
)
from tests.fixtures.tool_failures import CORPUS
from tests.helpers import start_process


@pytest.fixture(autouse=True)
def quiet_mcp_servers(caplog: pytest.LogCaptureFixture) -> None:
    """The corpus's MCP servers log the crashes it provokes in their tools; a failure's
    report is the table, not their tracebacks."""
    caplog.set_level(logging.CRITICAL, logger="mcp")


async def test_every_real_tool_failure_gets_the_fault_action_and_parameter_of_its_label(
    tmp_path: Path,
) -> None:
    """Arguments go back to the model naming the parameter (never a value), the tool's
    own failure fails after one attempt, the backend's is retried, a person's escalates:
    100 % of the labelled expectations, per family."""
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        grades = await against_errord(daemon, CORPUS)
    finally:
        daemon.terminate(signal.SIGKILL)

    table = accuracy_table(grades)
    missed = misses(grades)
    (tmp_path / "tool_failures.txt").write_text(table + "\n\n" + "\n".join(missed) + "\n")
    print(f"\n{table}")
    if missed:
        pytest.fail(
            f"{len(missed)} of {len(grades)} real tool failures decided otherwise than "
            f"labelled:\n\n{table}\n\n" + "\n".join(missed),
            pytrace=False,
        )


async def test_with_errord_stopped_the_local_policy_classifies_every_case_as_errord(
    tmp_path: Path,
) -> None:
    """The same corpus twice: through errord (its first decision's class and code, from
    the trace), then through an executor whose errord does not answer (nothing listens
    at its target), whose local policy decides. The two agree on every case."""
    daemon = start_process("--listen", "127.0.0.1:0", "--db", str(tmp_path / "errord.db"))
    try:
        grades = await against_errord(daemon, CORPUS)
    finally:
        daemon.terminate(signal.SIGKILL)
    local = await without_errord(CORPUS)

    found = disagreements([grade.observation for grade in grades], local)
    if found:
        pytest.fail(
            f"the local policy classifies {len(found)} of {len(CORPUS)} cases otherwise than "
            "errord (class/code/fault):\n" + "\n".join(d.describe() for d in found),
            pytrace=False,
        )
