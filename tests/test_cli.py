"""The ``deerflow-knowledge`` command line, driven through typer's CliRunner."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict
from typer.testing import CliRunner

from deerflow.knowledge import KnowledgeSource, build_envelope, cli, read_envelope
from deerflow.knowledge.audit import audit_thread, thread_messages
from deerflow.knowledge.cli import (
    EXIT_FINDING,
    EXIT_UPSTREAM,
    EXIT_USAGE,
    app,
)
from deerflow.knowledge.formatting import citation_link

SECRET = "sk-CLI-SECRET-MARKER-7c1d"
ENV_VARS = (
    "DEERFLOW_KNOWLEDGE_PROVIDER",
    "DEERFLOW_KNOWLEDGE_INDEX",
    "DEERFLOW_KNOWLEDGE_DATASET_NAME",
    "LIGHTRAG_BASE_URL",
    "LIGHTRAG_API_KEY",
    "LIGHTRAG_MODE",
    "RAGFLOW_BASE_URL",
    "RAGFLOW_API_KEY",
    "RAGFLOW_DATASETS",
)

runner = CliRunner()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("cli") / "index.sqlite"
    result = runner.invoke(app, ["index", "--index", str(index)])
    assert result.exit_code == 0, result.output
    return index


def _json(output: str) -> Any:
    return json.loads(output)


def _one_line(stderr: str) -> bool:
    """Exactly one message: no library warning repeating it, no traceback."""
    return len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr


# --------------------------------------------------------------------------- index


def test_index_sample_corpus_then_update(tmp_path: Path, sample_index: Path) -> None:
    result = runner.invoke(app, ["index", "--index", str(sample_index), "--json"])
    assert result.exit_code == 0, result.output
    report = _json(result.stdout)
    assert report["added"] == [] and report["skipped"] == []
    assert "architecture-guide.pdf" in report["unchanged"]
    assert "providers/lightrag-setup.md" in report["unchanged"]
    assert report["documents"] == len(report["unchanged"]) >= 8

    table = runner.invoke(app, ["index", "--index", str(sample_index)])
    assert table.exit_code == 0
    assert "Unchanged" in table.stdout and "Chunks in index" in table.stdout


def test_index_reports_skipped_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("Fine text about owls.")
    (docs / "bad.pdf").write_bytes(b"%PDF-1.4 garbage")
    result = runner.invoke(app, ["index", str(docs), "--index", str(tmp_path / "i.sqlite")])
    assert result.exit_code == 0, result.output
    assert "Skipped files" in result.stdout and "bad.pdf" in result.stdout
    assert "corrupt or unsupported PDF" in result.stdout


def _index(*args: str) -> Any:
    return runner.invoke(app, ["index", *args])


def test_index_a_second_folder_needs_add_or_replace(tmp_path: Path) -> None:
    # Before: `index docs` then `index notes` silently replaced docs ("Removed 1").
    index = str(tmp_path / "i.sqlite")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "owls.md").write_text("Owls hunt at night.")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "herons.md").write_text("Herons wade at dawn.")
    assert _index(str(tmp_path / "docs"), "--index", index).exit_code == 0
    refused = _index(str(tmp_path / "notes"), "--index", index)
    assert refused.exit_code == 2 and _one_line(refused.stderr)
    assert "holds 1 documents from" in refused.stderr and "--add" in refused.stderr
    assert "--replace" in refused.stderr and "nothing was changed" in refused.stderr

    added = _json(_index(str(tmp_path / "notes"), "--index", index, "--add", "--json").stdout)
    assert added["added"] == ["herons.md"] and added["removed"] == [] and added["documents"] == 2
    assert added["other_folders"] == [
        {"folder": (tmp_path / "docs").resolve().as_posix(), "documents": 1}
    ]
    again = _index(str(tmp_path / "docs"), "--index", index)  # a folder in the index: no prompt
    assert again.exit_code == 0 and "Also in the index: 1 documents from" in again.stdout
    replaced = _index(str(tmp_path / "notes"), "--index", index, "--replace", "--json")
    assert _json(replaced.stdout)["removed"] == ["owls.md"]
    both = _index(str(tmp_path / "notes"), "--index", index, "--add", "--replace")
    assert both.exit_code == 2 and "opposite" in both.stderr


def test_index_exclude_and_gitignore(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "node_modules" / "pkg").mkdir(parents=True)
    (docs / "node_modules" / "pkg" / "README.md").write_text("Package readme.")
    (docs / "build").mkdir()
    (docs / "build" / "out.md").write_text("Generated.")
    (docs / "drafts").mkdir()
    (docs / "drafts" / "a.md").write_text("Draft.")
    (docs / ".gitignore").write_text("build/\n")
    (docs / "ok.md").write_text("Fine text about owls.")
    index = str(tmp_path / "i.sqlite")
    report = _json(
        _index(
            str(docs),
            "--index",
            index,
            "--exclude",
            "node_modules",
            "--exclude",
            "drafts/",
            "--json",
        ).stdout
    )
    assert report["added"] == ["ok.md"]
    assert [(s["path"], s["reason"]) for s in report["skipped"]] == [
        (".gitignore", "hidden file (its name starts with a dot)"),
        ("build/", "ignored by .gitignore ('build/')"),
        ("drafts/", "excluded by the pattern 'drafts/'"),
        ("node_modules/", "excluded by the pattern 'node_modules'"),
    ]
    unignored = _json(_index(str(docs), "--index", index, "--no-gitignore", "--json").stdout)
    assert unignored["added"] == ["build/out.md", "drafts/a.md", "node_modules/pkg/README.md"]
    bad = _index(str(docs), "--index", index, "--exclude", " ")
    assert bad.exit_code == 2 and _one_line(bad.stderr) and "exclude" in bad.stderr


def test_index_lists_unsupported_files_and_says_why_nothing_was_indexed(tmp_path: Path) -> None:
    # Before: random.bin was skipped without a word and the run reported "Added 0", no hint.
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "random.bin").write_bytes(b"\x00\x01")
    (docs / "notes.docx").write_bytes(b"PK")
    result = _index(str(docs), "--index", str(tmp_path / "i.sqlite"), "--json")
    report = _json(result.stdout)
    assert [s["path"] for s in report["skipped"]] == ["notes.docx", "random.bin"]
    assert report["skipped"][1]["reason"].startswith("unsupported type (.bin; indexed types are")
    assert report["nothing_indexed"] == (
        f"nothing was indexed: all 2 entries of {docs.resolve().as_posix()} were left out "
        "(2 unsupported type). Only .md, .markdown, .txt and .pdf files are indexed."
    )
    table = _index(str(docs), "--index", str(tmp_path / "i.sqlite"))
    assert table.exit_code == 0 and "random.bin" in table.stdout
    assert "Warning: nothing was indexed" in table.stderr


def test_index_an_empty_folder_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = _index(str(tmp_path / "empty"), "--index", str(tmp_path / "i.sqlite"))
    assert result.exit_code == 0
    assert "nothing was indexed" in result.stderr and "holds no files" in result.stderr
    assert "Markdown (.md, .markdown)" in " ".join(result.stderr.split())


def test_index_uses_the_environment_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Hello owls.")
    monkeypatch.setenv("DEERFLOW_KNOWLEDGE_INDEX", str(tmp_path / "env.sqlite"))
    result = runner.invoke(app, ["index", str(docs), "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "env.sqlite").is_file()


def test_index_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["index", str(tmp_path / "missing"), "--index", str(tmp_path / "i.sqlite")]
    )
    assert result.exit_code == 2


# --------------------------------------------------------------------------- search


def test_search_shows_verified_sources(sample_index: Path) -> None:
    result = runner.invoke(
        app, ["search", "pages of a PDF in the local index", "--index", str(sample_index)]
    )
    assert result.exit_code == 0, result.output
    assert "verified" in result.stdout
    assert "every source verified" in result.stdout


def test_search_json_artifact_verifies(sample_index: Path) -> None:
    result = runner.invoke(
        app, ["search", "subagent source accumulator", "--index", str(sample_index), "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = _json(result.stdout)
    assert set(payload) == {"content", "artifact"}
    read = read_envelope(payload["content"], payload["artifact"])
    assert read.error is None and not read.rejected and read.sources
    pdf = [s for s in read.sources if s.title == "architecture-guide.pdf"]
    assert pdf and pdf[0].page == 2
    assert all(s.provider == "local" and s.url is None for s in read.sources)


def test_search_hostile_document_prints_as_text(sample_index: Path) -> None:
    result = runner.invoke(
        app, ["search", "canary-hostile-payload", "--index", str(sample_index), "--raw"]
    )
    assert result.exit_code == 0, result.output
    assert "hostile-payloads.md" in result.stdout
    for payload in ("[bold red]not bold[/bold red]", "<script>alert(1)</script>"):
        assert payload in result.stdout  # printed as text, never as console markup


def test_search_without_index_fails_clearly(tmp_path: Path) -> None:
    result = runner.invoke(app, ["search", "deer", "--index", str(tmp_path / "none.sqlite")])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith("Error: No index at") and _one_line(result.stderr)
    assert "deerflow-knowledge index PATH" in result.stderr
    as_json = runner.invoke(
        app, ["search", "deer", "--index", str(tmp_path / "n.sqlite"), "--json"]
    )
    assert as_json.exit_code == EXIT_USAGE
    assert _json(as_json.stdout)["content"].startswith("Error: No index at")
    assert _json(as_json.stdout)["artifact"] is None


def test_search_nothing_found(sample_index: Path) -> None:
    result = runner.invoke(app, ["search", "zzzqqq", "--index", str(sample_index)])
    assert result.exit_code == 0
    assert "No relevant content found." in result.stdout


def test_unknown_provider_is_a_usage_error() -> None:
    result = runner.invoke(app, ["search", "deer", "--provider", "elastic"])
    assert result.exit_code == 2
    assert "Unknown provider" in result.stderr


# --------------------------------------------------------------------------- secrets


def test_lightrag_key_from_environment_is_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTRAG_API_KEY", SECRET)
    monkeypatch.setenv("LIGHTRAG_BASE_URL", "http://127.0.0.1:9")  # discard port: refused
    result = runner.invoke(app, ["search", "deer", "--provider", "lightrag"])
    assert result.exit_code == EXIT_UPSTREAM
    assert result.stderr.startswith("Error:") and _one_line(result.stderr)
    assert SECRET not in result.output
    as_json = runner.invoke(app, ["search", "deer", "--provider", "lightrag", "--json"])
    assert SECRET not in as_json.output


def test_ragflow_key_from_config_is_never_printed(tmp_path: Path) -> None:
    config = tmp_path / "knowledge.toml"
    config.write_text(
        'provider = "ragflow"\n[ragflow]\nbase_url = "http://127.0.0.1:9"\n'
        f'api_key = "{SECRET}"\ndatasets = ["d1"]\n'
    )
    result = runner.invoke(app, ["search", "deer", "--config", str(config)])
    assert result.exit_code != 0
    assert SECRET not in result.output
    bad_url = runner.invoke(
        app, ["search", "deer", "--config", str(config), "--base-url", f"http://u:{SECRET}@h"]
    )
    assert bad_url.exit_code == 2 and SECRET not in bad_url.output
    broken = tmp_path / "broken.toml"
    broken.write_text(f'[ragflow]\napi_key = "{SECRET}\n')
    result = runner.invoke(app, ["search", "deer", "--config", str(broken)])
    assert result.exit_code == 2 and "not valid TOML" in result.stderr
    assert SECRET not in result.output


def test_help_never_shows_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTRAG_API_KEY", SECRET)
    monkeypatch.setenv("RAGFLOW_API_KEY", SECRET)
    for command in ([], ["index"], ["search"], ["verify"], ["serve"]):
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0
        assert SECRET not in result.output


def test_config_file_with_unknown_keys_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "k.toml"
    config.write_text('[lightrag]\nbase_ulr = "http://x"\n')
    result = runner.invoke(app, ["search", "deer", "--config", str(config)])
    assert result.exit_code == 2
    assert "lightrag.base_ulr" in result.stderr


# --------------------------------------------------------------------------- verify


def _tool_message(*sources: KnowledgeSource, call_id: str = "c1") -> ToolMessage:
    content = "\n\n".join(f"{citation_link(s)}\n{s.excerpt}" for s in sources)
    return ToolMessage(
        content=content,
        artifact=build_envelope(sources),
        tool_call_id=call_id,
        name="knowledge_search",
    )


def _thread(tmp_path: Path, messages: list[Any], name: str = "thread.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(messages))
    return path


GOOD = KnowledgeSource.create(provider="local", title="deer.md", excerpt="Deer shed antlers.")
OTHER = KnowledgeSource.create(provider="local", title="owl.md", excerpt="Owls hunt at night.")


def _clean_thread() -> list[Any]:
    return [
        HumanMessage("Tell me about deer."),
        AIMessage(
            "", tool_calls=[{"id": "c1", "name": "knowledge_search", "args": {"query": "deer"}}]
        ),
        _tool_message(GOOD, OTHER),
        AIMessage(
            f"Deer shed antlers {citation_link(GOOD)}. See also [the web](https://example.org)."
        ),
    ]


def _forged_thread() -> list[Any]:
    messages = _clean_thread()
    tool = messages[2]
    assert isinstance(tool, ToolMessage)
    artifact = json.loads(json.dumps(tool.artifact))
    artifact["knowledge_sources"][1]["excerpt"] = "Owls are secretly deer."  # edited evidence
    messages[2] = ToolMessage(
        content=tool.content, artifact=artifact, tool_call_id="c1", name="knowledge_search"
    )
    messages.append(AIMessage(f"Owls are deer {citation_link(OTHER)}."))
    return messages


def test_verify_clean_thread_exits_zero(tmp_path: Path) -> None:
    thread = _thread(tmp_path, [m.model_dump(mode="json") for m in _clean_thread()])
    result = runner.invoke(app, ["verify", str(thread), "--json"])
    assert result.exit_code == 0, result.output
    report = _json(result.stdout)
    assert report["forged"] is False
    statuses = [(c["status"], c["source_id"]) for c in report["citations"]]
    assert statuses == [("verified", GOOD.id)]  # the plain web link is not a citation
    assert report["citations"][0]["title"] == "deer.md"
    table = runner.invoke(app, ["verify", str(thread)])
    assert table.exit_code == 0 and "1 verified" in table.stdout


def test_verify_forged_citation_exits_one(tmp_path: Path) -> None:
    as_dicts = messages_to_dict(_forged_thread())
    thread = _thread(tmp_path, {"values": {"messages": as_dicts}})  # type: ignore[arg-type]
    result = runner.invoke(app, ["verify", str(thread), "--json"])
    assert result.exit_code == 1, result.output
    report = _json(result.stdout)
    assert report["forged"] is True
    forged = [c for c in report["citations"] if c["status"] == "forged"]
    assert [(c["source_id"], c["reason"]) for c in forged] == [(OTHER.id, "id_mismatch")]
    table = runner.invoke(app, ["verify", str(thread)])
    assert table.exit_code == 1 and "forged" in table.stdout


def test_verify_classifies_every_kind(tmp_path: Path) -> None:
    missing = "0123456789abcdef0123456789abcdef"
    messages: list[Any] = [
        {"type": "ai", "content": f"Early {citation_link(GOOD)}."},  # evidence comes later
        _tool_message(GOOD).model_dump(mode="json"),
        {
            "type": "ai",
            "content": [
                {"type": "text", "text": f"Good {citation_link(GOOD)}."},
                {"type": "text", "text": f"[citation:Ghost](#knowledge-source-{missing})"},
                "[citation:Bad](#knowledge-source-XYZ) [citation:Web](https://example.org)",
                {"type": "image_url", "image_url": "x"},
            ],
        },
        {"role": "assistant", "content": f"`[citation:Code](#knowledge-source-{missing})`"},
    ]
    audits = audit_thread(thread_messages(messages))
    assert [(a.message_index, a.status) for a in audits] == [
        (0, "evidence-not-loaded"),
        (2, "verified"),
        (2, "evidence-not-loaded"),
        (2, "malformed"),
        (2, "web"),
    ]
    thread = _thread(tmp_path, {"messages": messages})  # type: ignore[arg-type]
    assert runner.invoke(app, ["verify", str(thread)]).exit_code == 0


def test_verify_envelope_level_fault_marks_citations_forged() -> None:
    tool = _tool_message(GOOD).model_dump(mode="json")
    tool["artifact"]["knowledge_sources_version"] = 2
    messages = [tool, {"type": "ai", "content": f"Claim {citation_link(GOOD)}."}]
    audits = audit_thread(thread_messages(messages))
    assert [(a.status, a.reason) for a in audits] == [("forged", "bad_version")]


def test_verify_native_snapshots() -> None:
    hex_id = "a" * 32
    record = {
        "id": f"{hex_id}-1",
        "provider": "ragflow",
        "dataset_id": "ds",
        "document_id": "doc",
        "chunk_id": "chunk",
        "dataset_name": "Handbook",
        "document_name": "guide.pdf",
        "text": "Native text.",
        "truncated": False,
        "pages": [2],
    }
    content = f"[citation:1](#knowledge-{hex_id}-1) Handbook / guide.pdf\nNative text."
    tool = {
        "type": "tool",
        "name": "knowledge_search",
        "tool_call_id": "c1",
        "content": content,
        "artifact": {"knowledge_sources": {"version": 1, "sources": [record]}},
    }
    ai = {"type": "ai", "content": f"Fact [citation:1](#knowledge-{hex_id}-1)."}
    assert [a.status for a in audit_thread(thread_messages([tool, ai]))] == ["verified"]
    renamed = {**tool, "name": "web_search"}  # native readers keep a tool-name allowlist
    assert [a.status for a in audit_thread(thread_messages([renamed, ai]))] == ["forged"]


def test_thread_formats() -> None:
    messages = _clean_thread()
    forms: list[Any] = [
        [m.model_dump(mode="json") for m in messages],
        messages_to_dict(messages),
        {"messages": messages_to_dict(messages)},
        {"values": {"messages": [m.model_dump(mode="json") for m in messages]}},
        [
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", type(m).__name__],
                "kwargs": m.model_dump(mode="json"),
            }
            for m in messages
        ],
    ]
    for form in forms:
        roles = [m["role"] for m in thread_messages(form)]
        assert roles == ["human", "ai", "tool", "ai"], form
        assert [a.status for a in audit_thread(thread_messages(form))] == ["verified"]
    assert thread_messages({"values": {"messages": None}}) == []


@pytest.mark.parametrize("text", ["not json", '{"nothing": 1}', '{"messages": "x"}', "\udcff"])
def test_verify_unreadable_thread_exits_two(tmp_path: Path, text: str) -> None:
    thread = tmp_path / "t.json"
    thread.write_bytes(text.encode("utf-8", "surrogateescape"))
    result = runner.invoke(app, ["verify", str(thread)])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error:")


# --------------------------------------------------------------------------- serve


def test_serve_builds_the_gateway(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import deerflow.knowledge.server as server

    calls: dict[str, Any] = {}

    def build_config(provider: Any, **options: Any) -> str:
        calls["provider"], calls["options"] = provider, options
        return "CONFIG"

    def serve(config: Any, *, host: str, port: int, sock: socket.socket) -> None:
        calls["serve"] = (config, host, port)
        calls["bound"] = sock.getsockname()[:2]
        sock.close()

    monkeypatch.setattr(server, "build_config", build_config)
    monkeypatch.setattr(server, "serve", serve)
    index = tmp_path / "i.sqlite"
    result = runner.invoke(
        app,
        [
            "serve",
            "--index",
            str(index),
            "--port",
            "8123",
            "--checkpoint",
            str(tmp_path / "t.db"),
            "--cors-origin",
            "http://localhost:5173",
            "--cors-origin",
            "http://localhost:3000",
            "--allowed-host",
            "gateway.example",
            "--run-timeout",
            "60",
        ],
    )
    assert result.exit_code == 0, result.output
    assert calls["serve"] == ("CONFIG", "127.0.0.1", 8123)
    assert calls["bound"] == ("127.0.0.1", 8123)  # bound before the gateway announces itself
    assert calls["provider"].name == "local"
    assert calls["options"] == {
        "model": None,
        "model_label": None,
        "checkpoint": str(tmp_path / "t.db"),
        "cors_origins": ("http://localhost:5173", "http://localhost:3000"),
        "allowed_hosts": ("gateway.example",),
        "run_timeout": 60.0,
        "constrain_citations": False,
    }


def test_serve_without_the_gateway_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "deerflow.knowledge.server", None)
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == EXIT_USAGE
    assert "gateway" in result.stderr


def test_serve_rejects_a_bad_model_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    import deerflow.knowledge.server as server

    monkeypatch.setattr(server, "serve", lambda *a, **k: None)
    result = runner.invoke(app, ["serve", "--model", "no-colon"])
    assert result.exit_code == 2
    assert "provider:name" in result.stderr


def test_serve_names_the_missing_model_integration(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from deerflow.knowledge.cli import app

    # The dev environment has langchain-openai (the --constrain-citations tests use it): hide it.
    monkeypatch.setitem(sys.modules, "langchain_openai", None)
    result = CliRunner().invoke(app, ["serve", "--model", "openai:gpt-4o-mini", "--port", "8999"])
    assert result.exit_code == 2
    assert "install its integration (pip install langchain-openai)" in result.output


def _export_row(text: str = "Evidence 1.", cited: bool = True) -> dict[str, Any]:
    record = {
        "id": f"{'7' * 32}-1",
        "provider": "ragflow",
        "dataset_id": "kb",
        "document_id": "doc",
        "chunk_id": "chunk",
        "dataset_name": "Engineering",
        "document_name": "Manual.pdf",
        "text": text,
        "pages": [],
        "truncated": False,
    }
    link = f"[citation:1](#knowledge-{record['id']})" if cited else "no link"
    return {
        "id": "item-1",
        "result": f"Report {link}.",
        "result_artifact": {
            "knowledge_sources": {"version": 1, "sources": [record], "omitted_count": 0}
        },
    }


def test_verify_reads_a_saved_batch_export(tmp_path: Path) -> None:
    # Before: an export was "not a saved thread" (exit 2).
    export = tmp_path / "batch.jsonl"
    export.write_text(json.dumps(_export_row()) + "\n" + json.dumps(_export_row()) + "\n")
    result = runner.invoke(app, ["verify", str(export), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["assistant_messages"] == 2 and data["counts"]["verified"] == 2
    assert data["citations"][0]["title"] == "Manual.pdf"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(_export_row(text="  ")))  # blank text: evidence rejected whole
    result = runner.invoke(app, ["verify", str(forged), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output)["citations"][0]["reason"] == "blank_field"


# --------------------------------------------------------------------------- exit codes


def test_the_exit_code_table_is_the_documented_one() -> None:
    assert (EXIT_FINDING, EXIT_USAGE, EXIT_UPSTREAM) == (1, 2, 3)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for code, meaning in ((0, "ok"), (1, "finding"), (2, "usage"), (3, "upstream")):
        assert re.search(rf"^\| {code} \| [^|]*{meaning}", readme, re.M | re.I), code
    result = runner.invoke(app, ["--help"])
    assert "Exit codes: 0 ok; 1 a finding" in " ".join(result.stdout.split())


@pytest.mark.parametrize("query", ["", "   ", "x" * 2_001])
def test_a_bad_query_is_a_usage_error_in_one_message(query: str, sample_index: Path) -> None:
    result = runner.invoke(app, ["search", query, "--index", str(sample_index)])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith("Error: the query is") and _one_line(result.stderr)
    assert result.stdout == ""


def test_an_unknown_provider_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEERFLOW_KNOWLEDGE_PROVIDER", "elastic")
    result = runner.invoke(app, ["search", "deer"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith("Error: ") and _one_line(result.stderr)


def test_an_unreachable_provider_is_an_upstream_failure_in_one_message() -> None:
    # Without the CLI's own handling the provider, the tool and the CLI each said it once.
    result = subprocess.run(
        [sys.executable, "-m", "deerflow.knowledge.cli", "search", "deer", "-p", "lightrag",
         "--base-url", "http://127.0.0.1:9"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == EXIT_UPSTREAM
    assert result.stderr.startswith("Error: ") and _one_line(result.stderr), result.stderr
    assert result.stdout == ""


def test_an_index_path_that_cannot_be_created_is_one_message(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    target = blocker / "sub" / "index.sqlite"
    result = runner.invoke(app, ["index", "--index", str(target)])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith(f"Error: cannot write the index {target}")
    assert _one_line(result.stderr)


def test_serve_on_a_busy_port_announces_nothing() -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "deerflow.knowledge.cli", "serve", "--port", str(port),
             "--checkpoint", ":memory:"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
    assert result.returncode == EXIT_USAGE
    assert f"http://127.0.0.1:{port}" not in result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("Warning:")]
    assert errors == [
        f"Error: port {port} on 127.0.0.1 is already in use; stop the other server or pick "
        "another with --port."
    ]


def test_a_postgres_checkpoint_without_the_extra_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)
    result = runner.invoke(
        app,
        ["serve", "--index", str(tmp_path / "i.sqlite"), "--checkpoint", "postgres://h/db"],
    )
    assert result.exit_code == EXIT_USAGE
    errors = [line for line in result.stderr.splitlines() if not line.startswith("Warning:")]
    assert errors == [
        "Error: a Postgres checkpoint needs the postgres extra: "
        "pip install 'deerflow-knowledge[postgres]'."
    ]


def test_an_unreachable_postgres_is_an_upstream_failure_without_a_traceback(
    tmp_path: Path,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]  # free once closed: nothing listens there
    target = f"postgresql://deer:pw-{SECRET}@127.0.0.1:{port}/threads"
    result = subprocess.run(
        [sys.executable, "-m", "deerflow.knowledge.cli", "serve", "--index",
         str(tmp_path / "i.sqlite"), "--checkpoint", target, "--port", "1"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == EXIT_UPSTREAM
    errors = [line for line in result.stderr.splitlines() if not line.startswith("Warning:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert errors[0].startswith(
        f"Error: cannot open the checkpoint database postgresql://deer:***@127.0.0.1:{port}/threads"
    )
    assert SECRET not in result.stdout + result.stderr
    assert result.stdout == ""  # nothing announced


# --------------------------------------------------------------------------- README


def test_serve_without_a_built_page_tells_a_pip_user_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    import deerflow.knowledge.server as server
    from deerflow.knowledge.providers.local import LocalProvider

    ran: list[object] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: ran.append(sockets))
    config = server.build_config(LocalProvider(tmp_path / "i.sqlite"), static_dir=tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as sock:
        server.serve(config, sock=sock)
        port = sock.getsockname()[1]
    out = capsys.readouterr().out
    assert f"API only at http://127.0.0.1:{port}/api/" in out
    assert "pip install --force-reinstall deerflow-knowledge" in out
    assert ran == [[sock]]  # uvicorn serves the socket that was bound first


# ------------------------------------------------------------------------------- wording


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"deerflow-knowledge {version('deerflow-knowledge')}"


@pytest.mark.parametrize("command", ["index", "search", "verify", "serve"])
def test_help_names_values_not_internal_types_and_points_to_the_readme(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], terminal_width=100)
    assert result.exit_code == 0
    # Options show what to type (NAME, FILE, PORT), not <list[str]>, <int range> or <str>.
    options = [line for line in result.stdout.splitlines() if line.lstrip().startswith("-")]
    assert options
    assert not [line for line in options if re.search(r"<[a-z][a-z \[\]]*>", line)], options
    assert "deerflow.knowledge.settings" not in result.stdout


def test_unknown_provider_repeats_the_bad_value() -> None:
    result = runner.invoke(app, ["search", "deer", "--provider", "lightrgg"])
    assert result.exit_code == 2
    assert "Unknown provider 'lightrgg': expected one of local, lightrag, ragflow." in (
        result.stderr
    )


def test_verify_counts_answers_not_tool_calls_and_keeps_its_status_whole_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = "0123456789abcdef0123456789abcdef"
    messages: list[Any] = [
        {"type": "human", "content": "Where do deer sleep?"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "knowledge_search", "args": {"query": "deer"}, "id": "c1"}],
        },
        {
            "type": "ai",
            "content": f"In the {'very ' * 20}long grass [citation:Ghost "
            f"{'title ' * 10}](#knowledge-source-{missing}).",
        },
    ]
    thread = _thread(tmp_path, messages)
    report = _json(runner.invoke(app, ["verify", str(thread), "--json"]).stdout)
    assert report["assistant_messages"] == 1
    monkeypatch.setattr(cli._out, "width", 80)
    table = runner.invoke(app, ["verify", str(thread)])
    assert table.exit_code == 0
    assert "1 citation in 1 assistant message" in table.stdout
    assert "evidence-not-loaded" in table.stdout.replace("\n", "")
    assert "evidence-not-lo…" not in table.stdout and "evidence-not-loa…" not in table.stdout
    assert max(map(len, table.stdout.splitlines())) <= 80
