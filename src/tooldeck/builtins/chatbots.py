"""`list_chatbot` and `send_to_chatbot` (Agenvoy's conditional channel tools): Telegram and Discord bots.

Offered only when `[chatbots]` of `<home>/tooldeck.toml` enables a platform whose bot token resolves
(`${secret:TELEGRAM_BOT_TOKEN}` by default: store it with `store_secret` or `tooldeck secret set`;
builtins/chatbot_config.py). `list_chatbot(platform)` → the authorised conversations (the config's
`targets`), each with the title and type the platform reports (or why it could not). `send_to_chatbot
(platform, target_id, message)` sends to an authorised conversation only: Telegram gets HTML, Discord
markdown, each formatted and cut into parts by `chat_format.py`; → `{ok, platform, target_id, parts,
message_ids}`. Sending asks for confirmation unless the Profile sets the tool's permission. Requests go
through the SSRF guard; the token never appears in an answer.
"""

from __future__ import annotations

from typing import Any, Final

from tooldeck.builtins.chatbot_config import PLATFORMS, Platform, any_usable, configured
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import AvailabilityContext, ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

NOT_CONFIGURED: Final = "chatbot.not_configured"
UNKNOWN_TARGET: Final = "chatbot.unknown_target"
EMPTY_MESSAGE: Final = "chatbot.empty_message"
SEND_FAILED: Final = "chatbot.send_failed"
MAX_MESSAGE_CHARS: Final = 64_000


def chatbot_platform_configured(ctx: AvailabilityContext) -> bool:
    return ctx.home is not None and any_usable(ctx.home)




def _platform(ctx: CallContext, name: str) -> tuple[Platform, str]:
    home = ctx.run.home
    try:
        platforms = configured(home) if home is not None else {}
    except ValueError as exc:
        raise ToolCallError(NOT_CONFIGURED, str(exc)) from None
    platform = platforms.get(name)
    if platform is None:
        have = ", ".join(platforms) or "none"
        raise ToolCallError(NOT_CONFIGURED, f"{name} is not enabled in [chatbots] of tooldeck.toml (enabled: {have}).")
    try:
        return platform, platform.token()
    except ValueError as exc:
        raise ToolCallError(NOT_CONFIGURED, f"no {name} bot token: {exc}") from None


async def list_chatbot(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.builtins.chat_platforms import ChatError, discord_channel, telegram_chat
    from tooldeck.net.clients import client_for

    platform, token = _platform(ctx, args["platform"])
    client = client_for(ctx.run, ctx.invocation.profile.net_allow)
    describe = telegram_chat if platform.name == "telegram" else discord_channel
    targets: list[dict[str, Any]] = []
    for target in platform.targets:
        entry: dict[str, Any] = {"id": target.id, "name": target.name}
        try:
            entry.update(await describe(client, platform, token, target.id))
        except ChatError as exc:
            entry["error"] = exc.message
        targets.append(entry)
    answer: dict[str, Any] = {"platform": platform.name, "targets": targets}
    if not targets:
        answer["hint"] = (f"no authorised conversations: the user adds them as `targets` of [chatbots.{platform.name}] "
                          "in tooldeck.toml")
    return ToolOutput(json_text(answer), answer)


async def send_to_chatbot(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.builtins.chat_format import discord_parts, telegram_parts  # html.parser: on first use
    from tooldeck.builtins.chat_platforms import ChatError, discord_send, telegram_send
    from tooldeck.net.clients import client_for

    platform, token = _platform(ctx, args["platform"])
    target_id = str(args["target_id"]).strip()
    if target_id not in {t.id for t in platform.targets}:
        listed = ", ".join(t.id for t in platform.targets) or "none"
        raise ToolCallError(UNKNOWN_TARGET, f"{target_id[:64]!r} is not an authorised {platform.name} conversation "
                            f"(authorised: {listed}); list_chatbot shows them. Nothing was sent.")
    parts = telegram_parts(args["message"]) if platform.name == "telegram" else discord_parts(args["message"])
    if not any(p.strip() for p in parts):
        raise ToolCallError(EMPTY_MESSAGE, "the message has no text once formatted; nothing was sent.")
    send = telegram_send if platform.name == "telegram" else discord_send
    client = client_for(ctx.run, ctx.invocation.profile.net_allow)
    sent: list[str] = []
    for i, part in enumerate(parts, 1):
        try:
            sent.append(await send(client, platform, token, target_id, part))
        except ChatError as exc:
            done = f"parts 1-{len(sent)} of {len(parts)} were delivered" if sent else "nothing was delivered"
            raise ToolCallError(SEND_FAILED, f"part {i} of {len(parts)} was not sent: {exc.message}; {done}.") from None
    answer = {"ok": True, "platform": platform.name, "target_id": target_id, "parts": len(parts),
              "message_ids": sent}
    return ToolOutput(json_text(answer), answer)


PLATFORM_PROPERTY = {"type": "string", "enum": list(PLATFORMS), "description": "telegram or discord."}

LIST = ToolDescriptor(
    id=ToolId.builtin("list_chatbot"),
    title="List chat conversations",
    description="List the authorised conversations of a chat platform's bot (ids, names, titles), to pick the "
                "target_id for send_to_chatbot.",
    input_schema={"type": "object", "properties": {"platform": PLATFORM_PROPERTY}, "required": ["platform"],
                  "additionalProperties": False},
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
    available=chatbot_platform_configured,
)

SEND = ToolDescriptor(
    id=ToolId.builtin("send_to_chatbot"),
    title="Send a chat message",
    description="Send a message to an authorised conversation through the platform's bot. Telegram: HTML (b, i, u, "
                "s, a href, code, pre, blockquote, tg-spoiler; escape < > & in text). Discord: markdown. Long "
                "messages are sent in several parts.",
    input_schema={
        "type": "object",
        "properties": {
            "platform": PLATFORM_PROPERTY,
            "target_id": {"type": "string", "description": "A conversation id from list_chatbot."},
            "message": {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_CHARS},
        },
        "required": ["platform", "target_id", "message"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
    available=chatbot_platform_configured,
    confirm_when=lambda _args: True,
)

TOOLS = [BuiltinTool(LIST, list_chatbot), BuiltinTool(SEND, send_to_chatbot)]
