"""What the conditional Agenvoy tools read of `<home>/tooldeck.toml`, cached per file state.

Their availability is asked on every invocation (catalog/bindings.py), so the file is parsed again only
when its size or modification time changed, and the conditions of one invocation share one `stat`.
`models_table(home)` is the `[models]` table (agent/models.py: `image` and `tts` name the media
models); `table(home, key)` any other top-level table (`[chatbots]`). A broken file raises: the
condition reports it as a diagnostic.
"""

from __future__ import annotations

import os
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from tooldeck.agent.models import ModelsTable

CONFIG_FILE: Final = "tooldeck.toml"
RECHECK_S: Final = 0.002
"""The conditions of one invocation run within microseconds of each other: they share one `stat`."""


@dataclass(slots=True)
class _Held:
    checked: float
    stamp: tuple[int, int] | None
    data: dict[str, Any]
    models: ModelsTable | None = None


_cache: dict[str, _Held] = {}


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _held(home: Path) -> _Held:
    key = str(home)
    now = time.monotonic()
    held = _cache.get(key)
    if held is not None and now - held.checked < RECHECK_S:
        return held
    path = os.path.join(key, CONFIG_FILE)
    stamp = _stamp(path)
    if held is not None and held.stamp == stamp:
        held.checked = now
        return held
    data = {} if stamp is None else tomllib.loads(Path(path).read_text(encoding="utf-8"))
    held = _cache[key] = _Held(now, stamp, data)
    return held


def document(home: Path) -> dict[str, Any]:
    """The parsed tooldeck.toml of `home` (empty when there is none)."""
    return _held(home).data


def stamp(home: Path) -> tuple[int, int] | None:
    """The state (modification time, size) the cached document was read in; None: no file."""
    return _held(home).stamp


def table(home: Path, key: str) -> dict[str, Any]:
    value = document(home).get(key, {})
    if not isinstance(value, dict):
        raise ValueError(f"{home / CONFIG_FILE}: `{key}` must be a table ([{key}])")
    return value


def models_table(home: Path) -> ModelsTable:
    from tooldeck.agent.models import ModelsTable, parse_models

    held = _held(home)
    if held.models is None:
        held.models = (parse_models(held.data.get("models", {}), os.path.join(str(home), CONFIG_FILE))
                       if held.stamp is not None else ModelsTable(default=None, models={}))
    return held.models
