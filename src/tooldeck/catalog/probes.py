"""The host's answers to declarative preconditions (core/preconditions.py): environment, PATH, secrets."""

from __future__ import annotations

import os
import shutil

from tooldeck.core.preconditions import Probes


def _env_set(name: str) -> bool:
    return bool(os.environ.get(name))


def _on_path(name: str) -> bool:
    return shutil.which(name) is not None


def _secret_set(name: str) -> bool:
    if os.environ.get(name):
        return True
    from tooldeck.core.errors import TooldeckError
    from tooldeck.secrets.store import SecretStore  # only tools that require a secret open the store

    try:
        return bool(SecretStore().get(name))
    except TooldeckError:  # an unreadable store holds nothing this invocation can use
        return False


HOST_PROBES = Probes(_env_set, _on_path, _secret_set)
