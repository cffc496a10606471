"""Argument rules: a permission for the calls of a tool whose arguments match (docs/configuration.md, "Rules").

    rules = [
      {tool = "builtin:workspace.shell", command = "git diff:*", permission = "allow"},
      {tool = "builtin:workspace.shell", command = "rm *", permission = "deny"},
      {tool = "builtin:workspace.*", path = "persist/secrets/*", permission = "deny"},
      {tool = "builtin:http_request", host = "*.internal.example", permission = "ask"},
      {tool = "mcp/github:*", match = {"/repo" = "acme/*"}, permission = "ask"},
    ]

Conditions of one rule all hold for it to match. Deny and ask rules match a call when *any* of its
commands / paths / URLs matches; allow rules only when *every* one is covered (by one or more allow
rules), so `git diff:*` allows `git diff` but not `git diff; rm -rf x`. When a match cannot be
decided with certainty (a computed command name, `eval $x`, an unparsable line), a deny or ask rule
that might match makes the call `ask`. Precedence: the rules naming the tool by its exact id decide
first; only if none of them decides do the glob rules; within each, deny beats ask beats allow. No
rule decides → the tool's permission (`permissions`, `default_permission`, annotations).
"""

from __future__ import annotations

import fnmatch
import posixpath
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from tooldeck.policy.shell_commands import CommandLine, SimpleCommand, simple_commands

Permission = Literal["allow", "ask", "deny"]
Resolver = Callable[[str], "str | None"]
"""A workspace path → the path it really names after symbolic links (None: it names nothing inside)."""
State = Literal["yes", "no", "unknown"]
PATH_KEYS = ("path", "paths", "file", "files", "file_path", "output_file", "save_to", "source", "destination",
             "target", "from", "to")
URL_KEYS = ("url", "urls")
COMMAND_KEY = "command"


@dataclass(frozen=True, slots=True)
class Decision:
    permission: Permission
    reason: str


@dataclass(frozen=True, slots=True)
class CommandPattern:
    text: str
    words: tuple[str, ...]
    prefix: bool
    """`git diff:*`: these words, then anything."""

    @classmethod
    def parse(cls, text: str) -> CommandPattern:
        body = text.strip()
        prefix = body.endswith(":*")
        if prefix:
            body = body[:-2]
        words = tuple(body.split())
        if not words:
            raise ValueError(f"command pattern {text!r} names no command")
        first = words[0].rsplit("/", 1)[-1] or words[0]
        return cls(text, (first, *words[1:]), prefix)

    def state(self, cmd: SimpleCommand) -> State:
        words = cmd.words
        if not words or words[0] is None:
            return "unknown"
        if not fnmatch.fnmatchcase(words[0], self.words[0]):
            return "no"
        if self.prefix:
            if len(words) < len(self.words):
                return "no"
            for want, got in zip(self.words[1:], words[1:len(self.words)], strict=True):
                if got is None:
                    return "unknown"
                if not fnmatch.fnmatchcase(got, want):
                    return "no"
            return "yes"
        if any(w is None for w in words):
            return "unknown"
        return "yes" if fnmatch.fnmatchcase(" ".join(words), " ".join(self.words)) else "no"  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class CompiledRule:
    text: str
    tool: str
    exact: bool
    permission: Permission
    command: CommandPattern | None
    path: str | None
    host: str | None
    pointers: tuple[tuple[tuple[str, ...], str], ...]

    def conditions(self, args: dict[str, Any], resolve: Resolver | None = None) -> State:
        """The rule's non-command conditions (path, host, match) against the call's arguments."""
        states: list[State] = []
        covering = self.permission == "allow"
        if self.path is not None:
            states.append(_every_or_any(_path_values(args), lambda p: _path_state(p, self.path, covering, resolve),
                                        covering))
        if self.host is not None:
            states.append(_every_or_any(_url_values(args), lambda u: _host_state(u, self.host), covering))
        for tokens, glob in self.pointers:
            states.append(_pointer_state(args, tokens, glob))
        return _all(states)


def compile_rules(rules: Iterable[Any], tool_id: str, tool_matches: Any) -> tuple[CompiledRule, ...]:
    """The Profile's rules that name `tool_id` (exactly or by glob), compiled; `tool_matches(pattern, id)`."""
    out = []
    for r in rules:
        if not tool_matches(r.tool, tool_id):
            continue
        pointers = tuple((parse_pointer(p), glob) for p, glob in r.match.items())
        out.append(CompiledRule(describe(r), r.tool, r.tool == tool_id, r.permission,
                                CommandPattern.parse(r.command) if r.command is not None else None,
                                r.path, r.host.lower().rstrip(".") if r.host is not None else None, pointers))
    return tuple(out)


def describe(rule: Any) -> str:
    parts = [f'tool = "{rule.tool}"']
    for key in ("command", "path", "host"):
        if getattr(rule, key) is not None:
            parts.append(f'{key} = "{getattr(rule, key)}"')
    if rule.match:
        parts.append("match = {" + ", ".join(f'"{k}" = "{v}"' for k, v in rule.match.items()) + "}")
    parts.append(f'permission = "{rule.permission}"')
    return "{" + ", ".join(parts) + "}"


def decide(rules: Sequence[CompiledRule], args: dict[str, Any], resolve: Resolver | None = None) -> Decision | None:
    """The permission the rules give this call, or None when no rule decides. `resolve` lets path rules
    see through the workspace's symbolic links."""
    exact = [r for r in rules if r.exact]
    if exact:
        decision = _tier(exact, args, resolve)
        if decision is not None:
            return decision
    globs = [r for r in rules if not r.exact]
    return _tier(globs, args, resolve) if globs else None


def _tier(rules: list[CompiledRule], args: dict[str, Any], resolve: Resolver | None) -> Decision | None:
    line: CommandLine | None = None
    if any(r.command is not None for r in rules):
        command = args.get(COMMAND_KEY)
        line = simple_commands(command) if isinstance(command, str) else CommandLine((), True)
    unsure: list[str] = []
    asked: list[str] = []
    for rule in rules:
        if rule.permission == "allow":
            continue
        state = _state(rule, args, line, resolve)
        if state == "yes" and rule.permission == "deny":
            return Decision("deny", f"the rule {rule.text} forbids it")
        if state == "yes":
            asked.append(rule.text)
        elif state == "unknown":
            unsure.append(rule.text)
    if unsure:
        why = f" ({line.why})" if line is not None and line.why else ""
        return Decision("ask", f"tooldeck cannot be sure the rule {unsure[0]} does not apply{why}")
    if asked:
        return Decision("ask", f"the rule {asked[0]} asks for confirmation")
    return _allowed([r for r in rules if r.permission == "allow"], args, line, resolve)


def _state(rule: CompiledRule, args: dict[str, Any], line: CommandLine | None, resolve: Resolver | None) -> State:
    states = [rule.conditions(args, resolve)]
    if rule.command is not None and line is not None:
        found = [rule.command.state(c) for c in line.commands]
        if "yes" in found:
            states.append("yes")
        elif "unknown" in found or not line.certain:
            states.append("unknown")
        else:
            states.append("no")
    return _all(states)


def _allowed(rules: list[CompiledRule], args: dict[str, Any], line: CommandLine | None,
             resolve: Resolver | None) -> Decision | None:
    plain = [r for r in rules if r.command is None and r.conditions(args, resolve) == "yes"]
    if plain:
        return Decision("allow", f"the rule {plain[0].text} allows it")
    with_command = [r for r in rules if r.command is not None and r.conditions(args, resolve) == "yes"]
    if not with_command or line is None or not line.certain or not line.commands:
        return None
    if all(any(r.command.state(c) == "yes" for r in with_command) for c in line.commands):  # type: ignore[union-attr]
        return Decision("allow", f"allow rules cover every command ({with_command[0].text}, …)")
    return None


def _all(states: list[State]) -> State:
    if not states or "no" in states:
        return "no" if states else "yes"
    return "unknown" if "unknown" in states else "yes"


def _every_or_any(values: list[Any], state: Any, every: bool) -> State:
    if not values:
        return "no"
    found = [state(v) for v in values]
    if every:
        return _all(found)
    return "yes" if "yes" in found else ("unknown" if "unknown" in found else "no")


# -- paths --------------------------------------------------------------------------------------------


def _path_values(args: dict[str, Any]) -> list[Any]:
    values: list[Any] = []
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            values.extend(value)
        elif value is not None:
            values.append(value)
    return values


def normalize_path(raw: str) -> str | None:
    """A workspace path as the workspace will resolve it, lexically: NFC, `/` separators, no `.` / `..`
    / empty segments, no leading `/`. None when it climbs out of the workspace."""
    text = unicodedata.normalize("NFC", raw.replace("\\", "/")).strip()
    norm = posixpath.normpath("/" + text.lstrip("/"))
    if norm.startswith("//"):
        norm = norm[1:]
    rel = norm.lstrip("/")
    return None if rel.startswith("..") else rel


def _fold(text: str) -> str:
    """What a look-alike or another case of the same name folds to (deny and ask rules compare these)."""
    return unicodedata.normalize("NFKC", text).casefold()


def _path_state(value: Any, pattern: str, covering: bool, resolve: Resolver | None) -> State:
    if not isinstance(value, str):
        return "unknown"
    path = normalize_path(value)
    if path is None:
        return "unknown"
    names = [path]
    if resolve is not None:
        real = resolve(path)  # the file a symbolic link leads to is what the call touches
        if real is not None and real != path:
            names.append(real)
    glob = normalize_path(pattern) or pattern
    if covering:  # allow: exactly as written (a look-alike is not allowed by accident), and every name
        return "yes" if all(fnmatch.fnmatchcase(n, glob) for n in names) else "no"
    return "yes" if any(fnmatch.fnmatchcase(_fold(n), _fold(glob)) for n in names) else "no"


# -- hosts --------------------------------------------------------------------------------------------


def _url_values(args: dict[str, Any]) -> list[Any]:
    values: list[Any] = []
    for key in URL_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            values.extend(value)
        elif value is not None:
            values.append(value)
    return values


def url_host(url: str) -> str | None:
    """The URL's host, lower-case, without a trailing dot, IDNA-encoded; None when there is none."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    if not host:
        return None
    host = host.rstrip(".")
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None


def _host_state(value: Any, pattern: str) -> State:
    if not isinstance(value, str):
        return "unknown"
    host = url_host(value)
    if host is None:
        return "unknown"
    return "yes" if fnmatch.fnmatchcase(host, pattern) else "no"


# -- JSON pointers --------------------------------------------------------------------------------------


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """RFC 6901: `""` is the whole value, else `/`-separated tokens with `~1` → `/` and `~0` → `~`."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer (it starts with `/`, e.g. `/repo`)")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


def _pointer_state(args: Any, tokens: tuple[str, ...], glob: str) -> State:
    value = args
    for token in tokens:
        if isinstance(value, dict):
            if token not in value:
                return "no"
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or int(token) >= len(value):
                return "no"
            value = value[int(token)]
        else:
            return "no"
    if isinstance(value, str):
        return "yes" if fnmatch.fnmatchcase(value, glob) else "no"
    import orjson

    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        return "unknown"
    return "yes" if fnmatch.fnmatchcase(text, glob) else "no"
