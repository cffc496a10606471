"""tooldeck's agent loop: it drives a model over the providers' own wire formats (docs/agent.md).

`types.py` the shared shapes and the `ModelClient` port; `transport.py` HTTP with retries and SSE;
`providers/` one module per wire format; `models.py` the `[models]` table; `loop.py` the loop.
Nothing here is imported by `import tooldeck`; httpx is imported only with this package.
"""
