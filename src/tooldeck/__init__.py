"""tooldeck: the tool runtime for LLM agents.

The public names are imported on first use (PEP 562), so `import tooldeck` (and every `tooldeck.x`
submodule import, which runs this file first) costs nothing until a name is used: the `tooldeck`
command imports only what its subcommand needs.
"""

import importlib
import typing

if typing.TYPE_CHECKING:
    from tooldeck.catalog.profile import HookSpec, Profile
    from tooldeck.catalog.runs import RunState
    from tooldeck.catalog.sources import CallContext, Executable, InvocationView, StaticSource, ToolSource
    from tooldeck.core.arguments import ToolArguments
    from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
    from tooldeck.core.errors import ToolCallError, TooldeckError
    from tooldeck.core.ids import ToolId
    from tooldeck.core.results import AgentToolResult, ToolEffect, ToolOutput
    from tooldeck.dispatch import ConfirmationRequest
    from tooldeck.policy.approvals import Approval
    from tooldeck.policy.hooks import Hook, HookAnswer, HookCall, Hooks
    from tooldeck.records.port import Recorder
    from tooldeck.runtime import Invocation, Runtime, open

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "AgentToolResult": "tooldeck.core.results",
    "Approval": "tooldeck.policy.approvals",
    "CallContext": "tooldeck.catalog.sources",
    "ConfirmationRequest": "tooldeck.dispatch",
    "Executable": "tooldeck.catalog.sources",
    "Hook": "tooldeck.policy.hooks",
    "HookAnswer": "tooldeck.policy.hooks",
    "HookCall": "tooldeck.policy.hooks",
    "HookSpec": "tooldeck.catalog.profile",
    "Hooks": "tooldeck.policy.hooks",
    "Invocation": "tooldeck.runtime",
    "InvocationView": "tooldeck.catalog.sources",
    "Profile": "tooldeck.catalog.profile",
    "Recorder": "tooldeck.records.port",
    "RunState": "tooldeck.catalog.runs",
    "Runtime": "tooldeck.runtime",
    "StaticSource": "tooldeck.catalog.sources",
    "ToolAnnotations": "tooldeck.core.descriptors",
    "ToolArguments": "tooldeck.core.arguments",
    "ToolCallError": "tooldeck.core.errors",
    "ToolDescriptor": "tooldeck.core.descriptors",
    "ToolEffect": "tooldeck.core.results",
    "ToolId": "tooldeck.core.ids",
    "ToolOutput": "tooldeck.core.results",
    "ToolSource": "tooldeck.catalog.sources",
    "TooldeckError": "tooldeck.core.errors",
    "open": "tooldeck.runtime",
}

__all__ = [
    "AgentToolResult",
    "Approval",
    "CallContext",
    "ConfirmationRequest",
    "Executable",
    "Hook",
    "HookAnswer",
    "HookCall",
    "HookSpec",
    "Hooks",
    "Invocation",
    "InvocationView",
    "Profile",
    "Recorder",
    "RunState",
    "Runtime",
    "StaticSource",
    "ToolAnnotations",
    "ToolArguments",
    "ToolCallError",
    "ToolDescriptor",
    "ToolEffect",
    "ToolId",
    "ToolOutput",
    "ToolSource",
    "TooldeckError",
    "__version__",
    "open",
]


def __getattr__(name: str) -> typing.Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
