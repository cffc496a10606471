"""The `model.*` and `agent.*` codes of the agent loop (docs/errors.md, "Agent loop")."""

from __future__ import annotations

from tooldeck.core.errors import TooldeckError

HTTP_ERROR = "model.http_error"
"""The provider answered with an error status that a retry cannot fix (400, 404 …), or 5xx after the retries."""
AUTH_FAILED = "model.auth_failed"
"""401 / 403: the API key is missing, wrong or lacks access."""
RATE_LIMITED = "model.rate_limited"
"""429 after the retries, or a `retry-after` longer than the configured cap."""
TIMEOUT = "model.timeout"
"""No response (or no stream chunk) within the timeout, after the retries."""
CONNECT_ERROR = "model.connect_error"
"""The provider could not be reached (refused, DNS, TLS), after the retries."""
BAD_RESPONSE = "model.bad_response"
"""The answer is not what the wire format promises (not JSON, a cut stream, no choices)."""
CONFIG_INVALID = "model.config_invalid"
"""A model configuration is wrong or incomplete (unknown provider, no model name, no key)."""


class ModelError(TooldeckError):
    """A model request failed. `status` is the HTTP status when there was one; `attempts` how many
    requests were sent; `retry_after` the wait the provider asked for, in seconds."""

    def __init__(self, code: str, message: str, *, status: int | None = None, attempts: int = 1,
                 retry_after: float | None = None) -> None:
        super().__init__(code, message)
        self.status = status
        self.attempts = attempts
        self.retry_after = retry_after
