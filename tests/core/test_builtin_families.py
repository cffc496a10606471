"""Optional builtin families load only when a Profile allows one of their tools (start-up, issue 13 item 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tooldeck
from tooldeck.builtins import CORE_FAMILIES, OPTIONAL_FAMILIES, family_tools
from tooldeck.catalog.profile import DEFAULT_ALLOW


def test_the_family_table_names_exactly_each_modules_tools() -> None:
    for name, ids in OPTIONAL_FAMILIES.items():
        assert tuple(str(t.descriptor.id) for t in family_tools(name)) == ids, name
    core = {str(t.descriptor.id) for name in CORE_FAMILIES for t in family_tools(name)}
    optional = {tid for ids in OPTIONAL_FAMILIES.values() for tid in ids}
    assert not core & optional
    # the default Profile needs no optional family
    assert not [tid for tid in optional if tid in DEFAULT_ALLOW]


def test_a_default_runtime_offers_no_optional_tool_and_a_profile_that_allows_one_loads_it(tmp_path: Path) -> None:
    rt = tooldeck.Runtime(tmp_path, records=False)
    ids = set(rt.catalog.descriptors())
    assert "builtin:dice.roll" in ids and "builtin:http_request" not in ids
    inv = rt.invocation(profile={"allow": ["builtin:http_request", "builtin:dice.roll"]})
    assert set(inv.call_names()) == {"http_request", "dice_roll"}
    assert "builtin:http_request" in rt.catalog.descriptors() and "builtin:calculate" not in rt.catalog.descriptors()
    # a glob loads every family it reaches
    every = rt.invocation(profile={"allow": ["builtin:*"], "builtins": "both"})
    assert {"calculate", "find_files", "html_template"} <= set(every.call_names())
    # the default invocation after that still gets the default tools only (the snapshot follows the Profile)
    assert "http_request" not in rt.invocation().call_names()
    rt.close()


def test_a_runtimes_own_profile_loads_its_families_at_once(tmp_path: Path) -> None:
    rt = tooldeck.Runtime(tmp_path, records=False, profile={"allow": ["builtin:calculate"]})
    assert "builtin:calculate" in rt.catalog.descriptors()
    assert rt.invocation().run([{"id": "c", "name": "calculate", "arguments": {"expressions": ["2**10"]}}])[0]
    rt.close()


def test_tooldeck_call_imports_no_optional_family(tmp_path: Path) -> None:
    code = ("import sys, json, tooldeck; rt = tooldeck.Runtime(sys.argv[1], records=False); "
            "rt.invocation().run([{'id': 'c', 'name': 'dice_roll', 'arguments': {'formula': 'd6'}}]); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tooldeck.builtins.'))))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    loaded = {m.split(".")[2] for m in json.loads(out.splitlines()[-1])}
    assert not loaded & set(OPTIONAL_FAMILIES), loaded & set(OPTIONAL_FAMILIES)
