"""tooldeck: the tool runtime for LLM agents."""

from __future__ import annotations

from tooldeck.catalog.profile import Profile
from tooldeck.catalog.sources import CallContext
from tooldeck.core.arguments import ToolArguments
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError, TooldeckError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import AgentToolResult, ToolEffect, ToolOutput
from tooldeck.runtime import Invocation, Runtime, open

__version__ = "0.1.0"

__all__ = [
    "AgentToolResult",
    "CallContext",
    "Invocation",
    "Profile",
    "Runtime",
    "ToolAnnotations",
    "ToolArguments",
    "ToolCallError",
    "ToolDescriptor",
    "ToolEffect",
    "ToolId",
    "ToolOutput",
    "TooldeckError",
    "__version__",
    "open",
]
