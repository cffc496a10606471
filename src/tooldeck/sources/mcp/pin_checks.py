"""A server's tools against their pins (`pins.py`) and the poisoning detector (`poisoning.py`), from memory.

- `checks(state)`: each cached tool's digest and findings, computed once per catalog object.
- `pin_status(state, tool)`: `approved` (pinned by `tooldeck mcp approve`), `first seen` (pinned on first
  sight), `changed` (the listed definition differs from the pin) or `unknown` (no pin could be read).
- `withheld(state, tool)`: a pinned server (`pin = true`) does not offer a `changed` or `unknown` tool:
  failing closed when the pins store cannot be used.
- `diagnostics(state)`: `mcp.tool_unapproved` / `mcp.tool_definition_changed` per changed tool,
  `mcp.tool_description_suspicious` per flagged tool, `mcp.pins_unavailable`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.ids import ToolId
from tooldeck.sources.mcp import pin_diff, pins
from tooldeck.sources.mcp.errors import TOOL_DEFINITION_CHANGED, TOOL_DESCRIPTION_SUSPICIOUS, TOOL_UNAPPROVED
from tooldeck.sources.mcp.poisoning import Finding, scan
from tooldeck.sources.mcp.state import ServerState


@dataclass(frozen=True, slots=True)
class Checks:
    digests: dict[str, str]
    findings: dict[str, list[Finding]]


def checks(state: ServerState) -> Checks:
    catalog = state.catalog
    cached = state.checks
    if cached is not None and cached[0] is catalog:
        return cached[1]
    tools = catalog.tools if catalog is not None else ()
    result = Checks({t["name"]: pins.digest(t) for t in tools}, {t["name"]: scan(t) for t in tools})
    state.checks = (catalog, result)
    return result


def pin_status(state: ServerState, tool: str) -> str:
    pin = state.pins.get(tool) if state.pins is not None else None
    if pin is None:
        return "unknown"
    if pin.digest != checks(state).digests.get(tool):
        return "changed"
    return "approved" if pin.approved_by is not None else "first seen"


def withheld(state: ServerState, tool: str) -> bool:
    return state.pinned and pin_status(state, tool) in ("changed", "unknown")


def changed_tools(state: ServerState) -> list[str]:
    if state.catalog is None:
        return []
    return [t["name"] for t in state.catalog.tools if pin_status(state, t["name"]) in ("changed", "unknown")]


def pin_changes(state: ServerState, tool: str) -> list[pin_diff.Change]:
    """What changed in `tool` since its pin (empty when it has no pin or is unchanged)."""
    pin = state.pins.get(tool) if state.pins is not None else None
    current = next((t for t in state.catalog.tools if t["name"] == tool), None) if state.catalog else None
    if pin is None or current is None:
        return []
    return pin_diff.changes(pin.definition, pins.definition(current))


def since(pin: pins.Pin) -> str:
    when = pin.approved_at if pin.approved_at is not None else pin.first_seen
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(when))
    return f"approved by {pin.approved_by} at {stamp}" if pin.approved_by else f"first seen at {stamp}"


def withheld_reason(state: ServerState, tool: str) -> str:
    """Why a withheld tool is not offered (for `tooldeck tools --all` and the unknown-tool message)."""
    name = state.config.name
    pin = state.pins.get(tool) if state.pins is not None else None
    if pin is None:
        return (f"MCP server `{name}` is pinned and the definition of `{tool}` could not be checked against an "
                f"approved one; it is not offered until the user approves it (`tooldeck mcp approve {name} {tool}`)")
    touched = ", ".join(pin_diff.fields(pin_changes(state, tool))) or "its definition"
    return (f"its definition on MCP server `{name}` changed ({touched}) since it was {since(pin)}; the server is "
            f"pinned, so the tool is not offered until the user reviews the change (`tooldeck mcp diff {name}`) and "
            f"approves it (`tooldeck mcp approve {name} {tool}`)")


def diagnostics(state: ServerState) -> list[Diagnostic]:
    if state.catalog is None:
        return []
    out: list[Diagnostic] = []
    if state.pins_problem is not None:
        out.append(state.pins_problem)
    name = state.config.name
    found = checks(state).findings
    for tool in state.catalog.tools:
        native = tool["name"]
        tid = str(ToolId.mcp(state.rid, native))
        status = pin_status(state, native)
        if status == "changed" or (status == "unknown" and state.pinned):
            if state.pinned:
                out.append(Diagnostic(TOOL_UNAPPROVED, f"`{native}` is not offered: {withheld_reason(state, native)}.",
                                      tid))
            else:
                pin = state.pins[native] if state.pins is not None else None
                touched = ", ".join(pin_diff.fields(pin_changes(state, native)))
                was = since(pin) if pin else "pinned"
                out.append(Diagnostic(TOOL_DEFINITION_CHANGED, f"MCP server `{name}`: the definition of `{native}` "
                                      f"changed ({touched}) since it was {was}; it is still "
                                      f"offered because the server is not pinned. Review it with `tooldeck mcp diff "
                                      f"{name}`, accept it with `tooldeck mcp approve {name} {native}`, or set "
                                      "`pin = true` to withhold changed tools.", tid))
        if found.get(native):
            text = "; ".join(f.text() for f in found[native][:3])
            out.append(Diagnostic(TOOL_DESCRIPTION_SUSPICIOUS, f"MCP server `{name}`: the definition of `{native}` may "
                                  f"carry instructions aimed at the model ({text}). Read it with `tooldeck mcp tools "
                                  f"{name} --json` before relying on the tool.", tid))
    return out


@dataclass(frozen=True, slots=True)
class ToolDiff:
    """One tool whose listed definition is not its pinned one (`tooldeck mcp diff`)."""

    tool: str
    tool_id: str
    status: str
    pin: pins.Pin | None
    digest: str | None
    changes: list[pin_diff.Change]
    withheld: bool

    def lines(self) -> list[str]:
        """Readable text: what changed since when, the digests, each change (`pin_diff.render`)."""
        state = "withheld until approved" if self.withheld else "still offered (the server is not pinned)"
        out = [f"{self.tool}: changed since it was {since(self.pin) if self.pin else 'never pinned'}; {state}"]
        if self.pin is not None:
            out.append(f"  digest {self.pin.digest[:16]} -> {(self.digest or '?')[:16]}")
        out.extend(f"  {line}" for change in self.changes for line in pin_diff.render(change))
        return out

    def to_dict(self) -> dict[str, object]:
        return {"tool": self.tool, "tool_id": self.tool_id, "status": self.status, "withheld": self.withheld,
                "pinned": self.pin.to_dict() if self.pin else None, "digest": self.digest,
                "changes": [c.to_dict() for c in self.changes]}


def tool_diffs(state: ServerState) -> list[ToolDiff]:
    digests = checks(state).digests
    return [ToolDiff(native, str(ToolId.mcp(state.rid, native)), pin_status(state, native),
                     state.pins.get(native) if state.pins is not None else None, digests.get(native),
                     pin_changes(state, native), withheld(state, native))
            for native in changed_tools(state)]
