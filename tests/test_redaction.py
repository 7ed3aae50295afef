"""The one redaction rule (``deerflow.knowledge._redaction``): spellings, order, URL passwords."""

from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge._redaction import (
    PASSWORD_MARKER,
    REDACTION_MARKER,
    Redactor,
    redact,
    secret_pattern,
    without_password,
)


def test_plain_percent_encoded_and_form_spellings_are_redacted() -> None:
    secret = "a b/c+d"
    text = f"x {secret} y a%20b%2Fc%2Bd z a+b%2Fc%2Bd w A%20B%2fC%2bD"
    assert redact(text, [secret]) == "x [REDACTED] y [REDACTED] z [REDACTED] w [REDACTED]"


def test_case_is_ignored_and_look_alikes_are_left_alone() -> None:
    assert redact("key SK-ABC and sk-abd", ["sk-abc"]) == "key [REDACTED] and sk-abd"


def test_the_longest_secret_goes_first() -> None:
    assert redact("abcd abc", ["abc", "abcd"]) == "[REDACTED] [REDACTED]"
    assert redact("abcd abc", ["abcd", "abc"]) == "[REDACTED] [REDACTED]"


def test_missing_and_empty_secrets_change_nothing() -> None:
    assert redact("nothing here", [None, ""]) == "nothing here"
    assert not Redactor.of([None, ""])
    assert Redactor.of(["s"])


def test_the_marker_is_a_keyword() -> None:
    assert redact("pw=hunter2", ["hunter2"], marker=PASSWORD_MARKER) == "pw=***"
    assert Redactor.of(["hunter2"])("pw=hunter2") == f"pw={REDACTION_MARKER}"


def test_a_multibyte_secret_is_caught_percent_encoded() -> None:
    secret = "clé"
    assert redact(urllib.parse.quote(secret), [secret]) == REDACTION_MARKER
    assert secret_pattern(secret).fullmatch("CL%C3%A9")


def test_a_lone_surrogate_secret_compiles() -> None:
    assert redact("x\ud800y", ["\ud800"]) == f"x{REDACTION_MARKER}y"


def test_a_url_password_is_masked_in_its_place_only() -> None:
    url = "postgresql://deer:deer@127.0.0.1:5432/threads"
    assert without_password(url) == "postgresql://deer:***@127.0.0.1:5432/threads"
    assert without_password(url, marker="[x]") == "postgresql://deer:[x]@127.0.0.1:5432/threads"


@pytest.mark.parametrize(
    "url",
    ["postgresql://deer@host/db", "postgresql://host/db", "/var/lib/threads.sqlite", ""],
)
def test_a_url_without_a_password_is_returned_as_it_is(url: str) -> None:
    assert without_password(url) == url


@given(
    secret=st.text(min_size=1, max_size=12),
    before=st.text(max_size=20),
    after=st.text(max_size=20),
    encode=st.booleans(),
)
def test_no_spelling_of_the_secret_survives(
    secret: str, before: str, after: str, encode: bool
) -> None:
    spelled = urllib.parse.quote(secret, safe="", errors="surrogatepass") if encode else secret
    clean = redact(before + spelled + after, [secret])
    assert REDACTION_MARKER in clean
    # What is left between the markers is original text in which no spelling was found.
    pattern = secret_pattern(secret)
    assert all(pattern.search(piece) is None for piece in clean.split(REDACTION_MARKER))
