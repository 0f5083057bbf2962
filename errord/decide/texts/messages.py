"""The texts of a decision: why, for the model, for the user, for the logs.

Every text is a template chosen from a table, keyed on the verdict's action and
its refusal (or the failure's kind where the action alone does not say enough),
and filled from one set of fields (errord.decide.texts.wording). Each audience's words
live in a module of their own: the reason and the technical message in
errord.decide.texts.reasons, the model's guidance in errord.decide.texts.guidance, the
user's message in errord.decide.texts.user_words. ``compose`` writes all four.
"""

from __future__ import annotations

from msgspec import Struct

from errord.decide.model import Correction
from errord.decide.policy import DecisionContext, Verdict
from errord.decide.texts.guidance import correction_message, llm_message
from errord.decide.texts.layout import MessageFormat
from errord.decide.texts.reasons import consequence_reasons, reason, technical
from errord.decide.texts.user_words import user_message
from errord.decide.texts.wording import Fields

__all__ = ["Messages", "compose", "consequence_reasons", "correction_message"]


class Messages(Struct, frozen=True, gc=False):
    """A decision's four texts."""

    reason: str
    """Why, for people reading the trace."""
    llm: str
    """What the model is told, laid out as the deployment's MessageFormat."""
    user: str
    """What the user is told, in plain words."""
    technical: str
    """What failed, for the logs."""


def compose(
    context: DecisionContext,
    verdict: Verdict,
    correction: Correction | None = None,
    layout: MessageFormat = MessageFormat.TEXT,
) -> Messages:
    """The texts of ``verdict`` on ``context``; ``correction`` is what the model must
    correct, for a RETURN_TO_MODEL (or the escalation after the last one)."""
    fields = Fields(context, verdict)
    return Messages(
        reason(context, verdict, fields),
        llm_message(context, verdict, fields, correction, layout),
        user_message(context, verdict, fields),
        technical(context),
    )
