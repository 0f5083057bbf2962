"""Secrets found and masked in tool-call reports; ``errord.decide.redact`` is the way in."""
