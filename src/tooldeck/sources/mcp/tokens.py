"""OAuth state of one upstream server on disk: `<home>/mcp-auth/<slug>-<8 hex>.json`, mode 0600.

The file holds what the SDK's `OAuthClientProvider` needs to work again in a later process without a
browser: the tokens (with the absolute expiry, which `OAuthToken.expires_in` alone loses), the client
registration, and the discovered protected-resource and authorization-server metadata (the token
endpoint of a refresh lives there, not on the MCP server's origin). It is bound to the server's URL:
an entry whose `url` changed is ignored, so tokens are never sent to another endpoint.

Several processes share it (`tooldeck serve`, `tooldeck call`, `tooldeck mcp login`): every change is
a read-modify-write under an exclusive `flock` on `<file>.lock`, written to a temporary file in the
same directory (created 0600) and renamed over the old one, so a reader sees the old file or the new,
never half of one. `TokenFile.locked()` holds the lock across a refresh so that two processes whose
token expired together refresh once (the second adopts the first's tokens).

Token values are secrets: nothing here logs them, and `describe()` (what `tooldeck mcp list` shows)
says only whether there is a token and when it expires.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

AUTH_DIR = "mcp-auth"
FORMAT = 1
_SLUG = re.compile(r"[^a-z0-9]+")


def _remember(data: dict[str, Any]) -> None:
    """The tokens and client secret read here are secrets to redact from results (policy/known_secrets.py)."""
    from tooldeck.policy.known_secrets import KNOWN

    tokens, client = data.get("tokens"), data.get("client_info")
    for source, key, label in ((tokens, "access_token", "oauth access token"),
                               (tokens, "refresh_token", "oauth refresh token"),
                               (client, "client_secret", "oauth client secret")):
        value = source.get(key) if isinstance(source, dict) else None
        if isinstance(value, str):
            KNOWN.remember(label, value)


def token_path(home: Path, server: str) -> Path:
    """Where the OAuth state of `server` lives (the name is hashed in: two names never share a file)."""
    slug = _SLUG.sub("-", server.lower()).strip("-")[:40] or "server"
    digest = hashlib.sha256(server.encode()).hexdigest()[:8]
    return home / AUTH_DIR / f"{slug}-{digest}.json"


def expiry_of(value: Any) -> float | None:
    """A stored `expires_at` as a time, or None when it is absent or not a plausible epoch time."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) if 0 < value < 1e11 else None


@dataclass(frozen=True, slots=True)
class AuthState:
    """What `tooldeck mcp list` shows about a server's sign-in (never a token value)."""

    logged_in: bool
    expires_at: float | None = None
    refreshable: bool = False
    client_registered: bool = False

    def text(self, now: float | None = None) -> str:
        if not self.logged_in:
            return "none"
        if self.expires_at is None:
            return "logged in"
        now = time.time() if now is None else now
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.expires_at))
        if self.expires_at <= now:
            return "expired, refreshable" if self.refreshable else "expired: log in again"
        return f"logged in, expires {when}"

    def to_dict(self) -> dict[str, Any]:
        return {"logged_in": self.logged_in, "expires_at": self.expires_at, "refreshable": self.refreshable,
                "client_registered": self.client_registered}


class TokenFile:
    """The OAuth state file of one server at one URL. Every method is safe against other processes."""

    def __init__(self, path: Path, url: str) -> None:
        self.path = path
        self.url = url
        self._held: int | None = None
        """The lock's file descriptor while this object holds it (a second `flock` on another descriptor
        of the same process would wait for itself)."""

    # -- reading ----------------------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        """The stored state for this URL; {} when there is none, it is unreadable, or for another URL."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("url") != self.url:
            return {}
        _remember(data)
        return data

    def state(self) -> AuthState:
        data = self.read()
        tokens = data.get("tokens")
        if not isinstance(tokens, dict) or not tokens.get("access_token"):
            return AuthState(False, client_registered=isinstance(data.get("client_info"), dict))
        return AuthState(True, expiry_of(data.get("expires_at")),
                         bool(tokens.get("refresh_token")), isinstance(data.get("client_info"), dict))

    # -- writing ----------------------------------------------------------------------------------
    def update(self, **changes: Any) -> None:
        """Set top-level keys (a value of None removes the key), atomically, under the lock."""
        with self._lock():
            data = self.read()
            data.update({"format": FORMAT, "url": self.url})
            for key, value in changes.items():
                if value is None:
                    data.pop(key, None)
                else:
                    data[key] = value
            data["updated_at"] = time.time()
            self._write(data)
        _remember(data)

    def remove(self) -> bool:
        """Delete the state (logout). True when there was a file."""
        with self._lock():
            try:
                self.path.unlink()
            except FileNotFoundError:
                return False
            return True

    def _write(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # -- the lock ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        if self._held is not None:  # already ours (inside `locked()`)
            yield
            return
        fd = self._open_lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._held = fd
            yield
        finally:
            self._held = None
            os.close(fd)  # closing the descriptor releases the lock

    def _open_lock(self) -> int:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)

    @contextlib.asynccontextmanager
    async def locked(self) -> AsyncIterator[None]:
        """Hold the lock across awaits (a token refresh); waiting for it does not block the event loop."""
        if self._held is not None:
            yield
            return
        fd = self._open_lock()
        try:
            await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX)
            self._held = fd
            yield
        finally:
            self._held = None
            os.close(fd)
