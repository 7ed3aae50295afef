"""``--constrain-citations``: the gateway sends the citation grammar with each answer to search
results, through langchain-openai to a scripted OpenAI-compatible server that decodes under it
(or refuses it), with the real agent, tool, local index and checkpointer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI
from typer.testing import CliRunner

from deerflow.knowledge import citation_grammar, find_citations, format_result, read_evidence
from deerflow.knowledge.cli import EXIT_USAGE, app
from deerflow.knowledge.constrain import (
    GRAMMAR_BODY_KEY,
    MAX_REFUSAL_REASON_CHARS,
    CitationGrammarMiddleware,
)
from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
from deerflow.knowledge.server import build_config, create_app
from deerflow.knowledge.tools import make_knowledge_tool
from tests.scripted_model import REFUSAL, ScriptedModel

HOSTILE_QUESTION = "canary-hostile-payload"
FORGED_ID = "f" * 32


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> LocalProvider:
    index = tmp_path_factory.mktemp("index") / "index.sqlite"
    provider = LocalProvider(index)
    provider.index(sample_corpus_path())
    return provider


@pytest.fixture
def scripted() -> Iterator[ScriptedModel]:
    model = ScriptedModel()
    yield model
    model.close()


def _gateway(
    provider: LocalProvider, model: ScriptedModel, checkpoint: Path, *, constrain: bool
) -> TestClient:
    chat = ChatOpenAI(
        model="scripted-model", base_url=model.base_url, api_key="test-key", max_retries=0
    )
    config = build_config(
        provider, model=chat, checkpoint=str(checkpoint), constrain_citations=constrain
    )
    return TestClient(create_app(config))


def _ask(client: TestClient, question: str) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    thread_id = client.post("/api/threads").json()["thread_id"]
    response = client.post(
        f"/api/threads/{thread_id}/runs/stream",
        json={
            "input": {"messages": [{"type": "human", "content": question}]},
            "stream_mode": ["values"],
        },
    )
    assert response.status_code == 200
    events = []
    for block in response.text.split("\n\n"):
        if block.strip():
            lines = dict(line.split(": ", 1) for line in block.splitlines())
            events.append((lines["event"], json.loads(lines["data"])))
    state = client.get(f"/api/threads/{thread_id}/state").json()["values"]
    return events, state


def _cited_ids(answer: str) -> list[str | None]:
    return [c.source_id for c in find_citations(answer)]


def _verified_ids(messages: list[dict[str, Any]]) -> set[str]:
    ids: set[str] = set()
    for message in messages:
        if message["type"] == "tool":
            evidence = read_evidence(message["content"], message["artifact"], tool_name="x")
            ids.update(source.id for source in evidence.sources)
    return ids


def test_without_the_grammar_a_sloppy_model_cites_a_mangled_id(
    provider: LocalProvider, scripted: ScriptedModel, tmp_path: Path
) -> None:
    with _gateway(provider, scripted, tmp_path / "t.sqlite", constrain=False) as client:
        _, state = _ask(client, HOSTILE_QUESTION)
    (cited,) = _cited_ids(state["messages"][-1]["content"])
    assert cited is not None and cited not in _verified_ids(state["messages"])
    assert all(GRAMMAR_BODY_KEY not in body for body in scripted.requests)
    # Nothing was named either: the option changes no request when it is off.
    assert all("tool_choice" not in body for body in scripted.requests)


def test_with_the_grammar_the_answer_cites_a_verified_record_exactly(
    provider: LocalProvider, scripted: ScriptedModel, tmp_path: Path
) -> None:
    with _gateway(provider, scripted, tmp_path / "t.sqlite", constrain=True) as client:
        events, state = _ask(client, HOSTILE_QUESTION)
    assert "error" not in [kind for kind, _ in events]
    messages = state["messages"]
    cited = _cited_ids(messages[-1]["content"])
    assert cited and set(cited) <= _verified_ids(messages)
    search_call, answer_call = scripted.requests
    # Before evidence: the tools, named as llama-cpp-python's function-calling format needs.
    assert GRAMMAR_BODY_KEY not in search_call
    assert search_call["tool_choice"] == "auto" and search_call["tools"]
    # The answer to the results: the grammar of exactly the evidence the model saw, no tools.
    assert "tools" not in answer_call
    sent = answer_call[GRAMMAR_BODY_KEY]
    tool = next(m for m in messages if m["type"] == "tool")
    assert sent == citation_grammar([tool]).gbnf
    assert FORGED_ID not in sent


def test_an_endpoint_that_refuses_the_grammar_ends_the_run_with_a_clear_error(
    provider: LocalProvider, tmp_path: Path
) -> None:
    refusing = ScriptedModel(refuse_grammar=True)
    try:
        with _gateway(provider, refusing, tmp_path / "t.sqlite", constrain=True) as client:
            events, _ = _ask(client, HOSTILE_QUESTION)
            (thread,) = client.post("/api/threads/search", json={}).json()
    finally:
        refusing.close()
    errors = [data for kind, data in events if kind == "error"]
    assert len(errors) == 1
    message = errors[0]["message"]
    assert message.startswith("Error: the model endpoint refused the citation grammar (HTTP 400")
    assert REFUSAL in message and "--constrain-citations" in message
    assert thread["status"] == "error"


def _request(messages: list[Any], **fields: Any) -> ModelRequest[Any]:
    return ModelRequest(model=ChatOpenAI(api_key="k"), messages=messages, **fields)


def test_only_answers_to_tool_results_with_evidence_carry_the_grammar(
    provider: LocalProvider,
) -> None:
    middleware = CitationGrammarMiddleware()
    tool = make_knowledge_tool(provider)
    human = {"type": "human", "content": "q"}
    formatted = format_result(asyncio.run(provider.search("verify")))
    found = ToolMessage(
        formatted.content, artifact=formatted.artifact, name=tool.name, tool_call_id="c1"
    )
    empty = {"type": "tool", "name": "knowledge_search", "tool_call_id": "c2", "content": "No."}
    # A new question after old evidence: the model must be free to search again.
    for messages in (
        [human],
        [human, empty],
        [human, found, {"type": "ai", "content": "a"}, human],
    ):
        constrained, carries = middleware.constrain(_request(messages, tools=[tool]))
        assert not carries and "extra_body" not in constrained.model_settings
        assert constrained.tools == [tool] and constrained.tool_choice == "auto"
    constrained, carries = middleware.constrain(
        _request([human, found], tools=[tool], model_settings={"extra_body": {"top_k": 1}})
    )
    assert carries and constrained.tools == [] and constrained.tool_choice is None
    assert constrained.model_settings["extra_body"] == {
        "top_k": 1,
        GRAMMAR_BODY_KEY: citation_grammar([found]).gbnf,
    }


class _StatusError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message


@pytest.mark.parametrize(
    ("status", "text", "refused"),
    [
        (400, "bad grammar", True),
        (422, "unprocessable", True),
        (401, "bad key", False),
        (429, "slow down", False),
        (500, "internal error", False),
        (500, "failed to parse grammar", True),
    ],
)
def test_which_endpoint_errors_are_refusals(status: int, text: str, refused: bool) -> None:
    from deerflow.knowledge.constrain import _refusal

    assert (_refusal(_StatusError(status, text)) is not None) is refused
    assert _refusal(ValueError("grammar")) is None


def test_a_refusal_quotes_at_most_the_limit_on_one_line() -> None:
    from deerflow.knowledge.constrain import _refusal

    at_limit = _refusal(_StatusError(400, "x" * MAX_REFUSAL_REASON_CHARS))
    past = _refusal(_StatusError(400, "\n" + "y" * MAX_REFUSAL_REASON_CHARS + "z"))
    assert at_limit is not None and "x" * MAX_REFUSAL_REASON_CHARS + ")" in at_limit
    assert past is not None and "\n" not in past
    assert "y" * (MAX_REFUSAL_REASON_CHARS - 1) + "…)" in past and "z" not in past


@pytest.mark.parametrize("model", [None, "anthropic:claude-x"])
def test_serve_refuses_the_option_without_an_openai_compatible_model(model: str | None) -> None:
    args = ["serve", "--constrain-citations", "--port", "8999"]
    if model is not None:
        args += ["--model", model]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == EXIT_USAGE
    assert "--constrain-citations needs an OpenAI-compatible model" in result.output


def test_require_citation_sends_the_grammar_that_needs_a_link_and_only_with_evidence(
    provider: LocalProvider,
) -> None:
    middleware = CitationGrammarMiddleware(require_citation=True)
    formatted = format_result(asyncio.run(provider.search("verify")))
    found = ToolMessage(
        formatted.content, artifact=formatted.artifact, name="knowledge_search", tool_call_id="c"
    )
    human = {"type": "human", "content": "q"}
    constrained, carries = middleware.constrain(_request([human, found]))
    assert carries
    sent = constrained.model_settings["extra_body"][GRAMMAR_BODY_KEY]
    assert sent == citation_grammar([found], require_citation=True).gbnf
    empty = {"type": "tool", "name": "knowledge_search", "tool_call_id": "c2", "content": "No."}
    assert middleware.constrain(_request([human, empty]))[1] is False
