"""What the console's tests and its benchmark share: where a daemon's console is, the
turns they have it decide, and hostile text recorded through errord's own Store."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from errord_client import ErrordClient, pb

from errord.clock import SystemClock
from errord.decide.model import (
    Action,
    BreakerState,
    Classification,
    Decision,
    ErrorClass,
    ErrorCode,
    FailureReport,
    Fault,
    JSONValue,
    Outcome,
    OutcomeReport,
    ToolFailure,
)
from errord.decide.model.events import EventDetail, FailureEvent, OutcomeEvent, TurnBegan
from errord.state.projections import Projections
from errord.state.store import Store
from tests.helpers import DaemonProcess

CONSOLE_ON = re.compile(r"console on (\S+?),")
MEGABYTE = 1 << 20
SCRIPT = "<script>alert('script')</script>"
IMAGE = '<img src=x onerror=alert("image")>'
LINK = '<a href="javascript:alert(3)">a link</a> javascript:alert(4)'
HOSTILE = {
    "turn": f"turn {SCRIPT}",
    "tool": f"tool{IMAGE}",
    "message": f"{SCRIPT} {IMAGE} {LINK}",
    "argument": f"{LINK} {SCRIPT}",
}
"""Markup where tools and models write, within what the gRPC edge takes."""


def console_url(daemon: DaemonProcess) -> str:
    """Where the daemon's log says its console serves."""
    found = [match[1] for line in daemon.lines if (match := CONSOLE_ON.search(line))]
    assert found, f"the daemon serves no console:\n{daemon.stderr}"
    return found[0]


def fetch(url: str, headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """GET ``url``: its status, headers and text, whatever the status; no redirect followed."""

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.build_opener(Stay).open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.request.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def scripted_turns(errord: ErrordClient) -> str:
    """Turns a console's pages show: ``trip-1`` retries a flight search that then succeeds
    and a hotel search twice, and ends; ``outage-1`` and ``outage-2`` fail hotel_search
    until its breaker opens. The turn whose story the test reads: ``trip-1``."""
    errord.begin_turn("trip-1")
    errord.report_failure(
        turn_id="trip-1", call_id="flights", tool="flight_search", attempt=1,
        code=pb.ERROR_CODE_TIMEOUT, message="timed out after 10 s", elapsed=10.0,
        arguments={"origin": "AMS", "destination": "JFK"},
    )  # fmt: skip
    errord.report_outcome(
        turn_id="trip-1", call_id="flights", tool="flight_search", attempt=2,
        success=True, duration=0.8,
    )  # fmt: skip
    for attempt in (1, 2):
        errord.report_failure(
            turn_id="trip-1", call_id="hotels", tool="hotel_search", attempt=attempt,
            message="503 Service Unavailable", http_status=503, elapsed=1.5,
        )  # fmt: skip
    errord.end_turn("trip-1")
    for turn, calls in (("outage-1", ("a", "b")), ("outage-2", ("a",))):
        for call in calls:
            errord.report_failure(
                turn_id=turn, call_id=call, tool="hotel_search", attempt=1,
                message="503 Service Unavailable", http_status=503, elapsed=1.5,
            )  # fmt: skip
    return "trip-1"


def decided_failure(
    turn_id: str,
    call_id: str,
    tool: str,
    at: datetime,
    *,
    message: str = "503 Service Unavailable: the upstream pool is exhausted",
    arguments: dict[str, JSONValue] | None = None,
    action: Action = Action.RETRY,
    user_id: str = "",
    words: str = "",
) -> FailureEvent:
    """A failure and a decision on it, as the engine records one (about 1.3 KB); ``words``
    goes into every text of the decision."""
    report = FailureReport(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=1,
        error=ToolFailure(
            code=ErrorCode.UNAVAILABLE,
            http_status=503,
            exception_type="HTTPStatusError",
            message=message,
        ),
        arguments=arguments if arguments is not None else {"origin": "AMS", "date": "2025-06-01"},
        elapsed=0.8,
        user_id=user_id,
    )
    decision = Decision(
        decision_id=f"{turn_id}/{call_id}",
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=1,
        action=action,
        classification=Classification(
            ErrorClass.TRANSIENT, ErrorCode.UNAVAILABLE, "default:code:UNAVAILABLE", Fault.BACKEND
        ),
        reason=f"Transient error (UNAVAILABLE); retrying in 200 ms, attempt 2 of 5.{words}",
        llm_message=(
            "Tool Execution Failed\nError Type: UNAVAILABLE (transient)\n"
            f"Message: 503 Service Unavailable\n\nThe call will be retried in 200 ms.{words}"
        ),
        user_message=f"The search hit a temporary problem; trying again.{words}",
        technical_message="HTTPStatusError: 503 Service Unavailable",
        decided_at=at,
        delay=0.2,
        attempts_left=4,
        default_policy=True,
        breaker=BreakerState(failures=1, recent=1, seen=1, failed_at=at),
    )
    return FailureEvent(report=report, decision=decision)


def succeeded(turn_id: str, call_id: str, tool: str, user_id: str = "") -> OutcomeEvent:
    report = OutcomeReport(
        turn_id=turn_id,
        call_id=call_id,
        tool=tool,
        attempt=2,
        outcome=Outcome.SUCCESS,
        duration=0.3,
        user_id=user_id,
    )
    return OutcomeEvent(report=report)


async def record(db: Path, turns: list[list[EventDetail]], at: datetime) -> None:
    """Each turn's events, recorded through errord's own Store as one unit each."""
    async with await Store.open(db, SystemClock(), Projections()) as store:
        for events in turns:
            await store.submit(events, at=at).wait()


def record_hostile_turns(db: Path) -> list[str]:
    """Two turns of hostile text a megabyte long, recorded before a daemon opens ``db``
    (past the gRPC edge's bounds, as an older errord or a damaged executor could leave
    them): in the turn id, the tool's name, the error message, an argument and every text
    of the decision. Their turn ids, the first one's events numbered 1 to 3."""
    now = datetime.now(UTC) - timedelta(seconds=5)
    megabyte_tool = SCRIPT + "T" * MEGABYTE
    first = f"megabyte {SCRIPT}"
    second = f"{IMAGE}{LINK}" + "U" * 1000
    failure = decided_failure(
        first, f"call {IMAGE}", megabyte_tool, now,
        message=f"{IMAGE} {LINK}" + "M" * MEGABYTE,
        arguments={"query": f"{LINK} {SCRIPT}" + "A" * MEGABYTE, f"key {SCRIPT}": IMAGE},
        words=f" {SCRIPT} {IMAGE} {LINK}",
    )  # fmt: skip
    turns: list[list[EventDetail]] = [
        [
            TurnBegan(turn_id=first, implicit=False),
            failure,
            succeeded(first, f"call {IMAGE}", megabyte_tool),
        ],
        [
            decided_failure(
                second,
                "c1",
                HOSTILE["tool"],
                now,
                message=HOSTILE["message"],
                action=Action.FAIL,
                words=f" {SCRIPT}",
            )
        ],
    ]
    # A thread of its own: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, record(db, turns, now)).result()
    return [first, second]
