"""Does a real model copy citation links exactly, with and without the citation grammar? (opt-in)

    DEERFLOW_KNOWLEDGE_LIVE_MODEL=http://127.0.0.1:8080/v1 DEERFLOW_KNOWLEDGE_LIVE_MODEL_NAME=smollm2 \\
        uv run python -m benchmarks.bench_citations_model

(``scripts/setup_local_model.sh`` sets up SmolLM2-135M on llama-cpp-python's server.) Without
both variables it prints why and exits 0, so ``make bench`` passes on a machine without a model.

Each question of a fixed set (the held-out answerable questions of ``benchmarks/eval`` and the
hostile corpus's canary, which retrieves a document that plants a fake link) goes through the
real ``knowledge_search`` tool over the bundled corpus; the tool-call turn is built as the agent
builds it, and the model answers it plainly and with
:func:`~deerflow.knowledge.grammar.citation_grammar`'s GBNF as the request's ``grammar`` (what
``serve --constrain-citations`` sends); then both again with the results pasted into the question
(llama-cpp-python's chat formats render no ``tool`` message, so only there does its model read
them). Each answer's links are scored with the project's readers
against that tool message's verified records:

* ``exact``: the link is exactly one the tool text offers for a verified record;
* ``relabeled``: a verified id under another label;
* ``mangled``: a knowledge link within 4 edits of an offered one that is not one;
* ``invented``: any other knowledge link (a planted fake, an id from nowhere);
* ``malformed``: what the readers call malformed (a ``citation:`` label with a bad destination).

Printed: per arm, answers with a link, each count, ``verify``'s forged / malformed counts and the
median latency; last, the ratio of the grammar's median latency to the plain one (same run).
Then the agent route: how often the model, given the tool through the gateway's own agent, calls
it at all.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from deerflow.knowledge.audit import audit_thread, thread_messages
from deerflow.knowledge.citations import find_citations
from deerflow.knowledge.grammar import citation_grammar

MODEL_URL_ENV: Final = "DEERFLOW_KNOWLEDGE_LIVE_MODEL"
MODEL_NAME_ENV: Final = "DEERFLOW_KNOWLEDGE_LIVE_MODEL_NAME"
#: Edits within which a wrong link counts as a copy of an offered one (the README's measure).
MANGLED_EDITS: Final = 4
#: Tokens one answer may take: small models otherwise ramble until the context ends.
ANSWER_MAX_TOKENS: Final = 200
#: Seconds one model call may take before it counts as failed.
CALL_TIMEOUT_SECONDS: Final = 600.0
CANARY_QUESTION: Final = "canary-hostile-payload"
QUESTIONS_FILE: Final = Path(__file__).resolve().parent / "eval" / "questions.json"


def live_model() -> tuple[str, str] | str:
    """``(base url, model name)`` from the environment, or the reason the live run is skipped."""
    url, name = os.environ.get(MODEL_URL_ENV), os.environ.get(MODEL_NAME_ENV)
    if not url or not name:
        return (
            f"set {MODEL_URL_ENV}=<OpenAI-compatible base URL> and {MODEL_NAME_ENV}=<model name> "
            "to run against a real model (scripts/setup_local_model.sh sets up SmolLM2-135M)"
        )
    return url, name


def questions(*, limit: int | None = None) -> list[str]:
    """The fixed set: held-out answerable questions in file order, then the canary."""
    data = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))
    held_out = [q["question"] for q in data["answerable"] if q["split"] == "held_out"]
    return [*(held_out if limit is None else held_out[:limit]), CANARY_QUESTION]


@dataclass
class Score:
    """What one answer's links were."""

    exact: int = 0
    relabeled: int = 0
    mangled: int = 0
    invented: int = 0
    malformed: int = 0
    forged: int = 0
    """``verify``'s count (an id a preceding artifact carries but does not verify)."""
    audit_malformed: int = 0

    @property
    def links(self) -> int:
        return self.exact + self.relabeled + self.mangled + self.invented + self.malformed


def edit_distance(a: str, b: str, *, limit: int) -> int:
    """Levenshtein distance, or ``limit + 1`` once it must exceed ``limit`` (a banded table)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, other in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def score(answer: str, messages: Sequence[dict[str, Any]]) -> Score:
    """Score ``answer`` (the last message) against the verified links of ``messages``."""
    offered = {link.link: link.source_id for link in citation_grammar(messages).links}
    verified_ids = set(offered.values())
    result = Score()
    for citation in find_citations(answer):
        text = answer[citation.start : citation.end]
        if citation.kind == "web":
            continue
        if citation.kind == "malformed":
            result.malformed += 1
        elif text in offered:
            result.exact += 1
        elif citation.source_id in verified_ids:
            result.relabeled += 1
        elif any(
            edit_distance(text, link, limit=MANGLED_EDITS) <= MANGLED_EDITS for link in offered
        ):
            result.mangled += 1
        else:
            result.invented += 1
    thread = [*messages, {"type": "ai", "content": answer}]
    for audit in audit_thread(thread_messages({"messages": thread})):
        result.forged += audit.status == "forged"
        result.audit_malformed += audit.status == "malformed"
    return result


@dataclass
class Arm:
    name: str
    scores: list[Score] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    failures: int = 0


async def search_turn(tool: Any, question: str, index: int) -> list[dict[str, Any]]:
    """The human question, the agent's tool call and the real tool's answer, as message dicts."""
    call_id = f"call_{index}"
    message = await tool.ainvoke(
        {"type": "tool_call", "id": call_id, "name": tool.name, "args": {"query": question}}
    )
    return [
        {"type": "human", "content": question},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"id": call_id, "name": tool.name, "args": {"query": question}}],
        },
        {
            "type": "tool",
            "name": tool.name,
            "tool_call_id": call_id,
            "content": message.content,
            "artifact": message.artifact,
        },
    ]


def chat_model(url: str, name: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=name,
        base_url=url,
        api_key=os.environ.get("OPENAI_API_KEY") or "local",
        temperature=0,
        max_tokens=ANSWER_MAX_TOKENS,
        timeout=CALL_TIMEOUT_SECONDS,
        max_retries=0,
    )


async def answer(
    model: Any, turn: list[dict[str, Any]], *, grammar: bool, pasted: bool = False
) -> tuple[str, float]:
    """The model's answer to ``turn`` (with the gateway's system prompt), and its seconds.

    ``pasted``: the results go into the question instead of a tool message (llama-cpp-python's
    chat formats render no ``tool`` message, so there the model sees the results only this way).
    """
    from langchain_core.messages import convert_to_messages

    from deerflow.knowledge.server import SYSTEM_PROMPT

    shown: list[dict[str, Any]] = list(turn)
    if pasted:
        question, tool = turn[0]["content"], turn[-1]["content"]
        shown = [{"type": "human", "content": f"{question}\n\nSearch results:\n\n{tool}"}]
    prompt = convert_to_messages([{"type": "system", "content": SYSTEM_PROMPT}, *shown])
    kwargs: dict[str, Any] = {}
    if grammar:
        kwargs["extra_body"] = {"grammar": citation_grammar(turn).gbnf}
    started = time.perf_counter()
    reply = await model.ainvoke(prompt, **kwargs)
    return str(reply.text), time.perf_counter() - started


async def run_arms(
    url: str, name: str, asked: Sequence[str], *, pasted: bool = False
) -> tuple[Arm, ...]:
    """Every question through each arm, one call at a time (a local server has one slot): plain
    and grammar, then (``pasted``) the same two with the results pasted into the question."""
    from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
    from deerflow.knowledge.tools import make_knowledge_tool

    with tempfile.TemporaryDirectory() as folder:
        provider = LocalProvider(Path(folder) / "index.sqlite")
        provider.index(sample_corpus_path())
        tool = make_knowledge_tool(provider)
        model = chat_model(url, name)
        arms = [(Arm("plain"), False, False), (Arm("grammar"), True, False)]
        if pasted:
            arms += [(Arm("pasted"), False, True), (Arm("pasted+grammar"), True, True)]
        for index, question in enumerate(asked):
            turn = await search_turn(tool, question, index)
            for arm, grammar, paste in arms:
                try:
                    text, seconds = await answer(model, turn, grammar=grammar, pasted=paste)
                except Exception as exc:  # a timeout or a server error: counted, not fatal
                    print(f"  {arm.name}: {question!r} failed ({type(exc).__name__})")
                    arm.failures += 1
                    continue
                arm.scores.append(score(text, turn))
                arm.seconds.append(seconds)
        return tuple(arm for arm, _, _ in arms)


async def agent_route(url: str, name: str, asked: Sequence[str]) -> tuple[int, int]:
    """How many questions the gateway's own agent (``--constrain-citations``) searched for."""
    from deerflow.knowledge.providers.local import LocalProvider, sample_corpus_path
    from deerflow.knowledge.server import build_agent

    searched = 0
    with tempfile.TemporaryDirectory() as folder:
        provider = LocalProvider(Path(folder) / "index.sqlite")
        provider.index(sample_corpus_path())
        agent = build_agent(provider, chat_model(url, name), None, constrain_citations=True)
        for question in asked:
            try:
                state = await agent.ainvoke({"messages": [{"role": "user", "content": question}]})
            except Exception as exc:
                print(f"  agent: {question!r} failed ({type(exc).__name__})")
                continue
            searched += any(m.type == "tool" for m in state["messages"])
    return searched, len(asked)


def report(arm: Arm) -> dict[str, Any]:
    total = Score()
    for item in arm.scores:
        for key in total.__dataclass_fields__:
            setattr(total, key, getattr(total, key) + getattr(item, key))
    return {
        "answers": len(arm.scores),
        "with a link": sum(item.links > 0 for item in arm.scores),
        "exact": total.exact,
        "relabeled": total.relabeled,
        "mangled": total.mangled,
        "invented": total.invented,
        "malformed": total.malformed,
        "verify forged": total.forged,
        "verify malformed": total.audit_malformed,
        "failed calls": arm.failures,
        "median s": round(statistics.median(arm.seconds), 2) if arm.seconds else None,
    }


def main() -> None:
    found = live_model()
    if isinstance(found, str):
        print(f"bench_citations_model skipped: {found}")
        return
    url, name = found
    asked = questions()
    print(f"{len(asked)} questions, model {name} at {url}")
    arms = asyncio.run(run_arms(url, name, asked, pasted=True))
    plain, constrained = arms[0], arms[1]
    rows = {arm.name: report(arm) for arm in arms}
    keys = list(rows["plain"])
    print(f"{'':18}" + "".join(f"{arm:>16}" for arm in rows))
    for key in keys:
        print(f"{key:18}" + "".join(f"{rows[arm][key]!s:>16}" for arm in rows))
    searched, total = asyncio.run(agent_route(url, name, asked[:5]))
    print(f"agent route: the model called knowledge_search for {searched}/{total} questions")
    if plain.seconds and constrained.seconds:
        ratio = statistics.median(constrained.seconds) / statistics.median(plain.seconds)
        print(f"median latency, grammar / plain: {ratio:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
