"""The public names of `tooldeck.agent`: each importable, and none of them loaded by the import itself."""

from __future__ import annotations

import json
import subprocess
import sys

import tooldeck.agent


def test_every_exported_name_is_importable() -> None:
    assert len(set(tooldeck.agent.__all__)) == len(tooldeck.agent.__all__)
    assert [n for n in tooldeck.agent.__all__ if getattr(tooldeck.agent, n, None) is None] == []
    assert set(dir(tooldeck.agent)) >= set(tooldeck.agent.__all__)


def test_importing_the_package_loads_no_http_client() -> None:
    code = ("import json, sys, tooldeck.agent; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'rich'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == []
