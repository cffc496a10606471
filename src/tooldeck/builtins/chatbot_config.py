"""`[chatbots]` of `<home>/tooldeck.toml`: the chat platforms `list_chatbot` / `send_to_chatbot` may use.

    [chatbots.telegram]
    enabled = true
    token = "${secret:TELEGRAM_BOT_TOKEN}"      # the default; `${VAR}` works too
    targets = [{ id = "123456789", name = "me" }]

    [chatbots.discord]
    enabled = true
    token = "${secret:DISCORD_BOT_TOKEN}"
    targets = [{ id = "112233445566778899", name = "alerts" }]

`api_url` points a platform at a mirror (default `https://api.telegram.org`, `https://discord.com/api/v10`).
`targets` are the authorised conversations: the only ones a message may go to. A platform counts when
it is enabled and its token resolves (Agenvoy: enabled and a bot token in the keychain).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tooldeck.builtins.home_config import CONFIG_FILE, table

PLATFORMS: Final = ("telegram", "discord")
DEFAULTS: Final = {
    "telegram": ("https://api.telegram.org", "${secret:TELEGRAM_BOT_TOKEN}"),
    "discord": ("https://discord.com/api/v10", "${secret:DISCORD_BOT_TOKEN}"),
}
KEYS: Final = frozenset({"enabled", "token", "api_url", "targets"})
_ID: Final = re.compile(r"[-@A-Za-z0-9_]{1,64}")


@dataclass(frozen=True, slots=True)
class Target:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Platform:
    name: str
    api_url: str
    token_ref: str
    targets: tuple[Target, ...]

    def token(self) -> str:
        """The bot token (`${secret:…}` / `${VAR}` expanded); ValueError saying how to provide it."""
        from tooldeck.core.errors import TooldeckError
        from tooldeck.sources.mcp.config_checks import expand

        try:
            value = expand(self.token_ref, f"chatbots.{self.name}.token")
        except TooldeckError as exc:
            raise ValueError(exc.message) from None
        if not value.strip():
            raise ValueError(f"chatbots.{self.name}.token is empty")
        return value.strip()


def _targets(raw: Any, where: str) -> tuple[Target, ...]:
    if not isinstance(raw, list):
        raise ValueError(f"{where}: must be a list of {{ id = \"…\", name = \"…\" }}")
    out: list[Target] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or isinstance(item.get("id"), bool) or not isinstance(item.get("id"), str | int):
            raise ValueError(f"{where}[{i}]: needs an id (the chat or channel id)")
        ident = str(item["id"]).strip()
        if not _ID.fullmatch(ident):
            raise ValueError(f"{where}[{i}].id: must be 1-64 of letters, digits, `-`, `_`, `@` (a chat id, "
                             "@channel name or channel id)")
        name = item.get("name", "")
        if not isinstance(name, str):
            raise ValueError(f"{where}[{i}].name: must be a string")
        out.append(Target(ident, name))
    return tuple(out)


def configured(home: Path) -> dict[str, Platform]:
    """The enabled platforms (token not checked); ValueError naming the key for a bad entry."""
    chatbots = table(home, "chatbots")
    out: dict[str, Platform] = {}
    for name, raw in chatbots.items():
        where = f"{home / CONFIG_FILE}: chatbots.{name}"
        if name not in PLATFORMS:
            raise ValueError(f"{where}: unknown platform; the platforms are {', '.join(PLATFORMS)}")
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: must be a table ([chatbots.{name}])")
        unknown = sorted(set(raw) - KEYS)
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown key; the keys are {', '.join(sorted(KEYS))}")
        enabled = raw.get("enabled", False)
        if not isinstance(enabled, bool):
            raise ValueError(f"{where}.enabled: must be true or false")
        api_url, token = DEFAULTS[name]
        for key, value in (("api_url", raw.get("api_url", api_url)), ("token", raw.get("token", token))):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{where}.{key}: must be a non-empty string")
        if not str(raw.get("api_url", api_url)).startswith(("http://", "https://")):
            raise ValueError(f"{where}.api_url: must start with http:// or https://")
        if enabled:
            out[name] = Platform(name, str(raw.get("api_url", api_url)).rstrip("/"), str(raw.get("token", token)),
                                 _targets(raw.get("targets", []), f"{where}.targets"))
    return out


def usable(home: Path) -> dict[str, Platform]:
    """The enabled platforms whose token resolves."""
    out: dict[str, Platform] = {}
    for name, platform in configured(home).items():
        try:
            platform.token()
        except ValueError:
            continue
        out[name] = platform
    return out


_VAR_NAMES: Final = re.compile(r"\$\{(?:secret:)?([A-Za-z_][A-Za-z0-9_]*)")
_answers: dict[str, tuple[float, tuple[Any, ...], bool]] = {}
_platforms: dict[str, tuple[Any, dict[str, Platform]]] = {}


def _secrets_state(platforms: dict[str, Platform]) -> tuple[Any, ...]:
    """What a token's resolution depends on besides the config: the store's files, the variables named."""
    from tooldeck.secrets.filebox import DATA_FILE, secrets_dir
    from tooldeck.secrets.store import BACKEND_VAR, NAMES_FILE

    where = str(secrets_dir())
    stamps: list[Any] = [os.environ.get(BACKEND_VAR)]
    for name in (DATA_FILE, NAMES_FILE):
        try:
            st = os.stat(os.path.join(where, name))
            stamps.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamps.append(None)
    for platform in platforms.values():
        stamps.extend(os.environ.get(v) is not None for v in _VAR_NAMES.findall(platform.token_ref))
    return tuple(stamps)


def any_usable(home: Path) -> bool:
    """Whether some platform is usable, answered again only when the config, the secrets store's files or
    the variables the tokens name changed (asked on every invocation, by both tools: decrypting the store
    each time would cost more than the rest of the invocation)."""
    from tooldeck.builtins.home_config import RECHECK_S, document, stamp

    data = document(home)
    if "chatbots" not in data:
        return False
    key = str(home)
    now = time.monotonic()
    held = _answers.get(key)
    config = stamp(home)
    if held is not None and now - held[0] < RECHECK_S and held[1][0] == config:
        return held[2]
    parsed = _platforms.get(key)
    if parsed is None or parsed[0] != config:
        parsed = _platforms[key] = (config, configured(home))
    state = (config, *_secrets_state(parsed[1]))
    if held is not None and held[1] == state:
        _answers[key] = (now, state, held[2])
        return held[2]
    answer = bool(usable(home))
    _answers[key] = (now, state, answer)
    return answer
