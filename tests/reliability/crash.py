"""Crash safety: ReportFailure load, SIGKILL at random moments, and after each restart a
check that nothing acknowledged was lost.

    python -m tests.reliability.crash [--kills 50] [--decisions 10000] [--json FILE]

Each cycle starts the daemon on the same database, runs CLIENTS threads reporting
failures (and some outcomes) until the cycle's share of decisions is acknowledged, then
kills the daemon with SIGKILL at a random moment of the next fraction of a second, while
reports are in flight. After each restart it checks:

- every decision acknowledged so far is in the trace, with its decision id;
- a sample of acknowledged reports, sent again, answer ``replayed`` with the same
  decision;
- ``PRAGMA integrity_check`` is ok;
- the time from exec to health SERVING.

At the end, with the daemon stopped, every projection loaded from its state rows must
equal the fold of the whole trace (breakers included): state never drifts from the
events a kill may have cut short.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc
from errord_client import ErrordClient, pb
from grpc_health.v1 import health_pb2, health_pb2_grpc

from errord.state.projections import Projections
from errord.state.store import Store
from tests.fakes import FakeClock

CLIENTS = 8
SAMPLE = 20
"""Acknowledged reports sent again after each restart."""
START_TIMEOUT = 60.0


@dataclass
class Results:
    kills: int = 0
    decisions_acknowledged: int = 0
    decisions_checked: int = 0
    replays_checked: int = 0
    restart_seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def slowest_restart(self) -> float:
        return max(self.restart_seconds, default=0.0)


@dataclass(frozen=True)
class Acknowledged:
    turn: str
    tool: str
    decision_id: str


def start(db: Path, socket_path: Path) -> tuple[subprocess.Popen[bytes], float]:
    """The daemon on ``db``, serving; seconds from exec to health SERVING."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "errord", "serve", "--listen", f"unix:{socket_path}",
         "--db", str(db), "--log-level", "warning"],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    with grpc.insecure_channel(f"unix:{socket_path}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.perf_counter() - started < START_TIMEOUT:
            try:
                answer = health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return process, time.perf_counter() - started
            except grpc.RpcError:
                if process.poll() is not None:
                    raise RuntimeError(f"the daemon exited with {process.returncode}") from None
            time.sleep(0.005)
    process.kill()
    raise RuntimeError("the daemon did not serve in time")


def report(errord: ErrordClient, turn: str, tool: str) -> pb.ReportFailureResponse:
    return errord.report_failure(
        turn_id=turn, call_id="c", tool=tool, attempt=1,
        code=pb.ERROR_CODE_TIMEOUT, message="upstream timeout after 30s",
    )  # fmt: skip


def load(
    address: str, cycle: int, wanted: int, acknowledged: list[Acknowledged], stop: threading.Event
) -> list[threading.Thread]:
    """CLIENTS threads reporting until ``stop``; the cycle's ``wanted`` is when to kill."""

    def client(number: int) -> None:
        chooser = random.Random(cycle * 1000 + number)
        with ErrordClient(address) as errord:
            for call in range(1 << 30):
                if stop.is_set():
                    return
                turn, tool = f"crash-{cycle}-{number}-{call}", f"tool{chooser.randrange(5)}"
                try:
                    answer = report(errord, turn, tool)
                    acknowledged.append(Acknowledged(turn, tool, answer.decision.decision_id))
                    if chooser.random() < 0.3:  # some attempts recover: breakers close
                        errord.report_outcome(
                            turn_id=turn, call_id="c", tool=tool, attempt=2, success=True
                        )
                except grpc.RpcError:
                    return  # killed

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


def recorded_decisions(db: Path) -> dict[str, str]:
    """Decision id by turn, of every failure in the trace."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        rows = connection.execute("SELECT turn_id, body FROM events WHERE kind = 'failure'")
        return {turn: json.loads(bytes(body))["decision"]["decision_id"] for turn, body in rows}


def integrity(db: Path) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        return "; ".join(str(row[0]) for row in connection.execute("PRAGMA integrity_check"))


def check_restart(
    address: str, db: Path, acknowledged: list[Acknowledged], results: Results
) -> None:
    recorded = recorded_decisions(db)
    for ack in acknowledged:
        if recorded.get(ack.turn) != ack.decision_id:
            results.problems.append(f"acknowledged {ack.turn} is not in the trace as answered")
    results.decisions_checked += len(acknowledged)
    with ErrordClient(address) as errord:
        for ack in random.sample(acknowledged, min(SAMPLE, len(acknowledged))):
            again = report(errord, ack.turn, ack.tool)
            if not again.replayed or again.decision.decision_id != ack.decision_id:
                results.problems.append(f"{ack.turn} sent again got another decision")
            results.replays_checked += 1
    verdict = integrity(db)
    if verdict != "ok":
        results.problems.append(f"integrity_check: {verdict}")


async def check_projections(db: Path, problems: list[str]) -> None:
    """Every projection loaded from its rows equals the fold of the trace; each that does
    not is added to ``problems``."""
    state = Projections()
    store = await Store.open(db, FakeClock(), state)
    try:
        folded = await store.fold_trace(state.all)
        for projection, states in zip(state.all, folded, strict=True):
            if projection.snapshot() != states:
                problems.append(f"the {projection.name} rows differ from the trace")
    finally:
        await store.close()


def run(kills: int, decisions: int, directory: Path, seed: int = 0) -> Results:
    chooser = random.Random(seed)
    db, socket_path = directory / "errord.db", directory / "errord.sock"
    results = Results()
    acknowledged: list[Acknowledged] = []
    per_cycle = max(1, decisions // kills)
    for cycle in range(kills + 1):
        process, seconds = start(db, socket_path)
        results.restart_seconds.append(seconds)
        address = f"unix:{socket_path}"
        try:
            check_restart(address, db, acknowledged, results)
            if cycle == kills:
                break
            stop = threading.Event()
            before = len(acknowledged)
            threads = load(address, cycle, per_cycle, acknowledged, stop)
            while len(acknowledged) - before < per_cycle and process.poll() is None:
                time.sleep(0.005)
            time.sleep(chooser.uniform(0.0, 0.2))  # kill at a random moment of the load
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            results.kills += 1
            stop.set()
            for thread in threads:
                thread.join(30)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)
    results.decisions_acknowledged = len(acknowledged)
    asyncio.run(check_projections(db, results.problems))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--decisions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="errord-crash-") as directory:
        results = run(args.kills, args.decisions, Path(directory), args.seed)
    summary = {**asdict(results), "slowest_restart_s": results.slowest_restart}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(
        f"{results.kills} kills, {results.decisions_acknowledged} decisions acknowledged, "
        f"{results.decisions_checked} checks of acknowledged decisions, "
        f"{results.replays_checked} replays; slowest restart to SERVING "
        f"{results.slowest_restart:.2f} s; problems: {len(results.problems)}"
    )
    for problem in results.problems[:20]:
        print(f"  {problem}")
    sys.exit(1 if results.problems else 0)


if __name__ == "__main__":
    main()
