"""Declarative preconditions of a tool (`requires`): parsed once, evaluated once per invocation.

One evaluator for every place a tool can declare them: tool.json `"requires"`, SKILL.md front matter
`requires:` and the Profile's `requires` table. The kinds:

- `env`: environment variables that must be set (non-empty);
- `secret`: secrets that must be set: in the secrets store (tooldeck/secrets/), else the environment
  variable of the same name (docs/configuration.md, Secrets);
- `executable`: programs that must be found on PATH;
- `interactive`: `true` means only when the origin is interactive (not headless), `false` only headless;
- `provider_capability`: capabilities the invocation's provider must have (`PROVIDER_CAPABILITIES`).

Pure: the environment and PATH are read through the `Probes` the caller injects (catalog/probes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("env", "secret", "executable", "interactive", "provider_capability")

# What each provider's wire protocol can carry, as far as a precondition may ask (docs/configuration.md).
PROVIDER_CAPABILITIES: Mapping[str, frozenset[str]] = {
    "openai": frozenset(("native_tool_search",)),
    "anthropic": frozenset(("images", "native_tool_search")),
    "gemini": frozenset(("images",)),
    "bedrock": frozenset(("images",)),
    "mistral": frozenset(),
}
KNOWN_CAPABILITIES = frozenset(c for caps in PROVIDER_CAPABILITIES.values() for c in caps)


class RequiresError(ValueError):
    """A `requires` value that is not valid: `field` names the offending key (dotted)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class Requires:
    env: tuple[str, ...] = ()
    secret: tuple[str, ...] = ()
    executable: tuple[str, ...] = ()
    interactive: bool | None = None
    provider_capability: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.env or self.secret or self.executable or self.interactive is not None
                    or self.provider_capability)

    def merged(self, other: Requires | None) -> Requires:
        """Both sets of conditions (an `interactive` of `other` wins when both say one)."""
        if other is None:
            return self
        return Requires(
            self.env + other.env, self.secret + other.secret, self.executable + other.executable,
            other.interactive if other.interactive is not None else self.interactive,
            self.provider_capability + other.provider_capability,
        )


@dataclass(frozen=True, slots=True)
class Probes:
    """The I/O a precondition needs, injected: is an environment variable set, is a program on PATH."""

    env_set: Callable[[str], bool]
    on_path: Callable[[str], bool]
    secret_set: Callable[[str], bool] | None = None
    """Is a secret stored (or its environment variable set); None: the environment variable alone."""


def _names(value: Any, field: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise RequiresError(field, "must be a non-empty string or a non-empty list of strings")
    for item in items:
        if not isinstance(item, str) or not item.strip() or "\x00" in item:
            raise RequiresError(field, f"must hold non-empty strings, got {item!r}")
    return tuple(items)


def parse_requires(value: Any, field: str = "requires") -> Requires:
    """A JSON/YAML value → `Requires`, or `RequiresError` naming the field. Never any other exception."""
    if value is None:
        return Requires()
    if not isinstance(value, Mapping):
        raise RequiresError(field, f"must be an object with keys among {', '.join(KINDS)}")
    unknown = sorted(str(k) for k in value if k not in KINDS)
    if unknown:
        raise RequiresError(f"{field}.{unknown[0]}", f"unknown precondition; expected one of {', '.join(KINDS)}")
    interactive = value.get("interactive")
    if interactive is not None and not isinstance(interactive, bool):
        raise RequiresError(f"{field}.interactive", f"must be true or false, got {interactive!r}")
    caps = _names(value["provider_capability"], f"{field}.provider_capability") \
        if "provider_capability" in value else ()
    for cap in caps:
        if cap not in KNOWN_CAPABILITIES:
            raise RequiresError(f"{field}.provider_capability",
                                f"unknown capability {cap!r}; known: {', '.join(sorted(KNOWN_CAPABILITIES))}")
    return Requires(
        env=_names(value["env"], f"{field}.env") if "env" in value else (),
        secret=_names(value["secret"], f"{field}.secret") if "secret" in value else (),
        executable=_names(value["executable"], f"{field}.executable") if "executable" in value else (),
        interactive=interactive,
        provider_capability=caps,
    )


def unmet(requires: Requires, headless: bool, provider: str, probes: Probes) -> str | None:
    """The first condition that does not hold, said for a person (`None` when all hold)."""
    for name in requires.env:
        if not probes.env_set(name):
            return f"requires env {name} (not set)"
    secret_set = probes.secret_set or probes.env_set
    for name in requires.secret:
        if not secret_set(name):
            return f"requires secret {name} (not set)"
    for name in requires.executable:
        if not probes.on_path(name):
            return f"requires executable {name} (not found on PATH)"
    if requires.interactive is True and headless:
        return "requires an interactive origin (this invocation is headless)"
    if requires.interactive is False and not headless:
        return "requires a headless origin (this invocation is interactive)"
    caps = PROVIDER_CAPABILITIES.get(provider, frozenset())
    for cap in requires.provider_capability:
        if cap not in caps:
            return f"requires provider capability {cap} ({provider} has not)"
    return None
