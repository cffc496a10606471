"""`make install` says what it installs, step by step, and lets pip print its progress (issue 13.7)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
