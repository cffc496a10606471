"""The sandboxed shell: bashkit over the workspace mounts, with `python` (pydantic-monty) and `js`
(QuickJS via jsbox) builtins, run in worker processes the host can stop. See docs/shell.md."""

from tooldeck.shell.engine import ShellResult, ShellRun, Status
from tooldeck.shell.layout import Layout, Mount
from tooldeck.shell.limits import ShellLimits

__all__ = ["Layout", "Mount", "ShellLimits", "ShellResult", "ShellRun", "Status", "run_command"]


def run_command(layout: Layout, limits: ShellLimits, command: str, workdir: str = "/") -> ShellResult:
    """Convenience: one blocking call."""
    return ShellRun(layout, limits, workdir).run(command)
