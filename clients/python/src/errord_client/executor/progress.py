"""What the executor tells a streaming UI while a call runs: each attempt, each wait
before a retry, each switch to an alternative, and how the call ended.

    def show(progress: Progress) -> None:
        if progress.kind is ProgressKind.RETRY:
            print(progress.message)            # "Weather had a temporary problem; trying again."

    executor = Executor(tools, on_progress=show)

The callback is called on the event loop, in the context of the run (a LangGraph
adapter writes each event to the graph's custom stream from there); it must not block,
and what it raises is logged, never the call's concern.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from errord_client.executor.result import ResultStatus

log = logging.getLogger("errord_client.executor")


class ProgressKind(Enum):
    """What happened to the call."""

    ATTEMPT = "attempt"
    """An attempt of ``tool`` starts (``attempt`` counts this tool's attempts)."""
    RETRY = "retry"
    """The attempt failed; the call waits ``delay`` seconds and tries ``tool`` again."""
    ALTERNATIVE = "alternative"
    """The attempt failed; the call goes on with ``alternative``."""
    DONE = "done"
    """The call has its result (``status``)."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One step of one call, as a UI shows it."""

    kind: ProgressKind
    turn_id: str
    call_id: str
    tool: str
    """The tool of the step: the one called, or the alternative running in its place."""
    attempt: int = 0
    """The attempt that starts (ATTEMPT) or failed (RETRY, ALTERNATIVE); 0 for DONE."""
    delay: float = 0.0
    """Seconds before the next attempt (RETRY)."""
    alternative: str = ""
    """The tool that runs next (ALTERNATIVE)."""
    status: ResultStatus | None = None
    """How the call ended (DONE)."""
    message: str = ""
    """What to tell the user, in plain words: errord's (or the local policy's)
    user_message for RETRY, ALTERNATIVE and a DONE without an output of its own; "" when
    there is nothing to say."""

    def to_dict(self) -> dict[str, object]:
        """The fields as JSON values, the kind and status by their values."""
        return {
            "kind": self.kind.value,
            "turn_id": self.turn_id,
            "call_id": self.call_id,
            "tool": self.tool,
            "attempt": self.attempt,
            "delay": self.delay,
            "alternative": self.alternative,
            "status": None if self.status is None else self.status.value,
            "message": self.message,
        }


OnProgress = Callable[[Progress], None]
"""Called with each step of each call."""


def tell(on_progress: OnProgress | None, progress: Progress) -> None:
    """Hand ``progress`` to ``on_progress``, if any; what it raises is logged."""
    if on_progress is None:
        return
    try:
        on_progress(progress)
    except Exception:  # a UI's mistake must not cost the call its result
        log.exception("on_progress raised for call %s", progress.call_id)
