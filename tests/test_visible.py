"""Bidi and invisible format characters in titles are shown, never obeyed (contracts §8), wherever
a title is displayed; ``visible_text`` itself is tested with the other text rules (test_text.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from typer.testing import CliRunner

from deerflow.knowledge import KnowledgeSource, build_envelope, find_citations, read_envelope
from deerflow.knowledge.cli import app
from deerflow.knowledge.formatting import citation_link, escape_label
from deerflow.knowledge.responder import ExtractiveResponder
from deerflow.knowledge.text import visible_text

SPOOF = "invoice_\u202efdp.exe.md"  # displays as "invoice_dm.exe.pdf"
SHOWN = "invoice_<U+202E>fdp.exe.md"
runner = CliRunner()


def test_the_text_rule_shows_the_override() -> None:
    assert visible_text(SPOOF) == SHOWN


# --------------------------------------------------------------------------- where titles show


def test_the_record_keeps_the_exact_title_and_the_label_is_visible() -> None:
    source = KnowledgeSource.create(provider="local", title=SPOOF, excerpt="Pay 100.")
    assert escape_label(SPOOF) == SHOWN
    link = citation_link(source)
    assert link == f"[citation:{SHOWN}](#knowledge-source-{source.id})"
    content = f"{link}\n{source.excerpt}"
    [read] = read_envelope(content, build_envelope([source])).sources
    assert read.title == SPOOF  # lossless: still citable under its real name


def test_responder_answer_shows_the_title_visibly() -> None:
    source = KnowledgeSource.create(
        provider="local", title=SPOOF, excerpt="Invoices are paid within thirty days."
    )
    history = [
        HumanMessage("When are invoices paid?"),
        AIMessage(
            "", tool_calls=[{"name": "knowledge_search", "args": {"query": "x"}, "id": "c1"}]
        ),
        ToolMessage(
            content=f"{citation_link(source)}\n{source.excerpt}",
            tool_call_id="c1",
            name="knowledge_search",
            artifact=build_envelope([source]),
        ),
    ]
    answer = str(ExtractiveResponder().invoke(history).content)
    assert "\u202e" not in answer
    assert SHOWN in answer
    assert {c.source_id for c in find_citations(answer)} == {source.id}


def test_cli_search_and_index_print_the_title_visibly(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / SPOOF).write_text("Invoices are paid within thirty days.", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    indexed = runner.invoke(app, ["index", str(docs), "--index", str(index)])
    assert indexed.exit_code == 0, indexed.output
    result = runner.invoke(app, ["search", "invoices paid", "--index", str(index)])
    assert result.exit_code == 0, result.output
    assert "\u202e" not in result.stdout
    assert SHOWN in result.stdout
    as_json = runner.invoke(app, ["search", "invoices paid", "--index", str(index), "--json"])
    payload = json.loads(as_json.stdout)
    [source] = read_envelope(payload["content"], payload["artifact"]).sources
    assert source.title == SPOOF


def test_cli_verify_prints_the_title_visibly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deerflow.knowledge import cli

    # The console's width is fixed when it is made; a wide one keeps the title on one line.
    monkeypatch.setattr(cli._out, "width", 200)
    source = KnowledgeSource.create(provider="local", title=SPOOF, excerpt="Pay 100.")
    messages = [
        ToolMessage(
            content=f"{citation_link(source)}\n{source.excerpt}",
            tool_call_id="c1",
            name="knowledge_search",
            artifact=build_envelope([source]),
        ),
        AIMessage(
            f"Pay it {citation_link(source)}. Or [the raw \u202etxt.exe](#knowledge-source-{source.id})"
        ),
    ]
    thread = tmp_path / "thread.json"
    thread.write_text(json.dumps([m.model_dump(mode="json") for m in messages]))
    result = runner.invoke(app, ["verify", str(thread)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "\u202e" not in result.stdout
    assert SHOWN in result.stdout
    assert "<U+202E>txt.exe" in result.stdout  # the model's own label too
    report = json.loads(runner.invoke(app, ["verify", str(thread), "--json"]).stdout)
    assert report["citations"][0]["title"] == SPOOF
