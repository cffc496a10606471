"""tooldeck under agent frameworks: one module per framework, each behind its own optional extra.

- `tooldeck.adapters.openai_agents`: an invocation's tools as OpenAI Agents SDK `FunctionTool`s
  (`pip install 'tooldeck[openai-agents]'`);
- `tooldeck.adapters.pydantic_ai`: a pydantic-ai toolset (`pip install 'tooldeck[pydantic-ai]'`);
- `tooldeck.adapters.langchain`: LangChain / LangGraph `BaseTool`s (`pip install 'tooldeck[langchain]'`).

Nothing here is imported by `tooldeck` itself, and this package imports no framework: each module
imports its own, and says which extra to install when it is missing. Every call goes through the
invocation's gate, budget, dispatch, projection and records; the calls of one model response form
one tooldeck turn (`_turns.py`). See docs/adapters.md.
"""
