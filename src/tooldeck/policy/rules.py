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
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

from tooldeck.policy.shell_commands import CommandLine, SimpleCommand, simple_commands

Permission = Literal["allow", "ask", "deny"]
Resolver = Callable[[str], "str | None"]
"""A workspace path → the path it really names after symbolic links (None: it names nothing inside)."""
NO, UNKNOWN, YES = 0, 1, 2
"""A condition's state; `min` of several is all of them holding, `max` is any."""
PATH_KEYS = ("path", "paths", "file", "files", "file_path", "output_file", "save_to", "source", "destination",
             "target", "from", "to")
URL_KEYS = ("url", "urls")
COMMAND_KEY = "command"
_MISSING = object()


def _glob(pattern: str) -> Callable[[str], Any]:
    """A glob's matcher: equality for a literal, else its compiled regular expression."""
    if not any(c in pattern for c in "*?["):
        return pattern.__eq__
    return re.compile(fnmatch.translate(pattern), re.DOTALL).match


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

    def state(self, cmd: SimpleCommand) -> int:
        words = cmd.words
        if not words or words[0] is None:
            return UNKNOWN
        if not fnmatch.fnmatchcase(words[0], self.words[0]):
            return NO
        if self.prefix:
            if len(words) < len(self.words):
                return NO
            for want, got in zip(self.words[1:], words[1:len(self.words)], strict=True):
                if got is None:
                    return UNKNOWN
                if not fnmatch.fnmatchcase(got, want):
                    return NO
            return YES
        if any(w is None for w in words):
            return UNKNOWN
        return YES if fnmatch.fnmatchcase(" ".join(words), " ".join(self.words)) else NO  # type: ignore[arg-type]


Check = Callable[[dict[str, Any], "Resolver | None"], int]


@dataclass(frozen=True, slots=True)
class CompiledRule:
    text: str
    exact: bool
    permission: Permission
    command: CommandPattern | None
    checks: tuple[Check, ...]
    """The path, host and pointer conditions, compiled."""
    one: Check | None = None
    """The only condition of a rule that has one and no command: called directly (the gate's hot path)."""
    keyed: tuple[str, str] | None = None
    """(argument, glob) of a rule whose only condition is one top-level pointer: such rules of a tier are
    matched together, one regular expression per argument (`Tier.keyed`)."""

    def conditions(self, args: dict[str, Any], resolve: Resolver | None = None) -> int:
        """The rule's non-command conditions against the call's arguments (YES when it has none)."""
        state = YES
        for check in self.checks:
            found = check(args, resolve)
            if found == NO:
                return NO
            if found < state:
                state = found
        return state


@dataclass(frozen=True, slots=True)
class Tier:
    restrict: tuple[CompiledRule, ...]
    """deny rules, then ask rules (those not in `keyed`)"""
    allow: tuple[CompiledRule, ...]
    needs_line: bool
    keyed: tuple[tuple[str, Callable[[str], Any], tuple[CompiledRule, ...]], ...] = ()
    """Per argument: one alternation of the globs of its one-pointer deny and ask rules (deny first), and
    those rules in the alternation's order: the first alternative that matches is the rule that applies."""


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules that name one tool: the exact-id tier, then the glob tier."""

    tiers: tuple[Tier, ...]


def compile_rules(rules: Iterable[Any], tool_id: str, tool_matches: Any) -> RuleSet | None:
    """The Profile's rules that name `tool_id` (exactly or by glob), compiled; `tool_matches(pattern, id)`."""
    found = [_compile(r, r.tool == tool_id) for r in rules if tool_matches(r.tool, tool_id)]
    if not found:
        return None
    tiers = []
    for exact in (True, False):
        tier = [r for r in found if r.exact is exact]
        if tier:
            restrict = [r for r in tier if r.permission == "deny"] + [r for r in tier if r.permission == "ask"]
            by_key: dict[str, list[CompiledRule]] = {}
            for r in restrict:
                if r.keyed is not None:
                    by_key.setdefault(r.keyed[0], []).append(r)
            keyed = tuple((key, _alternation([r.keyed[1] for r in group]), tuple(group))  # type: ignore[index]
                          for key, group in by_key.items())
            tiers.append(Tier(tuple(r for r in restrict if r.keyed is None),
                              tuple(r for r in tier if r.permission == "allow"),
                              any(r.command is not None for r in tier), keyed))
    return RuleSet(tuple(tiers))


def _alternation(globs: list[str]) -> Callable[[str], Any]:
    return re.compile("|".join(f"(?P<r{i}>{fnmatch.translate(g)})" for i, g in enumerate(globs)), re.DOTALL).match


def _compile(rule: Any, exact: bool) -> CompiledRule:
    covering = rule.permission == "allow"
    checks: list[Check] = []
    if rule.path is not None:
        checks.append(_path_check(rule.path, covering))
    if rule.host is not None:
        checks.append(_host_check(rule.host.lower().rstrip("."), covering))
    for pointer, glob in rule.match.items():
        checks.append(_pointer_check(parse_pointer(pointer), _glob(glob)))
    command = CommandPattern.parse(rule.command) if rule.command is not None else None
    one = checks[0] if len(checks) == 1 and command is None else None
    keyed = None
    if one is not None and rule.path is None and rule.host is None:
        [(pointer, glob)] = rule.match.items()
        tokens = parse_pointer(pointer)
        if len(tokens) == 1:
            keyed = (tokens[0], glob)
    return CompiledRule(describe(rule), exact, rule.permission, command, tuple(checks), one, keyed)


def describe(rule: Any) -> str:
    parts = [f'tool = "{rule.tool}"']
    for key in ("command", "path", "host"):
        if getattr(rule, key) is not None:
            parts.append(f'{key} = "{getattr(rule, key)}"')
    if rule.match:
        parts.append("match = {" + ", ".join(f'"{k}" = "{v}"' for k, v in rule.match.items()) + "}")
    parts.append(f'permission = "{rule.permission}"')
    return "{" + ", ".join(parts) + "}"


def decide(rules: RuleSet, args: dict[str, Any], resolve: Resolver | None = None) -> Decision | None:
    """The permission the rules give this call, or None when no rule decides. `resolve` lets path rules
    see through the workspace's symbolic links."""
    for tier in rules.tiers:
        decision = _tier(tier, args, resolve)
        if decision is not None:
            return decision
    return None


def _tier(tier: Tier, args: dict[str, Any], resolve: Resolver | None) -> Decision | None:
    line: CommandLine | None = None
    if tier.needs_line:
        command = args.get(COMMAND_KEY)
        line = simple_commands(command) if isinstance(command, str) else CommandLine((), True)
    unsure: CompiledRule | None = None
    asked: CompiledRule | None = None
    for key, match, group in tier.keyed:
        value = args.get(key, _MISSING)
        if value is _MISSING:
            continue
        text = value if type(value) is str else _json_text(value)
        if text is None:
            unsure = unsure or group[0]
            continue
        found = match(text)
        if found is None:
            continue
        rule = group[int(found.lastgroup[1:])]
        if rule.permission == "deny":
            return Decision("deny", f"the rule {rule.text} forbids it")
        asked = asked or rule
    for rule in tier.restrict:
        one = rule.one
        if one is not None:
            state = one(args, resolve)
        elif rule.command is None:
            state = rule.conditions(args, resolve)
        else:
            state = _state(rule, args, line, resolve)
        if state == NO:
            continue
        if state == YES:
            if rule.permission == "deny":
                return Decision("deny", f"the rule {rule.text} forbids it")
            asked = asked or rule
        elif state == UNKNOWN:
            unsure = unsure or rule
    if unsure is not None:
        why = f" ({line.why})" if line is not None and line.why else ""
        return Decision("ask", f"tooldeck cannot be sure the rule {unsure.text} does not apply{why}")
    if asked is not None:
        return Decision("ask", f"the rule {asked.text} asks for confirmation")
    return _allowed(tier.allow, args, line, resolve) if tier.allow else None


def _state(rule: CompiledRule, args: dict[str, Any], line: CommandLine | None, resolve: Resolver | None) -> int:
    state = rule.conditions(args, resolve)
    if state == NO or rule.command is None or line is None:
        return state
    best = NO
    for cmd in line.commands:
        best = max(best, rule.command.state(cmd))
        if best == YES:
            break
    if best == NO and not line.certain:
        best = UNKNOWN
    return min(state, best)


def _allowed(rules: tuple[CompiledRule, ...], args: dict[str, Any], line: CommandLine | None,
             resolve: Resolver | None) -> Decision | None:
    with_command = []
    for r in rules:
        if r.conditions(args, resolve) != YES:
            continue
        if r.command is None:
            return Decision("allow", f"the rule {r.text} allows it")
        with_command.append(r)
    if not with_command or line is None or not line.certain or not line.commands:
        return None
    if all(any(r.command.state(c) == YES for r in with_command) for c in line.commands):  # type: ignore[union-attr]
        return Decision("allow", f"allow rules cover every command ({with_command[0].text}, …)")
    return None


def _over(values: list[Any], state: Callable[[Any], int], every: bool) -> int:
    """Every value (allow rules) or any value (deny / ask rules); NO when there is none."""
    if not values:
        return NO
    found = [state(v) for v in values]
    return min(found) if every else max(found)


def _values(args: dict[str, Any], keys: tuple[str, ...]) -> list[Any]:
    values: list[Any] = []
    for key in keys:
        value = args.get(key)
        if isinstance(value, list):
            values.extend(value)
        elif value is not None:
            values.append(value)
    return values


# -- paths --------------------------------------------------------------------------------------------


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


def _path_check(pattern: str, covering: bool) -> Check:
    glob = normalize_path(pattern) or pattern
    exact, folded = _glob(glob), _glob(_fold(glob))

    def one(value: Any, resolve: Resolver | None) -> int:
        if not isinstance(value, str):
            return UNKNOWN
        path = normalize_path(value)
        if path is None:
            return UNKNOWN
        names = [path]
        if resolve is not None:
            real = resolve(path)  # the file a symbolic link leads to is what the call touches
            if real is not None and real != path:
                names.append(real)
        if covering:  # allow: exactly as written (a look-alike is not allowed by accident), and every name
            return YES if all(exact(n) for n in names) else NO
        return YES if any(folded(_fold(n)) for n in names) else NO

    def check(args: dict[str, Any], resolve: Resolver | None) -> int:
        return _over(_values(args, PATH_KEYS), lambda v: one(v, resolve), covering)

    return check


# -- hosts --------------------------------------------------------------------------------------------


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


def _host_check(pattern: str, covering: bool) -> Check:
    match = _glob(pattern)

    def one(value: Any) -> int:
        host = url_host(value) if isinstance(value, str) else None
        if host is None:
            return UNKNOWN
        return YES if match(host) else NO

    def check(args: dict[str, Any], resolve: Resolver | None) -> int:
        return _over(_values(args, URL_KEYS), one, covering)

    return check


# -- JSON pointers --------------------------------------------------------------------------------------


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """RFC 6901: `""` is the whole value, else `/`-separated tokens with `~1` → `/` and `~0` → `~`."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer (it starts with `/`, e.g. `/repo`)")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


def _pointer_check(tokens: tuple[str, ...], match: Callable[[str], Any]) -> Check:
    if len(tokens) == 1:  # the common case, `/repo`: one lookup
        key = tokens[0]

        def top(args: dict[str, Any], resolve: Resolver | None) -> int:
            value = args.get(key, _MISSING)
            if value is _MISSING:
                return NO
            text = value if type(value) is str else _json_text(value)
            if text is None:
                return UNKNOWN
            return YES if match(text) else NO

        return top

    def check(args: dict[str, Any], resolve: Resolver | None) -> int:
        value: Any = args
        for token in tokens:
            if type(value) is dict:
                value = value.get(token, _MISSING)
                if value is _MISSING:
                    return NO
            elif type(value) is list:
                if not token.isdigit() or int(token) >= len(value):
                    return NO
                value = value[int(token)]
            else:
                return NO
        text = value if type(value) is str else _json_text(value)
        if text is None:
            return UNKNOWN
        return YES if match(text) else NO

    return check


def _json_text(value: Any) -> str | None:
    """A non-string value as compact JSON, the text a pointer rule's glob is matched against."""
    if type(value) is int:
        return str(value)
    if value is None or type(value) is bool:
        return "null" if value is None else ("true" if value else "false")
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer beyond 64 bits inside a container: JSON text of our own
        import json

        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            return None
