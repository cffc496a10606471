"""The `WWW-Authenticate` parser (`sources/mcp/challenge.py`): examples from RFC 9110 and real servers,
arbitrary headers never raise, and rendered challenges parse back to what was rendered."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.sources.mcp.challenge import MAX_CHALLENGES, MAX_HEADER_CHARS, Challenge, bearer, parse


def test_the_sdk_bearer_middleware_header() -> None:
    value = ('Bearer error="invalid_token", error_description="Authentication required", '
             'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"')
    assert parse(value) == [Challenge("Bearer", {
        "error": "invalid_token", "error_description": "Authentication required",
        "resource_metadata": "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"})]


def test_rfc_9110_example_two_challenges_with_escapes() -> None:
    value = 'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"'
    assert parse(value) == [Challenge("Newauth", {"realm": "apps", "type": "1", "title": 'Login to "apps"'}),
                            Challenge("Basic", {"realm": "simple"})]


def test_token68_scheme_only_and_case() -> None:
    assert parse("Basic dXNlcjpwYXNz==") == [Challenge("Basic", {}, "dXNlcjpwYXNz==")]
    assert parse("Bearer") == [Challenge("Bearer")]
    assert parse("Negotiate, BEARER Realm=x") == [Challenge("Negotiate"), Challenge("BEARER", {"realm": "x"})]
    found = bearer('Basic realm="a", bearer error=insufficient_scope, scope="read write"')
    assert found is not None and found.params == {"error": "insufficient_scope", "scope": "read write"}


def test_lenient_on_what_servers_get_wrong() -> None:
    assert parse('Bearer realm="x" Basic realm="y"') == [Challenge("Bearer", {"realm": "x"}),
                                                        Challenge("Basic", {"realm": "y"})]
    assert parse('Bearer error="unterminated') == [Challenge("Bearer", {"error": "unterminated"})]
    assert parse('Bearer error="a", error="b"')[0].params == {"error": "a"}  # the first value is kept
    assert parse("") == [] and parse(" , ,") == [] and parse('="') == []
    assert bearer('Basic realm="x"') is None


def test_bounded() -> None:
    many = ", ".join(f"S{i}" for i in range(1000))
    assert len(parse(many)) == MAX_CHALLENGES
    huge = "Bearer realm=\"" + "x" * (MAX_HEADER_CHARS * 4) + '"'
    assert len(parse(huge)[0].params["realm"]) < MAX_HEADER_CHARS


_HEADERISH = st.text(alphabet=st.sampled_from(list('Bearer basic realm=error"\\, \t=_-./:+~%' + "é\x00\n")),
                     max_size=200)


@settings(derandomize=True, max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), _HEADERISH))
def test_any_header_value_parses_without_raising(value: str) -> None:
    challenges = parse(value)
    assert len(challenges) <= MAX_CHALLENGES
    for c in challenges:
        assert isinstance(c.scheme, str) and c.scheme
        assert all(isinstance(k, str) and k == k.lower() and isinstance(v, str) for k, v in c.params.items())
        assert c.token68 is None or isinstance(c.token68, str)


_TCHAR = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
_tokens = st.text(alphabet=_TCHAR, min_size=1, max_size=12)
_values = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@settings(derandomize=True, max_examples=500, deadline=None)
@given(st.lists(st.tuples(_tokens, st.dictionaries(_tokens, _values, max_size=4)), min_size=1, max_size=4))
def test_rendered_challenges_parse_back(challenges: list[tuple[str, dict[str, str]]]) -> None:
    rendered = ", ".join(scheme + (" " + ", ".join(f"{k}={_quote(v)}" for k, v in params.items()) if params else "")
                         for scheme, params in challenges)
    parsed = parse(rendered)
    expected = []
    for scheme, params in challenges:
        lowered: dict[str, str] = {}
        for k, v in params.items():
            lowered.setdefault(k.lower(), v)
        expected.append(Challenge(scheme, lowered))
    assert parsed == expected
