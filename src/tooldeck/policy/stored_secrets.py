"""The values of the secrets store, known for redaction before anything in this process read them.

A secret stored by another process (`tooldeck secret set`, another agent's `store_secret`, an earlier
run) is in no config this process expands, so `known_secrets` would learn it only when something
here looked it up. A tool that prints it (`env`, `cat ~/.netrc`, an MCP server's debug output) would
reach the model and the records in clear. `StoredSecrets.sync` closes that: the first time a
redaction policy is asked for its redactor, and again whenever the store changed since, every stored
value is remembered.

The check is a stat of the store's directory, `(inode, mtime)`: every write of the store (the
encrypted file of the file backend, `names.json` that lists the keychain's entries) creates a
temporary file and renames it into place, which moves the directory's mtime. Nothing is decrypted or
asked of the keychain unless the stamp moved, and the stat itself is made at most once per
`CHECK_EVERY_NS` (a clock read in between), so a busy turn pays nothing measurable; with nothing ever
stored, the check is one failing stat. A stamp taken within `RACY_NS` of a write is not trusted (a
second write in the same timestamp tick would keep it): the next check loads again until the
directory is older than that.

Values stay known once read, even when the secret is removed later (the safe side, as in
`known_secrets`). A store that cannot be read is logged once per change, as a warning naming why:
its values cannot be redacted, and the expansion or lookup that needs one reports the same error.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

RACY_NS: Final = 2_000_000_000
"""A directory changed less than this long before it was read may change again unseen within one mtime tick."""
CHECK_EVERY_NS: Final = 10_000_000
"""The store is looked at most this often (10 ms): a secret stored by another process less than that before a
result is projected can be missed; the first look of the process is always made."""
_UNSEEN: Final = ("unseen",)

log = logging.getLogger("tooldeck.secrets")

Stamp = tuple[object, ...]


def load_store() -> dict[str, str]:
    """Every stored secret of the store `lookup` uses (the keychain or the file). Raises TooldeckError."""
    from tooldeck.secrets.store import SecretStore

    store = SecretStore()
    if store.backend == "file":
        return store.box.read_all()
    values: dict[str, str] = {}
    for name in store.names():
        value = store.get(name)
        if value:
            values[name] = value
    return values


def _directory() -> str:
    from tooldeck.secrets.filebox import secrets_dir

    return str(secrets_dir())


class StoredSecrets:
    """Feeds the store's values to `remember` (name, value pairs) whenever the store changed since last time."""

    def __init__(self, remember: Callable[[Iterable[tuple[str, str]]], None],
                 load: Callable[[], dict[str, str]] = load_store) -> None:
        self._remember = remember
        self._load = load
        self._lock = threading.Lock()
        self._where: tuple[str | None, str | None] | None = None
        self._directory = ""
        self._seen: Stamp = _UNSEEN
        self.next_ns = 0
        """The monotonic time of the next look (the policy's `redactor` tests it before calling `sync`)."""

    def _stamp(self) -> Stamp:
        where = (os.environ.get("TOOLDECK_SECRETS_DIR"), os.environ.get("XDG_CONFIG_HOME"))
        if where != self._where:  # the store's directory follows the environment (tests, a host that moves it)
            self._directory, self._where = _directory(), where
        try:
            st = os.stat(self._directory)
        except OSError:  # absent (nothing ever stored) or unreadable: `load` reports a store it cannot read
            return (None, self._directory)
        return (st.st_ino, st.st_mtime_ns, self._directory)

    def sync(self) -> None:
        """Remember every stored value if the store changed since the last look (a clock read when it was
        looked at less than CHECK_EVERY_NS ago, one stat when not)."""
        now = time.monotonic_ns()
        if now < self.next_ns:
            return
        self.next_ns = now + CHECK_EVERY_NS
        if self._stamp() == self._seen:
            return
        with self._lock:
            stamp = self._stamp()
            if stamp == self._seen:
                return
            started = time.time_ns()
            if stamp[0] is None:
                self._seen = stamp  # no store directory: nothing stored
                return
            try:
                values = self._load()
            except Exception as exc:  # TooldeckError (no key, a locked keychain) or the keychain's own errors
                self._seen = stamp
                log.warning("the stored secrets cannot be read for redaction, so a tool that prints one is not "
                            "redacted: %s", getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")
                return
            self._remember(values.items())
            racy = isinstance(stamp[1], int) and stamp[1] > started - RACY_NS
            self._seen = _UNSEEN if racy else stamp
