"""``cli/_index.py``: the hint a run that indexed nothing gives, rule by rule.

``tests/test_cli.py`` runs the command end to end; these tests pin the hint's wording, the counts,
and that a hundred thousand skipped entries name each remedy once.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.cli._index import _REMEDIES, empty_hint
from deerflow.knowledge.providers.local import SkippedFile


def _skipped(*reasons: str) -> tuple[SkippedFile, ...]:
    return tuple(SkippedFile(path=f"f{n}", reason=reason) for n, reason in enumerate(reasons))


def test_a_run_that_indexed_files_has_no_hint() -> None:
    assert empty_hint("/docs", _skipped("hidden"), indexed=1) is None


def test_an_empty_folder_says_what_to_put_in_it() -> None:
    assert empty_hint("/docs", (), indexed=0) == (
        "nothing was indexed: /docs holds no files. Put Markdown (.md, .markdown), text (.txt) or "
        "PDF (.pdf) files in it, or index another folder."
    )


def test_kinds_are_counted_most_first_and_remedies_given_once_in_order_met() -> None:
    skipped = _skipped(
        "excluded by --exclude 'drafts/'",
        "unsupported type (.bin; indexed types are .md)",
        "unsupported type (.docx; indexed types are .md)",
        "excluded by --exclude '*.log'",
        "unsupported type (.exe; indexed types are .md)",
    )
    assert empty_hint("/docs", skipped, indexed=0) == (
        "nothing was indexed: all 5 entries of /docs were left out (3 unsupported type, "
        "2 excluded by). Drop the --exclude patterns that match; only .md, .markdown, .txt and "
        ".pdf files are indexed."
    )


def test_reasons_without_a_remedy_point_at_the_list() -> None:
    assert empty_hint("/docs", _skipped("unreadable (Permission denied)"), indexed=0) == (
        "nothing was indexed: all 1 entries of /docs were left out (1 other). "
        "The reasons are listed above."
    )


@pytest.mark.parametrize(("prefix", "remedy"), _REMEDIES)
def test_every_reason_kind_has_its_remedy(prefix: str, remedy: str) -> None:
    hint = empty_hint("/docs", _skipped(f"{prefix} (detail)"), indexed=0)
    assert hint is not None
    assert hint.endswith(f"(1 {prefix}). {remedy[0].upper()}{remedy[1:]}.")


@given(st.lists(st.sampled_from([*(p for p, _ in _REMEDIES), "unreadable", "too large"])))
def test_the_counts_add_up_to_the_entries(prefixes: list[str]) -> None:
    skipped = _skipped(*prefixes)
    hint = empty_hint("/docs", skipped, indexed=0)
    assert hint is not None
    if not prefixes:
        assert "holds no files" in hint
        return
    kinds = hint.split(" were left out (", 1)[1].split("). ", 1)[0]
    assert sum(int(part.split(" ", 1)[0]) for part in kinds.split(", ")) == len(prefixes)


def test_a_hundred_thousand_skipped_entries_name_each_remedy_once() -> None:
    skipped = _skipped(*(["hidden", "symbolic link"] * 50_000))
    hint = empty_hint("/docs", skipped, indexed=0)
    assert hint is not None
    assert hint.count("idden files and folders") == 1 and hint.count("links are not") == 1
    assert "(50000 hidden, 50000 symbolic link)" in hint
