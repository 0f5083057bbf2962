"""The recovery policy (placeholder, written below)."""

from errord.decide.policy.recovery import (
    RecoveryPolicy,
    can_do_without,
    default_policy,
    with_cascade,
)

__all__ = ["RecoveryPolicy", "can_do_without", "default_policy", "with_cascade"]
