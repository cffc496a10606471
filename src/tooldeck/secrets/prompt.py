"""How `store_secret` gets a value from the user without the value passing through the model.

The host sets a prompt with `set_prompt(fn)` (process-wide, as a UI is): `fn(SecretRequest)` returns
the typed value (or an awaitable of it), or None when the user declined. Without one, an invocation
whose process has a terminal asks there (`getpass`: nothing is echoed); otherwise nobody can be asked
and the tool says how to store the secret by hand (`tooldeck secret set NAME`).
"""

from __future__ import annotations

import asyncio
import getpass
import inspect
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

NO_PROMPT: Final = "secret.no_prompt"


@dataclass(frozen=True, slots=True)
class SecretRequest:
    key: str
    question: str
    run_id: str


SecretPrompt = Callable[[SecretRequest], "str | Awaitable[str | None] | None"]

_prompt: SecretPrompt | None = None


def set_prompt(prompt: SecretPrompt | None) -> SecretPrompt | None:
    """Use `prompt` for `store_secret` from now on (None: back to the terminal); returns the one before."""
    global _prompt
    previous, _prompt = _prompt, prompt
    return previous


def _terminal(request: SecretRequest) -> str | None:
    try:
        return getpass.getpass(f"{request.question} ({request.key}, not echoed): ", stream=sys.stderr)
    except (EOFError, KeyboardInterrupt):
        return None


def has_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


async def ask(request: SecretRequest) -> str | None:
    """The user's answer; `LookupError` when nobody can be asked in this process."""
    prompt = _prompt
    if prompt is None:
        if not has_terminal():
            raise LookupError("no secret prompt")
        return await asyncio.to_thread(_terminal, request)
    answer = prompt(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer
