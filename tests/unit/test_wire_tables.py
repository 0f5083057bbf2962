"""Both services register every method of the proto from their tables, each answering with
its own response type; WatchTrace alone streams, its responses serialized already."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from errord_client.v1 import errord_pb2 as pb

from errord.wire import operator, service


@dataclass(frozen=True)
class Called:
    """What grpc hands a generic handler: the full method name."""

    method: str
    invocation_metadata: tuple[Any, ...] = ()


def registered(handlers: grpc.GenericRpcHandler, name: str) -> dict[str, Any]:
    found = {}
    for method in pb.DESCRIPTOR.services_by_name[name].methods:
        found[method.name] = handlers.service(Called(f"/errord.v1.{name}/{method.name}"))
    return found


UNUSED: Any = None
"""What the servicers serve over: registering their methods uses none of it."""
SERVED = {
    "ErrorHandlerService": lambda: service.rpc_handlers(service.ErrorHandlerService(UNUSED)),
    "OperatorService": lambda: operator.rpc_handlers(
        operator.OperatorService(UNUSED, UNUSED, UNUSED)
    ),
}


@pytest.mark.parametrize("name", sorted(SERVED))
def test_every_method_of_the_proto_is_served(name: str) -> None:
    methods = registered(SERVED[name](), name)
    assert None not in methods.values(), [m for m, found in methods.items() if found is None]
    descriptors = pb.DESCRIPTOR.services_by_name[name].methods_by_name
    for method, found in methods.items():
        streams = descriptors[method].server_streaming
        assert found.response_streaming is streams
        if streams:  # serialized by the stream (WatchTrace: bytes shared by every watcher)
            assert found.response_serializer is None
        else:
            response = getattr(pb, descriptors[method].output_type.name)
            assert found.response_serializer == response.SerializeToString
