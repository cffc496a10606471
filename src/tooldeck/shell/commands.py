"""Shell commands of our own that replace bashkit's: `rm`, `rmdir` and `sleep`.

bashkit's `rm -r /output` removes the mounted folder itself (the mount's root), and its `sleep`
ignores a cancel until it has slept. These versions refuse to remove `/` or a mount point (EBUSY,
the error a real system gives for a mount point) while removing everything else as GNU coreutils
would, and `sleep` wakes as soon as the call is stopped. Each is a custom builtin, so `command rm`,
`xargs rm` and `find -exec rm` get them too.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from tooldeck.shell import vfs
from tooldeck.shell.budget import Budget

RM_HELP = """Usage: rm [OPTION]... [FILE]...
Remove (unlink) the FILE(s).

  -f, --force           ignore nonexistent files and arguments, never prompt
  -r, -R, --recursive   remove directories and their contents recursively
  -d, --dir             remove empty directories
  -v, --verbose         explain what is being done
      --help            display this help and exit

The workspace roots (/output, /scratch, ...) and / cannot be removed; their contents can:
rm -rf /output/* or find /output -mindepth 1 -delete.
"""
RMDIR_HELP = """Usage: rmdir [OPTION]... DIRECTORY...
Remove the DIRECTORY(ies), if they are empty.

      --ignore-fail-on-non-empty  ignore each failure that is solely because a directory is non-empty
  -p, --parents   remove DIRECTORY and its ancestors
  -v, --verbose   output a diagnostic for every directory processed
      --help      display this help and exit
"""
SLEEP_HELP = """Usage: sleep NUMBER[SUFFIX]...
Pause for NUMBER seconds (s), minutes (m), hours (h) or days (d); several are added up. NUMBER may
be a floating-point number. The shell call's time limit still applies.
"""


def _result(stdout: str = "", stderr: str = "", exit_code: int = 0) -> Any:
    from bashkit import BuiltinResult

    return BuiltinResult(stdout, stderr, exit_code)


@dataclass
class _Options:
    flags: set[str] = field(default_factory=set)
    operands: list[str] = field(default_factory=list)
    error: str | None = None


def _options(argv: list[str], short: dict[str, str], long: dict[str, str]) -> _Options:
    """GNU-style parsing: options anywhere before `--`, bundled short flags."""
    out = _Options()
    rest = False
    for arg in argv:
        if rest or arg == "-" or not arg.startswith("-"):
            out.operands.append(arg)
        elif arg == "--":
            rest = True
        elif arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if name not in long:
                out.error = f"unrecognized option '{arg}'"
                return out
            out.flags.add(long[name])
        else:
            for ch in arg[1:]:
                if ch not in short:
                    out.error = f"invalid option -- '{ch}'"
                    return out
                out.flags.add(short[ch])
    return out


class _Remover:
    def __init__(self, ctx: Any, roots: vfs.Roots, name: str) -> None:
        self.fs: vfs.FsHandle = ctx.fs
        self.cwd: str = ctx.cwd or "/"
        self.roots = roots
        self.name = name
        self.out: list[str] = []
        self.err: list[str] = []

    def fail(self, what: str, arg: str, reason: str) -> None:
        self.err.append(f"{self.name}: {what} '{arg}': {reason}\n")

    def guarded(self, path: str) -> bool:
        return self.roots.protected(path)

    def result(self) -> Any:
        return _result("".join(self.out), "".join(self.err), 1 if self.err else 0)


_BUSY = "Device or resource busy (a workspace root cannot be removed; its contents can: rm -rf {arg}/*)"


def rm(ctx: Any, roots: vfs.Roots) -> Any:
    opts = _options(list(ctx.argv), {"f": "force", "r": "recursive", "R": "recursive", "d": "dir", "v": "verbose",
                                     "i": "interactive", "I": "interactive"},
                    {"--force": "force", "--recursive": "recursive", "--dir": "dir", "--verbose": "verbose",
                     "--interactive": "interactive", "--preserve-root": "preserve", "--no-preserve-root": "nopreserve",
                     "--one-file-system": "onefs", "--help": "help"})
    if opts.error:
        return _result("", f"rm: {opts.error}\nTry 'rm --help' for more information.\n", 1)
    if "help" in opts.flags:
        return _result(RM_HELP)
    force, recursive = "force" in opts.flags, "recursive" in opts.flags
    if not opts.operands:
        return _result() if force else _result("", "rm: missing operand\nTry 'rm --help' for more information.\n", 1)
    r = _Remover(ctx, roots, "rm")
    for arg in opts.operands:
        if posixpath.basename(arg.rstrip("/")) in (".", ".."):
            r.err.append(f"rm: refusing to remove '.' or '..' directory: skipping '{arg}'\n")
            continue
        try:
            path = vfs.resolve(r.cwd, arg)
        except OSError as exc:
            r.fail("cannot remove", arg, exc.strerror or str(exc))
            continue
        if path == "/" and recursive:
            r.err.append("rm: it is dangerous to operate recursively on '/'\n"
                         "rm: the workspace root cannot be removed; remove what is in it instead\n")
            continue
        try:
            info = r.fs.stat(path)
        except Exception:
            if not force:
                r.fail("cannot remove", arg, "No such file or directory")
            continue
        is_dir = info.get("file_type") == "directory"
        if is_dir and r.guarded(path):
            r.fail("cannot remove", arg, _BUSY.format(arg=arg.rstrip("/") or "/"))
            continue
        try:
            if is_dir and not recursive:
                if "dir" not in opts.flags:
                    r.fail("cannot remove", arg, "Is a directory")
                    continue
                if vfs.list_dir(r.fs, path):
                    r.fail("cannot remove", arg, "Directory not empty")
                    continue
            vfs.call(r.fs.remove, path, path, is_dir)
        except OSError as exc:
            r.fail("cannot remove", arg, exc.strerror or str(exc))
            continue
        if "verbose" in opts.flags:
            r.out.append(f"removed directory '{arg}'\n" if is_dir else f"removed '{arg}'\n")
    return r.result()


def rmdir(ctx: Any, roots: vfs.Roots) -> Any:
    opts = _options(list(ctx.argv), {"p": "parents", "v": "verbose"},
                    {"--parents": "parents", "--verbose": "verbose", "--ignore-fail-on-non-empty": "ignore",
                     "--help": "help"})
    if opts.error:
        return _result("", f"rmdir: {opts.error}\nTry 'rmdir --help' for more information.\n", 1)
    if "help" in opts.flags:
        return _result(RMDIR_HELP)
    if not opts.operands:
        return _result("", "rmdir: missing operand\nTry 'rmdir --help' for more information.\n", 1)
    r = _Remover(ctx, roots, "rmdir")

    def one(arg: str) -> bool:
        try:
            path = vfs.resolve(r.cwd, arg)
        except OSError as exc:
            r.fail("failed to remove", arg, exc.strerror or str(exc))
            return False
        if r.guarded(path):
            r.fail("failed to remove", arg, _BUSY.format(arg=arg.rstrip("/") or "/"))
            return False
        try:
            info = r.fs.stat(path)
        except Exception:
            r.fail("failed to remove", arg, "No such file or directory")
            return False
        if info.get("file_type") != "directory":
            r.fail("failed to remove", arg, "Not a directory")
            return False
        try:
            if vfs.list_dir(r.fs, path):
                if "ignore" not in opts.flags:
                    r.fail("failed to remove", arg, "Directory not empty")
                return False
            if "verbose" in opts.flags:
                r.out.append(f"rmdir: removing directory, '{arg}'\n")
            vfs.call(r.fs.remove, path, path, False)
        except OSError as exc:
            r.fail("failed to remove", arg, exc.strerror or str(exc))
            return False
        return True

    for arg in opts.operands:
        if not one(arg) or "parents" not in opts.flags:
            continue
        parent = posixpath.dirname(arg.rstrip("/"))
        while parent and parent not in ("/", ".", "..") and one(parent):
            parent = posixpath.dirname(parent)
    return r.result()


_INTERVAL = re.compile(r"^(?:(\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?)([smhd]?)$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def sleep_seconds(argv: list[str]) -> float | str:
    """The total pause, or an error message."""
    if not argv:
        return "sleep: missing operand\nTry 'sleep --help' for more information.\n"
    total = 0.0
    for arg in argv:
        m = _INTERVAL.match(arg)
        if m is None:
            return f"sleep: invalid time interval '{arg}'\nTry 'sleep --help' for more information.\n"
        number = arg[: len(arg) - len(m.group(2))]
        total += float("inf" if number.startswith("inf") else number) * _UNIT[m.group(2)]
    return total


async def sleep(ctx: Any, budget: Budget) -> Any:
    argv = list(ctx.argv)
    if argv[:1] == ["--help"]:
        return _result(SLEEP_HELP)
    seconds = sleep_seconds(argv)
    if isinstance(seconds, str):
        return _result("", seconds, 1)
    import asyncio  # here, not at the top: it costs a worker ~0.1 s to start, and bashkit loads it anyway to sleep

    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    unregister = budget.on_stop(lambda: loop.call_soon_threadsafe(wake))
    try:
        await asyncio.wait([woken], timeout=None if seconds == float("inf") else seconds)
    finally:
        unregister()
    return _result()
