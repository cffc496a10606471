"""Outbound network access for tools: `guard` is the one SSRF guard every request goes through."""
