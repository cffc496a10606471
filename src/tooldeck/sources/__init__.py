"""Tool sources other than builtins: extensions (Python functions), MCP servers, script directories."""
