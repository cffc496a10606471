"""`js` / `node`: real JavaScript (QuickJS through jsbox) as a bashkit builtin.

Each run gets a fresh QuickJS runtime with a heap cap and the call's remaining time. The program
sees `console`, `process` (argv, env of the sandbox shell, exitCode, exit), a `workspace` file API
over the shell's filesystem, ES modules from workspace files, and nothing of the host: no `require`,
no Node built-ins, no network, no timers beyond an in-order `setTimeout`.

QuickJS holds this worker process's interpreter lock while it runs, and one long native operation
(a huge `BigInt` power) ignores its time limit: that is why the shell runs in worker processes the
host can kill. The file API checks the call's budget before each operation, so nothing is written
after the call is stopped; it never writes a file over the shell's file limit and never removes a
workspace root. Nothing the program does raises out of this module: every failure is the command's
error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tooldeck.shell import vfs
from tooldeck.shell.budget import Budget
from tooldeck.shell.js_modules import (
    RUNTIME_MODULE,
    ModuleError,
    build_graph,
    looks_like_module,
    missing_module_message,
)
from tooldeck.shell.js_prelude import PRELUDE
from tooldeck.shell.limits import MIB, ShellLimits
from tooldeck.shell.output import CappedText
from tooldeck.shell.text import REPLACEMENT, well_formed

VERSION = "v0.0.0-quickjs (tooldeck sandbox; QuickJS via jsbox)"
HELP = f"""usage: js [-e CODE | -p EXPR | FILE | -] [ARG...]     (node is the same command)

Runs JavaScript (ES2023, QuickJS) in a fresh sandbox. Files with top-level import/export, and
.mjs files, are ES modules; imports are relative to the importing file ('./lib.js', '../x.mjs').
  console.log/info/debug -> stdout; console.error/warn -> stderr
  process.argv  ['node', FILE, ...ARG]     process.env   the shell's exported variables
  process.exitCode = N / process.exit(N)   process.cwd()
  workspace.readText(path) writeText(path, text) appendText(path, text) exists(path)
           listFiles(dir='.') remove(path) readJSON(path) writeJSON(path, value)
           (paths are relative to the shell's current directory; writeText creates folders)
  import {{ workspace, process }} from '{RUNTIME_MODULE}'
Not available: require, Node built-in modules (fs, path, child_process...), npm packages, fetch or any
network, setInterval; setTimeout callbacks run in order without waiting.
"""

_RUNTIME_MODULE_SOURCE = ("export const workspace = globalThis.workspace; export const process = globalThis.process; "
                          "export const console = globalThis.console; export default globalThis.workspace;")
_NOT_FOUND = re.compile(r"module not found: (.+)")


def _result(stdout: str = "", stderr: str = "", exit_code: int = 0) -> Any:
    from bashkit import BuiltinResult

    return BuiltinResult(stdout, stderr, exit_code)


class _Args:
    def __init__(self) -> None:
        self.code: str | None = None
        self.print_result = False
        self.script: str | None = None
        self.rest: list[str] = []
        self.force_module = False
        self.help = False
        self.version = False


def _parse(argv: list[str]) -> _Args:
    a = _Args()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if a.code is None and a.script is None:
            if arg in ("-e", "--eval", "-p", "--print"):
                if i + 1 >= len(argv):
                    raise ValueError(f"{arg} requires an argument")
                a.code, a.print_result = argv[i + 1], arg in ("-p", "--print")
                i += 2
                continue
            if arg in ("-h", "--help"):
                a.help = True
            elif arg in ("-v", "--version"):
                a.version = True
            elif arg == "--":
                a.script, a.rest = (argv[i + 1], argv[i + 2:]) if i + 1 < len(argv) else (None, [])
                return a
            elif arg == "-" or not arg.startswith("-"):
                a.script, a.rest = arg, argv[i + 1:]
                return a
        if arg == "--input-type=module":
            a.force_module = True
        elif a.code is not None and not arg.startswith("-"):
            a.rest = argv[i:]
            return a
        i += 1  # other node flags (--no-warnings ...) mean nothing here
    return a


class JsProgram:
    """One `js` invocation inside one shell call."""

    def __init__(self, ctx: Any, budget: Budget, limits: ShellLimits, roots: vfs.Roots | None = None,
                 *, replaced_text: bool = False) -> None:
        self.ctx = ctx
        self.fs: vfs.FsHandle = ctx.fs
        self.cwd: str = ctx.cwd or "/"
        self.budget = budget
        self.limits = limits
        self.roots = roots or vfs.Roots()
        self.replaced_text = replaced_text
        self.stdout = CappedText(limits.max_stdout_bytes + 1)
        self.stderr = CappedText(limits.max_stderr_bytes + 1)
        self.exit_code: int | None = None

    # -- host bridge ------------------------------------------------------------------------------
    def _write(self, stream: str, text: Any) -> None:
        (self.stderr if stream == "stderr" else self.stdout).write(well_formed(str(text)))

    def _set_exit(self, code: Any) -> None:
        try:
            self.exit_code = int(code) & 0xFF
        except (TypeError, ValueError, OverflowError):
            self.exit_code = 1

    def _fs(self, op: Any, path: Any, data: Any) -> dict[str, Any]:
        """The bridge behind `workspace.*`: a result or a Node-style error code, never an exception."""
        import errno as errno_mod

        if self.budget.stopped.is_set():
            return {"ok": False, "code": "ETIMEDOUT",
                    "message": "the shell call was stopped (time limit or cancel); no more file operations run"}
        try:
            return {"ok": True, "value": self._fs_op(str(op), vfs.resolve(self.cwd, str(path)), data)}
        except OSError as exc:
            code = errno_mod.errorcode.get(exc.errno or 0, "EIO")
            return {"ok": False, "code": code, "message": well_formed(exc.strerror or str(exc))}
        except Exception as exc:
            return {"ok": False, "code": "EIO", "message": well_formed(f"{type(exc).__name__}: {exc}")}

    def _fs_op(self, op: str, path: str, data: Any) -> Any:
        fs = self.fs
        if op == "readText":
            return vfs.read_text(fs, path, self.limits.max_script_bytes * 4)
        if op in ("writeText", "appendText"):
            vfs.write_bytes(fs, path, well_formed(str(data)).encode("utf-8"), append=op == "appendText",
                            make_parents=True, max_bytes=self.limits.max_file_bytes)
            return None
        if op == "exists":
            return bool(fs.exists(path))
        if op == "listFiles":
            entries = vfs.list_dir(fs, path)
            return sorted(e["name"] + ("/" if e["metadata"].get("file_type") == "directory" else "") for e in entries)
        if op == "remove":
            self.roots.refuse(path)
            vfs.call(fs.remove, path, path, True)
            return None
        raise OSError(22, f"unknown operation {op}")

    # -- run --------------------------------------------------------------------------------------
    def main(self, argv: list[str]) -> Any:
        try:
            args = _parse(argv)
        except ValueError as exc:
            return _result("", f"js: {exc}\n{HELP}", 2)
        if args.help:
            return _result(HELP)
        if args.version:
            return _result(VERSION + "\n")
        try:
            name, source = self._source(args)
        except OSError as exc:
            return _result("", f"js: cannot read {exc.filename}: {exc.strerror}\n", 1)
        if source is None:
            return _result("", f"js: no program given (the sandbox has no REPL)\n{HELP}", 2)
        if self.replaced_text and REPLACEMENT in source and not args.script:
            return _result("", "SyntaxError: the program held a lone surrogate, which is not valid Unicode (the shell "
                               "replaced it by U+FFFD); write it as an escape such as '\\udcff'\n", 1)
        remaining = self.budget.remaining()
        if remaining <= 0:
            return _result("", "js: the shell's time limit was already reached\n", 124)
        try:
            code = self._execute(args, name, source, remaining)
        except Exception as exc:  # jsbox refused a value (e.g. text it cannot convert): this command fails
            self._write("stderr", f"js: {type(exc).__name__}: {exc}\n")
            code = 1
        return _result(self.stdout.text, self.stderr.text, code)

    def _source(self, args: _Args) -> tuple[str, str | None]:
        if args.code is not None:
            return vfs.resolve(self.cwd, "[eval].mjs" if args.force_module else "[eval].js"), args.code
        if args.script and args.script != "-":
            path = vfs.resolve(self.cwd, args.script)
            return path, well_formed(vfs.read_text(self.fs, path, self.limits.max_script_bytes))
        if self.ctx.stdin is not None:
            return vfs.resolve(self.cwd, "[stdin].js"), self.ctx.stdin
        return "", None

    def _execute(self, args: _Args, name: str, source: str, timeout: float) -> int:
        from jsbox import JavaScriptError, JsTimeoutError, Runtime

        rt = Runtime(memory_limit=self.limits.js_memory_bytes, max_stack_size=self.limits.js_stack_bytes, lossy=True)
        rt.bind_function("__tooldeck_write", self._write)
        rt.bind_function("__tooldeck_fs", self._fs)
        rt.bind_function("__tooldeck_exit", self._set_exit)
        argv = ["node", *([name] if args.script else []), *args.rest]
        rt.bind_object("__tooldeck_boot", {"argv": argv, "env": dict(self.ctx.env or {}), "cwd": self.cwd})
        try:
            rt.eval(PRELUDE, timeout=max(timeout, 0.05))
            rt.add_static_module(RUNTIME_MODULE, _RUNTIME_MODULE_SOURCE)
            entry, graph = build_graph(self.fs, name, source, self.limits.max_script_bytes)
            for module_name, module_source in graph.modules.items():
                rt.add_static_module(module_name, module_source)
            remaining = max(self.budget.remaining(), 0.01)
            if args.force_module or looks_like_module(source, name):
                rt.add_static_module(name, entry)
                rt.eval_module(name, timeout=remaining)
            elif args.print_result:  # printed by the prelude's inspect: no JS value crosses into Python
                rt.eval(f"globalThis[Symbol.for('tooldeck.print')]((0, eval)({json.dumps(entry)}))", timeout=remaining)
            else:
                try:
                    rt.eval(entry, timeout=remaining)
                except ValueError as exc:  # the program ran; only its last value (unused) could not be converted
                    if not str(exc).startswith("Conversion"):
                        raise
            rt.eval("Promise.resolve(0)", timeout=max(self.budget.remaining(), 0.01))  # runs pending microtasks
            if self.exit_code is None:
                code = rt.eval("globalThis[Symbol.for('tooldeck.exitCode')]()", timeout=1.0)
                self.exit_code = int(code) & 0xFF if isinstance(code, int | float) else 0
            return self.exit_code
        except JsTimeoutError:
            self._write("stderr", f"js: time limit exceeded ({self.limits.timeout_s:g} s for the whole shell call)\n")
            return 124
        except (ModuleError, OSError) as exc:
            self._write("stderr", f"js: {exc}\n")
            return 1
        except JavaScriptError as exc:
            if self.exit_code is not None:
                return self.exit_code
            self._write("stderr", _describe(exc, self.limits) + "\n")
            return 1
        except RecursionError:
            self._write("stderr", "js: stack overflow\n")
            return 1


def _describe(exc: Any, limits: ShellLimits) -> str:
    name = getattr(exc, "name", None)
    message = getattr(exc, "message", None) or str(exc)
    stack = (getattr(exc, "stack", None) or "").rstrip()
    if name is None and message in ("null", "out of memory"):
        return f"js: out of memory (the heap limit is {limits.js_memory_bytes // MIB} MiB)"
    missing = _NOT_FOUND.search(message)
    if missing:
        return "Uncaught Error: " + missing_module_message(missing.group(1).strip())
    head = f"Uncaught {name}: {message}" if name else f"Uncaught {message}"
    return f"{head}\n{stack}" if stack else head
