"""The catalog of tools (sources), the Profile, and preparing an invocation's bindings."""
