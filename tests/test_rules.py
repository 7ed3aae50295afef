"""The contract's rules and limits (rules.py): each field rule at its limit and one past it, the
output budgets' order, and the module's reason to exist — it imports no pydantic.

The cross-language verdicts live in contracts/vectors (test_vectors.py); these tests pin the
Python predicates around them.
"""

from __future__ import annotations

import json
import subprocess
import sys

from deerflow.knowledge import rules
from deerflow.knowledge.rules import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_CHARS_PER_HIT,
    DEFAULT_OUTPUT_MAX_CHARS,
    DEFAULT_OUTPUT_PREVIEW_CHARS,
    GATEWAY_OUTPUT_MAX_CHARS,
    MAX_DATASET_NAME_CHARS,
    MAX_EXCERPT_CHARS,
    MAX_MAX_CHARS,
    MAX_OUTPUT_MAX_CHARS,
    MAX_PAGE,
    MAX_PROVIDER_CHARS,
    MAX_TITLE_CHARS,
    MAX_URL_CHARS,
    MIN_MAX_CHARS,
    MIN_OUTPUT_MAX_CHARS,
    MIN_PAGE,
    is_valid_dataset_name,
    is_valid_excerpt,
    is_valid_page,
    is_valid_provider,
    is_valid_title,
    is_valid_url,
)


def test_each_length_limit_holds_exactly_at_the_limit() -> None:
    assert is_valid_title("t" * MAX_TITLE_CHARS) and not is_valid_title("t" * (MAX_TITLE_CHARS + 1))
    assert is_valid_dataset_name("d" * MAX_DATASET_NAME_CHARS)
    assert not is_valid_dataset_name("d" * (MAX_DATASET_NAME_CHARS + 1))
    assert is_valid_excerpt("e" * MAX_EXCERPT_CHARS)
    assert not is_valid_excerpt("e" * (MAX_EXCERPT_CHARS + 1))
    assert is_valid_provider("p" * MAX_PROVIDER_CHARS)
    assert not is_valid_provider("p" * (MAX_PROVIDER_CHARS + 1))
    url = "https://example.org/"
    assert is_valid_url(url + "a" * (MAX_URL_CHARS - len(url)))
    assert not is_valid_url(url + "a" * (MAX_URL_CHARS - len(url) + 1))
    assert is_valid_page(MIN_PAGE) and is_valid_page(MAX_PAGE) and is_valid_page(2.0)
    assert not is_valid_page(MIN_PAGE - 1) and not is_valid_page(MAX_PAGE + 1)
    assert not is_valid_page(True) and not is_valid_page(2.5)


def test_titles_refuse_controls_surrogates_and_blanks_but_keep_text_as_is() -> None:
    assert is_valid_title(" Déjà vu.pdf ")
    for bad in ["", "   ", "a\nb", "a\x7fb", "a\ud800b", None, 3]:
        assert not is_valid_title(bad)


def test_an_outer_output_budget_never_cuts_an_inner_one_at_its_default() -> None:
    # The tool writes at most DEFAULT_MAX_CHARS; the gateway's middleware and the middleware's own
    # default must leave such a result whole, and each default lies within its own bounds.
    assert MIN_MAX_CHARS <= DEFAULT_MAX_CHARS <= MAX_MAX_CHARS
    assert 1 <= DEFAULT_MAX_CHARS_PER_HIT <= min(MAX_EXCERPT_CHARS, DEFAULT_MAX_CHARS)
    assert DEFAULT_MAX_CHARS <= GATEWAY_OUTPUT_MAX_CHARS <= DEFAULT_OUTPUT_MAX_CHARS
    assert MIN_OUTPUT_MAX_CHARS <= DEFAULT_OUTPUT_MAX_CHARS <= MAX_OUTPUT_MAX_CHARS
    assert 0 <= DEFAULT_OUTPUT_PREVIEW_CHARS <= DEFAULT_OUTPUT_MAX_CHARS
    assert MAX_MAX_CHARS <= MAX_OUTPUT_MAX_CHARS  # any tool budget is a valid middleware budget


def test_the_rules_import_no_pydantic() -> None:
    # The package is registered without running its __init__ (which loads the models), as a
    # process that needs only the rules does; the rules themselves must not reach pydantic.
    code = (
        "import json, sys; from importlib.util import find_spec, module_from_spec; "
        "import deerflow; "
        "deerflow.knowledge = sys.modules['deerflow.knowledge'] = "
        "module_from_spec(find_spec('deerflow.knowledge')); "
        "import deerflow.knowledge.rules; print(json.dumps(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(result.stdout))
    assert "deerflow.knowledge.rules" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] in {"pydantic", "pydantic_core"}) == []
    assert sorted(m for m in loaded if m.startswith("deerflow.knowledge.")) == [
        "deerflow.knowledge.rules",
        "deerflow.knowledge.text",
    ]


def test_every_rule_has_one_home() -> None:
    # No other module of the package defines a name the rules define: a bound or a predicate
    # has one spelling, imported from here.
    import ast
    from pathlib import Path

    package = Path(rules.__file__).parent
    own = set(rules.__all__)
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "rules.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                targets = [ast.Name(id=node.name)]
            offenders += [
                f"{path.relative_to(package)}:{t.id}"
                for t in targets
                if isinstance(t, ast.Name) and t.id in own
            ]
    assert offenders == []
