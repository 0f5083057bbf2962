"""What a successful call pays for its guard: the executor against tenacity + pybreaker.

    python -m tests.benchmarks.recovery.overhead 127.0.0.1:50051 --calls 3000

The recovery benchmark runs it as a process of its own once the agents are done, with the
checkout's client package first on the path, and reads the JSON it prints.

The tool is a coroutine that returns at once. Call after call, in one loop, it is awaited
directly, through ``executor.run_one()`` (errord running as its own process), and through
tenacity's retry (5 attempts, exponential jitter) around a pybreaker breaker, as the
recovery benchmark's tenacity+pybreaker stack guards its tool; the order of the three turns
with each call. Each guard's overhead is its median (and 99th percentile) minus the direct
await's. The first 200 calls warm up and are not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pybreaker
from errord_client import Executor
from errord_client.tools import function_tool
from tenacity import retry_if_not_exception_type

from tests.benchmarks.recovery.stacks import tenacity_retry

WARM_UP = 200


async def noop() -> int:
    """Return at once."""
    return 1


@dataclass(frozen=True)
class Overhead:
    """Microseconds a guard adds to a successful call, over ``calls`` calls."""

    calls: int
    direct_p50_us: float
    executor_p50_us: float
    executor_p99_us: float
    tenacity_pybreaker_p50_us: float
    tenacity_pybreaker_p99_us: float

    @property
    def ratio(self) -> float:
        """The executor's median overhead over tenacity + pybreaker's."""
        return self.executor_p50_us / self.tenacity_pybreaker_p50_us


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(address: str, calls: int) -> Overhead:
    breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=60)

    @tenacity_retry(retry=retry_if_not_exception_type(pybreaker.CircuitBreakerError))
    async def guarded() -> int:
        with breaker.calling():
            return await noop()

    async with Executor([function_tool(noop)], target=address) as executor:
        call = {"id": "c1", "name": "noop", "arguments": {}}

        async def executed() -> object:
            result = await executor.run_one(call)
            assert result.ok, result
            return result

        ways: list[Callable[[], Awaitable[object]]] = [noop, executed, guarded]
        times: list[list[float]] = [[], [], []]
        for n in range(calls + WARM_UP):
            for offset in range(3):
                way = (n + offset) % 3
                started = time.perf_counter()
                await ways[way]()
                took = time.perf_counter() - started
                if n >= WARM_UP:
                    times[way].append(took)
            if n % 50 == 0:
                await asyncio.sleep(0)  # let the executor's background reports go out
    direct, executor_times, tenacity_times = times
    p50, p99 = statistics.median(direct), quantile(direct, 0.99)
    return Overhead(
        calls=calls,
        direct_p50_us=p50 * 1e6,
        executor_p50_us=(statistics.median(executor_times) - p50) * 1e6,
        executor_p99_us=(quantile(executor_times, 0.99) - p99) * 1e6,
        tenacity_pybreaker_p50_us=(statistics.median(tenacity_times) - p50) * 1e6,
        tenacity_pybreaker_p99_us=(quantile(tenacity_times, 0.99) - p99) * 1e6,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", help="errord's address")
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args(argv)
    print(json.dumps(dataclasses.asdict(asyncio.run(measure(args.address, args.calls)))))


if __name__ == "__main__":
    main()
