"""Preparing an invocation: catalog × scene × Profile × conditions → ordered bindings with call names."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tooldeck.catalog.catalog import Catalog
from tooldeck.catalog.profile import Profile, excluded_by_family, is_pattern, matches
from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.descriptors import AvailabilityContext, ToolDescriptor, Verdict
from tooldeck.core.errors import ProfileError
from tooldeck.naming import allocate_one, builtin_call_name, rule_for, sanitize
from tooldeck.snapshot.snapshot import Binding

# Names a completion tool of a return-mode child or the meta-tools of deferred loading may take;
# reserved like builtins so no extension or MCP tool can ever shadow them.
ALWAYS_RESERVED = ("task_return", "find_tools", "run_tool")
META_IDS = frozenset(("builtin:find_tools", "builtin:run_tool"))


@dataclass
class Prepared:
    bindings: list[Binding]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    from_sources: int = 0
    """How many of `diagnostics` (the first ones) are the sources' own; the rest come from preparing."""
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """(tool id, reason) of the tools the Profile allows that a scene or an availability condition left out."""


Verdicts = dict[str, Verdict | None]


def verdicts(offered: tuple[ToolDescriptor, ...], profile: Profile, ctx: AvailabilityContext) -> Verdicts:
    """The answers of every availability condition (`is_enabled`, the tool's `requires`, the Profile's
    `requires`), asked once per invocation before the snapshot freezes. Tools without one are absent."""
    out: Verdicts = {}
    table = profile.requires
    if not table:  # the common case, on every invocation: skip the unconditional tools at C speed
        offered = tuple([d for d in offered if d.available is not None or d.requires is not None or d.parts])
    for d in offered:
        extra = profile.requires_for(str(d.id)) if table else None
        if d.is_conditional() or extra is not None:
            out[str(d.id)] = d.verdict(ctx, extra)
        if d.parts:
            out.update(d.part_verdicts(ctx))
    return out


def _narrowed(d: ToolDescriptor, answers: Verdicts, left_out: list[tuple[str, str]]) -> ToolDescriptor:
    """`d` without the parts whose conditions failed (each one noted in `left_out`)."""
    dropped: set[str] = set()
    for name, _ in d.parts:
        verdict = answers.get(f"{d.id}#{name}")
        if verdict is not None:
            dropped.add(name)
            left_out.append((f"{d.id}#{name}", verdict.reason))
    if not dropped or d.without_parts is None:
        return d
    return d.without_parts(d, frozenset(dropped))


def select(catalog_tools: dict[str, ToolDescriptor], profile: Profile,
           ctx: AvailabilityContext, diagnostics: list[Diagnostic], answers: Verdicts | None = None,
           left_out: list[tuple[str, str]] | None = None) -> list[ToolDescriptor]:
    """Walk `profile.allow` in order; globs expand in id order; deny, scene and availability filter."""
    if answers is None:
        answers = verdicts(tuple(catalog_tools.values()), profile, ctx)
    chosen: dict[str, ToolDescriptor] = {}
    dropped: dict[str, Verdict] = {}
    for entry in profile.allow:
        if is_pattern(entry):
            hits = [tid for tid in catalog_tools if matches(entry, tid)]
        elif entry in catalog_tools:
            hits = [entry]
            if excluded_by_family(profile.builtins, entry):
                diagnostics.append(Diagnostic("tool.family_excluded", f"{entry} is left out: builtins = "
                                              f"\"{profile.builtins}\" offers the other file-tool family; set "
                                              "builtins = \"both\" to offer it.", entry))
        else:
            diagnostics.append(Diagnostic("tool.not_in_catalog", f"{entry} is not available; the invocation "
                                          "will use the remaining tools.", entry))
            continue
        for tid in hits:
            if tid in chosen or tid in META_IDS or profile.is_denied(tid):
                continue
            descriptor = catalog_tools[tid]
            verdict = answers[tid] if tid in answers else (
                None if ctx.scene in descriptor.scenes else descriptor.verdict(ctx))
            if verdict is None:
                chosen[tid] = descriptor
            else:
                dropped[tid] = verdict
    for tid, verdict in dropped.items():
        if tid in chosen:
            continue
        if left_out is not None:
            left_out.append((tid, verdict.reason))
        if verdict.raised:
            diagnostics.append(Diagnostic("tool.condition_failed", f"{tid} is left out: its availability condition "
                                          f"{verdict.reason}. Fix the condition; it must return true or false.", tid))
    return list(chosen.values())


def apply_override(descriptor: ToolDescriptor, profile: Profile) -> ToolDescriptor:
    """The descriptor for this Profile: materialised by its source, then the Profile's text override."""
    if descriptor.materialize is not None:
        descriptor = descriptor.materialize(descriptor, profile)
    override = profile.descriptions.get(str(descriptor.id))
    if override is None:
        return descriptor
    known = set((descriptor.input_schema.get("properties") or {}).keys())
    unknown = sorted(set(override.properties) - known)
    if unknown:
        raise ProfileError(
            "tool.description_override_unknown_property",
            f"descriptions[{descriptor.id}] names unknown properties {unknown}; known: {sorted(known)}",
        )
    return descriptor.with_description(
        override.description if override.description is not None else descriptor.description,
        override.properties,
    )


def model_name_of(descriptor: ToolDescriptor) -> str:
    return descriptor.model_name or descriptor.id.name


def _short_names(descriptors: list[ToolDescriptor], used: set[str], protocol: str) -> dict[str, str]:
    """The descriptors that get their `short_name`: valid as it is under the protocol's rules, claimed by no
    other descriptor (neither as a short name nor as a model name, case-insensitively) and not taken (builtins,
    reserved names). Depends only on the set of descriptors, so it is deterministic. Adds the names to `used`."""
    wanted = [d for d in descriptors if d.short_name is not None and d.id.kind != "builtin"]
    if not wanted:
        return {}
    rule = rule_for(protocol)
    claims = Counter(d.short_name.casefold() for d in wanted)  # type: ignore[union-attr]
    claims.update({sanitize(model_name_of(d), protocol).casefold() for d in descriptors})
    out: dict[str, str] = {}
    for d in wanted:
        short = d.short_name or ""
        key = short.casefold()
        if rule.is_valid(short) and claims[key] == 1 and key not in used:
            used.add(key)
            out[str(d.id)] = short
    return out


def prepare(catalog: Catalog, profile: Profile, ctx: AvailabilityContext, protocol: str,
            answers: Verdicts | None = None) -> Prepared:
    diagnostics = list(catalog.diagnostics())
    from_sources = len(diagnostics)
    left_out: list[tuple[str, str]] = []
    if answers is None:
        answers = verdicts(catalog.offered(), profile, ctx)
    chosen = select(catalog.descriptors(), profile, ctx, diagnostics, answers, left_out)
    descriptors = [apply_override(_narrowed(d, answers, left_out) if d.parts else d, profile) for d in chosen]

    used: set[str] = {sanitize(n, protocol).casefold() for n in ALWAYS_RESERVED}
    fixed: dict[str, str] = {}
    for d in descriptors:
        if d.id.kind == "builtin":
            name = sanitize(builtin_call_name(d.id.name), protocol)
            fixed[str(d.id)] = name
            used.add(name.casefold())

    shorts = _short_names(descriptors, used, protocol)
    bindings: list[Binding] = []
    for d in descriptors:
        tid = str(d.id)
        name = fixed.get(tid) or shorts.get(tid) or allocate_one(model_name_of(d), used, protocol)
        budget = profile.first_match(profile.max_calls_per_tool, tid)
        bindings.append(Binding(d, name, budget))
    return Prepared(bindings, diagnostics, from_sources, left_out)
