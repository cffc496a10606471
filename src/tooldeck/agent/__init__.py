"""tooldeck's agent loop: it drives a model over the providers' own wire formats (docs/agent.md).

`types.py` the shared shapes and the `ModelClient` port; `transport.py` HTTP with retries and SSE;
`providers/` one module per wire format; `models.py` the `[models]` table; `loop.py` the loop.
Nothing here is imported by `import tooldeck`. The public names below are imported on first use
(PEP 562), so `import tooldeck.agent` loads neither httpx nor a provider until one is used.
"""

import importlib
import typing

if typing.TYPE_CHECKING:
    from tooldeck.agent.errors import ModelError
    from tooldeck.agent.events import AgentEvent, AgentResult
    from tooldeck.agent.loop import Agent
    from tooldeck.agent.models import resolve_model
    from tooldeck.agent.providers import make_client
    from tooldeck.agent.transport import Transport
    from tooldeck.agent.types import ModelClient, ModelConfig, ModelRequest, ModelTurn, StreamEvent, Usage

_EXPORTS = {
    "Agent": "tooldeck.agent.loop",
    "AgentEvent": "tooldeck.agent.events",
    "AgentResult": "tooldeck.agent.events",
    "ModelClient": "tooldeck.agent.types",
    "ModelConfig": "tooldeck.agent.types",
    "ModelError": "tooldeck.agent.errors",
    "ModelRequest": "tooldeck.agent.types",
    "ModelTurn": "tooldeck.agent.types",
    "StreamEvent": "tooldeck.agent.types",
    "Transport": "tooldeck.agent.transport",
    "Usage": "tooldeck.agent.types",
    "make_client": "tooldeck.agent.providers",
    "resolve_model": "tooldeck.agent.models",
}

__all__ = ["Agent", "AgentEvent", "AgentResult", "ModelClient", "ModelConfig", "ModelError", "ModelRequest",
           "ModelTurn", "StreamEvent", "Transport", "Usage", "make_client", "resolve_model"]


def __getattr__(name: str) -> typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tooldeck.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
