"""Each adapter is behind its own extra: `import tooldeck` loads no adapter and no framework, and an
adapter whose framework is missing says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_tooldeck_loads_no_adapter_and_no_framework(tmp_path: object) -> None:
    done = run_python(
        "import sys, tooldeck\n"
        f"rt = tooldeck.open({str(tmp_path)!r}, records=False); rt.invocation().tools(); rt.close()\n"
        "frameworks = ('agents', 'pydantic_ai', 'langchain_core', 'langgraph')\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in frameworks or m.startswith('tooldeck.adapters')]\n"
        "print(loaded)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(("module", "framework", "extra"), [
    ("openai_agents", "agents", "openai-agents"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ("langchain", "langchain_core", "langchain"),
])
def test_a_missing_framework_names_the_extra_to_install(module: str, framework: str, extra: str) -> None:
    done = run_python(
        f"import sys; sys.modules[{framework!r}] = None\n"
        "try:\n"
        f"    import tooldeck.adapters.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    print('imported')")
    assert done.returncode == 0, done.stderr
    assert f"pip install 'tooldeck[{extra}]'" in done.stdout, done.stdout


@pytest.mark.parametrize("module", ["openai_agents", "pydantic_ai", "langchain"])
def test_each_adapter_imports_with_its_framework(module: str) -> None:
    done = run_python(f"import tooldeck.adapters.{module}")
    assert done.returncode == 0, done.stderr
