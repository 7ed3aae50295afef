"""The contract's text rules, defined once: controls, lone surrogates, blank, invisible format
characters, one-line display.

The contract counts Unicode code points and names three character classes every module checks or
cleans: the C0/C1 controls and DEL, lone surrogates (Python strings hold a surrogate only
unpaired) and Unicode ``White_Space``. Readers *check* them (a title with a control character is
invalid); writers and displays *clean* them (a control run becomes one space, a lone surrogate
U+FFFD). Both go through the patterns here, so a checker and a cleaner can never disagree about
what a control character is.

A fourth class is only ever *shown* (contracts §8): a real file may be called
``invoice_\u202efdp.exe.md``, which the RIGHT-TO-LEFT OVERRIDE displays as ``invoice_dm.exe.pdf``.
The contract keeps titles exactly as the provider gave them (refusing them would make such a
document uncitable, rewriting them would change what the record says), so every *display* of a
title, dataset name or citation label runs through :func:`visible_text`, which spells each bidi
control and invisible format character as ``<U+XXXX>``.

Two reading rules of prose live here too, because the chunker (which cuts a document where a
statement ends) and the offline responder (which quotes whole sentences of an excerpt) must agree
on them: where a sentence ends (:func:`sentence_ends`) and which first line of a paragraph is a
heading (:func:`looks_like_heading`).

``frontend/src/text.ts`` and ``visible.ts`` are the TypeScript twins of the character classes.
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = [
    "CONTROL_CHARACTERS",
    "CONTROL_RE",
    "ELLIPSIS",
    "HEADING_MAX_CHARS",
    "INVISIBLE_FORMAT_RANGES",
    "LONE_SURROGATE_RE",
    "REPLACEMENT_CHARACTER",
    "SENTENCE_END_RE",
    "WHITE_SPACE",
    "controls_to_space",
    "ends_sentence",
    "has_forbidden_title_character",
    "has_lone_surrogate",
    "has_space_or_control",
    "is_blank",
    "looks_like_heading",
    "one_line",
    "printable",
    "replace_lone_surrogates",
    "sentence_ends",
    "visible_text",
]

#: Unicode ``White_Space``: a string made only of these is blank.
WHITE_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
#: C0 and C1 controls plus DEL.
CONTROL_CHARACTERS: Final = frozenset(
    [chr(c) for c in range(0x00, 0x20)] + [chr(c) for c in range(0x7F, 0xA0)]
)
ELLIPSIS: Final = "…"
REPLACEMENT_CHARACTER: Final = "\ufffd"

CONTROL_RE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
LONE_SURROGATE_RE: Final = re.compile(r"[\ud800-\udfff]")
_CONTROL_RUN_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_SPACE_OR_CONTROL_RUN_RE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
_CONTROL_OR_SURROGATE_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# What a terminal must not be sent: controls except tab and newline, and lone surrogates.
_TERMINAL_UNSAFE_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_NOT_WHITE_SPACE_RE = re.compile(
    r"[^\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)

#: A sentence ends at ``.``, ``!`` or ``?`` (closing quotes and brackets included) and white space,
#: or at an ideographic full stop, exclamation or question mark (CJK text puts no space after it).
_STOP = r"[.!?][\"'\u201d\u2019)\]]*"
_IDEOGRAPHIC_STOP = r"[\u3002\uff01\uff1f]"
SENTENCE_END_RE: Final = re.compile(rf"{_STOP}\s+|{_IDEOGRAPHIC_STOP}\s*")
_ENDS_SENTENCE_RE = re.compile(rf"(?:{_STOP}|{_IDEOGRAPHIC_STOP})\Z")
#: A first line at most this long, with no sentence punctuation at its end and followed by a line
#: that starts with a capital, is a heading (a PDF page's or a text file's title).
HEADING_MAX_CHARS: Final = 80

#: Code points shown as ``<U+XXXX>``: the bidi embeddings, overrides, isolates and marks, and the
#: format characters that render as nothing (zero-width space, word joiner and invisible
#: operators, BOM, interlinear annotation, shorthand and musical format controls, tag characters).
#: Left alone: ZWNJ/ZWJ (U+200C/U+200D, which shape Indic, Arabic and emoji text), the soft hyphen,
#: and script-specific format characters that render visibly in their scripts.
INVISIBLE_FORMAT_RANGES: Final = (
    (0x061C, 0x061C),
    (0x180E, 0x180E),
    (0x200B, 0x200B),
    (0x200E, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
_INVISIBLE_RE = re.compile(
    "["
    + "".join(
        re.escape(chr(low)) + ("" if low == high else "-" + re.escape(chr(high)))
        for low, high in INVISIBLE_FORMAT_RANGES
    )
    + "]"
)


def has_lone_surrogate(text: str) -> bool:
    """Python strings hold surrogates only unpaired, so any surrogate code point is lone."""
    return LONE_SURROGATE_RE.search(text) is not None


def has_forbidden_title_character(text: str) -> bool:
    """A control character or a lone surrogate: what a title or a dataset name may not hold."""
    return _CONTROL_OR_SURROGATE_RE.search(text) is not None


def has_space_or_control(text: str) -> bool:
    """Any whitespace or control character (what a URL setting may not hold)."""
    return _SPACE_OR_CONTROL_RUN_RE.search(text) is not None


def is_blank(text: str) -> bool:
    """Empty or only Unicode ``White_Space``."""
    return _NOT_WHITE_SPACE_RE.search(text) is None


def controls_to_space(text: str) -> str:
    """Each run of control characters becomes one space (a header or a label stays one line)."""
    return _CONTROL_RUN_RE.sub(" ", text)


def replace_lone_surrogates(text: str) -> str:
    """Each lone surrogate becomes U+FFFD, so the text can be encoded as UTF-8."""
    return LONE_SURROGATE_RE.sub(REPLACEMENT_CHARACTER, text)


def one_line(text: str, limit: int) -> str:
    """Whitespace and control runs collapsed to single spaces, stripped, cut to ``limit`` code
    points with ``…`` (for upstream error text quoted in a message)."""
    text = _SPACE_OR_CONTROL_RUN_RE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def printable(text: str) -> str:
    """``text`` safe for a terminal: controls other than tab and newline, and lone surrogates,
    become U+FFFD."""
    return _TERMINAL_UNSAFE_RE.sub(REPLACEMENT_CHARACTER, text)


def visible_text(text: str) -> str:
    """``text`` with each invisible format character written as ``<U+XXXX>`` (for display only)."""
    return _INVISIBLE_RE.sub(lambda match: f"<U+{ord(match.group()):04X}>", text)


def sentence_ends(text: str, start: int = 0, end: int | None = None) -> Iterator[int]:
    """Where each sentence of ``text[start:end]`` but the last ends: the offset after a
    :data:`SENTENCE_END_RE` match (its white space included), unless the text goes on in lower
    case there ("e.g. this", "v1. the next"), which continues the sentence. One pass, linear in
    the span."""
    stop = len(text) if end is None else end
    for match in SENTENCE_END_RE.finditer(text, start, stop):
        if match.end() >= stop:
            return
        if not text[match.end()].islower():
            yield match.end()


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends where :data:`SENTENCE_END_RE` ends a sentence (its stop, closing
    quotes and brackets included): a quoted sentence is whole at its end, not cut mid-statement."""
    return _ENDS_SENTENCE_RE.search(text) is not None


def looks_like_heading(line: str, following: str) -> bool:
    """A paragraph's first ``line`` (stripped) is a heading when it is at most
    :data:`HEADING_MAX_CHARS` code points, starts with a capital, has no sentence punctuation at
    its end and the ``following`` line starts with a capital: wrapped prose ends a line
    mid-sentence and goes on in lower case or with code instead."""
    return (
        0 < len(line) <= HEADING_MAX_CHARS
        and line[0].isupper()
        and line[-1] not in ".!?,;:"
        and following[:1].isupper()
    )
