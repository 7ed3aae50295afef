"""The per-line nesting budget the Python side shares with the renderer (``_nesting``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge._nesting import (
    MAX_INDENT_COLUMNS,
    MAX_NESTING_DEPTH,
    cap_nesting,
    capped_starts,
    original_offset,
)
from tests.steps import line_steps


def test_markers_at_the_limit_stay_and_one_past_it_is_escaped() -> None:
    at = "> " * MAX_NESTING_DEPTH + "x"
    assert cap_nesting(at) == (at, [])
    past = "> " * (MAX_NESTING_DEPTH + 1) + "x"
    capped, edits = cap_nesting(past)
    assert capped == "> " * MAX_NESTING_DEPTH + "\\> x"
    assert edits == [(2 * MAX_NESTING_DEPTH, 2 * MAX_NESTING_DEPTH, "\\")]
    ordered = "1. " * (MAX_NESTING_DEPTH + 1) + "x"  # an ordered marker is escaped at its "."
    assert cap_nesting(ordered)[0] == "1. " * MAX_NESTING_DEPTH + "1\\. x"


def test_indentation_at_the_limit_stays_and_past_it_is_trimmed() -> None:
    at = " " * MAX_INDENT_COLUMNS + "x"
    assert cap_nesting(at) == (at, [])
    assert cap_nesting("\t" * 33 + "x")[0] == " " * MAX_INDENT_COLUMNS + "x"


def test_fenced_code_is_exempt() -> None:
    inside = "```\n" + "> " * 40 + "x\n```"
    assert cap_nesting(inside) == (inside, [])


_LINE = st.text(alphabet="> -*+1.)\t x`~", max_size=120)


@given(st.lists(_LINE, max_size=6))
def test_every_original_character_maps_back_to_itself(lines: list[str]) -> None:
    markdown = "\n".join(lines)
    capped, edits = cap_nesting(markdown, max_depth=3, max_indent_columns=8)
    starts = capped_starts(edits)
    inserted = set()
    for (_start, _end, text), capped_start in zip(edits, starts, strict=True):
        inserted.update(range(capped_start, capped_start + len(text)))
    for offset, char in enumerate(capped):
        if offset not in inserted:
            assert markdown[original_offset(edits, starts, offset)] == char
    assert original_offset(edits, starts, len(capped)) == len(markdown)


def _lines_run(markdown: str) -> int:
    """Python line events executed inside ``_nesting`` while capping ``markdown``."""
    from deerflow.knowledge import _nesting

    def run() -> None:
        capped, edits = _nesting.cap_nesting(markdown)
        starts = _nesting.capped_starts(edits)
        for offset in range(0, len(capped), max(1, len(capped) // 64)):
            _nesting.original_offset(edits, starts, offset)

    return line_steps(run, in_file=_nesting.__file__.__eq__)


@pytest.mark.parametrize(
    "unit", [">", "> ", "- ", " ", "\n", "1. ", "> ```\n", "[x](#knowledge-source-a)\n"]
)
def test_capping_costs_linear_work_up_to_a_million_characters(unit: str) -> None:
    """Counted, not timed: ten times the hostile input costs at most about ten times the steps."""
    small = _lines_run(unit * (100_000 // len(unit)))
    large = _lines_run(unit * (1_000_000 // len(unit)))
    assert large <= 11 * small + 1_000
