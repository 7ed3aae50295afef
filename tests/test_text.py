"""The contract's text rules, defined once in ``deerflow.knowledge.text``."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.text import (
    CONTROL_CHARACTERS,
    CONTROL_RE,
    INVISIBLE_FORMAT_RANGES,
    WHITE_SPACE,
    controls_to_space,
    has_forbidden_title_character,
    has_lone_surrogate,
    has_space_or_control,
    is_blank,
    one_line,
    printable,
    replace_lone_surrogates,
    visible_text,
)

SPOOF = "invoice_\u202efdp.exe.md"  # displays as "invoice_dm.exe.pdf"
SHOWN = "invoice_<U+202E>fdp.exe.md"


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


# --------------------------------------------------------------------------- shown, never obeyed


def _invisible(cp: int) -> bool:
    return any(low <= cp <= high for low, high in INVISIBLE_FORMAT_RANGES)


def test_the_spoof_is_spelled_out() -> None:
    assert visible_text(SPOOF) == SHOWN


def test_every_bidi_control_is_covered() -> None:
    bidi = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
    assert all(_invisible(cp) for cp in bidi)


def test_the_ranges_are_format_characters_or_unassigned() -> None:
    # Every shown code point is Cf (or unassigned in this Python's Unicode), none is a letter.
    for low, high in INVISIBLE_FORMAT_RANGES:
        for cp in range(low, high + 1):
            assert unicodedata.category(chr(cp)) in ("Cf", "Cn"), hex(cp)


@given(st.text())
def test_each_invisible_character_and_nothing_else_is_spelled_out(text: str) -> None:
    expected = "".join(f"<U+{ord(ch):04X}>" if _invisible(ord(ch)) else ch for ch in text)
    shown = visible_text(text)
    assert shown == expected
    assert visible_text(shown) == shown
