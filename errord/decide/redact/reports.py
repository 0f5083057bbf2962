"""Tool inputs and failure reports masked as they may be stored, logged or answered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec import structs

from errord.decide.model import FailureReport, JSONValue, ToolFailure
from errord.decide.redact.manifest_paths import mask_path
from errord.decide.redact.text import redact_text
from errord.decide.redact.values import redact_json


def redact(arguments: Mapping[str, JSONValue], paths: Iterable[str] = ()) -> dict[str, JSONValue]:
    """``arguments`` with secret-named keys, credentials and the dotted ``paths`` masked;
    ``arguments`` itself when nothing is (and it is a dict).

    A path names nested keys (``passenger.passport``); lists are traversed, so
    ``passengers.passport`` masks the key in every element.
    """
    masked = redact_json(arguments)
    for path in paths:
        masked = mask_path(masked, path.split("."))
    return masked if isinstance(masked, dict) else dict(masked)


def redact_report(report: FailureReport, paths: Iterable[str] = ()) -> FailureReport:
    """``report`` as it may be stored: its arguments (and the manifest's ``paths`` in them),
    error message, exception type and partial result masked; ``report`` itself when
    nothing is."""
    arguments = redact(report.arguments, paths)
    error = _redact_failure(report.error)
    if arguments is report.arguments and error is report.error:
        return report
    return structs.replace(report, arguments=arguments, error=error)


def _redact_failure(error: ToolFailure) -> ToolFailure:
    message = redact_text(error.message)
    exception_type = redact_text(error.exception_type)
    partial_result = redact_json(error.partial_result)
    if (
        message is error.message
        and exception_type is error.exception_type
        and partial_result is error.partial_result
    ):
        return error
    return structs.replace(
        error, message=message, exception_type=exception_type, partial_result=partial_result
    )
