"""The redactor's invariants (policy/redact.py), over generated values and texts, and its formats.

Values and texts are drawn from a small alphabet that holds the marker's own characters, so values
overlap one another, repeat, sit inside each other and can be spelled by a marker and the text
around it: the cases where a one-pass replacement would leave a secret behind.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.core.results import ToolOutput
from tooldeck.policy.redact import FALLBACK, MIN_CHARS, Redactor

ALPHABET = "abcde[]: redactAB_"
chars = st.text(ALPHABET, min_size=0, max_size=12)
values = st.lists(st.text(ALPHABET, min_size=1, max_size=14), min_size=1, max_size=6)
labels = st.text("ABCDE_[]: redact", min_size=1, max_size=10)


@st.composite
def case(draw: st.DrawFn) -> tuple[list[tuple[str, str]], str]:
    vals = draw(values)
    known = [(draw(labels), v) for v in vals]
    pieces = draw(st.lists(st.one_of(st.sampled_from(vals), chars), max_size=12))
    return known, "".join(pieces)


def _long(known: list[tuple[str, str]]) -> list[str]:
    return [v for _, v in known if len(v) >= MIN_CHARS]


@settings(derandomize=True, max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case())
def test_no_known_value_survives_redaction(c: tuple[list[tuple[str, str]], str]) -> None:
    known, text = c
    out = Redactor(known).text(text)
    for value in _long(known):
        assert value not in out, (known, text, out)


@settings(derandomize=True, max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case())
def test_a_text_without_a_known_value_is_returned_as_it_is(c: tuple[list[tuple[str, str]], str]) -> None:
    known, text = c
    counts: dict[str, int] = {}
    out = Redactor(known).text(text, counts)
    if not any(v in text for v in _long(known)):
        assert out is text
        assert counts == {}
    else:
        assert out != text
        assert sum(counts.values()) >= 1


@settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case(), st.integers(0, 3))
def test_structured_values_keep_no_known_value(c: tuple[list[tuple[str, str]], str], depth: int) -> None:
    """Strings anywhere in a JSON value (keys too) are redacted; the JSON text holds no known value."""
    known, text = c
    value: object = text
    for i in range(depth):
        value = {text: value, "n": i} if i % 2 else [value, text, i]
    counts: dict[str, int] = {}
    out = Redactor(known).value(value, counts)
    dumped = orjson.dumps(out).decode()
    for v in _long(known):
        assert orjson.dumps(v).decode()[1:-1] not in dumped
    if not counts:
        assert out is value


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=MIN_CHARS, max_size=30), min_size=17, max_size=30), st.text(max_size=60))
def test_many_values_use_one_alternation_with_the_same_answer(vals: list[str], noise: str) -> None:
    """Beyond MANY_VALUES values the scan is one RE2 alternation; the result is the `in` scans' one."""
    known = [(f"K{i}", v) for i, v in enumerate(vals)]
    text = noise + vals[len(vals) // 2] + noise
    out = Redactor(known).text(text)
    for v in vals:
        assert v not in out
    assert Redactor(known).text(noise) is noise or any(v in noise for v in vals)


def test_markers_name_the_secret_and_count_it() -> None:
    r = Redactor([("GITHUB_TOKEN", "ghs-value-1234567"), ("OTHER", "another-secret")])
    counts: dict[str, int] = {}
    out = r.text("a ghs-value-1234567 b ghs-value-1234567 c another-secret", counts)
    assert out == "a [redacted: GITHUB_TOKEN] b [redacted: GITHUB_TOKEN] c [redacted: OTHER]"
    assert counts == {"GITHUB_TOKEN": 2, "OTHER": 1}


def test_overlapping_values_become_one_marker_naming_both() -> None:
    r = Redactor([("A", "abcdefgh"), ("B", "efghijkl")])
    assert r.text("x abcdefghijkl y") == "x [redacted: A, B] y"


def test_short_values_are_not_secrets() -> None:
    r = Redactor([("PORT", "8080"), ("FLAG", "true")])
    assert not r
    text = "listening on 8080: true"
    assert r.text(text) is text


def test_a_value_the_marker_itself_spells_falls_back_to_one_marker() -> None:
    """A value inside the marker's own text cannot be replaced by that marker: the whole text goes."""
    r = Redactor([("X", "redacted"), ("Y", "secret-value-1")])
    assert r.text("secret-value-1 and redacted") == "*"
    r = Redactor([("TOKEN", "[redacted: TOKEN]x")])
    out = r.text("a [redacted: TOKEN]x b")
    assert "[redacted: TOKEN]x" not in out
    assert out in (FALLBACK, "*") or "[redacted: TOKEN]x" not in out


FORMAT_CASES = [
    ("aws access key", "key AKIAIOSFODNN7EXAMPLE here", "key [redacted: aws access key] here"),
    ("github token", "ghp_" + "a1B2" * 9, "[redacted: github token]"),
    ("github token", "t=github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "t=[redacted: github token]"),
    ("slack token", "xoxb-123456789012-abcdefghij", "[redacted: slack token]"),
    ("openai key", "sk-proj-abcdefghijklmnopqrstuvwx", "[redacted: openai key]"),
    ("anthropic key", "sk-ant-api03-abcdefghijklmnopqrstuv", "[redacted: anthropic key]"),
    ("google api key", "AIza" + "B" * 35, "[redacted: google api key]"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
     "[redacted: jwt]"),
    ("authorization header", "Authorization: Bearer abc.def-123",
     "Authorization: Bearer [redacted: authorization header]"),
    ("authorization header", '{"authorization": "token 0123abcd"}',
     '{"authorization": "token [redacted: authorization header]"}'),
    ("bearer token", "use bearer 0123456789abcdefghijKLMN now", "use bearer [redacted: bearer token] now"),
    ("private key", "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nxyz\n-----END RSA PRIVATE KEY-----\nb",
     "a\n[redacted: private key]\nb"),
    ("private key", "cut -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "cut [redacted: private key]"),
]


@pytest.mark.parametrize(("label", "text", "expected"), FORMAT_CASES)
def test_formats(label: str, text: str, expected: str) -> None:
    counts: dict[str, int] = {}
    assert Redactor([], formats=True).text(text, counts) == expected
    assert counts == {label: 1}
    assert Redactor([]).text(text) is text  # formats are opt-in


@pytest.mark.parametrize("text", ["the bearer of bad news", "sk-short", "AKIA1234", "ghp_tooshort",
                                  "Authorization: required", "eyJ only", "BEGIN PRIVATE KEY"])
def test_formats_leave_ordinary_text(text: str) -> None:
    assert Redactor([], formats=True).text(text) is text


def test_patterns_replace_their_group_or_the_whole_match() -> None:
    r = Redactor([], patterns=[r"acct-[0-9]{6}", r"pin=([0-9]{4})"])
    assert r.text("acct-123456 pin=1234") == "[redacted: pattern 1] pin=[redacted: pattern 2]"


def test_output_redacts_content_structured_and_raw_alike() -> None:
    secret = "s3cr3t-value-xyz"
    r = Redactor([("API_KEY", secret)])
    out = ToolOutput(f"key {secret}", {"k": secret, "n": 1}, raw={"content": [{"text": secret}]})
    clean, redaction = r.output(out)
    assert redaction is not None
    assert clean.content == "key [redacted: API_KEY]"
    assert clean.structured == {"k": "[redacted: API_KEY]", "n": 1}
    assert redaction.raw == {"content": [{"text": "[redacted: API_KEY]"}]}
    assert redaction.counts == {"API_KEY": 1}
    plain = ToolOutput("nothing here", {"k": 1})
    assert r.output(plain) == (plain, None)


def test_a_value_json_escapes_differently_is_found_in_structured_data() -> None:
    secret = 'pa"ss\\word-123'
    r = Redactor([("PW", secret)])
    counts: dict[str, int] = {}
    assert r.value({"x": [f"<{secret}>"]}, counts) == {"x": ["<[redacted: PW]>"]}
    assert counts == {"PW": 1}
