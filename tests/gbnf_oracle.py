"""GBNF matching for the tests, by the ``gbnf`` package: a port of llama.cpp's grammar parser and
matcher, so a grammar is checked by llama.cpp's rules rather than by the code that wrote it."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from gbnf import GBNF, InputParseError
from gbnf.grammar_graph.grammar_graph_types import RuleEnd

# The matcher recurses once per repetition (it keeps no tail calls): room for the test strings,
# which stay below a few hundred characters.
GBNF_RECURSION_LIMIT = 20_000


@contextmanager
def _deep_recursion() -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, GBNF_RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def gbnf_accepts(gbnf: str, text: str) -> bool:
    """Whether ``text`` is a complete sentence of ``gbnf``, as llama.cpp's matcher decides."""
    with _deep_recursion():
        try:
            state = GBNF(gbnf, text)
        except InputParseError:
            return False
        except IndexError as exc:
            # The package rejects some inputs (e.g. "```\n&NUM;") but then fails while it builds
            # the rejection's position message; that is still a rejection. An IndexError from
            # anywhere else is a real failure and propagates.
            if _raised_in(exc, "build_error_position"):
                return False
            raise
        return any(isinstance(rule, RuleEnd) for rule in state.rules())


def _raised_in(exc: BaseException, function: str) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].name == function
