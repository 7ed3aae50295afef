"""WholeEntries: an entry is placed whole or skipped whole, never cut."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.fitting import WholeEntries


def test_entries_that_do_not_fit_are_skipped_and_smaller_later_ones_still_fit() -> None:
    room = WholeEntries(10, separator="--")
    assert room.take("abcd")  # 4, no separator before the first piece
    assert not room.take("x" * 5)  # 4 + 2 + 5 = 11 > 10: skipped whole
    assert room.take("abcd")  # 4 + 2 + 4 = 10: exactly fits
    assert not room.take("")  # even an empty entry costs its separator
    assert (room.used, room.taken, room.skipped) == (10, 2, 2)


def test_what_is_already_used_pays_the_separator() -> None:
    room = WholeEntries(10, used=3, separator="--")
    assert room.cost("abcde") == 7 and room.fits("abcde") and not room.fits("abcdef")
    with pytest.raises(ValueError):
        WholeEntries(10, used=-1)


@given(st.lists(st.text(max_size=20), max_size=12), st.integers(0, 120), st.text(max_size=3))
def test_laid_out_text_never_exceeds_the_budget(entries: list[str], budget: int, sep: str) -> None:
    room = WholeEntries(budget, separator=sep)
    taken = [entry for entry in entries if room.take(entry)]
    laid_out = sep.join(taken)
    assert len(laid_out) == room.used if taken else room.used == 0
    assert len(laid_out) <= budget
    assert room.taken + room.skipped == len(entries)
