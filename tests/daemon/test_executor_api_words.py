"""The API's own words reach errord: tools calling an HTTP API with httpx and requests
(answered by a mock transport, offline), whose error body names the problem, run through
the real Executor against errord as a process.

The executor sends what the body says (api_message, api_parameter, api_code) with the
failure, and errord records it in the turn's trace and decides by it: a ``param`` naming
one of the call's arguments goes back to the model naming that parameter; bad credentials
answered as a 400 escalate, where the status alone would hand the call back to the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import requests
from errord_client.executor import Executor, ResultStatus
from errord_client.v1 import errord_pb2 as pb

from tests.executor_helpers import failures, recorded_trace, sent_failures
from tests.fakes import CannedAdapter
from tests.helpers import DaemonProcess

DECISIONS = 10.0
"""Seconds each executor gives errord to answer before its local policy would decide."""

NO_SUCH_CUSTOMER = {
    "error": {
        "code": "resource_missing",
        "message": "No such customer: 'cus_123'",
        "param": "customer",
        "type": "invalid_request_error",
    }
}
BAD_CREDENTIALS = {"message": "Bad credentials", "documentation_url": "https://docs.example"}

Charge = Callable[..., dict[str, Any]]


def httpx_charge(status: int, body: dict[str, Any]) -> Charge:
    """A tool charging a customer with httpx; the API answers ``status`` with ``body``."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body)

    def charge(customer: str, amount: int) -> dict[str, Any]:
        """Charge a customer."""
        with httpx.Client(transport=httpx.MockTransport(answer)) as client:
            response = client.post(
                "https://api.payments.example/v1/charges",
                json={"customer": customer, "amount": amount},
            )
            response.raise_for_status()
            answered: dict[str, Any] = response.json()
            return answered

    return charge


def requests_charge(status: int, body: dict[str, Any]) -> Charge:
    """A tool charging a customer with requests; the API answers ``status`` with ``body``."""

    def charge(customer: str, amount: int) -> dict[str, Any]:
        """Charge a customer."""
        with requests.Session() as session:
            session.mount("https://", CannedAdapter(status, json.dumps(body).encode()))
            response = session.post(
                "https://api.payments.example/v1/charges",
                json={"customer": customer, "amount": amount},
            )
            response.raise_for_status()
            answered: dict[str, Any] = response.json()
            return answered

    return charge


LIBRARIES = [
    pytest.param(httpx_charge, "httpx.HTTPStatusError", id="httpx"),
    pytest.param(requests_charge, "requests.HTTPError", id="requests"),
]


async def run_charge(
    daemon: DaemonProcess, charge: Charge, turn_id: str
) -> tuple[Any, list[pb.ReportFailureRequest], pb.FailureEvent]:
    """One call of ``charge`` for cus_123: its result, the reports sent, the trace's failure."""
    async with Executor([charge], target=daemon.address, decision_timeout=DECISIONS) as executor:
        sent = sent_failures(executor)
        arguments = {"customer": "cus_123", "amount": 1200}
        [result] = await executor.run(
            [{"id": "c1", "name": "charge", "arguments": arguments}], turn_id=turn_id
        )
    [event] = failures(await recorded_trace(daemon, turn_id), "c1")
    return result, sent, event.failure


@pytest.mark.parametrize(("make", "exception_type"), LIBRARIES)
async def test_a_param_naming_an_argument_goes_back_to_the_model_naming_it(
    daemon_process: DaemonProcess, make: Callable[..., Charge], exception_type: str
) -> None:
    """A 404 whose body is Stripe's ``resource_missing`` with ``param: customer``: the
    executor sends the body's words, errord records them, and the call goes back to the
    model (the customer id is the model's to correct), naming ``customer``."""
    result, sent, failure = await run_charge(
        daemon_process, make(404, NO_SUCH_CUSTOMER), f"turn-param-{exception_type}"
    )
    [report] = sent
    assert (report.error.exception_type, report.error.http_status) == (exception_type, 404)
    assert (report.error.api_message, report.error.api_parameter, report.error.api_code) == (
        "No such customer: 'cus_123'",
        "customer",
        "resource_missing",
    )
    recorded = failure.error
    assert (recorded.api_message, recorded.api_parameter, recorded.api_code) == (
        "No such customer: 'cus_123'",
        "customer",
        "resource_missing",
    )
    assert result.status is ResultStatus.RETURNED_TO_MODEL
    assert failure.decision.action == pb.RECOVERY_ACTION_RETURN_TO_MODEL
    assert failure.decision.classification.fault == pb.FAULT_ARGUMENTS
    assert failure.decision.classification.parameter == "customer"
    assert "'customer'" in result.model_text


@pytest.mark.parametrize(("make", "exception_type"), LIBRARIES)
async def test_bad_credentials_answered_as_a_400_escalate(
    daemon_process: DaemonProcess, make: Callable[..., Charge], exception_type: str
) -> None:
    """A 400 whose body says the credentials are bad is for a person to fix: errord
    escalates rather than tell the model its call was invalid."""
    result, sent, failure = await run_charge(
        daemon_process, make(400, BAD_CREDENTIALS), f"turn-credentials-{exception_type}"
    )
    [report] = sent
    assert (report.error.http_status, report.error.api_message) == (400, "Bad credentials")
    assert failure.error.api_message == "Bad credentials"
    assert result.status is ResultStatus.ESCALATED
    assert failure.decision.action == pb.RECOVERY_ACTION_ESCALATE
    assert failure.decision.classification.fault == pb.FAULT_PERSON
