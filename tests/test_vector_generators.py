"""The committed vectors are exactly what their generators write (so a hand edit of a vector, or a
generator change without `make vectors`, fails here)."""

from __future__ import annotations

import filecmp
import runpy
from pathlib import Path

import pytest

from tests.vectors import ROOT, VECTORS_DIR


@pytest.mark.parametrize(
    ("script", "outputs"),
    [
        ("generate_vectors.py", ["source_ids.json", "envelopes.json", "citations.json"]),
        (
            "generate_native_vectors.py",
            ["native_ragflow.json", "native_budgets.json", "saved_evidence.json"],
        ),
        ("generate_display_vectors.py", ["visible_text.json"]),
        ("generate_grammar_vectors.py", ["citation_grammar.json"]),
    ],
)
def test_committed_vectors_match_their_generator(
    script: str,
    outputs: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace = runpy.run_path(str(ROOT / "scripts" / script))
    out_dir = tmp_path / "vectors"
    out_dir.mkdir()
    main = namespace["main"]
    globals_ = main.__globals__
    if "VECTORS" in globals_:
        monkeypatch.setitem(globals_, "VECTORS", out_dir)
    if "OUT" in globals_:
        monkeypatch.setitem(globals_, "OUT", out_dir / "native_ragflow.json")
    main()
    capsys.readouterr()
    for name in outputs:
        assert filecmp.cmp(out_dir / name, VECTORS_DIR / name, shallow=False), (
            f"{name} is stale: run `make vectors`"
        )
