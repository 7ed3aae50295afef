"""The trust boundary's check of one JSON request body: bytes in, a verdict out.

It exists apart from the ASGI wrapper because it is the costly part and must stay linear on
hostile input: the wrapper runs it in a worker thread, and only once the app reads the body.

The body is decoded the way ``json.loads`` decodes bytes, then counted before anything is parsed:
its *tokens* (brackets, commas, quotes and ``\\u`` escapes, inside strings too) bound every value
the parse and the strip could build, tool-call arguments decoded from strings included, so a body
over the token budget is refused (413) at the cost of a few ``str.count`` passes. A second pass
measures bracket depth outside strings, one step per string, so a body nested past what the strip
walks is refused (422) without recursing. Only a body that could hold evidence is then parsed and
stripped: one naming a reserved key, an argument key (whose string the strip decodes) or a ``\\u``
escape (which could spell either). Any other body is passed byte for byte without being parsed;
the strip could neither remove nor refuse anything in it.

A rewritten body is compact JSON in the body's own encoding (a lone surrogate stays a ``\\u``
escape, so the bytes are valid in it), padded with spaces to the original length, so the
``Content-Length`` the app was already given stays true; one that does not fit (Python writes
some numbers longer than the caller did) is refused, never forwarded mislabelled.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

from deerflow.knowledge.envelope import RESERVED_KEYS
from deerflow.knowledge.trust import (
    ARGUMENT_KEYS,
    MAX_STRIP_DEPTH,
    StripRefusedError,
    strip_reserved_keys,
)

__all__ = [
    "MAX_BODY_TOKENS",
    "Pass",
    "Refuse",
    "Replace",
    "TooLarge",
    "Unchecked",
    "Work",
    "check_body",
]

#: The most tokens (brackets, commas, quotes, ``\\u`` escapes) a checked body may hold. A run
#: DeerFlow's UI starts holds about 170; a state write of 2,500 tool-calling messages about
#: 160,000; prose counts its commas and quotes. The parse and the strip build at most one value
#: per token, so this bounds their time and memory whatever the byte size.
MAX_BODY_TOKENS: Final = 250_000

_TOKENS: Final = ("[", "]", "{", "}", ",", '"', "\\u")
_OPEN: Final = {"[": 1, "{": 1, "]": -1, "}": -1}
# The rest of a string after its opening quote. Possessive, so one attempt costs the string's
# length and never backtracks.
_STRING_REST: Final = re.compile(r'(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS: Final = re.compile(r"[^\[\]{}]++")
_DEPTH_SLICE: Final = 65536
# What must appear in the text of a body the strip could change or refuse: a reserved key, an
# argument key (its string is decoded and walked) or an escape that could spell either.
_NEEDS_STRIP: Final = (
    *sorted(RESERVED_KEYS),
    *(f'"{key}"' for key in sorted(ARGUMENT_KEYS)),
    "\\u",
)


@dataclass(frozen=True, slots=True)
class Pass:
    """Forward the body as it came."""


@dataclass(frozen=True, slots=True)
class Replace:
    """Forward ``body`` instead: ``removed`` reserved keys taken out, same length as the original."""

    body: bytes
    removed: int


@dataclass(frozen=True, slots=True)
class Refuse:
    """Refuse the body, saying ``reason``: the caller's fault, and nothing reaches the app."""

    reason: str


class TooLarge(Refuse):
    """More to check than the limits allow (the boundary answers 413)."""

    __slots__ = ()


class Unchecked(Refuse):
    """It cannot be checked for forged evidence, or not rewritten without it (422)."""

    __slots__ = ()


@dataclass(slots=True)
class Work:
    """What one check did, for tests that bound it: characters handed to linear C passes, and
    steps of the depth scan's Python loop (one per string)."""

    chars: int = 0
    steps: int = 0


def check_body(
    body: bytes,
    *,
    max_tokens: int = MAX_BODY_TOKENS,
    max_depth: int = MAX_STRIP_DEPTH,
    work: Work | None = None,
) -> Pass | Replace | Refuse:
    """The verdict on one request body FastAPI would parse as JSON (see the module docstring)."""
    work = work if work is not None else Work()
    if not body:
        return Pass()
    try:
        encoding = json.detect_encoding(body)
        text = body.decode(encoding, "surrogatepass")
    except (UnicodeDecodeError, LookupError):
        return Pass()  # not JSON: the app answers it
    work.chars += len(body)
    tokens = 0
    for token in _TOKENS:
        tokens += text.count(token)
        work.chars += len(text)
    # Depth first, within the budget's reach: a body nested past the limit is named as such
    # even when it is also over the budget. The walk refuses a container at depth
    # max_depth + 1 (the outermost is at depth 0).
    if _deepest(text, max_depth + 2, max_tokens, work) > max_depth + 1:
        return Unchecked("the request body cannot be checked for forged evidence: "
                           f"it nests deeper than {max_depth} levels")  # fmt: skip
    if tokens > max_tokens:
        return TooLarge(f"the request body holds more than {max_tokens} JSON tokens "
                           "(brackets, commas, quotes, \\u escapes) to check")  # fmt: skip
    work.chars += len(text) * len(_NEEDS_STRIP)
    if not any(marker in text for marker in _NEEDS_STRIP):
        return Pass()
    return _strip(body, text, encoding, max_depth)


def _deepest(text: str, stop: int, budget: int, work: Work) -> int:
    """The deepest bracket nesting outside strings, counted up to ``stop``, in what the first
    ``budget`` tokens of ``text`` reach (all of a body within the budget)."""
    outside: list[str] = []
    position = strings = 0
    while strings <= budget // 2:  # one step per string: one regex match skips it
        work.steps += 1
        strings += 1
        quote = text.find('"', position)
        if quote < 0:
            outside.append(text[position:])
            break
        outside.append(text[position:quote])
        end = _STRING_REST.match(text, quote + 1)
        if end is None:  # an unterminated string: not JSON, and nothing past it is structure
            break
        position = end.end()
    work.chars += 2 * len(text)
    structure = "".join(outside)
    depth = deepest = seen = 0
    # In slices, so that each C pass holds the GIL briefly and the scan stops at the limit.
    for start in range(0, len(structure), _DEPTH_SLICE):
        work.steps += 1
        brackets = _NOT_BRACKETS.sub("", structure[start : start + _DEPTH_SLICE])
        work.chars += 2 * min(_DEPTH_SLICE, len(structure) - start) + len(brackets)
        if not brackets:
            continue
        levels = list(accumulate(map(_OPEN.__getitem__, brackets), initial=depth))
        deepest = max(deepest, *levels)
        seen += len(brackets)
        if deepest >= stop or seen > budget:
            break
        depth = levels[-1]
    return deepest


def _strip(body: bytes, text: str, encoding: str, max_depth: int) -> Pass | Replace | Refuse:
    try:
        value = json.loads(text)
    except ValueError:
        return Pass()  # not JSON: the app answers it
    except RecursionError:  # unreachable after the depth scan; refused all the same
        return Unchecked("the request body cannot be checked for forged evidence: it nests "
                           "too deeply")  # fmt: skip
    try:
        stripped, removed = strip_reserved_keys(value, max_depth=max_depth)
    except StripRefusedError as exc:
        return Unchecked(f"the request body cannot be checked for forged evidence: {exc}")
    if not removed:
        return Pass()
    out = json.dumps(stripped, ensure_ascii=False, separators=(",", ":"))
    try:
        encoded = out.encode(encoding)
    except UnicodeEncodeError:  # a lone surrogate (sent as a \u escape) stays an escape
        out = json.dumps(stripped, separators=(",", ":"))
        encoded = out.encode(encoding)
    space = len((out + " ").encode(encoding)) - len(encoded)
    room = len(body) - len(encoded)
    if room < 0 or room % space:
        return Unchecked("the request body cannot be rewritten without its forged evidence "
                           "within its own length; send it without reserved evidence keys")  # fmt: skip
    return Replace((out + " " * (room // space)).encode(encoding), removed)
