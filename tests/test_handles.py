from __future__ import annotations

import re
from pathlib import Path

import pytest

from deerflow.knowledge import budget, envelope, handles, native
from deerflow.knowledge.handles import classify_destination

H = "0123456789abcdef0123456789abcdef"
PACKAGE = Path(handles.__file__).parent


@pytest.mark.parametrize(
    ("destination", "citation_label", "expected"),
    [
        (f"#knowledge-source-{H}", False, ("shared", H, None)),
        (f"#user-content-knowledge-source-{H}", False, ("shared", H, None)),
        (f"#knowledge-source-{H.upper()}", False, ("malformed", None, "bad_source_id")),
        (f"#knowledge-source-{H}0", False, ("malformed", None, "bad_source_id")),
        ("#user-content-knowledge-source-", False, ("malformed", None, "bad_source_id")),
        (f"#knowledge-{H}-1", False, ("native", f"{H}-1", None)),
        (f"#user-content-knowledge-{H}-999", False, ("native", f"{H}-999", None)),
        (f"#knowledge-{H}-1000", False, ("other", None, None)),
        (f"#knowledge-{H}-01", True, ("malformed", None, "unsupported_destination")),
        ("https://deer.example/", True, ("web", None, None)),
        ("https://deer.example/", False, ("other", None, None)),
        ("HTTPS://deer.example/", True, ("malformed", None, "unsupported_destination")),
        ("javascript:alert(1)", True, ("malformed", None, "unsupported_destination")),
        ("", True, ("malformed", None, "unsupported_destination")),
        ("#anchor", False, ("other", None, None)),
    ],
)
def test_the_destination_table(
    destination: str, citation_label: bool, expected: tuple[str, str | None, str | None]
) -> None:
    assert classify_destination(destination, citation_label=citation_label) == expected


def test_every_module_takes_the_handle_grammar_from_handles() -> None:
    assert envelope._HANDLE_RE is handles.SHARED_HANDLE_PATTERN
    assert envelope.SHARED_HANDLE_PREFIX is handles.SHARED_HANDLE_PREFIX
    assert native._records._LINK_RE is handles.NATIVE_LINK_PATTERN
    assert native.NATIVE_ID_PATTERN is handles.NATIVE_ID_PATTERN
    assert native.NATIVE_HANDLE_PREFIX is handles.NATIVE_HANDLE_PREFIX
    assert budget._HANDLE_TOKEN_RE is handles.HANDLE_TOKEN_PATTERN
    # Nowhere else is a handle pattern or prefix spelled out.
    spelled = re.compile(r"""["']#(?:user-content-)?knowledge-|re\.compile\([^)]*knowledge-""")
    offenders = [
        path.name
        for path in PACKAGE.rglob("*.py")
        if path.name != "handles.py" and spelled.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
