"""A schema checked against its draft's metaschema, the problem reported chosen the same
way in every run.

jsonschema's ``check_schema`` reports the "best match" of the metaschema's errors, the
first of equally relevant ones in the order they came; some keywords (the
``additionalProperties`` under ``$defs``) yield theirs in the order of a set, which
changes with PYTHONHASHSEED, so that ``errord check`` would name another problem from
one run to the next. Here the errors are put in a fixed order first. The message is
clipped: jsonschema quotes the offending value whole.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any, Final

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import relevance
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from errord.decide.arguments.display import PathPart, clip

PROBLEM_CHARS: Final = 200
"""Characters of jsonschema's message about an invalid schema that a problem quotes."""


def metaschema_problem(
    schema: Any, draft: type[Validator] = Draft202012Validator
) -> tuple[list[PathPart], str] | None:
    """Where in ``schema`` (a path) and why ``draft``'s metaschema refuses it; None
    when it accepts it."""
    meta_validator = validator_for(draft.META_SCHEMA, default=draft)
    checker = meta_validator(draft.META_SCHEMA, format_checker=draft.FORMAT_CHECKER)
    best = _best(checker.iter_errors(schema))
    if best is None:
        return None
    return list(best.absolute_path), clip(best.message, PROBLEM_CHARS)


def _best(errors: Iterable[ValidationError]) -> ValidationError | None:
    """jsonschema's ``best_match``, ties broken by a fixed order instead of arrival."""
    best = max(sorted(errors, key=_fixed_order), key=relevance, default=None)
    while best is not None and best.context:
        smallest = heapq.nsmallest(2, sorted(best.context, key=_fixed_order), key=relevance)
        if len(smallest) == 2 and relevance(smallest[0]) == relevance(smallest[1]):
            return best
        best = smallest[0]
    return best


def _fixed_order(error: ValidationError) -> tuple[Any, ...]:
    return (_parts(error.absolute_path), _parts(error.absolute_schema_path), error.message)


def _parts(path: Sequence[Any]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in path)
