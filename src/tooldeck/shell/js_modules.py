"""ES module loading for the `js` builtin.

jsbox only imports modules registered under an exact name. This module walks a program's import
graph through the shell's filesystem, registers every workspace module under its absolute path,
and rewrites relative specifiers (`./lib.js`, `../x.mjs`) to those absolute names. Specifiers that do
not name a workspace file are left alone: a real import of one fails at run time with a clear
message, a look-alike inside a string or comment does no harm.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from tooldeck.shell import vfs

RUNTIME_MODULE = "@tooldeck/runtime"
MAX_MODULES = 256
_SPECIFIER = re.compile(
    r"""(?P<pre>\bimport\s*\(\s*|\bimport\s+|\bfrom\s*)(?P<q>['"])(?P<spec>[^'"\n]{1,1024})(?P=q)""")
_MODULE_SYNTAX = re.compile(r"""^\s*(?:import\s*[\w*{'"$]|export\s+[\w*{$])""", re.M)
_EXTENSIONS = ("", ".js", ".mjs", "/index.js", "/index.mjs")


def looks_like_module(source: str, path: str | None = None) -> bool:
    """A `.mjs` file, or source with a top-level `import`/`export` statement."""
    return bool(path and path.endswith(".mjs")) or bool(_MODULE_SYNTAX.search(source))


class ModuleError(Exception):
    pass


@dataclass
class ModuleGraph:
    """Modules to register, name → rewritten source, in discovery order."""

    modules: dict[str, str] = field(default_factory=dict)


def _candidates(importer: str, spec: str) -> list[str]:
    if spec.startswith("/"):
        base = posixpath.normpath(spec)
    elif spec.startswith(("./", "../")) or spec in (".", ".."):
        base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
    else:
        return []
    return [base + ext for ext in _EXTENSIONS]


def build_graph(fs: vfs.FsHandle, entry_name: str, entry_source: str, max_bytes: int) -> tuple[str, ModuleGraph]:
    """The entry's rewritten source and every workspace module it reaches."""
    graph = ModuleGraph()
    pending: list[tuple[str, str]] = [(entry_name, entry_source)]
    seen = {entry_name}
    rewritten_entry = ""
    total = 0
    while pending:
        name, source = pending.pop()
        total += len(source)
        if total > max_bytes:
            raise ModuleError(f"the modules of this program exceed {max_bytes} bytes in all")

        def replace(m: re.Match[str], importer: str = name) -> str:
            spec = m["spec"]
            for path in _candidates(importer, spec):
                if vfs.is_file(fs, path):
                    if path not in seen:
                        if len(seen) >= MAX_MODULES:
                            raise ModuleError(f"more than {MAX_MODULES} modules are imported")
                        seen.add(path)
                        pending.append((path, vfs.read_text(fs, path, max_bytes)))
                    return f"{m['pre']}{m['q']}{path}{m['q']}"
            return m.group(0)

        text = _SPECIFIER.sub(replace, source)
        if name == entry_name:
            rewritten_entry = text
        else:
            graph.modules[name] = text
    return rewritten_entry, graph


def missing_module_message(spec: str) -> str:
    if spec.startswith(("./", "../", "/")):
        return (f"Cannot find module '{spec}': no such file in the workspace. Imports are resolved relative to the "
                "importing file; check the path and the extension.")
    return (f"Cannot find module '{spec}': only workspace files (import {{ x }} from './lib.js') and "
            f"'{RUNTIME_MODULE}' can be imported; there are no Node built-in modules or npm packages.")
