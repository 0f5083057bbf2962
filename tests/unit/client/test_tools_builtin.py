"""Builtin tools (echo, math_eval) and internal tools (the application's named handlers)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest
from errord_client.tools import (
    ANY_ARGUMENTS,
    BUILTIN_HANDLERS,
    HandlerNotFound,
    InternalHandlers,
    InvalidArguments,
    MathError,
    ToolKind,
    builtin_tool,
    internal_tool,
)


async def test_echo_returns_its_arguments_as_a_dict() -> None:
    echo = builtin_tool("echo", "echo")
    assert echo.kind is ToolKind.BUILTIN
    assert echo.parameters == ANY_ARGUMENTS
    assert await echo.invoke({"a": 1, "b": [2]}) == {"a": 1, "b": [2]}


async def test_math_eval_returns_the_number() -> None:
    calculator = builtin_tool("calculator", "math_eval")
    assert await calculator.invoke({"expression": "2+2"}) == 4
    assert await calculator.invoke({"expression": "7 / 2"}) == 3.5


async def test_math_eval_raises_math_error_for_an_invalid_expression() -> None:
    with pytest.raises(MathError, match="names are not allowed"):
        await builtin_tool("calculator", "math_eval").invoke({"expression": "x + 1"})


def test_math_eval_requires_its_expression() -> None:
    calculator = builtin_tool("calculator", "math_eval")
    assert calculator.description
    with pytest.raises(InvalidArguments, match="missing 'expression'"):
        calculator.check({})


def test_parameters_and_description_given_replace_the_handlers_own() -> None:
    schema = {"type": "object", "properties": {"expression": {"type": "string"}}}
    calculator = builtin_tool("calc", "math_eval", parameters=schema, description="Adds.")
    assert (calculator.parameters, calculator.description) == (schema, "Adds.")


async def test_an_unknown_builtin_handler_builds_a_tool_that_raises_when_invoked() -> None:
    missing = builtin_tool("translate", "translate")
    assert "translate" not in BUILTIN_HANDLERS
    with pytest.raises(HandlerNotFound) as raised:
        await missing.invoke({"text": "bonjour"})
    assert str(raised.value) == "Builtin handler 'translate' not found"
    assert (raised.value.name, raised.value.kind) == ("translate", ToolKind.BUILTIN)


async def test_an_async_internal_handler_runs_on_the_loop() -> None:
    async def lookup(user: str) -> dict[str, object]:
        return {"user": user, "thread": threading.get_ident()}

    handlers = InternalHandlers({"profile.lookup": lookup})
    profile = internal_tool("profile", "profile.lookup", handlers)
    assert profile.kind is ToolKind.INTERNAL
    assert await profile.invoke({"user": "ada"}) == {
        "user": "ada",
        "thread": threading.get_ident(),
    }


async def test_a_plain_internal_handler_runs_in_the_handlers_threads() -> None:
    def lookup(user: str) -> str:
        return f"{user} in {threading.current_thread().name}"

    with concurrent.futures.ThreadPoolExecutor(thread_name_prefix="internal") as threads:
        handlers = InternalHandlers(threads=threads)
        handlers.register("lookup", lookup)
        result = await internal_tool("profile", "lookup", handlers).invoke({"user": "ada"})
    assert result.startswith("ada in internal")


async def test_a_handler_registered_after_the_tool_is_found_when_invoked() -> None:
    handlers = InternalHandlers()
    later = internal_tool("later", "later", handlers)
    assert "later" not in handlers

    async def answer() -> int:
        return 42

    handlers.register("later", answer)
    assert "later" in handlers
    assert await later.invoke({}) == 42


async def test_an_unknown_internal_handler_raises_when_invoked() -> None:
    missing = internal_tool("crm", "crm.search", InternalHandlers())
    with pytest.raises(HandlerNotFound) as raised:
        await missing.invoke({})
    assert str(raised.value) == "Internal handler 'crm.search' not found"
    assert raised.value.kind is ToolKind.INTERNAL


async def test_an_internal_handler_raises_what_it_raises() -> None:
    async def down() -> None:
        raise ConnectionRefusedError("crm is down")

    handlers = InternalHandlers({"crm": down})
    with pytest.raises(ConnectionRefusedError, match="crm is down"):
        await internal_tool("crm", "crm", handlers).invoke({})


def test_a_duplicate_or_uncallable_internal_handler_is_refused() -> None:
    handlers = InternalHandlers({"a": print})
    with pytest.raises(ValueError, match="'a' is registered already"):
        handlers.register("a", print)
    with pytest.raises(TypeError, match="must be callable"):
        handlers.register("b", "not a function")  # type: ignore[arg-type]  # the case tested


async def test_cancelling_an_async_internal_handler_cancels_it() -> None:
    started = asyncio.Event()

    async def wait_forever() -> None:
        started.set()
        await asyncio.Event().wait()

    handlers = InternalHandlers({"wait": wait_forever})
    task = asyncio.create_task(internal_tool("wait", "wait", handlers).invoke({}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
