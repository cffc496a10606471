"""`tooldeck chat import FILE` and `tooldeck chat list`: a host's chat log into the home, for the
conversation tools (docs/conversation.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tooldeck.cli.common import DEFAULT_HOME, HomeOption, JsonOption, cli_app, fail_usage, usage_errors

chat_app = cli_app(name="chat", no_args_is_help=True, help="Chat logs for the conversation tools: import, list.")


def import_cmd(
    file: Annotated[Path, typer.Argument(metavar="FILE",
                                         help="A JSONL chat log (SillyTavern, or role/content lines).")],
    chat_id: Annotated[str | None, typer.Option("--id", metavar="ID",
                                                help="The chat id (default: from the file name).")] = None,
    title: Annotated[str | None, typer.Option("--title", help="A title (default: the log's character name).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite a chat imported under the same id.")] = False,
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """Import a chat log; bind it to runs with the Profile's `conversation.chat = "ID"`."""
    from tooldeck.cli.table import show_one
    from tooldeck.conversation.chat_store import ChatStore, check_id, id_from_name
    from tooldeck.conversation.importer import parse_jsonl
    from tooldeck.core.errors import TooldeckError

    try:
        data = file.read_bytes()
    except OSError as exc:
        fail_usage(f"chat.import_invalid: cannot read {file}: {exc.strerror}")
    try:
        parsed = parse_jsonl(data)
        cid = check_id(chat_id) if chat_id is not None else id_from_name(file.stem)
        info = ChatStore(home / "records.sqlite").save(cid, title or parsed.title, parsed.messages, str(file),
                                                       replace=replace)
    except TooldeckError as exc:
        usage_errors(exc)
    show_one({"chat_id": info.chat_id, "title": info.title, "messages": info.messages},
             f"imported {info.messages} message(s) as chat {info.chat_id}" + (f" ({info.title})" if info.title else ""),
             as_json=as_json)


def list_cmd(home: HomeOption = DEFAULT_HOME, as_json: JsonOption = False) -> None:
    """The imported chats, newest first: id, messages, imported (UTC), title."""
    import time

    from tooldeck.cli.table import Column, show_rows
    from tooldeck.conversation.chat_store import ChatStore
    from tooldeck.core.errors import TooldeckError

    try:
        chats = ChatStore(home / "records.sqlite").chats(None, 1000)
    except TooldeckError as exc:
        usage_errors(exc)
    columns = [Column("chat", "id"), Column("messages", "number"), Column("imported (utc)", "id", drop=1),
               Column("title", "text")]
    show_rows([{"chat_id": c.chat_id, "title": c.title, "messages": c.messages, "imported_at": c.started_at}
               for c in chats], columns,
              [(c.chat_id, str(c.messages), time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(c.started_at or 0)),
                c.title or "") for c in chats],
              as_json=as_json, empty=f"no imported chats in {home}; add one with `tooldeck chat import FILE`")


chat_app.command("import")(import_cmd)
chat_app.command("list")(list_cmd)
