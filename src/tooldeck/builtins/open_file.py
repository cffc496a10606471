"""`open_file` (Agenvoy's tool of the same name): open a workspace file with the desktop's default
application. Offered only where a desktop opener exists and the origin is interactive (its
`requires`): `open` on macOS, `xdg-open` elsewhere (`wslview` under WSL). The opener gets the file's
real path; it is waited for at most 15 seconds (openers hand the file over and return).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import PATH_PROPERTY, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.preconditions import Requires
from tooldeck.core.results import ToolOutput

OPENER_TIMEOUT_S: Final = 15.0
FAILED: Final = "open_file.failed"


def desktop_opener() -> str:
    if sys.platform == "darwin":
        return "open"
    if "microsoft" in os.uname().release.lower():
        return "wslview"
    return "xdg-open"


def open_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"])
    if store.kind(loc) != "file":
        raise ToolCallError(FAILED, f"`{loc.shown}` is not a file of the workspace; list the folder to find it.")
    real = loc.key  # the file's real path on disk
    opener = desktop_opener()
    try:
        done = subprocess.run([opener, real], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=OPENER_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise ToolCallError(FAILED, f"the desktop opener `{opener}` is gone; the file was not opened.") from None
    except subprocess.TimeoutExpired:
        raise ToolCallError(FAILED, f"`{opener}` did not return within {OPENER_TIMEOUT_S:g} s.") from None
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()[:500]
        raise ToolCallError(FAILED, f"`{opener}` failed with exit code {done.returncode}"
                            f"{': ' + detail if detail else ''}.")
    return ToolOutput(f"Opened {loc.shown} with the default application.", {"path": loc.shown, "opener": opener})


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("open_file"),
    title="Open a file on the desktop",
    description="Open a workspace file with the user's default application (a browser for HTML, a viewer for "
                "PDF and images), so the user can see it.",
    input_schema={
        "type": "object",
        "properties": {"path": PATH_PROPERTY},
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(),
    requires=Requires(executable=(desktop_opener(),), interactive=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, open_file, blocking=True)]
