"""Pure decision logic: no gRPC, no SQL, no YAML, no awaits, and nothing above it imported.

A package per stage of a decision, in the order they import each other (the pipeline's,
but for classify, whose bounds the manifest's rules read): each imports only stages
before it, and only through their packages (``from errord.decide.policy import Verdict``)::

    model, redact, arguments, classify, manifest, health, memory, policy, texts, engine

Every stage imports model; besides it, arguments imports redact, manifest classify and
arguments, health manifest, policy classify, manifest and memory, texts arguments,
classify, memory and policy, and the engine all of them.

- ``model``: the domain's values: a failure, its classification, a decision, a turn, and
  the trace's events that record them;
- ``redact``: secrets masked before a report is decided on, stored, logged or answered;
- ``arguments``: a call's arguments checked against its tool's JSON Schema, example calls;
- ``classify``: what a failure is, and whose fault (copied into the client package);
- ``manifest``: what the tools' manifests say, and the snapshot of them in force;
- ``health``: a tool's circuit breaker, its rate-limit window, whether an attempt may
  run, its alerts;
- ``memory``: episodic memory: an error's signature, how its recoveries turned out;
- ``policy``: the recovery policy over one decision context: backoff, gates, fallbacks,
  the verdict and its cascade through the turn's plan;
- ``texts``: what the model, the user and the logs read of a decision, a turn, a result;
- ``engine``: the decision put together, and what it records.
"""
