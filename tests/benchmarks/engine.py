"""Micro-benchmark: the decision path without gRPC and without I/O, in µs per report.

    python -m tests.benchmarks.engine [--reports 20000]

Measures, for the report mix of tests/benchmarks/report_failure.py (a quarter
permanent errors, the rest timeouts, every report a new call of a new turn):

- decide: ``Engine.decide`` alone: classify, policy, messages, redaction, the events;
- reserve+stage+commit: what the projections add per report (reservation at submit,
  staging and applying in the writer), without SQLite;
- encode: the trace rows and state rows the writer binds;
- convert: the request decoded and validated, the response built, as the servicer does.

Single process, single thread; figures are the best of five runs.
"""

from __future__ import annotations

import argparse
import time
import timeit
from collections.abc import Callable
from datetime import UTC, datetime

from errord_client.v1 import errord_pb2 as pb

from errord.assembly import engine_for
from errord.config import Settings
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import ErrorCode, FailureReport, ToolFailure
from errord.decide.model.events import TraceEvent
from errord.state.projections import Projections
from errord.state.store.rows import event_row
from errord.wire.requests import failure_report_from_proto
from errord.wire.responses import decision_to_proto

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TIMEOUT = ToolFailure(code=ErrorCode.TIMEOUT, message="Connection timeout after 30s")
INVALID = ToolFailure(code=ErrorCode.INVALID_INPUT, message="Invalid airport code: XYZ")
ARGUMENTS = {"origin": "SFO", "destination": "XYZ", "date": "2026-12-01"}


def reports(count: int) -> list[FailureReport]:
    return [
        FailureReport(
            turn_id=f"bench-{number}",
            call_id="call_1",
            tool="flight_search",
            attempt=1,
            error=INVALID if number % 4 == 0 else TIMEOUT,
            arguments=ARGUMENTS,
        )
        for number in range(count)
    ]


def requests(count: int) -> list[bytes]:
    encoded = []
    for number in range(count):
        message = pb.ReportFailureRequest(
            turn_id=f"bench-{number}",
            call_id="call_1",
            tool="flight_search",
            attempt=1,
            error=pb.ToolError(code=pb.ERROR_CODE_TIMEOUT, message="Connection timeout after 30s"),
        )
        message.arguments.update(ARGUMENTS)
        encoded.append(message.SerializeToString())
    return encoded


def best_per_item(run: Callable[[], object], items: int) -> float:
    """µs per item of the fastest of five runs."""
    return min(timeit.repeat(run, number=1, repeat=5)) / items * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=20_000)
    count = parser.parse_args().reports
    engine = engine_for(Settings())  # the daemon's engine (errord.assembly)
    manifests = ManifestSnapshot()
    batch = reports(count)
    decided = [engine.decide(report, manifests, None, None, NOW) for report in batch]
    events = [
        TraceEvent(sequence, NOW, detail)
        for sequence, detail in enumerate((d for r in decided for d in r.events), start=1)
    ]
    raw = requests(count)

    def decide() -> None:
        for report in batch:
            engine.decide(report, manifests, None, None, NOW)

    def project() -> None:
        state = Projections()
        for start in range(0, len(events), 64):
            chunk = events[start : start + 64]
            state.reserve(chunk)
            state.commit(state.stage(chunk), chunk)

    def encode() -> None:
        state = Projections()
        for start in range(0, len(events), 64):
            chunk = events[start : start + 64]
            [event_row(event) for event in chunk]
            state.stage(chunk).rows(chunk[-1].sequence)

    def wire() -> None:
        for data, result in zip(raw, decided, strict=True):
            failure_report_from_proto(pb.ReportFailureRequest.FromString(data))
            pb.ReportFailureResponse(
                decision=decision_to_proto(result.decision)
            ).SerializeToString()

    started = time.perf_counter()
    figures = {
        "decide": best_per_item(decide, count),
        "reserve+stage+commit": best_per_item(project, count),
        "encode rows": best_per_item(encode, count),
        "convert": best_per_item(wire, count),
    }
    for name, micros in figures.items():
        print(f"{name:<22} {micros:8.1f} µs per report")
    print(f"{'total':<22} {sum(figures.values()):8.1f} µs per report")
    print(f"({count} reports, best of 5 runs, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
