"""The public names (issue 18.2): every `__all__` names something importable, the ports an implementer
needs are exported from `tooldeck`, and the ports import no runtime (no import circle)."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tooldeck

SRC = Path(tooldeck.__file__).parent
PUBLIC = ["tooldeck", "tooldeck.runtime", "tooldeck.cli", "tooldeck.protocols", "tooldeck.server", "tooldeck.shell",
          "tooldeck.sources.mcp", "tooldeck.workspace"]
PORTS = {"ToolSource", "StaticSource", "Executable", "Recorder", "CallContext", "InvocationView", "RunState"}


@pytest.mark.parametrize("module_name", PUBLIC)
def test_every_name_in_all_is_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert len(names) == len(set(names)), f"{module_name}.__all__ repeats a name"
    missing = [n for n in names if getattr(module, n, None) is None]
    assert missing == [], f"{module_name}.__all__ names what it does not have"


def test_the_ports_are_exported_from_tooldeck() -> None:
    assert set(tooldeck.__all__) >= PORTS
    from tooldeck.catalog.sources import CallContext, Executable, InvocationView, ToolSource
    from tooldeck.records.port import Recorder

    assert (tooldeck.ToolSource, tooldeck.Executable, tooldeck.Recorder, tooldeck.CallContext,
            tooldeck.InvocationView) == (ToolSource, Executable, Recorder, CallContext, InvocationView)
    assert set(dir(tooldeck)) >= PORTS
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        tooldeck.NoSuchName  # noqa: B018


def test_the_runtime_re_exports_its_public_names() -> None:
    from tooldeck import runtime

    assert set(runtime.__all__) == {"Call", "Invocation", "RunState", "Runtime", "ToolId", "open"}
    assert runtime.Invocation.__module__ == "tooldeck.invocation"
    assert runtime.Call.__module__ == "tooldeck.wire"
    assert runtime.RunState.__module__ == "tooldeck.catalog.runs"


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, TYPE_CHECKING blocks and function bodies included."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_ports_never_import_the_runtime_even_for_types() -> None:
    for rel in ("catalog/sources.py", "catalog/runs.py", "records/port.py", "wire.py"):
        imported = _imported_modules(SRC / rel)
        assert not imported & {"tooldeck.runtime", "tooldeck.invocation"}, rel


def test_importing_a_port_loads_no_runtime() -> None:
    code = ("import sys, json, tooldeck\nfrom tooldeck import ToolSource, CallContext, InvocationView, Executable\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tooldeck'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert "tooldeck.catalog.sources" in loaded
    assert not loaded & {"tooldeck.runtime", "tooldeck.invocation", "tooldeck.dispatch", "tooldeck.gate"}


def test_the_hook_types_a_host_writes_hooks_with_are_exported_from_tooldeck(tmp_path: Path) -> None:
    """Issue 19 follow-up: a host writes hooks with `tooldeck.*` names only, and they work."""
    from tooldeck.catalog.profile import HookSpec
    from tooldeck.policy.hooks import Hook, HookAnswer, HookCall, Hooks

    assert set(tooldeck.__all__) >= {"Hook", "HookAnswer", "HookCall", "HookSpec", "Hooks"}
    assert (tooldeck.Hook, tooldeck.HookAnswer, tooldeck.HookCall, tooldeck.HookSpec, tooldeck.Hooks) == (
        Hook, HookAnswer, HookCall, HookSpec, Hooks)
    seen: list[tooldeck.HookCall] = []

    def deny_big(call: tooldeck.HookCall) -> tooldeck.HookAnswer | None:
        seen.append(call)
        return tooldeck.HookAnswer("deny", "too big") if call.arguments["a"] > 9 else None

    spec = tooldeck.HookSpec(event="pre_call", tool="extension/*", name="tag",
                             command=[sys.executable, "-c", "print('{\"context\": \"checked by the spec\"}')"])
    profile = tooldeck.Profile(hooks=[spec])
    with tooldeck.Runtime(tmp_path / "home", records=False, profile=profile,
                          hooks=[tooldeck.Hook.python("pre_call", deny_big, "extension/*")]) as rt:
        @rt.tool("ext")
        def add(a: int, b: int) -> int:
            return a + b

        inv = rt.invocation()
        [ok, denied] = inv.run([{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}},
                                {"id": "c2", "name": "add", "arguments": {"a": 10, "b": 2}}])
    assert ok.content == "3\n\nchecked by the spec", ok.content  # the Python hook, then the Profile's executable
    assert denied.error_code == "hook.denied" and "too big" in denied.content
    assert [c.call_id for c in seen] == ["c1", "c2"]


def test_importing_the_hook_types_loads_no_runtime() -> None:
    code = ("import sys, json\nfrom tooldeck import Hook, HookAnswer, HookCall\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tooldeck'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    loaded = set(json.loads(out.splitlines()[-1]))
    assert "tooldeck.policy.hooks" in loaded
    assert not loaded & {"tooldeck.runtime", "tooldeck.invocation", "tooldeck.dispatch", "tooldeck.gate"}
