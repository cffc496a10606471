"""`chmod` of our own, replacing bashkit's: the workspace roots and `/` keep their permissions.

bashkit's `chmod 000 /output` changes the mounted folder on the host, which the file tools (and a
host that does not run as root) then cannot open. This version changes every other file as GNU
coreutils would (octal and symbolic modes, `-R`, `-v`, `-c`, `-f`) and refuses a root with EBUSY,
the error a real system gives for a mount point; `-R` on `/` or a root changes what is inside.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from tooldeck.shell import vfs
from tooldeck.shell.commands import _options, _result

CHMOD_HELP = """Usage: chmod [OPTION]... MODE[,MODE]... FILE...
Change the mode of each FILE to MODE.

  -c, --changes         like verbose but report only when a change is made
  -f, --silent, --quiet suppress most error messages
  -v, --verbose         output a diagnostic for every file processed
  -R, --recursive       change files and directories recursively
      --help            display this help and exit

MODE is octal (755) or symbolic ([ugoa]*[-+=][rwxXst]*, comma-separated: u+x,go-w).
The workspace roots (/output, /scratch, ...) and / keep their mode; what is in them can change:
chmod -R go-w /output changes every file under /output.
"""

_SYMBOLIC = re.compile(r"^[ugoa]*([-+=][rwxXst]*)+$")
_WHO = {"u": 0o4700, "g": 0o2070, "o": 0o1007}
_PERM = {"r": 0o444, "w": 0o222, "x": 0o111, "s": 0o6000, "t": 0o1000}
_BUSY = "Device or resource busy (a workspace root keeps its mode; what is in it can change: chmod -R MODE {arg})"


def parse_mode(text: str) -> str | None:
    """None when `text` is a valid mode, else why not."""
    if re.fullmatch(r"[0-7]{1,4}", text):
        return None
    if all(_SYMBOLIC.match(part) for part in text.split(",")):
        return None
    return f"invalid mode: '{text}'"


def apply_mode(text: str, mode: int, is_dir: bool) -> int:
    """The permission bits `text` (already valid) gives a file whose bits are `mode`."""
    if re.fullmatch(r"[0-7]{1,4}", text):
        return int(text, 8)
    for part in text.split(","):
        who_text = re.match(r"[ugoa]*", part).group(0)  # type: ignore[union-attr]
        who = 0
        for w in who_text.replace("a", "ugo") or "ugo":
            who |= _WHO[w]
        for op, perms in re.findall(r"([-+=])([rwxXst]*)", part[len(who_text):]):
            bits = 0
            for p in perms:
                if p == "X":
                    if is_dir or mode & 0o111:
                        bits |= 0o111
                else:
                    bits |= _PERM[p]
            bits &= who
            if op == "+":
                mode |= bits
            elif op == "-":
                mode &= ~bits
            else:
                mode = (mode & ~(who & 0o7777)) | bits
    return mode & 0o7777


def chmod(ctx: Any, roots: vfs.Roots) -> Any:
    argv = list(ctx.argv)
    # A mode like `-w` or `-x` looks like an option: GNU takes the first such word as the mode.
    mode_text = next((a for a in argv if a.startswith("-") and not a.startswith("--") and _SYMBOLIC.match(a)), None)
    if mode_text is not None:
        argv.remove(mode_text)
    opts = _options(argv, {"c": "changes", "f": "silent", "v": "verbose", "R": "recursive"},
                    {"--changes": "changes", "--silent": "silent", "--quiet": "silent", "--verbose": "verbose",
                     "--recursive": "recursive", "--help": "help"})
    if opts.error:
        return _result("", f"chmod: {opts.error}\nTry 'chmod --help' for more information.\n", 1)
    if "help" in opts.flags:
        return _result(CHMOD_HELP)
    operands = opts.operands
    if mode_text is None:
        if not operands:
            return _result("", "chmod: missing operand\nTry 'chmod --help' for more information.\n", 1)
        mode_text = operands.pop(0)
    if not operands:
        return _result("", f"chmod: missing operand after '{mode_text}'\nTry 'chmod --help' for more information.\n", 1)
    problem = parse_mode(mode_text)
    if problem is not None:
        return _result("", f"chmod: {problem}\nTry 'chmod --help' for more information.\n", 1)
    job = _Chmod(ctx.fs, ctx.cwd or "/", roots, mode_text, opts.flags)
    for arg in operands:
        job.operand(arg)
    return _result("".join(job.out), "".join(job.err), 1 if job.failed else 0)


class _Chmod:
    def __init__(self, fs: vfs.FsHandle, cwd: str, roots: vfs.Roots, mode_text: str, flags: set[str]) -> None:
        self.fs, self.cwd, self.roots, self.mode_text, self.flags = fs, cwd, roots, mode_text, flags
        self.out: list[str] = []
        self.err: list[str] = []
        self.failed = False

    def fail(self, message: str) -> None:
        self.failed = True
        if "silent" not in self.flags:
            self.err.append(f"chmod: {message}\n")

    def operand(self, arg: str) -> None:
        try:
            path = vfs.resolve(self.cwd, arg)
            info = self.fs.stat(path)
        except Exception:
            self.fail(f"cannot access '{arg}': No such file or directory")
            return
        self.one(arg, path, info)

    def one(self, shown: str, path: str, info: dict[str, Any]) -> None:
        is_dir = info.get("file_type") == "directory"
        if is_dir and self.roots.protected(path):
            if "recursive" not in self.flags:
                self.fail(f"changing permissions of '{shown}': {_BUSY.format(arg=shown.rstrip('/') or '/')}")
                return
        elif info.get("file_type") != "symlink":  # GNU chmod leaves symlinks (and what -R meets of them) alone
            old = int(info.get("mode") or (0o755 if is_dir else 0o644)) & 0o7777
            new = apply_mode(self.mode_text, old, is_dir)
            try:
                if new != old:
                    vfs.call(self.fs.chmod, path, path, new)  # type: ignore[attr-defined]
            except OSError as exc:
                self.fail(f"changing permissions of '{shown}': {exc.strerror or exc}")
                return
            if "verbose" in self.flags or ("changes" in self.flags and new != old):
                verb = "changed" if new != old else "retained"
                self.out.append(f"mode of '{shown}' {verb} from {old:04o} to {new:04o}\n" if new != old
                                else f"mode of '{shown}' {verb} as {new:04o}\n")
        if is_dir and "recursive" in self.flags:
            try:
                entries = vfs.list_dir(self.fs, path)
            except OSError as exc:
                self.fail(f"cannot read directory '{shown}': {exc.strerror or exc}")
                return
            for entry in entries:
                name = entry.get("name") or ""
                child = posixpath.join(path, name)
                try:
                    child_info = self.fs.stat(child)
                except Exception:
                    continue
                self.one(posixpath.join(shown, name), child, child_info)
