"""The host's answers to declarative preconditions (core/preconditions.py): environment and PATH."""

from __future__ import annotations

import os
import shutil

from tooldeck.core.preconditions import Probes


def _env_set(name: str) -> bool:
    return bool(os.environ.get(name))


def _on_path(name: str) -> bool:
    return shutil.which(name) is not None


HOST_PROBES = Probes(_env_set, _on_path)
