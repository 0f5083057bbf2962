# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""What an API's error response body says, where it says more than its HTTP status.

Executors read the body of an HTTP error (ToolError's ``api_message``, ``api_parameter``,
``api_code``): a 400 whose body says "Bad credentials" is a credential a person must fix,
not a call the model got wrong; a 404 whose body says ``resource_missing`` for ``param``
``customer`` is the id the call gave. The API's own error code decides first (Stripe's,
OpenAI's, Anthropic's, JSON-RPC's as MCP servers send it), then the phrases of its message,
read as the message's own are (errord.decide.classify.phrases): both before the status.
"""

from __future__ import annotations

from typing import Final

from errord_client._classify.rules import PERMANENT, verdict
from errord_client.classify_model import Classification, ErrorCode

API_CODES: Final[dict[str, Classification]] = {
    code: verdict(error, f"default:api_code:{code}", error_class)
    for code, error, error_class in (
        ("resource_missing", ErrorCode.NOT_FOUND, None),
        ("resource_not_found", ErrorCode.NOT_FOUND, None),
        ("not_found", ErrorCode.NOT_FOUND, None),
        ("model_not_found", ErrorCode.NOT_FOUND, None),
        ("parameter_missing", ErrorCode.INVALID_INPUT, None),
        ("parameter_unknown", ErrorCode.INVALID_INPUT, None),
        ("invalid_request_error", ErrorCode.INVALID_INPUT, None),
        ("validation_error", ErrorCode.INVALID_INPUT, None),
        ("context_length_exceeded", ErrorCode.INVALID_INPUT, None),
        ("string_above_max_length", ErrorCode.INVALID_INPUT, None),
        ("invalid_api_key", ErrorCode.AUTH, None),
        ("api_key_expired", ErrorCode.AUTH, None),
        ("invalid_token", ErrorCode.AUTH, None),
        ("token_expired", ErrorCode.AUTH, None),
        ("authentication_error", ErrorCode.AUTH, None),
        ("permission_error", ErrorCode.AUTH, None),
        ("permission_denied", ErrorCode.AUTH, None),
        ("insufficient_permissions", ErrorCode.AUTH, None),
        ("unauthorized", ErrorCode.AUTH, None),
        ("forbidden", ErrorCode.AUTH, None),
        ("insufficient_quota", ErrorCode.RATE_LIMITED, PERMANENT),
        ("billing_hard_limit_reached", ErrorCode.RATE_LIMITED, PERMANENT),
        ("billing_not_active", ErrorCode.RATE_LIMITED, PERMANENT),
        ("rate_limit_exceeded", ErrorCode.RATE_LIMITED, None),
        ("rate_limit_error", ErrorCode.RATE_LIMITED, None),
        ("too_many_requests", ErrorCode.RATE_LIMITED, None),
        ("overloaded_error", ErrorCode.UNAVAILABLE, None),
        ("service_unavailable", ErrorCode.UNAVAILABLE, None),
        ("api_error", ErrorCode.UNKNOWN, None),
        # JSON-RPC 2.0, as MCP servers answer: invalid params (the call's); no such method
        # (the server does not do what the client asked: an unknown tool is a tool result
        # "Unknown tool", not this); the server's internal error (as a 500); a parse error
        # or an invalid request (the client's own); MCP's request timeout, its connection
        # closed, and a resource not found.
        ("-32602", ErrorCode.INVALID_INPUT, None),
        ("-32601", ErrorCode.UNSUPPORTED, None),
        ("-32603", ErrorCode.UNKNOWN, None),
        ("-32700", ErrorCode.INTERNAL, None),
        ("-32600", ErrorCode.INTERNAL, None),
        ("-32001", ErrorCode.TIMEOUT, None),
        ("-32000", ErrorCode.CONNECTION, None),
        ("-32002", ErrorCode.NOT_FOUND, None),
    )
}
"""APIs' own error codes (lowercased), each with what it says."""

PARAMETER_CODE_PREFIX: Final = "parameter_"
"""Stripe's ``parameter_invalid_integer``, ``parameter_invalid_empty``...: the call's value."""

PARAMETER_CODE = verdict(ErrorCode.INVALID_INPUT, "default:api_code:parameter")


def api_code_verdict(api_code: str) -> Classification | None:
    """What the API's own error code says, if errord knows it."""
    if not api_code:
        return None
    code = api_code.strip().lower()
    found = API_CODES.get(code)
    if found is None and code.startswith(PARAMETER_CODE_PREFIX):
        return PARAMETER_CODE
    return found
