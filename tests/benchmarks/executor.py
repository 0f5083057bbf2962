"""Benchmark: what the executor adds to a successful tool call, with errord running.

    python -m tests.benchmarks.executor                 # 5,000 calls, about 10 seconds
    python -m tests.benchmarks.executor --calls 500     # quicker

errord runs as its own process (``python -m errord serve`` on a temporary database).
In this process one Executor runs ``execute()`` of a coroutine tool that returns at
once, call after call, and the same tool is awaited directly as the baseline. The
executor's overhead is the difference of the two medians (and of the 99th
percentiles). Each call also counts the RPCs awaited on its own path, as opposed to
those its background tasks send (the success's outcome, the turn's end): the path must
have none. A warm-up of 200 calls is not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


async def noop() -> int:
    return 1


def start_daemon(db: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'clients/python/src'}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "errord", "serve", "--listen", "127.0.0.1:0", "--db", str(db)],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if "serving on " in line:
            address = line.split("serving on ", 1)[1].split(",", 1)[0].strip()
            return process, address
    raise RuntimeError("errord did not start")


RPCS = ("ReportFailure", "ReportFailures", "ReportOutcome", "AdmitCall", "BeginTurn", "EndTurn")


class PathRpcs:
    """Counts the RPCs awaited by one task (the call's own path) through a stub."""

    def __init__(self, stub: Any) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.on_path = 0
        for name in (
            "ReportFailure",
            "ReportFailures",
            "ReportOutcome",
            "AdmitCall",
            "BeginTurn",
            "EndTurn",
        ):
            setattr(stub, name, self._counted(getattr(stub, name)))

    def _counted(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if asyncio.current_task() is self.task:
                self.on_path += 1
            return method(*args, **kwargs)

        return call


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(address: str, calls: int) -> dict[str, Any]:
    from errord_client import Executor
    from errord_client.tools import function_tool

    executor = Executor([function_tool(noop)], target=address)
    await executor.start()
    link = executor._started()
    rpcs = PathRpcs(link.client.stub)
    call = {"id": "c1", "name": "noop", "arguments": {}}
    direct: list[float] = []
    guarded: list[float] = []
    for n in range(calls + 200):
        started = time.perf_counter()
        await noop()
        bare = time.perf_counter() - started
        rpcs.task = asyncio.current_task()
        started = time.perf_counter()
        result = await executor.run_one(call)
        took = time.perf_counter() - started
        rpcs.task = None
        assert result.ok, result
        if n >= 200:
            direct.append(bare)
            guarded.append(took)
        if n % 50 == 0:
            await asyncio.sleep(0)  # let the background reports go out as they would
    await executor.close()
    return {
        "calls": calls,
        "direct_p50_us": statistics.median(direct) * 1e6,
        "executor_p50_us": statistics.median(guarded) * 1e6,
        "overhead_p50_us": (statistics.median(guarded) - statistics.median(direct)) * 1e6,
        "overhead_p99_us": (quantile(guarded, 0.99) - quantile(direct, 0.99)) * 1e6,
        "rpcs_on_the_path": rpcs.on_path,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "clients/python/src"))
    with tempfile.TemporaryDirectory() as directory:
        daemon, address = start_daemon(Path(directory) / "errord.db")
        try:
            figures = asyncio.run(measure(address, args.calls))
        finally:
            daemon.terminate()
            daemon.wait(30)
    print(f"executor overhead on a successful call ({figures['calls']} calls, errord at {address})")
    print(f"  tool awaited directly  p50 {figures['direct_p50_us']:8.1f} us")
    print(f"  executor.run_one()     p50 {figures['executor_p50_us']:8.1f} us")
    print(
        f"  overhead               p50 {figures['overhead_p50_us']:8.1f} us, "
        f"p99 {figures['overhead_p99_us']:8.1f} us"
    )
    print(f"  RPCs on the call's path: {figures['rpcs_on_the_path']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
