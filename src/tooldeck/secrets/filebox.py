"""The encrypted-file store, for machines without an OS keychain (headless servers, containers).

`<dir>/secrets.enc` holds one Fernet token (AES-128-CBC + HMAC-SHA256, `cryptography`) of the JSON
`{"format": 1, "secrets": {name: value}}`; the key is `<dir>/secrets.key`, mode 0600, made once. The
directory is the user's (`~/.config/tooldeck/secrets` by default: `secrets_dir`), made 0700, so a
tooldeck home that is copied or shared never carries the secrets or their key.

Several processes share the files: every change is a read-modify-write under an exclusive `flock` on
`<dir>/secrets.lock`, written to a temporary file (0600) that is renamed over the old one, so a reader
sees the old file or the new one, never half of one; the key is made under the same lock and linked
into place whole. A key file that others may read is refused rather than trusted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tooldeck.core.errors import TooldeckError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

UNAVAILABLE: Final = "secret.unavailable"
KEY_FILE: Final = "secrets.key"
DATA_FILE: Final = "secrets.enc"
LOCK_FILE: Final = "secrets.lock"
FORMAT: Final = 1


def secrets_dir() -> Path:
    """`$TOOLDECK_SECRETS_DIR`, else `$XDG_CONFIG_HOME/tooldeck/secrets`, else `~/.config/tooldeck/secrets`."""
    explicit = os.environ.get("TOOLDECK_SECRETS_DIR")
    if explicit:
        return Path(explicit).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "tooldeck" / "secrets"


class FileBox:
    """Secrets in one encrypted file of `directory` (see the module docstring)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else secrets_dir()

    @property
    def key_path(self) -> Path:
        return self.directory / KEY_FILE

    @property
    def data_path(self) -> Path:
        return self.directory / DATA_FILE

    # -- reading --------------------------------------------------------------------------------

    def read_all(self) -> dict[str, str]:
        """Every stored secret (empty when nothing was ever stored)."""
        try:
            token = self.data_path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TooldeckError(UNAVAILABLE, f"cannot read {self.data_path}: {exc}") from None
        fernet = self._fernet(create=False)
        if fernet is None:
            raise TooldeckError(UNAVAILABLE, f"{self.data_path} exists but its key {self.key_path} is gone, so "
                                "the stored secrets cannot be read; remove both files and store the secrets again.")
        from cryptography.fernet import InvalidToken

        try:
            data = json.loads(fernet.decrypt(token))
        except (InvalidToken, ValueError):
            raise TooldeckError(UNAVAILABLE, f"{self.data_path} does not decrypt with {self.key_path} (the key "
                                "was replaced, or the file was altered); remove both files and store the "
                                "secrets again.") from None
        secrets = data.get("secrets") if isinstance(data, dict) else None
        if not isinstance(secrets, dict):
            raise TooldeckError(UNAVAILABLE, f"{self.data_path} is not a secrets file of this version.")
        return {str(k): str(v) for k, v in secrets.items()}

    def get(self, name: str) -> str | None:
        return self.read_all().get(name)

    # -- writing --------------------------------------------------------------------------------

    def set(self, name: str, value: str) -> None:
        with self._locked():
            secrets = self.read_all()
            secrets[name] = value
            self._write(secrets)

    def delete(self, name: str) -> bool:
        with self._locked():
            secrets = self.read_all()
            if secrets.pop(name, None) is None:
                return False
            self._write(secrets)
            return True

    def _write(self, secrets: dict[str, str]) -> None:
        fernet = self._fernet(create=True)
        assert fernet is not None
        token = fernet.encrypt(json.dumps({"format": FORMAT, "secrets": secrets}).encode())
        _write_private(self.data_path, token)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._make_dir()
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _make_dir(self) -> None:
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise TooldeckError(UNAVAILABLE, f"cannot create the secrets directory {self.directory}: {exc}") from None

    # -- the key --------------------------------------------------------------------------------

    def _fernet(self, *, create: bool) -> Fernet | None:
        from cryptography.fernet import Fernet

        try:
            fd = os.open(self.key_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if not create:
                return None
            _link_private(self.key_path, Fernet.generate_key())  # under the lock: one key, made once
            return self._fernet(create=False)
        except OSError as exc:
            raise TooldeckError(UNAVAILABLE, f"cannot open the secrets key {self.key_path}: {exc}") from None
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise TooldeckError(UNAVAILABLE, f"the secrets key {self.key_path} may be read by other users "
                                    f"(mode {stat.S_IMODE(mode):o}); run `chmod 600 {self.key_path}` and retry.")
            key = f.read().strip()
        try:
            return Fernet(key)
        except ValueError:
            raise TooldeckError(UNAVAILABLE, f"{self.key_path} is not a secrets key; remove it and "
                                f"{self.data_path}, then store the secrets again.") from None


def _write_private(path: Path, data: bytes) -> None:
    """`data` into `path` whole: a 0600 temporary file in the same directory, synced, renamed over `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mkstemp makes it 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _link_private(path: Path, data: bytes) -> None:
    """A new `path` holding `data` (0600), appearing whole; an existing one is kept."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
