"""The loopback mock model provider of the agent tests (tests/agent/mock_provider.py)."""

from tests.agent.conftest import mock_provider

__all__ = ["mock_provider"]
