"""The demo's flaky tools and the calls a scripted model makes of them.

Each scenario is what a model asks for, one message of tool calls after another; the
tools fail as their scripts say, and errord (with the demo's manifests) decides:

1. flight_search hangs twice past its 200 ms timeout, then answers: RETRY, RETRY.
2. hotel_search answers 429 with ``Retry-After: 1``: RETRY after the second it asked for.
3. weather's API key is refused (401): USE_ALTERNATIVE, weather_backup answers.
4. the model calls car_rental with ``days`` as text: RETURN_TO_MODEL with errord's
   correction; the model's next message has the corrected call, which succeeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from errord_client.tools import Hang, Tool, function_tool, mock_tool

Call = Mapping[str, Any]
"""A tool call as a model API returns it (here the plain ``id``/``name``/``arguments``)."""


@dataclass(frozen=True)
class Response:
    """What an HTTP client keeps of a response: its status and headers."""

    status_code: int
    headers: Mapping[str, str] = field(default_factory=dict)


class HTTPStatusError(Exception):
    """An HTTP error shaped like httpx's: the response it carries has the status and
    headers, which the executor reads (``failure_from_exception``) as httpx's own."""

    def __init__(self, message: str, *, response: Response) -> None:
        super().__init__(message)
        self.response = response


def rate_limited(retry_after: int) -> HTTPStatusError:
    """The 429 an API answers when called too often, asking for ``retry_after`` seconds."""
    return HTTPStatusError(
        "Client error '429 Too Many Requests' for url 'https://hotels.example/v1/search'",
        response=Response(429, {"Retry-After": str(retry_after)}),
    )


def unauthorized() -> HTTPStatusError:
    """The 401 an API answers when its key was revoked."""
    return HTTPStatusError(
        "Client error '401 Unauthorized' for url 'https://weather.example/v1/forecast'",
        response=Response(401),
    )


async def car_rental(city: str, days: int) -> dict[str, Any]:
    """Rent a car in a city for a number of days."""
    return {"city": city, "days": days, "car": "Renault Clio", "price": 41 * days}


def demo_tools() -> list[Tool]:
    """The demo's tools, their scripts fresh: flaky mocks and one function."""
    return [
        mock_tool(
            "flight_search",
            {"flights": [{"number": "AF83", "price": 612}]},
            script=[Hang(), Hang()],
        ),
        mock_tool("hotel_search", {"hotels": ["Hotel du Marais"]}, script=[rate_limited(1)]),
        mock_tool("weather", unauthorized()),
        mock_tool("weather_backup", {"city": "Paris", "forecast": "sunny, 24 C"}),
        function_tool(car_rental),
    ]


@dataclass(frozen=True)
class Scenario:
    """A failure errord recovers from, and the messages of tool calls the model sends."""

    title: str
    messages: Sequence[Sequence[Call]]
    """Each message's tool calls, run as one turn; a later message answers the results
    of the one before (the scripted model corrects its call)."""


def model_call(call_id: str, name: str, **arguments: Any) -> Call:
    """A tool call of the scripted model."""
    return {"id": call_id, "name": name, "arguments": arguments}


SCENARIOS = (
    Scenario(
        "A timeout that recovers: flight_search hangs twice, past its 200 ms timeout",
        [[model_call("call_1", "flight_search", origin="SFO", destination="CDG")]],
    ),
    Scenario(
        "A rate limit: hotel_search answers 429 with Retry-After: 1",
        [[model_call("call_2", "hotel_search", city="Paris")]],
    ),
    Scenario(
        "An auth failure: weather's API key is refused; its manifest names weather_backup",
        [[model_call("call_3", "weather", city="Paris")]],
    ),
    Scenario(
        "A wrong argument: the model asks car_rental for days='three'",
        [
            [model_call("call_4", "car_rental", city="Paris", days="three")],
            # The model reads errord's correction (the result's text) and calls again.
            [model_call("call_5", "car_rental", city="Paris", days=3)],
        ],
    ),
)
"""The four scenarios, in the order the demo runs them."""
