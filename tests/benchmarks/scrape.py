"""Benchmark: a scrape of /metrics, and GetToolStats, with thousands of tools, and the
ReportFailures answered while they run.

    python -m tests.benchmarks.scrape                        # 5,000 tools, 3 scrapes
    python -m tests.benchmarks.scrape --tools 300 --scrapes 1   # a quick run
    python -m tests.benchmarks.scrape --errord-root /tmp/old-checkout   # another daemon

One daemon process (``python -m errord serve``, a real database file, Prometheus on
``--metrics-listen``). ReportFailures of 256 failures a call make TOOLS tools, each with
its statistics, its breaker and an error in episodic memory (a first failure told RETRY).
Then, with one probe client sending ReportFailure after ReportFailure (each of an existing
tool, in a turn of its own), the figures: the probe's latencies with nothing else going
on; each scrape of /metrics (its time, size, status, whether every tool is in it) and
the probe's latencies while it runs; and a GetToolStats of every tool, the same way. A
probe that takes as long as the scrape means the daemon stopped deciding meanwhile.

The daemon runs in ``--errord-root`` with PYTHONPATH set to that checkout and its client
package (tests/benchmarks/report_failure.py), so that another checkout's code is what
runs. Exits non-zero when a scrape does not answer 200 with every tool, or a probe fails.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from errord_client.operator_token import OPERATOR_TOKEN, operator_token
from errord_client.v1 import errord_pb2 as pb
from errord_client.v1 import errord_pb2_grpc

from tests.benchmarks.report_failure import ROOT, Server, errord_origin

METRICS = re.compile(r"metrics on (http://\S+/metrics)")
BATCH = 256
"""Failures per ReportFailures call: the most one call may hold."""
SCRAPE_TIMEOUT = 900.0
TOOL_LINE = re.compile(rb'^errord_tool_executions_total\{[^}]*\btool="([^"]+)"', re.MULTILINE)


def tool_name(number: int) -> str:
    return f"tool-{number:06d}"


def failure(tool: str, turn: str) -> pb.ReportFailureRequest:
    return pb.ReportFailureRequest(
        turn_id=turn,
        call_id="c",
        tool=tool,
        attempt=1,
        error=pb.ToolError(
            code=pb.ERROR_CODE_TIMEOUT,
            exception_type="TimeoutError",
            message=f"upstream of {tool} timed out after 30s",
        ),
    )


def make_tools(errors: errord_pb2_grpc.ErrorHandlerServiceStub, tools: int) -> float:
    """Report a first failure of each of ``tools`` tools; the seconds it took."""
    start = time.perf_counter()
    for first in range(0, tools, BATCH):
        batch = [
            failure(tool_name(n), f"make-{n}") for n in range(first, min(tools, first + BATCH))
        ]
        answer = errors.ReportFailures(pb.ReportFailuresRequest(failures=batch), timeout=600)
        refused = [result.refused for result in answer.results if result.HasField("refused")]
        if refused:
            raise SystemExit(f"a report making the tools was refused: {refused[0]}")
    return time.perf_counter() - start


@dataclass
class Probe:
    """ReportFailure after ReportFailure, each of an existing tool in a turn of its own."""

    errors: errord_pb2_grpc.ErrorHandlerServiceStub
    tools: int
    sent: int = 0
    latencies: list[float] = field(default_factory=list)

    def once(self) -> None:
        self.sent += 1
        request = failure(tool_name(self.sent % self.tools), f"probe-{self.sent}")
        start = time.perf_counter()
        self.errors.ReportFailure(request, timeout=SCRAPE_TIMEOUT)
        self.latencies.append(time.perf_counter() - start)

    def during(self, work: Callable[[], Any]) -> tuple[Any, float, list[float]]:
        """Run ``work`` in a thread, probing until it ends: what it returned, how long it
        took, and the probes' latencies meanwhile (the last probe's included)."""
        outcome: list[Any] = []
        took: list[float] = []

        def run() -> None:
            start = time.perf_counter()
            try:
                outcome.append(work())
            except Exception as error:
                outcome.append(error)
            took.append(time.perf_counter() - start)

        thread = threading.Thread(target=run)
        first = len(self.latencies)
        thread.start()
        while thread.is_alive():
            self.once()
        thread.join()
        return outcome[0], took[0], self.latencies[first:]


def scrape(url: str) -> tuple[int, bytes]:
    """The status and text of a scrape of ``url``; status 0 when it got no answer."""
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""
    except OSError:
        return 0, b""


def milliseconds(latencies: Sequence[float]) -> str:
    if not latencies:
        return "none sent"
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"{len(ordered)} answered, p50 {statistics.median(ordered) * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms"
    )


def run(tools: int, scrapes: int, errord_root: Path) -> int:
    """The figures, printed as they come; the exit status."""
    failed = 0
    with tempfile.TemporaryDirectory(prefix="errord-scrape-") as directory:
        db = Path(directory) / "errord.db"
        serve = ["serve", "--listen", "127.0.0.1:0", "--db", str(db)]
        server = Server(
            [sys.executable, "-m", "errord", *serve, "--metrics-listen", "127.0.0.1:0"],
            errord_root,
        )
        try:
            found = METRICS.search(server.stderr)
            if found is None:
                raise SystemExit(f"the daemon logged no metrics address:\n{server.stderr}")
            url = found[1]
            print(f"# /metrics and GetToolStats with {tools:,} tools\n")
            print(f"errord: {errord_origin(errord_root)}\n")
            with grpc.insecure_channel(server.address) as channel:
                errors = errord_pb2_grpc.ErrorHandlerServiceStub(channel)
                operators = errord_pb2_grpc.OperatorServiceStub(channel)
                made = make_tools(errors, tools)
                print(f"- {tools:,} tools made in {made:.1f} s (ReportFailures of {BATCH})")
                probe = Probe(errors, tools)
                for _ in range(200):
                    probe.once()
                print(f"- ReportFailure, nothing else going on: {milliseconds(probe.latencies)}")
                for number in range(1, scrapes + 1):
                    (status, text), took, latencies = probe.during(lambda: scrape(url))
                    present = len(set(TOOL_LINE.findall(text)))
                    print(
                        f"- scrape {number} of /metrics: HTTP {status} in {took:.2f} s, "
                        f"{len(text) / 1e6:.1f} MB, {present:,} of {tools:,} tools; "
                        f"ReportFailure meanwhile: {milliseconds(latencies)}"
                    )
                    failed += status != 200 or present != tools
                asked = pb.GetToolStatsRequest()
                # An operator call: with the token the daemon made beside its database.
                token = operator_token(db.parent / OPERATOR_TOKEN)
                bearer = (("authorization", f"Bearer {token}"),)
                answer, took, latencies = probe.during(
                    lambda: operators.GetToolStats(asked, timeout=SCRAPE_TIMEOUT, metadata=bearer)
                )
                listed = len(answer.tools) if isinstance(answer, pb.GetToolStatsResponse) else 0
                print(
                    f"- GetToolStats of every tool: {listed:,} tools in {took:.2f} s; "
                    f"ReportFailure meanwhile: {milliseconds(latencies)}"
                )
                failed += listed < tools
        finally:
            server.stop()
    return 1 if failed else 0


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=5_000, help="tools made (default 5000)")
    parser.add_argument("--scrapes", type=int, default=3, help="scrapes timed (default 3)")
    parser.add_argument(
        "--errord-root", type=Path, default=ROOT, help="the checkout whose daemon runs"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    sys.exit(run(args.tools, args.scrapes, args.errord_root.resolve()))


if __name__ == "__main__":
    main()
