"""Delegation and subagents (docs/agent.md, "Delegation and subagents").

TauriTavern's delegation: agent profiles in `<home>/agents/` (`profiles.py`), return-mode child runs
and handoffs (`children.py`), their tasks (`tasks.py`) and texts (`render.py`); Agenvoy's subagent
legs (`subagents.py`). `link.py` ties them to the agent loop's run. The tools are builtins:
`builtins/delegate.py`, `builtins/delegate_return.py`, `builtins/subagents.py`.
"""
