"""The manifests in force: one immutable snapshot, swapped whole by a reload."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import msgspec
from msgspec import Struct, structs

from errord.decide.arguments import CallValidator, Validators
from errord.decide.manifest.records import MAX_TIMEOUT, BreakerPolicy, RetryPolicy, ToolManifest
from errord.decide.model import JSONValue, ToolDeclaration

MADE_LIMIT = 10_000


class ToolPart(Struct, frozen=True, gc=False):
    """What a decision knows of a tool from the manifests (its part of the decision's
    context: errord.decide.policy.context): the same for every failure of the tool while
    one snapshot is in force."""

    manifest: ToolManifest
    """The tool's manifest, or the default one when it has none."""
    default_policy: bool
    """True when the tool has no manifest."""
    known_tools: frozenset[str] = frozenset()
    """Names of every tool with a manifest."""
    alternative_timeouts: Mapping[str, float] = msgspec.field(default_factory=dict)
    """The timeout of each of the tool's alternatives."""
    validator: CallValidator | None = None
    """The tool's argument schema, compiled; None when it has none."""


@dataclass(frozen=True)
class ToolDefaults:
    """What a tool without a manifest gets, and what a manifest does not say."""

    timeout: float = 30.0
    """Hard timeout in seconds of one attempt."""
    retry_policy: RetryPolicy = field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)


class ManifestSnapshot:
    """The loaded manifests, looked up by tool name, with the defaults for other tools.

    Its manifests never change once built: a reload builds a new snapshot and swaps
    the one reference the engine reads, so a decision sees one whole set of
    manifests. The default manifests it builds for tools without one are kept for
    reuse, up to MADE_LIMIT tools (then it starts over), since executors may name
    any number of tools.
    """

    def __init__(
        self, manifests: Iterable[ToolManifest] = (), defaults: ToolDefaults | None = None
    ) -> None:
        self.defaults = defaults or ToolDefaults()
        by_name: dict[str, ToolManifest] = {}
        for manifest in manifests:
            if manifest.name in by_name:
                raise ValueError(f"duplicate tool name {manifest.name!r}")
            by_name[manifest.name] = manifest
        self._by_name = by_name
        self.names = frozenset(by_name)
        """Every tool with a manifest."""
        self.validators = Validators.from_schemas(
            {name: manifest.parameters for name, manifest in by_name.items()},
            {name: manifest.redact for name, manifest in by_name.items()},
        )
        """Each tool's argument schema, compiled (and its example built) once for the
        snapshot's life: here, in the worker thread of a reload, not on a request."""
        self._made: dict[str, ToolManifest] = {}
        """Default manifests built for tools without one, reused (up to MADE_LIMIT)."""
        self._parts: dict[str, ToolPart] = {}
        """What decisions read of each tool, built once (up to MADE_LIMIT beyond the
        manifests)."""
        self._declared: dict[tuple[str, str, float | None, bool], ToolPart] = {}
        """What decisions read of tools their executors declared, by declaration."""

    def declared_part(
        self, tool: str, declaration: ToolDeclaration | None, *, validating: bool
    ) -> ToolPart:
        """``tool_part``, but for a tool without a manifest whose executor declared it
        (``declaration``): its schema and timeout in the default manifest; compiled into a
        validator only when ``validating`` (a failure of the call's arguments needs it),
        once per tool and schema (up to MADE_LIMIT), never failing: a schema errord cannot
        use is left out, as a timeout out of range is."""
        part = self.tool_part(tool)
        if declaration is None or not part.default_policy:
            return part
        schema = declaration.parameters
        timeout = declaration.timeout
        if timeout is not None and not 0 < timeout <= MAX_TIMEOUT:
            timeout = None
        key = (tool, _canonical(schema), timeout, validating)
        declared = self._declared.get(key)
        if declared is None:
            if len(self._declared) >= MADE_LIMIT:
                self._declared.clear()
            declared = self._declared[key] = _declared(part, schema, timeout, validating)
        return declared

    def manifest_for(self, tool: str) -> tuple[ToolManifest, bool]:
        """The tool's manifest, or a default one; and whether it is the default."""
        manifest = self._by_name.get(tool) or self._made.get(tool)
        if manifest is not None:
            return manifest, manifest.name not in self._by_name
        defaults = self.defaults
        made = ToolManifest(
            name=tool,
            timeout=defaults.timeout,
            retry_policy=defaults.retry_policy,
            breaker=defaults.breaker,
        )
        if len(self._made) >= MADE_LIMIT:  # executors may name any number of tools
            self._made.clear()
        self._made[tool] = made
        return made, True

    def tool_part(self, tool: str) -> ToolPart:
        """What a decision on a failure of ``tool`` knows of it from the manifests: the
        same for every failure of the tool while this snapshot is in force."""
        part = self._parts.get(tool)
        if part is None:
            if len(self._parts) >= len(self._by_name) + MADE_LIMIT:
                self._parts.clear()
            manifest, is_default = self.manifest_for(tool)
            part = ToolPart(
                manifest,
                is_default,
                self.names,
                {name: self.manifest_for(name)[0].timeout for name in manifest.alternatives},
                self.validators.for_tool(tool),
            )
            self._parts[tool] = part
        return part

    def breaker_policy(self, tool: str) -> BreakerPolicy:
        """The tool's breaker policy: its manifest's, else the defaults'. Builds no default
        manifest: reading every tool's breaker leaves the ones decisions reuse alone."""
        manifest = self._by_name.get(tool)
        return self.defaults.breaker if manifest is None else manifest.breaker

    def alternatives(self, tool: str) -> tuple[str, ...]:
        """The tools ``tool``'s manifest lists as alternatives; none without a manifest."""
        manifest = self._by_name.get(tool)
        return () if manifest is None else manifest.alternatives

    def __contains__(self, tool: object) -> bool:
        return tool in self._by_name

    def __iter__(self) -> Iterator[ToolManifest]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


def _canonical(schema: Mapping[str, JSONValue] | None) -> str:
    return "" if schema is None else json.dumps(schema, sort_keys=True, separators=(",", ":"))


def _declared(
    part: ToolPart,
    schema: Mapping[str, JSONValue] | None,
    timeout: float | None,
    validating: bool,
) -> ToolPart:
    """``part`` with the declared schema (compiled when ``validating`` and usable) and
    timeout."""
    validator = None
    if schema is not None and validating:
        try:
            validator = CallValidator.compile(schema)
        except ValueError:
            schema = None  # not a JSON Schema errord can use: as if none was declared
    manifest = dataclasses.replace(
        part.manifest,
        parameters=schema,
        timeout=timeout if timeout is not None else part.manifest.timeout,
    )
    return structs.replace(part, manifest=manifest, validator=validator)
