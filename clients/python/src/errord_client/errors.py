"""What a failed errord call says beyond its status code.

The clients raise ``grpc.RpcError`` (``grpc.aio.AioRpcError`` from the async client);
for an ``INVALID_ARGUMENT``, ``field_violations`` names each bad field of the request.
"""

from __future__ import annotations

import grpc

_STATUS_DETAILS_KEY = "grpc-status-details-bin"


def field_violations(error: grpc.RpcError) -> list[tuple[str, str]]:
    """Return the ``(field, description)`` pairs of an INVALID_ARGUMENT error.

    errord names each bad request field in a ``google.rpc.BadRequest`` detail
    of the status it sends in the ``grpc-status-details-bin`` trailer; an
    error without one gives ``[]``. Decoding needs the ``google.rpc`` messages
    (googleapis-common-protos, which grpcio-status brings): install the
    package's ``status`` extra, ``pip install './clients/python[status]'``.
    """
    try:
        from google.rpc import error_details_pb2, status_pb2
    except ImportError as missing:
        raise ImportError(
            "field_violations needs google.rpc: install errord-client's 'status' extra "
            "(from errord's checkout: pip install './clients/python[status]')"
        ) from missing
    status = status_pb2.Status.FromString(_status_details(error))
    violations: list[tuple[str, str]] = []
    for detail in status.details:
        bad_request = error_details_pb2.BadRequest()
        if detail.Unpack(bad_request):
            violations.extend((v.field, v.description) for v in bad_request.field_violations)
    return violations


def _status_details(error: grpc.RpcError) -> bytes:
    """The serialized google.rpc.Status an error carries, or b"" when it carries none."""
    trailing_metadata = getattr(error, "trailing_metadata", None)
    for key, value in (trailing_metadata() if trailing_metadata else None) or ():
        if key == _STATUS_DETAILS_KEY:
            return bytes(value)
    return b""
