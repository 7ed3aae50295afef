"""Write the bundled sample PDF (``sample_corpus/architecture-guide.pdf``) by hand.

A minimal, valid PDF 1.4: one uncompressed content stream per page, the standard Helvetica font
(no embedding), a correct cross-reference table. No dependency beyond the standard library, and the
output is byte-for-byte deterministic (no dates, no random ids), so regenerating it changes nothing.

    uv run python scripts/make_sample_pdf.py [OUTPUT]
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

DEFAULT_OUTPUT = (
    Path(__file__).resolve().parent.parent
    / "backend/deerflow/knowledge/sample_corpus/architecture-guide.pdf"
)
TITLE = "deerflow-knowledge architecture guide"
PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, in points
MARGIN = 72
FONT_SIZE = 11
LEADING = 15
WRAP = 84  # characters per line at 11 pt Helvetica within the margins

# Each page: a heading, then paragraphs. ASCII only (WinAnsiEncoding covers it exactly).
PAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Architecture guide, part 1: the core",
        (
            "The core of deerflow-knowledge is pure: plain values in, plain values out, with no "
            "input or output and no HTTP client. The modules contract, ids, envelope, citations, "
            "formatting, budget, forwarding, trust and native hold the rules of the evidence "
            "contract and nothing else.",
            "Input and output live only in the providers, the reference gateway and the command "
            "line. This split keeps every rule testable without a network and lets the TypeScript "
            "side implement the same rules from the same shared vectors.",
            "The contract folder holds the JSON Schema of the envelope and the shared test "
            "vectors. A case on which the Python and the TypeScript implementation disagree is a "
            "bug in one of them, never a matter of interpretation.",
        ),
    ),
    (
        "Architecture guide, part 2: moving evidence",
        (
            "Evidence must survive every path a message takes. When a tool-output budget "
            "truncates content, evidence whose handle or excerpt is no longer visible is pruned, "
            "and citation links to pruned sources are replaced by their labels.",
            "A source accumulator follows the values frames of a subagent run. It keeps at most "
            "one hundred validated sources, survives compaction of early history, and scans only "
            "the changed suffix of the message list.",
            "Streaming, checkpoints in memory, SQLite or Postgres, and run-event serialization all "
            "carry the artifact unchanged. The tests prove it with a real LangGraph graph rather "
            "than with mocks.",
        ),
    ),
    (
        "Architecture guide, part 3: rendering",
        (
            "The React renderer shows assistant Markdown with react-markdown and rehype-sanitize. "
            "Raw HTML is not rendered and remote images are not loaded. Citations are resolved "
            "after sanitizing, against sources read from the preceding tool messages.",
            "A resolved citation is a focusable chip whose preview shows the provider, the "
            "verified title, the excerpt as text, and only the locators the provider supplied. "
            "The page number printed in a chip for this guide comes from the PDF page itself.",
            "An unresolved or malformed citation is an inert label with an accessible reason. A "
            "resolved chip never flips back while a response is still streaming.",
        ),
    ),
)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content_stream(heading: str, paragraphs: tuple[str, ...], number: int) -> bytes:
    lines = [
        "BT",
        f"/F1 {FONT_SIZE + 5} Tf",
        f"{MARGIN} {PAGE_HEIGHT - MARGIN} Td",
        f"({_escape(heading)}) Tj",
        f"/F1 {FONT_SIZE} Tf",
        f"{LEADING} TL",
        "T* T*",
    ]
    for paragraph in paragraphs:
        for line in textwrap.wrap(paragraph, WRAP):
            lines.append(f"({_escape(line)}) Tj T*")
        lines.append("T*")
    lines.append("ET")
    lines += ["BT", f"/F1 9 Tf {PAGE_WIDTH // 2 - 20} {MARGIN // 2} Td (Page {number}) Tj", "ET"]
    return ("\n".join(lines) + "\n").encode("ascii")


def build_pdf() -> bytes:
    page_count = len(PAGES)
    # Object numbers: 1 catalog, 2 pages, 3 font, 4 info, then (page, content) pairs.
    first_page = 5
    page_ids = [first_page + 2 * i for i in range(page_count)]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{pid} 0 R" for pid in page_ids)
            + f"] /Count {page_count} >>"
        ).encode("ascii"),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        4: f"<< /Title ({_escape(TITLE)}) /Producer (scripts/make_sample_pdf.py) >>".encode(
            "ascii"
        ),
    }
    for index, ((heading, paragraphs), pid) in enumerate(zip(PAGES, page_ids, strict=True)):
        stream = _content_stream(heading, paragraphs, index + 1)
        objects[pid] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {pid + 1} 0 R >>"
        ).encode("ascii")
        objects[pid + 1] = (
            f"<< /Length {len(stream)} >>\nstream\n".encode("ascii") + stream + b"endstream"
        )

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode("ascii") + objects[number] + b"\nendobj\n"
    xref_at = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n".encode("ascii")
    out += b"0000000000 65535 f \n"
    for number in range(1, size):
        out += f"{offsets[number]:010d} 00000 n \n".encode("ascii")
    out += (
        f"trailer\n<< /Size {size} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref_at}\n%%EOF\n"
    ).encode("ascii")
    return bytes(out)


def main(argv: list[str]) -> None:
    output = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUTPUT
    output.write_bytes(build_pdf())
    print(f"wrote {output} ({len(PAGES)} pages)")


if __name__ == "__main__":
    main(sys.argv)
