"""`store_secret` (Agenvoy's tool of the same name): ask the user for a secret and keep it in the secrets
store (`tooldeck/secrets/`: the OS keychain, or an encrypted file where none runs).

`key` (the name configs use, `${secret:KEY}`), `question` (shown to the user; default "<KEY> is
required") → `{"ok": true, "key": KEY}`. The value goes from the user's prompt to the store: it is never
an argument, a result, a record or a log line. An empty answer is `<KEY> is empty` and stores nothing.
Offered to interactive invocations only (as Agenvoy drops it from headless runs).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError, TooldeckError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.preconditions import Requires
from tooldeck.core.results import ToolOutput

EMPTY: Final = "secret.empty"
DECLINED: Final = "secret.declined"
MAX_QUESTION_CHARS: Final = 500


async def store_secret(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.secrets.names import checked_name  # the store's package loads on first use, not at start-up
    from tooldeck.secrets.prompt import NO_PROMPT, SecretRequest, ask
    from tooldeck.secrets.store import SecretStore

    key = checked_name(str(args["key"]).strip())
    question = (args.get("question") or "").strip()[:MAX_QUESTION_CHARS] or f"{key} is required"
    try:
        value = await ask(SecretRequest(key, question, ctx.run.run_id))
    except LookupError:
        raise ToolCallError(NO_PROMPT, f"nobody can type a secret here (no terminal and no prompt from the host); "
                            f"ask the user to run `tooldeck secret set {key}` in a terminal, then retry the tool "
                            "that needed it. Never ask for the value in the chat.") from None
    if value is None:
        raise ToolCallError(DECLINED, f"the user declined to give {key}; do not ask again in this turn.")
    if not value.strip():
        raise ToolCallError(EMPTY, f"{key} is empty")
    try:
        await asyncio.to_thread(SecretStore().set, key, value)
    except TooldeckError as exc:
        raise ToolCallError(exc.code, exc.message) from None
    from tooldeck.policy.known_secrets import KNOWN

    KNOWN.remember(key, value)
    answer = {"ok": True, "key": key}
    return ToolOutput(json_text(answer), answer)


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("store_secret"),
    title="Store a secret",
    description="Ask the user for a secret (masked input) and keep it in the keychain under `key`. Use it when a "
                "tool fails for a missing key or with 401/403/expired token: name the key, call this, then retry "
                "the failing tool. Never ask for credentials in the chat and never put a secret in arguments, "
                "messages or files; configs refer to it as ${secret:KEY}.",
    input_schema={
        "type": "object",
        "properties": {
            "key": {"type": "string", "description": "The secret's name, e.g. OPENAI_API_KEY (letters, digits, _)."},
            "question": {"type": "string", "description": "Shown to the user; default `<key> is required`."},
        },
        "required": ["key"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
    requires=Requires(interactive=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, store_secret)]
