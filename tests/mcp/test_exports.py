"""`tooldeck.sources.mcp` exports what an integration needs (as httpx's `tests/test_exported_members.py`
holds httpx to its `__all__`): `__all__` is exactly the package's public names, and the integrations
in this repository (the CLI, `tooldeck serve`) import nothing else from it."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import tooldeck.sources.mcp as mcp

SRC = Path(mcp.__file__).resolve().parents[2]
INTEGRATIONS = [SRC / "cli", SRC / "server"]


def test_all_is_exactly_the_public_names() -> None:
    # the names are imported on first use, so `dir()` (the package's `__dir__`) is what a user sees
    public = [name for name in dir(mcp)
              if not name.startswith("_") and (not isinstance(getattr(mcp, name), ModuleType) or name == "errors")]
    assert sorted(mcp.__all__) == sorted(public)  # the order is ruff's (RUF022)


def test_every_export_is_usable() -> None:
    assert isinstance(mcp.errors, ModuleType) and mcp.errors.NOT_SENT == "mcp.not_sent"
    assert issubclass(mcp.McpConfigError, ValueError) and mcp.McpManager.kind == "mcp"
    assert [name for name in mcp.__all__ if getattr(mcp, name, None) is None] == []


def _imports_from_mcp(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from tooldeck.sources.mcp[...] import name` in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.module, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
            and node.module.startswith("tooldeck.sources.mcp") for alias in node.names]


def test_integrations_need_only_the_exports() -> None:
    files = [p for root in INTEGRATIONS for p in sorted(root.rglob("*.py"))]
    found = [(p.relative_to(SRC), module, name) for p in files for module, name in _imports_from_mcp(p)]
    assert found, "no integration imports the MCP package any more: update INTEGRATIONS"
    assert [f for f in found if f[2] not in mcp.__all__] == []
