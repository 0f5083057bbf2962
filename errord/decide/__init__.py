"""Pure decision logic: no gRPC, no SQL, no YAML, no awaits (model, manifest, classify, policy,
engine, messages)."""
