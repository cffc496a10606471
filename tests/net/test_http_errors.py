"""`net.http_errors`: the one table from httpx's errors to the network tools' codes, on real sockets."""

from __future__ import annotations

import socket

import httpx
import pytest

from tooldeck.builtins.net import REQUEST_FAILED, TIMED_OUT, http_errors, reason
from tooldeck.core.errors import ToolCallError


def _silent_listener() -> socket.socket:
    """Accepts connections (the kernel's backlog) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock


def test_no_answer_in_time_is_http_timeout_with_the_given_message() -> None:
    with _silent_listener() as sock, pytest.raises(ToolCallError) as info, \
            http_errors("no answer in 0.2 s", lambda exc: f"failed: {reason(exc)}"):
        httpx.get(f"http://127.0.0.1:{sock.getsockname()[1]}/", timeout=0.2)
    assert (info.value.code, info.value.message) == (TIMED_OUT, "no answer in 0.2 s")
    assert info.value.__suppress_context__  # the httpx traceback is not chained onto the tool error


def test_a_refused_connection_is_request_failed_with_its_reason() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(ToolCallError) as info, http_errors("late", lambda exc: f"failed: {reason(exc)}"):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    assert info.value.code == REQUEST_FAILED and info.value.message.startswith("failed: ")
    assert info.value.message != "failed: "


def test_other_errors_pass_through_untouched() -> None:
    with pytest.raises(KeyError), http_errors("late", lambda exc: "failed"):
        raise KeyError("not an HTTP error")


def test_an_error_without_text_is_named_by_its_class() -> None:
    assert reason(httpx.ReadTimeout("")) == "ReadTimeout"
    assert reason(httpx.ConnectError("refused")) == "refused"
