"""Show what a title really says: invisible format characters made visible (contracts §8).

A real file may be called ``invoice_\\u202efdp.exe.md``: the RIGHT-TO-LEFT OVERRIDE makes it display
as ``invoice_dm.exe.pdf``. The contract keeps titles exactly as the provider gave them (refusing
them would make such a document uncitable, and rewriting them would change what the record says),
so every *display* of a title, dataset name or citation label runs through :func:`visible_text`,
which spells each bidi control and invisible format character as ``<U+XXXX>``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["INVISIBLE_FORMAT_RANGES", "visible_text"]

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


def visible_text(text: str) -> str:
    """``text`` with each invisible format character written as ``<U+XXXX>`` (for display only)."""
    return _INVISIBLE_RE.sub(lambda match: f"<U+{ord(match.group()):04X}>", text)
