"""`make install` says what it installs, step by step, and lets pip print its progress (issue 13.7); `make test`
runs the Node tests or fails, never skips them (issue 18)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_NODE, node_missing

from .support import ROOT


def test_make_install_announces_each_step_and_runs_pip_without_quiet(tmp_path: Path) -> None:
    # -n: print the recipes without running them; -B: as if nothing were installed yet
    plan = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), "install", f"VENV={tmp_path / 'venv'}",
                           f"PYTHON={sys.executable}"], capture_output=True, text=True, timeout=60, check=True).stdout
    steps = re.findall(r"\[(\d)/(\d)\] ([^'\"]+)", plan)
    assert [(int(n), int(total)) for n, total, _ in steps] == [(1, 4), (2, 4), (3, 4), (4, 4)], plan
    pips = [line for line in plan.splitlines() if " install " in line and "pip" in line]
    assert len(pips) >= 3
    assert [line for line in pips if re.search(r"(^|\s)(-q|--quiet)(\s|$)", line)] == []
    # each step's banner comes before the commands it announces
    assert plan.index("[2/4]") < plan.index("-e '.[test]'") < plan.index("[3/4]") < plan.index("--no-deps")


def _path_without_node(tmp_path: Path) -> str:
    """A PATH with what the install scripts use, and no node or npm."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "cat", "grep", "mkdir"):
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    assert shutil.which("npm", path=str(bin_dir)) is None and shutil.which("node", path=str(bin_dir)) is None
    return str(bin_dir)


def test_without_npm_the_node_step_of_make_stops_and_says_what_to_install(tmp_path: Path) -> None:
    make = shutil.which("make")
    assert make is not None
    out = subprocess.run([make, "-C", str(ROOT), "node-tools"], env={"PATH": _path_without_node(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0, out.stdout + out.stderr
    assert "install-node-tools: npm node not found on PATH" in out.stderr
    assert "apt-get install -y npm" in out.stderr
    assert "install-conformance" not in out.stdout + out.stderr  # make stopped at the first failing script


def test_without_npm_the_conformance_installer_fails_and_says_what_to_install(tmp_path: Path) -> None:
    out = subprocess.run([str(ROOT / "scripts" / "install-conformance")], env={"PATH": _path_without_node(tmp_path)},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert out.stderr.startswith("install-conformance: npm not found on PATH.")
    assert "apt-get install -y npm" in out.stderr


def test_make_test_installs_the_node_tools_and_runs_pytest_requiring_them(tmp_path: Path) -> None:
    plan = subprocess.run(["make", "-n", "-C", str(ROOT), "test", f"VENV={tmp_path / 'venv'}",
                           f"PYTHON={sys.executable}"], capture_output=True, text=True, timeout=60, check=True).stdout
    lines = plan.splitlines()
    node = lines.index("./scripts/install-node-tools")
    conformance = lines.index("./scripts/install-conformance")
    [pytest_line] = [i for i, line in enumerate(lines) if "-m pytest" in line]
    assert node < conformance < pytest_line
    assert lines[pytest_line].startswith("TOOLDECK_REQUIRE_NODE=1 ")


@pytest.mark.parametrize(("setting", "workers"), [(None, "4"), ("TEST_WORKERS=0", "0"), ("TEST_WORKERS=8", "8")])
def test_make_test_runs_the_suite_on_pytest_xdist_workers(tmp_path: Path, setting: str | None, workers: str) -> None:
    args = ["make", "-n", "-C", str(ROOT), "test", f"VENV={tmp_path / 'venv'}", f"PYTHON={sys.executable}"]
    plan = subprocess.run([*args, *([setting] if setting else [])], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    [pytest_line] = [line for line in plan.splitlines() if "-m pytest" in line]
    assert pytest_line.endswith(f"-m pytest -n {workers} --dist loadfile"), pytest_line


def test_a_missing_node_skips_under_plain_pytest_and_fails_under_make_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_NODE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no node here"):
        node_missing("no node here")
    monkeypatch.setenv(REQUIRE_NODE, "1")
    with pytest.raises(pytest.fail.Exception, match=r"no node here\. `make test` runs the whole suite"):
        node_missing("no node here")
