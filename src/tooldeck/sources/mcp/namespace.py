"""Names of upstream resources, resource templates and prompts as `tooldeck serve` offers them (pure, no I/O).

Resource URIs and templates:

- A URI (or a template) that only one server lists passes through unchanged.
- On a clash (the same text from several servers), the first server in name order keeps it and every later
  one's is rewritten to `tooldeck+mcp://<server>/<original>`: the server's name percent-encoded (so it holds
  no `/`), the original appended verbatim, so a rewritten template is still a template the client expands
  (`{id}` stays where it was) and what the client sends back decodes to exactly what the server would have
  got directly.
- An upstream URI that already starts with `tooldeck+mcp://` is always rewritten, so every URI of that scheme
  is tooldeck's own and decodes unambiguously.

Prompt names follow the names mode of tools (`naming.mcp_model_name`): `prefixed` gives
`mcp__<server or alias>__<prompt>` to every prompt; `original` keeps a prompt's name where no other server's
prompt has it (case-insensitively) and prefixes every side of a clash, never "first come, first served".
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, unquote

from tooldeck.naming import allocate_one, mcp_model_name

SCHEME = "tooldeck+mcp://"


def encode_uri(server: str, original: str) -> str:
    """The rewritten form of a server's URI (or URI template)."""
    return f"{SCHEME}{quote(server, safe='')}/{original}"


def decode_uri(uri: str) -> tuple[str, str] | None:
    """(server, original URI) of a rewritten URI; None when `uri` is not of tooldeck's scheme or malformed."""
    if not uri.startswith(SCHEME):
        return None
    server, sep, original = uri[len(SCHEME):].partition("/")
    if not sep or not server:
        return None
    return unquote(server), original


def assign_uris(listed: Iterable[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Offered URI -> (server, original) for (server, URI) pairs, servers taken in name order."""
    out: dict[str, tuple[str, str]] = {}
    for server, original in sorted(listed, key=lambda pair: pair[0]):
        offered = original
        if original.startswith(SCHEME) or original in out:
            offered = encode_uri(server, original)
        if offered not in out:  # a server listing the same URI twice offers it once
            out[offered] = (server, original)
    return out


def assign_prompts(listed: Iterable[tuple[str, str, str]], original_mode: bool) -> dict[str, tuple[str, str]]:
    """Offered prompt name -> (server, original name) for (server, label, prompt) triples."""
    triples = sorted(set(listed), key=lambda t: (t[0], t[2]))
    counts: dict[str, int] = {}
    for _server, _label, name in triples:
        counts[name.casefold()] = counts.get(name.casefold(), 0) + 1
    used: set[str] = set()
    kept: dict[str, tuple[str, str]] = {}
    prefixed: list[tuple[str, str, str]] = []
    for server, label, name in triples:
        if original_mode and counts[name.casefold()] == 1 and not name.casefold().startswith("mcp__"):
            used.add(name.casefold())
            kept[name] = (server, name)
        else:
            prefixed.append((server, label, name))
    for server, label, name in prefixed:
        kept[allocate_one(mcp_model_name(label, name), used)] = (server, name)
    return kept
