"""`SecretStore`: the OS keychain through `keyring` where one runs, else the encrypted file (`filebox.py`).

The backend is chosen once per store: `TOOLDECK_SECRETS_BACKEND` = `keyring` | `file` | `auto` (default:
the keychain when `keyring` finds a real one, i.e. a backend of priority ≥ 1 — macOS Keychain, Windows
Credential Locker, the Secret Service or KWallet on a desktop — else the file). Keychain entries live
under the service `tooldeck`; since a keychain cannot list its entries, the names (never the values)
are kept in `<secrets dir>/names.json` for `tooldeck secret list`.

`lookup(name)` is what configs use (`${secret:NAME}`, `requires.secret`): the store, then the
environment variable of the same name, so CI can hand a secret over without a store.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final, Literal

from tooldeck.core.errors import TooldeckError
from tooldeck.secrets.filebox import UNAVAILABLE, FileBox, _write_private, secrets_dir

SERVICE: Final = "tooldeck"
BACKEND_VAR: Final = "TOOLDECK_SECRETS_BACKEND"
NAMES_FILE: Final = "names.json"
Backend = Literal["keyring", "file"]


def chosen_backend() -> Backend:
    wanted = (os.environ.get(BACKEND_VAR) or "auto").strip().lower()
    if wanted in ("keyring", "file"):
        return wanted  # type: ignore[return-value]
    if wanted != "auto":
        raise TooldeckError(UNAVAILABLE, f"{BACKEND_VAR}={wanted!r} is not a secrets backend; use keyring, file "
                            "or auto.")
    try:
        import keyring
    except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
        return "file"
    return "keyring" if getattr(keyring.get_keyring(), "priority", 0) >= 1 else "file"


class SecretStore:
    """Get, set and delete secrets by name; names are checked by the callers (`names.py`)."""

    def __init__(self, backend: Backend | None = None, keyring_backend: Any = None) -> None:
        self.backend: Backend = backend or ("keyring" if keyring_backend is not None else chosen_backend())
        self._keyring = keyring_backend
        self.box = FileBox(secrets_dir())

    def _kr(self) -> Any:
        if self._keyring is None:
            import keyring

            self._keyring = keyring.get_keyring()
        return self._keyring

    def get(self, name: str) -> str | None:
        if self.backend == "file":
            return self.box.get(name)
        try:
            return self._kr().get_password(SERVICE, name)
        except Exception as exc:  # keyring's errors (locked keychain, no D-Bus) have no common base
            raise TooldeckError(UNAVAILABLE, f"the keychain did not answer ({type(exc).__name__}: {exc}); "
                                f"set {BACKEND_VAR}=file to use the encrypted file instead.") from None

    def set(self, name: str, value: str) -> None:
        if self.backend == "file":
            self.box.set(name, value)
            return
        try:
            self._kr().set_password(SERVICE, name, value)
        except Exception as exc:
            raise TooldeckError(UNAVAILABLE, f"the keychain refused the secret ({type(exc).__name__}: {exc}); "
                                f"set {BACKEND_VAR}=file to use the encrypted file instead.") from None
        self._names(add=name)

    def delete(self, name: str) -> bool:
        if self.backend == "file":
            return self.box.delete(name)
        if self.get(name) is None:
            self._names(remove=name)
            return False
        try:
            self._kr().delete_password(SERVICE, name)
        except Exception as exc:
            raise TooldeckError(UNAVAILABLE, f"the keychain did not delete {name} ({type(exc).__name__}: "
                                f"{exc}).") from None
        self._names(remove=name)
        return True

    def names(self) -> list[str]:
        if self.backend == "file":
            return sorted(self.box.read_all())
        return self._names()

    def _names(self, add: str | None = None, remove: str | None = None) -> list[str]:
        path = self.box.directory / NAMES_FILE
        with self.box._locked():
            try:
                names = set(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                names = set()
            if add is not None or remove is not None:
                names.add(add) if add is not None else names.discard(remove)  # type: ignore[arg-type]
                _write_private(path, json.dumps(sorted(names)).encode())
        return sorted(names)


def lookup(name: str, store: SecretStore | None = None) -> str | None:
    """A secret's value for a config: the store's, else the environment variable `name`, else None."""
    from tooldeck.policy.known_secrets import KNOWN

    value = (store or SecretStore()).get(name) or os.environ.get(name) or None
    KNOWN.remember(name, value)  # a secret read is a secret to redact (docs/configuration.md, Secret redaction)
    return value
