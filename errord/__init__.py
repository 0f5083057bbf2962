"""errord: tool-failure recovery decisions for LLM-agent executors, over gRPC."""

__version__ = "0.1.0"
