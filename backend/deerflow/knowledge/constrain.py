"""Constrained decoding for an agent's answers: every citation one of the verified links, exactly.

:class:`CitationGrammarMiddleware` wraps each model call of a ``create_agent`` agent. When the call
answers tool results (its last message is a tool message) and the conversation holds verified
evidence, it sends :func:`~deerflow.knowledge.grammar.citation_grammar`'s GBNF as the request's
``grammar`` (``extra_body``, which ``langchain-openai`` passes through to an OpenAI-compatible
server: llama.cpp's and ``llama-cpp-python``'s take it) and leaves the tools out of that call, so
the answer is text under the grammar (llama.cpp refuses a grammar together with tools). The
grammar is computed from the messages the model is about to see, at call time, so it always
matches the evidence in its prompt. Every other call goes out unchanged, except that it names
``tool_choice="auto"`` when tools are bound and no choice was made: OpenAI's default, and the
only way ``llama-cpp-python``'s ``chatml-function-calling`` format shows the tools to the model.

An endpoint that refuses the grammar (a 4xx, or an error that names the grammar) ends the run with
:class:`GrammarRefusedError`, whose message says so in one line; the model's own failures pass
through untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from deerflow.knowledge.grammar import CitationGrammar, NoCitableEvidenceError, citation_grammar
from deerflow.knowledge.messages import message_view
from deerflow.knowledge.text import ELLIPSIS, controls_to_space

__all__ = [
    "GRAMMAR_BODY_KEY",
    "MAX_REFUSAL_REASON_CHARS",
    "CitationGrammarMiddleware",
    "GrammarRefusedError",
]

#: The request-body field llama.cpp's OpenAI-compatible servers read a GBNF grammar from.
GRAMMAR_BODY_KEY: Final = "grammar"
#: Longest piece of the endpoint's own error text quoted in a refusal.
MAX_REFUSAL_REASON_CHARS: Final = 300

# Statuses that say nothing about the grammar: credentials, quota, a missing model.
_NOT_ABOUT_THE_REQUEST: Final = frozenset({401, 403, 404, 429})


class GrammarRefusedError(RuntimeError):
    """The model endpoint refused a request that carried the citation grammar: the endpoint's
    fault (it takes no GBNF ``grammar``), told in one line the gateway shows as the run's error."""


class CitationGrammarMiddleware(AgentMiddleware[Any, Any, Any]):
    """Send the citation grammar with every model call that answers tool results.

    ``require_citation``: the answer must cite at least once (only when there is evidence to
    cite). ``name_tool_choice``: name ``tool_choice="auto"`` on the calls that keep their tools.
    """

    def __init__(self, *, require_citation: bool = False, name_tool_choice: bool = True) -> None:
        super().__init__()
        self.require_citation = require_citation
        self.name_tool_choice = name_tool_choice

    def constrain(self, request: ModelRequest[Any]) -> tuple[ModelRequest[Any], bool]:
        """The request to send, and whether it carries the grammar."""
        grammar = self._grammar(request)
        if grammar is not None:
            settings = dict(request.model_settings)
            extra = dict(settings.get("extra_body") or {})
            extra[GRAMMAR_BODY_KEY] = grammar.gbnf
            settings["extra_body"] = extra
            return request.override(model_settings=settings, tools=[], tool_choice=None), True
        if self.name_tool_choice and request.tools and request.tool_choice is None:
            return request.override(tool_choice="auto"), False
        return request, False

    def _grammar(self, request: ModelRequest[Any]) -> CitationGrammar | None:
        """The grammar for an answer to tool results with verified evidence, else None."""
        if not _answers_tool_results(request):
            return None
        try:
            grammar = citation_grammar(request.messages, require_citation=self.require_citation)
        except NoCitableEvidenceError:
            return None
        return grammar if grammar.links else None

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage:
        constrained, carries = self.constrain(request)
        try:
            return handler(constrained)
        except Exception as exc:
            if carries and (refusal := _refusal(exc)) is not None:
                raise GrammarRefusedError(refusal) from exc
            raise

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        if _answers_tool_results(request):  # reads and hashes the evidence: off the event loop
            constrained, carries = await asyncio.to_thread(self.constrain, request)
        else:
            constrained, carries = self.constrain(request)
        try:
            return await handler(constrained)
        except Exception as exc:
            if carries and (refusal := _refusal(exc)) is not None:
                raise GrammarRefusedError(refusal) from exc
            raise


def _answers_tool_results(request: ModelRequest[Any]) -> bool:
    if not request.messages:
        return False
    view = message_view(request.messages[-1])
    return view is not None and view.role == "tool"


def _refusal(exc: Exception) -> str | None:
    """The one-line refusal for an endpoint's error, or None when it is not about the request
    (an ``openai`` status error carries ``status_code``; anything else is not a refusal)."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return None
    reason = " ".join(controls_to_space(str(getattr(exc, "message", None) or exc)).split())
    about_grammar = GRAMMAR_BODY_KEY in reason.lower()
    if not (400 <= status < 500 and status not in _NOT_ABOUT_THE_REQUEST) and not about_grammar:
        return None
    if len(reason) > MAX_REFUSAL_REASON_CHARS:
        reason = reason[: MAX_REFUSAL_REASON_CHARS - 1] + ELLIPSIS
    return (
        f"Error: the model endpoint refused the citation grammar (HTTP {status}: {reason}). "
        "It takes no GBNF grammar: serve without --constrain-citations, or point the model at "
        "a llama.cpp server."
    )
