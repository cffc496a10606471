"""What a secret's name may be: the form of an environment variable name, because a secret is looked up
by the same name in the environment when the store does not hold it (docs/configuration.md, Secrets)."""

from __future__ import annotations

import re
from typing import Final

from tooldeck.core.errors import ToolCallError

INVALID_NAME: Final = "secret.invalid_name"
MAX_NAME_CHARS: Final = 128
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def name_problem(name: object) -> str | None:
    """Why `name` cannot name a secret, or None."""
    if not isinstance(name, str) or not name:
        return "a secret's name must be a non-empty string"
    if len(name) > MAX_NAME_CHARS:
        return f"a secret's name has at most {MAX_NAME_CHARS} characters, this one {len(name)}"
    if not _NAME.fullmatch(name):
        return (f"{name[:60]!r} is not a secret name: use letters, digits and `_`, not starting with a digit "
                "(the form of an environment variable, e.g. OPENAI_API_KEY)")
    return None


def checked_name(name: object) -> str:
    """`name` when it can name a secret, else `secret.invalid_name` (raised as a tool error)."""
    problem = name_problem(name)
    if problem is not None:
        raise ToolCallError(INVALID_NAME, problem + ".")
    assert isinstance(name, str)
    return name
