"""The sandboxed shell: bashkit over the workspace mounts, with `python` (pydantic-monty) and `js`
(QuickJS via jsbox) builtins. See docs/shell.md."""

from tooldeck.shell.engine import ShellResult, ShellRun, Status, run_command
from tooldeck.shell.layout import Layout, Mount
from tooldeck.shell.limits import ShellLimits

__all__ = ["Layout", "Mount", "ShellLimits", "ShellResult", "ShellRun", "Status", "run_command"]
