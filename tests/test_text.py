"""The contract's text rules, defined once in ``deerflow.knowledge.text``."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.text import (
    CONTROL_CHARACTERS,
    CONTROL_RE,
    HEADING_MAX_CHARS,
    INVISIBLE_FORMAT_RANGES,
    SENTENCE_END_RE,
    WHITE_SPACE,
    controls_to_space,
    has_forbidden_title_character,
    has_lone_surrogate,
    has_space_or_control,
    is_blank,
    looks_like_heading,
    one_line,
    printable,
    replace_lone_surrogates,
    sentence_ends,
    visible_text,
)
from tests.steps import line_steps

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


# ---------------------------------------------------------------- sentence ends and headings


def _split(text: str) -> list[str]:
    cuts = [0, *sentence_ends(text), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One here. Two there! Three? Four.", ["One here. ", "Two there! ", "Three? ", "Four."]),
        # A closing quote or bracket belongs to the sentence it closes.
        ('He said "stop." Then he left.', ['He said "stop." ', "Then he left."]),
        ("Curly \u201cquotes.\u201d Next one.", ["Curly \u201cquotes.\u201d ", "Next one."]),
        ("It (really.) Works [so.] Yes.", ["It (really.) ", "Works [so.] ", "Yes."]),
        ("Single 'quote.' Next.", ["Single 'quote.' ", "Next."]),
        # Ideographic full stop, exclamation and question mark end a sentence with no space.
        (
            "第一句。第二句\uff01第三句\uff1f第四句",
            ["第一句。", "第二句\uff01", "第三句\uff1f", "第四句"],
        ),
        ("中文。 English follows. 日本語。", ["中文。 ", "English follows. ", "日本語。"]),
        # Lower case after the stop continues the sentence ("e.g. this", a lower-case name).
        ("Use e.g. this one. Then stop.", ["Use e.g. this one. ", "Then stop."]),
        ("Set v1. then v2. Done.", ["Set v1. then v2. ", "Done."]),
        # No white space after the stop: no end (a version, a file name, a URL).
        ("See 1.4.9 or file.md now. Next.", ["See 1.4.9 or file.md now. ", "Next."]),
        ("Trailing stop at the end. ", ["Trailing stop at the end. "]),
        ("", [""]),
    ],
)
def test_sentence_ends(text: str, sentences: list[str]) -> None:
    assert _split(text) == sentences


def test_sentence_ends_reads_only_its_span() -> None:
    text = "Before. Inside one. Inside two. After."
    start, end = text.index("Inside"), text.index(" After")
    assert list(sentence_ends(text, start, end)) == [text.index("Inside two")]


@given(st.text(alphabet=st.sampled_from("aA .!?\u3002\u201d)\n\u00e9\u4e2d")))
def test_sentences_cover_the_text_and_each_ends_where_the_pattern_does(text: str) -> None:
    ends = list(sentence_ends(text))
    assert ends == sorted(set(ends)) and all(0 < e < len(text) for e in ends)
    for end in ends:
        assert not text[end].islower()
        assert any(m.end() == end for m in SENTENCE_END_RE.finditer(text))


def test_a_heading_is_short_capitalized_unpunctuated_and_followed_by_a_capital() -> None:
    assert looks_like_heading("The embedded local index", "The local provider is")
    assert looks_like_heading("A" * HEADING_MAX_CHARS, "Next")
    assert not looks_like_heading("A" * (HEADING_MAX_CHARS + 1), "Next")
    assert not looks_like_heading("The local provider is the default", "retrieval provider.")
    assert not looks_like_heading("lower-case start", "Next")
    for stop in ".!?,;:":
        assert not looks_like_heading(f"Ends with{stop}", "Next")
    assert not looks_like_heading("Last line of a paragraph", "")
    assert not looks_like_heading("", "Next")


@pytest.mark.parametrize(
    "text",
    [
        "A. " * 333_334,  # a sentence end every three characters
        "." * 1_000_000,  # stops with no white space
        "." + ")" * 999_999,  # one stop, a million closing brackets and no white space
        ".)" * 500_000,
        ". " + "a. " * 333_332,  # ends that lower case continues
        "\u4e2d\u6587\u3002" * 333_334,  # an ideographic stop every three characters
        "a" * 1_000_000,
    ],
    ids=["ends", "stops", "brackets", "stop-bracket", "continued", "cjk", "no-end"],
)
def test_sentence_ends_is_linear_on_a_million_characters(text: str) -> None:
    """Counted, not timed: the Python loop runs at most six lines per sentence end found. The
    regex's own scan is in C and cannot be counted from here; it looks at each character once to
    find a stop and at the closing brackets after a stop once, which no other stop shares."""
    steps = line_steps(
        lambda: sum(1 for _ in sentence_ends(text)), in_file=lambda f: f.endswith("text.py")
    )
    matches = sum(1 for _ in SENTENCE_END_RE.finditer(text))
    assert steps <= 6 * matches + 10 and matches <= len(text), (steps, matches)
