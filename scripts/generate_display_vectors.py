"""Write contracts/vectors/visible_text.json from hand-declared cases (contracts/README.md §8).

``visible_text`` is how titles, dataset names and citation labels are displayed: each bidi control
and invisible format character becomes ``<U+XXXX>``. The expectations are spelled out by hand (the
range table below is the normative one from §8, restated here, not imported), so the vectors test
both implementations instead of echoing one. Case ids are stable: append, never renumber.

Run: uv run python scripts/generate_display_vectors.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent.parent / "contracts" / "vectors"

# contracts/README.md §8, restated.
SHOWN = [
    (0x061C, 0x061C, "ARABIC LETTER MARK"),
    (0x180E, 0x180E, "MONGOLIAN VOWEL SEPARATOR"),
    (0x200B, 0x200B, "ZERO WIDTH SPACE"),
    (0x200E, 0x200F, "LRM, RLM"),
    (0x202A, 0x202E, "LRE, RLE, PDF, LRO, RLO"),
    (0x2060, 0x2064, "WORD JOINER .. INVISIBLE PLUS"),
    (0x2066, 0x206F, "LRI, RLI, FSI, PDI and the deprecated format characters"),
    (0xFEFF, 0xFEFF, "ZERO WIDTH NO-BREAK SPACE (BOM)"),
    (0xFFF9, 0xFFFB, "INTERLINEAR ANNOTATION"),
    (0x1BCA0, 0x1BCA3, "SHORTHAND FORMAT"),
    (0x1D173, 0x1D17A, "MUSICAL SYMBOL format"),
    (0xE0001, 0xE0001, "LANGUAGE TAG"),
    (0xE0020, 0xE007F, "TAG characters"),
]
KEPT = [
    (0x00AD, "SOFT HYPHEN"),
    (0x0600, "ARABIC NUMBER SIGN (visible in Arabic)"),
    (0x200A, "HAIR SPACE (white space, visible width)"),
    (0x200C, "ZERO WIDTH NON-JOINER (shapes Persian and Indic text)"),
    (0x200D, "ZERO WIDTH JOINER (emoji sequences)"),
    (0x2065, "unassigned, between the ranges"),
    (0x2070, "SUPERSCRIPT ZERO"),
    (0xFE0F, "VARIATION SELECTOR-16 (emoji presentation)"),
    (0xFFFC, "OBJECT REPLACEMENT CHARACTER (visible)"),
    (0xE0000, "unassigned, below the tags"),
    (0xE0080, "unassigned, above the tags"),
]


def shown(cp: int) -> str:
    return f"<U+{cp:04X}>"


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def case(description: str, text: str, expected: str) -> None:
        out.append(
            {
                "id": f"vis-{len(out) + 1:03d}",
                "description": description,
                "text": text,
                "expected": expected,
            }
        )

    case(
        "the spoof: RLO makes invoice_dm.exe.pdf",
        "invoice_\u202efdp.exe.md",
        "invoice_<U+202E>fdp.exe.md",
    )
    case("plain ASCII is unchanged", "guides/setup.md", "guides/setup.md")
    case("the empty string", "", "")
    case("Hebrew and Arabic letters are text, not controls", "מדריך دليل.md", "מדריך دليل.md")
    case("an isolate pair", "a\u2067b\u2069c", "a<U+2067>b<U+2069>c")
    case(
        "emoji ZWJ sequence kept",
        "team \U0001f468\u200d\U0001f469\u200d\U0001f467.md",
        "team \U0001f468\u200d\U0001f469\u200d\U0001f467.md",
    )
    case("tag characters smuggling ASCII", "x\U000e0068\U000e0069", "x<U+E0068><U+E0069>")
    case("the escape's own spelling is left as text", "<U+202E>", "<U+202E>")
    case("a BOM at the start", "\ufeffnotes.md", "<U+FEFF>notes.md")
    case("runs are escaped one by one", "\u202e\u202e", "<U+202E><U+202E>")
    for low, high, name in SHOWN:
        case(f"{name}: first of its range", f"[{chr(low)}]", f"[{shown(low)}]")
        if high != low:
            case(f"{name}: last of its range", f"[{chr(high)}]", f"[{shown(high)}]")
    for cp, name in KEPT:
        case(f"kept: {name}", f"[{chr(cp)}]", f"[{chr(cp)}]")
    return out


def main() -> None:
    VECTORS.mkdir(parents=True, exist_ok=True)
    all_cases = cases()
    ids = [case["id"] for case in all_cases]
    assert len(ids) == len(set(ids))
    path = VECTORS / "visible_text.json"
    path.write_text(
        json.dumps(
            {
                "file": "visible_text",
                "description": "visible_text(text) -> expected: how titles, dataset names and "
                "labels are displayed (§8).",
                "cases": all_cases,
            },
            ensure_ascii=True,
            indent=1,
        )
        + "\n"
    )
    print(f"{path.relative_to(VECTORS.parent.parent)}: {len(all_cases)} cases")


if __name__ == "__main__":
    main()
