"""What the conditional Agenvoy tools read of `<home>/tooldeck.toml`, cached per file state.

Their availability is asked on every invocation (catalog/bindings.py), so the file is parsed again only
when its size or modification time changed: an invocation costs one `stat`. `models_table(home)` is the
`[models]` table (agent/models.py: `image` and `tts` name the media models); `table(home, key)` any other
top-level table (`[chatbots]`). A broken file raises: the condition reports it as a diagnostic.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from tooldeck.agent.models import ModelsTable

CONFIG_FILE: Final = "tooldeck.toml"
_cache: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}
_models: dict[Path, tuple[tuple[int, int], ModelsTable]] = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def document(home: Path) -> dict[str, Any]:
    """The parsed tooldeck.toml of `home` (empty when there is none)."""
    path = home / CONFIG_FILE
    stamp = _stamp(path)
    if stamp is None:
        return {}
    held = _cache.get(path)
    if held is not None and held[0] == stamp:
        return held[1]
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    _cache[path] = (stamp, data)
    return data


def table(home: Path, key: str) -> dict[str, Any]:
    value = document(home).get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{home / CONFIG_FILE}: `{key}` must be a table ([{key}])")
    return value


def models_table(home: Path) -> ModelsTable:
    from tooldeck.agent.models import ModelsTable, parse_models

    path = home / CONFIG_FILE
    stamp = _stamp(path)
    if stamp is None:
        return ModelsTable(default=None, models={})
    held = _models.get(path)
    if held is not None and held[0] == stamp:
        return held[1]
    parsed = parse_models(document(home).get("models", {}), str(path))
    _models[path] = (stamp, parsed)
    return parsed
