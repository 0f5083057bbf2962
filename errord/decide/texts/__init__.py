"""What the model, the user and the logs read of a decision, and of what follows from it.

``messages`` composes a decision's texts from one set of fields (``wording``): the
reason and the technical message for the trace and the logs (``reasons``), the model's
guidance (``guidance``, laid out as text or JSON by ``layout``) and the user's message
(``user_words``). ``correction`` says what the model must correct in its call (and when
two of its failures are the same mistake), ``summary`` how a turn ended, in words the
user reads, and ``tool_results`` gives one result per tool call, the words of the
missing ones synthesized. Every text is escaped for where it goes by the caller: an
error message is a tool's or a model's words.
"""

from errord.decide.texts.correction import (
    argument_correction,
    closest_tools,
    corrected_parameter,
    correction_for,
    mistake_key,
    problems_of,
)
from errord.decide.texts.guidance import correction_message, llm_message
from errord.decide.texts.layout import MessageFormat, ModelMessage, render
from errord.decide.texts.messages import Messages, compose
from errord.decide.texts.reasons import consequence_reasons, reason, technical
from errord.decide.texts.summary import label, summarize, user_notice
from errord.decide.texts.tool_results import (
    Dropped,
    DropReason,
    HeldResult,
    Origin,
    Reconciled,
    Reconciliation,
    Synthesized,
    ToolCall,
    reconcile,
    synthesized,
    tells_fate,
)
from errord.decide.texts.user_words import user_message

__all__ = [
    "DropReason",
    "Dropped",
    "HeldResult",
    "MessageFormat",
    "Messages",
    "ModelMessage",
    "Origin",
    "Reconciled",
    "Reconciliation",
    "Synthesized",
    "ToolCall",
    "argument_correction",
    "closest_tools",
    "compose",
    "consequence_reasons",
    "corrected_parameter",
    "correction_for",
    "correction_message",
    "label",
    "llm_message",
    "mistake_key",
    "problems_of",
    "reason",
    "reconcile",
    "render",
    "summarize",
    "synthesized",
    "technical",
    "tells_fate",
    "user_message",
    "user_notice",
]
