"""Every simple command a bash command line would run, for argument rules (docs/configuration.md, "Rules").

bashkit's parser (`Bash.analyze`) finds the simple commands of pipelines, lists, subshells, command
and process substitutions, function bodies and compound commands. On top of it this module:

- re-parses the literal script of `eval`, `sh -c` / `bash -c` (and the other shells), `trap`, and the
  command after `command`, `builtin`, `exec`, `env`, `nice`, `nohup`, `time`, `timeout`, `stdbuf`,
  `xargs`, `sudo`, and `find -exec`, so a denied command cannot hide behind them;
- names a command by its last path segment (`/bin/rm` is `rm`);
- says when it cannot be sure (`certain=False`): a parse error, a computed command name, brace or
  glob characters in a name, `source`, `alias`, a script too large to analyse, a non-literal script
  for `eval` / `sh -c`. Rules treat that as `ask`.

A word that is not literal (`$X`, `$(…)`) is `None` in `SimpleCommand.words`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

MAX_DEPTH = 8
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "sudo", "doas", "xargs"})
OPAQUE = frozenset({"source", ".", "alias"})
_NAME_UNSURE = set("*?[]{}~$`\\")
_VALUE_OPTIONS = frozenset({"-n", "-o", "-e", "-s", "-k", "-u", "-g", "-I", "-L", "-P", "-d", "-E", "-a", "-C"})
"""Options of the wrappers that take a value (nice -n 5, stdbuf -o L, timeout -s KILL, sudo -u x, xargs -I {})."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    words: tuple[str | None, ...]
    """The name (last path segment) and the arguments; None for a word that is not literal."""

    @property
    def name(self) -> str | None:
        return self.words[0] if self.words else None

    def text(self) -> str:
        return " ".join(w if w is not None else "<?>" for w in self.words)


@dataclass(frozen=True, slots=True)
class CommandLine:
    commands: tuple[SimpleCommand, ...]
    certain: bool
    """False: something may run that `commands` does not show (see the module docstring)."""
    why: str = ""


@functools.lru_cache(maxsize=1)
def _parser() -> object:
    import bashkit

    return bashkit.Bash()


@functools.lru_cache(maxsize=256)
def simple_commands(script: str) -> CommandLine:
    found: list[SimpleCommand] = []
    why: list[str] = []
    _walk(script, found, why, 0)
    return CommandLine(tuple(found), not why, "; ".join(dict.fromkeys(why)))


def _walk(script: str, found: list[SimpleCommand], why: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        why.append("commands nested too deep")
        return
    try:
        analysis = _parser().analyze(script)  # type: ignore[attr-defined]
    except Exception:  # bashkit.BashError: does not parse — never "no commands"
        why.append("the command line does not parse")
        return
    if analysis.truncated:
        why.append("the command line is too large to analyse")
    for cmd in analysis.commands:
        name = cmd.name
        if name is None:
            if cmd.args or analysis.has_dynamic_commands:
                why.append("a command name is computed at run time")
            continue  # an assignment only, or the parser's empty command after `&`
        _command(_base(name), list(cmd.args), found, why, depth)


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1] if "/" in name.rstrip("/") else name


def _command(name: str, args: list[str | None], found: list[SimpleCommand], why: list[str], depth: int) -> None:
    if any(c in _NAME_UNSURE for c in name):
        why.append(f"the command name `{name}` is expanded at run time")
    found.append(SimpleCommand((name, *args)))
    if name in OPAQUE:
        why.append(f"`{name}` runs commands that are not on the line")
    elif name == "eval":
        _script(args, found, why, depth, "eval")
    elif name == "trap":
        _script(args[:1], found, why, depth, "trap")
    elif name in SHELLS:
        if "-c" in args:
            i = args.index("-c")
            _script(args[i + 1:i + 2], found, why, depth, f"{name} -c")
        else:
            why.append(f"`{name}` runs a script from a file or its input")
    elif name in WRAPPERS:
        _inner(_skip_options(args), found, why, depth)
    elif name == "env":
        rest = _skip_options(args)
        while rest and rest[0] is not None and "=" in rest[0]:
            rest = rest[1:]
        _inner(rest, found, why, depth)
    elif name in ("nice", "stdbuf", "timeout"):
        rest = _skip_options(args)
        if name == "timeout" and rest:
            rest = rest[1:]  # the duration
        _inner(rest, found, why, depth)
    elif name == "find":
        for flag in ("-exec", "-execdir", "-ok", "-okdir"):
            for i, a in enumerate(args):
                if a == flag:
                    end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
                    _inner(args[i + 1:end], found, why, depth)


def _skip_options(args: list[str | None]) -> list[str | None]:
    i = 0
    while i < len(args) and args[i] is not None and args[i].startswith("-"):  # type: ignore[union-attr]
        if args[i] == "--":
            return args[i + 1:]
        i += 1
        if i < len(args) and args[i - 1] in _VALUE_OPTIONS:
            i += 1  # the option's value (nice -n 5, stdbuf -o L, timeout -s KILL, sudo -u x)
    return args[i:]


def _inner(words: list[str | None], found: list[SimpleCommand], why: list[str], depth: int) -> None:
    if not words:
        return
    if words[0] is None:
        why.append("a wrapped command's name is computed at run time")
        return
    _command(_base(words[0]), words[1:], found, why, depth + 1)


def _script(args: list[str | None], found: list[SimpleCommand], why: list[str], depth: int, what: str) -> None:
    if not args:
        return
    if any(a is None for a in args):
        why.append(f"`{what}` runs a script computed at run time")
        return
    _walk(" ".join(a for a in args if a is not None), found, why, depth + 1)
