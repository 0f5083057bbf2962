"""Canary: fake credentials sent to the real daemon never reach its database, its answers
or its logs, wherever in a report they travel.

Each test sends every fake secret of tests/fixtures/leaks.py (over thirty kinds) in one part
of the reports, through the client package over gRPC, and then looks for each secret in
the raw bytes of the database and its write-ahead log (while the daemon runs and after it
stopped), in every response, and in the DEBUG log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from errord_client import AsyncErrordClient, pb
from errord_client.requests import failure_request, planned_call
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.fixtures.leaks import LEAKS, Leak
from tests.helpers import START_TIMEOUT, InProcessDaemon

TURN = "turn-canary"
TOOL = "flight_search"
VISIBLE = "SFO-canary-visible"
"""A clean value sent with every report: found in each sink, it shows the search looks
in the right place."""
SINGLE_REPORTS = 5
"""Reports sent one by one (ReportFailure); the rest go in one ReportFailures."""


NEEDLES = {leak.needle: leak.kind for leak in LEAKS}


@dataclass
class Part:
    """Where in a report the secrets travel."""

    arguments: Callable[[Leak], dict[str, Any]] = lambda leak: {}
    error: Callable[[Leak], dict[str, Any]] = lambda leak: {}
    planned: Callable[[Leak], dict[str, Any]] | None = None
    """Planned-call arguments, sent with BeginTurn."""


def partial_result(leak: Leak) -> dict[str, Any]:
    return {"partial_result": {"rows": [{"text": leak.shown}, leak.shown], "count": 2}}


PARTS = {
    "arguments": Part(arguments=lambda leak: {"note": leak.shown}),
    "nested arguments": Part(
        arguments=lambda leak: {"request": {"headers": [{"X-Note": leak.shown}], "q": [leak.shown]}}
    ),
    "secret-named arguments": Part(
        arguments=lambda leak: {"api_key": leak.secret, "auth": {"password": leak.secret}}
    ),
    "error message": Part(error=lambda leak: {"message": f"upstream said: {leak.shown}"}),
    "exception type": Part(error=lambda leak: {"exception_type": leak.shown}),
    "partial result": Part(error=partial_result),
    "planned-call arguments": Part(
        planned=lambda leak: {"note": leak.shown, "nested": {"list": [leak.shown]}}
    ),
}


@dataclass
class Sinks:
    """Everything errord wrote or said, to search for secrets."""

    responses: list[Message] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)

    def read_files(self, db: Path, when: str) -> None:
        for path in (db, db.with_name(db.name + "-wal")):
            if path.exists():
                with open(path, "rb") as stored:
                    self.files[f"{path.name} {when}"] = stored.read()


def tool_error(leak: Leak, part: Part) -> pb.ToolError:
    fields = {"message": "upstream unavailable", **part.error(leak)}
    error = pb.ToolError(
        code=pb.ERROR_CODE_UNAVAILABLE,
        message=fields["message"],
        exception_type=fields.get("exception_type", "UpstreamError"),
    )
    if "partial_result" in fields:
        json_format.ParseDict(fields["partial_result"], error.partial_result)
    return error


def request(index: int, leak: Leak, part: Part) -> pb.ReportFailureRequest:
    return failure_request(
        turn_id=TURN,
        call_id=f"call_{index}",
        tool=TOOL,
        attempt=1,
        error=tool_error(leak, part),
        arguments={"origin": VISIBLE, **part.arguments(leak)},
    )


async def send(errord: AsyncErrordClient, part: Part, sinks: Sinks) -> None:
    plan = [
        planned_call(f"call_{index}", TOOL, arguments={"origin": VISIBLE, **part.planned(leak)})
        for index, leak in enumerate(LEAKS)
        if part.planned is not None
    ]
    sinks.responses.append(await errord.begin_turn(TURN, plan=plan))
    requests = [request(index, leak, part) for index, leak in enumerate(LEAKS)]
    for one in requests[:SINGLE_REPORTS]:
        sinks.responses.append(await errord.report_failure(error=one.error, **_fields(one)))
    sinks.responses.append(await errord.report_failures(requests[SINGLE_REPORTS:]))
    sinks.responses.extend(await errord.get_turn_trace(TURN))
    sinks.responses.append(await errord.end_turn(TURN))


def _fields(sent: pb.ReportFailureRequest) -> dict[str, Any]:
    return {
        "turn_id": sent.turn_id,
        "call_id": sent.call_id,
        "tool": sent.tool,
        "attempt": sent.attempt,
        "arguments": json_format.MessageToDict(sent.arguments),
    }


def leaked(haystack: bytes) -> list[str]:
    """The kinds of the secrets found in ``haystack``."""
    return sorted({kind for found, kind in NEEDLES.items() if found.encode() in haystack})


@pytest.mark.parametrize("part", PARTS.values(), ids=list(PARTS))
async def test_no_secret_reaches_the_database_the_answers_or_the_logs(
    part: Part, daemon: InProcessDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="errord")
    sinks = Sinks()
    async with AsyncErrordClient(daemon.address, token=daemon.token) as errord:
        await send(errord, part, sinks)
    sinks.read_files(daemon.settings.db, "while serving")
    daemon.stop.set()
    await asyncio.wait_for(daemon.task, START_TIMEOUT)
    sinks.read_files(daemon.settings.db, "after stopping")
    answers = b"\n".join(response.SerializeToString() for response in sinks.responses)
    logs = "\n".join([caplog.text, *(record.getMessage() for record in caplog.records)])

    assert VISIBLE.encode() in answers
    assert any(VISIBLE.encode() in stored for stored in sinks.files.values())
    assert any(record.levelno == logging.DEBUG for record in caplog.records)
    found = {
        "answers": leaked(answers),
        "logs": leaked(logs.encode()),
        **{name: leaked(stored) for name, stored in sinks.files.items()},
    }
    leaks = {sink: kinds for sink, kinds in found.items() if kinds}
    assert not leaks, "secrets leaked: " + "; ".join(
        f"{sink}: {', '.join(kinds)}" for sink, kinds in leaks.items()
    )
