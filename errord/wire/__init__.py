"""The gRPC edge: the only code that sees generated messages (server, servicer, conversion)."""
