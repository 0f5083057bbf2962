"""Pure decision logic: no gRPC, no SQL, no awaits (model, classify, policy, engine, messages)."""
