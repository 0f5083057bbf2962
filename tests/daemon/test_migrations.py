"""A database written by errord 0.1 (schema version 1) opens, migrates, and answers as before.

The fixture was written by that daemon itself (tests/fixtures/schema_v1_db/README.md):
the real daemon serves a copy of it here and must return the same trace, the same recorded
decisions for repeated reports, and state that follows from the migrated trace.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc
from google.protobuf import json_format

from errord.decide.model import CallKey
from errord.state.projections import Projections
from errord.state.store import Store
from tests.fakes import FakeClock
from tests.helpers import DaemonProcess, start_process, sync_operator_channel

FIXTURE = Path(__file__).parents[1] / "fixtures" / "schema_v1_db"
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text())


@pytest.fixture
def database(tmp_path: Path) -> Path:
    copy = tmp_path / "errord.db"
    shutil.copyfile(FIXTURE / "errord.db", copy)
    return copy


@pytest.fixture
def errord(database: Path) -> Iterator[DaemonProcess]:
    running = start_process("--listen", "127.0.0.1:0", "--db", str(database))
    yield running
    running.terminate()


def query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


def test_the_fixture_is_a_version_1_database(database: Path) -> None:
    assert query(database, "PRAGMA user_version") == [(1,)]
    assert query(database, "SELECT COUNT(*) FROM trace_events") == [(12,)]


def test_a_version_1_database_returns_the_same_trace_and_replays_the_same_decisions(
    errord: DaemonProcess, database: Path
) -> None:
    with sync_operator_channel(errord.address, errord.token) as channel:
        stub = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
        traces = {
            turn: json_format.MessageToDict(stub.GetTurnTrace(pb.GetTurnTraceRequest(turn_id=turn)))
            for turn in EXPECTED["traces"]
        }
        replays = [
            stub.ReportFailure(json_format.ParseDict(report, pb.ReportFailureRequest()))
            for report in EXPECTED["reports"]
        ]
        outcomes = [
            stub.ReportOutcome(json_format.ParseDict(outcome, pb.ReportOutcomeRequest()))
            for outcome in EXPECTED["outcomes"]
        ]
    assert traces == EXPECTED["traces"]
    assert all(replay.replayed for replay in [*replays, *outcomes])
    assert [json_format.MessageToDict(replay.decision) for replay in replays] == EXPECTED[
        "decisions"
    ]
    assert query(database, "PRAGMA user_version") == [(3,)]


async def test_migration_keeps_every_event_and_builds_the_state_the_trace_implies(
    database: Path,
) -> None:
    before = query(database, "SELECT sequence, kind, recorded_at, body FROM trace_events")
    state = Projections()
    async with await Store.open(database, FakeClock(), state) as store:
        folded = await store.fold_trace(state.all)
        loaded = [projection.snapshot() for projection in state.all]
    after = query(database, "SELECT sequence, kind, recorded_at, body FROM events")
    assert after == before
    assert loaded == folded
    call = state.calls.committed(CallKey("turn-a", "call_1"))
    assert call is not None
    assert call.failed_tools == {"flight_search", "flight_search_backup"}
    assert call.tools["flight_search"].failed == (1, 2, 3, 4, 5)
    assert set(state.turns.snapshot()) == {"turn-a", "turn-b", "turn-c"}
