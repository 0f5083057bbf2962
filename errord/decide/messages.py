"""The texts of a decision: why, for the model, for the user, for the logs.

The model's message is structured so it can self-correct (seed 003): what
failed, whether retrying can help, which parameters the tool requires with an
example call built from its JSON schema, or which tools exist when it named one
that does not. The user's message is plain and free of internals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from errord.decide.model import Action, ErrorClass, ErrorCode, JSONValue
from errord.decide.policy import DecisionContext, Verdict

ECHOED_ERROR_LENGTH = 2_000
"""Characters of the tool's error message repeated in the model's and the log's text."""
CALLER_ERRORS = frozenset({ErrorCode.INVALID_INPUT, ErrorCode.SCHEMA_VIOLATION})
PLACEHOLDERS: dict[str, JSONValue] = {
    "string": "<string>",
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "array": [],
    "object": {},
}


@dataclass(frozen=True)
class Messages:
    reason: str
    llm: str
    user: str
    technical: str


def compose(context: DecisionContext, verdict: Verdict) -> Messages:
    return Messages(
        reason(context, verdict),
        llm_message(context, verdict),
        user_message(context, verdict),
        technical(context),
    )


def reason(context: DecisionContext, verdict: Verdict) -> str:
    """The policy's reason, and whether the tool's own manifest or the default applied."""
    if context.default_policy:
        return (
            f"{verdict.reason} {context.report.tool} has no manifest; the default policy applied."
        )
    return verdict.reason


def technical(context: DecisionContext) -> str:
    report, error = context.report, context.report.error
    parts = [f"{report.tool} attempt {report.attempt} failed"]
    if error.http_status is not None:
        parts.append(f"HTTP {error.http_status}")
    if error.exception_type:
        parts.append(error.exception_type)
    if error.message:
        parts.append(clip(error.message))
    verdict = context.classification
    return f"{': '.join(parts)} [{verdict.code.value}, {verdict.error_class.value}, {verdict.rule}]"


def clip(text: str, limit: int = ECHOED_ERROR_LENGTH) -> str:
    """``text``, cut to ``limit`` characters with a marker saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def llm_message(context: DecisionContext, verdict: Verdict) -> str:
    tool, code = context.report.tool, context.classification.code
    kind = context.classification.error_class.value.lower()
    lines = [f"Tool call failed: {tool} ({code.value}, {kind})."]
    if context.report.error.message:
        lines.append(f"Error: {clip(context.report.error.message)}")
    lines.extend(guidance(context, verdict))
    return "\n".join(lines)


def guidance(context: DecisionContext, verdict: Verdict) -> list[str]:
    """What the model should do next."""
    tool, code = context.report.tool, context.classification.code
    if verdict.action is Action.RETRY:
        attempt = context.report.attempt + 1
        delay_ms = round(verdict.delay * 1000)
        return [
            f"The call will be retried as it is in {delay_ms} ms (attempt {attempt}); "
            "do not change it."
        ]
    if code is ErrorCode.TOOL_NOT_FOUND:
        known = ", ".join(sorted(context.manifests)) or "none registered with errord"
        return [
            f"There is no tool named {tool}. Available tools: {known}.",
            "Call one of the available tools instead.",
        ]
    lines = []
    if code in CALLER_ERRORS:
        lines.extend(schema_hints(context.manifest.parameters))
        lines.append(
            f"Retrying the same call will fail again. Correct the arguments and "
            f"call {tool} again, or ask the user for the missing information."
        )
    elif context.classification.error_class is ErrorClass.PERMANENT:
        lines.append(f"Retrying cannot fix this; do not call {tool} again with these arguments.")
    else:
        lines.append(f"{tool} is failing for now; do not call it again in this turn.")
    if verdict.action is Action.USE_ALTERNATIVE:
        lines.append(f"Use {verdict.alternative_tool} instead, with equivalent arguments.")
    elif code not in CALLER_ERRORS:
        lines.append("Continue without its result if you can, or tell the user it is unavailable.")
    return lines


def schema_hints(schema: Mapping[str, JSONValue] | None) -> list[str]:
    """Required parameters and an example call, from the tool's JSON schema."""
    if not schema:
        return []
    required = [name for name in schema.get("required", []) if isinstance(name, str)]
    properties = schema.get("properties", {})
    if not required or not isinstance(properties, Mapping):
        return []
    example = {name: example_value(properties.get(name, {})) for name in required}
    return [
        f"Required parameters: {', '.join(required)}",
        f"Example arguments: {json.dumps(example, sort_keys=True)}",
    ]


def example_value(schema: JSONValue) -> JSONValue:
    if not isinstance(schema, Mapping):
        return "<value>"
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    return PLACEHOLDERS.get(kind, "<value>") if isinstance(kind, str) else "<value>"


def user_message(context: DecisionContext, verdict: Verdict) -> str:
    tool, code = context.report.tool, context.classification.code
    if verdict.action is Action.RETRY:
        return f"{tool} hit a temporary problem; trying again."
    if verdict.action is Action.USE_ALTERNATIVE:
        return f"{tool} is not working right now; trying another way."
    if code is ErrorCode.AUTH:
        return f"{tool} is not authorized right now; an administrator may need to check its access."
    if code in CALLER_ERRORS:
        return (
            f"The request to {tool} could not be completed as asked; details may need correcting."
        )
    if context.classification.error_class is ErrorClass.PERMANENT:
        return f"{tool} cannot complete this request."
    return f"{tool} is unavailable right now; please try again later."
