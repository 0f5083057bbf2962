"""The baselines of the ReportFailure benchmark: an echo server and a durable echo server.

    python -m tests.benchmarks.servers echo
    python -m tests.benchmarks.servers durable-echo --db PATH

Both serve errord.v1.ErrorHandlerService/ReportFailure on the daemon's stack (grpc.aio,
a generic handler that takes the request as bytes and decodes it, the same server
options) and answer with one canned decision of realistic size. The echo server does
nothing else: it is what gRPC and protobuf alone cost. The durable echo server first
commits one row per request to SQLite (WAL, synchronous=FULL) from a dedicated writer
thread that group-commits whatever has queued up: the least any durable answer costs.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import queue
import signal
import sqlite3
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from errord_client.v1 import errord_pb2 as pb
from google.protobuf import duration_pb2, timestamp_pb2

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ErrorHandlerService"].full_name
SERVER_OPTIONS = [("grpc.so_reuseport", 0)]
ROW_BYTES = 1700
"""The size of the row the durable echo server commits per request, like a trace row."""

Handler = Callable[[bytes, Any], Awaitable[pb.ReportFailureResponse]]


def canned_response() -> pb.ReportFailureResponse:
    """A decision like the daemon's answer to a timeout: every field a RETRY fills."""
    decision = pb.RecoveryDecision(
        decision_id="5f0c1e9a7b3d4c2e8a6f1b0d9c7e3a52",
        action=pb.RECOVERY_ACTION_RETRY,
        delay=duration_pb2.Duration(nanos=104_000_000),
        next_attempt_timeout=duration_pb2.Duration(seconds=30),
        classification=pb.Classification(
            error_class=pb.ERROR_CLASS_TRANSIENT,
            code=pb.ERROR_CODE_TIMEOUT,
            rule="default:code:TIMEOUT",
        ),
        attempts_left=4,
        reason=(
            "Transient error (TIMEOUT); retrying in 104 ms, attempt 2 of 5. "
            "flight_search has no manifest; the default policy applied."
        ),
        llm_message=(
            "Tool call failed: flight_search (TIMEOUT, transient).\n"
            "Error: Connection timeout after 30s\n"
            "The call will be retried as it is in 104 ms (attempt 2); do not change it. "
            "If it fails again errord will say whether to retry, use another tool or stop; "
            "until then, wait for the result."
        ),
        user_message="flight_search hit a temporary problem; trying again.",
        technical_message=(
            "flight_search attempt 1 failed: Connection timeout after 30s "
            "[TIMEOUT, TRANSIENT, default:code:TIMEOUT] elapsed 30.0 s"
        ),
        turn_id="turn-7c9e6679f2b84a1c",
        call_id="call_1",
        tool="flight_search",
        attempt=1,
        decided_at=timestamp_pb2.Timestamp(seconds=1_795_334_084, nanos=229_217_000),
        default_policy=True,
    )
    return pb.ReportFailureResponse(decision=decision)


def row_key(request: pb.ReportFailureRequest) -> str:
    return f"{request.turn_id}/{request.call_id}/{request.tool}/{request.attempt}"


def row_body(data: bytes, answer: str) -> str:
    """A JSON row of ROW_BYTES: the request, the answer and padding."""
    row = {"request": base64.b64encode(data).decode(), "answer": answer, "padding": ""}
    row["padding"] = "-" * max(0, ROW_BYTES - len(json.dumps(row)))
    return json.dumps(row)


@dataclass
class Pending:
    key: str
    body: str
    future: asyncio.Future[None]


class GroupCommitWriter:
    """A thread that inserts everything queued in one transaction, then answers every waiter."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self._path = path
        self._loop = loop
        self._queue: queue.SimpleQueue[Pending | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
        self._thread.start()

    async def write(self, key: str, body: str) -> None:
        """Return once the row is committed."""
        future = self._loop.create_future()
        self._queue.put(Pending(key, body, future))
        await future

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        connection = open_database(self._path)
        try:
            while batch := self._take():
                self._loop.call_soon_threadsafe(resolve, batch, self._commit(connection, batch))
        finally:
            connection.close()

    def _take(self) -> list[Pending]:
        """Wait for one row, then take every row already queued; empty once closed."""
        batch: list[Pending] = []
        item = self._queue.get()
        while item is not None:
            batch.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch
        self._queue.put(None)  # closed: the next take returns at once, empty
        return batch

    @staticmethod
    def _commit(connection: sqlite3.Connection, batch: list[Pending]) -> Exception | None:
        try:
            with connection:
                rows = [(pending.key, pending.body) for pending in batch]
                connection.executemany("INSERT INTO rows (key, body) VALUES (?, ?)", rows)
        except sqlite3.Error as error:
            return error
        return None


def resolve(batch: list[Pending], error: Exception | None) -> None:
    """Runs on the event loop: wake every request of a committed (or failed) batch."""
    for pending in batch:
        if pending.future.done():  # the caller went away
            continue
        if error is None:
            pending.future.set_result(None)
        else:
            pending.future.set_exception(error)


def open_database(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, check_same_thread=False)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    connection.execute(
        "CREATE TABLE IF NOT EXISTS rows (sequence INTEGER PRIMARY KEY, key TEXT UNIQUE, body TEXT)"
    )
    return connection


def echo_handler(response: pb.ReportFailureResponse) -> Handler:
    async def report_failure(data: bytes, context: Any) -> pb.ReportFailureResponse:
        pb.ReportFailureRequest.FromString(data)
        return response

    return report_failure


def durable_echo_handler(response: pb.ReportFailureResponse, writer: GroupCommitWriter) -> Handler:
    answer = base64.b64encode(response.SerializeToString()).decode()

    async def report_failure(data: bytes, context: Any) -> pb.ReportFailureResponse:
        request = pb.ReportFailureRequest.FromString(data)
        await writer.write(row_key(request), row_body(data, answer))
        return response

    return report_failure


async def serve(name: str, handler: Handler) -> None:
    """Serve ``handler`` as ReportFailure on a free loopback port until SIGTERM."""
    server = grpc.aio.server(options=SERVER_OPTIONS)
    method = grpc.unary_unary_rpc_method_handler(
        handler, response_serializer=pb.ReportFailureResponse.SerializeToString
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE_NAME, {"ReportFailure": method}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"{name} serving on 127.0.0.1:{port},", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(1)


async def run(kind: str, db: Path | None) -> None:
    response = canned_response()
    if kind == "echo":
        await serve(kind, echo_handler(response))
        return
    if db is None:
        raise SystemExit("durable-echo needs --db")
    writer = GroupCommitWriter(db, asyncio.get_running_loop())
    try:
        await serve(kind, durable_echo_handler(response, writer))
    finally:
        writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("echo", "durable-echo"))
    parser.add_argument("--db", type=Path, help="the durable echo server's database")
    args = parser.parse_args()
    asyncio.run(run(args.kind, args.db))


if __name__ == "__main__":
    main()
