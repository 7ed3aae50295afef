"""The contract's text rules, defined once in ``deerflow.knowledge.text``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.text import (
    CONTROL_CHARACTERS,
    CONTROL_RE,
    WHITE_SPACE,
    controls_to_space,
    has_forbidden_title_character,
    has_lone_surrogate,
    has_space_or_control,
    is_blank,
    one_line,
    printable,
    replace_lone_surrogates,
)


def test_the_classes_are_the_contracts() -> None:
    assert len(CONTROL_CHARACTERS) == 65 and "\x7f" in CONTROL_CHARACTERS
    assert len(WHITE_SPACE) == 25 and "\u200b" not in WHITE_SPACE
    assert all(CONTROL_RE.fullmatch(ch) for ch in CONTROL_CHARACTERS)


@given(st.text())
def test_checkers_and_cleaners_agree(text: str) -> None:
    assert is_blank(text) == all(ch in WHITE_SPACE for ch in text)
    assert has_lone_surrogate(text) == any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
    assert not has_lone_surrogate(replace_lone_surrogates(text))
    assert CONTROL_RE.search(controls_to_space(text)) is None
    forbidden = any(ch in CONTROL_CHARACTERS or 0xD800 <= ord(ch) <= 0xDFFF for ch in text)
    assert has_forbidden_title_character(text) == forbidden


def test_cleaners() -> None:
    assert controls_to_space("a\x00\x01b\nc") == "a b c"
    assert replace_lone_surrogates("a\ud800b") == "a\ufffdb"
    assert one_line("  a\n\tb\x00 ", 10) == "a b"
    assert one_line("x" * 20, 10) == "x" * 9 + "…"
    assert printable("a\tb\nc\x1bd\ud800") == "a\tb\nc\ufffdd\ufffd"
    assert has_space_or_control("a b") and has_space_or_control("a\x7f")
    assert not has_space_or_control("http://x")
