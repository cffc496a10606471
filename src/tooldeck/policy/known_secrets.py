"""The secret values tooldeck knows in this process, and the redactor each Profile gets from them.

Values are remembered where tooldeck reads them: `${VAR}` / `${secret:NAME}` expansion
(`sources/mcp/config_checks.expand`, which the MCP configs, `[models]` and `serve.token` all use),
`secrets.store.lookup` and `store_secret`, a model's API key (`agent/models.resolve_model`), the
OAuth tokens of an MCP server (`sources/mcp/tokens.py`); when a Runtime opens a home,
`scan_home` reads the `${…}` references of its `tooldeck.toml` / `mcp.json` so their values are
known before any server connects; and every value of the secrets store, whoever stored it, when a
redactor is first needed and whenever the store changes (`stored_secrets.py`).

The registry is per process (a secret read for one Runtime is a secret for all of them: redacting
it everywhere is the safe side). It pushes each change to the `RedactionPolicy` of every Profile
setting in use, so projection reads one attribute per result (`policy.redactor`, None when there
is nothing to redact) and never rebuilds anything on the per-call path.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from time import monotonic_ns as _monotonic_ns
from typing import TYPE_CHECKING

from tooldeck.policy.redact import MIN_CHARS, Redactor
from tooldeck.policy.stored_secrets import StoredSecrets

if TYPE_CHECKING:
    from tooldeck.catalog.profile import Profile

HOST_VARIABLES = frozenset({
    "HOME", "USER", "LOGNAME", "USERNAME", "PWD", "OLDPWD", "PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "LANG",
    "LANGUAGE", "TERM", "HOSTNAME", "EDITOR", "VISUAL", "PAGER", "TZ", "DISPLAY", "USERPROFILE", "APPDATA",
    "LOCALAPPDATA", "PROGRAMFILES", "SYSTEMROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "NODE_PATH",
})
"""Environment variables a config names for paths and the like, never secrets: their values (a home
directory) would blank out every path in every result. `LC_*` and `XDG_*` too."""
_REFERENCE = re.compile(r"\$\{(secret:)?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def is_host_variable(name: str) -> bool:
    return name in HOST_VARIABLES or name.startswith(("LC_", "XDG_"))


class RedactionPolicy:
    """The redactor of one Profile setting (`redact`, `redact_formats`, `redact_patterns`,
    `redact_ignore`), rebuilt by the registry when the known values change."""

    __slots__ = ("_redactor", "_stored", "formats", "ignore", "known", "patterns")

    def __init__(self, known: bool, formats: bool, patterns: tuple[str, ...], ignore: frozenset[str],
                 stored: StoredSecrets | None = None) -> None:
        self.known = known
        self.formats = formats
        self.patterns = patterns
        self.ignore = ignore
        self._redactor: Redactor | None = None
        self._stored = stored if known else None

    @property
    def redactor(self) -> Redactor | None:
        """What projection applies to every result; None when there is nothing to redact. Asking for it brings in
        the values of the secrets store when it changed (`stored_secrets.py`): a clock read, and a stat when the
        store was last looked at CHECK_EVERY_NS ago or more."""
        stored = self._stored
        if stored is not None and _monotonic_ns() >= stored.next_ns:  # the sync's own first test, inlined
            stored.sync()
        return self._redactor

    def rebuild(self, values: Mapping[str, str]) -> None:
        known = [(label, value) for value, label in values.items() if label not in self.ignore] if self.known else []
        redactor = Redactor(known, self.formats, self.patterns)
        self._redactor = redactor if redactor else None


class KnownSecrets:
    """Value → the name it is known by (its variable, secret or source), remembered once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, str] = {}
        self._policies: dict[tuple[object, ...], RedactionPolicy] = {}
        self.stored = StoredSecrets(self.remember_many)
        """The secrets store's values, brought in when a policy's redactor is first needed and on each change."""

    def remember(self, label: str, value: str | None) -> None:
        """Know `value` as a secret named `label` (values shorter than MIN_CHARS are not secrets here)."""
        self.remember_many([(label, value)])

    def remember_many(self, pairs: Iterable[tuple[str, str | None]]) -> None:
        """`remember` each (label, value), rebuilding the policies once."""
        fresh = [(label, value) for label, value in pairs
                 if value and len(value) >= MIN_CHARS and value not in self._values]
        if not fresh:
            return
        with self._lock:
            values = dict(self._values)
            for label, value in fresh:
                values.setdefault(value, label)  # type: ignore[arg-type]
            if len(values) == len(self._values):
                return
            self._values = values
            for policy in self._policies.values():
                policy.rebuild(values)

    def remember_variable(self, name: str, value: str | None) -> None:
        """A `${VAR}` of a config: known unless it is a host variable (HOME, PATH…)."""
        if not is_host_variable(name):
            self.remember(name, value)

    def labels(self) -> list[str]:
        return sorted(set(self._values.values()))

    def policy(self, profile: Profile) -> RedactionPolicy | None:
        """The redaction policy of `profile`'s setting (shared by every Profile with the same one);
        None when the Profile redacts nothing at all."""
        if not profile.redact and not profile.redact_formats and not profile.redact_patterns:
            return None
        key = (profile.redact, profile.redact_formats, tuple(profile.redact_patterns), frozenset(profile.redact_ignore))
        found = self._policies.get(key)
        if found is None:
            with self._lock:
                found = self._policies.get(key)
                if found is None:
                    found = RedactionPolicy(*key, stored=self.stored)  # type: ignore[arg-type,misc]
                    found.rebuild(self._values)
                    self._policies[key] = found
        return found


KNOWN = KnownSecrets()
"""The process's known secrets."""


def scan_home(home: Path, environ: Mapping[str, str] | None = None) -> None:
    """Remember the values of the `${VAR}` and `${secret:NAME}` references in the home's configs."""
    env = os.environ if environ is None else environ
    for name in ("tooldeck.toml", "mcp.json"):
        try:
            text = (home / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # absent, or unreadable: the config loader reports that
            continue
        if "${" not in text:
            continue
        for m in _REFERENCE.finditer(text):
            secret, var = m.group(1), m.group(2)
            if secret:
                _remember_stored(var)
            else:
                KNOWN.remember_variable(var, env.get(var))


def _remember_stored(name: str) -> None:
    from tooldeck.core.errors import TooldeckError
    from tooldeck.secrets.store import lookup

    try:
        lookup(name)  # lookup remembers what it finds
    except TooldeckError:
        # The store cannot be read, so tooldeck cannot hold this value to leak it; the expansion that
        # needs it reports the store's error where it happens.
        return
