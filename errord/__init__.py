"""errord: tool-failure recovery decisions for LLM-agent executors, over gRPC."""

import os

# grpc's C core writes lines of its own on stderr (a failed TLS handshake, at INFO) unless
# GRPC_VERBOSITY, read when grpc is first imported, says otherwise; the daemon's log and the
# commands' messages say what failed, so only the core's errors are kept by default.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

__version__ = "0.1.0"
